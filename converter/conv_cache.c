#include "conv_cache.h"

#include "cache_schema.h"
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
    ST_SELECT_PROCESSES,
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
                " duration_ns, period_ns, samples, skipped, unresolved, torn"
                " FROM recordings WHERE key = ?1",
    /* The child rows go with it (ON DELETE CASCADE, foreign_keys is on). */
    [ST_DELETE] = "DELETE FROM recordings WHERE key = ?1",
    [ST_INSERT_RECORDING] =
        "INSERT INTO recordings (key, converter, stored_at, zeek_version, host, recorder_version,"
        " start_wall_ns, duration_ns, period_ns, samples, skipped, unresolved, torn)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_INSERT_FUNCTION] = "INSERT INTO functions (recording, idx, name, file, start_line)"
                           " VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_INSERT_LOCATION] = "INSERT INTO locations (recording, idx, function, line)"
                           " VALUES (?1, ?2, ?3, ?4)",
    [ST_INSERT_STACK] = "INSERT INTO stacks (recording, idx, pid, count, locs, process)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_INSERT_PROCESS] = "INSERT INTO processes (recording, idx, host, node, pid)"
                          " VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_SELECT_PROCESSES] = "SELECT idx, host, node, pid FROM processes"
                            " WHERE recording = ?1 ORDER BY idx",
    [ST_SELECT_FUNCTIONS] = "SELECT idx, name, file, start_line FROM functions"
                            " WHERE recording = ?1 ORDER BY idx",
    [ST_SELECT_LOCATIONS] = "SELECT idx, function, line FROM locations"
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
static int set_aside(const char *path, const char *why, zs_error *err)
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
        fprintf(stderr, "zeek-spy-convert: warning: cache %s %s: set aside as %s, rebuilding\n", path,
                why, bad);
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

conv_cache *conv_cache_open(const char *path, zs_error *err)
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
            rc = set_aside(c->path, why, err);
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
    if (n <= c->buf_cap)
        return 0;
    size_t cap = c->buf_cap ? c->buf_cap : 64;
    while (cap < n)
        cap *= 2;
    uint32_t *b = realloc(c->buf, cap * sizeof *b);
    if (!b)
        return -1;
    c->buf = b;
    c->buf_cap = cap;
    return 0;
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

/* The meta columns of an ST_FIND row; 0, or -1 when out of memory. */
static int load_meta(sqlite3_stmt *s, conv_meta *m)
{
    if (conv_set_string(&m->zeek_version, (const char *)sqlite3_column_text(s, 2)) ||
        conv_set_string(&m->host, (const char *)sqlite3_column_text(s, 3)) ||
        conv_set_string(&m->recorder_version, (const char *)sqlite3_column_text(s, 4)))
        return -1;
    m->start_wall_ns = column_i64(s, 5);
    m->duration_ns = column_i64(s, 6);
    m->period_ns = column_i64(s, 7);
    m->samples = (uint64_t)column_i64(s, 8);
    m->skipped = (uint64_t)column_i64(s, 9);
    m->unresolved = (uint64_t)column_i64(s, 10);
    m->torn = (uint64_t)column_i64(s, 11);
    return 0;
}

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
    int rc, result = -1, step;
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
    const unsigned char *conv = sqlite3_column_text(s, 1);
    if (!conv || strcmp((const char *)conv, ZS_RECORDER_VERSION) != 0) {
        finish(c, ST_FIND); /* resolved by another converter version: redo it */
        result = 0;
        goto out;
    }
    sqlite3_int64 id = sqlite3_column_int64(s, 0);
    if (!(p = conv_profile_new()) || load_meta(s, &p->meta)) {
        finish(c, ST_FIND);
        goto nomem;
    }
    finish(c, ST_FIND);

    s = c->st[ST_SELECT_FUNCTIONS];
    sqlite3_bind_int64(s, 1, id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 1);
        const char *file = (const char *)sqlite3_column_text(s, 2);
        if (!name || !file || column_i64(s, 0) != (int64_t)p->nfunctions) {
            bad = "function";
            break;
        }
        int64_t i = conv_profile_function(p, name, file, sqlite3_column_int(s, 3));
        if (i < 0) {
            finish(c, ST_SELECT_FUNCTIONS);
            goto nomem;
        }
        if ((size_t)i + 1 != p->nfunctions) {
            bad = "duplicate function";
            break;
        }
    }
    finish(c, ST_SELECT_FUNCTIONS);
    if (bad)
        goto inconsistent;
    if (step != SQLITE_DONE) {
        rc = step;
        goto sqlite_error;
    }

    s = c->st[ST_SELECT_LOCATIONS];
    sqlite3_bind_int64(s, 1, id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t function = column_i64(s, 1);
        if (column_i64(s, 0) != (int64_t)p->nlocations || function < 0 ||
            function >= (int64_t)p->nfunctions) {
            bad = "location";
            break;
        }
        int64_t i = conv_profile_location(p, (uint32_t)function, sqlite3_column_int(s, 2));
        if (i < 0) {
            finish(c, ST_SELECT_LOCATIONS);
            goto nomem;
        }
        if ((size_t)i + 1 != p->nlocations) {
            bad = "duplicate location";
            break;
        }
    }
    finish(c, ST_SELECT_LOCATIONS);
    if (bad)
        goto inconsistent;
    if (step != SQLITE_DONE) {
        rc = step;
        goto sqlite_error;
    }

    s = c->st[ST_SELECT_PROCESSES];
    sqlite3_bind_int64(s, 1, id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (column_i64(s, 0) != (int64_t)p->nprocesses) {
            bad = "process";
            break;
        }
        int64_t i = conv_profile_process(p, (const char *)sqlite3_column_text(s, 1),
                                         (uint32_t)column_i64(s, 3),
                                         (const char *)sqlite3_column_text(s, 2));
        if (i < 0) {
            finish(c, ST_SELECT_PROCESSES);
            goto nomem;
        }
        if ((size_t)i + 1 != p->nprocesses) {
            bad = "duplicate process";
            break;
        }
    }
    finish(c, ST_SELECT_PROCESSES);
    if (bad)
        goto inconsistent;
    if (step != SQLITE_DONE) {
        rc = step;
        goto sqlite_error;
    }

    s = c->st[ST_SELECT_STACKS];
    sqlite3_bind_int64(s, 1, id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *blob = sqlite3_column_blob(s, 3);
        size_t bytes = (size_t)sqlite3_column_bytes(s, 3), nlocs = bytes / 4;
        if (column_i64(s, 0) != (int64_t)p->nstacks || bytes % 4) {
            bad = "stack";
            break;
        }
        if (reserve(c, nlocs + 1)) {
            finish(c, ST_SELECT_STACKS);
            goto nomem;
        }
        for (size_t k = 0; k < nlocs && !bad; k++) {
            const unsigned char *b = blob + 4 * k;
            c->buf[k] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            if (c->buf[k] >= p->nlocations)
                bad = "stack frame";
        }
        if (bad)
            break;
        int64_t process = column_i64(s, 4);
        if (process < 0 || process >= (int64_t)p->nprocesses) {
            bad = "stack process";
            break;
        }
        if (conv_profile_add_process_stack(p, (uint32_t)process, c->buf, (uint32_t)nlocs,
                                           (uint64_t)column_i64(s, 2))) {
            finish(c, ST_SELECT_STACKS);
            goto nomem;
        }
        if (column_i64(s, 0) + 1 != (int64_t)p->nstacks) {
            bad = "duplicate stack";
            break;
        }
    }
    finish(c, ST_SELECT_STACKS);
    if (bad)
        goto inconsistent;
    if (step != SQLITE_DONE) {
        rc = step;
        goto sqlite_error;
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

int conv_cache_store(conv_cache *c, const char *key, const conv_profile *p, zs_error *err)
{
    if (!key)
        return zs_fail(err, ZS_E_CACHE, "cache %s: no key", c->path);
    const char *invalid = check_profile(p);
    if (invalid)
        return zs_fail(err, ZS_E_CACHE, "cache %s: not storing %s: the profile has %s", c->path, key,
                       invalid);
    int rc;
    if ((rc = run(c, ST_BEGIN_WRITE)) != SQLITE_OK)
        goto sqlite_error;

    sqlite3_stmt *s = c->st[ST_DELETE];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    if ((rc = run(c, ST_DELETE)) != SQLITE_OK)
        goto sqlite_error;

    const conv_meta *m = &p->meta;
    s = c->st[ST_INSERT_RECORDING];
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, ZS_RECORDER_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)time(NULL));
    bind_text(s, 4, m->zeek_version);
    bind_text(s, 5, m->host);
    bind_text(s, 6, m->recorder_version);
    sqlite3_bind_int64(s, 7, m->start_wall_ns);
    sqlite3_bind_int64(s, 8, m->duration_ns);
    sqlite3_bind_int64(s, 9, m->period_ns);
    sqlite3_bind_int64(s, 10, (sqlite3_int64)m->samples);
    sqlite3_bind_int64(s, 11, (sqlite3_int64)m->skipped);
    sqlite3_bind_int64(s, 12, (sqlite3_int64)m->unresolved);
    sqlite3_bind_int64(s, 13, (sqlite3_int64)m->torn);
    if ((rc = run(c, ST_INSERT_RECORDING)) != SQLITE_OK)
        goto sqlite_error;
    sqlite3_int64 id = sqlite3_last_insert_rowid(c->db);

    s = c->st[ST_INSERT_FUNCTION];
    for (size_t i = 0; i < p->nfunctions; i++) {
        const conv_function *f = &p->functions[i];
        sqlite3_bind_int64(s, 1, id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        sqlite3_bind_text(s, 3, f->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, f->file ? f->file : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 5, f->start_line);
        if ((rc = run(c, ST_INSERT_FUNCTION)) != SQLITE_OK)
            goto sqlite_error;
    }

    s = c->st[ST_INSERT_LOCATION];
    for (size_t i = 0; i < p->nlocations; i++) {
        sqlite3_bind_int64(s, 1, id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        sqlite3_bind_int64(s, 3, p->locations[i].function);
        sqlite3_bind_int(s, 4, p->locations[i].line);
        if ((rc = run(c, ST_INSERT_LOCATION)) != SQLITE_OK)
            goto sqlite_error;
    }

    s = c->st[ST_INSERT_PROCESS];
    for (size_t i = 0; i < p->nprocesses; i++) {
        const conv_process *q = &p->processes[i];
        sqlite3_bind_int64(s, 1, id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        sqlite3_bind_text(s, 3, q->host, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, q->node, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, q->pid);
        if ((rc = run(c, ST_INSERT_PROCESS)) != SQLITE_OK)
            goto sqlite_error;
    }

    s = c->st[ST_INSERT_STACK];
    for (size_t i = 0; i < p->nstacks; i++) {
        const conv_stack *st = &p->stacks[i];
        if (reserve(c, (size_t)st->nlocs + 1)) {
            rc = SQLITE_NOMEM;
            goto sqlite_error;
        }
        unsigned char *b = (unsigned char *)c->buf;
        for (uint32_t k = 0; k < st->nlocs; k++) {
            uint32_t v = st->locs[k];
            b[4 * k] = (unsigned char)v;
            b[4 * k + 1] = (unsigned char)(v >> 8);
            b[4 * k + 2] = (unsigned char)(v >> 16);
            b[4 * k + 3] = (unsigned char)(v >> 24);
        }
        sqlite3_bind_int64(s, 1, id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        sqlite3_bind_int64(s, 3, st->pid);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)st->count);
        /* A non-NULL pointer even for no frames: an empty blob, not NULL. */
        sqlite3_bind_blob(s, 5, b, (int)(4 * st->nlocs), SQLITE_STATIC);
        sqlite3_bind_int64(s, 6, st->process);
        if ((rc = run(c, ST_INSERT_STACK)) != SQLITE_OK)
            goto sqlite_error;
    }

    if ((rc = run(c, ST_COMMIT)) != SQLITE_OK)
        goto sqlite_error;
    return 0;

sqlite_error:
    zs_fail(err, ZS_E_CACHE, "cache %s: cannot store %s: %s", c->path, key,
            rc == SQLITE_NOMEM ? sqlite3_errstr(rc) : sqlite3_errmsg(c->db));
    run(c, ST_ROLLBACK);
    return -1;
}
