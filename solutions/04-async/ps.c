/* ps.c - lab 04, tasks 1 to 4: a parameter server (chapter 04, sections 3
 * to 6). Fill in the fences; async.h says what each function must do. */
#include "async.h"

#include <string.h>

/* ---------------------------------------------------------------- task 1 */

dt_result lab_shard_range(size_t n, int parts, int part, size_t *offset, size_t *count)
{
    /* BEGIN STUDENT CODE */
    if (!offset || !count)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_shard_range: NULL offset or count");
    if (parts < 1 || part < 0 || part >= parts || n < (size_t)parts)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_shard_range: part %d of %d over %zu elements "
                       "(need 0 <= part < parts <= n)", part, parts, n);
    size_t base = n / (size_t)parts, extra = n % (size_t)parts, p = (size_t)part;
    /* the first `extra` shards hold base + 1 elements */
    *offset = p * base + (p < extra ? p : extra);
    *count = base + (p < extra ? 1 : 0);
    return DT_OK;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 4 */

dt_result lab_ps_admit(const lab_server *s, int w, int *admit)
{
    /* BEGIN STUDENT CODE */
    if (!s || !admit || w < 0 || w >= s->workers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_admit: NULL argument or worker %d", w);
    const int V = s->version;
    if (s->cfg->sync) {
        /* w may start round V only if it has not pushed its gradient of it */
        *admit = s->pushes[w] == V;
        return DT_OK;
    }
    if (s->cfg->bound < 0) {
        *admit = 1;
        return DT_OK;
    }
    int in_flight = 0, oldest = V;
    for (int k = 0; k < s->workers; k++)
        if (s->in_flight[k]) {
            in_flight++;
            if (s->pulled_version[k] < oldest)
                oldest = s->pulled_version[k];
        }
    /* worst case for the oldest worker in flight: every other gradient in
     * flight, and the one this pull starts, lands before its own */
    *admit = (V - oldest) + in_flight <= s->cfg->bound;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 3 */

dt_result lab_ps_apply(lab_server *s, int w, int version)
{
    /* BEGIN STUDENT CODE */
    if (w < 0 || w >= s->workers || !s->in_flight[w])
        return dt_fail(DT_ERR_STATE, "server %d: a gradient from worker %d, which has no "
                       "answered pull", s->server, w);
    if (version < 0 || version > s->version)
        return dt_fail(DT_ERR_STATE, "server %d: a gradient of version %d from worker %d; "
                       "the shard is at version %d", s->server, version, w, s->version);
    DT_CHECK(lab_ps_record(s, s->version - version)); /* tau = V - version */
    s->in_flight[w] = 0;
    s->pushes[w]++;
    const float lr = s->cfg->lr;
    if (!s->cfg->sync) {
        /* theta_{V+1} = theta_V - lr * grad(theta_{V - tau}) */
        for (size_t i = 0; i < s->count; i++)
            s->params[i] -= lr * s->grad[i];
        s->version++;
        return DT_OK;
    }
    for (size_t i = 0; i < s->count; i++)
        s->sum[i] += s->grad[i];
    if (++s->in_round < s->workers)
        return DT_OK;
    /* the round is complete: theta -= lr * (1/K) sum_k grad_k */
    const float K = (float)s->workers;
    for (size_t i = 0; i < s->count; i++)
        s->params[i] -= lr * (s->sum[i] / K);
    memset(s->sum, 0, s->count * sizeof *s->sum);
    s->in_round = 0;
    s->version++;
    return DT_OK;
    /* END STUDENT CODE */
}

/* BEGIN STUDENT CODE */
/* Answers the waiting pulls that can be answered now, oldest first. */
static dt_result answer_waiting(lab_server *s)
{
    const lab_ps_config *cfg = s->cfg;
    int keep = 0;
    for (int i = 0; i < s->num_waiting; i++) {
        int w = s->waiting[i], stop = 0, admit = 0;
        if (s->server == 0)
            stop = cfg->sync ? s->pushes[w] >= cfg->updates / s->workers
                             : s->granted >= cfg->updates;
        if (!stop)
            DT_CHECK(lab_ps_admit(s, w, &admit));
        if (!stop && !admit) {
            s->waiting[keep++] = w; /* stays in line */
            continue;
        }
        DT_CHECK(lab_ps_reply(s, w, stop));
        if (stop) {
            s->open--;
        } else {
            s->in_flight[w] = 1;
            s->pulled_version[w] = s->version;
            s->granted++;
        }
    }
    s->num_waiting = keep;
    return DT_OK;
}

/* Takes in one message whose header came from rank src. */
static dt_result handle(lab_server *s, const int32_t *hdr, int src)
{
    int w = src - s->cfg->servers;
    if (w < 0 || w >= s->workers)
        return dt_fail(DT_ERR_STATE, "server %d: a message from rank %d, not a worker",
                       s->server, src);
    switch (hdr[0]) {
    case LAB_OP_PULL:
        if (s->num_waiting >= s->workers)
            return dt_fail(DT_ERR_STATE, "server %d: worker %d pulls twice", s->server, w);
        s->waiting[s->num_waiting++] = w;
        return DT_OK;
    case LAB_OP_PUSH:
        DT_CHECK(dt_recv(s->grad, s->count, DT_F32, src, s->comm));
        return lab_ps_apply(s, w, hdr[1]);
    case LAB_OP_BYE:
        s->open--;
        return DT_OK;
    default:
        return dt_fail(DT_ERR_STATE, "server %d: unknown operation %d from rank %d", s->server,
                       (int)hdr[0], src);
    }
}
/* END STUDENT CODE */

dt_result lab_ps_server(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res)
{
    lab_server s;
    DT_CHECK(lab_server_setup(&s, comm, cfg, res));
    dt_result r;
    /* BEGIN STUDENT CODE */
    r = DT_OK;
    while (r == DT_OK && s.open > 0) {
        int32_t hdr[LAB_HDR];
        int src = -1;
        r = dt_recv_any(hdr, LAB_HDR, DT_I32, &src, comm);
        if (r == DT_OK)
            r = handle(&s, hdr, src);
        if (r == DT_OK)
            r = answer_waiting(&s);
    }
    /* END STUDENT CODE */
    lab_server_teardown(&s, r);
    return r;
}

/* ---------------------------------------------------------------- task 2 */

/* BEGIN STUDENT CODE */
/* Pulls shard s into dst: *stop = 1 when the server said stop. */
static dt_result pull(dt_comm *comm, int server, float *dst, size_t count, int *version,
                      int *stop)
{
    int32_t hdr[LAB_HDR] = {LAB_OP_PULL, 0, 0, 0}, reply[LAB_HDR];
    DT_CHECK(dt_send(hdr, LAB_HDR, DT_I32, server, comm));
    DT_CHECK(dt_recv(reply, LAB_HDR, DT_I32, server, comm));
    *version = reply[0];
    *stop = reply[1];
    if (*stop)
        return server == 0 ? DT_OK
                           : dt_fail(DT_ERR_STATE, "server %d said stop: only server 0 may",
                                     server);
    return dt_recv(dst, count, DT_F32, server, comm);
}
/* END STUDENT CODE */

dt_result lab_ps_worker(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res)
{
    const int S = cfg->servers, w = dt_comm_rank(comm) - S;
    lab_trainer t;
    DT_CHECK(lab_trainer_init(&t, cfg->train, cfg->batch, cfg->seed,
                              w == cfg->slow_worker ? cfg->slow_compute_s : cfg->compute_s));
    dt_result r;
    /* BEGIN STUDENT CODE */
    size_t off[LAB_MAX_SERVERS], cnt[LAB_MAX_SERVERS];
    int version[LAB_MAX_SERVERS];
    r = DT_OK;
    for (int s = 0; s < S && r == DT_OK; s++)
        r = lab_shard_range(t.model.num_params, S, s, &off[s], &cnt[s]);
    for (int step = 0; r == DT_OK; step++) {
        int stop = 0;
        /* in server order: see the chapter on why this avoids deadlock */
        for (int s = 0; s < S && r == DT_OK && !stop; s++)
            r = pull(comm, s, t.model.params + off[s], cnt[s], &version[s], &stop);
        if (r != DT_OK)
            break;
        if (stop) {
            int32_t bye[LAB_HDR] = {LAB_OP_BYE, 0, 0, 0};
            for (int s = 1; s < S && r == DT_OK; s++)
                r = dt_send(bye, LAB_HDR, DT_I32, s, comm);
            break;
        }
        r = lab_trainer_gradient(&t, w, step, comm, NULL);
        for (int s = 0; s < S && r == DT_OK; s++) {
            int32_t hdr[LAB_HDR] = {LAB_OP_PUSH, version[s], 0, 0};
            r = dt_send(hdr, LAB_HDR, DT_I32, s, comm);
            if (r == DT_OK)
                r = dt_send(t.model.grads + off[s], cnt[s], DT_F32, s, comm);
        }
        if (r == DT_OK)
            res->pushed[w]++;
    }
    /* END STUDENT CODE */
    lab_trainer_free(&t);
    return r;
}

/* ================================================================ predict, then measure */

dt_result lab_ps_predict_sync(const lab_ps_config *cfg, int workers, const dt_net *link,
                              double *seconds)
{
    /* BEGIN STUDENT CODE */
    if (!cfg || !link || !seconds || workers < 1 || workers > LAB_MAX_WORKERS ||
        cfg->updates < workers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_predict_sync: NULL argument, %d workers or "
                       "%d updates", workers, cfg ? cfg->updates : 0);
    if (!cfg->sync || cfg->servers != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_predict_sync: a synchronous run on one "
                       "server only (sync %d, %d servers)", cfg->sync, cfg->servers);
    int straggler = cfg->slow_worker >= 0 && cfg->slow_worker < workers;
    double w = dt_net_wire(link, 4.0 * (double)lab_num_params());
    if (straggler && (link->alpha != 0 || w != 0))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_predict_sync: a straggler on a network "
                       "that is not free");
    /* A round waits for its slowest gradient: 2 alpha + c + (K+1) n/beta. */
    double c = cfg->compute_s;
    if (straggler && cfg->slow_compute_s > c)
        c = cfg->slow_compute_s;
    int rounds = cfg->updates / workers;
    *seconds = rounds * (2 * link->alpha + c + (workers + 1) * w) + 2 * link->alpha;
    return DT_OK;
    /* END STUDENT CODE */
}
