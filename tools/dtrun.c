/* dtrun - start the ranks of a program, as torchrun or mpirun does.
 *
 *   dtrun -n N [--backend proc] [--net NET] [--timeout S] [--algo A]
 *         [--debug] [--trace FILE] [--fault SPEC] prog [args...]
 *
 * Starts N processes of prog, each with RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE and DT_SHM in its environment; the program joins the job
 * with dt_init (and leaves with dt_finalize). The options set the job's
 * modeled network, timeout, algorithm, debug checks, trace and faults, as
 * DT_NET, DT_TIMEOUT, DT_ALGO, DT_DEBUG, DT_TRACE and DT_FAULT would.
 *
 * SIGINT, SIGTERM and SIGHUP sent to dtrun are passed on to every rank;
 * ranks still running 5 s later (or at a second signal) are killed; the
 * job's shared memory is removed and dtrun exits with 128 + the signal.
 * Killed with SIGKILL, dtrun takes its ranks with it (each rank dies with
 * its parent), and the next dtrun removes the shared memory it left.
 *
 * Exit status: 0 when every rank exited 0; else the first non-zero exit
 * status of a rank (128 + the signal of a killed one), after a line on
 * stderr naming the rank and how it ended; 128 + the signal when
 * interrupted. 2 on a bad option or variable, named with its value. */
#include "dt/cli.h"
#include "dt/comm.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

/* "dtrun: <message>" and the exit status of a bad option. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtrun: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'dtrun --help' for the options.\n");
    va_end(ap);
    return EXIT_USAGE;
}

/* Reads the options up to the program's name into o; *prog is the index
 * of the program's name. DT_CLI_GO, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, dt_launch_opts *o, int *prog)
{
    const char *backend = "proc", *fault = NULL;
    int debug = 0;
    o->nranks = 0;
    const dt_opt opts[] = {
        {"-n|-np|--nproc-per-node", DT_OPT_INT, &o->nranks, .help = "ranks (required)",
         .lo = 1, .hi = DT_MAX_RANKS, .flags = DT_OPT_NO_DEFAULT},
        {"--backend", DT_OPT_TEXT, &backend, .help = "a program's ranks are processes: proc "
         "only (for thread ranks, call dt_launch from the program)", .arg = "proc"},
        {"--net", DT_OPT_TOPO, &o->net, .help = "the modeled network (DT_NET)"},
        {"--timeout", DT_OPT_REAL, &o->timeout_s, .help = "seconds each blocking wait may take "
         "(DT_TIMEOUT)", .lo = 1e-3, .hi = 1e6, .arg = "S"},
        {"--algo", DT_OPT_ALGO, &o->algo, .help = "the collectives' algorithm (DT_ALGO)"},
        {"--debug", DT_OPT_FLAG, &debug, .help = "check that collectives match across ranks "
         "(DT_DEBUG=1)"},
        {"--trace", DT_OPT_FILE, &o->trace_path, .help = "write the job's Chrome trace there "
         "(DT_TRACE)"},
        {"--fault", DT_OPT_TEXT, &fault, .help = "inject faults (DT_FAULT): "
         "kill:rank=2:at=allreduce#5 or delay:rank=1:ms=20, ';' between several", .arg = "SPEC"},
    };
    dt_cli cli = {.prog = "dtrun", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .rest = 1, .synopsis = "-n N [options] prog [args...]",
                  .about = "Starts N processes of prog, each with RANK, LOCAL_RANK, "
                           "WORLD_SIZE,\nLOCAL_WORLD_SIZE and DT_SHM in its environment (it "
                           "joins with dt_init)."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (strcmp(backend, "proc") != 0)
        return dt_cli_fail(&cli, "--backend '%s': a program's ranks are processes: only proc "
                           "(for thread ranks, call dt_launch from the program)", backend);
    if (fault && dt_fault_spec_check(fault) != DT_OK)
        return dt_cli_fail(&cli, "--fault: %s", dt_last_error());
    o->fault = fault ? fault : o->fault;
    if (debug)
        o->debug = 1;
    if (o->nranks <= 0)
        return dt_cli_fail(&cli, "-n N is required: the number of ranks");
    if (!cli.rest_at)
        return dt_cli_fail(&cli, "no program to run");
    *prog = cli.rest_at;
    return DT_CLI_GO;
}

int main(int argc, char **argv)
{
    /* the ranks are waited for: SIGCHLD must not be ignored (a caller's
     * SIG_IGN would have the kernel reap them unseen) */
    signal(SIGCHLD, SIG_DFL);
    dt_launch_opts o;
    if (dt_launch_opts_init(&o) != DT_OK)
        return bad("%s", dt_last_error());
    int prog = 0, st = parse_args(argc, argv, &o, &prog);
    if (st != DT_CLI_GO)
        return st;
    /* the programs read the same knobs from the environment */
    if (o.net)
        setenv("DT_NET", o.net, 1);
    if (o.debug > 0)
        setenv("DT_DEBUG", "1", 1);
    if (o.fault)
        setenv("DT_FAULT", o.fault, 1);
    if (o.algo != DT_ALGO_AUTO)
        setenv("DT_ALGO", dt_algo_name(o.algo), 1);
    char tbuf[32];
    snprintf(tbuf, sizeof tbuf, "%.17g", o.timeout_s);
    setenv("DT_TIMEOUT", tbuf, 1);
    int code = 0;
    dt_result r = dt_launch_program(&o, argv + prog, &code);
    if (r == DT_OK)
        return 0;
    fprintf(stderr, "dtrun: %s (%s)\n", dt_last_error(), dt_strerror(r));
    if (r == DT_ERR_INVALID_ARG)
        return EXIT_USAGE; /* refused before any rank started */
    return code ? code : 1;
}
