/* usage.c - --help, printed from the table of options (dt/cli.h): each
 * option with its value's name, its line, its range and its default (what
 * its variable holds before the parse), then the conventions of the
 * kinds of values the program takes. */
#include "dt/cli.h"

#include <float.h>
#include <string.h>

/* The value's name in the usage. */
static const char *arg_name(const dt_opt *o)
{
    if (o->arg)
        return o->arg;
    switch (o->kind) {
    case DT_OPT_FLAG: return "";
    case DT_OPT_INT:
    case DT_OPT_LONG: return "N";
    case DT_OPT_REAL: return "X";
    case DT_OPT_BYTES: return "SIZE";
    case DT_OPT_SECONDS: return "TIME";
    case DT_OPT_RATE: return "RATE";
    case DT_OPT_FILE: return "FILE";
    case DT_OPT_DIR: return "DIR";
    case DT_OPT_NET:
    case DT_OPT_TOPO: return "NET";
    case DT_OPT_BACKEND: return "B";
    case DT_OPT_ALGO: return "A";
    default: return "TEXT";
    }
}

/* A size as it would be typed: 4M, 1G, 1536. */
static void size_text(char *buf, size_t n, size_t z)
{
    static const char units[] = "TGMK";
    for (int u = 0; u < 4; u++) {
        size_t one = (size_t)1 << (10 * (4 - u));
        if (z && z % one == 0) {
            snprintf(buf, n, "%zu%c", z / one, units[u]);
            return;
        }
    }
    snprintf(buf, n, "%zu", z);
}

/* "2..16", "[0, 1)", "": the range of o, as the help shows it. */
static void range_text(char *buf, size_t n, const dt_opt *o)
{
    buf[0] = '\0';
    if (o->lo == 0 && o->hi == 0)
        return;
    if (o->kind == DT_OPT_INT || o->kind == DT_OPT_LONG) {
        snprintf(buf, n, "%.0f..%.0f", o->lo, o->hi);
    } else if (o->kind == DT_OPT_REAL) {
        snprintf(buf, n, "%s%g, %g%s", o->flags & DT_OPT_OPEN_LO ? "(" : "[", o->lo, o->hi,
                 o->flags & DT_OPT_OPEN_HI ? ")" : "]");
    } else if (o->kind == DT_OPT_BYTES) {
        char lo[24], hi[24];
        size_text(lo, sizeof lo, (size_t)o->lo);
        size_text(hi, sizeof hi, (size_t)o->hi);
        snprintf(buf, n, "%s..%s", lo, hi);
    }
}

/* "default 4", or "" when there is none to show. */
static void default_text(char *buf, size_t n, const dt_opt *o)
{
    buf[0] = '\0';
    if (!o->value || (o->flags & DT_OPT_NO_DEFAULT))
        return;
    switch (o->kind) {
    case DT_OPT_INT: snprintf(buf, n, "default %d", *(const int *)o->value); break;
    case DT_OPT_LONG: snprintf(buf, n, "default %ld", *(const long *)o->value); break;
    case DT_OPT_REAL: snprintf(buf, n, "default %g", *(const double *)o->value); break;
    case DT_OPT_SECONDS: snprintf(buf, n, "default %g s", *(const double *)o->value); break;
    case DT_OPT_RATE: snprintf(buf, n, "default %g B/s", *(const double *)o->value); break;
    case DT_OPT_BYTES: {
        char z[32];
        size_text(z, sizeof z, *(const size_t *)o->value);
        snprintf(buf, n, "default %s", z);
        break;
    }
    case DT_OPT_TEXT:
    case DT_OPT_FILE:
    case DT_OPT_DIR:
    case DT_OPT_NET:
    case DT_OPT_TOPO: {
        const char *v = *(const char *const *)o->value;
        if (v && v[0])
            snprintf(buf, n, "default %s", v);
        break;
    }
    case DT_OPT_BACKEND:
        snprintf(buf, n, "default %s", dt_backend_name(*(const dt_backend *)o->value));
        break;
    case DT_OPT_ALGO:
        snprintf(buf, n, "default %s", dt_algo_name(*(const dt_algo *)o->value));
        break;
    case DT_OPT_CHOICE: {
        int i = *(const int *)o->value;
        if (o->choices && i >= 0)
            snprintf(buf, n, "default %s", o->choices[i]);
        break;
    }
    default: break;
    }
}

/* CHOICE's value name: "points|line|both". */
static void choice_text(char *buf, size_t n, const dt_opt *o)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; o->choices && o->choices[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "|" : "", o->choices[i]);
}

/* Prints text in lines of at most 79 columns, the first starting at
 * column indent (after the option's name) unless fresh, the others
 * indented to it. */
static void wrap(FILE *out, const char *text, int fresh, int indent)
{
    int col = fresh ? 0 : indent;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > indent && col + 1 + (int)word > 79) {
            fputc('\n', out);
            col = 0;
        }
        if (col == 0)
            col = fprintf(out, "%*s", indent, "");
        else if (col > indent)
            col += fprintf(out, " ");
        col += fprintf(out, "%.*s", (int)word, text);
        text += word;
        while (*text == ' ')
            text++;
    }
    fputc('\n', out);
}

/* A text of lines: each one longer than 79 columns wrapped. */
static void paragraph(FILE *out, const char *text)
{
    char line[1024];
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n < 80)
            fprintf(out, "%.*s\n", (int)n, p);
        else {
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            wrap(out, line, 1, 0);
        }
        p += n + (p[n] == '\n');
    }
}

void dt_cli_usage(const dt_cli *cli, FILE *out)
{
    fprintf(out, "usage: %s %s\n", cli->prog, cli->synopsis ? cli->synopsis : "[options]");
    if (cli->about)
        paragraph(out, cli->about);
    char head[DT_CLI_MAX_OPTS][96];
    int width = 0, kinds = 0;
    for (int k = 0; k < cli->nopts; k++) {
        const dt_opt *o = &cli->opts[k];
        char arg[80];
        if (o->kind == DT_OPT_CHOICE && !o->arg)
            choice_text(arg, sizeof arg, o);
        else
            snprintf(arg, sizeof arg, "%s", arg_name(o));
        int n = snprintf(head[k], sizeof head[k], "%s%s%s", o->name, arg[0] ? " " : "", arg);
        if (o->help && n > width && n <= 20)
            width = n;
        kinds |= 1 << o->kind;
    }
    if (cli->nopts)
        fprintf(out, "options:\n");
    for (int k = 0; k < cli->nopts; k++) {
        const dt_opt *o = &cli->opts[k];
        if (!o->help || o->kind == DT_OPT_RENAMED)
            continue;
        char range[64], dflt[200], paren[280] = "";
        range_text(range, sizeof range, o);
        default_text(dflt, sizeof dflt, o);
        if (range[0] || dflt[0])
            snprintf(paren, sizeof paren, " (%s%s%s)", range, range[0] && dflt[0] ? ", " : "",
                     dflt);
        char line[1024];
        snprintf(line, sizeof line, "%s%s", o->help, paren);
        if ((int)strlen(head[k]) > width)
            fprintf(out, "  %s\n", head[k]);
        else
            fprintf(out, "  %-*s  ", width, head[k]);
        wrap(out, line, (int)strlen(head[k]) > width, width + 4);
    }
    if (cli->more)
        paragraph(out, cli->more);
    if (kinds & (1 << DT_OPT_BYTES))
        fprintf(out, "SIZE: K, M, G, T are 2^10, 2^20, 2^30, 2^40 bytes (Ki, Mi, Gi, Ti the "
                "same:\n  256M = 256Mi = 268435456); a decimal size is a plain number (1e6).\n");
    if (kinds & ((1 << DT_OPT_NET) | (1 << DT_OPT_TOPO)))
        fprintf(out, "NET: a network as DT_NET takes it (dt/net.h): a preset (none, ib100, "
                "eth10,\n  nvlink, ...) or alpha=2us,bw=10GB/s,gamma=0.1ns.\n");
    if (kinds & (1 << DT_OPT_TOPO))
        fprintf(out, "  Or a topology: dgx-a100, dgx-h100, laptop, or nodes=2,per_node=4,"
                "intra=nvlink,\n  inter=ib100.\n");
    if (kinds & ((1 << DT_OPT_SECONDS) | (1 << DT_OPT_RATE)))
        fprintf(out, "TIME and RATE as DT_NET writes them: s, ms, us, ns; B/s, KB/s, MB/s, "
                "GB/s,\n  TB/s (powers of 1000), Mb/s, Gb/s (bits).\n");
    fprintf(out, "-h, --help prints this.\n");
}
