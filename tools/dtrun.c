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
#include "dt/comm.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dtrun -n N [--backend proc] [--net NET] [--timeout S] [--algo A]\n"
            "             [--debug] [--trace FILE] [--fault SPEC] prog [args...]\n"
            "  -n N  (also -np, --nproc-per-node) ranks, 1 .. %d\n"
            "  NET:  none, nvlink, pcie4, ib100, ib400, eth10, eth100, or alpha=2us,bw=10GB/s;\n"
            "        a topology: dgx-a100, dgx-h100, laptop, nodes=2,per_node=4,intra=nvlink,...\n"
            "  S:    seconds each blocking wait may take, 0.001 .. 1e6 (default 30)\n"
            "  A:    auto, ring, tree, direct\n"
            "  SPEC: kill:rank=2:at=allreduce#5 or delay:rank=1:ms=20 (';' between several)\n",
            DT_MAX_RANKS);
}

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

/* The library's message for a value it refused, after the option's name. */
static int refused(const char *opt)
{
    return bad("%s: %s", opt, dt_last_error());
}

static int takes_value(const char *opt)
{
    static const char *const opts[] = {"-n", "-np", "--nproc-per-node", "--backend", "--net",
                                       "--timeout", "--algo", "--trace", "--fault"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strcmp(opt, opts[i]))
            return 1;
    return 0;
}

/* Reads the options up to the program's name into o; *prog is the index
 * of the program's name. 0, or the exit status of a bad option. */
static int parse_args(int argc, char **argv, dt_launch_opts *o, int *prog)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "--debug")) {
            o->debug = 1;
            continue;
        }
        if (!takes_value(a))
            return bad("unknown option '%s'", a);
        if (i + 1 >= argc)
            return bad("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "-n") || !strcmp(a, "-np") || !strcmp(a, "--nproc-per-node")) {
            long n;
            if (dt_parse_long(a, v, 1, DT_MAX_RANKS, &n) != DT_OK)
                return bad("%s", dt_last_error());
            o->nranks = (int)n;
        } else if (!strcmp(a, "--backend")) {
            if (strcmp(v, "proc") != 0)
                return bad("--backend '%s': a program's ranks are processes: only proc (for "
                           "thread ranks, call dt_launch from the program)", v);
        } else if (!strcmp(a, "--net")) {
            dt_net_topo topo;
            if (dt_net_topo_parse(v, &topo) != DT_OK)
                return refused(a);
            o->net = v;
        } else if (!strcmp(a, "--timeout")) {
            if (dt_parse_double(a, v, 1e-3, 1e6, &o->timeout_s) != DT_OK)
                return bad("%s", dt_last_error());
        } else if (!strcmp(a, "--algo")) {
            if (dt_algo_parse(v, &o->algo) != DT_OK)
                return refused(a);
        } else if (!strcmp(a, "--trace")) {
            if (!v[0])
                return bad("--trace '': expected a file name");
            o->trace_path = v;
        } else if (!strcmp(a, "--fault")) {
            if (dt_fault_spec_check(v) != DT_OK)
                return refused(a);
            o->fault = v;
        }
    }
    if (o->nranks <= 0)
        return bad("-n N is required: the number of ranks");
    if (i >= argc)
        return bad("no program to run");
    *prog = i;
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    /* the ranks are waited for: SIGCHLD must not be ignored (a caller's
     * SIG_IGN would have the kernel reap them unseen) */
    signal(SIGCHLD, SIG_DFL);
    dt_launch_opts o;
    if (dt_launch_opts_init(&o) != DT_OK)
        return bad("%s", dt_last_error());
    o.nranks = 0;
    int prog = 0, st = parse_args(argc, argv, &o, &prog);
    if (st != 0)
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
