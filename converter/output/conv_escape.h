/* SPDX-License-Identifier: BSD-3-Clause */
/* Escaping for the text formats (SVG, speedscope JSON). Function names and
 * file paths come from recordings, that is from the memory of a process on
 * another host: any byte may be in them. Each escaper turns any string
 * into a valid piece of its format: control bytes are shown as \xNN text
 * (XML 1.0 cannot carry them at all) or \u00NN (JSON), and bytes that are
 * not UTF-8 become U+FFFD, since both formats are UTF-8 documents. */
#ifndef CONV_ESCAPE_H
#define CONV_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the valid UTF-8 sequence at s, or 0 when the bytes there
 * are not one (overlong forms, surrogates and U+FFFE/U+FFFF included:
 * XML forbids the last two). s is NUL-terminated. */
int conv_utf8_len(const char *s);

/* Characters (code points, an invalid byte counting as one) in s. */
size_t conv_text_chars(const char *s);

/* Writes s as XML character data or attribute value (& < > " ' escaped),
 * at most max_chars characters of it (SIZE_MAX: all). */
void conv_put_xml(FILE *out, const char *s, size_t max_chars);

/* Writes s as a JSON string, quotes included. */
void conv_put_json(FILE *out, const char *s);
/* The same without the quotes: a piece of a longer string. */
void conv_put_json_chars(FILE *out, const char *s);

#endif
