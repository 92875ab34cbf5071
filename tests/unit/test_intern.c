/* SPDX-License-Identifier: BSD-3-Clause */
/* zs_intern (FNV-1a, the 64-bit mixer, the intern table), zs_hex, and the
 * two recorder sets built on the table (rec_addrset, rec_stacks). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "output/rec_addrset.h"
#include "output/rec_stacks.h"
#include "zs_hex.h"
#include "zs_intern.h"

/* Strings interned into an array, the way the converter's tables work. */
typedef struct words {
    char **w;
    size_t n;
    zs_intern index;
} words;

static int same_word(const void *ctx, uint32_t id, const void *key)
{
    return !strcmp(((const words *)ctx)->w[id], key);
}

static int64_t word_id(words *ws, const char *s, uint64_t (*hash)(const char *))
{
    uint64_t h = hash(s);
    int64_t at = zs_intern_find(&ws->index, h, same_word, ws, s);
    if (at >= 0)
        return at;
    ws->w = realloc(ws->w, (ws->n + 1) * sizeof *ws->w);
    ws->w[ws->n] = strdup(s);
    CHECK(zs_intern_add(&ws->index, h, (uint32_t)ws->n) == 0);
    return (int64_t)ws->n++;
}

static uint64_t fnv(const char *s) { return zs_fnv1a(ZS_FNV_SEED, s, strlen(s)); }
/* Every key collides: equality alone must tell them apart. */
static uint64_t constant(const char *s) { (void)s; return 42; }

static void test_table(uint64_t (*hash)(const char *), int n)
{
    words ws = {0};
    char buf[32];
    for (int i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "w%d", i);
        CHECK(word_id(&ws, buf, hash) == i);
    }
    CHECK(ws.n == (size_t)n && ws.index.count == (size_t)n);
    CHECK(ws.index.cap >= 2 * (size_t)n); /* at most half full, after growing */
    for (int i = n - 1; i >= 0; i--) { /* found again after every growth */
        snprintf(buf, sizeof buf, "w%d", i);
        CHECK(word_id(&ws, buf, hash) == i);
    }
    CHECK(ws.n == (size_t)n);
    CHECK(zs_intern_find(&ws.index, hash("absent"), same_word, &ws, "absent") == -1);
    for (size_t i = 0; i < ws.n; i++)
        free(ws.w[i]);
    free(ws.w);
    zs_intern_free(&ws.index);
    CHECK(ws.index.cap == 0 && ws.index.slots == NULL);
}

static void test_hashes(void)
{
    /* The published FNV-1a 64 test vectors. */
    CHECK(zs_fnv1a(ZS_FNV_SEED, "", 0) == 0xcbf29ce484222325ULL);
    CHECK(zs_fnv1a(ZS_FNV_SEED, "a", 1) == 0xaf63dc4c8601ec8cULL);
    CHECK(zs_fnv1a(ZS_FNV_SEED, "foobar", 6) == 0x85944171f73967e8ULL);
    /* Continuing a hash is hashing the concatenation. */
    CHECK(zs_fnv1a(zs_fnv1a(ZS_FNV_SEED, "foo", 3), "bar", 3) == 0x85944171f73967e8ULL);
    CHECK(zs_mix64(0) == 0);
    CHECK(zs_mix64(1) != zs_mix64(2));
    CHECK((zs_mix64(0x1000) & 1023) != (zs_mix64(0x2000) & 1023)); /* low bits spread */
}

static void test_empty_table(void)
{
    zs_intern t = {0};
    CHECK(zs_intern_find(&t, 7, NULL, NULL, NULL) == -1);
    CHECK(zs_intern_add(&t, 7, 3) == 0);
    CHECK(zs_intern_find(&t, 7, NULL, NULL, NULL) == 3);
    CHECK(zs_intern_add(&t, 8, UINT32_MAX) == -1); /* would not fit id + 1 */
    zs_intern_free(&t);
}

static void test_hex(void)
{
    const uint8_t id[] = {0x00, 0x1f, 0xa0, 0xff};
    char out[9], small[6];
    CHECK(zs_hex(out, sizeof out, id, sizeof id) == 4 && !strcmp(out, "001fa0ff"));
    /* Whole bytes only, always terminated. */
    CHECK(zs_hex(small, sizeof small, id, sizeof id) == 2 && !strcmp(small, "001f"));
    CHECK(zs_hex(out, sizeof out, id, 0) == 0 && !strcmp(out, ""));
    CHECK(zs_hex(out, 0, id, sizeof id) == 0);
}

static void test_addrset(void)
{
    rec_addrset s = {0};
    CHECK(rec_addrset_add(&s, 0) == 1); /* 0 is a key like any other */
    CHECK(rec_addrset_add(&s, 0) == 0);
    for (uint64_t a = 0x400000; a < 0x400000 + 8 * 5000; a += 8)
        CHECK(rec_addrset_add(&s, a) == 1);
    for (uint64_t a = 0x400000; a < 0x400000 + 8 * 5000; a += 8)
        CHECK(rec_addrset_add(&s, a) == 0);
    CHECK(rec_addrset_add(&s, UINT64_MAX) == 1);
    rec_addrset_free(&s);
    CHECK(rec_addrset_add(&s, 0x400000) == 1); /* empty again, and usable */
    rec_addrset_free(&s);
}

static void test_stacks(void)
{
    rec_stacks *s = rec_stacks_new();
    zs_frame f[3] = {{0x10, 0x20}, {0x30, 0x40}, {0x50, 0x60}};
    int is_new;
    CHECK(rec_stacks_intern(s, 1, f, 3, &is_new) == 0 && is_new);
    CHECK(rec_stacks_intern(s, 1, f, 2, &is_new) == 1 && is_new);  /* a prefix is another stack */
    CHECK(rec_stacks_intern(s, 2, f, 3, &is_new) == 2 && is_new);  /* so is another process's */
    CHECK(rec_stacks_intern(s, 1, f, 0, &is_new) == 3 && is_new);  /* the empty stack */
    CHECK(rec_stacks_intern(s, 1, f, 3, &is_new) == 0 && !is_new);
    CHECK(rec_stacks_intern(s, 1, f, 0, &is_new) == 3 && !is_new);
    for (uint64_t i = 0; i < 3000; i++) {
        zs_frame g = {i, i + 1};
        CHECK(rec_stacks_intern(s, 7, &g, 1, &is_new) == (int64_t)(4 + i) && is_new);
    }
    zs_frame g = {1234, 1235};
    CHECK(rec_stacks_intern(s, 7, &g, 1, &is_new) == 4 + 1234 && !is_new);
    CHECK(rec_stacks_count(s) == 3004);
    rec_stacks_free(s);
}

/* The base of a new stack: the earlier stack of its process that shares
 * the most outermost frames, however long ago it came. */
static void test_stack_bases(void)
{
    rec_stacks *s = rec_stacks_new();
    zs_frame deep[6] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}};
    int is_new;
    size_t shared;
    CHECK(rec_stacks_intern(s, 1, deep, 6, &is_new) == 0);
    CHECK(rec_stacks_base(s, 0, &shared) == -1 && shared == 0);
    for (uint64_t i = 0; i < 100; i++) { /* many stacks in between, sharing one frame */
        zs_frame g[2] = {{1, 1}, {100 + i, 0}};
        CHECK(rec_stacks_intern(s, 1, g, 2, &is_new) == (int64_t)(1 + i));
        CHECK(rec_stacks_base(s, (uint64_t)(1 + i), &shared) == -1); /* 1 frame: no base */
    }
    zs_frame leaf[6] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {7, 7}};
    CHECK(rec_stacks_intern(s, 1, leaf, 6, &is_new) == 101);
    CHECK(rec_stacks_base(s, 101, &shared) == 0 && shared == 5);
    CHECK(rec_stacks_intern(s, 2, leaf, 6, &is_new) == 102); /* another process: none */
    CHECK(rec_stacks_base(s, 102, &shared) == -1);
    zs_frame longer[7] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {7, 7}, {8, 8}};
    CHECK(rec_stacks_intern(s, 2, longer, 7, &is_new) == 103);
    CHECK(rec_stacks_base(s, 103, &shared) == 102 && shared == 6);
    zs_frame other[3] = {{1, 1}, {2, 2}, {9, 9}};
    CHECK(rec_stacks_intern(s, 1, other, 3, &is_new) == 104);
    CHECK(rec_stacks_base(s, 104, &shared) == 0 && shared == 2);
    rec_stacks_forget_pid(s, 2); /* pid 1's stacks keep their prefixes */
    zs_frame again[7] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {7, 7}, {9, 9}};
    CHECK(rec_stacks_intern(s, 1, again, 7, &is_new) == 105);
    CHECK(rec_stacks_base(s, 105, &shared) == 101 && shared == 6);
    CHECK(rec_stacks_intern(s, 2, again, 7, &is_new) == 106);
    CHECK(rec_stacks_base(s, 106, &shared) == -1); /* pid 2's were forgotten */
    rec_stacks_free(s);
}

int main(void)
{
    test_hashes();
    test_empty_table();
    test_table(fnv, 10000);
    test_table(constant, 300);
    test_hex();
    test_addrset();
    test_stacks();
    test_stack_bases();
    CHECK_MAIN_END;
}
