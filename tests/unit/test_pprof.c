/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_pprof: write a hand-built profile, gunzip and decode it back with
 * protobuf-c, and check what a pprof client would see. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "output/conv_pprof.h"
#include "profile/conv_profile.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

/* Reads and gunzips path; NULL if it is not a complete gzip file. */
static Profile *read_pprof(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t zlen = 0, zcap = 1 << 16, len = 0, cap = 1 << 16;
    uint8_t *z = malloc(zcap), *buf = malloc(cap);
    for (size_t r; (r = fread(z + zlen, 1, zcap - zlen, f)) > 0;)
        if ((zlen += r) == zcap)
            z = realloc(z, zcap *= 2);
    fclose(f);

    z_stream s = {0};
    int rc = inflateInit2(&s, 15 + 32);
    s.next_in = z;
    s.avail_in = (uInt)zlen;
    while (rc == Z_OK) {
        if (len == cap)
            buf = realloc(buf, cap *= 2);
        s.next_out = buf + len;
        s.avail_out = (uInt)(cap - len);
        rc = inflate(&s, Z_NO_FLUSH);
        len = cap - s.avail_out;
    }
    inflateEnd(&s);
    Profile *p = rc == Z_STREAM_END ? perftools__profiles__profile__unpack(NULL, len, buf) : NULL;
    free(z);
    free(buf);
    return p;
}

static const char *str(const Profile *p, int64_t i)
{
    return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<bad index>";
}

static int has_comment(const Profile *p, const char *text)
{
    for (size_t i = 0; i < p->n_comment; i++)
        if (!strcmp(str(p, p->comment[i]), text))
            return 1;
    return 0;
}

/* Files in dir whose names start with prefix: leftover temp files. */
static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

/* As the converter writes a pprof file: beside path, renamed into place. */
static int write_pprof(const conv_profile *p, const char *path, zs_error *err)
{
    conv_write_options o = {0};
    return conv_output_write(path, conv_write_pprof, p, &o, err);
}

static uint32_t loc(conv_profile *p, const char *name, const char *file, int start, int line)
{
    int64_t f = conv_profile_function(p, name, file, start);
    CHECK(f >= 0);
    int64_t l = conv_profile_location(p, (uint32_t)f, line);
    CHECK(l >= 0);
    return (uint32_t)l;
}

/* A sensor's profile: a handler calling a script function calling a BiF,
 * and native time, from two processes plus one sample without a pid. */
static conv_profile *sample_profile(void)
{
    conv_profile *p = conv_profile_new();
    CHECK(p);
    uint32_t handler = loc(p, "connection_state_remove base/protocols/http/main.zeek:329",
                           "base/protocols/http/main.zeek", 329, 335);
    uint32_t parse = loc(p, "HTTP::parse", "base/protocols/http/utils.zeek", 40, 44);
    uint32_t bif = loc(p, "fmt", "", 0, 0);
    uint32_t native = loc(p, CONV_EMPTY_STACK, "", 0, 0);
    CHECK(conv_profile_add_stack(p, 1234, (uint32_t[]){handler, parse, bif}, 3, 7) == 0);
    CHECK(conv_profile_add_stack(p, 1234, (uint32_t[]){handler, parse}, 2, 3) == 0);
    CHECK(conv_profile_add_stack(p, 0, (uint32_t[]){native}, 1, 5) == 0);
    CHECK(conv_profile_add_stack(p, 99, (uint32_t[]){native}, 1, 2) == 0);
    CHECK(conv_set_string(&p->meta.zeek_version, "3.0.1") == 0);
    CHECK(conv_set_string(&p->meta.host, "sensor1") == 0);
    CHECK(conv_set_string(&p->meta.recorder_version, "0.1.0") == 0);
    p->meta.start_wall_ns = 1600000000123456789LL;
    p->meta.duration_ns = 2000000000LL;
    p->meta.period_ns = 4000000; /* 250 Hz */
    p->meta.samples = 17;
    p->meta.skipped = 2;
    p->meta.unresolved = 1;
    return p;
}

static void test_contents(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/profile.pb.gz", dir);
    conv_profile *cp = sample_profile();
    zs_error err = {0};
    CHECK(write_pprof(cp, path, &err) == 0);
    Profile *p = read_pprof(path);
    CHECK(p);
    if (!p)
        goto out;

    CHECK(p->n_string_table > 0 && !strcmp(p->string_table[0], ""));
    for (size_t i = 0; i < p->n_string_table; i++)
        for (size_t j = i + 1; j < p->n_string_table; j++)
            CHECK(strcmp(p->string_table[i], p->string_table[j]));

    CHECK(p->n_sample_type == 2);
    if (p->n_sample_type == 2) {
        CHECK(!strcmp(str(p, p->sample_type[0]->type), "samples"));
        CHECK(!strcmp(str(p, p->sample_type[0]->unit), "count"));
        CHECK(!strcmp(str(p, p->sample_type[1]->type), "cpu"));
        CHECK(!strcmp(str(p, p->sample_type[1]->unit), "nanoseconds"));
    }
    CHECK(!strcmp(str(p, p->default_sample_type), "samples"));
    CHECK(p->period_type && !strcmp(str(p, p->period_type->type), "cpu"));
    CHECK(p->period_type && !strcmp(str(p, p->period_type->unit), "nanoseconds"));
    CHECK(p->period == 4000000);
    CHECK(p->time_nanos == 1600000000123456789LL);
    CHECK(p->duration_nanos == 2000000000LL);
    CHECK(p->n_mapping == 0);

    /* Ids are index + 1, in the profile's order. */
    CHECK(p->n_function == 4);
    for (size_t i = 0; i < p->n_function && i < cp->nfunctions; i++) {
        const Perftools__Profiles__Function *f = p->function[i];
        CHECK(f->id == i + 1);
        CHECK(!strcmp(str(p, f->name), cp->functions[i].name));
        CHECK(!strcmp(str(p, f->system_name), cp->functions[i].name));
        CHECK(!strcmp(str(p, f->filename), cp->functions[i].file));
        CHECK(f->start_line == cp->functions[i].start_line);
    }
    CHECK(p->n_function >= 2 && !strcmp(str(p, p->function[1]->filename),
                                        "base/protocols/http/utils.zeek"));
    CHECK(p->n_location == 4);
    for (size_t i = 0; i < p->n_location && i < cp->nlocations; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        CHECK(l->id == i + 1);
        CHECK(l->mapping_id == 0);
        CHECK(l->n_line == 1);
        CHECK(l->line[0]->function_id == cp->locations[i].function + 1);
        CHECK(l->line[0]->line == cp->locations[i].line);
    }
    CHECK(p->n_location >= 1 && p->location[0]->line[0]->line == 335);

    CHECK(p->n_sample == 4);
    if (p->n_sample == 4) {
        /* handler -> parse -> fmt, written leaf first. */
        const Perftools__Profiles__Sample *s = p->sample[0];
        CHECK(s->n_location_id == 3);
        CHECK(s->n_location_id == 3 && s->location_id[0] == 3 && s->location_id[1] == 2 &&
              s->location_id[2] == 1);
        CHECK(s->n_value == 2 && s->value[0] == 7 && s->value[1] == 7 * 4000000LL);
        CHECK(s->n_label == 1 && !strcmp(str(p, s->label[0]->key), "pid") &&
              s->label[0]->num == 1234 && s->label[0]->str == 0);
        s = p->sample[1];
        CHECK(s->n_location_id == 2 && s->location_id[0] == 2 && s->location_id[1] == 1);
        CHECK(s->n_value == 2 && s->value[0] == 3 && s->value[1] == 12000000);
        s = p->sample[2];
        CHECK(s->n_location_id == 1 && s->location_id[0] == 4);
        CHECK(s->n_value == 2 && s->value[0] == 5 && s->value[1] == 20000000);
        CHECK(s->n_label == 0); /* pid 0: no label */
        s = p->sample[3];
        CHECK(s->n_label == 1 && s->label[0]->num == 99);
    }

    CHECK(p->n_comment == 4);
    CHECK(has_comment(p, "zeek version: 3.0.1"));
    CHECK(has_comment(p, "host: sensor1"));
    CHECK(has_comment(p, "recorder: zeek-spy 0.1.0"));
    CHECK(has_comment(p, "samples: 17, skipped ticks: 2, unresolved: 1"));

    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0644) == 0644);
    perftools__profiles__profile__free_unpacked(p, NULL);
out:
    conv_profile_free(cp);
}

/* Missing meta strings give no comment; thousands of strings intern. */
static void test_many_strings(const char *dir)
{
    char path[4096], name[64], file[64];
    snprintf(path, sizeof path, "%s/many.pb.gz", dir);
    conv_profile *cp = conv_profile_new();
    enum { N = 5000 };
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "f%d", i);
        snprintf(file, sizeof file, "file%d.zeek", i % 100);
        uint32_t l = loc(cp, name, file, i, i + 1);
        CHECK(conv_profile_add_stack(cp, 1, &l, 1, 1) == 0);
    }
    zs_error err = {0};
    CHECK(write_pprof(cp, path, &err) == 0);
    Profile *p = read_pprof(path);
    CHECK(p);
    if (p) {
        /* "", 4 type names, "pid", N names, 100 files, one comment. */
        CHECK(p->n_string_table == 1 + 4 + 1 + N + 100 + 1);
        CHECK(p->n_function == N && p->n_sample == N);
        CHECK(p->n_function == N && !strcmp(str(p, p->function[4321]->name), "f4321"));
        CHECK(p->n_function == N && !strcmp(str(p, p->function[4321]->filename), "file21.zeek"));
        CHECK(p->n_comment == 1 && has_comment(p, "samples: 0, skipped ticks: 0, unresolved: 0"));
        perftools__profiles__profile__free_unpacked(p, NULL);
    }
    conv_profile_free(cp);
}

/* A second write replaces the file and leaves no temp file behind. */
static void test_replace(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/replace.pb.gz", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("old contents", f) >= 0);
    if (f)
        fclose(f);
    conv_profile *cp = sample_profile();
    zs_error err = {0};
    CHECK(write_pprof(cp, path, &err) == 0);
    Profile *p = read_pprof(path);
    CHECK(p && p->n_sample == 4);
    if (p)
        perftools__profiles__profile__free_unpacked(p, NULL);
    CHECK(count_prefixed(dir, "replace.pb.gz.tmp.") == 0);
    conv_profile_free(cp);
}

static void test_failures(const char *dir)
{
    char path[4096];
    conv_profile *cp = sample_profile();
    zs_error err = {0};

    snprintf(path, sizeof path, "%s/no/such/dir.pb.gz", dir);
    CHECK(write_pprof(cp, path, &err) == -1);
    CHECK(err.code == ZS_E_OUTPUT && !strncmp(err.detail, path, strlen(path)));

    /* rename() cannot replace a directory: the temp file must go. */
    snprintf(path, sizeof path, "%s/adir", dir);
    CHECK(mkdir(path, 0755) == 0);
    err = (zs_error){0};
    CHECK(write_pprof(cp, path, &err) == -1);
    CHECK(err.code == ZS_E_OUTPUT && !strncmp(err.detail, path, strlen(path)));
    CHECK(count_prefixed(dir, "adir.tmp.") == 0);
    rmdir(path);

    /* A location naming a missing function is refused, nothing written. */
    snprintf(path, sizeof path, "%s/bad.pb.gz", dir);
    cp->locations[0].function = 99;
    err = (zs_error){0};
    CHECK(write_pprof(cp, path, &err) == -1);
    CHECK(err.code == ZS_E_OUTPUT);
    CHECK(access(path, F_OK) != 0);
    conv_profile_free(cp);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    char path[4096];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Merged recordings list each version once, as whole entries. */
static void test_append_unique(void)
{
    char *list = NULL;
    CHECK(conv_append_unique(&list, "8.0.10") == 0);
    CHECK(conv_append_unique(&list, "8.0.1") == 0);
    CHECK(conv_append_unique(&list, "8.0.10") == 0);
    CHECK(conv_append_unique(&list, "0.1") == 0);
    CHECK(conv_append_unique(&list, "8.0.1") == 0);
    CHECK(list && !strcmp(list, "8.0.10, 8.0.1, 0.1"));
    free(list);
}

int main(void)
{
    char dir[] = "/tmp/test_pprof.XXXXXX";
    test_append_unique();
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_contents(dir);
    test_many_strings(dir);
    test_replace(dir);
    test_failures(dir);
    remove_dir(dir);
    CHECK_MAIN_END;
}
