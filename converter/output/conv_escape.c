/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_escape.h"

#include <stdint.h>

int conv_utf8_len(const char *s)
{
    const uint8_t *b = (const uint8_t *)s;
    if (b[0] < 0x80)
        return 1;
    int n;
    uint32_t cp;
    if (b[0] >= 0xc2 && b[0] <= 0xdf) {
        n = 2;
        cp = b[0] & 0x1f;
    } else if (b[0] >= 0xe0 && b[0] <= 0xef) {
        n = 3;
        cp = b[0] & 0x0f;
    } else if (b[0] >= 0xf0 && b[0] <= 0xf4) {
        n = 4;
        cp = b[0] & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((b[i] & 0xc0) != 0x80) /* a NUL ends the loop here too */
            return 0;
        cp = cp << 6 | (b[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
        return 0;
    return n;
}

size_t conv_text_chars(const char *s)
{
    size_t n = 0;
    while (*s) {
        int len = conv_utf8_len(s);
        s += len ? len : 1;
        n++;
    }
    return n;
}

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

void conv_put_xml(FILE *out, const char *s, size_t max_chars)
{
    for (size_t n = 0; *s && n < max_chars; n++) {
        uint8_t c = (uint8_t)*s;
        int len = conv_utf8_len(s);
        if (!len) {
            fputs(REPLACEMENT, out);
            s++;
            continue;
        }
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\x%02x", c);
            else
                fwrite(s, 1, (size_t)len, out);
        }
        s += len;
    }
}

void conv_put_json(FILE *out, const char *s)
{
    fputc('"', out);
    conv_put_json_chars(out, s);
    fputc('"', out);
}

void conv_put_json_chars(FILE *out, const char *s)
{
    while (*s) {
        uint8_t c = (uint8_t)*s;
        int len = conv_utf8_len(s);
        if (!len) {
            fputs("\\ufffd", out);
            s++;
            continue;
        }
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fwrite(s, 1, (size_t)len, out);
        s += len;
    }
}
