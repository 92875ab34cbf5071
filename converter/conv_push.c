#include "conv_push.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

/* One attempt. The HTTP status, or -1 when no answer came (err says). */
static int attempt(const conv_push_target *t, const char *head, const char *pre, const char *post,
                   const conv_push_request *r, int timeout_s, zs_error *err)
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
    if (write_all(fd, head, strlen(head)) || write_all(fd, pre, strlen(pre)) ||
        write_all(fd, r->body, r->len) || write_all(fd, post, strlen(post))) {
        zs_fail(err, ZS_E_IO, "%s:%s: sending: %s", t->host, t->port,
                errno == EAGAIN ? "timed out" : strerror(errno));
    } else {
        while ((got = recv(fd, reply, sizeof reply - 1, 0)) < 0 && errno == EINTR)
            ;
        if (got <= 0) {
            zs_fail(err, ZS_E_IO, "%s:%s: no answer%s", t->host, t->port,
                    got < 0 && errno == EAGAIN ? " (timed out)" : "");
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

int conv_push_send(const conv_push_target *t, const conv_push_request *r, int tries,
                   int timeout_s, zs_error *err)
{
    char name[2048];
    if (!encode(r->name, name, sizeof name))
        return zs_fail(err, ZS_E_USAGE, "--push: the application name and labels are too long");
    static const char pre_fmt[] =
        "--%s\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pb.gz\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n";
    char pre[256], post[64], head[4096];
    snprintf(pre, sizeof pre, pre_fmt, BOUNDARY);
    snprintf(post, sizeof post, "\r\n--%s--\r\n", BOUNDARY);
    size_t length = strlen(pre) + r->len + strlen(post);
    int n = snprintf(head, sizeof head,
                     "POST %s/ingest?name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%g "
                     "HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: zeek-spy-convert\r\n"
                     "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     t->path, name, (long long)r->from, (long long)r->until, r->sample_rate, t->host,
                     t->port, BOUNDARY, length);
    if (n < 0 || (size_t)n >= sizeof head)
        return zs_fail(err, ZS_E_USAGE, "--push: the request line is too long");
    for (int i = 0; i < tries; i++) {
        if (i) {
            struct timespec wait = {1 << (i - 1 < 5 ? i - 1 : 5), 0};
            nanosleep(&wait, NULL);
        }
        int status = attempt(t, head, pre, post, r, timeout_s, err);
        if (status / 100 == 2)
            return 0;
        if (status >= 400 && status < 500)
            return -1; /* refused: the same request would be again */
    }
    return -1;
}
