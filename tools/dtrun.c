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
 * Exit status: 0 when every rank exited 0; else the first non-zero exit
 * status of a rank (128 + the signal of a killed one), after a line on
 * stderr naming the rank and how it ended. 2 on a usage error. */
#include "dt/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr,
            "usage: dtrun -n N [--backend proc] [--net NET] [--timeout S] [--algo A]\n"
            "             [--debug] [--trace FILE] [--fault SPEC] prog [args...]\n"
            "  NET: none, nvlink, pcie4, ib100, ib400, eth10, eth100, or alpha=2us,bw=10GB/s\n"
            "  A:   auto, ring, tree, direct\n");
    exit(2);
}

static const char *need(int argc, char **argv, int i)
{
    if (i + 1 >= argc)
        usage();
    return argv[i + 1];
}

int main(int argc, char **argv)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0 ||
            strcmp(a, "--nproc-per-node") == 0) {
            o.nranks = atoi(need(argc, argv, i++));
        } else if (strcmp(a, "--backend") == 0) {
            const char *b = need(argc, argv, i++);
            if (strcmp(b, "proc") != 0) {
                fprintf(stderr, "dtrun: a program's ranks are processes: only --backend proc "
                        "(for thread ranks, call dt_launch from the program)\n");
                return 2;
            }
        } else if (strcmp(a, "--net") == 0) {
            o.net = need(argc, argv, i++);
        } else if (strcmp(a, "--timeout") == 0) {
            o.timeout_s = atof(need(argc, argv, i++));
        } else if (strcmp(a, "--algo") == 0) {
            if (dt_algo_parse(need(argc, argv, i++), &o.algo) != DT_OK) {
                fprintf(stderr, "dtrun: %s\n", dt_last_error());
                return 2;
            }
        } else if (strcmp(a, "--debug") == 0) {
            o.debug = 1;
        } else if (strcmp(a, "--trace") == 0) {
            o.trace_path = need(argc, argv, i++);
        } else if (strcmp(a, "--fault") == 0) {
            o.fault = need(argc, argv, i++);
        } else if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else {
            usage();
        }
    }
    if (i >= argc || o.nranks <= 0)
        usage();
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
    snprintf(tbuf, sizeof tbuf, "%g", o.timeout_s);
    setenv("DT_TIMEOUT", tbuf, 1);
    int code = 0;
    dt_result r = dt_launch_program(&o, argv + i, &code);
    if (r != DT_OK) {
        fprintf(stderr, "dtrun: %s (%s)\n", dt_last_error(), dt_strerror(r));
        return code ? code : 1;
    }
    return 0;
}
