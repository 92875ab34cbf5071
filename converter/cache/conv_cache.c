/* SPDX-License-Identifier: BSD-3-Clause */
#include "cache/conv_cache.h"

#include "cache_schema.h"
#include "zs_grow.h"
#include "zs_version.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Another converter storing into the same cache holds the write lock for a
 * few milliseconds per profile; waiting this long means something is stuck. */
#define BUSY_TIMEOUT_MS 10000

/* Far beyond any script call stack; keeps a stack's blob size in an int. */
#define MAX_FRAMES (1u << 24)

/* migrations[v] upgrades a version v-1 cache to version v, in one
 * transaction with the user_version bump. Released entries never change:
 * a new schema is a new entry. */
static const char *const migrations[] = {
    NULL,             /* version 0: an empty database */
    CACHE_SCHEMA_SQL, /* version 1: schema/cache.sql */
    CACHE_MIGRATION2_SQL, /* version 2: schema/migration2.sql */
    CACHE_MIGRATION3_SQL, /* version 3: schema/migration3.sql */
    CACHE_MIGRATION4_SQL, /* version 4: schema/migration4.sql */
    CACHE_MIGRATION5_SQL, /* version 5: schema/migration5.sql */
};
enum { CACHE_VERSION = sizeof migrations / sizeof *migrations - 1 };

enum {
    ST_BEGIN_READ,
    ST_BEGIN_WRITE,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_FIND,
    ST_DELETE,
    ST_INSERT_RECORDING,
    ST_INSERT_FUNCTION,
    ST_INSERT_LOCATION,
    ST_INSERT_STACK,
    ST_INSERT_PROCESS,
    ST_INSERT_MAPPING,
    ST_SELECT_PROCESSES,
    ST_SELECT_MAPPINGS,
    ST_SELECT_FUNCTIONS,
    ST_SELECT_LOCATIONS,
    ST_SELECT_STACKS,
    ST__COUNT
};

static const char *const statement_sql[ST__COUNT] = {
    [ST_BEGIN_READ] = "BEGIN",
    [ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_FIND] = "SELECT id, converter, zeek_version, host, recorder_version, start_wall_ns,"
                " duration_ns, period_ns, samples, skipped, unresolved, torn, view, marked, off_cpu"
                " FROM recordings WHERE key = ?1",
    /* The child rows go with it (ON DELETE CASCADE, foreign_keys is on). */
    [ST_DELETE] = "DELETE FROM recordings WHERE key = ?1",
    [ST_INSERT_RECORDING] =
        "INSERT INTO recordings (key, converter, stored_at, zeek_version, host, recorder_version,"
        " start_wall_ns, duration_ns, period_ns, samples, skipped, unresolved, torn, view, marked,"
        " off_cpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    [ST_INSERT_FUNCTION] = "INSERT INTO functions (recording, idx, name, file, start_line, native)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_INSERT_LOCATION] = "INSERT INTO locations (recording, idx, function, line, mapping, address,"
                           " inlined) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_INSERT_MAPPING] = "INSERT INTO mappings (recording, idx, start, limit_, file_offset, file,"
                          " build_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SELECT_MAPPINGS] = "SELECT idx, start, limit_, file_offset, file, build_id FROM mappings"
                           " WHERE recording = ?1 ORDER BY idx",
    [ST_INSERT_STACK] = "INSERT INTO stacks (recording, idx, pid, count, locs, process)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_INSERT_PROCESS] = "INSERT INTO processes (recording, idx, host, node, pid)"
                          " VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_SELECT_PROCESSES] = "SELECT idx, host, node, pid FROM processes"
                            " WHERE recording = ?1 ORDER BY idx",
    [ST_SELECT_FUNCTIONS] = "SELECT idx, name, file, start_line, native FROM functions"
                            " WHERE recording = ?1 ORDER BY idx",
    [ST_SELECT_LOCATIONS] = "SELECT idx, function, line, mapping, address, inlined FROM locations"
                            " WHERE recording = ?1 ORDER BY idx",
    [ST_SELECT_STACKS] = "SELECT idx, pid, count, locs, process FROM stacks"
                         " WHERE recording = ?1 ORDER BY idx",
};

struct conv_cache {
    char *path;
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    uint32_t *buf; /* stack encode/decode scratch */
    size_t buf_cap;
};

/* What connecting found: a usable cache, a file to set aside, or a failure. */
enum { CONNECT_OK = 0, CONNECT_BAD = 1, CONNECT_FAIL = -1 };

/* ---- paths ------------------------------------------------------------ */

static char *join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

static char *default_path(zs_error *err)
{
    /* The XDG spec says to ignore a relative XDG_CACHE_HOME. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/')
        return join(xdg, "/zeek-spy/cache.sqlite");
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home) {
        zs_fail(err, ZS_E_CACHE, "no cache location: neither XDG_CACHE_HOME nor HOME is set");
        return NULL;
    }
    return join(home, "/.cache/zeek-spy/cache.sqlite");
}

/* Creates the directories above path that are missing, mode 0700. */
static int make_parent_dirs(const char *path, zs_error *err)
{
    char *dir = strdup(path);
    if (!dir)
        return zs_fail(err, ZS_E_NOMEM, "cache path");
    int rc = 0;
    for (char *slash = strchr(dir + 1, '/'); slash && rc == 0; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir(dir, 0700) != 0 && errno != EEXIST)
            rc = zs_fail(err, ZS_E_CACHE, "cannot create cache directory %s: %s", dir, strerror(errno));
        *slash = '/';
    }
    free(dir);
    return rc;
}

/* An exclusive flock on the cache's directory, so that converters which all
 * find the cache bad set it aside once, not each its predecessor's rebuilt
 * one. -1 when it cannot be had (then we go on unlocked). */
static int lock_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Renames path and its -wal/-shm to path.bad-<unix time>, the journal files
 * first: a -wal left behind would be replayed into the rebuilt database. */
static int set_aside(const char *path, const char *why, const zs_notes *notes, zs_error *err)
{
    long long now = (long long)time(NULL);
    size_t n = strlen(path) + 64;
    char *bad = malloc(n);
    if (!bad)
        return zs_fail(err, ZS_E_NOMEM, "cache path");
    /* Never over an earlier one: two set-asides can fall in one second. */
    struct stat st;
    snprintf(bad, n, "%s.bad-%lld", path, now);
    for (int k = 1; lstat(bad, &st) == 0; k++)
        snprintf(bad, n, "%s.bad-%lld-%d", path, now, k);
    int rc = 0;
    static const char *const journals[] = {"-wal", "-shm"};
    for (size_t i = 0; i < sizeof journals / sizeof *journals && rc == 0; i++) {
        char *from = join(path, journals[i]), *to = join(bad, journals[i]);
        if (!from || !to)
            rc = zs_fail(err, ZS_E_NOMEM, "cache path");
        else if (rename(from, to) != 0 && errno != ENOENT)
            rc = zs_fail(err, ZS_E_CACHE, "cannot set aside %s: %s", from, strerror(errno));
        free(from);
        free(to);
    }
    if (rc == 0 && rename(path, bad) != 0 && errno != ENOENT)
        rc = zs_fail(err, ZS_E_CACHE, "cannot set aside bad cache %s (%s): %s", path, why, strerror(errno));
    if (rc == 0)
        zs_note(notes, ZS_NOTE_WARNING, "cache %s %s: set aside as %s, rebuilding", path, why, bad);
    free(bad);
    return rc;
}

/* ---- connecting --------------------------------------------------------- */

static int is_corrupt(int rc)
{
    return (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
}

/* Runs a PRAGMA and copies the first column of its first row (or, on error,
 * the error message) into out. An SQLite result code. */
static int pragma(sqlite3 *db, const char *sql, char *out, size_t n)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        const unsigned char *v = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
        snprintf(out, n, "%s", v ? (const char *)v : "");
        if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK)
        snprintf(out, n, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    /* quick_check reports span lines; the warning must stay one. */
    for (char *o = out; *o; o++)
        if (*o == '\n' || *o == '\r' || *o == '\t')
            *o = ' ';
    return rc;
}

/* pragma(), retried while another connection holds a lock it needs. Changing
 * the journal mode starts as a reader and then wants the write lock, so two
 * converters doing it at once on a new cache would deadlock; SQLite answers
 * one of them SQLITE_BUSY at once, without the busy handler. */
static int pragma_retry(sqlite3 *db, const char *sql, char *out, size_t n)
{
    int rc;
    for (int waited = 0;; waited += 10) {
        rc = pragma(db, sql, out, n);
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) || waited >= BUSY_TIMEOUT_MS)
            return rc;
        sqlite3_sleep(10);
    }
}

/* Sorts a failed SQLite call into a file to set aside or a failure. */
static int connect_error(conv_cache *c, int rc, const char *msg, char *why, size_t n, zs_error *err)
{
    if (is_corrupt(rc)) {
        snprintf(why, n, "is corrupt (%s)", msg);
        return CONNECT_BAD;
    }
    return zs_fail(err, ZS_E_CACHE, "cache %s: %s", c->path, msg);
}

static void disconnect(conv_cache *c)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(c->st[i]);
        c->st[i] = NULL;
    }
    sqlite3_close(c->db);
    c->db = NULL;
}

/* Brings the cache up to CACHE_VERSION under the write lock, re-reading the
 * version there: another converter may have just done it. */
static int migrate(conv_cache *c, char *why, size_t n, zs_error *err)
{
    char v[64], *msg = NULL;
    int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return connect_error(c, rc, sqlite3_errmsg(c->db), why, n, err);
    if ((rc = pragma(c->db, "PRAGMA user_version", v, sizeof v)) != SQLITE_OK) {
        rc = connect_error(c, rc, v, why, n, err);
        goto out;
    }
    int version = atoi(v);
    if (version > CACHE_VERSION) {
        snprintf(why, n, "has schema version %d, newer than this converter's %d", version, CACHE_VERSION);
        rc = CONNECT_BAD;
        goto out;
    }
    if (version == 0) {
        /* Some other program's database: leave it whole, beside ours. */
        if ((rc = pragma(c->db, "SELECT count(*) FROM sqlite_master", v, sizeof v)) != SQLITE_OK) {
            rc = connect_error(c, rc, v, why, n, err);
            goto out;
        }
        if (atoi(v) != 0) {
            snprintf(why, n, "is not a zeek-spy cache (tables but no schema version)");
            rc = CONNECT_BAD;
            goto out;
        }
    }
    for (int i = version + 1; i <= CACHE_VERSION; i++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", i);
        if ((rc = sqlite3_exec(c->db, migrations[i], NULL, NULL, &msg)) == SQLITE_OK)
            rc = sqlite3_exec(c->db, bump, NULL, NULL, &msg);
        if (rc != SQLITE_OK) {
            if ((rc & 0xff) == SQLITE_ERROR) {
                snprintf(why, n, "has an unexpected schema (migration %d: %s)", i, msg ? msg : "?");
                rc = CONNECT_BAD;
            } else {
                rc = connect_error(c, rc, msg ? msg : sqlite3_errstr(rc), why, n, err);
            }
            goto out;
        }
    }
    if ((rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, &msg)) != SQLITE_OK)
        rc = connect_error(c, rc, msg ? msg : sqlite3_errstr(rc), why, n, err);
out:
    sqlite3_free(msg);
    if (rc != CONNECT_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Opens c->path and readies it: checked, WAL, migrated, statements
 * prepared. CONNECT_BAD with the reason in why when the file must be set
 * aside. On anything but CONNECT_OK the caller disconnects. */
static int connect_db(conv_cache *c, char *why, size_t n, zs_error *err)
{
    char v[256];
    int rc = sqlite3_open_v2(c->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK)
        return zs_fail(err, ZS_E_CACHE, "cannot open cache %s: %s", c->path,
                       c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);

    if ((rc = pragma(c->db, "PRAGMA quick_check(1)", v, sizeof v)) != SQLITE_OK)
        return connect_error(c, rc, v, why, n, err);
    if (strcmp(v, "ok") != 0) {
        snprintf(why, n, "fails its integrity check (%s)", v);
        return CONNECT_BAD;
    }
    if ((rc = pragma(c->db, "PRAGMA user_version", v, sizeof v)) != SQLITE_OK)
        return connect_error(c, rc, v, why, n, err);
    int version = atoi(v);
    if (version > CACHE_VERSION) {
        snprintf(why, n, "has schema version %d, newer than this converter's %d", version, CACHE_VERSION);
        return CONNECT_BAD;
    }
    /* WAL: readers never wait for a writer, and a killed writer leaves the
     * last committed state. NORMAL sync is durable enough for a cache. */
    if ((rc = pragma_retry(c->db, "PRAGMA journal_mode = WAL", v, sizeof v)) != SQLITE_OK ||
        (rc = pragma(c->db, "PRAGMA synchronous = NORMAL", v, sizeof v)) != SQLITE_OK ||
        (rc = pragma(c->db, "PRAGMA foreign_keys = ON", v, sizeof v)) != SQLITE_OK)
        return connect_error(c, rc, v, why, n, err);
    if (version < CACHE_VERSION && (rc = migrate(c, why, n, err)) != CONNECT_OK)
        return rc;

    for (int i = 0; i < ST__COUNT; i++) {
        rc = sqlite3_prepare_v3(c->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL);
        if (rc == SQLITE_ERROR) {
            snprintf(why, n, "has an unexpected schema (%s)", sqlite3_errmsg(c->db));
            return CONNECT_BAD;
        }
        if (rc != SQLITE_OK)
            return connect_error(c, rc, sqlite3_errmsg(c->db), why, n, err);
    }
    return CONNECT_OK;
}

conv_cache *conv_cache_open(const char *path, const zs_notes *notes, zs_error *err)
{
    conv_cache *c = calloc(1, sizeof *c);
    if (!c) {
        zs_fail(err, ZS_E_NOMEM, "cache");
        return NULL;
    }
    c->path = path ? strdup(path) : default_path(err);
    if (!c->path) {
        if (path)
            zs_fail(err, ZS_E_NOMEM, "cache path");
        goto fail;
    }
    if (make_parent_dirs(c->path, err))
        goto fail;

    char why[512];
    int rc = connect_db(c, why, sizeof why, err);
    if (rc == CONNECT_BAD) {
        disconnect(c);
        int lock = lock_dir(c->path);
        /* Look again under the lock: another converter may have set it
         * aside and rebuilt it while we waited. */
        rc = connect_db(c, why, sizeof why, err);
        if (rc == CONNECT_BAD) {
            disconnect(c);
            rc = set_aside(c->path, why, notes, err);
            if (rc == 0 && (rc = connect_db(c, why, sizeof why, err)) == CONNECT_BAD)
                rc = zs_fail(err, ZS_E_CACHE, "rebuilt cache %s %s", c->path, why);
        }
        if (lock >= 0)
            close(lock);
    }
    if (rc == CONNECT_OK)
        return c;
fail:
    conv_cache_close(c);
    return NULL;
}

void conv_cache_close(conv_cache *c)
{
    if (!c)
        return;
    disconnect(c);
    free(c->buf);
    free(c->path);
    free(c);
}

const char *conv_cache_path(const conv_cache *c)
{
    return c->path;
}

/* ---- load and store ------------------------------------------------------ */

static int reserve(conv_cache *c, size_t n)
{
    return zs_grow(&c->buf, &c->buf_cap, n, sizeof *c->buf, 64);
}

/* Steps a statement that returns no rows and makes it reusable. */
static int run(conv_cache *c, int which)
{
    int rc = sqlite3_step(c->st[which]);
    sqlite3_reset(c->st[which]);
    sqlite3_clear_bindings(c->st[which]);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void finish(conv_cache *c, int which)
{
    sqlite3_reset(c->st[which]);
    sqlite3_clear_bindings(c->st[which]);
}

static int bind_text(sqlite3_stmt *s, int i, const char *v)
{
    return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(s, i);
}

static int64_t column_i64(sqlite3_stmt *s, int i)
{
    return (int64_t)sqlite3_column_int64(s, i);
}

/* The columns of each SELECT, in statement_sql's order. */
enum { FIND_ID, FIND_CONVERTER, FIND_ZEEK_VERSION, FIND_HOST, FIND_RECORDER_VERSION,
       FIND_START_WALL_NS, FIND_DURATION_NS, FIND_PERIOD_NS, FIND_SAMPLES, FIND_SKIPPED,
       FIND_UNRESOLVED, FIND_TORN, FIND_VIEW, FIND_MARKED, FIND_OFF_CPU };
enum { FUNCTION_IDX, FUNCTION_NAME, FUNCTION_FILE, FUNCTION_START_LINE, FUNCTION_NATIVE };
enum { LOCATION_IDX, LOCATION_FUNCTION, LOCATION_LINE, LOCATION_MAPPING, LOCATION_ADDRESS,
       LOCATION_INLINED };
enum { MAPPING_IDX, MAPPING_START, MAPPING_LIMIT, MAPPING_FILE_OFFSET, MAPPING_FILE, MAPPING_BUILD_ID };
enum { PROCESS_IDX, PROCESS_HOST, PROCESS_NODE, PROCESS_PID };
enum { STACK_IDX, STACK_PID, STACK_COUNT, STACK_LOCS, STACK_PROCESS };

/* What loading one table found. */
enum { LOAD_OK = 0, LOAD_NOMEM = -1, LOAD_SQLITE = -2, LOAD_BAD = -3 };

/* The meta columns of an ST_FIND row; 0, or -1 when out of memory. */
static int load_meta(sqlite3_stmt *s, conv_meta *m)
{
    if (conv_set_string(&m->zeek_version, (const char *)sqlite3_column_text(s, FIND_ZEEK_VERSION)) ||
        conv_set_string(&m->host, (const char *)sqlite3_column_text(s, FIND_HOST)) ||
        conv_set_string(&m->recorder_version, (const char *)sqlite3_column_text(s, FIND_RECORDER_VERSION)))
        return -1;
    m->start_wall_ns = column_i64(s, FIND_START_WALL_NS);
    m->duration_ns = column_i64(s, FIND_DURATION_NS);
    m->period_ns = column_i64(s, FIND_PERIOD_NS);
    m->samples = (uint64_t)column_i64(s, FIND_SAMPLES);
    m->skipped = (uint64_t)column_i64(s, FIND_SKIPPED);
    m->unresolved = (uint64_t)column_i64(s, FIND_UNRESOLVED);
    m->torn = (uint64_t)column_i64(s, FIND_TORN);
    const char *view = (const char *)sqlite3_column_text(s, FIND_VIEW);
    m->cpu_view = view && !strcmp(view, "cpu");
    m->marked = (int)column_i64(s, FIND_MARKED);
    m->off_cpu = (uint64_t)column_i64(s, FIND_OFF_CPU);
    return 0;
}

/* One row of a table into p: LOAD_OK, LOAD_NOMEM, or LOAD_BAD with *bad
 * saying what is wrong. Rows come in index order and each must land on its
 * own index: stored entries hold no duplicates. */
typedef int (*row_loader)(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad);

static int load_function(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad)
{
    (void)c;
    const char *name = (const char *)sqlite3_column_text(s, FUNCTION_NAME);
    const char *file = (const char *)sqlite3_column_text(s, FUNCTION_FILE);
    if (!name || !file || column_i64(s, FUNCTION_IDX) != (int64_t)p->nfunctions)
        return *bad = "function", LOAD_BAD;
    int64_t i = sqlite3_column_int(s, FUNCTION_NATIVE)
                    ? conv_profile_native_function(p, name, file)
                    : conv_profile_function(p, name, file, sqlite3_column_int(s, FUNCTION_START_LINE));
    if (i < 0)
        return LOAD_NOMEM;
    if ((size_t)i + 1 != p->nfunctions)
        return *bad = "duplicate function", LOAD_BAD;
    return LOAD_OK;
}

static int load_location(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad)
{
    (void)c;
    int64_t function = column_i64(s, LOCATION_FUNCTION), mapping = column_i64(s, LOCATION_MAPPING);
    if (column_i64(s, LOCATION_IDX) != (int64_t)p->nlocations || function < 0 ||
        function >= (int64_t)p->nfunctions || mapping < 0 || mapping > (int64_t)p->nmappings)
        return *bad = "location", LOAD_BAD;
    uint64_t address = (uint64_t)column_i64(s, LOCATION_ADDRESS);
    int line = sqlite3_column_int(s, LOCATION_LINE);
    int inlined = sqlite3_column_int(s, LOCATION_INLINED) != 0;
    int64_t i = mapping || address || inlined
                    ? conv_profile_native_location(p, (uint32_t)function, line, inlined,
                                                   (uint32_t)mapping, address)
                    : conv_profile_location(p, (uint32_t)function, line);
    if (i < 0)
        return LOAD_NOMEM;
    if ((size_t)i + 1 != p->nlocations)
        return *bad = "duplicate location", LOAD_BAD;
    return LOAD_OK;
}

static int load_mapping(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad)
{
    (void)c;
    const char *file = (const char *)sqlite3_column_text(s, MAPPING_FILE);
    const char *build_id = (const char *)sqlite3_column_text(s, MAPPING_BUILD_ID);
    if (!file || !build_id || column_i64(s, MAPPING_IDX) != (int64_t)p->nmappings)
        return *bad = "mapping", LOAD_BAD;
    int64_t i = conv_profile_mapping(p, (uint64_t)column_i64(s, MAPPING_START),
                                     (uint64_t)column_i64(s, MAPPING_LIMIT),
                                     (uint64_t)column_i64(s, MAPPING_FILE_OFFSET), file, build_id);
    if (i < 0)
        return LOAD_NOMEM;
    if ((size_t)i + 1 != p->nmappings)
        return *bad = "duplicate mapping", LOAD_BAD;
    return LOAD_OK;
}

static int load_process(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad)
{
    (void)c;
    if (column_i64(s, PROCESS_IDX) != (int64_t)p->nprocesses)
        return *bad = "process", LOAD_BAD;
    int64_t i = conv_profile_process(p, (const char *)sqlite3_column_text(s, PROCESS_HOST),
                                     (uint32_t)column_i64(s, PROCESS_PID),
                                     (const char *)sqlite3_column_text(s, PROCESS_NODE));
    if (i < 0)
        return LOAD_NOMEM;
    if ((size_t)i + 1 != p->nprocesses)
        return *bad = "duplicate process", LOAD_BAD;
    return LOAD_OK;
}

/* A stack's locations are a blob of little-endian uint32s. */
static int load_stack(conv_cache *c, sqlite3_stmt *s, conv_profile *p, const char **bad)
{
    const unsigned char *blob = sqlite3_column_blob(s, STACK_LOCS);
    size_t bytes = (size_t)sqlite3_column_bytes(s, STACK_LOCS), nlocs = bytes / 4;
    if (column_i64(s, STACK_IDX) != (int64_t)p->nstacks || bytes % 4)
        return *bad = "stack", LOAD_BAD;
    if (reserve(c, nlocs + 1))
        return LOAD_NOMEM;
    for (size_t k = 0; k < nlocs; k++) {
        const unsigned char *b = blob + 4 * k;
        c->buf[k] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (c->buf[k] >= p->nlocations)
            return *bad = "stack frame", LOAD_BAD;
    }
    int64_t process = column_i64(s, STACK_PROCESS);
    if (process < 0 || process >= (int64_t)p->nprocesses)
        return *bad = "stack process", LOAD_BAD;
    if (conv_profile_add_process_stack(p, (uint32_t)process, c->buf, (uint32_t)nlocs,
                                       (uint64_t)column_i64(s, STACK_COUNT)))
        return LOAD_NOMEM;
    if (column_i64(s, STACK_IDX) + 1 != (int64_t)p->nstacks)
        return *bad = "duplicate stack", LOAD_BAD;
    return LOAD_OK;
}

/* Every row of one table of entry id: a LOAD_ code; LOAD_SQLITE leaves the
 * SQLite error in *rc. */
static int load_table(conv_cache *c, int which, row_loader row, sqlite3_int64 id, conv_profile *p,
                      const char **bad, int *rc)
{
    sqlite3_stmt *s = c->st[which];
    int step, result = LOAD_OK;
    sqlite3_bind_int64(s, 1, id);
    while (result == LOAD_OK && (step = sqlite3_step(s)) == SQLITE_ROW)
        result = row(c, s, p, bad);
    finish(c, which);
    if (result == LOAD_OK && step != SQLITE_DONE) {
        *rc = step;
        result = LOAD_SQLITE;
    }
    return result;
}

/* The tables of an entry, in the order their rows refer to each other. */
static const struct {
    int statement;
    row_loader row;
} tables[] = {
    {ST_SELECT_FUNCTIONS, load_function},
    {ST_SELECT_MAPPINGS, load_mapping},
    {ST_SELECT_LOCATIONS, load_location},
    {ST_SELECT_PROCESSES, load_process},
    {ST_SELECT_STACKS, load_stack},
};

/* The rows are re-interned in index order, which rebuilds the profile's
 * intern tables and, since stored entries hold no duplicates, the same
 * indexes; any row that does not land on its own index means a damaged
 * entry. */
int conv_cache_load(conv_cache *c, const char *key, conv_profile **out, zs_error *err)
{
    *out = NULL;
    if (!key)
        return zs_fail(err, ZS_E_CACHE, "cache %s: no key", c->path);
    conv_profile *p = NULL;
    const char *bad = NULL; /* why the entry is inconsistent */
    int rc, result = -1;
    if ((rc = run(c, ST_BEGIN_READ)) != SQLITE_OK)
        goto sqlite_error;

    sqlite3_stmt *s = c->st[ST_FIND];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
        finish(c, ST_FIND);
        if (rc != SQLITE_DONE)
            goto sqlite_error;
        result = 0;
        goto out;
    }
    const unsigned char *conv = sqlite3_column_text(s, FIND_CONVERTER);
    if (!conv || strcmp((const char *)conv, ZS_RECORDER_VERSION) != 0) {
        finish(c, ST_FIND); /* resolved by another converter version: redo it */
        result = 0;
        goto out;
    }
    sqlite3_int64 id = sqlite3_column_int64(s, FIND_ID);
    if (!(p = conv_profile_new()) || load_meta(s, &p->meta)) {
        finish(c, ST_FIND);
        goto nomem;
    }
    finish(c, ST_FIND);

    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        switch (load_table(c, tables[t].statement, tables[t].row, id, p, &bad, &rc)) {
        case LOAD_OK: break;
        case LOAD_NOMEM: goto nomem;
        case LOAD_SQLITE: goto sqlite_error;
        default: goto inconsistent;
        }
    }

    if ((rc = run(c, ST_COMMIT)) != SQLITE_OK)
        goto sqlite_error;
    *out = p;
    return 1;

inconsistent:
    zs_fail(err, ZS_E_CACHE, "cache %s: entry %s is damaged (bad %s row)", c->path, key, bad);
    goto out;
nomem:
    zs_fail(err, ZS_E_NOMEM, "loading cache entry %s", key);
    goto out;
sqlite_error:
    zs_fail(err, ZS_E_CACHE, "cache %s: cannot load %s: %s", c->path, key, sqlite3_errmsg(c->db));
out:
    run(c, ST_ROLLBACK); /* ends the read transaction; harmless without one */
    conv_profile_free(p);
    return result;
}

/* Stored entries are read back trusting their indexes, so refuse to store
 * one whose indexes point nowhere. */
static const char *check_profile(const conv_profile *p)
{
    if (p->nfunctions > UINT32_MAX || p->nlocations > UINT32_MAX)
        return "too many functions or locations";
    for (size_t i = 0; i < p->nfunctions; i++)
        if (!p->functions[i].name)
            return "a function without a name";
    for (size_t i = 0; i < p->nlocations; i++)
        if (p->locations[i].function >= p->nfunctions)
            return "a location of a missing function";
        else if (p->locations[i].mapping > p->nmappings)
            return "a location in a missing mapping";
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *s = &p->stacks[i];
        if (s->process >= p->nprocesses)
            return "a stack of a missing process";
        if (s->nlocs && !s->locs)
            return "a stack without frames";
        if (s->nlocs > MAX_FRAMES)
            return "a stack too deep to store";
        for (uint32_t k = 0; k < s->nlocs; k++)
            if (s->locs[k] >= p->nlocations)
                return "a stack frame at a missing location";
    }
    return NULL;
}

/* The parameters of each INSERT, in statement_sql's order. */
enum { REC_KEY = 1, REC_CONVERTER, REC_STORED_AT, REC_ZEEK_VERSION, REC_HOST, REC_RECORDER_VERSION,
       REC_START_WALL_NS, REC_DURATION_NS, REC_PERIOD_NS, REC_SAMPLES, REC_SKIPPED,
       REC_UNRESOLVED, REC_TORN, REC_VIEW, REC_MARKED, REC_OFF_CPU };
enum { ROW_RECORDING = 1, ROW_IDX }; /* every child row starts so */
enum { FUNCTION_P_NAME = 3, FUNCTION_P_FILE, FUNCTION_P_START_LINE, FUNCTION_P_NATIVE };
enum { LOCATION_P_FUNCTION = 3, LOCATION_P_LINE, LOCATION_P_MAPPING, LOCATION_P_ADDRESS,
       LOCATION_P_INLINED };
enum { MAPPING_P_START = 3, MAPPING_P_LIMIT, MAPPING_P_FILE_OFFSET, MAPPING_P_FILE, MAPPING_P_BUILD_ID };
enum { PROCESS_P_HOST = 3, PROCESS_P_NODE, PROCESS_P_PID };
enum { STACK_P_PID = 3, STACK_P_COUNT, STACK_P_LOCS, STACK_P_PROCESS };

/* The recordings row; its id in *id. An SQLite result code. */
static int store_recording(conv_cache *c, const char *key, const conv_meta *m, sqlite3_int64 *id)
{
    sqlite3_stmt *s = c->st[ST_INSERT_RECORDING];
    sqlite3_bind_text(s, REC_KEY, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, REC_CONVERTER, ZS_RECORDER_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, REC_STORED_AT, (sqlite3_int64)time(NULL));
    bind_text(s, REC_ZEEK_VERSION, m->zeek_version);
    bind_text(s, REC_HOST, m->host);
    bind_text(s, REC_RECORDER_VERSION, m->recorder_version);
    sqlite3_bind_int64(s, REC_START_WALL_NS, m->start_wall_ns);
    sqlite3_bind_int64(s, REC_DURATION_NS, m->duration_ns);
    sqlite3_bind_int64(s, REC_PERIOD_NS, m->period_ns);
    sqlite3_bind_int64(s, REC_SAMPLES, (sqlite3_int64)m->samples);
    sqlite3_bind_int64(s, REC_SKIPPED, (sqlite3_int64)m->skipped);
    sqlite3_bind_int64(s, REC_UNRESOLVED, (sqlite3_int64)m->unresolved);
    sqlite3_bind_int64(s, REC_TORN, (sqlite3_int64)m->torn);
    sqlite3_bind_text(s, REC_VIEW, m->cpu_view ? "cpu" : "wall", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, REC_MARKED, m->marked);
    sqlite3_bind_int64(s, REC_OFF_CPU, (sqlite3_int64)m->off_cpu);
    int rc = run(c, ST_INSERT_RECORDING);
    *id = sqlite3_last_insert_rowid(c->db);
    return rc;
}

/* Binds the (recording, idx) that start every child row. */
static sqlite3_stmt *child_row(conv_cache *c, int which, sqlite3_int64 id, size_t i)
{
    sqlite3_stmt *s = c->st[which];
    sqlite3_bind_int64(s, ROW_RECORDING, id);
    sqlite3_bind_int64(s, ROW_IDX, (sqlite3_int64)i);
    return s;
}

static int store_functions(conv_cache *c, sqlite3_int64 id, const conv_profile *p)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < p->nfunctions && rc == SQLITE_OK; i++) {
        const conv_function *f = &p->functions[i];
        sqlite3_stmt *s = child_row(c, ST_INSERT_FUNCTION, id, i);
        sqlite3_bind_text(s, FUNCTION_P_NAME, f->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, FUNCTION_P_FILE, f->file ? f->file : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(s, FUNCTION_P_START_LINE, f->start_line);
        sqlite3_bind_int(s, FUNCTION_P_NATIVE, f->native != 0);
        rc = run(c, ST_INSERT_FUNCTION);
    }
    return rc;
}

static int store_locations(conv_cache *c, sqlite3_int64 id, const conv_profile *p)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < p->nlocations && rc == SQLITE_OK; i++) {
        sqlite3_stmt *s = child_row(c, ST_INSERT_LOCATION, id, i);
        sqlite3_bind_int64(s, LOCATION_P_FUNCTION, p->locations[i].function);
        sqlite3_bind_int(s, LOCATION_P_LINE, p->locations[i].line);
        sqlite3_bind_int64(s, LOCATION_P_MAPPING, p->locations[i].mapping);
        sqlite3_bind_int64(s, LOCATION_P_ADDRESS, (sqlite3_int64)p->locations[i].address);
        sqlite3_bind_int(s, LOCATION_P_INLINED, p->locations[i].inlined != 0);
        rc = run(c, ST_INSERT_LOCATION);
    }
    return rc;
}

static int store_mappings(conv_cache *c, sqlite3_int64 id, const conv_profile *p)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < p->nmappings && rc == SQLITE_OK; i++) {
        const conv_mapping *m = &p->mappings[i];
        sqlite3_stmt *s = child_row(c, ST_INSERT_MAPPING, id, i);
        sqlite3_bind_int64(s, MAPPING_P_START, (sqlite3_int64)m->start);
        sqlite3_bind_int64(s, MAPPING_P_LIMIT, (sqlite3_int64)m->limit);
        sqlite3_bind_int64(s, MAPPING_P_FILE_OFFSET, (sqlite3_int64)m->file_offset);
        sqlite3_bind_text(s, MAPPING_P_FILE, m->file, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, MAPPING_P_BUILD_ID, m->build_id, -1, SQLITE_STATIC);
        rc = run(c, ST_INSERT_MAPPING);
    }
    return rc;
}

static int store_processes(conv_cache *c, sqlite3_int64 id, const conv_profile *p)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < p->nprocesses && rc == SQLITE_OK; i++) {
        const conv_process *q = &p->processes[i];
        sqlite3_stmt *s = child_row(c, ST_INSERT_PROCESS, id, i);
        sqlite3_bind_text(s, PROCESS_P_HOST, q->host, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, PROCESS_P_NODE, q->node, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, PROCESS_P_PID, q->pid);
        rc = run(c, ST_INSERT_PROCESS);
    }
    return rc;
}

/* A stack's locations as a blob of little-endian uint32s. */
static int store_stacks(conv_cache *c, sqlite3_int64 id, const conv_profile *p)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < p->nstacks && rc == SQLITE_OK; i++) {
        const conv_stack *st = &p->stacks[i];
        if (reserve(c, (size_t)st->nlocs + 1))
            return SQLITE_NOMEM;
        unsigned char *b = (unsigned char *)c->buf;
        for (uint32_t k = 0; k < st->nlocs; k++) {
            uint32_t v = st->locs[k];
            b[4 * k] = (unsigned char)v;
            b[4 * k + 1] = (unsigned char)(v >> 8);
            b[4 * k + 2] = (unsigned char)(v >> 16);
            b[4 * k + 3] = (unsigned char)(v >> 24);
        }
        sqlite3_stmt *s = child_row(c, ST_INSERT_STACK, id, i);
        sqlite3_bind_int64(s, STACK_P_PID, st->pid);
        sqlite3_bind_int64(s, STACK_P_COUNT, (sqlite3_int64)st->count);
        /* A non-NULL pointer even for no frames: an empty blob, not NULL. */
        sqlite3_bind_blob(s, STACK_P_LOCS, b, (int)(4 * st->nlocs), SQLITE_STATIC);
        sqlite3_bind_int64(s, STACK_P_PROCESS, st->process);
        rc = run(c, ST_INSERT_STACK);
    }
    return rc;
}

int conv_cache_store(conv_cache *c, const char *key, const conv_profile *p, zs_error *err)
{
    if (!key)
        return zs_fail(err, ZS_E_CACHE, "cache %s: no key", c->path);
    const char *invalid = check_profile(p);
    if (invalid)
        return zs_fail(err, ZS_E_CACHE, "cache %s: not storing %s: the profile has %s", c->path, key,
                       invalid);
    sqlite3_int64 id;
    int rc;
    if ((rc = run(c, ST_BEGIN_WRITE)) == SQLITE_OK) {
        sqlite3_bind_text(c->st[ST_DELETE], 1, key, -1, SQLITE_STATIC);
        rc = run(c, ST_DELETE);
    }
    if (rc == SQLITE_OK)
        rc = store_recording(c, key, &p->meta, &id);
    if (rc == SQLITE_OK)
        rc = store_functions(c, id, p);
    if (rc == SQLITE_OK)
        rc = store_mappings(c, id, p);
    if (rc == SQLITE_OK)
        rc = store_locations(c, id, p);
    if (rc == SQLITE_OK)
        rc = store_processes(c, id, p);
    if (rc == SQLITE_OK)
        rc = store_stacks(c, id, p);
    if (rc == SQLITE_OK && (rc = run(c, ST_COMMIT)) == SQLITE_OK)
        return 0;
    zs_fail(err, ZS_E_CACHE, "cache %s: cannot store %s: %s", c->path, key,
            rc == SQLITE_NOMEM ? sqlite3_errstr(rc) : sqlite3_errmsg(c->db));
    run(c, ST_ROLLBACK);
    return -1;
}
