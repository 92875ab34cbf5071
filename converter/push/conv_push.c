/* SPDX-License-Identifier: BSD-3-Clause */
#include "push/conv_push.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char BOUNDARY[] = "zeek-spy-7d3f0c2b9a41";

int conv_push_parse_url(const char *url, conv_push_target *t, zs_error *err)
{
    memset(t, 0, sizeof *t);
    if (!strncmp(url, "https://", 8))
        return zs_fail(err, ZS_E_USAGE, "--push %s: https is not spoken; push to a local relay "
                       "that adds TLS (e.g. Grafana Alloy's pyroscope.receive_http)", url);
    if (strncmp(url, "http://", 7))
        return zs_fail(err, ZS_E_USAGE, "--push %s: not an http:// URL", url);
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hl);
    size_t name_len = colon ? (size_t)(colon - h) : hl;
    if (name_len == 0 || name_len >= sizeof t->host)
        return zs_fail(err, ZS_E_USAGE, "--push %s: no host", url);
    memcpy(t->host, h, name_len);
    if (colon) {
        size_t pl = hl - name_len - 1;
        if (pl == 0 || pl >= sizeof t->port || strspn(colon + 1, "0123456789") < pl)
            return zs_fail(err, ZS_E_USAGE, "--push %s: bad port", url);
        memcpy(t->port, colon + 1, pl);
    } else {
        strcpy(t->port, "80");
    }
    const char *path = slash ? slash : "";
    size_t len = strlen(path);
    while (len && path[len - 1] == '/')
        len--;
    if (len >= sizeof t->path)
        return zs_fail(err, ZS_E_USAGE, "--push %s: path too long", url);
    memcpy(t->path, path, len);
    return 0;
}

/* Percent-encodes s (query-string value) into out; NULL when it does not fit. */
static char *encode(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("-._~", c);
        if (n + 4 > cap)
            return NULL;
        n += (size_t)(plain ? snprintf(out + n, cap - n, "%c", c) : snprintf(out + n, cap - n, "%%%02X", c));
    }
    out[n] = 0;
    return out;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* What a request sends after its head: a few pieces, in order. */
typedef struct piece {
    const void *data;
    size_t len;
} piece;

/* One attempt. The HTTP status, or -1 when no answer came (err says). */
static int attempt(const conv_push_target *t, const char *head, const piece *body, size_t npieces,
                   int timeout_s, zs_error *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(t->host, t->port, &hints, &ai);
    if (rc)
        return zs_fail(err, ZS_E_IO, "%s:%s: %s", t->host, t->port, gai_strerror(rc));
    int fd = -1, status = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = {timeout_s, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* connect too, on Linux */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            zs_fail(err, ZS_E_IO, "%s:%s: connect: %s", t->host, t->port,
                    errno == EINPROGRESS ? "timed out" : strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return -1;
    char reply[512];
    ssize_t got = 0;
    int sent = write_all(fd, head, strlen(head)) == 0;
    for (size_t i = 0; sent && i < npieces; i++)
        sent = write_all(fd, body[i].data, body[i].len) == 0;
    if (!sent) {
        zs_fail(err, ZS_E_IO, "%s:%s: sending: %s", t->host, t->port,
                errno == EAGAIN ? "timed out" : strerror(errno));
    } else {
        /* The answer's start (status, headers, the body's first bytes):
         * read until the back end closes (Connection: close) or it fills. */
        ssize_t k = 0;
        while ((size_t)got < sizeof reply - 1 &&
               ((k = recv(fd, reply + got, sizeof reply - 1 - (size_t)got, 0)) > 0 ||
                (k < 0 && errno == EINTR)))
            got += k > 0 ? k : 0;
        if (got <= 0) {
            zs_fail(err, ZS_E_IO, "%s:%s: no answer%s", t->host, t->port,
                    k < 0 && errno == EAGAIN ? " (timed out)" : "");
        } else {
            reply[got] = 0;
            if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1) {
                status = -1;
                zs_fail(err, ZS_E_IO, "%s:%s: not an HTTP answer", t->host, t->port);
            } else if (status / 100 != 2) {
                char *eol = strpbrk(reply, "\r\n");
                if (eol)
                    *eol = 0;
                const char *body = strstr(eol ? eol + 1 : reply, "\r\n\r\n");
                zs_fail(err, ZS_E_IO, "%s:%s answered %s%s%.200s", t->host, t->port, reply,
                        body && body[4] ? ": " : "", body ? body + 4 : "");
            }
        }
    }
    close(fd);
    return status;
}

/* Pyroscope's name: APP{label=value,...}, the characters of its syntax in
 * values replaced. NULL on no memory. */
static char *pyroscope_name(const conv_push_request *r)
{
    char *name = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&name, &len);
    if (!f)
        return NULL;
    fprintf(f, "%s{", r->app);
    int first = 1;
    for (size_t i = 0; i < r->nlabels; i++) {
        const char *v = r->labels[i].value;
        if (!v || !*v)
            continue;
        fprintf(f, "%s%s=", first ? "" : ",", r->labels[i].name);
        first = 0;
        for (; *v; v++)
            fputc(strchr("{},=\"\\", *v) || (unsigned char)*v < 0x20 ? '_' : *v, f);
    }
    fputc('}', f);
    if (fclose(f) != 0) {
        free(name);
        return NULL;
    }
    return name;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Parca's WriteRaw request as JSON, the profile in base64. NULL on no
 * memory. */
static char *parca_body(const conv_push_request *r, size_t *len)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    if (!f)
        return NULL;
    fputs("{\"series\":[{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":", f);
    json_string(f, r->app);
    fputc('}', f);
    for (size_t i = 0; i < r->nlabels; i++) {
        if (!r->labels[i].value || !*r->labels[i].value)
            continue;
        fputs(",{\"name\":", f);
        json_string(f, r->labels[i].name);
        fputs(",\"value\":", f);
        json_string(f, r->labels[i].value);
        fputc('}', f);
    }
    fputs("]},\"samples\":[{\"rawProfile\":\"", f);
    const unsigned char *p = r->body;
    for (size_t i = 0; i < r->len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < r->len ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < r->len ? p[i + 2] : 0);
        fputc(b64[v >> 18 & 63], f);
        fputc(b64[v >> 12 & 63], f);
        fputc(i + 1 < r->len ? b64[v >> 6 & 63] : '=', f);
        fputc(i + 2 < r->len ? b64[v & 63] : '=', f);
    }
    fputs("\"}]}]}", f);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

int conv_push_send(const conv_push_target *t, const conv_push_request *r, int tries,
                   int timeout_s, zs_error *err)
{
    char head[4096], pre[256], post[64];
    piece body[3];
    size_t npieces, length = 0;
    char *text = NULL; /* the name, or Parca's whole body */
    int n;
    if (t->api == CONV_PUSH_PARCA) {
        size_t len;
        if (!(text = parca_body(r, &len)))
            return zs_fail(err, ZS_E_NOMEM, "--push: the request");
        body[0] = (piece){text, len};
        npieces = 1;
        n = snprintf(head, sizeof head,
                     "POST %s/profiles/writeraw HTTP/1.1\r\nHost: %s:%s\r\n"
                     "User-Agent: zeek-spy-convert\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     t->path, t->host, t->port, len);
    } else {
        char name[2048];
        if (!(text = pyroscope_name(r)))
            return zs_fail(err, ZS_E_NOMEM, "--push: the request");
        if (!encode(text, name, sizeof name)) {
            free(text);
            return zs_fail(err, ZS_E_USAGE, "--push: the application name and labels are too long");
        }
        snprintf(pre, sizeof pre,
                 "--%s\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pb.gz\"\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n", BOUNDARY);
        snprintf(post, sizeof post, "\r\n--%s--\r\n", BOUNDARY);
        body[0] = (piece){pre, strlen(pre)};
        body[1] = (piece){r->body, r->len};
        body[2] = (piece){post, strlen(post)};
        npieces = 3;
        for (size_t i = 0; i < npieces; i++)
            length += body[i].len;
        n = snprintf(head, sizeof head,
                     "POST %s/ingest?name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%g "
                     "HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: zeek-spy-convert\r\n"
                     "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     t->path, name, (long long)r->from, (long long)r->until, r->sample_rate, t->host,
                     t->port, BOUNDARY, length);
    }
    int rc = -1;
    if (n < 0 || (size_t)n >= sizeof head) {
        zs_fail(err, ZS_E_USAGE, "--push: the request line is too long");
        tries = 0;
    }
    for (int i = 0; i < tries; i++) {
        if (i) {
            struct timespec wait = {1 << (i - 1 < 5 ? i - 1 : 5), 0};
            nanosleep(&wait, NULL);
        }
        int status = attempt(t, head, body, npieces, timeout_s, err);
        if (status / 100 == 2) {
            rc = 0;
            break;
        }
        if (status >= 400 && status < 500)
            break; /* refused: the same request would be again */
    }
    free(text);
    return rc;
}

int conv_push_marked(const char *path, char *marker, size_t size)
{
    struct stat st;
    snprintf(marker, size, "%s.pushed", path);
    return stat(marker, &st) == 0;
}
