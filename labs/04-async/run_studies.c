/* run_studies.c - lab 04's program: the studies that run alone,
 * --stability (section 3), --lost-updates (section 8) and --knee
 * (section 9.1), each on the student's own server and update. */
#include "run.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ stability */

/* The mean loss of the lab's MLP with these parameters on all of d
 * (INFINITY when it is not finite). */
static dt_result mean_loss(const float *params, const dt_dataset *d, double *out)
{
    static const size_t widths[3] = {LAB_IN, LAB_HIDDEN, LAB_CLASSES};
    dt_model m;
    dt_acts *a = NULL;
    float loss = 0;
    DT_CHECK(dt_mlp_create(&m, widths, 3, 1));
    memcpy(m.params, params, m.num_params * sizeof *params);
    dt_result r = dt_acts_create(&a, &m, 0, m.num_layers, d->n, 1);
    if (r == DT_OK)
        r = dt_model_forward(&m, a, d->x, NULL);
    if (r == DT_OK)
        r = dt_model_loss(&m, a, d->y, &loss, NULL);
    *out = isfinite(loss) ? loss : INFINITY;
    dt_acts_free(a);
    dt_model_free(&m);
    return r;
}

/* Asynchronous SGD with a constant staleness tau, on the lab's server
 * (your lab_ps_apply) and model: K = tau + 1 equally fast workers, each
 * pulling, computing and pushing in turn, worker t mod K pushing the t-th
 * gradient. That is the order of their modeled clocks, ties going to the
 * lower worker, with no thread and no wall-clock race: every gradient
 * after the first K has staleness exactly K - 1, and a run is the same
 * bits every time. Writes the training loss after G updates to *loss
 * (INFINITY: diverged). */
static dt_result constant_staleness(const dt_dataset *train, int tau, int G, int batch,
                                    float lr, double *loss)
{
    const int K = tau + 1;
    lab_ps_config cfg = lab_ps_defaults(train);
    cfg.updates = G, cfg.batch = batch, cfg.lr = lr;
    lab_ps_result res;
    memset(&res, 0, sizeof res);
    lab_server s;
    memset(&s, 0, sizeof s);
    lab_trainer t[LAB_MAX_WORKERS];
    int steps[LAB_MAX_WORKERS] = {0}, made = 0;
    dt_result r = DT_OK;
    for (; made < K && r == DT_OK; made++)
        r = lab_trainer_init(&t[made], train, batch, cfg.seed, 0);
    const size_t n = lab_num_params();
    res.servers = 1, res.workers = K, res.num_params = n;
    res.staleness = calloc((size_t)G, sizeof *res.staleness);
    s.cfg = &cfg, s.res = &res, s.workers = K, s.count = n;
    s.params = calloc(n, sizeof *s.params), s.grad = calloc(n, sizeof *s.grad);
    s.sum = calloc(n, sizeof *s.sum);
    if (r == DT_OK && (!res.staleness || !s.params || !s.grad || !s.sum))
        r = dt_fail(DT_ERR_NOMEM, "stability: buffers");
    if (r == DT_OK) /* the initial parameters, as every worker's model starts */
        memcpy(s.params, t[0].model.params, n * sizeof *s.params);
    for (int w = 0; w < K && r == DT_OK; w++) { /* every worker pulls version 0 */
        memcpy(t[w].model.params, s.params, n * sizeof *s.params);
        s.in_flight[w] = 1, s.pulled_version[w] = 0;
    }
    for (int k = 0; k < G && r == DT_OK; k++) {
        int w = k % K;
        r = lab_trainer_gradient(&t[w], w, steps[w]++, NULL, NULL);
        if (r == DT_OK) {
            memcpy(s.grad, t[w].model.grads, n * sizeof *s.grad);
            r = lab_ps_apply(&s, w, s.pulled_version[w]);
        }
        /* the worker pulls again at once */
        memcpy(t[w].model.params, s.params, n * sizeof *s.params);
        s.in_flight[w] = 1, s.pulled_version[w] = s.version;
    }
    if (r == DT_OK && res.applied[0] != G)
        r = dt_fail(DT_ERR_STATE, "stability: %d of %d gradients recorded", res.applied[0], G);
    for (int k = K; r == DT_OK && k < G; k++)
        if (res.staleness[k] != tau)
            r = dt_fail(DT_ERR_STATE, "stability: gradient %d has staleness %d, not %d", k,
                        res.staleness[k], tau);
    if (r == DT_OK)
        r = mean_loss(s.params, train, loss);
    for (int w = 0; w < made; w++)
        lab_trainer_free(&t[w]);
    free(s.params), free(s.grad), free(s.sum), free(res.staleness);
    return r;
}

/* Section 3's stability limit, measured: for each tau, the smallest
 * learning rate on a geometric grid (2^(1/16) apart, 4.4%) at which the
 * run diverges: its training loss after G updates is above half the
 * initial one (trained runs end below 0.5, diverged ones near ln 10 =
 * 2.30, the loss of a model that predicts nothing). The recurrence of
 * section 3 puts the limit at alpha h = 2 sin(pi / (2 (2 tau + 1))); the
 * curvature h is unknown for the MLP, the ratios between two tau's limits
 * are not. */
int stability(const options *o, const dt_dataset *train)
{
    static const int taus[] = {0, 1, 2, 3, 5, 7};
    const int ntau = (int)(sizeof taus / sizeof taus[0]);
    double l0, lim[8];
    lab_trainer t0;
    dt_result r = lab_trainer_init(&t0, train, o->batch, 1, 0);
    if (r == DT_OK)
        r = mean_loss(t0.model.params, train, &l0);
    lab_trainer_free(&t0);
    if (r != DT_OK)
        return fail("stability", r);
    printf("the stability limit of asynchronous SGD (chapter 04, section 3): staleness tau "
           "= K - 1\nof K workers in turn, %d gradients of %d samples on your server's "
           "lab_ps_apply;\nthe smallest learning rate (grid 2^(1/16)) whose run ends with a "
           "training loss\nabove %.3f, half the initial %.3f\n\n", o->updates, o->batch,
           l0 / 2, l0);
    printf("%4s %11s %12s %10s %12s %10s %14s\n", "tau", "diverges at", "/ tau 0's",
           "predicted", "/ tau 1's", "predicted", "lr x (2tau+1)");
    for (int i = 0; i < ntau; i++) {
        /* from far below the limit up the grid, to the first divergence */
        double lr = 1.0 / 16, loss = 0;
        int step = 0;
        const int steps = 16 * 10; /* from 1/16 up to 64 */
        for (; step < steps; step++, lr = pow(2, step / 16.0) / 16) {
            r = constant_staleness(train, taus[i], o->updates, o->batch, (float)lr, &loss);
            if (r != DT_OK)
                return fail("stability", r);
            if (!(loss <= l0 / 2))
                break;
        }
        if (step == 0 || step == steps) {
            fprintf(stderr, "stability: tau %d: %s at lr %g (loss %g): no limit in 1/16 .. 64\n",
                    taus[i], step ? "no divergence" : "not trained", lr, loss);
            return 1;
        }
        lim[i] = lr;
        /* the recurrence's limits, alpha h = 2 sin(pi / (2 (2 tau + 1))), as ratios */
        double pred = sin(M_PI / (2 * (2 * taus[i] + 1)));
        printf("%4d %11.4f %12.3f %10.3f", taus[i], lr, lr / lim[0], pred);
        if (i > 0)
            printf(" %12.3f %10.3f", lr / lim[1], pred / sin(M_PI / 6));
        else
            printf(" %12s %10s", "-", "-");
        printf(" %14.3f\n", lr * (2 * taus[i] + 1));
    }
    return 0;
}

/* ------------------------------------------------------------ lost updates */

/* The lossless update the chapter's section 8 sets against Hogwild!'s: a
 * compare-and-swap loop per word, so that no concurrent update is lost. */
static dt_result apply_cas(_Atomic float *params, const float *grad, size_t n, float lr)
{
    for (size_t i = 0; i < n; i++) {
        float old = atomic_load_explicit(&params[i], memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&params[i], &old, old - lr * grad[i],
                                                      memory_order_relaxed,
                                                      memory_order_relaxed))
            ;
    }
    return DT_OK;
}

typedef struct {
    int rounds, cas;
    size_t n;
} hammer_job;

/* Every rank subtracts 1 from each of the n shared words, rounds times,
 * with your lab_hogwild_apply (or the CAS loop); the words start at 0.
 * Nothing lost, they end at -ranks * rounds; each lost update leaves a
 * word 1 higher. Rank 0 hands back the sum of the words at the end (its
 * block of the launch's out: a double). */
static dt_result hammer_rank(dt_comm *comm, void *arg)
{
    const hammer_job *j = arg;
    void *base = NULL;
    dt_win *win = NULL;
    float *ones = malloc(j->n * sizeof *ones);
    if (!ones)
        return dt_fail(DT_ERR_NOMEM, "lost updates: %zu floats", j->n);
    for (size_t i = 0; i < j->n; i++)
        ones[i] = 1.0f;
    dt_result r = dt_win_allocate(comm, j->n * sizeof(float), &base, &win);
    _Atomic float *w = base;
    if (r == DT_OK)
        r = dt_barrier(comm);
    for (int k = 0; r == DT_OK && k < j->rounds; k++)
        r = j->cas ? apply_cas(w, ones, j->n, 1.0f) : lab_hogwild_apply(w, ones, j->n, 1.0f);
    if (r == DT_OK)
        r = dt_barrier(comm);
    if (r == DT_OK && dt_comm_rank(comm) == 0) {
        double *remaining = dt_rank_out(comm);
        for (size_t i = 0; i < j->n; i++)
            *remaining += atomic_load_explicit(&w[i], memory_order_relaxed);
    }
    dt_result f = dt_win_free(win);
    free(ones);
    return r != DT_OK ? r : f;
}

/* Section 8's lost updates, made visible: the share of the updates that
 * another worker's store overwrote, with Hogwild!'s load-then-store
 * (yours) against the CAS loop. A race against the machine's scheduling:
 * it changes from run to run and with the load. */
int lost_updates(dt_backend backend)
{
    const int rounds = 2000;
    const size_t n = lab_num_params();
    printf("lost Hogwild! updates (chapter 04, section 8): every worker subtracts 1 from the "
           "%zu\nshared words, %d times; an update that another's store overwrote is lost "
           "(a race:\nthe rate changes from run to run, with the machine and its load)\n\n",
           n, rounds);
    printf("%8s %30s %22s\n", "workers", "lost, load then store (yours)", "lost, CAS loop");
    for (int W = 2; W <= 8; W *= 2) {
        double rate[2];
        for (int cas = 0; cas < 2; cas++) {
            hammer_job j = {rounds, cas, n};
            double remaining[8]; /* one block per rank: rank 0's is the sum */
            dt_launch_opts lo;
            dt_launch_opts_init(&lo);
            lo.nranks = W;
            lo.backend = backend;
            lo.fault = "";
            lo.out = remaining;
            lo.out_bytes = sizeof remaining[0];
            dt_result r = dt_launch(&lo, hammer_rank, &j);
            if (r != DT_OK)
                return fail("lost updates", r);
            double updates = (double)W * rounds * (double)n;
            rate[cas] = (updates + remaining[0]) / updates; /* remaining = lost - updates */
        }
        printf("%8d %29.2f%% %21.2f%%\n", W, 100 * rate[0], 100 * rate[1]);
    }
    return 0;
}

/* The server's bottleneck (chapter 04, section 9.1): the synchronous run
 * with K = 1 .. knee workers, no straggler, 10 rounds each, on o->net.
 * Every round, one server's receive port takes K pushes of a header and
 * n = 4 P / S bytes of gradient, and its send port K replies of the same
 * size: once K n / beta passes the compute time c, the ports, not the
 * workers, set the pace. Deterministic: the modeled clock depends only on
 * each rank's program order. */
int knee(const options *base, const dt_dataset *train, const dt_dataset *test)
{
    dt_net link;
    if (dt_net_link(base->net, &link) != DT_OK)
        return fail("--net", DT_ERR_INVALID_ARG);
    const int rounds = 10;
    /* one shard's floats: a push's gradient or a pull's reply (each after a
     * 16-byte header of its own) */
    const double params = LAB_IN * LAB_HIDDEN + LAB_HIDDEN + LAB_HIDDEN * LAB_CLASSES + LAB_CLASSES;
    double n = 4.0 * params / base->servers;
    double w = dt_net_wire(&link, n), c = base->compute_ms * 1e-3;
    printf("the synchronous server's bottleneck: %d server(s), network %s, %g ms per "
           "gradient,\n%d rounds; a push's gradient or a reply's shard is n = %.0f bytes, w = n/beta = "
           "%.2f us\n\n",
           base->servers, base->net, base->compute_ms, rounds, n, w * 1e6);
    printf("%3s %13s %13s %17s %12s\n", "K", "ms per round", "predicted", "gradients per ms",
           "port busy");
    for (int k = 1; k <= base->knee; k++) {
        options o = *base;
        o.workers = k, o.updates = k * rounds, o.slow_ms = 0, o.delay_ms = 0;
        row out;
        lab_ps_result res;
        memset(&out, 0, sizeof out);
        dt_result r = ps_run(&o, train, test, 1, -1, &out, &res);
        lab_ps_result_free(&res);
        if (r != DT_OK)
            return fail("knee", r);
        /* A round: the replies leave the send port w apart, the last one
         * arrives alpha + K w after the round opens; its worker computes c
         * and pushes (alpha + w). The opening pull and the closing stop add
         * 2 alpha to the run (headers of 16 bytes: about 0). */
        double per_round = out.modeled_s / rounds;
        double predicted = 2 * link.alpha + c + (k + 1) * w + 2 * link.alpha / rounds;
        printf("%3d %13.4f %13.4f %17.2f %11.0f%%\n", k, per_round * 1e3, predicted * 1e3,
               k / (per_round * 1e3), 100 * k * w / per_round);
    }
    printf("\nthe ports' ceiling: beta / n = %.2f gradients per ms; half of it at K = "
           "(2 alpha + c + w) / w = %.1f\n",
           1e-3 / w, (2 * link.alpha + c + w) / w);
    return 0;
}
