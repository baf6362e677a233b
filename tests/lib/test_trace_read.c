/* test_trace_read.c - libdt metrics: a trace the communicator wrote reads
 * back region by region (dt_trace_read), on both clocks and both tracks. */
#include "grader.h"

#include "dt/comm.h"
#include "dt/metrics.h"

#include <math.h>
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

/* A program's own marks (dt_trace_begin, dt_trace_instant): 1 ms, then a
 * region "step 1" of 2 ms; rank 1 marks "boom" at its end. The bad calls
 * are refused by name, traced or not. */
static dt_result marking_rank(dt_comm *w, void *arg)
{
    const int *resume = arg;
    DT_CHECK(dt_clock_advance(w, 1e-3));
    DT_CHECK(dt_trace_begin(w, *resume ? "recovery" : "step 1"));
    DT_CHECK(dt_clock_advance(w, 2e-3));
    DT_CHECK(dt_trace_end(w));
    if (dt_comm_rank(w) == 1 && !*resume)
        DT_CHECK(dt_trace_instant(w, "boom"));
    if (dt_trace_end(w) != DT_ERR_STATE || dt_trace_begin(w, "a\"b") != DT_ERR_INVALID_ARG ||
        dt_trace_instant(w, "") != DT_ERR_INVALID_ARG ||
        dt_trace_begin(w, "a name longer than thirty-one chars") != DT_ERR_INVALID_ARG)
        return dt_fail(DT_ERR_INTERNAL, "a bad mark was not refused");
    int depth = 0;
    while (depth < 20 && dt_trace_begin(w, "nested") == DT_OK)
        depth++;
    for (int i = 0; i < depth; i++)
        DT_CHECK(dt_trace_end(w));
    return depth == 8 ? DT_OK : dt_fail(DT_ERR_INTERNAL, "%d regions nested, expected 8", depth);
}

TEST(trace_marks_a_programs_regions_and_appends_a_resume, 1, .own_backend = 1)
{
    char path[4200], text[1 << 16];
    snprintf(path, sizeof path, "%s/trace-marks.json", dt_test_tmpdir());
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2, o.backend = DT_BACKEND_THREAD, o.trace_path = path;
    int resume = 0;
    EXPECT_OK(dt_launch(&o, marking_rank, &resume));
    resume = 1, o.trace_append = 1;
    EXPECT_OK(dt_launch(&o, marking_rank, &resume));
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[got] = '\0';
    EXPECT(strstr(text, "{\"name\":\"boom\",\"cat\":\"program\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
                        "\"tid\":2,\"ts\":3000.000}") != NULL,
           "no instant 'boom' on rank 1's modeled track at 3 ms in %s", path);
    EXPECT(got > 5 && !strcmp(text + got - 4, "\n]}\n") && !strncmp(text, "{\"displayTimeUnit\"", 18),
           "%s is not one trace: it begins '%.20s' and ends '%s'", path, text,
           got > 4 ? text + got - 4 : text);
    dt_trace_region *r = NULL;
    size_t n = 0;
    EXPECT_OK(dt_trace_read(path, &r, &n));
    int steps = 0, recoveries = 0;
    for (size_t i = 0; r && i < n; i++) {
        if (!r[i].modeled)
            continue;
        /* the resume's modeled clock continues from the first job's end, 3 ms */
        double want = !strcmp(r[i].name, "step 1") ? 1e-3 : 4e-3;
        if (strcmp(r[i].name, "step 1") && strcmp(r[i].name, "recovery"))
            continue;
        *(strcmp(r[i].name, "step 1") ? &recoveries : &steps) += 1;
        EXPECT(fabs(r[i].start_s - want) < 1e-9 && fabs(r[i].end_s - want - 2e-3) < 1e-9,
               "rank %d's modeled '%s' over [%g, %g) s, expected [%g, %g)", r[i].rank,
               r[i].name, r[i].start_s, r[i].end_s, want, want + 2e-3);
    }
    EXPECT(steps == 2 && recoveries == 2, "%d modeled regions 'step 1' and %d 'recovery', "
           "expected one of each per rank", steps, recoveries);
    free(r);
    f = fopen(path, "w");
    EXPECT(f != NULL, "cannot write %s", path);
    fputs("not a trace\n", f);
    fclose(f);
    EXPECT_ERR(dt_launch(&o, marking_rank, &resume), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "trace-marks.json") != NULL, "the refusal does not name the "
           "file: %s", dt_last_error());
    remove(path);
}
