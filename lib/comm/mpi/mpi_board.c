/* mpi_board.c - the other ranks' boards, across processes. On the thread
 * and proc backends every rank reads the others' boards in shared memory
 * (what each is doing, its clock, whether it has ended): dt_recv_any's rule,
 * the mismatch check of a waiting collective and the timeout's report use
 * them. On mpi a rank's board is in its own process: a rank asks
 * (DT_MPI_TAG_ASK on the launch's control communicator) and the other
 * answers (DT_MPI_TAG_TELL) with its board as it is then, and with how many
 * user messages it has posted to the asker on the communicator the
 * question names (by id, the same in every member). A rank answers
 * whenever it waits (each millisecond of dt_mpi_poll), posts a user
 * message, is in dt_recv_any, or has ended (until the launch's end); one
 * that computes answers at its next call. One question is out per rank at
 * a time; a question and its answer carry the launch's epoch, and one left
 * over from an earlier launch is dropped. */
#include "mpi_backend.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t epoch, seq;
    int32_t comm_id, pad;
} ask_msg;

typedef struct {
    uint32_t epoch, pad;
    dt_mpi_answer a;
} tell_msg;

struct dt_mpi_peer {
    int has;        /* an answer has come */
    dt_mpi_answer last;
    int waiting;    /* a question is out */
};

/* User messages posted on one communicator, per destination (world rank). */
struct dt_mpi_sent {
    struct dt_mpi_sent *next;
    int comm_id;
    uint32_t to[];
};

/* A question or an answer on its way (MPI_Isend keeps the buffer). */
struct dt_mpi_outbox {
    struct dt_mpi_outbox *next;
    MPI_Request req;
    union {
        ask_msg ask;
        tell_msg tell;
    } u;
};

int dt_mpi_board_open(dt_mpi_launch *l)
{
    l->peer = calloc((size_t)l->procs, sizeof *l->peer);
    return l->peer != NULL;
}

/* ---------------------------------------------------------------- sending */

/* Frees what has left (under l->lock). */
static void reap(dt_mpi_launch *l)
{
    for (struct dt_mpi_outbox **p = &l->outbox; *p;) {
        int flag = 0;
        MPI_Test(&(*p)->req, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            p = &(*p)->next;
            continue;
        }
        struct dt_mpi_outbox *done = *p;
        *p = done->next;
        free(done);
    }
}

/* Posts msg (under l->lock). */
static int post(dt_mpi_launch *l, int dest, int tag, const void *msg, size_t bytes)
{
    struct dt_mpi_outbox *o = calloc(1, sizeof *o);
    if (!o)
        return 0; /* the asker waits for an answer that does not come: its timeout says */
    memcpy(&o->u, msg, bytes);
    MPI_Isend(&o->u, (int)bytes, MPI_BYTE, dest, tag, l->ctl, &o->req);
    o->next = l->outbox;
    l->outbox = o;
    reap(l);
    return 1;
}

void dt_mpi_count_send(dt_mpi_launch *l, const dt_comm *comm, int peer)
{
    pthread_mutex_lock(&l->lock);
    struct dt_mpi_sent *s = l->sent;
    while (s && s->comm_id != comm->sh->id)
        s = s->next;
    if (!s && (s = calloc(1, sizeof *s + sizeof(uint32_t) * (size_t)l->procs))) {
        s->comm_id = comm->sh->id;
        s->next = l->sent;
        l->sent = s;
    }
    if (s)
        s->to[comm->sh->world[peer]]++;
    pthread_mutex_unlock(&l->lock);
}

/* Under l->lock. */
static uint32_t sent_to(dt_mpi_launch *l, int comm_id, int dest)
{
    const struct dt_mpi_sent *s = l->sent;
    while (s && s->comm_id != comm_id)
        s = s->next;
    return s && dest >= 0 && dest < l->procs ? s->to[dest] : 0;
}

/* The next message with tag that came on the control communicator, into
 * buf (bytes long, as every such message is): 1 and *src its sender, or 0. */
static int next_msg(dt_mpi_launch *l, int tag, void *buf, int bytes, int *src)
{
    int flag = 0;
    MPI_Message m;
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, tag, l->ctl, &flag, &m, &st);
    if (!flag)
        return 0;
    MPI_Mrecv(buf, bytes, MPI_BYTE, &m, MPI_STATUS_IGNORE);
    *src = st.MPI_SOURCE;
    return 1;
}

/* ---------------------------------------------------------------- answering */

void dt_mpi_serve(dt_mpi_launch *l)
{
    ask_msg q;
    int src;
    while (next_msg(l, DT_MPI_TAG_ASK, &q, sizeof q, &src)) {
        if (q.epoch != l->epoch)
            continue;
        tell_msg t = {l->epoch, 0, {DT_RANK_DONE, INFINITY, {{0}}, q.comm_id, 0, q.seq}};
        pthread_mutex_lock(&l->lock);
        const dt_board *b = l->board; /* NULL once this process's rank has ended */
        if (b) {
            t.a.state = atomic_load_explicit(&b->state, memory_order_acquire);
            t.a.clock = dt_clock_published(b);
            for (int lane = 0; lane < DT_LANES; lane++)
                dt_doing_read(&b->doing[lane], &t.a.doing[lane]);
        }
        t.a.sent = sent_to(l, q.comm_id, src); /* read last: it counts them all */
        post(l, src, DT_MPI_TAG_TELL, &t, sizeof t);
        pthread_mutex_unlock(&l->lock);
    }
}

/* ---------------------------------------------------------------- asking */

void dt_mpi_take_answers(dt_mpi_launch *l)
{
    tell_msg t;
    int src;
    while (next_msg(l, DT_MPI_TAG_TELL, &t, sizeof t, &src)) {
        pthread_mutex_lock(&l->lock);
        struct dt_mpi_peer *p = &l->peer[src];
        if (t.epoch == l->epoch && p->waiting) {
            p->waiting = 0;
            l->unanswered--;
            p->last = t.a;
            p->has = 1;
        }
        pthread_mutex_unlock(&l->lock);
    }
}

void dt_mpi_ask(dt_mpi_launch *l, int world, int comm_id)
{
    pthread_mutex_lock(&l->lock);
    struct dt_mpi_peer *p = &l->peer[world];
    ask_msg q = {l->epoch, l->asked + 1, comm_id, 0};
    if (!p->waiting && world != l->me && post(l, world, DT_MPI_TAG_ASK, &q, sizeof q)) {
        l->asked++;
        p->waiting = 1;
        l->unanswered++;
    }
    pthread_mutex_unlock(&l->lock);
}

int dt_mpi_answer_of(dt_mpi_launch *l, int world, dt_mpi_answer *out)
{
    pthread_mutex_lock(&l->lock);
    const struct dt_mpi_peer *p = &l->peer[world];
    int has = p->has;
    if (has)
        *out = p->last;
    pthread_mutex_unlock(&l->lock);
    return has;
}

uint32_t dt_mpi_asked(dt_mpi_launch *l)
{
    pthread_mutex_lock(&l->lock);
    uint32_t n = l->asked;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* ---------------------------------------------------------------- the end */

int dt_mpi_board_finish(dt_mpi_launch *l, double timeout_s)
{
    double deadline = dt_now() + timeout_s;
    for (;;) {
        dt_mpi_serve(l);
        dt_mpi_take_answers(l);
        pthread_mutex_lock(&l->lock);
        int left = l->unanswered;
        pthread_mutex_unlock(&l->lock);
        if (left == 0)
            return 1;
        if (dt_now() >= deadline)
            return 0;
        sched_yield();
    }
}

void dt_mpi_board_free(dt_mpi_launch *l)
{
    double until = dt_now() + 1.0; /* what is left was taken: it completes */
    pthread_mutex_lock(&l->lock);
    while (l->outbox && dt_now() < until)
        reap(l);
    for (struct dt_mpi_outbox *o = l->outbox, *next; o; o = next) {
        next = o->next;
        MPI_Request_free(&o->req); /* its buffer is left to MPI */
    }
    l->outbox = NULL;
    pthread_mutex_unlock(&l->lock);
    for (struct dt_mpi_sent *s = l->sent, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    l->sent = NULL;
    free(l->peer);
    l->peer = NULL;
}
