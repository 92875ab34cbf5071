/* SPDX-License-Identifier: BSD-3-Clause */
/* The converter's sqlite cache (converter/cache/conv_cache.c), on real sqlite files
 * in a temporary directory: round trips, replacement, atomic stores, the
 * default location, setting aside bad files, two writers at once, and load
 * speed. */
#include "check.h"
#include "cache_schema.h"
#include "cache/conv_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp[256];

/* Paths under tmp, each its own string, all freed at exit. */
static char *paths[256];
static size_t npaths;

static char *path_in(const char *rel)
{
    size_t n = strlen(tmp) + strlen(rel) + 2;
    char *p = malloc(n);
    if (!p || npaths == sizeof paths / sizeof *paths)
        abort();
    snprintf(p, n, "%s/%s", tmp, rel);
    return paths[npaths++] = p;
}

/* ---- profiles -------------------------------------------------------------- */

static uint32_t rnd(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*state >> 33);
}

/* A deterministic profile: the same seed always gives the same profile. */
static conv_profile *make_profile(unsigned seed, unsigned nfunctions, unsigned nstacks)
{
    uint64_t state = seed * 2654435761u + 1;
    conv_profile *p = conv_profile_new();
    if (!p)
        return NULL;
    char name[128], file[128];
    conv_profile_function(p, CONV_EMPTY_STACK, "", 0);
    for (unsigned i = 1; i < nfunctions; i++) {
        snprintf(name, sizeof name, i % 5 == 0 ? "bif_%u_%u" : "connection_state_remove %u:%u", seed, i);
        snprintf(file, sizeof file, "base/protocols/p%u/main.zeek", i % 7);
        conv_profile_function(p, name, i % 5 == 0 ? "" : file, (int)(i * 13 % 977));
    }
    for (unsigned i = 0; i < nfunctions; i++)
        for (int k = 0; k < 3; k++)
            conv_profile_location(p, i, (int)(i * 3 + (unsigned)k * 17));
    uint32_t empty = (uint32_t)conv_profile_location(p, 0, 0);
    conv_profile_add_stack(p, 100 + seed, &empty, 1, 12345);
    uint32_t none = 0;
    conv_profile_add_stack(p, 7, &none, 0, 3); /* no frames at all */
    uint32_t locs[16];
    for (unsigned s = 2; s < nstacks; s++) {
        uint32_t depth = 1 + rnd(&state) % 16;
        for (uint32_t k = 0; k < depth; k++)
            locs[k] = rnd(&state) % (uint32_t)p->nlocations;
        uint64_t count = 1 + rnd(&state) % 1000;
        if (s == 2)
            count = (1ULL << 40) + 17; /* beyond 32 bits */
        conv_profile_add_stack(p, 100 + seed + s % 3, locs, depth, count);
    }
    conv_set_string(&p->meta.zeek_version, "8.0.10, 3.0.1");
    conv_set_string(&p->meta.host, seed % 2 ? NULL : "sensor-1.example.org");
    conv_set_string(&p->meta.recorder_version, "0.1.0 \"it's quoted\"");
    p->meta.start_wall_ns = 1700000000123456789LL + seed;
    p->meta.duration_ns = 3600LL * 1000000000LL;
    p->meta.period_ns = 4000000;
    p->meta.samples = 900000 + seed;
    p->meta.skipped = 12;
    p->meta.unresolved = UINT64_MAX - seed; /* stored as an int64 bit pattern */
    p->meta.torn = 1;
    p->meta.marked = seed % 2;
    p->meta.cpu_view = seed % 3 == 1;
    p->meta.off_cpu = (1ULL << 40) + seed;
    return p;
}

static int str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int profiles_equal(const conv_profile *a, const conv_profile *b)
{
    if (!a || !b || a->nfunctions != b->nfunctions || a->nlocations != b->nlocations ||
        a->nstacks != b->nstacks || a->nmappings != b->nmappings)
        return 0;
    for (size_t i = 0; i < a->nmappings; i++) {
        const conv_mapping *x = &a->mappings[i], *y = &b->mappings[i];
        if (x->start != y->start || x->limit != y->limit || x->file_offset != y->file_offset ||
            !str_eq(x->file, y->file) || !str_eq(x->build_id, y->build_id))
            return 0;
    }
    for (size_t i = 0; i < a->nfunctions; i++)
        if (!str_eq(a->functions[i].name, b->functions[i].name) ||
            !str_eq(a->functions[i].file, b->functions[i].file) ||
            a->functions[i].start_line != b->functions[i].start_line ||
            a->functions[i].native != b->functions[i].native)
            return 0;
    for (size_t i = 0; i < a->nlocations; i++)
        if (a->locations[i].function != b->locations[i].function || a->locations[i].line != b->locations[i].line ||
            a->locations[i].mapping != b->locations[i].mapping ||
            a->locations[i].address != b->locations[i].address ||
            a->locations[i].inlined != b->locations[i].inlined)
            return 0;
    for (size_t i = 0; i < a->nstacks; i++) {
        const conv_stack *x = &a->stacks[i], *y = &b->stacks[i];
        if (x->pid != y->pid || x->nlocs != y->nlocs || x->count != y->count ||
            (x->nlocs && memcmp(x->locs, y->locs, x->nlocs * sizeof *x->locs)))
            return 0;
    }
    const conv_meta *m = &a->meta, *n = &b->meta;
    return str_eq(m->zeek_version, n->zeek_version) && str_eq(m->host, n->host) &&
           str_eq(m->recorder_version, n->recorder_version) && m->start_wall_ns == n->start_wall_ns &&
           m->duration_ns == n->duration_ns && m->period_ns == n->period_ns && m->samples == n->samples &&
           m->skipped == n->skipped && m->unresolved == n->unresolved && m->torn == n->torn &&
           m->marked == n->marked && m->cpu_view == n->cpu_view && m->off_cpu == n->off_cpu;
}

/* 1 when the entry under key loads and equals want. */
static int loads_as(conv_cache *c, const char *key, const conv_profile *want)
{
    zs_error err = {0};
    conv_profile *got = NULL;
    int rc = conv_cache_load(c, key, &got, &err);
    if (rc != 1)
        fprintf(stderr, "load %s: %d %s\n", key, rc, err.detail);
    int ok = rc == 1 && profiles_equal(got, want);
    conv_profile_free(got);
    return ok;
}

/* ---- files --------------------------------------------------------------- */

static long long sql_int(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static int sql_exec(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(data, 1, n, f) == n ? 0 : -1;
    return fclose(f) || rc ? -1 : 0;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The one cache.sqlite.bad-* main file in dir (not its -wal or -shm), or ""
 * when there is not exactly one. */
static const char *set_aside_file(const char *dir)
{
    static char found[512];
    found[0] = '\0';
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "cache.sqlite.bad-", 17) != 0 ||
            (len > 4 && (!strcmp(e->d_name + len - 4, "-wal") || !strcmp(e->d_name + len - 4, "-shm"))))
            continue;
        snprintf(found, sizeof found, "%s/%s", dir, e->d_name);
        n++;
    }
    if (d)
        closedir(d);
    if (n != 1)
        found[0] = '\0';
    return found;
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char child[1024];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The notes a call gave, one line each. */
typedef struct captured {
    char *out;
    size_t n, len;
    int other_kinds;
} captured;

static void capture_note(void *ctx, zs_note_kind kind, const char *text)
{
    captured *c = ctx;
    c->other_kinds += kind != ZS_NOTE_WARNING;
    int w = snprintf(c->out + c->len, c->n - c->len, "%s\n", text);
    if (w > 0)
        c->len += (size_t)w < c->n - c->len ? (size_t)w : c->n - c->len - 1;
}

/* Runs conv_cache_open; returns the cache and copies the warnings it gave
 * into out, one line each. */
static conv_cache *open_capturing(const char *path, zs_error *err, char *out, size_t n)
{
    captured cap = {.out = out, .n = n};
    out[0] = '\0';
    zs_notes notes = {.note = capture_note, .ctx = &cap};
    conv_cache *c = conv_cache_open(path, &notes, err);
    CHECK(cap.other_kinds == 0);
    return c;
}

/* The forked openers of a race tell their warnings on stderr, which the
 * parent captures. */
static void note_to_stderr(void *ctx, zs_note_kind kind, const char *text)
{
    (void)ctx;
    (void)kind;
    fprintf(stderr, "%s\n", text);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The warning is one line naming the file, the reason, and where it went. */
static void check_set_aside_warning(const char *printed, const char *path, const char *reason)
{
    char want[600];
    snprintf(want, sizeof want, "cache %s ", path);
    CHECK(count_lines(printed) == 1);
    CHECK(strncmp(printed, want, strlen(want)) == 0);
    CHECK(strstr(printed, reason) != NULL);
    snprintf(want, sizeof want, ": set aside as %s.bad-", path);
    CHECK(strstr(printed, want) != NULL);
    CHECK(strstr(printed, ", rebuilding\n") != NULL);
    if (count_lines(printed) != 1 || !strstr(printed, reason))
        fprintf(stderr, "printed: %s", printed);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_round_trip(void)
{
    zs_error err = {0};
    const char *path = path_in("rt/nested/cache.sqlite"); /* directories made on open */
    conv_cache *c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    if (!c) {
        fprintf(stderr, "open: %s\n", err.detail);
        return;
    }
    CHECK(strcmp(conv_cache_path(c), path) == 0);
    conv_profile *p1 = make_profile(1, 40, 200), *p2 = make_profile(2, 25, 90), *p3 = make_profile(3, 10, 30);

    conv_profile *got = (conv_profile *)1;
    CHECK(conv_cache_load(c, "rec-1:1000", &got, &err) == 0);
    CHECK(got == NULL);

    CHECK(conv_cache_store(c, "rec-1:1000", p1, &err) == 0);
    CHECK(loads_as(c, "rec-1:1000", p1));
    CHECK(conv_cache_store(c, "rec-2:2000", p2, &err) == 0);
    CHECK(loads_as(c, "rec-2:2000", p2));
    CHECK(loads_as(c, "rec-1:1000", p1));
    CHECK(conv_cache_load(c, "rec-1:1001", &got, &err) == 0); /* keys are exact */

    /* Replacing keeps no row of the old entry. */
    CHECK(conv_cache_store(c, "rec-1:1000", p3, &err) == 0);
    CHECK(loads_as(c, "rec-1:1000", p3));
    CHECK(loads_as(c, "rec-2:2000", p2));
    CHECK(sql_int(path, "SELECT count(*) FROM recordings") == 2);
    CHECK(sql_int(path, "SELECT count(*) FROM functions") == (long long)(p2->nfunctions + p3->nfunctions));
    CHECK(sql_int(path, "SELECT count(*) FROM locations") == (long long)(p2->nlocations + p3->nlocations));
    CHECK(sql_int(path, "SELECT count(*) FROM stacks") == (long long)(p2->nstacks + p3->nstacks));
    CHECK(sql_int(path, "PRAGMA user_version") == 5);
    conv_cache_close(c);

    /* Survives closing, in WAL mode. */
    c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    if (c) {
        CHECK(loads_as(c, "rec-1:1000", p3));
        CHECK(loads_as(c, "rec-2:2000", p2));
        conv_cache_close(c);
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(s) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(s, 0), "wal") == 0);
    sqlite3_finalize(s);
    sqlite3_close(db);

    /* Another converter version's entry is a miss, not a wrong answer. */
    CHECK(sql_exec(path, "UPDATE recordings SET converter = '0.0.0-old' WHERE key = 'rec-2:2000'") == SQLITE_OK);
    c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    if (c) {
        got = NULL;
        CHECK(conv_cache_load(c, "rec-2:2000", &got, &err) == 0 && got == NULL);
        CHECK(conv_cache_store(c, "rec-2:2000", p2, &err) == 0);
        CHECK(loads_as(c, "rec-2:2000", p2));
        conv_cache_close(c);
    }
    conv_profile_free(p1);
    conv_profile_free(p2);
    conv_profile_free(p3);
}

/* A store that fails halfway leaves the previous entry whole. */
static void test_store_is_atomic(void)
{
    zs_error err = {0};
    const char *path = path_in("atomic.sqlite");
    conv_cache *c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    conv_profile *old = make_profile(10, 30, 100), *new = make_profile(11, 30, 100);
    CHECK(conv_cache_store(c, "k", old, &err) == 0);

    /* Fail inside the transaction, after the old rows are deleted and the
     * new recording and functions are written. */
    CHECK(sql_exec(path, "CREATE TRIGGER fail_stack BEFORE INSERT ON stacks WHEN NEW.idx = 50"
                         " BEGIN SELECT RAISE(ABORT, 'injected failure'); END") == SQLITE_OK);
    err = (zs_error){0};
    CHECK(conv_cache_store(c, "k", new, &err) == -1);
    CHECK(err.code == ZS_E_CACHE);
    CHECK(strstr(err.detail, "injected failure") != NULL);
    CHECK(loads_as(c, "k", old));
    CHECK(sql_int(path, "SELECT count(*) FROM functions") == (long long)old->nfunctions);
    CHECK(sql_exec(path, "DROP TRIGGER fail_stack") == SQLITE_OK);
    CHECK(conv_cache_store(c, "k", new, &err) == 0);
    CHECK(loads_as(c, "k", new));

    /* A profile whose indexes point nowhere is refused before any write. */
    uint32_t saved = new->locations[0].function;
    new->locations[0].function = 99999;
    err = (zs_error){0};
    CHECK(conv_cache_store(c, "k2", new, &err) == -1);
    CHECK(err.code == ZS_E_CACHE);
    new->locations[0].function = saved;
    conv_profile *got = NULL;
    CHECK(conv_cache_load(c, "k2", &got, &err) == 0);

    /* A damaged entry is an error, not a wrong profile. */
    CHECK(sql_exec(path, "UPDATE stacks SET locs = x'ffffffff' WHERE idx = 3") == SQLITE_OK);
    err = (zs_error){0};
    CHECK(conv_cache_load(c, "k", &got, &err) == -1);
    CHECK(got == NULL && err.code == ZS_E_CACHE);
    CHECK(conv_cache_store(c, "k", new, &err) == 0); /* and a new store heals it */
    CHECK(loads_as(c, "k", new));
    conv_cache_close(c);
    conv_profile_free(old);
    conv_profile_free(new);
}

static void test_default_path(void)
{
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char want[600];
    zs_error err = {0};

    setenv("XDG_CACHE_HOME", path_in("xdg/cache"), 1);
    conv_cache *c = conv_cache_open(NULL, NULL, &err);
    CHECK(c != NULL);
    snprintf(want, sizeof want, "%s/zeek-spy/cache.sqlite", path_in("xdg/cache"));
    CHECK(c && strcmp(conv_cache_path(c), want) == 0);
    CHECK(exists(want));
    struct stat st;
    CHECK(stat(path_in("xdg/cache/zeek-spy"), &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(stat(path_in("xdg/cache"), &st) == 0 && (st.st_mode & 0777) == 0700);
    conv_cache_close(c);

    /* No XDG_CACHE_HOME, or a relative one (the XDG spec ignores those). */
    setenv("HOME", path_in("home"), 1);
    mkdir(path_in("home"), 0755);
    snprintf(want, sizeof want, "%s/.cache/zeek-spy/cache.sqlite", path_in("home"));
    unsetenv("XDG_CACHE_HOME");
    c = conv_cache_open(NULL, NULL, &err);
    CHECK(c && strcmp(conv_cache_path(c), want) == 0);
    conv_cache_close(c);
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    c = conv_cache_open(NULL, NULL, &err);
    CHECK(c && strcmp(conv_cache_path(c), want) == 0);
    CHECK(exists(want));
    conv_cache_close(c);

    if (old_xdg)
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    if (old_home)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    free(old_xdg);
    free(old_home);
}

static void test_garbage_file_set_aside(void)
{
    mkdir(path_in("garbage"), 0700);
    const char *path = path_in("garbage/cache.sqlite");
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = "not a database, just some text\n"[i % 31];
    CHECK(write_file(path, junk, sizeof junk) == 0);
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(write_file(wal, "stale wal", 9) == 0);

    zs_error err = {0};
    char printed[2048];
    conv_cache *c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL);
    check_set_aside_warning(printed, path, "is corrupt");

    /* The old file is kept, untouched. SQLite itself may drop the stale
     * -wal when it closes the bad file; it must not stay beside the rebuilt
     * cache either way. */
    const char *bad_main = set_aside_file(path_in("garbage"));
    CHECK(bad_main[0] != '\0');
    struct stat st;
    CHECK(stat(wal, &st) != 0 || st.st_size != 9);
    FILE *f = fopen(bad_main, "rb");
    char back[sizeof junk];
    CHECK(f && fread(back, 1, sizeof back, f) == sizeof junk && memcmp(back, junk, sizeof junk) == 0);
    if (f)
        fclose(f);
    CHECK(strstr(printed, bad_main) != NULL);

    conv_profile *p = make_profile(20, 20, 50);
    CHECK(c && conv_cache_store(c, "after-garbage", p, &err) == 0);
    CHECK(c && loads_as(c, "after-garbage", p));
    conv_cache_close(c);

    /* The rebuilt cache is fine: no second warning. */
    c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL && printed[0] == '\0');
    CHECK(c && loads_as(c, "after-garbage", p));
    conv_cache_close(c);
    conv_profile_free(p);
}

static void test_newer_version_set_aside(void)
{
    mkdir(path_in("newer"), 0700);
    const char *path = path_in("newer/cache.sqlite");
    CHECK(sql_exec(path, "CREATE TABLE from_the_future (x); PRAGMA user_version = 99") == SQLITE_OK);
    zs_error err = {0};
    char printed[2048];
    conv_cache *c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL);
    check_set_aside_warning(printed, path, "schema version 99");
    CHECK(sql_int(set_aside_file(path_in("newer")), "PRAGMA user_version") == 99);
    CHECK(sql_int(path, "PRAGMA user_version") == 5);
    conv_profile *p = make_profile(21, 20, 50);
    CHECK(c && conv_cache_store(c, "k", p, &err) == 0);
    CHECK(c && loads_as(c, "k", p));
    conv_cache_close(c);
    conv_profile_free(p);
}

/* Someone else's database (tables, user_version 0) is left whole beside ours. */
static void test_foreign_database_set_aside(void)
{
    mkdir(path_in("foreign"), 0700);
    const char *path = path_in("foreign/cache.sqlite");
    CHECK(sql_exec(path, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine')") == SQLITE_OK);
    zs_error err = {0};
    char printed[2048];
    conv_cache *c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL);
    check_set_aside_warning(printed, path, "not a zeek-spy cache");
    CHECK(sql_int(set_aside_file(path_in("foreign")), "SELECT count(*) FROM notes") == 1);
    conv_cache_close(c);
}

/* Damaged pages behind an intact header fail PRAGMA quick_check. */
static void test_corrupt_pages_set_aside(void)
{
    mkdir(path_in("pages"), 0700);
    const char *path = path_in("pages/cache.sqlite");
    zs_error err = {0};
    conv_cache *c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    conv_profile *p = make_profile(30, 300, 1000);
    CHECK(c && conv_cache_store(c, "big", p, &err) == 0);
    conv_cache_close(c); /* the last close checkpoints the WAL into the file */

    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 8 * 4096);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        static unsigned char page[4096];
        long page_size = sql_int(path, "PRAGMA page_size");
        memset(page, 0xa5, sizeof page);
        for (long off = page_size; off + (long)sizeof page <= st.st_size; off += (long)sizeof page) {
            fseek(f, off, SEEK_SET);
            fwrite(page, 1, sizeof page, f);
        }
        fclose(f);
    }
    char printed[2048];
    c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL);
    CHECK(count_lines(printed) == 1);
    CHECK(strstr(printed, "integrity check") || strstr(printed, "is corrupt"));
    if (count_lines(printed) != 1)
        fprintf(stderr, "printed: %s\n", printed);
    CHECK(strstr(printed, "set aside as") != NULL);
    conv_profile *got = NULL;
    CHECK(c && conv_cache_load(c, "big", &got, &err) == 0);
    CHECK(c && conv_cache_store(c, "big", p, &err) == 0);
    CHECK(c && loads_as(c, "big", p));
    conv_cache_close(c);
    conv_profile_free(p);
}

static void test_cannot_create(void)
{
    zs_error err = {0};
    CHECK(write_file(path_in("plainfile"), "x", 1) == 0);
    conv_cache *c = conv_cache_open(path_in("plainfile/sub/cache.sqlite"), NULL, &err);
    CHECK(c == NULL);
    CHECK(err.code == ZS_E_CACHE && err.detail[0] != '\0');

    if (geteuid() != 0) { /* root writes anywhere */
        mkdir(path_in("readonly"), 0500);
        chmod(path_in("readonly"), 0500);
        err = (zs_error){0};
        c = conv_cache_open(path_in("readonly/cache.sqlite"), NULL, &err);
        CHECK(c == NULL);
        CHECK(err.code == ZS_E_CACHE && err.detail[0] != '\0');
        chmod(path_in("readonly"), 0700);
    }
}

enum { WRITERS = 2, STORES_EACH = 50 };

static int writer(const char *path, int w, int go)
{
    char b;
    if (read(go, &b, 1) < 0) /* EOF: the parent released everyone at once */
        return 1;
    zs_error err = {0};
    conv_cache *c = conv_cache_open(path, NULL, &err);
    if (!c) {
        fprintf(stderr, "writer %d: open: %s\n", w, err.detail);
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < STORES_EACH && !failed; i++) {
        char key[64];
        snprintf(key, sizeof key, "writer-%d/rec-%d", w, i);
        conv_profile *p = make_profile((unsigned)(1000 * w + i), 15 + (unsigned)i % 10, 40 + (unsigned)i);
        if (conv_cache_store(c, key, p, &err) || conv_cache_store(c, "shared", p, &err)) {
            fprintf(stderr, "writer %d: store %s: %s\n", w, key, err.detail);
            failed = 1;
        }
        conv_profile_free(p);
    }
    conv_cache_close(c);
    return failed;
}

static void test_two_writers(void)
{
    const char *path = path_in("concurrent/cache.sqlite"); /* nothing there yet: both create it */
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        fflush(NULL);
        pids[w] = fork();
        if (pids[w] == 0) {
            close(go[1]);
            _exit(writer(path, w, go[0]));
        }
        CHECK(pids[w] > 0);
    }
    close(go[0]);
    close(go[1]);
    for (int w = 0; w < WRITERS; w++) {
        int status = -1;
        CHECK(pids[w] > 0 && waitpid(pids[w], &status, 0) == pids[w]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    zs_error err = {0};
    conv_cache *c = conv_cache_open(path, NULL, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    int good = 0;
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < STORES_EACH; i++) {
            char key[64];
            snprintf(key, sizeof key, "writer-%d/rec-%d", w, i);
            conv_profile *p = make_profile((unsigned)(1000 * w + i), 15 + (unsigned)i % 10, 40 + (unsigned)i);
            good += loads_as(c, key, p);
            conv_profile_free(p);
        }
    CHECK(good == WRITERS * STORES_EACH);
    CHECK(sql_int(path, "SELECT count(*) FROM recordings") == WRITERS * STORES_EACH + 1);

    /* "shared" holds whichever writer's last store came last, whole. */
    int shared = 0;
    for (int w = 0; w < WRITERS; w++) {
        int i = STORES_EACH - 1;
        conv_profile *p = make_profile((unsigned)(1000 * w + i), 15 + (unsigned)i % 10, 40 + (unsigned)i);
        conv_profile *got = NULL;
        if (conv_cache_load(c, "shared", &got, &err) == 1 && profiles_equal(got, p))
            shared++;
        conv_profile_free(got);
        conv_profile_free(p);
    }
    CHECK(shared == 1);
    conv_cache_close(c);
}

/* Converters that find the same bad cache at once set it aside once. */
static void test_two_openers_one_set_aside(void)
{
    mkdir(path_in("race"), 0700);
    const char *path = path_in("race/cache.sqlite");
    CHECK(write_file(path, "garbage garbage garbage garbage garbage garbage garbage garbage "
                           "garbage garbage garbage garbage garbage garbage garbage garbage",
                     128) == 0);
    const char *capture = path_in("race-stderr.txt");
    fflush(stderr);
    int saved = dup(2), fd = open(capture, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    dup2(fd, 2);
    close(fd);
    int go[2];
    CHECK(pipe(go) == 0);
    enum { OPENERS = 3 };
    pid_t pids[OPENERS];
    for (int w = 0; w < OPENERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            char b;
            close(go[1]);
            if (read(go[0], &b, 1) < 0)
                _exit(1);
            zs_error err = {0};
            zs_notes notes = {.note = note_to_stderr};
            conv_cache *c = conv_cache_open(path, &notes, &err);
            char key[32];
            snprintf(key, sizeof key, "opener-%d", w);
            conv_profile *p = make_profile(500 + (unsigned)w, 10, 20);
            int ok = c && conv_cache_store(c, key, p, &err) == 0 && loads_as(c, key, p);
            if (!ok)
                fprintf(stderr, "opener %d: %s\n", w, err.detail);
            conv_cache_close(c);
            conv_profile_free(p);
            _exit(ok ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int w = 0; w < OPENERS; w++) {
        int status = -1;
        CHECK(pids[w] > 0 && waitpid(pids[w], &status, 0) == pids[w]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);

    char printed[4096];
    FILE *f = fopen(capture, "r");
    size_t got = f ? fread(printed, 1, sizeof printed - 1, f) : 0;
    printed[got] = '\0';
    if (f)
        fclose(f);
    check_set_aside_warning(printed, path, "is corrupt");
    CHECK(set_aside_file(path_in("race"))[0] != '\0');
    CHECK(sql_int(path, "SELECT count(*) FROM recordings") == OPENERS);
}

/* A converter killed mid-store leaves every entry whole or absent. */
static void test_killed_writer(void)
{
    const char *path = path_in("killed/cache.sqlite");
    enum { MAX_STORES = 2000 };
    int ready[2];
    CHECK(pipe(ready) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        zs_error err = {0};
        conv_cache *c = conv_cache_open(path, NULL, &err);
        if (!c || write(ready[1], "r", 1) != 1)
            _exit(1);
        for (int i = 0; i < MAX_STORES; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%d", i);
            conv_profile *p = make_profile(3000 + (unsigned)i, 60, 300);
            conv_cache_store(c, key, p, &err);
            conv_profile_free(p);
        }
        _exit(0);
    }
    CHECK(pid > 0);
    close(ready[1]);
    char b;
    CHECK(read(ready[0], &b, 1) == 1);
    close(ready[0]);
    usleep(150 * 1000);
    kill(pid, SIGKILL);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status)); /* killed, not finished */

    zs_error err = {0};
    char printed[2048];
    conv_cache *c = open_capturing(path, &err, printed, sizeof printed);
    CHECK(c != NULL && printed[0] == '\0');
    if (!c)
        return;
    int stored = 0, missing = 0, bad = 0;
    for (int i = 0; i < MAX_STORES; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        conv_profile *want = make_profile(3000 + (unsigned)i, 60, 300), *got = NULL;
        int rc = conv_cache_load(c, key, &got, &err);
        if (rc == 1 && !missing && profiles_equal(got, want))
            stored++;
        else if (rc == 0)
            missing++;
        else
            bad++;
        conv_profile_free(got);
        conv_profile_free(want);
        if (missing > 3)
            break;
    }
    CHECK(stored > 0 && bad == 0);
    printf("writer killed after %d whole stores, nothing partial\n", stored);
    conv_cache_close(c);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A cache made by a converter of schema version 1 is migrated in place to
 * the current version, keeps working, and stores processes. */
/* A cache file as a converter of schema `version` left it (before the
 * migrations after it), with `extra` SQL run on it; NULL on failure. The
 * current converter must migrate it to the newest schema on open. */
static const char *old_cache(const char *dir, int version, const char *extra)
{
    static const char *const steps[] = {CACHE_SCHEMA_SQL, CACHE_MIGRATION2_SQL, CACHE_MIGRATION3_SQL,
                                        CACHE_MIGRATION4_SQL};
    char rel[256];
    mkdir(path_in(dir), 0700);
    snprintf(rel, sizeof rel, "%s/cache.sqlite", dir);
    const char *path = path_in(rel);
    sqlite3 *db;
    int ok = sqlite3_open(path, &db) == SQLITE_OK;
    for (int v = 1; ok && v <= version; v++)
        ok = sqlite3_exec(db, steps[v - 1], NULL, NULL, NULL) == SQLITE_OK;
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", version);
    ok = ok && sqlite3_exec(db, pragma, NULL, NULL, NULL) == SQLITE_OK;
    ok = ok && (!extra || sqlite3_exec(db, extra, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    return ok ? path : NULL;
}

/* Opens an old cache: migrated to the newest schema, or NULL. */
static conv_cache *open_migrated(const char *path)
{
    zs_error err = {0};
    conv_cache *c = path ? conv_cache_open(path, NULL, &err) : NULL;
    CHECK(c != NULL);
    CHECK(!c || sql_int(path, "PRAGMA user_version") == 5);
    return c;
}

static void test_migration_from_v1(void)
{
    zs_error err = {0};
    const char *path = old_cache("v1", 1, NULL);
    CHECK(path && sql_int(path, "PRAGMA user_version") == 1);
    if (!path)
        return;

    conv_cache *c = open_migrated(path);
    if (!c)
        return;
    conv_profile *p = make_profile(7, 12, 40);
    int64_t proc = conv_profile_process(p, "sensor-2", 99, "worker-3");
    uint32_t loc = 0;
    CHECK(proc >= 0 && conv_profile_add_process_stack(p, (uint32_t)proc, &loc, 1, 5) == 0);
    CHECK(conv_cache_store(c, "migrated:1", p, &err) == 0);
    CHECK(loads_as(c, "migrated:1", p));
    CHECK(sql_int(path, "SELECT count(*) FROM processes WHERE node = 'worker-3'") == 1);
    conv_profile_free(p);
    conv_cache_close(c);
}

/* A cache of schema version 2 (before native mappings) is migrated to
 * version 3 and stores a profile with mappings and native addresses,
 * high addresses included (int64 bit patterns). */
static void test_migration_from_v2(void)
{
    zs_error err = {0};
    const char *path = old_cache("v2", 2, NULL);
    CHECK(path != NULL);
    if (!path)
        return;

    conv_cache *c = open_migrated(path);
    if (!c)
        return;
    conv_profile *p = make_profile(3, 5, 10);
    int64_t f = conv_profile_native_function(p, "zeek::detail::hash_update(long)", NULL);
    int64_t m = conv_profile_mapping(p, 0xffffffffff600000ULL, 0xffffffffff601000ULL, 0x1000,
                                     "/usr/local/zeek/bin/zeek", "addc57a744a940e2");
    int64_t l = f < 0 || m < 0 ? -1
                               : conv_profile_native_location(p, (uint32_t)f, 0, 0, (uint32_t)m + 1,
                                                              0xffffffffff600abcULL);
    int64_t proc = conv_profile_process(p, "sensor-2", 99, "");
    uint32_t loc = (uint32_t)l;
    CHECK(l >= 0 && proc >= 0 && conv_profile_add_process_stack(p, (uint32_t)proc, &loc, 1, 5) == 0);
    CHECK(conv_cache_store(c, "migrated:2", p, &err) == 0);
    CHECK(loads_as(c, "migrated:2", p));
    CHECK(sql_int(path, "SELECT count(*) FROM mappings") == 1);
    conv_profile_free(p);
    conv_cache_close(c);
}

/* A cache of schema version 3 (native functions told by their file
 * '[native]') is migrated to version 4: the native functions stored
 * before are flagged native, and it stores native source lines with an
 * inlined function. */
static void test_migration_from_v3(void)
{
    zs_error err = {0};
    const char *path = old_cache("v3", 3,
                       "INSERT INTO recordings (key, converter, stored_at, start_wall_ns,"
                       " duration_ns, period_ns, samples, skipped, unresolved, torn)"
                       " VALUES ('old', 'x', 0, 0, 0, 0, 0, 0, 0, 0);"
                       "INSERT INTO functions (recording, idx, name, file, start_line)"
                       " VALUES (1, 0, 'main', '[native]', 0), (1, 1, 'f', 'a.zeek', 3);");
    CHECK(path != NULL);
    if (!path)
        return;

    conv_cache *c = open_migrated(path);
    if (!c)
        return;
    CHECK(sql_int(path, "SELECT native FROM functions WHERE name = 'main'") == 1);
    CHECK(sql_int(path, "SELECT native FROM functions WHERE name = 'f'") == 0);
    conv_profile *p = make_profile(3, 5, 10);
    int64_t outer = conv_profile_native_function(p, "zeek::detail::hash_block(long)", "/src/d.cc");
    int64_t inner = conv_profile_native_function(p, "zd::spin(long)", "/src/d.cc");
    int64_t m = conv_profile_mapping(p, 0x400000, 0x500000, 0, "/bin/zeek", "");
    int64_t lo = outer < 0 || m < 0 ? -1
                 : conv_profile_native_location(p, (uint32_t)outer, 299, 0, (uint32_t)m + 1, 0x401234);
    int64_t li = inner < 0 || m < 0 ? -1
                 : conv_profile_native_location(p, (uint32_t)inner, 220, 1, (uint32_t)m + 1, 0x401234);
    int64_t proc = conv_profile_process(p, "sensor-2", 99, "");
    uint32_t locs[2] = {(uint32_t)lo, (uint32_t)li};
    CHECK(lo >= 0 && li >= 0 && li != lo && proc >= 0 &&
          conv_profile_add_process_stack(p, (uint32_t)proc, locs, 2, 5) == 0);
    CHECK(conv_cache_store(c, "migrated:3", p, &err) == 0);
    CHECK(loads_as(c, "migrated:3", p));
    CHECK(sql_int(path, "SELECT count(*) FROM locations WHERE inlined = 1") == 1);
    conv_profile_free(p);
    conv_cache_close(c);
}

/* A cache of schema version 4 (before views) is migrated to version 5:
 * the entries stored before read as the wall view, unmarked, and it
 * stores the CPU view of a marked recording with its off-CPU count. */
static void test_migration_from_v4(void)
{
    zs_error err = {0};
    const char *path = old_cache("v4", 4,
                       "INSERT INTO recordings (key, converter, stored_at, start_wall_ns,"
                       " duration_ns, period_ns, samples, skipped, unresolved, torn)"
                       " VALUES ('old', 'x', 0, 0, 0, 0, 0, 0, 0, 0);");
    CHECK(path != NULL);
    if (!path)
        return;
    conv_cache *c = open_migrated(path);
    if (!c)
        return;
    CHECK(sql_int(path, "SELECT count(*) FROM recordings WHERE view = 'wall' AND marked = 0"
                        " AND off_cpu = 0") == 1);
    conv_profile *p = make_profile(4, 5, 10);
    p->meta.marked = 1;
    p->meta.cpu_view = 1;
    p->meta.off_cpu = 77;
    CHECK(conv_cache_store(c, "migrated:4:cpu-view", p, &err) == 0);
    CHECK(loads_as(c, "migrated:4:cpu-view", p));
    CHECK(sql_int(path, "SELECT off_cpu FROM recordings WHERE view = 'cpu' AND marked = 1") == 77);
    conv_profile_free(p);
    conv_cache_close(c);
}

static void test_load_speed(void)
{
    zs_error err = {0};
    conv_cache *c = conv_cache_open(path_in("speed.sqlite"), NULL, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    conv_profile *p = make_profile(40, 400, 1200);
    CHECK(conv_cache_store(c, "speed", p, &err) == 0);
    CHECK(loads_as(c, "speed", p)); /* warm */
    enum { ROUNDS = 20 };
    double best = 1e9;
    for (int r = 0; r < ROUNDS; r++) {
        double t = now_ms();
        conv_profile *got = NULL;
        CHECK(conv_cache_load(c, "speed", &got, &err) == 1);
        t = now_ms() - t;
        best = t < best ? t : best;
        conv_profile_free(got);
    }
    printf("load of %zu functions, %zu locations, %zu stacks: %.2f ms\n", p->nfunctions, p->nlocations,
           p->nstacks, best);
    CHECK(best < 25.0); /* a few ms expected; slack for a busy or sanitized build */
    conv_cache_close(c);
    conv_profile_free(p);
}

int main(void)
{
    const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/test_cache.XXXXXX", base);
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_store_is_atomic();
    test_default_path();
    test_garbage_file_set_aside();
    test_newer_version_set_aside();
    test_foreign_database_set_aside();
    test_corrupt_pages_set_aside();
    test_cannot_create();
    test_two_writers();
    test_two_openers_one_set_aside();
    test_killed_writer();
    test_migration_from_v1();
    test_migration_from_v2();
    test_migration_from_v3();
    test_migration_from_v4();
    test_load_speed();
    if (!check_failures)
        remove_tree(tmp);
    else
        fprintf(stderr, "test files kept in %s\n", tmp);
    while (npaths)
        free(paths[--npaths]);
    CHECK_MAIN_END;
}
