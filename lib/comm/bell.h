/* bell.h - doorbells (bell.c). Not a public header. */
#ifndef DT_COMM_BELL_H
#define DT_COMM_BELL_H

#include "job.h"

/* Wakes the threads of a rank that sleep on its doorbell. The caller has
 * just published what they wait for. */
void dt_bell_ring(dt_bell *b);

/* Sleeps on the bell for at most seconds, unless its sequence number is no
 * longer seen (a ring came in between). The caller counts itself among the
 * bell's sleepers around the call (wait.c). */
void dt_bell_sleep(dt_bell *b, uint32_t seen, double seconds);

#endif /* DT_COMM_BELL_H */
