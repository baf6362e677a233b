/* transport.c - point-to-point messages between the ranks of a communicator,
 * the one layer every collective algorithm is written over.
 *
 * Each rank has a port (inbox) per communicator with two FIFO lists: sends
 * posted to it that no receive has matched yet, and receives it posted that
 * no send has matched yet. Whoever arrives second does the copy:
 *
 *   sender arrives first:   send waits in the port  -> receiver copies out
 *   receiver arrives first: recv waits in the port  -> sender copies in
 *
 * so a posted receive fills while its rank computes. Sends of at most
 * DT_EAGER_MAX bytes are copied into the message itself and complete at
 * once. A message matches on (source, tag); source may be "any".
 *
 * The modeled network: a send stamps the message with the op's clock and
 * advances it by n/beta (the link is busy); the receiver's clock becomes
 * max(its clock, stamp + alpha + n/beta).
 */
#include "comm_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- doorbells */

static long futex_op(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE: the word may lie in memory shared by processes. */
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* The caller has just published what the sleeper waits for. The fence
 * orders that store before the load of sleepers; a waiter counts itself a
 * sleeper before its last look at the condition (dt_wait_until), so either
 * it sees the condition or we see it and wake it. No sleeper: no write to
 * the bell's cache line at all. */
void dt_bell_ring(dt_bell *b)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0) {
        atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
        futex_op(&b->seq, FUTEX_WAKE, INT_MAX, NULL);
    }
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

dt_result dt_check_peers(dt_job *job)
{
    if (!atomic_load_explicit(&job->failed, memory_order_acquire))
        return DT_OK;
    for (int r = 0; r < job->nranks; r++) {
        int st = atomic_load_explicit(&job->board[r].state, memory_order_acquire);
        if (st == DT_RANK_DIED)
            return dt_fail(DT_ERR_PEER_DIED, "rank %d died: %s", r, job->board[r].msg);
        if (st == DT_RANK_FAILED)
            return dt_fail(DT_ERR_PEER_DIED, "rank %d failed: %s", r, job->board[r].msg);
    }
    return dt_fail(DT_ERR_PEER_DIED, "a rank of the job failed");
}

/* Spin (job->spin_s: long when every rank has a core, short when ranks
 * outnumber cores: the partner may be waiting for this very core), then
 * yield for a while (with more ranks than cores, the partner may be waiting
 * for this core: yielding hands it over without the cost of a sleep and a
 * wake-up), then sleep on the doorbell in slices, checking for failed peers
 * and the deadline. */
#define YIELD_S 200e-6

dt_result dt_wait_until(dt_op *op, int (*cond)(const void *), const void *arg)
{
    if (cond(arg))
        return DT_OK;
    double t0 = 0, spin_s = op->comm->rc->job->spin_s;
    for (int i = 1;; i++) {
        cpu_relax();
        if (cond(arg))
            return DT_OK;
        if (i % 64 == 0) { /* read the clock rarely: it costs more than a poll */
            if (t0 == 0)
                t0 = dt_now();
            else if (dt_now() - t0 >= spin_s)
                break;
        }
    }
    double until = dt_now() + YIELD_S;
    do {
        sched_yield();
        if (cond(arg))
            return DT_OK;
    } while (dt_now() < until);
    dt_job *job = op->comm->rc->job;
    dt_bell *b = &job->board[op->comm->rc->world_rank].bell;
    double deadline = dt_now() + job->timeout_s;
    for (;;) {
        uint32_t v = atomic_load_explicit(&b->seq, memory_order_seq_cst);
        if (cond(arg))
            return DT_OK;
        dt_result r = dt_check_peers(job);
        if (r != DT_OK)
            return r;
        double now = dt_now();
        if (now >= deadline) {
            char report[360];
            dt_describe_job(job, report, sizeof report);
            return dt_fail(DT_ERR_TIMEOUT, "timeout after %g s in %s #%ld: %s", job->timeout_s,
                           op->kind >= 0 && op->kind < DT_NUM_COLLS ? dt_coll_name(op->kind)
                                                                    : "setup",
                           op->seq, report);
        }
        double slice = deadline - now < 0.1 ? deadline - now : 0.1;
        struct timespec ts = {(time_t)slice, (long)((slice - (double)(time_t)slice) * 1e9)};
        atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
        if (!cond(arg))
            futex_op(&b->seq, FUTEX_WAIT, v, &ts);
        atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
    }
}

/* ---------------------------------------------------------------- diagnosis */

void dt_describe_job(dt_job *job, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < job->nranks && used + 1 < n; r++) {
        dt_board *b = &job->board[r];
        int st = atomic_load_explicit(&b->state, memory_order_acquire);
        char one[160];
        if (st == DT_RANK_DONE) {
            snprintf(one, sizeof one, "rank %d has returned", r);
        } else if (st == DT_RANK_FAILED || st == DT_RANK_DIED) {
            snprintf(one, sizeof one, "rank %d %s", r, st == DT_RANK_DIED ? "died" : "failed");
        } else {
            int len = 0;
            one[0] = '\0';
            for (int lane = 0; lane < DT_LANES; lane++) {
                dt_doing *d = &b->doing[lane];
                if (!atomic_load_explicit(&d->active, memory_order_relaxed))
                    continue;
                int kind = atomic_load_explicit(&d->kind, memory_order_relaxed);
                int root = atomic_load_explicit(&d->root, memory_order_relaxed);
                const char *what = kind < DT_NUM_COLLS ? dt_coll_name(kind) : "comm setup";
                int p2p = kind == DT_COLL_SEND || kind == DT_COLL_RECV || kind == DT_COLL_SENDRECV;
                char extra[40] = "";
                if (root >= 0)
                    snprintf(extra, sizeof extra, ", %s %d", p2p ? "peer" : "root", root);
                len += snprintf(one + len, sizeof one - (size_t)len,
                                "%srank %d %sin %s #%ld (count %ld%s)", len ? "; " : "", r,
                                lane ? "(async) " : "waits ", what,
                                atomic_load_explicit(&d->seq, memory_order_relaxed),
                                atomic_load_explicit(&d->count, memory_order_relaxed), extra);
                if (len >= (int)sizeof one)
                    break;
            }
            if (len == 0)
                snprintf(one, sizeof one, "rank %d is in no communication call", r);
        }
        int w = snprintf(out + used, n - used, "%s%s", used ? "; " : "", one);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* ---------------------------------------------------------------- copies */

void dt_shared_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &at);
    pthread_mutexattr_destroy(&at);
}

void dt_shared_lock(pthread_mutex_t *m)
{
    /* the owner died inside its (short) critical section: its lists may
     * hold a half-posted message of a dead rank, which nobody will match */
    if (pthread_mutex_lock(m) == EOWNERDEAD)
        pthread_mutex_consistent(m);
}

/* A failed cross-memory copy: the peer died, or the system forbids
 * process_vm_* between the job's processes (ptrace rules; Docker's default
 * seccomp profile without CAP_SYS_PTRACE). */
dt_result dt_cma_fail(const char *what, size_t n, int pid)
{
    int e = errno;
    if (e == EPERM || e == ENOSYS || e == EACCES)
        return dt_fail(DT_ERR_UNSUPPORTED, "cross-memory attach refused (%s) when trying to %s "
                       "%zu bytes of process %d: the proc backend needs process_vm_readv and "
                       "process_vm_writev between its processes (in a container: "
                       "--cap-add=SYS_PTRACE); the thread backend does not", strerror(e), what,
                       n, pid);
    return dt_fail(DT_ERR_PEER_DIED, "cannot %s %zu bytes of process %d (%s): it has died?",
                   what, n, pid, strerror(e));
}

/* Copies n bytes from src to dst where one side lies in process pid: with
 * to_peer, our src into its dst (process_vm_writev), else its src into our
 * dst (process_vm_readv). The kernel may move less than asked: loop. */
static dt_result cma_copy(int pid, int self, void *dst, const void *src, size_t n, int to_peer)
{
    if (n == 0)
        return DT_OK;
    if (pid == 0 || pid == self) {
        memcpy(dst, src, n);
        return DT_OK;
    }
    size_t done = 0;
    while (done < n) {
        struct iovec to = {(char *)dst + done, n - done};
        struct iovec from = {(char *)src + done, n - done};
        ssize_t moved = to_peer ? process_vm_writev(pid, &from, 1, &to, 1, 0)
                                : process_vm_readv(pid, &to, 1, &from, 1, 0);
        if (moved <= 0)
            return dt_cma_fail(to_peer ? "write" : "read", n, pid);
        done += (size_t)moved;
    }
    return DT_OK;
}

dt_result dt_copy_from(int pid, int self, void *dst, const void *src, size_t n)
{
    return cma_copy(pid, self, dst, src, n, 0);
}

dt_result dt_copy_to(int pid, int self, void *dst, const void *src, size_t n)
{
    return cma_copy(pid, self, dst, src, n, 1);
}

/* ---------------------------------------------------------------- stats */

void dt_stats_msg(dt_comm *comm, int sent, uint64_t bytes, uint64_t msgs)
{
    pthread_mutex_lock(&comm->stats_lock);
    if (sent) {
        comm->stats.bytes_sent += bytes;
        comm->stats.msgs_sent += msgs;
    } else {
        comm->stats.bytes_recv += bytes;
        comm->stats.msgs_recv += msgs;
    }
    pthread_mutex_unlock(&comm->stats_lock);
}

void dt_stats_both(dt_comm *comm, uint64_t bytes, uint64_t msgs)
{
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.bytes_sent += bytes;
    comm->stats.msgs_sent += msgs;
    comm->stats.bytes_recv += bytes;
    comm->stats.msgs_recv += msgs;
    pthread_mutex_unlock(&comm->stats_lock);
}

/* ---------------------------------------------------------------- ports */

static dt_job *op_job(const dt_op *op) { return op->comm->rc->job; }

static double wire_time(const dt_job *job, size_t bytes)
{
    return isinf(job->beta) ? 0.0 : (double)bytes / job->beta;
}

static void list_append(dt_msg **head, dt_msg **tail, dt_msg *m)
{
    m->next = NULL;
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

/* Unlinks and returns the first message of the list matching (src, tag). */
static dt_msg *list_take(dt_msg **head, dt_msg **tail, int src, uint64_t tag, int want_recv)
{
    dt_msg *prev = NULL;
    for (dt_msg *m = *head; m; prev = m, m = m->next) {
        int ok = m->tag == tag &&
                 (want_recv ? (m->src == DT_ANY_SOURCE || m->src == src)
                            : (src == DT_ANY_SOURCE || m->src == src));
        if (!ok)
            continue;
        if (prev)
            prev->next = m->next;
        else
            *head = m->next;
        if (*tail == m)
            *tail = prev;
        m->next = NULL;
        return m;
    }
    return NULL;
}

/* Unlinks m if it is still waiting in the list (a cancelled wait). */
static int list_remove(dt_msg **head, dt_msg **tail, dt_msg *m)
{
    dt_msg *prev = NULL;
    for (dt_msg *x = *head; x; prev = x, x = x->next) {
        if (x != m)
            continue;
        if (prev)
            prev->next = x->next;
        else
            *head = x->next;
        if (*tail == x)
            *tail = prev;
        return 1;
    }
    return 0;
}

static dt_msg *msg_new(dt_job *job, int dir, size_t extra)
{
    dt_msg *m = dt_shm_alloc(job, sizeof(dt_msg) + extra);
    if (m)
        m->dir = dir;
    return m;
}

static void finish(dt_job *job, dt_msg *m, int state)
{
    /* read the owner first: once the state is stored, the owner may free m */
    int owner = m->owner_world;
    atomic_store_explicit(&m->state, state, memory_order_release);
    dt_bell_ring(&job->board[owner].bell);
}

dt_result dt_tp_isend(dt_op *op, int peer, const void *buf, size_t bytes, uint64_t tag,
                      dt_msg **out)
{
    dt_comm *c = op->comm;
    dt_job *job = op_job(op);
    dt_port *port = &c->sh->port[peer];
    *out = NULL;
    int eager = bytes <= DT_EAGER_MAX;
    dt_msg *m = msg_new(job, DT_MSG_SEND, eager ? bytes : 0);
    if (!m)
        return DT_ERR_NOMEM;
    m->src = c->rank;
    m->tag = tag;
    m->bytes = bytes;
    m->stamp = op->t;
    /* eager data lies in shared memory, and so may the sender's buffer */
    m->pid = eager ? 0 : dt_owner_pid(job, c->rc->pid, buf, bytes);
    m->owner_world = c->rc->world_rank;
    m->eager = eager;
    m->port_rank = peer;
    m->buf = eager ? (void *)(m + 1) : (void *)buf;
    if (eager && bytes)
        memcpy(m->buf, buf, bytes);
    op->t += wire_time(job, bytes);
    if (op->counted)
        dt_stats_msg(c, 1, bytes, 1);

    dt_shared_lock(&port->lock);
    dt_msg *r = list_take(&port->recvs, &port->recvs_tail, c->rank, tag, 1);
    if (!r)
        list_append(&port->sends, &port->sends_tail, m);
    pthread_mutex_unlock(&port->lock);
    if (!r) {
        *out = eager ? NULL : m; /* an eager message now belongs to the port */
        return DT_OK;
    }
    /* A receive was waiting: fill it. */
    dt_result res = DT_OK;
    r->got_src = c->rank;
    r->got_stamp = m->stamp;
    r->got_bytes = bytes;
    if (r->bytes != bytes) {
        size_t want = r->bytes; /* read before finish: then the receiver may free r */
        finish(job, r, DT_MSG_ERROR);
        res = dt_fail(DT_ERR_MISMATCH, "rank %d sends %zu bytes to rank %d, which receives %zu",
                      c->rank, bytes, peer, want);
    } else {
        res = dt_copy_to(r->pid, c->rc->pid, r->buf, m->buf, bytes);
        finish(job, r, res == DT_OK ? DT_MSG_DONE : DT_MSG_ERROR);
    }
    dt_shm_free(job, m);
    return res;
}

dt_result dt_tp_irecv(dt_op *op, int peer, void *buf, size_t bytes, uint64_t tag, dt_msg **out)
{
    dt_comm *c = op->comm;
    dt_job *job = op_job(op);
    dt_port *port = &c->sh->port[c->rank];
    *out = NULL;
    dt_msg *m = msg_new(job, DT_MSG_RECV, 0);
    if (!m)
        return DT_ERR_NOMEM;
    m->src = peer;
    m->tag = tag;
    m->bytes = bytes;
    m->buf = buf;
    m->port_rank = c->rank;
    m->pid = dt_owner_pid(job, c->rc->pid, buf, bytes);
    m->owner_world = c->rc->world_rank;

    dt_shared_lock(&port->lock);
    dt_msg *s = list_take(&port->sends, &port->sends_tail, peer, tag, 0);
    if (!s)
        list_append(&port->recvs, &port->recvs_tail, m);
    pthread_mutex_unlock(&port->lock);
    *out = m;
    if (!s)
        return DT_OK;
    /* A send was waiting: take its data. */
    m->got_src = s->src;
    m->got_stamp = s->stamp;
    m->got_bytes = s->bytes;
    int state = DT_MSG_DONE;
    if (s->bytes != bytes)
        state = DT_MSG_ERROR;
    else if (dt_copy_from(s->pid, c->rc->pid, buf, s->buf, bytes) != DT_OK)
        state = DT_MSG_ERROR;
    atomic_store_explicit(&m->state, state, memory_order_release);
    if (s->eager)
        dt_shm_free(job, s);
    else
        finish(job, s, state);
    return DT_OK;
}

int dt_tp_done(const dt_msg *m)
{
    return !m || atomic_load_explicit(&m->state, memory_order_acquire) != DT_MSG_PENDING;
}

static int msg_done_cond(const void *arg) { return dt_tp_done(arg); }


/* A wait that failed: take the message out of its port so no one writes
 * into a buffer the caller is about to give up; if a matcher already has
 * it, let that copy finish first. */
static void cancel(dt_op *op, dt_msg *m)
{
    dt_port *port = &op->comm->sh->port[m->port_rank];
    dt_shared_lock(&port->lock);
    int removed = m->dir == DT_MSG_SEND ? list_remove(&port->sends, &port->sends_tail, m)
                                        : list_remove(&port->recvs, &port->recvs_tail, m);
    pthread_mutex_unlock(&port->lock);
    if (!removed) {
        double until = dt_now() + 2.0;
        while (!dt_tp_done(m) && dt_now() < until)
            sched_yield();
        if (!dt_tp_done(m))
            return; /* leak it rather than free what another rank writes */
    }
    dt_shm_free(op_job(op), m);
}

static dt_result wait_msg(dt_op *op, dt_msg *m, int *src)
{
    if (!m)
        return DT_OK;
    dt_job *job = op_job(op);
    dt_result r = dt_wait_until(op, msg_done_cond, m);
    if (r != DT_OK) {
        cancel(op, m);
        return r;
    }
    int state = atomic_load_explicit(&m->state, memory_order_acquire);
    if (m->dir == DT_MSG_RECV) {
        if (state != DT_MSG_DONE) {
            r = dt_fail(DT_ERR_MISMATCH, "rank %d receives %zu bytes from rank %d, which sends %zu",
                        op->comm->rank, m->bytes, m->got_src, m->got_bytes);
        } else {
            double arrive = m->got_stamp + job->alpha + wire_time(job, m->got_bytes);
            if (arrive > op->t)
                op->t = arrive;
            if (op->counted)
                dt_stats_msg(op->comm, 0, m->got_bytes, 1);
            if (src)
                *src = m->got_src;
        }
    } else if (state != DT_MSG_DONE) {
        r = dt_fail(DT_ERR_MISMATCH, "rank %d sends %zu bytes, the receiver expects another size",
                    op->comm->rank, m->bytes);
    }
    dt_shm_free(job, m);
    return r;
}

dt_result dt_tp_wait(dt_op *op, dt_msg *m)
{
    return m ? wait_msg(op, m, NULL) : DT_OK;
}

dt_result dt_tp_wait_src(dt_op *op, dt_msg *m, int *src)
{
    return m ? wait_msg(op, m, src) : DT_OK;
}

dt_result dt_tp_send(dt_op *op, int peer, const void *buf, size_t bytes, uint64_t tag)
{
    dt_msg *m;
    dt_result r = dt_tp_isend(op, peer, buf, bytes, tag, &m);
    if (r != DT_OK)
        return r;
    return wait_msg(op, m, NULL);
}

dt_result dt_tp_recv(dt_op *op, int peer, void *buf, size_t bytes, uint64_t tag)
{
    dt_msg *m;
    dt_result r = dt_tp_irecv(op, peer, buf, bytes, tag, &m);
    if (r != DT_OK)
        return r;
    return wait_msg(op, m, NULL);
}

dt_result dt_tp_sendrecv(dt_op *op, int dest, const void *sbuf, size_t sbytes, int source,
                         void *rbuf, size_t rbytes, uint64_t tag)
{
    dt_msg *s = NULL, *rm = NULL;
    dt_result r = dt_tp_isend(op, dest, sbuf, sbytes, tag, &s);
    if (r != DT_OK)
        return r;
    r = dt_tp_irecv(op, source, rbuf, rbytes, tag, &rm);
    if (r != DT_OK) {
        wait_msg(op, s, NULL);
        return r;
    }
    dt_result r1 = wait_msg(op, rm, NULL);
    dt_result r2 = wait_msg(op, s, NULL);
    return r1 != DT_OK ? r1 : r2;
}
