/* SPDX-License-Identifier: BSD-3-Clause */
#include "output/conv_shorten.h"

#include <stdlib.h>
#include <string.h>

#include "output/conv_escape.h"

/* The C++ operators, longest first, so that operator<<= is not read as
 * operator<< followed by a template argument list. */
static const char *const OPERATORS[] = {
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "++",  "--",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "->", "<",  ">",  "+",
    "-",   "*",   "/",   "%",   "^",  "&",  "|",  "~",  "!",  "=",  ",",
};

typedef struct text {
    char *s;
    size_t n;
} text;

static void put(text *t, const char *s, size_t n)
{
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether t ends with the keyword operator (not my_operator). */
static int after_operator(const text *t)
{
    return t->n >= 8 && !strcmp(t->s + t->n - 8, "operator") && (t->n == 8 || !is_ident(t->s[t->n - 9]));
}

/* The index of the bracket closing the one at s[at], nesting counted; the
 * end of s when a cut name never closes it. */
static size_t closing(const char *s, size_t at, char open, char close)
{
    int depth = 0;
    for (size_t i = at; s[i]; i++) {
        if (s[i] == open)
            depth++;
        else if (s[i] == close && --depth == 0)
            return i;
    }
    return strlen(s);
}

/* Copies the operator at s (after the keyword), 0 when there is none: a
 * conversion or operator new follows a space instead. */
static size_t put_operator(text *t, const char *s)
{
    for (size_t i = 0; i < sizeof OPERATORS / sizeof OPERATORS[0]; i++)
        if (starts(s, OPERATORS[i])) {
            put(t, OPERATORS[i], strlen(OPERATORS[i]));
            return strlen(OPERATORS[i]);
        }
    return 0;
}

/* An argument list at s[at] (template or parameters, open..close) as
 * "<...>" / "(...)", or as it is when empty. Returns the index after it. */
static size_t put_elided(text *t, const char *s, size_t at, char open, char close)
{
    size_t end = closing(s, at, open, close);
    char elided[] = {open, '.', '.', '.', close};
    if (end == at + 1)
        put(t, elided, 1), put(t, elided + 4, 1);
    else
        put(t, elided, s[end] ? 5 : 4);
    return s[end] ? end + 1 : end;
}

char *conv_short_name(const char *name)
{
    size_t len = strlen(name);
    text t = {malloc(2 * len + 16), 0};
    if (!t.s)
        return NULL;
    t.s[0] = '\0';
    if (name[0] == '[') { /* a marker or a module: "[unknown]", "[vdso]" */
        put(&t, name, len);
        return t.s;
    }
    int in_operator = 0; /* after the keyword: spaces are the operator's */
    size_t i = 0;
    while (name[i]) {
        char c = name[i];
        if (after_operator(&t) && !in_operator) {
            in_operator = 1;
            size_t n = put_operator(&t, name + i);
            i += n;
            if (n)
                continue;
        }
        if (c == '<') {
            i = put_elided(&t, name, i, '<', '>');
        } else if (c == '(' && starts(name + i, "(anonymous namespace)")) {
            put(&t, name + i, 21);
            i += 21;
        } else if (c == '(') {
            size_t end = closing(name, i, '(', ')');
            if (!name[end] || !starts(name + end + 1, "::"))
                break; /* the function's own parameters: the name ends here */
            i = put_elided(&t, name, i, '(', ')');
        } else if (c == '{' && starts(name + i, "{lambda(")) {
            put(&t, "{lambda", 7);
            i = put_elided(&t, name, i + 7, '(', ')');
        } else if (c == '{') { /* "{unnamed type#1}", "{default arg#1}": one name */
            size_t end = closing(name, i, '{', '}');
            end = name[end] ? end + 1 : end;
            put(&t, name + i, end - i);
            i = end;
        } else if (c == '[' && starts(name + i, "[abi:")) {
            size_t end = closing(name, i, '[', ']'); /* an ABI tag: no reader needs it */
            i = name[end] ? end + 1 : end;
        } else if (c == ' ' && starts(name + i, " [clone ")) {
            break;
        } else if (c == ' ' && !in_operator) {
            t.n = 0; /* what came before was a return type ("void ", "std::pair<...> ") */
            t.s[0] = '\0';
            i++;
        } else {
            put(&t, &c, 1);
            i++;
        }
    }
    return t.s;
}

/* Bytes of the first n characters of s. */
static size_t prefix_bytes(const char *s, size_t n)
{
    size_t at = 0;
    for (; n && s[at]; n--) {
        int k = conv_utf8_len(s + at);
        at += k ? (size_t)k : 1;
    }
    return at;
}

char *conv_fit_name(const char *s, size_t max_chars)
{
    size_t chars = conv_text_chars(s), len = strlen(s);
    if (chars <= max_chars)
        return strdup(s);
    size_t tail_chars = (max_chars - 2) / 2, head_chars = max_chars - 3 - tail_chars;
    size_t head = prefix_bytes(s, head_chars), tail = prefix_bytes(s, chars - tail_chars);
    char *out = malloc(head + 3 + (len - tail) + 1);
    if (!out)
        return NULL;
    memcpy(out, s, head);
    memcpy(out + head, "...", 3);
    memcpy(out + head + 3, s + tail, len - tail + 1);
    return out;
}
