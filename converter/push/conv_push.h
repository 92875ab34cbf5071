/* SPDX-License-Identifier: BSD-3-Clause */
/* --push URL: a recording's profile sent to a continuous-profiling back end
 * over plain HTTP/1.1, as its documented API takes it:
 *  - Grafana Pyroscope: POST URL/ingest?name=APP{labels}&from=&until=
 *    &format=pprof&sampleRate=, the gzipped pprof in a multipart/form-data
 *    field "profile" (as Pyroscope's own clients send it);
 *  - Parca: POST URL/profiles/writeraw, the JSON form of
 *    ProfileStoreService.WriteRaw: one series, its labels (__name__ first),
 *    one sample whose rawProfile is the pprof, base64.
 * Refused requests (4xx) fail at once; a back end that is down, slow or
 * failing (5xx) is tried again with backoff. */
#ifndef CONV_PUSH_H
#define CONV_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "zs_error.h"

typedef enum conv_push_api { CONV_PUSH_PYROSCOPE, CONV_PUSH_PARCA } conv_push_api;

typedef struct conv_push_label {
    const char *name, *value;
} conv_push_label;

typedef struct conv_push_target {
    conv_push_api api;
    char host[256];
    char port[8];
    char path[1024]; /* the URL's path, without a trailing '/' */
} conv_push_target;

/* Parses "http://HOST[:PORT][/PATH]". ZS_E_USAGE naming the URL when it is
 * not one (https is not spoken: put a TLS-terminating relay in front). */
int conv_push_parse_url(const char *url, conv_push_target *t, zs_error *err);

typedef struct conv_push_request {
    const char *app;        /* the application: Pyroscope's name, Parca's __name__ */
    const conv_push_label *labels; /* empty values are left out */
    size_t nlabels;
    int64_t from, until;    /* unix seconds */
    double sample_rate;     /* Hz */
    const void *body;       /* gzipped pprof */
    size_t len;
} conv_push_request;

/* Sends r; up to tries attempts, waiting 1, 2, 4 ... s between them,
 * timeout_s each. 0 when the back end answered 2xx; else -1 with err
 * saying why (the last answer or failure). */
int conv_push_send(const conv_push_target *t, const conv_push_request *r, int tries,
                   int timeout_s, zs_error *err);

/* FILE.pushed, the marker of a recording the back end accepted (a
 * recording marked so is not sent again): its path into marker; 1 when it
 * exists. */
int conv_push_marked(const char *path, char *marker, size_t size);

#endif
