/* test_trace_read.c - libdt metrics: a trace the communicator wrote reads
 * back region by region (dt_trace_read), on both clocks and both tracks. */
#include "grader.h"

#include "dt/comm.h"
#include "dt/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 2 ms of compute, then an asynchronous allgather waited for. */
static dt_result traced_rank(dt_comm *w, void *arg)
{
    (void)arg;
    float mine = (float)dt_comm_rank(w), all[2];
    dt_request *req;
    DT_CHECK(dt_clock_advance(w, 2e-3));
    DT_CHECK(dt_iallgather(&mine, all, 1, DT_F32, w, &req));
    return dt_wait(req);
}

TEST(trace_read_gives_each_ranks_regions, 1, .own_backend = 1)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trace-read.json", dt_test_tmpdir());
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2, o.backend = DT_BACKEND_THREAD, o.trace_path = path, o.net = "ib100";
    EXPECT_OK(dt_launch(&o, traced_rank, NULL));
    dt_trace_region *r = NULL;
    size_t n = 0;
    EXPECT_OK(dt_trace_read(path, &r, &n));
    remove(path);
    int compute[2] = {0, 0}, async[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        EXPECT(r[i].rank >= 0 && r[i].rank < 2 && r[i].end_s >= r[i].start_s, "region %zu: "
               "rank %d, [%g, %g)", i, r[i].rank, r[i].start_s, r[i].end_s);
        if (r[i].modeled && !strcmp(r[i].name, "compute")) {
            compute[r[i].rank]++;
            EXPECT(r[i].lane == 0 && r[i].start_s == 0 && r[i].end_s > 1.999e-3 &&
                   r[i].end_s < 2.001e-3, "rank %d's modeled compute [%g, %g) s on track %d, "
                   "expected [0, 2e-3) on 0", r[i].rank, r[i].start_s, r[i].end_s, r[i].lane);
        }
        if (r[i].modeled && !strcmp(r[i].name, "allgather") && r[i].lane == 1) {
            async[r[i].rank]++;
            EXPECT(r[i].start_s >= 1.999e-3, "the allgather starts after the compute");
        }
    }
    EXPECT(compute[0] == 1 && compute[1] == 1 && async[0] == 1 && async[1] == 1,
           "modeled compute regions %d, %d and asynchronous allgathers %d, %d; expected one of "
           "each per rank", compute[0], compute[1], async[0], async[1]);
    free(r);
    EXPECT_ERR(dt_trace_read("/nonexistent/trace.json", &r, &n), DT_ERR_IO);
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "cannot write %s", path);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n]}\n", f);
    fclose(f);
    EXPECT_ERR(dt_trace_read(path, &r, &n), DT_ERR_INVALID_ARG);
    remove(path);
}
