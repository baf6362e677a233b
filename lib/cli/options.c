/* options.c - a program's command line against its table of options
 * (dt/cli.h): the parse, the check of each value, and --help.
 *
 * Every check is one of the library's own parsers, so that a value means
 * the same on a command line as anywhere else: whole numbers and reals by
 * dt_parse_long and dt_parse_double, sizes by dt_parse_bytes, networks,
 * times and rates by dt_net_link, backends and algorithms by their
 * dt_*_parse. The messages name the option as the user typed it. */
#include "dt/cli.h"
#include "dt/net.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- names */

/* 1 when word (len chars) is one of the spellings "a|b|c" of name. */
static int spelled(const char *name, const char *word, size_t len)
{
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "|");
        if (n == len && strncmp(p, word, len) == 0)
            return 1;
        p += n + (p[n] == '|');
    }
    return 0;
}

static const dt_opt *find(const dt_cli *cli, const char *word, size_t len)
{
    for (int k = 0; k < cli->nopts; k++)
        if (spelled(cli->opts[k].name, word, len))
            return &cli->opts[k];
    return NULL;
}

/* ---------------------------------------------------------------- values */

/* "<as> '<v>': <the message of the call that just failed>" (copied first:
 * dt_fail writes where dt_last_error points). */
static dt_result quoting(const char *as, const char *v)
{
    char why[400];
    snprintf(why, sizeof why, "%s", dt_last_error());
    return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': %s", as, v, why);
}

/* The library's parsers already name the option and the value. */
#define TRY(expr)                       \
    do {                                \
        dt_result try_r_ = (expr);      \
        if (try_r_ != DT_OK)            \
            return try_r_;              \
    } while (0)

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A time or a rate as DT_NET writes it, read by the network model's own
 * parser: "alpha=<text>" or "bw=<text>" (no comma or '=' in the text). */
static int net_number(const char *key, const char *text, double *out)
{
    char spec[128];
    dt_net link;
    if (!text[0] || strpbrk(text, ",=") ||
        snprintf(spec, sizeof spec, "%s=%s", key, text) >= (int)sizeof spec ||
        dt_net_link(spec, &link) != DT_OK)
        return -1;
    *out = key[0] == 'a' ? link.alpha : link.beta;
    return 0;
}

static dt_result set_real(const dt_opt *o, const char *as, const char *v)
{
    double lo = o->lo, hi = o->hi, x;
    if (lo == 0 && hi == 0)
        lo = -DBL_MAX, hi = DBL_MAX;
    dt_result r = dt_parse_double(as, v, lo, hi, &x);
    int open = o->flags & (DT_OPT_OPEN_LO | DT_OPT_OPEN_HI);
    if (r != DT_OK && !open)
        return r;
    if (r != DT_OK || ((o->flags & DT_OPT_OPEN_LO) && x == lo) ||
        ((o->flags & DT_OPT_OPEN_HI) && x == hi))
        return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected a number in %s%g, %g%s", as, v,
                       o->flags & DT_OPT_OPEN_LO ? "(" : "[", lo, hi,
                       o->flags & DT_OPT_OPEN_HI ? ")" : "]");
    *(double *)o->value = x;
    return DT_OK;
}

static dt_result set_backend(const dt_opt *o, const char *as, const char *v)
{
    dt_backend b;
    if (dt_backend_parse(v, &b) != DT_OK)
        return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': unknown backend (thread, proc%s)", as, v,
                       o->flags & DT_OPT_NO_MPI ? "" : "; mpi under mpirun");
    if (dt_backend_usable(b, o->flags & DT_OPT_NO_MPI) != DT_OK) {
        char why[200]; /* dt_fail writes where dt_last_error reads */
        snprintf(why, sizeof why, "%s", dt_last_error());
        return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': %s", as, v, why);
    }
    *(dt_backend *)o->value = b;
    return DT_OK;
}

static dt_result set_choice(const dt_opt *o, const char *as, const char *v)
{
    char list[240] = "";
    size_t len = 0;
    for (int i = 0; o->choices && o->choices[i]; i++) {
        if (!strcmp(v, o->choices[i])) {
            *(int *)o->value = i;
            return DT_OK;
        }
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                o->choices[i]);
        if (len >= sizeof list)
            len = sizeof list - 1;
    }
    return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected one of %s", as, v, list);
}

/* The value v of option o, typed as `as`: written, or why not. */
static dt_result set_value(const dt_opt *o, const char *as, const char *v)
{
    long l;
    double x;
    size_t z;
    switch (o->kind) {
    case DT_OPT_INT:
    case DT_OPT_LONG: {
        int none = o->lo == 0 && o->hi == 0, is_int = o->kind == DT_OPT_INT;
        long lo = none ? (is_int ? INT_MIN : LONG_MIN) : (long)o->lo;
        long hi = none ? (is_int ? INT_MAX : LONG_MAX) : (long)o->hi;
        TRY(dt_parse_long(as, v, lo, hi, &l));
        if (is_int)
            *(int *)o->value = (int)l;
        else
            *(long *)o->value = l;
        return DT_OK;
    }
    case DT_OPT_REAL: return set_real(o, as, v);
    case DT_OPT_BYTES:
        TRY(dt_parse_bytes(as, v, (size_t)o->lo, o->hi > 0 ? (size_t)o->hi : (size_t)1 << 50,
                                &z));
        *(size_t *)o->value = z;
        return DT_OK;
    case DT_OPT_SECONDS: {
        double hi = o->hi > 0 ? o->hi : INFINITY;
        if (net_number("alpha", v, &x) != 0 || !isfinite(x))
            return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected a time such as 5us (s, ms, us, "
                           "ns, ps; a plain number is seconds)", as, v);
        if (x < o->lo || x > hi)
            return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected a time from %g s to %g s", as,
                           v, o->lo, hi);
        *(double *)o->value = x;
        return DT_OK;
    }
    case DT_OPT_RATE:
        if (net_number("bw", v, &x) != 0 || !isfinite(x))
            return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected a rate > 0 such as 25GB/s "
                           "(B/s, KB/s, MB/s, GB/s, TB/s: powers of 1000; Mb/s, Gb/s: bits; a "
                           "plain number is bytes/s)", as, v);
        *(double *)o->value = x;
        return DT_OK;
    case DT_OPT_TEXT: *(const char **)o->value = v; return DT_OK;
    case DT_OPT_FILE:
    case DT_OPT_DIR: {
        char dir[4096];
        const char *slash = strrchr(v, '/');
        if (o->kind == DT_OPT_DIR)
            snprintf(dir, sizeof dir, "%s", v);
        else if (!slash)
            snprintf(dir, sizeof dir, ".");
        else
            snprintf(dir, sizeof dir, "%.*s", slash == v ? 1 : (int)(slash - v), v);
        if (!v[0] || (o->kind == DT_OPT_FILE && v[strlen(v) - 1] == '/'))
            return dt_fail(DT_ERR_INVALID_ARG, "%s '%s': expected a file name", as, v);
        if (!is_dir(dir))
            return dt_fail(DT_ERR_INVALID_ARG, o->kind == DT_OPT_DIR ? "%s '%s': no such folder"
                           : "%s '%s': no folder '%s' to write it in", as, v, dir);
        *(const char **)o->value = v;
        return DT_OK;
    }
    case DT_OPT_NET:
    case DT_OPT_TOPO: {
        dt_net link;
        dt_net_topo topo;
        if ((o->kind == DT_OPT_NET ? dt_net_link(v, &link) : dt_net_topo_parse(v, &topo)) != DT_OK)
            return quoting(as, v);
        *(const char **)o->value = v;
        return DT_OK;
    }
    case DT_OPT_BACKEND: return set_backend(o, as, v);
    case DT_OPT_ALGO: {
        dt_algo a;
        if (dt_algo_parse(v, &a) != DT_OK)
            return quoting(as, v);
        *(dt_algo *)o->value = a;
        return DT_OK;
    }
    case DT_OPT_CHOICE: return set_choice(o, as, v);
    default: return dt_fail(DT_ERR_INTERNAL, "%s: option of unknown kind %d", as, (int)o->kind);
    }
}

/* ---------------------------------------------------------------- the parse */

/* One pass over argv. dry: only looks for --help (values are skipped, not
 * read), so that --help shows the defaults whatever came before it. */
static dt_result pass(dt_cli *cli, int argc, char **argv, int dry)
{
    int only_args = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_args && !strcmp(a, "--")) {
            only_args = 1;
            continue;
        }
        if (only_args || a[0] != '-' || a[1] == '\0') { /* a positional argument */
            if (cli->rest) {
                cli->rest_at = dry ? 0 : i;
                return DT_OK;
            }
            if (dry)
                continue;
            if (cli->nargs >= cli->max_args || cli->nargs >= DT_CLI_MAX_ARGS)
                return dt_fail(DT_ERR_INVALID_ARG, "unexpected argument '%s'", a);
            cli->arg[cli->nargs++] = a;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli->help = 1;
            return DT_OK;
        }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const dt_opt *o = find(cli, a, len);
        if (!o) {
            if (dry)
                continue;
            return dt_fail(DT_ERR_INVALID_ARG, "unknown option '%.*s'", (int)len, a);
        }
        char as[64];
        snprintf(as, sizeof as, "%.*s", (int)len, a);
        if (o->kind == DT_OPT_RENAMED) {
            if (dry)
                continue;
            return dt_fail(DT_ERR_INVALID_ARG, "%s: no such option any more: it is %s (as in "
                           "the other programs)", as, o->arg);
        }
        if (o->kind == DT_OPT_FLAG) {
            if (eq && !dry)
                return dt_fail(DT_ERR_INVALID_ARG, "%s takes no value (got '%s')", as, eq + 1);
            if (!dry)
                *(int *)o->value = 1;
        } else {
            const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (dry)
                continue;
            if (!v)
                return dt_fail(DT_ERR_INVALID_ARG, "%s needs a value", as);
            TRY(set_value(o, as, v));
        }
        if (!dry)
            cli->given[o - cli->opts] = 1;
    }
    return DT_OK;
}

dt_result dt_cli_parse(dt_cli *cli, int argc, char **argv)
{
    if (!cli || !cli->prog || (cli->nopts && !cli->opts) || cli->nopts < 0 ||
        cli->nopts > DT_CLI_MAX_OPTS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_cli_parse: no program name, or %d options "
                       "(at most %d)", cli ? cli->nopts : 0, DT_CLI_MAX_OPTS);
    cli->help = 0;
    cli->nargs = 0;
    cli->rest_at = 0;
    memset(cli->given, 0, sizeof cli->given);
    TRY(pass(cli, argc, argv, 1));
    if (cli->help)
        return DT_OK;
    TRY(pass(cli, argc, argv, 0));
    /* a default folder that is not there fails now, not after the run */
    for (int k = 0; k < cli->nopts; k++) {
        const dt_opt *o = &cli->opts[k];
        if ((o->kind != DT_OPT_FILE && o->kind != DT_OPT_DIR) || cli->given[k] || !o->value)
            continue;
        const char *v = *(const char *const *)o->value;
        if (v && set_value(o, o->name, v) != DT_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", dt_last_error());
            return dt_fail(DT_ERR_INVALID_ARG, "%s (the default of %s: give another)", why,
                           o->name);
        }
    }
    return DT_OK;
}

int dt_cli_fail(const dt_cli *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cli->prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry '%s --help' for the options.\n", cli->prog);
    va_end(ap);
    return 2;
}

int dt_cli_read(dt_cli *cli, int argc, char **argv)
{
    if (dt_cli_parse(cli, argc, argv) != DT_OK)
        return dt_cli_fail(cli, "%s", dt_last_error());
    if (cli->help) {
        dt_cli_usage(cli, stdout);
        return 0;
    }
    return DT_CLI_GO;
}

int dt_cli_given(const dt_cli *cli, const void *value)
{
    for (int k = 0; cli && value && k < cli->nopts; k++)
        if (cli->opts[k].value == value && cli->given[k])
            return 1;
    return 0;
}

const char *dt_cli_build_dir(void) { return dt_env_str("BUILD", "build"); }
