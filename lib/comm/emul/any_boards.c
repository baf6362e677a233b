/* any_boards.c - dt_recv_any's choice in the emulation: the rule of any.h
 * (recv_any.c) over the departures of the messages pending in this rank's
 * port and what the other ranks' boards say they do, read again until the
 * rule decides. */
#include "emul.h"

#include "../any.h"
#include "wait.h"

#include <stdlib.h>

/* How often a waiting dt_recv_any looks at the boards again when it sleeps:
 * a rank that publishes its clock rings no doorbell. */
#define ANY_POLL_S 200e-6

typedef struct {
    dt_call *call;
    size_t bytes;
    dt_peer_view *view; /* [size] */
    double *depart;     /* [size] */
    int chosen;
} any_arg;

/* What each other rank can still do, from its board. */
static void read_boards(any_arg *a)
{
    const dt_comm *c = a->call->comm;
    const dt_job *job = c->rc->job;
    for (int s = 0; s < c->size; s++) {
        const dt_board *b = &job->board[c->sh->world[s]];
        dt_doing_read(&b->doing[0], &a->view[s].doing);
        a->view[s].running =
            atomic_load_explicit(&b->state, memory_order_acquire) == DT_RANK_RUNNING;
        a->view[s].clock = dt_clock_published(b);
    }
}

/* The dt_wait_until condition: 1 once the message to take is known. The
 * boards are read before the port: a message sent before a rank published
 * its state is in the port by then. */
static int decided(const void *arg)
{
    any_arg *a = (any_arg *)arg;
    read_boards(a);
    dt_port_pending(a->call, 0, a->depart);
    a->chosen = dt_any_choose(a->call, a->bytes, a->depart, a->view);
    return a->chosen >= 0;
}

dt_result dt_boards_choose_any(dt_call *call, size_t bytes, int *src)
{
    int n = call->comm->size;
    any_arg a = {call, bytes, malloc(sizeof(dt_peer_view) * (size_t)n),
                 malloc(sizeof(double) * (size_t)n), -1};
    dt_result r = DT_OK;
    if (!a.view || !a.depart)
        r = dt_fail(DT_ERR_NOMEM, "dt_recv_any: out of memory for %d ranks", n);
    if (r == DT_OK) {
        double poll = call->poll_s;
        call->poll_s = ANY_POLL_S;
        r = dt_wait_until(call, decided, &a);
        call->poll_s = poll;
    }
    *src = a.chosen;
    free(a.view);
    free(a.depart);
    return r;
}
