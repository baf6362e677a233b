/* run.c - lab 00's program: `make run-lab LAB=00 ARGS="--ranks 4"`.
 *
 * Prints, for K ranks (default 4), the alpha-beta cost of sending a message
 * and of a ring allreduce for message sizes from 1 KB to 1 GB on two links,
 * with your functions of cost.c (task a). Then starts a job of K ranks, on
 * which every rank fills its report with your lab_rank_report_fill of
 * ranks.c (task b) and prints it. */
#include "setup.h"
#include "dt/cli.h"
#include "dt/net.h"

#include <stdio.h>
#include <stdlib.h>

/* Two of dt/net.h's presets: a fast link inside a machine, a slow one
 * between machines. */
static const char *const links[] = {"nvlink", "eth10"};

static int print_costs(int nranks)
{
    printf("alpha-beta model, K = %d ranks (times in microseconds)\n", nranks);
    printf("%-8s %12s %12s %14s %14s\n", "link", "bytes", "send", "ring allreduce",
           "bytes/rank");
    for (size_t l = 0; l < sizeof links / sizeof links[0]; l++) {
        double alpha, beta; /* seconds, bytes per second */
        dt_net_preset(links[l], &alpha, &beta);
        for (double n = 1e3; n <= 1e9; n *= 100) {
            double t_send, t_ring, sent;
            dt_result r = lab_cost_send(alpha, beta, n, &t_send);
            if (r == DT_OK)
                r = lab_cost_ring_allreduce(alpha, beta, n, nranks, &t_ring);
            if (r == DT_OK)
                r = lab_ring_bytes_per_rank(n, nranks, &sent);
            if (r != DT_OK) {
                printf("cost model: %s %s\n", dt_strerror(r), dt_last_error());
                return 1;
            }
            printf("%-8s %12.0f %12.2f %14.2f %14.0f\n", links[l], n, t_send * 1e6,
                   t_ring * 1e6, sent);
        }
    }
    return 0;
}

/* Each rank: fill the report, then say it (dt_log prefixes "[rank R]"). */
static dt_result report(dt_comm *world, void *arg)
{
    (void)arg;
    lab_rank_report rep;
    DT_CHECK(lab_rank_report_fill(world, &rep));
    dt_log("rank %d of %d: value %d, sum %d; %llu allreduce, %llu bytes sent", rep.rank,
           rep.size, rep.value, rep.sum, (unsigned long long)rep.allreduce_calls,
           (unsigned long long)rep.bytes_sent);
    return DT_OK;
}

int main(int argc, char **argv)
{
    int nranks = 4;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &nranks, .help = "ranks", .lo = 1, .hi = DT_MAX_RANKS},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = 1, .max_args = 1,
                  .about = "Lab 00: the alpha-beta costs of your cost.c on two links, then "
                           "each rank's report\n(ranks.c) from a job of --ranks ranks."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (cli.nargs) /* the old spelling, `run 8` */
        return dt_cli_fail(&cli, "'%s': the rank count is an option now: --ranks %s (as in "
                           "the other labs' programs)", cli.arg[0], cli.arg[0]);
    int bad = print_costs(nranks);

    printf("\na job of %d ranks (backend: DT_BACKEND, default thread)\n", nranks);
    fflush(stdout);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    dt_result r = dt_launch(&o, report, NULL);
    if (r != DT_OK) {
        printf("ranks: %s %s\n", dt_strerror(r), dt_last_error());
        bad = 1;
    }
    return bad;
}
