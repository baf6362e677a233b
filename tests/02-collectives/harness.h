/* harness.h - lab 02's test harness: runs a lab function on K ranks and
 * checks its results against a serial reference, its bytes through
 * dt_comm_stats and its modeled time through dt_clock.
 *
 * Test data is integer-valued, value(seed, rank, i) in [-30, 30] (or a
 * small nonzero set for products), so every reduction is exact in f32, i32
 * and bf16, whatever the order the ranks combine in. */
#ifndef LAB02_HARNESS_H
#define LAB02_HARNESS_H

#include "collectives.h"

typedef enum {
    ALGO_NAIVE = 0,     /* lab_naive_allreduce */
    ALGO_RING,          /* lab_ring_allreduce */
    ALGO_RD,            /* lab_recursive_doubling_allreduce */
    ALGO_RING_RS,       /* lab_ring_reduce_scatter */
    ALGO_RING_AG,       /* lab_ring_allgather */
    NUM_ALGOS
} lab_algo;

const char *algo_name(lab_algo a);

/* A sweep of cases on K ranks, all in one launch: every count x dtype x op
 * x {out of place, in place}. Each case checks, on every rank, the result
 * against the serial reference, that the guard elements after the
 * buffers are untouched, that an out-of-place send buffer is unchanged,
 * and that no library collective was called (dt_comm_stats calls[]).
 * count_fn, when set, adds count_fn(K) to the counts (e.g. K - 1). */
typedef struct {
    lab_algo algo;
    int nranks;
    const size_t *counts;
    int ncounts;
    const dt_dtype *dtypes;
    int ndtypes;
    const dt_redop *ops;
    int nops;
    uint64_t seed;
} sweep_spec;

/* Runs the sweep; a failure ends the test with the case that failed. */
void run_sweep(const sweep_spec *s);

/* The counts of the issue for K ranks: {0, 1, K-1, K+1}, plus `large` when
 * nonzero. Writes them to out (room for 5) and returns how many. */
int standard_counts(int k, size_t large, size_t *out);

/* Runs algo once on K ranks with count elements of dtype (sum) on the
 * network `net` (a preset name or spec), and checks that the modeled time of
 * the call, the largest clock of any rank at its end, is want_seconds
 * within the relative tolerance rel. */
void check_time(lab_algo algo, int nranks, const char *net, size_t count, dt_dtype dtype,
                double want_seconds, double rel);

/* What one rank sends in one call of an algorithm: bytes, give or take
 * tol (blocks that differ by one element), and messages, exactly. */
typedef struct {
    double bytes, tol;
    uint64_t msgs;
} traffic;

typedef traffic (*traffic_fn)(int rank, int nranks, size_t count, size_t elem_size);

/* Runs algo once on K ranks with count elements of dtype and checks, on
 * each rank, dt_comm_stats against want(rank, ...): bytes_sent, msgs_sent
 * and msgs_recv (a rank receives as many messages as it sends in every
 * algorithm of the lab), and no call of a library collective. The library's
 * own collectives count the bytes and messages of the algorithm they stand
 * for, so only calls[] tells them apart from the lab's. */
void check_traffic(lab_algo algo, int nranks, size_t count, dt_dtype dtype, traffic_fn want);

/* Like run_sweep, but the algorithm runs on communicators made by splitting
 * the world of nranks ranks by rank % ngroups (each group a ring of its
 * own, all running at the same time). */
void run_sweep_split(const sweep_spec *s, int ngroups);

#endif /* LAB02_HARNESS_H */
