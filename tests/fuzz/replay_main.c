/* SPDX-License-Identifier: BSD-3-Clause */
/* Replays saved inputs through a fuzz target's LLVMFuzzerTestOneInput without
 * libFuzzer, so the normal build (gcc, and the sanitizer build) re-runs every
 * crash ever found and the seed corpus:
 *
 *     fuzz_replay_reader DIR|FILE...
 *
 * A crash, an ASan report or an abort() from a target's invariant fails the
 * ctest; files whose name starts with '.' or "README" are skipped. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return -1;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    fclose(f);
    /* An exact-size copy, so that ASan sees a read one byte past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int skipped(const char *name) { return name[0] == '.' || !strncmp(name, "README", 6); }

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += replay_file(argv[i]) != 0;
            files++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, alphasort);
        if (n < 0) {
            fprintf(stderr, "replay: cannot list %s\n", argv[i]);
            bad++;
            continue;
        }
        for (int k = 0; k < n; k++) {
            if (!skipped(names[k]->d_name)) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
                bad += replay_file(path) != 0;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d input(s), %d unreadable\n", files, bad);
    return bad ? 1 : 0;
}
