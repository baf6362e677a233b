/* lab01.h - helpers shared by lab 01's tests: launching ranks, the data
 * every test sends, and gathering what each rank did (its stats and modeled
 * clock) so that one rank can check the totals.
 *
 * The figures are gathered with the library's allgather AFTER the lab call
 * has been measured: the test may use collectives, the lab may not. The
 * records travel through the communicator (not through the launch argument)
 * so that the tests also hold when ranks are processes (DT_BACKEND=proc). */
#ifndef LAB01_TEST_H
#define LAB01_TEST_H

#include "grader.h"
#include "ranks.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What one rank did in the call under test. */
typedef struct {
    uint64_t bytes_sent, bytes_recv, msgs_sent, msgs_recv;
    uint64_t coll_calls; /* calls of the library's collectives (must be 0) */
    double clock;        /* the rank's modeled clock after the call */
} t01_record;

/* Launch options: n ranks, a network (NULL: none), every blocking wait of
 * the library bounded by timeout_s so that a deadlock fails fast. */
static inline dt_launch_opts t01_opts(int n, const char *net, double timeout_s)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = n;
    o.net = net ? net : "none";
    o.timeout_s = timeout_s;
    return o;
}

/* The element i of the buffer that rank `src` sends: exact in an int32. */
static inline int32_t t01_value(int src, size_t i)
{
    return (int32_t)(src * 1000003 + (int32_t)(i % 4000000) * 7 + 1);
}

/* ceil(log2 n), counted by doubling: the rounds of a binomial tree. */
static inline int t01_ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* This rank's stats and clock now. */
static inline void t01_snapshot(dt_comm *w, t01_record *rec)
{
    dt_stats st;
    EXPECT_OK(dt_comm_stats(w, &st));
    memset(rec, 0, sizeof *rec);
    rec->bytes_sent = st.bytes_sent;
    rec->bytes_recv = st.bytes_recv;
    rec->msgs_sent = st.msgs_sent;
    rec->msgs_recv = st.msgs_recv;
    for (int k = DT_COLL_ALLREDUCE; k <= DT_COLL_BARRIER; k++)
        rec->coll_calls += st.calls[k];
    rec->clock = dt_clock(w);
}

/* Every rank's record, on every rank: all[r] is rank r's. Caller frees. */
static inline t01_record *t01_gather(dt_comm *w, const t01_record *mine)
{
    t01_record *all = calloc((size_t)dt_comm_size(w), sizeof *all);
    EXPECT(all != NULL, "out of memory");
    EXPECT_OK(dt_allgather(mine, all, sizeof *mine, DT_U8, w));
    return all;
}

/* The largest clock over the ranks: when the last one finished. */
static inline double t01_completion(const t01_record *all, int n)
{
    double t = 0;
    for (int r = 0; r < n; r++)
        t = fmax(t, all[r].clock);
    return t;
}

/* An int32 buffer of count elements plus one guard element at the end. */
static inline int32_t *t01_buffer(size_t count, int32_t fill)
{
    int32_t *b = malloc((count + 1) * sizeof *b);
    EXPECT(b != NULL, "out of memory (%zu elements)", count);
    for (size_t i = 0; i <= count; i++)
        b[i] = fill;
    return b;
}

#endif /* LAB01_TEST_H */
