/* SPDX-License-Identifier: BSD-3-Clause */
/* The verdicts of rec_inspect, remembered by the executable's identity and
 * the question asked (rec_inspect.h). */
#include "targets/rec_inspect_cache_priv.h"

#include <stdlib.h>
#include <string.h>

#include "targets/rec_file_id.h"
#include "zs_grow.h"

/* Distinct (executable, question) pairs kept; beyond it the cache starts
 * over, so a churn of rebuilt binaries cannot grow it forever. */
enum { CACHE_MAX = 256 };

typedef struct entry {
    rec_file_id file;
    int want_dwarf;
    char zeek_version[64];
    char syms[REC_INSPECT_MAX_SYMS][ZS_SYMBOL_MAX];
    int nsyms;
    int rc;
    zs_error err;
    rec_inspect_verdict verdict;
} entry;

struct rec_inspect_cache {
    entry *entries;
    size_t n, cap;
    uint64_t hits, runs;
};

rec_inspect_cache *rec_inspect_cache_new(void) { return calloc(1, sizeof(rec_inspect_cache)); }

void rec_inspect_cache_free(rec_inspect_cache *c)
{
    if (c)
        free(c->entries);
    free(c);
}

void rec_inspect_cache_counts(const rec_inspect_cache *c, uint64_t *hits, uint64_t *runs)
{
    *hits = c ? c->hits : 0;
    *runs = c ? c->runs : 0;
}

static int same_question(const entry *e, const struct stat *st, const rec_inspect_request *req)
{
    const char *version = req->zeek_version ? req->zeek_version : "";
    if (!rec_file_id_same(&e->file, st) || e->want_dwarf != req->want_dwarf || strcmp(e->zeek_version, version) ||
        e->nsyms != req->nsyms)
        return 0;
    for (int i = 0; i < req->nsyms; i++)
        if (strcmp(e->syms[i], req->syms[i]))
            return 0;
    return 1;
}

int rec_inspect_cache_find(rec_inspect_cache *c, const struct stat *st, const rec_inspect_request *req,
                           rec_inspect_verdict *v, zs_error *err)
{
    for (size_t i = 0; i < c->n; i++) {
        if (same_question(&c->entries[i], st, req)) {
            c->hits++;
            *v = c->entries[i].verdict;
            if (c->entries[i].rc)
                *err = c->entries[i].err;
            return c->entries[i].rc;
        }
    }
    return 1;
}

void rec_inspect_cache_keep(rec_inspect_cache *c, const struct stat *st, const rec_inspect_request *req,
                            int rc, const rec_inspect_verdict *v, const zs_error *err)
{
    c->runs++;
    const char *version = req->zeek_version ? req->zeek_version : "";
    if (strlen(version) >= sizeof c->entries[0].zeek_version)
        return;
    for (int i = 0; i < req->nsyms; i++)
        if (strlen(req->syms[i]) >= ZS_SYMBOL_MAX)
            return;
    if (c->n >= CACHE_MAX)
        c->n = 0;
    if (zs_grow(&c->entries, &c->cap, c->n + 1, sizeof *c->entries, 8))
        return; /* not remembered: asked again next time */
    entry *e = &c->entries[c->n++];
    *e = (entry){rec_file_id_of(st), req->want_dwarf, "", {{0}},
                 req->nsyms, rc, {0}, *v};
    strcpy(e->zeek_version, version);
    for (int i = 0; i < req->nsyms; i++)
        strcpy(e->syms[i], req->syms[i]);
    if (rc)
        e->err = *err;
}
