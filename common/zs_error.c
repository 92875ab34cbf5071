/* SPDX-License-Identifier: BSD-3-Clause */
#include "zs_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const messages[ZS_E__COUNT] = {
    [ZS_OK] = "no error",
    [ZS_E_USAGE] = "bad usage",
    [ZS_E_IO] = "input/output error",
    [ZS_E_NOMEM] = "out of memory",
    [ZS_E_NOT_RECORDING] = "not a zeek-spy recording",
    [ZS_E_FORMAT_VERSION] = "unsupported recording format version",
    [ZS_E_CORRUPT] = "corrupt recording",
    [ZS_E_TRUNCATED] = "truncated recording",
    [ZS_E_NO_PROCESS] = "no such process",
    [ZS_E_PERMISSION] = "permission denied",
    [ZS_E_NOT_ZEEK] = "not a zeek process",
    [ZS_E_UNSUPPORTED] = "unsupported zeek version",
    [ZS_E_LAYOUT] = "bad layout",
    [ZS_E_TARGET] = "target process error",
    [ZS_E_CACHE] = "cache error",
    [ZS_E_OUTPUT] = "cannot write output",
    [ZS_E_EXE_REFUSED] = "executable refused",
    [ZS_E_NO_BPF] = "BPF sampling unavailable",
    [ZS_E_STARTING] = "process still starting",
};

int zs_fail(zs_error *err, zs_code code, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->detail, sizeof err->detail, fmt, ap);
    va_end(ap);
    return -1;
}

const char *zs_code_message(zs_code code)
{
    if (code < 0 || code >= ZS_E__COUNT || !messages[code])
        return "unknown error";
    return messages[code];
}

void zs_error_print(const char *prog, const zs_error *err)
{
    /* Details can quote bytes from a hostile file: keep the terminal safe
     * and the message on one line. */
    char detail[sizeof err->detail];
    size_t i = 0;
    for (; err->detail[i] && i + 1 < sizeof detail; i++) {
        unsigned char c = (unsigned char)err->detail[i];
        detail[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    detail[i] = '\0';
    fprintf(stderr, "%s: error: %s: %s\n", prog, zs_code_message(err->code), detail);
}

int zs_exit_status(const zs_error *err)
{
    return err->code == ZS_E_USAGE ? 2 : 1;
}

char *zs_vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    char *text = len < 0 ? NULL : malloc((size_t)len + 1);
    if (text)
        vsnprintf(text, (size_t)len + 1, fmt, again);
    va_end(again);
    return text;
}

void zs_note(const zs_notes *n, zs_note_kind kind, const char *fmt, ...)
{
    if (!n || !n->note)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = zs_vformat(fmt, ap);
    va_end(ap);
    if (!text)
        return;
    n->note(n->ctx, kind, text);
    free(text);
}
