/* SPDX-License-Identifier: BSD-3-Clause */
/* conv_escape: any bytes from a recording become valid XML text or a valid
 * JSON string; UTF-8 is checked strictly (overlong forms, surrogates and
 * the XML-forbidden U+FFFE/U+FFFF become U+FFFD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "output/conv_escape.h"
#include "profile/conv_profile.h"

static char *capture(void (*put)(FILE *, const char *, size_t), const char *s, size_t max)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    put(f, s, max);
    fclose(f);
    return buf;
}

static void put_json(FILE *f, const char *s, size_t max) { (void)max; conv_put_json(f, s); }

static void expect(void (*put)(FILE *, const char *, size_t), const char *in, size_t max, const char *want)
{
    char *got = capture(put, in, max);
    if (strcmp(got, want))
        fprintf(stderr, "escaping \"%s\": got \"%s\", want \"%s\"\n", in, got, want);
    CHECK(!strcmp(got, want));
    free(got);
}

int main(void)
{
    /* UTF-8 */
    CHECK(conv_utf8_len("a") == 1);
    CHECK(conv_utf8_len("\xc3\xa9") == 2);
    CHECK(conv_utf8_len("\xe2\x86\x92") == 3);
    CHECK(conv_utf8_len("\xf0\x9f\x94\xac") == 4);
    CHECK(conv_utf8_len("\xc0\xaf") == 0);          /* overlong '/' */
    CHECK(conv_utf8_len("\xe0\x80\xaf") == 0);      /* overlong, 3 bytes */
    CHECK(conv_utf8_len("\xed\xa0\x80") == 0);      /* a surrogate */
    CHECK(conv_utf8_len("\xef\xbf\xbe") == 0);      /* U+FFFE */
    CHECK(conv_utf8_len("\xf4\x90\x80\x80") == 0);  /* past U+10FFFF */
    CHECK(conv_utf8_len("\xc3") == 0);              /* cut short by the NUL */
    CHECK(conv_utf8_len("\xe2\x86") == 0);
    CHECK(conv_utf8_len("\x80") == 0);
    CHECK(conv_text_chars("a\xc3\xa9\xff") == 3);

    /* XML */
    expect(conv_put_xml, "plain::name", SIZE_MAX, "plain::name");
    expect(conv_put_xml, "<a href=\"x\">&'", SIZE_MAX, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    expect(conv_put_xml, "fmt]]><!--", SIZE_MAX, "fmt]]&gt;&lt;!--");
    expect(conv_put_xml, "c\x01\t\n\x7f", SIZE_MAX, "c\\x01\\x09\\x0a\\x7f");
    expect(conv_put_xml, "bad\xff\xfe", SIZE_MAX, "bad\xef\xbf\xbd\xef\xbf\xbd");
    expect(conv_put_xml, "d\xc3\xa9j\xc3\xa0", SIZE_MAX, "d\xc3\xa9j\xc3\xa0");
    /* A cut never splits a character or an entity. */
    expect(conv_put_xml, "d\xc3\xa9j\xc3\xa0", 2, "d\xc3\xa9");
    expect(conv_put_xml, "a&b", 2, "a&amp;");
    expect(conv_put_xml, "", SIZE_MAX, "");

    /* JSON */
    expect(put_json, "HTTP::parse", 0, "\"HTTP::parse\"");
    expect(put_json, "q\"b\\s/", 0, "\"q\\\"b\\\\s/\"");
    expect(put_json, "c\x01\t\n\x1f\x7f", 0, "\"c\\u0001\\u0009\\u000a\\u001f\\u007f\"");
    expect(put_json, "bad\xff", 0, "\"bad\\ufffd\"");
    expect(put_json, "\xe2\x9c\x93", 0, "\"\xe2\x9c\x93\"");

    /* A handler body's name carries its location; others do not. */
    conv_function body = {"zeek_init extra.zeek:49", "extra.zeek", 49};
    conv_function other_line = {"zeek_init extra.zeek:49", "extra.zeek", 50};
    conv_function plain = {"HTTP::parse", "base/http.zeek", 40};
    conv_function bif = {"fmt", "", 0};
    conv_function no_space = {"zeek_initextra.zeek:49", "extra.zeek", 49};
    CHECK(conv_function_names_body(&body));
    CHECK(!conv_function_names_body(&other_line));
    CHECK(!conv_function_names_body(&plain));
    CHECK(!conv_function_names_body(&bif));
    CHECK(!conv_function_names_body(&no_space));
    CHECK_MAIN_END;
}
