/* mp_test.c - the reference, the traffic counts and the checking rank
 * function of the lab 05 tests (see mp_test.h). The reference is plain
 * single-rank training of the whole model: it shares no code with the lab. */
#include "mp_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mp_batch(size_t B, size_t in, size_t classes, int t, float *x, int32_t *y)
{
    for (size_t i = 0; i < B * in; i++)
        x[i] = (float)((int)((i * 7 + (size_t)t * 5) % 13) - 6) / 6.0f;
    for (size_t i = 0; i < B; i++)
        y[i] = (int32_t)((i * 3 + (size_t)t) % classes);
}

const char *mp_placement_name(mp_placement p)
{
    static const char *const names[] = {"contiguous", "round-robin", "scattered"};
    return p >= MP_CONTIGUOUS && p <= MP_SCATTERED ? names[p] : "?";
}

void mp_test_placement(mp_placement p, int L, int K, int *owner)
{
    for (int l = 0; l < L; l++)
        owner[l] = p == MP_ROUND_ROBIN ? l % K : p == MP_SCATTERED ? (K - 1) - (l / 2) % K : -1;
    for (int k = 0; p == MP_CONTIGUOUS && k < K; k++)
        for (int l = k * L / K; l < (k + 1) * L / K; l++)
            owner[l] = k;
}

void mp_expected_traffic(const dt_model *m, const int *owner, int rank, size_t B,
                         uint64_t *msgs, uint64_t *bytes)
{
    *msgs = 0, *bytes = 0;
    for (int l = 0; l + 1 < m->num_layers; l++) {
        uint64_t n = (uint64_t)B * m->layers[l].out_width * 4;
        int sends = (owner[l] != owner[l + 1]) * ((owner[l] == rank) + (owner[l + 1] == rank));
        *msgs += (uint64_t)sends;
        *bytes += (uint64_t)sends * n;
    }
}

/* max_i |a_i - b_i| / max_i |b_i| over [off, off + n), NaN counted as worst. */
static double rel_diff(const float *a, const float *b, size_t off, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = off;
    for (size_t i = off; i < off + n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax))
            dmax = d, *worst = i;
        bmax = fmax(bmax, fabs((double)b[i]));
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

/* One rank, the whole model, `steps` steps of SGD with momentum on the
 * same batches; the last step's loss in *loss, its gradients in ref->grads. */
static dt_result reference(dt_model *ref, const mp_run *run, float *loss)
{
    dt_optim_config cfg = dt_sgd_config(0.1f, 0.9f, 0);
    dt_acts *a = NULL;
    DT_CHECK(dt_model_create_spec(ref, run->spec, MP_MODEL_SEED));
    float *x = malloc(run->B * ref->in_width * sizeof *x), *mom = NULL;
    int32_t *y = malloc(run->B * sizeof *y);
    dt_result r = x && y && (mom = calloc(ref->num_params, sizeof *mom)) ? DT_OK
                                                                         : dt_fail(DT_ERR_NOMEM, "reference");
    if (r == DT_OK)
        r = dt_acts_create(&a, ref, 0, ref->num_layers, run->B, 1);
    for (int t = 0; r == DT_OK && t < run->steps; t++) {
        mp_batch(run->B, ref->in_width, ref->num_classes, t, x, y);
        r = dt_model_zero_grads(ref);
        if (r == DT_OK)
            r = dt_model_forward(ref, a, x, NULL);
        if (r == DT_OK)
            r = dt_model_loss(ref, a, y, loss, NULL);
        if (r == DT_OK)
            r = dt_model_backward(ref, a, NULL, NULL, NULL, NULL);
        if (r == DT_OK)
            r = dt_sgd_update(&cfg, ref->params, ref->grads, mom, ref->num_params);
    }
    dt_acts_free(a);
    free(x), free(y), free(mom);
    return r;
}

/* After the first step: the input each segment received (its `in`)
 * against what one rank's forward feeds that layer, the output of the
 * layer before it. Another layer's output there means it was sent to, or
 * received from, the wrong rank. */
static dt_result check_inputs(const lab_mp *mp, const mp_run *run, const float *x)
{
    dt_model w = {0};
    DT_CHECK(dt_model_create_spec(&w, run->spec, MP_MODEL_SEED));
    dt_result r = DT_OK;
    for (int i = 0; r == DT_OK && i < mp->num_segments; i++) {
        const lab_segment *s = &mp->seg[i];
        dt_acts *a = NULL;
        if (s->first == 0)
            continue;
        r = dt_acts_create(&a, &w, 0, s->first, run->B, 1);
        if (r == DT_OK)
            r = dt_model_forward(&w, a, x, NULL);
        size_t n = run->B * w.layers[s->first].in_width, worst;
        double e = r == DT_OK ? rel_diff(s->in, dt_acts_output(a), 0, n, &worst) : 0;
        if (r == DT_OK && !(e <= run->tol))
            r = dt_fail(DT_ERR_MISMATCH, "%s, %s on %d ranks: rank %d's segment of layers [%d, "
                        "%d) ran on an input that is not layer %d's output: in[%zu] = %.9g, "
                        "layer %d's output (on rank %d) is %.9g. A segment's output goes to the "
                        "owner of the next layer, and a segment receives from the owner of the "
                        "layer before it, whichever ranks they are (section 2)", run->spec,
                        mp_placement_name(run->placement), mp->ranks, mp->rank, s->first,
                        s->last, s->first - 1, worst, (double)s->in[worst], s->first - 1,
                        mp->owner[s->first - 1], (double)dt_acts_output(a)[worst]);
        dt_acts_free(a);
    }
    dt_model_free(&w);
    return r;
}

/* Trains with the lab; *loss gets the last step's, *step_s the first
 * step's modeled time on this rank's clock. */
static dt_result train(dt_comm *world, const mp_run *run, dt_model *m, const int *owner,
                       float *loss, double *step_s)
{
    dt_optim_config cfg = dt_sgd_config(0.1f, 0.9f, 0);
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    lab_mp_cost cost = {f, b};
    lab_mp mp;
    memset(&mp, 0, sizeof mp);
    for (int l = 0; l < m->num_layers; l++)
        f[l] = run->t_f, b[l] = run->t_b;
    float *x = malloc(run->B * m->in_width * sizeof *x);
    int32_t *y = malloc(run->B * sizeof *y);
    dt_result r = x && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "train");
    if (r == DT_OK)
        r = lab_mp_init(&mp, world, m, owner, run->B, &cfg, &cost);
    for (int t = 0; r == DT_OK && t < run->steps; t++) {
        double t0 = dt_clock(world);
        mp_batch(run->B, m->in_width, m->num_classes, t, x, y);
        r = lab_mp_step(&mp, x, y, loss);
        if (t == 0)
            *step_s = dt_clock(world) - t0;
        if (r == DT_OK && t == 0)
            r = check_inputs(&mp, run, x);
    }
    lab_mp_free(&mp);
    free(x), free(y);
    return r;
}

/* This rank's layers: gradients (one step) or parameters (more) against ref. */
static dt_result compare(const dt_model *m, const dt_model *ref, const mp_run *run,
                         const int *owner, int rank)
{
    int K = 0;
    for (int l = 0; l < m->num_layers; l++)
        K = owner[l] + 1 > K ? owner[l] + 1 : K;
    for (int l = 0; l < m->num_layers; l++) {
        if (owner[l] != rank)
            continue;
        const dt_layer *ly = &m->layers[l];
        const float *got = run->steps == 1 ? m->grads : m->params;
        const float *want = run->steps == 1 ? ref->grads : ref->params;
        size_t worst;
        double e = rel_diff(got, want, ly->param_offset, ly->param_count, &worst);
        if (!(e <= run->tol))
            return dt_fail(DT_ERR_MISMATCH, "%s, %s on %d ranks, %d step(s): layer %d (%s) "
                           "%s[%zu] = %.9g, one rank gives %.9g (relative error %.3g > %.0e)",
                           run->spec, mp_placement_name(run->placement), K,
                           run->steps, l, ly->name, run->steps == 1 ? "grads" : "params", worst,
                           (double)got[worst], (double)want[worst], e, run->tol);
    }
    return DT_OK;
}

static dt_result check_traffic(dt_comm *world, const dt_model *m, const int *owner,
                               const mp_run *run)
{
    dt_stats st;
    uint64_t msgs, bytes;
    int rank = dt_comm_rank(world);
    DT_CHECK(dt_comm_stats(world, &st));
    mp_expected_traffic(m, owner, rank, run->B, &msgs, &bytes);
    msgs *= (uint64_t)run->steps, bytes *= (uint64_t)run->steps;
    if (st.msgs_sent != msgs || st.bytes_sent != bytes)
        return dt_fail(DT_ERR_MISMATCH, "rank %d sent %llu messages of %llu bytes in %d step(s); "
                       "the cuts of its layers call for %llu messages of %llu bytes", rank,
                       (unsigned long long)st.msgs_sent, (unsigned long long)st.bytes_sent,
                       run->steps, (unsigned long long)msgs, (unsigned long long)bytes);
    return DT_OK;
}

/* The latest rank's first step against run->want_step_s; an allreduce
 * after the checks of traffic (it sends messages of its own). */
static dt_result check_step_time(dt_comm *world, const mp_run *run, double step_s)
{
    float mine = (float)(step_s * 1e3), latest;
    DT_CHECK(dt_allreduce(&mine, &latest, 1, DT_F32, DT_MAX, world));
    double want = run->want_step_s * 1e3;
    if (!(fabs(latest - want) <= 1e-5 * want))
        return dt_fail(DT_ERR_MISMATCH, "the step took %.6f ms of modeled time, %s %.6f ms",
                       (double)latest,
                       run->want_is ? run->want_is : "the chain of layers and messages takes",
                       want);
    return DT_OK;
}

dt_result mp_check_rank(dt_comm *world, void *arg)
{
    const mp_run *run = arg;
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    dt_model m = {0}, ref = {0};
    int owner[LAB_MP_MAX_LAYERS];
    float loss = 0, ref_loss = 0;
    double step_s = 0;
    dt_result r = dt_model_create_spec(&m, run->spec, MP_MODEL_SEED);
    if (r == DT_OK) {
        mp_test_placement(run->placement, m.num_layers, K, owner);
        r = train(world, run, &m, owner, &loss, &step_s);
    }
    if (r == DT_OK)
        r = check_traffic(world, &m, owner, run);
    if (r == DT_OK)
        r = reference(&ref, run, &ref_loss);
    if (r == DT_OK)
        r = compare(&m, &ref, run, owner, rank);
    if (r == DT_OK && run->steps == 1 && owner[m.num_layers - 1] == rank &&
        !(fabs(loss - ref_loss) <= run->tol * fabs(ref_loss)))
        r = dt_fail(DT_ERR_MISMATCH, "the loss is %.9g on the rank of the last layer, one rank "
                    "gives %.9g", (double)loss, (double)ref_loss);
    if (r == DT_OK && run->want_step_s > 0)
        r = check_step_time(world, run, step_s);
    dt_model_free(&m);
    dt_model_free(&ref);
    return r;
}

dt_result mp_launch(int K, dt_backend b, const mp_run *run)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = b;
    o.net = run->net ? run->net : "none";
    o.timeout_s = 5;
    return dt_launch(&o, mp_check_rank, (void *)run);
}
