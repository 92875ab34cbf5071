/* SPDX-License-Identifier: BSD-3-Clause */
#include "read/conv_when.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    conv_when_metric metric;
} metrics[] = {
    {"pps", CONV_WHEN_PPS}, {"drops", CONV_WHEN_DROPS}, {"lag", CONV_WHEN_LAG}, {"queue", CONV_WHEN_QUEUE},
};

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* A number and its unit for metric m into *v; the rest after it. */
static const char *parse_value(const char *s, conv_when_metric m, double *v)
{
    char *end;
    *v = strtod(s, &end);
    if (end == s)
        return NULL;
    s = end;
    if (m == CONV_WHEN_LAG) {
        if (!strncmp(s, "ms", 2)) {
            *v /= 1e3;
            s += 2;
        } else if (*s == 's') {
            s++;
        }
    } else if (m == CONV_WHEN_QUEUE) {
        const char *units = "KMG";
        const char *u = *s ? strchr(units, toupper((unsigned char)*s)) : NULL;
        if (u) {
            for (const char *k = units; k <= u; k++)
                *v *= 1024;
            s++;
        }
    }
    return isalnum((unsigned char)*s) ? NULL : s;
}

int conv_when_parse(const char *opt, const char *text, conv_when *w, zs_error *err)
{
    memset(w, 0, sizeof *w);
    snprintf(w->text, sizeof w->text, "%s", text);
    const char *s = skip_space(text);
    for (;;) {
        if (w->n == CONV_WHEN_MAX)
            return zs_fail(err, ZS_E_USAGE, "%s '%s': at most %d conditions", opt, text, CONV_WHEN_MAX);
        size_t k, len = 0;
        for (k = 0; k < sizeof metrics / sizeof metrics[0]; k++) {
            len = strlen(metrics[k].name);
            if (!strncmp(s, metrics[k].name, len) && !isalnum((unsigned char)s[len]))
                break;
        }
        if (k == sizeof metrics / sizeof metrics[0])
            return zs_fail(err, ZS_E_USAGE, "%s '%s': at offset %d: expected pps, drops, lag or queue",
                           opt, text, (int)(s - text));
        s = skip_space(s + len);
        conv_when_op op;
        if (s[0] == '>' && s[1] == '=')
            op = CONV_WHEN_GE, s += 2;
        else if (s[0] == '<' && s[1] == '=')
            op = CONV_WHEN_LE, s += 2;
        else if (s[0] == '>')
            op = CONV_WHEN_GT, s++;
        else if (s[0] == '<')
            op = CONV_WHEN_LT, s++;
        else
            return zs_fail(err, ZS_E_USAGE, "%s '%s': at offset %d: expected >, >=, < or <=", opt, text,
                           (int)(s - text));
        double v;
        const char *at = skip_space(s);
        if (!(s = parse_value(at, metrics[k].metric, &v)))
            return zs_fail(err, ZS_E_USAGE, "%s '%s': at offset %d: expected a number%s", opt, text,
                           (int)(at - text),
                           metrics[k].metric == CONV_WHEN_LAG     ? " (s or ms)"
                           : metrics[k].metric == CONV_WHEN_QUEUE ? " (K, M or G)"
                                                                  : "");
        w->cond[w->n].metric = metrics[k].metric;
        w->cond[w->n].op = op;
        w->cond[w->n].value = v;
        w->n++;
        s = skip_space(s);
        if (!*s)
            return 0;
        if (strncmp(s, "and", 3) || isalnum((unsigned char)s[3]))
            return zs_fail(err, ZS_E_USAGE, "%s '%s': at offset %d: expected 'and' or the end", opt, text,
                           (int)(s - text));
        s = skip_space(s + 3);
    }
}

int conv_when_keeps(const conv_when *w, const conv_load_second *s)
{
    for (size_t i = 0; i < w->n; i++) {
        double x;
        switch (w->cond[i].metric) {
        case CONV_WHEN_PPS:
        case CONV_WHEN_DROPS:
            if (!s->has_rates)
                return 0;
            x = w->cond[i].metric == CONV_WHEN_PPS ? s->pps : s->drops_per_s;
            break;
        case CONV_WHEN_LAG:
            if (!s->has_lag)
                return 0;
            x = s->lag_s;
            break;
        default:
            if (!s->has_queue)
                return 0;
            x = s->queue_bytes;
            break;
        }
        double v = w->cond[i].value;
        int ok = w->cond[i].op == CONV_WHEN_GT   ? x > v
                 : w->cond[i].op == CONV_WHEN_GE ? x >= v
                 : w->cond[i].op == CONV_WHEN_LT ? x < v
                                                 : x <= v;
        if (!ok)
            return 0;
    }
    return 1;
}
