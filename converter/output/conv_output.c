/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct output {
    FILE *file;
    char *path;
    char *tmp; /* NULL when writing to stdout or to a path that is not a regular file */
} output;

static void output_discard(output *o);

/* path "-" means stdout. */
static int output_open(output *o, const char *path, zs_error *err)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->file = stdout;
        return 0;
    }
    /* A device, a FIFO, /dev/stdout: written to as it is. Renaming a
     * finished file over it would replace it (run as root, -o /dev/null
     * would leave the system a regular file there). */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        if (!(o->file = fopen(path, "wb")))
            return zs_fail(err, ZS_E_OUTPUT, "%s: %s", path, strerror(errno));
        o->path = strdup(path);
        return 0;
    }
    size_t n = strlen(path) + 16;
    o->path = strdup(path);
    o->tmp = malloc(n);
    if (!o->path || !o->tmp) {
        output_discard(o);
        return zs_fail(err, ZS_E_NOMEM, "%s", path);
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        output_discard(o);
        return zs_fail(err, ZS_E_OUTPUT, "%s: %s", path, strerror(e));
    }
    /* mkstemp makes the file 0600; an output gets the usual mode. The
     * converter is single-threaded, so reading the umask this way is safe. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    if (!(o->file = fdopen(fd, "wb"))) {
        close(fd);
        output_discard(o);
        return zs_fail(err, ZS_E_OUTPUT, "%s: %s", path, strerror(errno));
    }
    return 0;
}

/* Flushes, syncs and renames; closes o in every case. */
static int output_commit(output *o, zs_error *err)
{
    if (!o->tmp) {
        int bad = fflush(o->file) != 0 || ferror(o->file);
        if (o->file != stdout)
            bad |= fclose(o->file) != 0;
        if (bad)
            zs_fail(err, ZS_E_OUTPUT, "%s: write error", o->path ? o->path : "stdout");
        free(o->path);
        memset(o, 0, sizeof *o);
        return bad ? -1 : 0;
    }
    int bad = fflush(o->file) != 0 || ferror(o->file) || fsync(fileno(o->file)) != 0;
    int e = errno;
    bad |= fclose(o->file) != 0;
    o->file = NULL;
    if (!bad && rename(o->tmp, o->path) == 0) {
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
        return 0;
    }
    if (!e)
        e = errno;
    zs_fail(err, ZS_E_OUTPUT, "%s: %s", o->path, strerror(e ? e : EIO));
    output_discard(o);
    return -1;
}

/* Removes the temporary file. */
static void output_discard(output *o)
{
    if (o->file && o->file != stdout)
        fclose(o->file);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int conv_output_errno(zs_error *err)
{
    int e = errno;
    return zs_fail(err, ZS_E_OUTPUT, "%s", strerror(e ? e : EIO));
}

int conv_output_write(const char *path, conv_writer *write, const conv_profile *p,
                      const conv_write_options *o, zs_error *err)
{
    output out;
    if (output_open(&out, path, err))
        return -1;
    if (write(p, o, out.file, err)) {
        output_discard(&out);
        char detail[sizeof err->detail];
        memcpy(detail, err->detail, sizeof detail);
        return zs_fail(err, err->code, "%s: %s", path, detail);
    }
    return output_commit(&out, err);
}
