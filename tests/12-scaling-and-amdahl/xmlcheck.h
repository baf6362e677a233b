/* xmlcheck.h - lab 12's tests: a small XML well-formedness checker and a
 * reader of the series that dt/metrics.h's SVG writer draws. Included by
 * the test files only (static functions: each test file has its copy).
 *
 * Well-formed here means: one root element; every start tag closed by the
 * matching end tag, properly nested; attribute values quoted; no '<' in
 * text or values; every '&' starts a known or numeric entity; comments and
 * processing instructions closed. That is what a browser needs to open it. */
#ifndef LAB12_XMLCHECK_H
#define LAB12_XMLCHECK_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_MAX_DEPTH 64
#define XML_MAX_NAME 64

/* Reads a whole file into a NUL-terminated buffer (free it); NULL if it
 * cannot be read. */
static char *xml_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) free(buf);
            buf = bigger, cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

static int xml_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == ':' || c == '.';
}

/* An entity at s (s[0] == '&'): its length, or 0 if it is not one. */
static size_t xml_entity(const char *s)
{
    static const char *named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(s, named[i], strlen(named[i]))) return strlen(named[i]);
    if (s[1] != '#') return 0;
    size_t k = 2;
    int hex = s[2] == 'x';
    if (hex) k++;
    size_t digits = 0;
    while (hex ? isxdigit((unsigned char)s[k]) : isdigit((unsigned char)s[k])) k++, digits++;
    return digits > 0 && s[k] == ';' ? k + 1 : 0;
}

/* Checks character data up to `end` (exclusive). */
static int xml_text_ok(const char *s, const char *end)
{
    for (; s < end; s++) {
        if (*s == '<') return 0;
        if (*s == '&') {
            size_t n = xml_entity(s);
            if (!n) return 0;
            s += n - 1;
        }
    }
    return 1;
}

/* Returns 1 when doc is well-formed XML; else 0 with why[] saying where. */
static int xml_well_formed(const char *doc, char *why, size_t whylen)
{
    char stack[XML_MAX_DEPTH][XML_MAX_NAME];
    int depth = 0, roots = 0;
    const char *s = doc;
#define XML_BAD(...) do { snprintf(why, whylen, __VA_ARGS__); return 0; } while (0)
    while (*s) {
        const char *lt = strchr(s, '<');
        const char *text_end = lt ? lt : s + strlen(s);
        if (!xml_text_ok(s, text_end)) XML_BAD("bad character data at offset %ld", (long)(s - doc));
        if (depth == 0)
            for (const char *c = s; c < text_end; c++)
                if (!isspace((unsigned char)*c)) XML_BAD("text outside the root at offset %ld", (long)(c - doc));
        if (!lt) break;
        s = lt;
        if (!strncmp(s, "<!--", 4)) {
            const char *e = strstr(s + 4, "-->");
            if (!e) XML_BAD("comment never closed");
            s = e + 3;
        } else if (!strncmp(s, "<?", 2)) {
            const char *e = strstr(s + 2, "?>");
            if (!e) XML_BAD("processing instruction never closed");
            s = e + 2;
        } else if (s[1] == '/') {
            size_t n = 0;
            s += 2;
            while (xml_name_char(s[n])) n++;
            if (depth == 0) XML_BAD("end tag </%.*s> with nothing open", (int)n, s);
            if (strlen(stack[depth - 1]) != n || strncmp(stack[depth - 1], s, n))
                XML_BAD("</%.*s> closes <%.63s>", (int)n, s, stack[depth - 1]);
            s += n;
            while (isspace((unsigned char)*s)) s++;
            if (*s != '>') XML_BAD("end tag </%.63s> not closed by '>'", stack[depth - 1]);
            s++, depth--;
        } else {
            size_t n = 0;
            s++;
            while (xml_name_char(s[n])) n++;
            if (n == 0 || n >= XML_MAX_NAME) XML_BAD("bad tag name at offset %ld", (long)(s - doc));
            if (depth == 0 && roots++) XML_BAD("a second root element <%.*s>", (int)n, s);
            char name[XML_MAX_NAME];
            memcpy(name, s, n), name[n] = '\0';
            s += n;
            for (;;) { /* attributes */
                while (isspace((unsigned char)*s)) s++;
                if (*s == '>' || !strncmp(s, "/>", 2)) break;
                size_t an = 0;
                while (xml_name_char(s[an])) an++;
                if (an == 0) XML_BAD("bad attribute in <%s>", name);
                s += an;
                if (*s != '=' || (s[1] != '"' && s[1] != '\'')) XML_BAD("unquoted attribute in <%s>", name);
                const char *e = strchr(s + 2, s[1]);
                if (!e || !xml_text_ok(s + 2, e)) XML_BAD("bad attribute value in <%s>", name);
                s = e + 1;
            }
            if (*s == '>') {
                if (depth == XML_MAX_DEPTH) XML_BAD("nesting deeper than %d", XML_MAX_DEPTH);
                memcpy(stack[depth++], name, n + 1);
                s++;
            } else {
                s += 2; /* empty element */
            }
        }
    }
    if (depth) XML_BAD("<%.63s> never closed", stack[depth - 1]);
    if (roots != 1) XML_BAD("no root element");
    return 1;
#undef XML_BAD
}

/* ---------------------------------------------------------------- series */

#define XML_MAX_POINTS 64

/* A series of a dt_plot SVG: <g class="series" ...><title>NAME</title>
 * [<polyline .../>] <circle cx=".." cy=".." .../>* </g>. */
typedef struct {
    char name[128];
    int npoints;
    double cx[XML_MAX_POINTS], cy[XML_MAX_POINTS];
    int has_line;
} xml_series;

/* Reads up to max series of an SVG written by dt_plot_write_svg; returns
 * how many there are. */
static int xml_read_series(const char *doc, xml_series *out, int max)
{
    int count = 0;
    const char *s = doc;
    while ((s = strstr(s, "<g class=\"series\"")) != NULL) {
        const char *end = strstr(s, "</g>");
        if (!end) break;
        if (count < max) {
            xml_series *se = &out[count];
            memset(se, 0, sizeof *se);
            const char *t = strstr(s, "<title>");
            if (t && t < end) {
                t += 7;
                const char *te = strstr(t, "</title>");
                size_t n = te ? (size_t)(te - t) : 0;
                if (n >= sizeof se->name) n = sizeof se->name - 1;
                memcpy(se->name, t, n);
            }
            se->has_line = strstr(s, "<polyline") && strstr(s, "<polyline") < end;
            for (const char *c = s; (c = strstr(c, "<circle")) && c < end; c++) {
                if (se->npoints < XML_MAX_POINTS) {
                    const char *x = strstr(c, "cx=\""), *y = strstr(c, "cy=\"");
                    se->cx[se->npoints] = x ? atof(x + 4) : -1;
                    se->cy[se->npoints] = y ? atof(y + 4) : -1;
                }
                se->npoints++;
            }
        }
        count++;
        s = end;
    }
    return count;
}

/* The series whose name is `name` (prefix = 1: begins with it), or NULL. */
static const xml_series *xml_find_series(const xml_series *s, int count, const char *name, int prefix)
{
    for (int i = 0; i < count; i++)
        if (prefix ? !strncmp(s[i].name, name, strlen(name)) : !strcmp(s[i].name, name)) return &s[i];
    return NULL;
}

#endif /* LAB12_XMLCHECK_H */
