/* test_stream_tp.c - lab 15: the tensor-parallel MLP on two streams. Each
 * rank runs its slices with the lab and compares y, dx and its parts of
 * the four gradients with the whole MLP on one device (dt/tp.h with no
 * group: the calls of layers.c); a rendezvous of the two streams' tasks
 * shows dx's allreduce running while fc's weight gradient does. */
#include "grader.h"
#include "stream_tp.h"

#include "dt/tp.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 5
#define C 8
#define H 16
#define TOL 1e-5 /* relative to the array's largest: the parts are summed in another order */

static float val(size_t i, int a, int m) { return (float)((int)((i * (size_t)a) % (size_t)m) - m / 2) / 16.0f; }

typedef struct {
    float fc_w[H * C], fc_b[H], mproj_w[C * H], mproj_b[C], x[N * C], dy[N * C];
    float y[N * C], dx[N * C], dfc_w[H * C], dfc_b[H], dmproj_w[C * H], dmproj_b[C];
} mlp;

/* The whole MLP, forward and backward, on one device. */
static dt_result reference(mlp *w)
{
    memset(w->dfc_w, 0, sizeof w->dfc_w), memset(w->dfc_b, 0, sizeof w->dfc_b);
    memset(w->dmproj_w, 0, sizeof w->dmproj_w), memset(w->dmproj_b, 0, sizeof w->dmproj_b);
    for (size_t i = 0; i < H * C; i++)
        w->fc_w[i] = val(i, 3, 13), w->mproj_w[i] = val(i, 5, 11);
    for (size_t i = 0; i < H; i++)
        w->fc_b[i] = val(i, 7, 9);
    for (size_t i = 0; i < C; i++)
        w->mproj_b[i] = val(i, 2, 7);
    for (size_t i = 0; i < N * C; i++)
        w->x[i] = val(i, 7, 11), w->dy[i] = val(i, 5, 7);
    float fch[N * H], fchg[N * H], work[2 * N * H];
    DT_CHECK(dt_tp_mlp_forward(NULL, w->y, fch, fchg, w->x, w->fc_w, w->fc_b, w->mproj_w,
                               w->mproj_b, N, C, H));
    return dt_tp_mlp_backward(NULL, w->dx, w->dfc_w, w->dfc_b, w->dmproj_w, w->dmproj_b, work,
                              w->dy, w->x, fch, fchg, w->fc_w, w->mproj_w, N, C, H);
}

static dt_result close_to(const char *what, int r, int t, const float *got, const float *want,
                          size_t n, size_t stride, size_t first, size_t width)
{
    /* got: n rows of width; want: the same columns [first, +width) of rows of stride */
    double big = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < width; j++)
            big = fmax(big, fabs(want[i * stride + first + j]));
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < width; j++) {
            double a = got[i * width + j], b = want[i * stride + first + j];
            if (!(fabs(a - b) <= TOL * big))
                return dt_fail(DT_ERR_MISMATCH, "t = %d, rank %d: %s[%zu][%zu] = %.9g, the "
                               "whole MLP on one device gives %.9g (tolerance %g of %.3g)",
                               t, r, what, i, j, a, b, TOL, big);
        }
    return DT_OK;
}

/* ---------------------------------------------------------------- the rendezvous */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_allreduce, in_wgrad;
    char fail[200];
} meet;

/* dx's allreduce and fc's weight gradient each wait (3 s at most) for the
 * other to have started: both can only when they run at once. */
static void rendezvous(void *arg, const char *event, int index)
{
    meet *m = arg;
    int ar = !strcmp(event, "allreduce");
    if (ar && index != 1)
        return;
    pthread_mutex_lock(&m->mu);
    *(ar ? &m->in_allreduce : &m->in_wgrad) = 1;
    pthread_cond_broadcast(&m->cv);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 3;
    int rc = 0;
    while (!m->fail[0] && !(m->in_allreduce && m->in_wgrad) && rc == 0)
        rc = pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    if (!m->fail[0] && !(m->in_allreduce && m->in_wgrad))
        snprintf(m->fail, sizeof m->fail, "%s started and %s never did while it ran: dx's "
                 "allreduce and fc's weight gradient did not overlap",
                 ar ? "dx's allreduce" : "fc's weight gradient",
                 ar ? "fc's weight gradient" : "dx's allreduce");
    pthread_mutex_unlock(&m->mu);
}

/* ---------------------------------------------------------------- the rank */

static dt_result no_op(void *arg)
{
    (void)arg;
    return DT_OK;
}

static dt_result rank_fn(dt_comm *tp, void *arg)
{
    int watch = *(const int *)arg;
    int r = dt_comm_rank(tp), t = dt_comm_size(tp);
    size_t Hl = H / (size_t)t;
    mlp *w = calloc(1, sizeof *w);
    float *s = calloc(2 * Hl * C + 2 * Hl + 2 * C * Hl + 2 * C + 2 * N * C, sizeof(float));
    if (!w || !s) {
        free(w), free(s);
        return dt_fail(DT_ERR_NOMEM, "no memory");
    }
    float *fc_w = s, *fc_b = fc_w + Hl * C, *mproj_w = fc_b + Hl, *mproj_b = mproj_w + C * Hl;
    float *dfc_w = mproj_b + C, *dfc_b = dfc_w + Hl * C, *dmproj_w = dfc_b + Hl;
    float *dmproj_b = dmproj_w + C * Hl, *y = dmproj_b + C, *dx = y + N * C;
    dt_result res = reference(w);
    /* this rank's slices: rows [r Hl, +Hl) of fc, the same columns of mproj */
    memcpy(fc_w, w->fc_w + r * Hl * C, Hl * C * sizeof(float));
    memcpy(fc_b, w->fc_b + r * Hl, Hl * sizeof(float));
    for (size_t i = 0; i < C; i++)
        memcpy(mproj_w + i * Hl, w->mproj_w + i * H + r * Hl, Hl * sizeof(float));
    memcpy(mproj_b, w->mproj_b, C * sizeof(float));
    lab_stp p;
    meet m = {.fail = ""};
    pthread_mutex_init(&m.mu, NULL);
    pthread_cond_init(&m.cv, NULL);
    if (res == DT_OK)
        res = lab_stp_init(&p, tp, N, C, Hl, fc_w, fc_b, mproj_w, mproj_b, dfc_w, dfc_b,
                           dmproj_w, dmproj_b);
    if (res == DT_OK) {
        if (watch)
            p.probe = rendezvous, p.probe_arg = &m;
        dt_span sy = {y, sizeof(float) * N * C};
        dt_span after[5] = {{dx, sizeof(float) * N * C}, {dfc_w, sizeof(float) * Hl * C},
                            {dfc_b, sizeof(float) * Hl}, {dmproj_w, sizeof(float) * C * Hl},
                            {dmproj_b, sizeof(float) * C}};
        res = lab_stp_forward(&p, w->x, y);
        /* the compute stream's next task reads y: the race check says
         * whether the forward ordered it */
        if (res == DT_OK)
            res = dt_stream_launch(p.compute, "a task after the forward", no_op, NULL, 0, &sy, 1,
                                   NULL, 0);
        if (res == DT_OK)
            res = lab_stp_backward(&p, w->x, w->dy, dx);
        if (res == DT_OK)
            res = dt_stream_launch(p.compute, "a task after the backward", no_op, NULL, 0, after,
                                   5, NULL, 0);
        dt_result rc = dt_stream_synchronize(p.compute), rm = dt_stream_synchronize(p.comm_stream);
        if (res == DT_OK)
            res = rc != DT_OK ? rc : rm;
        lab_stp_free(&p);
    }
    if (res == DT_OK && m.fail[0])
        res = dt_fail(DT_ERR_MISMATCH, "t = %d, rank %d: %s", t, r, m.fail);
    if (res == DT_OK)
        res = close_to("y", r, t, y, w->y, N, C, 0, C);
    if (res == DT_OK)
        res = close_to("dx", r, t, dx, w->dx, N, C, 0, C);
    if (res == DT_OK)
        res = close_to("dfc_w (this rank's rows)", r, t, dfc_w, w->dfc_w + r * Hl * C, Hl, C, 0, C);
    if (res == DT_OK)
        res = close_to("dfc_b (this rank's part)", r, t, dfc_b, w->dfc_b + r * Hl, 1, Hl, 0, Hl);
    if (res == DT_OK)
        res = close_to("dmproj_w (this rank's columns)", r, t, dmproj_w, w->dmproj_w, C, H,
                       r * Hl, Hl);
    if (res == DT_OK)
        res = close_to("dmproj_b", r, t, dmproj_b, w->dmproj_b, 1, C, 0, C);
    pthread_mutex_destroy(&m.mu);
    pthread_cond_destroy(&m.cv);
    free(w), free(s);
    return res;
}

static void launch(int t, int watch)
{
    dt_launch_opts opt;
    dt_launch_opts_init(&opt);
    opt.nranks = t;
    opt.net = "none";
    EXPECT_OK(dt_launch(&opt, rank_fn, &watch));
}

TEST_T(tp_mlp_on_streams_equals_one_device, 3, 30, .race = 1)
{
    dt_test_see("chapter 07, section 3; chapter 15, section 9");
    for (int t = 1; t <= 4; t *= 2)
        launch(t, 0);
}

TEST_T(tp_dx_allreduce_overlaps_the_weight_gradient, 2, 30, .race = 1)
{
    dt_test_see("chapter 15, section 9");
    launch(2, 1);
}
