/* test_cli.c - dt/cli.h: a program's options, parsed and checked against
 * its table, every bad value named with its option; --help from the table. */
#include "grader.h"

#include "dt/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ranks, flag, style;
    long steps;
    double lr, alpha, bw;
    size_t bytes;
    const char *net, *svg, *dir, *title;
    dt_backend backend;
    dt_algo algo;
} prog_opts;

static const char *const styles[] = {"points", "line", "both", NULL};

/* A program's table over o, defaults set. */
static void setup(dt_cli *cli, dt_opt *opts, prog_opts *o)
{
    *o = (prog_opts){.ranks = 4, .steps = 10, .lr = 0.1, .bytes = 1024, .net = "eth10",
                     .style = 2, .backend = DT_BACKEND_THREAD};
    const dt_opt t[] = {
        {"--ranks", DT_OPT_INT, &o->ranks, .help = "ranks", .lo = 2, .hi = 16},
        {"--steps", DT_OPT_LONG, &o->steps, .help = "steps", .lo = 1, .hi = 1000},
        {"--lr", DT_OPT_REAL, &o->lr, .help = "learning rate", .lo = 0, .hi = 10,
         .flags = DT_OPT_OPEN_LO},
        {"-b|--bytes", DT_OPT_BYTES, &o->bytes, .help = "buffer size", .lo = 4, .hi = 1 << 30},
        {"--alpha", DT_OPT_SECONDS, &o->alpha, .help = "latency"},
        {"--bw", DT_OPT_RATE, &o->bw, .help = "bandwidth"},
        {"--net", DT_OPT_NET, &o->net, .help = "network"},
        {"--svg", DT_OPT_FILE, &o->svg, .help = "figure"},
        {"--figures", DT_OPT_DIR, &o->dir, .help = "folder"},
        {"--title", DT_OPT_TEXT, &o->title, .help = "title"},
        {"--style", DT_OPT_CHOICE, &o->style, .help = "style", .choices = styles},
        {"--backend", DT_OPT_BACKEND, &o->backend, .help = "backend", .flags = DT_OPT_NO_MPI},
        {"--algo", DT_OPT_ALGO, &o->algo, .help = "algorithm"},
        {"--json", DT_OPT_FLAG, &o->flag, .help = "JSON"},
        {"-n", DT_OPT_RENAMED, NULL, .help = NULL, .arg = "--ranks"},
    };
    memcpy(opts, t, sizeof t);
    *cli = (dt_cli){.prog = "prog", .opts = opts, .nopts = (int)(sizeof t / sizeof t[0]),
                    .max_args = 1};
}

/* Parses the words of line (split at spaces) with a fresh table. */
static dt_result parse(const char *line, dt_cli *cli, dt_opt *opts, prog_opts *o)
{
    static char buf[512];
    char *argv[32] = {"prog"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w && argc < 32; w = strtok(NULL, " "))
        argv[argc++] = w;
    setup(cli, opts, o);
    return dt_cli_parse(cli, argc, argv);
}

TEST(cli_reads_every_kind_of_value, 1)
{
    dt_cli cli;
    dt_opt opts[DT_CLI_MAX_OPTS];
    prog_opts o;
    EXPECT_OK(parse("--ranks 8 --steps=20 --lr 0.5 -b 256M --alpha 5us --bw 25GB/s --net ib100 "
                    "--svg x.svg --figures . --title hi --style line --backend proc --algo ring "
                    "--json input.csv", &cli, opts, &o));
    EXPECT(o.ranks == 8 && o.steps == 20 && o.lr == 0.5, "ranks %d steps %ld lr %g", o.ranks,
           o.steps, o.lr);
    EXPECT(o.bytes == 268435456, "-b 256M is 2^28 bytes, got %zu", o.bytes);
    EXPECT(fabs(o.alpha - 5e-6) < 1e-18 && o.bw == 25e9, "--alpha 5us = %g s, --bw 25GB/s = %g B/s", o.alpha,
           o.bw);
    EXPECT(!strcmp(o.net, "ib100") && !strcmp(o.svg, "x.svg") && !strcmp(o.dir, ".") &&
               !strcmp(o.title, "hi"), "texts");
    EXPECT(o.style == 1 && o.backend == DT_BACKEND_PROC && o.algo == DT_ALGO_RING && o.flag == 1,
           "style %d backend %d algo %d flag %d", o.style, (int)o.backend, (int)o.algo, o.flag);
    EXPECT(cli.nargs == 1 && !strcmp(cli.arg[0], "input.csv"), "one positional argument");
    EXPECT(dt_cli_given(&cli, &o.ranks) && !dt_cli_given(&cli, NULL), "--ranks was given");
    EXPECT_OK(parse("--bytes 256Mi", &cli, opts, &o));
    EXPECT(o.bytes == 268435456, "--bytes 256Mi: %zu", o.bytes);
    EXPECT(!dt_cli_given(&cli, &o.ranks) && o.ranks == 4, "no --ranks: the default stays");
}

TEST(cli_names_the_option_and_the_value, 1)
{
    static const struct { const char *line, *says; } bad[] = {
        {"--ranks 0", "--ranks '0': expected a whole number from 2 to 16"},
        {"--ranks=x", "--ranks 'x': expected a whole number"},
        {"--steps 1e3", "--steps '1e3': expected a whole number"},
        {"--lr 0", "--lr '0': expected a number in (0, 10]"},
        {"--lr nan", "--lr 'nan': expected a number"},
        {"-b 1Q", "-b '1Q': expected a size in bytes"},
        {"--bytes 2", "--bytes '2': expected a size in bytes from 4"},
        {"--alpha fast", "--alpha 'fast': expected a time"},
        {"--alpha 1us,bw=2", "--alpha '1us,bw=2': expected a time"},
        {"--bw 25G", "--bw '25G': expected a rate"},
        {"--bw 0", "--bw '0': expected a rate"},
        {"--net warp", "--net 'warp': unknown network preset 'warp'"},
        {"--svg /nonexistent-dtlab/x.svg", "--svg '/nonexistent-dtlab/x.svg': no folder"},
        {"--svg dir/", "--svg 'dir/': expected a file name"},
        {"--figures /nonexistent-dtlab", "--figures '/nonexistent-dtlab': no such folder"},
        {"--style dots", "--style 'dots': expected one of points, line, both"},
        {"--backend mpi", "--backend 'mpi': this program runs its ranks as threads or processes"},
        {"--backend gpu", "--backend 'gpu': unknown backend"},
        {"--algo best", "--algo 'best': unknown algorithm"},
        {"--json=1", "--json takes no value"},
        {"--ranks", "--ranks needs a value"},
        {"--gpus 8", "unknown option '--gpus'"},
        {"a.csv b.csv", "unexpected argument 'b.csv'"},
        {"-n 8", "-n: no such option any more: it is --ranks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_cli cli;
        dt_opt opts[DT_CLI_MAX_OPTS];
        prog_opts o;
        EXPECT_ERR(parse(bad[i].line, &cli, opts, &o), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i].says), "'%s' says '%s', expected '%s'",
               bad[i].line, dt_last_error(), bad[i].says);
    }
}

TEST(cli_help_shows_defaults_and_conventions, 1)
{
    dt_cli cli;
    dt_opt opts[DT_CLI_MAX_OPTS];
    prog_opts o;
    /* --help wins over what comes before it, and reads nothing */
    EXPECT_OK(parse("--ranks 8 --bogus --help", &cli, opts, &o));
    EXPECT(cli.help == 1 && o.ranks == 4, "help %d, ranks %d", cli.help, o.ranks);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    EXPECT(f != NULL, "open_memstream");
    dt_cli_usage(&cli, f);
    fclose(f);
    static const char *const says[] = {"usage: prog [options]", "--ranks N", "(2..16, default 4)",
                                       "(0, 10], default 0.1", "default 1K", "default eth10",
                                       "points|line|both", "256M = 256Mi = 268435456",
                                       "alpha=2us,bw=10GB/s", "default thread"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        EXPECT(strstr(text, says[i]), "the help lacks '%s':\n%s", says[i], text);
    EXPECT(!strstr(text, "-n "), "a renamed option is not listed:\n%s", text);
    free(text);
}

TEST(cli_rest_and_default_folders, 1)
{
    int n = 1;
    const char *fig = "/nonexistent-dtlab";
    const dt_opt t[] = {{"-n|-np", DT_OPT_INT, &n, .help = "ranks", .lo = 1, .hi = 8}};
    dt_cli cli = {.prog = "run", .opts = t, .nopts = 1, .rest = 1};
    char *argv[] = {"run", "-np", "2", "prog", "-n", "5", "--help"};
    EXPECT_OK(dt_cli_parse(&cli, 7, argv));
    EXPECT(n == 2 && cli.rest_at == 3 && !cli.help, "-np 2: n %d, the program at %d, help %d", n,
           cli.rest_at, cli.help);
    const dt_opt d[] = {{"--figures", DT_OPT_DIR, &fig, .help = "folder"}};
    dt_cli c2 = {.prog = "run", .opts = d, .nopts = 1};
    EXPECT_ERR(dt_cli_parse(&c2, 1, argv), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "'/nonexistent-dtlab': no such folder") &&
               strstr(dt_last_error(), "the default of --figures"),
           "a default folder that is not there: '%s'", dt_last_error());
}
