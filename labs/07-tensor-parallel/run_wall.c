/* run_wall.c - lab 07's program, table 4: the wall clock of one training
 * step, TP = 2 on 2 ranks (thread and proc) against 1 rank, with the
 * communication's share measured and predicted from the cost model
 * (chapter 07, section 11). */
#include "run.h"

#include "dt/net.h"
#include "dt/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tiny GPT large enough that compute dominates one step: vocabulary
 * 256, context 64, 2 blocks, 8 heads, 256 channels; 4 sequences. */
static const dt_gpt_config big = {256, 64, 2, 8, 256};
enum { BIG_B = 4, WALL_STEPS = 5 };

typedef struct {
    const char *backend;   /* for the table */
    double t1;             /* the 1-rank step (s), filled by the first run */
} wall_probe;

/* alpha and beta of this machine's allreduce on this backend, fitted to
 * the ring formula from a small and a large message: the cost model's
 * parameters for the prediction. */
static dt_result calibrate(dt_comm *c, float *buf, double *alpha, double *beta)
{
    int t = dt_comm_size(c);
    const size_t big_n = (size_t)1 << 20; /* floats: 4 MiB */
    double ts[2];
    size_t counts[2] = {2, big_n};
    for (int k = 0; k < 2; k++) {
        int reps = k ? 10 : 200;
        DT_CHECK(dt_barrier(c));
        double t0 = dt_now();
        for (int i = 0; i < reps; i++)
            DT_CHECK(dt_allreduce(buf, buf, counts[k], DT_F32, DT_SUM, c));
        ts[k] = (dt_now() - t0) / reps;
    }
    *alpha = ts[0] / (2.0 * (t - 1));
    double per_byte = (ts[1] / (2.0 * (t - 1)) - *alpha) * t / (4.0 * big_n);
    *beta = per_byte > 0 ? 1 / per_byte : 1e30; /* a noisy fit: no bandwidth term */
    return DT_OK;
}

static dt_result wall_rank(dt_comm *c, void *arg)
{
    wall_probe *p = arg;
    int t = dt_comm_size(c), rank = dt_comm_rank(c);
    rank_model r;
    lab_tp_train s = {0};
    dt_optim_config oc = dt_sgd_config(1e-3f, 0, 0);
    size_t N = BIG_B * big.context, C = big.channels;
    int32_t *tok = malloc(N * sizeof *tok);
    float *buf = malloc(((size_t)1 << 20) * sizeof(float));
    double alpha = 0, beta = INFINITY, times[WALL_STEPS], comm[WALL_STEPS];
    dt_result res = open_model(&r, c, &big, BIG_B, 0, NULL);
    if (res == DT_OK && (!tok || !buf))
        res = dt_fail(DT_ERR_NOMEM, "wall_rank");
    for (size_t i = 0; tok && i < N; i++)
        tok[i] = (int32_t)((i * 31) % big.vocab);
    dt_batch batch = {NULL, tok, tok, BIG_B, big.context, 1};
    if (res == DT_OK)
        res = lab_tp_train_init(&s, &r.tp, &r.m, &r.a, &oc, 1.0f);
    if (res == DT_OK && t > 1) {
        memset(buf, 0, ((size_t)1 << 20) * sizeof(float));
        res = calibrate(c, buf, &alpha, &beta);
    }
    for (int k = -1; res == DT_OK && k < WALL_STEPS; k++) { /* step -1 warms up */
        dt_stats st;
        float mine;
        res = dt_barrier(c);
        dt_comm_stats_reset(c);
        double t0 = dt_now();
        if (res == DT_OK)
            res = dt_train_step(&s.trainer, &batch);
        mine = (float)(dt_now() - t0);
        dt_comm_stats(c, &st);
        if (res == DT_OK) /* the step lasts as long as its slowest rank */
            res = dt_allreduce(&mine, &mine, 1, DT_F32, DT_MAX, c);
        if (k >= 0)
            times[k] = mine, comm[k] = st.time_comm_wall;
    }
    if (res == DT_OK && rank == 0) {
        /* the median step (WALL_STEPS is odd: one of them), and its communication */
        double sorted[WALL_STEPS];
        memcpy(sorted, times, sizeof sorted);
        double med = dt_median(sorted, WALL_STEPS);
        int m = 0;
        while (m < WALL_STEPS - 1 && times[m] != med)
            m++;
        if (t == 1)
            p->t1 = times[m];
        /* the cost model: 4L + 2 allreduces of 4NC bytes (the blocks', the
         * embedding's, the head's), the loss's two of 4N and 8N, the clip's */
        double n = 4.0 * N * C, L = (double)big.layers;
        const dt_net fit = {.alpha = alpha, .beta = beta};
        double pred = t > 1 ? (4 * L + 2) * dt_net_ring_allreduce(&fit, n, t) +
                                  dt_net_ring_allreduce(&fit, 12.0 * N, t) +
                                  dt_net_ring_allreduce(&fit, 4, t)
                            : 0;
        double comp = p->t1 / t; /* the 1-rank step split perfectly */
        printf("| %s | %d | %.1f | %.1f | %.0f%% | %.0f%% | %.2fx | %.2fx |\n",
               p->backend, t, times[m] * 1e3, comm[m] * 1e3,
               100 * comm[m] / times[m], 100 * pred / (comp + pred), p->t1 / times[m],
               p->t1 / (comp + pred));
    }
    lab_tp_train_free(&s);
    free(tok), free(buf);
    close_model(&r);
    return res;
}

int wall_table(void)
{
    wall_probe p = {0};
    printf("## 4. Wall clock of one training step: gpt:%zu,%zu,%zu,%zu,%zu, batch %d x %zu, "
           "median of %d steps (%s)\n\n| backend | t | step (ms) | in communication (ms) | "
           "share, measured | share, predicted | speedup | predicted |\n"
           "|---|---|---|---|---|---|---|---|\n", big.vocab, big.context, big.layers, big.heads,
           big.channels, BIG_B, big.context, WALL_STEPS,
           dt_blas_available() ? "OpenBLAS, 1 thread per rank" : "built-in sgemm");
    fflush(stdout);
    static const dt_backend runs[3] = {DT_BACKEND_THREAD, DT_BACKEND_THREAD, DT_BACKEND_PROC};
    for (int i = 0; i < 3; i++) {
        p.backend = dt_backend_name(runs[i]);
        fflush(stdout); /* the proc backend's ranks print from forked processes */
        if (launch(i ? 2 : 1, runs[i], "none", wall_rank, &p) != DT_OK) {
            fprintf(stderr, "run: %s\n", dt_last_error());
            return 1;
        }
    }
    printf("\n(predicted: the 1-rank step divided by t, plus the step's collectives priced by "
           "the ring formula with alpha and beta fitted on this backend from allreduces of 8 "
           "bytes and 4 MiB)\n");
    return 0;
}
