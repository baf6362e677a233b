/* any.h - dt_recv_any's rule (recv_any.c), shared by the backends: each
 * tells it what it knows of the other ranks, from the boards in shared
 * memory (thread, proc) or from the ranks' answers (mpi_any.c). Not a
 * public header. */
#ifndef DT_COMM_ANY_H
#define DT_COMM_ANY_H

#include "diag.h"

/* What the receiver knows of another rank of the communicator. */
typedef struct {
    int running;         /* 0: it has ended (it sends nothing more) */
    double clock;        /* its clock as published (a lower bound on its next
                            departure); -INFINITY: not known */
    dt_doing_view doing; /* its lane-0 call now; doing.active 0: none, or
                            not known */
} dt_peer_view;

/* The rule of dt/comm.h: given the departure of the first pending message
 * from each rank (depart[s], NAN: none) and what each can still do
 * (view[s]; this rank's own is not read), the rank whose message to take,
 * or -1 while there is none or another rank could still send an earlier
 * one. bytes: the receive's size (above the eager limit a message cannot
 * start before the receive is posted, at the call's clock). */
int dt_any_choose(const dt_call *call, size_t bytes, const double *depart,
                  const dt_peer_view *view);

#endif /* DT_COMM_ANY_H */
