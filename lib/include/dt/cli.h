/* dt/cli.h - a program's command line, written once: the tools (dtbench,
 * dtsim, dttrain, dtplot, dtrun) and the labs' programs declare their
 * options as a table; this layer parses argv against it, checks every
 * value, and prints --help from the same table, so that an option means
 * the same thing, and is refused the same way, in every program.
 *
 * The conventions:
 *  - options are words: --ranks 4, or --ranks=4. A few tools keep the short
 *    spellings of their field (dtbench's -b -e -f, as nccl-tests; dtrun's
 *    -n and -np, as mpirun); a name may list spellings: "-n|--ranks".
 *  - the shared names: --ranks N, --net NET (one link, or a job's
 *    topology where the program launches the job), --backend B, --algo A,
 *    --svg FILE (one figure), --figures DIR (a folder of them), --json;
 *  - sizes are dt_parse_bytes' (dt/core.h): K, M, G, T are powers of 1024,
 *    Ki, Mi, Gi, Ti the same, a decimal size is written 1e6. Times (5us)
 *    and rates (25GB/s) are the network model's, read by dt_net_link
 *    (dt/net.h): a time means on a command line what it means in DT_NET;
 *  - a value that does not parse, is out of range, names no file's folder
 *    or an unknown network is an error that names the option as typed and
 *    the value: "--ranks '0': expected a whole number from 2 to 16";
 *    the program prints "PROG: <that>" and "Try 'PROG --help' for the
 *    options." and exits with status 2, before it runs anything;
 *  - an option renamed is refused with a message that names the new
 *    spelling (lab 02's -n is --ranks);
 *  - --help (or -h) prints the usage: every option with its value's name,
 *    its range and its default (what the option's variable holds before
 *    the parse), then the conventions above that apply; exit status 0.
 *
 * A program's whole command line:
 *
 *     int ranks = 4;                   // the defaults, shown by --help
 *     const char *net = "eth10";
 *     const dt_opt opts[] = {
 *         {"--ranks", DT_OPT_INT, &ranks, .help = "ranks", .lo = 2, .hi = 16},
 *         {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
 *     };
 *     dt_cli cli = {.prog = "run", .opts = opts, .nopts = 2};
 *     int st = dt_cli_read(&cli, argc, argv);   // 0: --help; 2: a bad option
 *     if (st != DT_CLI_GO)
 *         return st;
 *
 * Uses core, net (networks, times, rates) and comm (backends, algorithms).
 * This is the programs' layer: dt_cli_read and dt_cli_fail print (on the
 * program's behalf, before any rank runs); the library below never does. */
#ifndef DT_CLI_H
#define DT_CLI_H

#include "dt/comm.h"
#include "dt/core.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DT_OPT_FLAG,    /* int: set to 1; takes no value */
    DT_OPT_INT,     /* int, a whole number in [lo, hi] */
    DT_OPT_LONG,    /* long, a whole number in [lo, hi] */
    DT_OPT_REAL,    /* double in [lo, hi] (DT_OPT_OPEN_LO/HI: an end left out) */
    DT_OPT_BYTES,   /* size_t, a size (dt_parse_bytes) in [lo, hi] */
    DT_OPT_SECONDS, /* double, a time as DT_NET writes one (5us, 2ms, 0.1ns, 3) in [lo, hi] */
    DT_OPT_RATE,    /* double, bytes per second as DT_NET writes one (25GB/s, 100Gb/s) */
    DT_OPT_TEXT,    /* const char *: any text */
    DT_OPT_FILE,    /* const char *: a file to write; its folder must exist */
    DT_OPT_DIR,     /* const char *: an existing folder */
    DT_OPT_NET,     /* const char *: one link, checked by dt_net_link (a program
                       that computes with its figures) */
    DT_OPT_TOPO,    /* const char *: a job's network, a link or a topology, checked
                       by dt_net_topo_parse (a program that hands it to dt_launch) */
    DT_OPT_BACKEND, /* dt_backend: thread, proc; mpi inside an MPI job (DT_OPT_NO_MPI: not) */
    DT_OPT_ALGO,    /* dt_algo, by dt_algo_parse */
    DT_OPT_CHOICE,  /* int: the index of the value in choices */
    DT_OPT_RENAMED, /* an old spelling: refused, naming arg, the new one */
} dt_opt_kind;

enum {
    DT_OPT_OPEN_LO = 1,    /* REAL: lo itself is out of range */
    DT_OPT_OPEN_HI = 2,    /* REAL: hi itself is out of range */
    DT_OPT_NO_DEFAULT = 4, /* --help shows no default (help says it) */
    DT_OPT_NO_MPI = 8,     /* BACKEND: thread or proc only */
};

/* One option. value points at the program's variable, whose content
 * before the parse is the default. A range of lo = hi = 0 is none: any
 * whole number for INT and LONG, any finite number for REAL, any size up
 * to 2^50 bytes for BYTES, any time >= 0 for SECONDS. */
typedef struct {
    const char *name;            /* "--ranks", or spellings "-n|--ranks" */
    dt_opt_kind kind;
    void *value;
    const char *help;            /* its line in --help; NULL: not listed */
    double lo, hi;
    int flags;                   /* DT_OPT_OPEN_LO, ... */
    const char *const *choices;  /* CHOICE: the values, NULL-terminated */
    const char *arg;             /* the value's name in --help ("N", "FILE");
                                    NULL: by kind. RENAMED: the new spelling */
} dt_opt;

#define DT_CLI_MAX_OPTS 48
#define DT_CLI_MAX_ARGS 8
#define DT_CLI_GO (-1) /* dt_cli_read: go on and run */

typedef struct {
    const char *prog;      /* the program's name in messages ("dtsim", "run") */
    const char *synopsis;  /* the usage line after the name; NULL: "[options]" */
    const char *about;     /* --help's text before the options; NULL: none */
    const char *more;      /* --help's text after them; NULL: none */
    const dt_opt *opts;
    int nopts;             /* at most DT_CLI_MAX_OPTS */
    int max_args;          /* positional arguments taken (at most DT_CLI_MAX_ARGS) */
    int rest;              /* 1: the first positional argument ends the options;
                              it and all after it are the program's (dtrun) */
    /* filled by dt_cli_parse */
    int help;              /* --help or -h was given: nothing else was read */
    int nargs;             /* positional arguments, in arg[] */
    const char *arg[DT_CLI_MAX_ARGS];
    int rest_at;           /* rest: the index in argv of the first one (0: none) */
    unsigned char given[DT_CLI_MAX_OPTS]; /* opts[k] was on the command line */
} dt_cli;

/* Reads argv[1 .. argc) against cli->opts and writes each value given.
 * DT_OK (cli->help set when --help or -h came, and then nothing written),
 * or DT_ERR_INVALID_ARG with a message naming the option and the value
 * (dt_last_error); values read before the bad one are written. "--" ends
 * the options. A FILE or DIR option whose default names no folder is
 * refused too (the program would fail at its end, having run for nothing).
 * Prints nothing. */
dt_result dt_cli_parse(dt_cli *cli, int argc, char **argv);

/* dt_cli_parse, and what a program does with it: DT_CLI_GO to run; 0 after
 * printing --help on stdout; 2 after printing the error on stderr. */
int dt_cli_read(dt_cli *cli, int argc, char **argv);

/* The usage, the options (with ranges and defaults) and the conventions. */
void dt_cli_usage(const dt_cli *cli, FILE *out);

/* For what the table cannot say (options that go together): prints
 * "PROG: <message>" and the --help hint on stderr; returns 2. */
int dt_cli_fail(const dt_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when the option whose variable is value was on the command line. */
int dt_cli_given(const dt_cli *cli, const void *value);

/* Where `make run-lab` builds, the default folder of a program's figures:
 * $BUILD, else "build". */
const char *dt_cli_build_dir(void);

#ifdef __cplusplus
}
#endif

#endif /* DT_CLI_H */
