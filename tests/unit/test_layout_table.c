/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in layout table: every supported Zeek series resolves, each
 * layout is consistent and survives the text format, the verified entries
 * keep their numbers, the model switches at 8.1, unknown versions fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "zs_layout.h"

typedef struct series {
    const char *version; /* a release of the series */
    zs_model model;
    int namespaced_call_stack;  /* zeek::detail::call_stack (3.2 on) */
    int namespaced_network_time; /* zeek::run_state::network_time (4.0 on) */
    int location_vtable;        /* 3.0 only */
    int32_t frame_next_stmt;
    int32_t func_kind_size;
    int32_t body_size;
} series;

static const series all[] = {
    {"3.0.1", ZS_MODEL_FRAME_STACK, 0, 0, 1, 144, 4, 16},
    {"3.0.13", ZS_MODEL_FRAME_STACK, 0, 0, 1, 160, 4, 16},
    {"3.1.5", ZS_MODEL_FRAME_STACK, 0, 0, 0, 160, 4, 16},
    {"3.2.4", ZS_MODEL_FRAME_STACK, 1, 0, 0, 88, 4, 16},
    {"4.0.9", ZS_MODEL_FRAME_STACK, 1, 1, 0, 88, 4, 16},
    {"4.1.1", ZS_MODEL_FRAME_STACK, 1, 1, 0, 112, 4, 16},
    {"4.2.2", ZS_MODEL_FRAME_STACK, 1, 1, 0, 112, 4, 16},
    {"5.0.10", ZS_MODEL_FRAME_STACK, 1, 1, 0, 112, 4, 16},
    {"5.1.3", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 16},
    {"5.2.2", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"6.0.3", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"6.1.1", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"6.2.1", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"7.0.5", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"7.1.1", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"7.2.2", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 4, 72},
    {"8.0.10", ZS_MODEL_FRAME_STACK, 1, 1, 0, 80, 1, 24},
    {"8.1.2", ZS_MODEL_CALLINFO_FRAME, 1, 1, 0, 80, 1, 24},
    {"8.2.2", ZS_MODEL_CALLINFO_FRAME, 1, 1, 0, 80, 1, 24},
    {"9.0.0", ZS_MODEL_CALLINFO_FRAME, 1, 1, 0, 80, 1, 24},
};
enum { N_SERIES = sizeof all / sizeof all[0] };

static void check_roundtrip(const char *version, const zs_layout *l)
{
    zs_error err = {0};
    CHECK(zs_layout_check(l, version, &err) == 0);
    if (err.code)
        fprintf(stderr, "%s: %s\n", version, err.detail);

    char *text = zs_layout_format(l);
    CHECK(text != NULL);
    if (!text)
        return;
    zs_layout back;
    zs_error perr = {0};
    int rc = zs_layout_parse(text, strlen(text), version, &back, &perr);
    CHECK(rc == 0);
    if (rc)
        fprintf(stderr, "%s: %s\n", version, perr.detail);
    else
        CHECK(zs_layout_equal(&back, l));
    free(text);
}

static void check_series(const series *s)
{
    const zs_layout *l = zs_layout_builtin(s->version);
    CHECK(l != NULL);
    if (!l) {
        fprintf(stderr, "no built-in layout for %s\n", s->version);
        return;
    }
    check_roundtrip(s->version, l);

    /* The same layout for the debug build, a release candidate and the
     * bare series. */
    char v[64];
    snprintf(v, sizeof v, "%s-debug", s->version);
    CHECK(zs_layout_builtin(v) == l);
    snprintf(v, sizeof v, "%s-rc1", s->version);
    CHECK(zs_layout_builtin(v) == l);

    CHECK(l->model == s->model);
    CHECK(!strcmp(l->sym_call_stack,
                  s->namespaced_call_stack ? "_ZN4zeek6detail10call_stackE" : "call_stack"));
    CHECK(!strcmp(l->sym_network_time, s->namespaced_network_time
                                           ? "_ZN4zeek9run_state12network_timeE"
                                           : "network_time"));
    CHECK(!strcmp(l->sym_version, "version"));
    if (s->model == ZS_MODEL_FRAME_STACK) {
        CHECK(!strcmp(l->sym_frame_stack, "g_frame_stack"));
        CHECK(l->callinfo_size == 24 && l->callinfo_call == 0 && l->callinfo_func == 8);
    } else {
        CHECK(l->sym_frame_stack[0] == '\0');
        CHECK(l->callinfo_size == 16 && l->callinfo_call == 0 && l->callinfo_frame == 8);
        CHECK(l->frame_function == 64);
    }
    CHECK(l->frame_next_stmt == s->frame_next_stmt);
    CHECK(l->obj_location == 8);
    if (s->location_vtable)
        CHECK(l->location_filename == 8 && l->location_first_line == 16 &&
              l->location_last_line == 20);
    else
        CHECK(l->location_filename == 0 && l->location_first_line == 8 &&
              l->location_last_line == 12);
    /* Func: bodies, kind and name never moved. */
    CHECK(l->func_bodies == 24 && l->func_kind == 56 && l->func_name == 72);
    CHECK(l->func_kind_size == s->func_kind_size);
    CHECK(l->func_kind_builtin == 1);
    CHECK(l->body_size == s->body_size && l->body_stmts == 0);
}

/* The entries verified against real DWARF keep exactly their numbers. */
static void check_verified(void)
{
    const zs_layout *l = zs_layout_builtin("3.0.1");
    CHECK(l && l->model == ZS_MODEL_FRAME_STACK);
    if (l) {
        CHECK(!strcmp(l->sym_call_stack, "call_stack"));
        CHECK(!strcmp(l->sym_frame_stack, "g_frame_stack"));
        CHECK(!strcmp(l->sym_network_time, "network_time"));
        CHECK(l->obj_location == 8);
        CHECK(l->location_filename == 8 && l->location_first_line == 16 &&
              l->location_last_line == 20);
        CHECK(l->callinfo_size == 24 && l->callinfo_call == 0 && l->callinfo_func == 8);
        CHECK(l->func_bodies == 24 && l->body_size == 16 && l->body_stmts == 0);
        CHECK(l->func_kind == 56 && l->func_kind_size == 4 && l->func_kind_builtin == 1);
        CHECK(l->func_name == 72);
        CHECK(l->frame_next_stmt == 144);
    }
    CHECK(zs_layout_builtin("3.0.0") == l);
    CHECK(zs_layout_builtin("3.0.1-debug") == l);
    /* 3.0.2 moved Frame::next_stmt; 3.0.10 must not match the 3.0.1 key. */
    CHECK(zs_layout_builtin("3.0.2") != l);
    CHECK(zs_layout_builtin("3.0.10") != l);
    CHECK(zs_layout_builtin("3.0.14")->frame_next_stmt == 160);

    l = zs_layout_builtin("8.0.10");
    CHECK(l && l->model == ZS_MODEL_FRAME_STACK);
    if (l) {
        CHECK(!strcmp(l->sym_call_stack, "_ZN4zeek6detail10call_stackE"));
        CHECK(!strcmp(l->sym_frame_stack, "g_frame_stack"));
        CHECK(!strcmp(l->sym_network_time, "_ZN4zeek9run_state12network_timeE"));
        CHECK(l->obj_location == 8);
        CHECK(l->location_filename == 0 && l->location_first_line == 8 &&
              l->location_last_line == 12);
        CHECK(l->callinfo_size == 24 && l->callinfo_call == 0 && l->callinfo_func == 8);
        CHECK(l->func_bodies == 24 && l->body_size == 24 && l->body_stmts == 0);
        CHECK(l->func_kind == 56 && l->func_kind_size == 1 && l->func_name == 72);
        CHECK(l->frame_next_stmt == 80);
    }

    l = zs_layout_builtin("8.2.2");
    CHECK(l && l->model == ZS_MODEL_CALLINFO_FRAME);
    if (l) {
        CHECK(!strcmp(l->sym_call_stack, "_ZN4zeek6detail10call_stackE"));
        CHECK(l->sym_frame_stack[0] == '\0');
        CHECK(l->callinfo_size == 16 && l->callinfo_call == 0 && l->callinfo_frame == 8);
        CHECK(l->frame_function == 64 && l->frame_next_stmt == 80);
        CHECK(l->obj_location == 8);
        CHECK(l->location_filename == 0 && l->location_first_line == 8 &&
              l->location_last_line == 12);
        CHECK(l->func_bodies == 24 && l->body_size == 24 && l->body_stmts == 0);
        CHECK(l->func_kind == 56 && l->func_kind_size == 1 && l->func_name == 72);
    }
}

static void check_model_switch(void)
{
    const zs_layout *a = zs_layout_builtin("8.0.0"), *b = zs_layout_builtin("8.1.0");
    CHECK(a && a->model == ZS_MODEL_FRAME_STACK);
    CHECK(b && b->model == ZS_MODEL_CALLINFO_FRAME);
    CHECK(zs_layout_builtin("7.2.2")->model == ZS_MODEL_FRAME_STACK);
    CHECK(zs_layout_builtin("9.0.0-rc1")->model == ZS_MODEL_CALLINFO_FRAME);
    for (size_t i = 0; i < N_SERIES; i++) {
        const zs_layout *l = zs_layout_builtin(all[i].version);
        int newer = strncmp(all[i].version, "8.1", 3) >= 0 && all[i].version[1] == '.';
        if (l)
            CHECK(l->model == (newer ? ZS_MODEL_CALLINFO_FRAME : ZS_MODEL_FRAME_STACK));
    }
}

static void check_unknown(void)
{
    static const char *const unknown[] = {"2.6.4", "9.9.0", "10.0.0", "abc", "",
                                          "3", "3.", "3.3.0", "8.3.0", "9.1.0-dev",
                                          "30.0.1", "3.00.1", "80.0.10"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK(zs_layout_builtin(unknown[i]) == NULL);
        if (zs_layout_builtin(unknown[i]))
            fprintf(stderr, "'%s' should have no built-in layout\n", unknown[i]);
    }
}

static void check_versions_text(void)
{
    char buf[512];
    zs_layout_builtin_versions(buf, sizeof buf);
    CHECK(strstr(buf, "3.0.x") == buf);
    CHECK(strstr(buf, "3.0.0") == NULL);
    CHECK(strstr(buf, "5.2.x") != NULL);
    CHECK(strstr(buf, "8.1.x") != NULL);
    size_t len = strlen(buf);
    CHECK(len >= 5 && !strcmp(buf + len - 5, "9.0.x"));
    /* Truncation stays a NUL-terminated string. */
    char small[8];
    zs_layout_builtin_versions(small, sizeof small);
    CHECK(strlen(small) < sizeof small);
}

/* Removes the line of key from a layout text (in place). */
static void drop_key(char *text, const char *key)
{
    char *at = strstr(text, key);
    if (!at)
        return;
    char *end = strchr(at, '\n');
    const char *rest = end ? end + 1 : at + strlen(at);
    memmove(at, rest, strlen(rest) + 1);
}

static int parses(const char *text)
{
    zs_layout back;
    zs_error err = {0};
    return zs_layout_parse(text, strlen(text), "test", &back, &err) == 0;
}

/* The ZAM members: 8.x has them, with CoalescedScriptFunc's orig_func at
 * 184 (8.0) and 192 (8.1+); the zam_ keys go all together but the two
 * coalesced ones and the scope ones, each a group of its own, which a
 * layout of an earlier recorder lacks. */
static void check_zam(void)
{
    const zs_layout *a = zs_layout_builtin("8.0.10"), *b = zs_layout_builtin("8.2.2");
    CHECK(a && b && zs_layout_has_zam(a) && zs_layout_has_zam(b));
    if (!a || !b)
        return;
    CHECK(a->zam.coalesced_orig_func == 184 && b->zam.coalesced_orig_func == 192);
    CHECK(!strcmp(b->zam.sym_coalesced_vtable, "_ZTVN4zeek6detail19CoalescedScriptFuncE"));
    CHECK(b->zam.inst_size == 88 && b->zam.inst_loc == 64 && b->zam.locinfo_loc == 80);
    CHECK(b->zam.scope_ordered_vars == 120 && b->zam.id_name == 32 && b->zam.id_val == 64 &&
          b->zam.funcval_func == 32 && a->zam.scope_ordered_vars == 120);
    CHECK(!zs_layout_has_zam(zs_layout_builtin("7.2.2")));

    char *text = zs_layout_format(b);
    CHECK(text && parses(text));
    if (!text)
        return;
    drop_key(text, "zam_coalesced_orig_func");
    CHECK(!parses(text)); /* the vtable without the offset: inconsistent */
    drop_key(text, "sym_zam_coalesced_vtable");
    CHECK(parses(text));  /* neither: a layout from before them */
    drop_key(text, "zam_id_val");
    CHECK(!parses(text)); /* the scope keys go together */
    drop_key(text, "sym_zam_scopes");
    drop_key(text, "sym_zam_global_scope");
    drop_key(text, "sym_zam_funcval_vtable");
    drop_key(text, "zam_scope_ordered_vars");
    drop_key(text, "zam_id_name");
    drop_key(text, "zam_funcval_func");
    CHECK(parses(text));
    drop_key(text, "zam_inst_loc");
    CHECK(!parses(text)); /* the other zam_ keys go together */
    free(text);
}

/* The packet source's members by version: the table's rows, the patch
 * releases that differ from their series, 3.0's list of sources, none
 * before; and the group rules of the text format. */
static void check_pktsrc(void)
{
    static const struct {
        const char *version;
        int32_t pcap_stats;
        const char *af_vtable; /* "" when AF_Packet is not built in */
    } want[] = {
        {"4.0.9", 344, ""},
        {"5.0.3", 368, ""},
        {"5.0.10", 376, ""},
        {"5.1.3", 376, ""},
        {"5.2.0", 376, "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE"},
        {"5.2.2", 384, "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE"},
        {"6.2.1", 392, "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE"},
        {"7.2.2", 376, "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE"},
        {"8.0.10", 376, "_ZTVN4zeek8iosource6pktsrc15AF_PacketSourceE"},
        {"8.1.2", 392, "_ZTVN4zeek8iosource9af_packet15AF_PacketSourceE"},
        {"8.2.2", 384, "_ZTVN4zeek8iosource9af_packet15AF_PacketSourceE"},
        {"9.0.0-rc1", 384, "_ZTVN4zeek8iosource9af_packet15AF_PacketSourceE"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        zs_layout l = {0};
        zs_layout_add_builtin_pktsrc(&l, want[i].version);
        const zs_pktsrc_layout *p = &l.pktsrc;
        int ok = zs_layout_has_pktsrc(&l) && p->mgr_pkt_src == 56 && !p->mgr_list &&
                 p->pcap_stats == want[i].pcap_stats &&
                 p->pcap_is_live == want[i].pcap_stats - 4 && !strcmp(p->sym_af_packet_vtable, want[i].af_vtable) &&
                 (!*want[i].af_vtable || p->af_packet_stats == want[i].pcap_stats);
        if (!ok)
            fprintf(stderr, "pktsrc of %s: stats %d, af '%s'\n", want[i].version, p->pcap_stats,
                    p->sym_af_packet_vtable);
        CHECK(ok);
    }
    zs_layout old = {0};
    zs_layout_add_builtin_pktsrc(&old, "3.0.1");
    CHECK(!strcmp(old.pktsrc.sym_iosource_mgr, "iosource_mgr") && old.pktsrc.mgr_list == 1 &&
          old.pktsrc.mgr_pkt_src == 32 && old.pktsrc.pcap_stats == 336 &&
          !strcmp(old.pktsrc.sym_pcap_vtable, "_ZTVN8iosource4pcap10PcapSourceE") &&
          !old.pktsrc.sym_af_packet_vtable[0]);
    zs_layout none = {0};
    zs_layout_add_builtin_pktsrc(&none, "2.6.4");
    CHECK(!zs_layout_has_pktsrc(&none));

    zs_layout l = *zs_layout_builtin("8.2.2");
    zs_layout_add_builtin_pktsrc(&l, "8.2.2");
    char *text = zs_layout_format(&l);
    CHECK(text && parses(text) && strstr(text, "pktsrc_pcap_stats = 384"));
    if (!text)
        return;
    drop_key(text, "pktsrc_af_packet_stats");
    CHECK(!parses(text)); /* AF_Packet's keys go together */
    drop_key(text, "sym_pktsrc_af_packet_vtable");
    drop_key(text, "pktsrc_af_packet_is_live");
    CHECK(parses(text)); /* libpcap's alone */
    drop_key(text, "sym_pktsrc_iosource_mgr");
    CHECK(!parses(text)); /* a source's keys without the manager's */
    free(text);

    /* 3.0's list survives the text; the others' texts do without the key. */
    zs_layout l3 = *zs_layout_builtin("3.0.1"), back;
    zs_layout_add_builtin_pktsrc(&l3, "3.0.1");
    zs_error err = {0};
    text = zs_layout_format(&l3);
    CHECK(text && strstr(text, "pktsrc_mgr_list = 1") &&
          zs_layout_parse(text, strlen(text), "test", &back, &err) == 0 && zs_layout_equal(&back, &l3));
    free(text);
    text = zs_layout_format(&l);
    CHECK(text && !strstr(text, "pktsrc_mgr_list"));
    free(text);
}

int main(void)
{
    for (size_t i = 0; i < N_SERIES; i++)
        check_series(&all[i]);
    check_verified();
    check_model_switch();
    check_unknown();
    check_versions_text();
    check_zam();
    check_pktsrc();
    CHECK_MAIN_END;
}
