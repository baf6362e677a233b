/* async.c - requests, and the progress thread that runs a rank's async
 * collectives while the rank computes.
 *
 * Each communicator that issues an async collective gets one progress
 * thread (lane 1). It takes requests in issue order - the same order on
 * every rank - and runs each with the ordinary algorithms. Its modeled
 * timeline (c->stream_clock) starts each op at max(end of the previous
 * async op, the rank's clock when the op was issued); dt_wait moves the
 * rank's clock up to the op's end.
 *
 * Point-to-point requests need no thread: a posted receive is filled by
 * its sender, a posted send is taken by its receiver. */
#include "progress.h"

#include "backend.h"
#include "bell.h"
#include "diag.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>

enum { REQ_SEND, REQ_RECV, REQ_COLL };

struct dt_request {
    int type;
    dt_comm *comm;
    dt_xfer xfer;         /* p2p: the posted transfer */
    int peer;             /* p2p: the other rank */
    uint32_t want;        /* a receive: which message of peer's it takes */
    dt_coll_args args;    /* collective */
    long seq;
    double t_issue;       /* the rank's clock when issued */
    double t_done;        /* the op's modeled end */
    _Atomic int done;
    dt_result result;
    char err[400];
    struct dt_request *next;
};

struct dt_progress {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    dt_request *head, *tail;
    int stop;
};

static void run_one(dt_comm *c, dt_request *q)
{
    dt_rank_ctx *rc = c->rc;
    dt_call call;
    dt_call_init(&call, c, 1, q->args.kind, q->seq, 1);
    if (q->t_issue > call.t)
        call.t = q->t_issue;
    double w0 = dt_now(), m0 = call.t;
    int root = q->args.kind == DT_COLL_BROADCAST ? q->args.root : -1;
    dt_coll_call(&call, &q->args);
    dt_doing_set(c, 1, q->args.kind, q->seq, q->args.count, root, call.sig);
    dt_clear_error();
    q->result = dt_coll_run(&call, &q->args);
    dt_stats_traffic(c, &call.traffic);
    if (q->result != DT_OK)
        strncpy(q->err, dt_last_error(), sizeof q->err - 1);
    dt_doing_set(c, 1, -1, 0, 0, 0, 0);
    c->stream_clock = call.t;
    q->t_done = call.t;
    dt_trace_add(rc, q->args.kind, 1, w0, dt_now(), m0, call.t);
    atomic_store_explicit(&q->done, 1, memory_order_release);
    dt_bell_ring(&rc->job->board[rc->world_rank].bell);
}

static void *progress_main(void *arg)
{
    dt_comm *c = arg;
    dt_progress *p = c->progress;
    dt_log_set_rank(c->rc->world_rank);
    dt_mem_bind(c->rc->mem);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->wake, &p->lock);
        dt_request *q = p->head;
        if (!q)
            break; /* stop, and nothing left to run */
        p->head = q->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->lock);
        run_one(c, q);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static dt_result progress_start(dt_comm *c)
{
    dt_progress *p = calloc(1, sizeof *p);
    if (!p)
        return dt_fail(DT_ERR_NOMEM, "out of memory for the progress thread");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    c->progress = p;
    if (pthread_create(&p->thread, NULL, progress_main, c) != 0) {
        c->progress = NULL;
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        free(p);
        return dt_fail(DT_ERR_NOMEM, "cannot start the progress thread");
    }
    return DT_OK;
}

void dt_progress_stop(dt_comm *c)
{
    dt_progress *p = c->progress;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
    c->progress = NULL;
}

static dt_request *req_new(dt_comm *c, int type)
{
    dt_request *q = calloc(1, sizeof *q);
    if (!q) {
        dt_fail(DT_ERR_NOMEM, "out of memory for a request");
        return NULL;
    }
    q->type = type;
    q->comm = c;
    q->t_issue = c->rc->clock;
    return q;
}

dt_result dt_progress_submit(dt_comm *c, const dt_coll_args *a, long seq, dt_request **req)
{
    if (!c->progress)
        DT_TRY(progress_start(c));
    dt_request *q = req_new(c, REQ_COLL);
    if (!q)
        return DT_ERR_NOMEM;
    q->args = *a;
    q->seq = seq;
    dt_progress *p = c->progress;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = q;
    else
        p->head = q;
    p->tail = q;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    *req = q;
    return DT_OK;
}

/* ---------------------------------------------------------------- p2p requests */

/* Posts a send or receive on lane 0's clock (used by dt_isend, dt_irecv). */
dt_result dt_p2p_post(dt_comm *c, int send, void *buf, size_t bytes, int peer, dt_request **req)
{
    dt_request *q = req_new(c, send ? REQ_SEND : REQ_RECV);
    if (!q)
        return DT_ERR_NOMEM;
    dt_call call;
    dt_call_init(&call, c, 0, send ? DT_COLL_SEND : DT_COLL_RECV, 0, 1);
    call.tag = 0;
    const dt_backend_ops *be = c->rc->ops;
    q->peer = peer;
    if (send)
        c->sent_to[peer]++;
    else
        q->want = ++c->posted_from[peer];
    dt_result r = send ? be->isend(&call, peer, buf, bytes, 0, &q->xfer)
                       : be->irecv(&call, peer, buf, bytes, 0, &q->xfer);
    if (r != DT_OK) {
        free(q);
        return r;
    }
    dt_stats_traffic(c, &call.traffic); /* a send is counted when posted */
    /* the send holds the rank's send port now; the clock waits for dt_wait */
    *req = q;
    return DT_OK;
}

static int req_done_cond(const void *arg)
{
    const dt_request *q = arg;
    return atomic_load_explicit(&((dt_request *)q)->done, memory_order_acquire);
}

static dt_result wait_coll(dt_request *q)
{
    dt_comm *c = q->comm;
    dt_call call;
    dt_call_init(&call, c, 0, q->args.kind, q->seq, 0);
    /* The progress thread ends every op in bounded time (each of its waits
     * has the deadline), so wait for it whatever happens here: the request
     * must not be freed while it runs. */
    while (!req_done_cond(q)) {
        if (c->rc->ops->wait_until(&call, req_done_cond, q) != DT_OK && !req_done_cond(q))
            dt_sleep(0.001);
    }
    if (q->t_done > c->rc->clock)
        c->rc->clock = q->t_done;
    if (q->result != DT_OK)
        return dt_fail(q->result, "%s", q->err);
    return DT_OK;
}

dt_result dt_wait(dt_request *req)
{
    if (!req)
        return DT_OK;
    dt_comm *c = req->comm;
    dt_result r = dt_comm_check(c, "dt_wait");
    if (r != DT_OK) {
        free(req);
        return r;
    }
    double w0 = dt_now(), m0 = c->rc->clock;
    int kind = req->type == REQ_COLL ? req->args.kind
                                     : req->type == REQ_SEND ? DT_COLL_SEND : DT_COLL_RECV;
    dt_doing_set(c, 0, kind, req->seq, req->args.count, -1, 0);
    if (req->type != REQ_SEND) /* dt_recv_any's rule: whom a wait waits for */
        dt_doing_detail(c, req->type == REQ_RECV ? req->peer : DT_FROM_NONE, req->want,
                        req->type == REQ_COLL);
    dt_call call;
    dt_call_init(&call, c, 0, kind, 0, 1);
    call.tag = 0;
    if (req->type == REQ_COLL) {
        r = wait_coll(req);
    } else {
        r = c->rc->ops->wait(&call, &req->xfer, NULL);
        if (call.t > c->rc->clock)
            c->rc->clock = call.t;
    }
    dt_api_leave(c, w0, m0, kind, 0, &call.traffic);
    free(req);
    return r;
}

dt_result dt_waitall(int n, dt_request **reqs)
{
    if (n < 0 || (n > 0 && !reqs))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_waitall: %d requests at %p", n, (void *)reqs);
    dt_result first = DT_OK;
    char msg[DT_MSG_MAX] = "";
    for (int i = 0; i < n; i++) {
        dt_result r = dt_wait(reqs[i]);
        reqs[i] = NULL;
        if (r != DT_OK && first == DT_OK) {
            first = r;
            strncpy(msg, dt_last_error(), sizeof msg - 1);
        }
    }
    return first == DT_OK ? DT_OK : dt_fail(first, "%s", msg);
}

dt_result dt_request_test(dt_request *req, int *done)
{
    if (!req || !done)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_request_test: %s is NULL", req ? "done" : "req");
    if (req->type == REQ_COLL)
        *done = req_done_cond(req);
    else
        *done = req->comm->rc->ops->done(&req->xfer);
    return DT_OK;
}
