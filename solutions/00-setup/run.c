/* run.c - lab 00's program: `make run-lab LAB=00 ARGS="4"`.
 *
 * Prints, for K ranks (default 4), the alpha-beta cost of sending a message
 * and of a ring allreduce for message sizes from 1 KB to 1 GB on two links,
 * with your functions of cost.c (task a). Then starts a job of K ranks, on
 * which every rank fills its report with your lab_rank_report_fill of
 * ranks.c (task b) and prints it. */
#include "setup.h"

#include <stdio.h>
#include <stdlib.h>

static const struct {
    const char *name;
    double alpha, beta; /* seconds, bytes per second */
} links[] = {
    {"nvlink", 1e-6, 300e9},
    {"eth10", 30e-6, 1.25e9},
};

static int print_costs(int nranks)
{
    printf("alpha-beta model, K = %d ranks (times in microseconds)\n", nranks);
    printf("%-8s %12s %12s %14s %14s\n", "link", "bytes", "send", "ring allreduce",
           "bytes/rank");
    for (size_t l = 0; l < sizeof links / sizeof links[0]; l++) {
        for (double n = 1e3; n <= 1e9; n *= 100) {
            double t_send, t_ring, sent;
            dt_result r = lab_cost_send(links[l].alpha, links[l].beta, n, &t_send);
            if (r == DT_OK)
                r = lab_cost_ring_allreduce(links[l].alpha, links[l].beta, n, nranks, &t_ring);
            if (r == DT_OK)
                r = lab_ring_bytes_per_rank(n, nranks, &sent);
            if (r != DT_OK) {
                printf("cost model: %s %s\n", dt_strerror(r), dt_last_error());
                return 1;
            }
            printf("%-8s %12.0f %12.2f %14.2f %14.0f\n", links[l].name, n, t_send * 1e6,
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
    int nranks = argc > 1 ? atoi(argv[1]) : 4;
    if (nranks < 1 || nranks > 1024) {
        fprintf(stderr, "usage: %s [ranks 1..1024]\n", argv[0]);
        return 2;
    }
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
