/* fault.h - DT_FAULT: failures injected on purpose (fault.c). Not public. */
#ifndef DT_COMM_FAULT_H
#define DT_COMM_FAULT_H

#include "dt/comm.h"

typedef enum { DT_FAULT_NONE = 0, DT_FAULT_KILL, DT_FAULT_DELAY } dt_fault_type;

typedef struct dt_fault {
    dt_fault_type type;
    int rank;
    int kind;       /* kill: the kind of call (dt_coll_kind) */
    long at;        /* kill: its number on the rank, from 1 */
    double delay_s; /* delay: wall and modeled seconds added to each call */
} dt_fault;

#define DT_MAX_FAULTS 8

/* Parses a DT_FAULT string ("kill:rank=2:at=allreduce#5;delay:rank=1:ms=20")
 * into out[0..*n); DT_ERR_INVALID_ARG naming the bad part. */
dt_result dt_fault_parse(const char *spec, dt_fault *out, int max, int *n);

/* At the start of a call of kind on this rank: sleeps a delay fault, or
 * carries out a kill fault, as the rank's backend kills (backend.h: the
 * proc backend's rank dies by SIGKILL; a thread's or an MPI process's rank
 * is marked failed and gets DT_ERR_FAULT). */
dt_result dt_fault_check(dt_comm *comm, int kind);

/* The kill of a rank that fails rather than dies (the thread and mpi
 * backends' kill entry): the rank ends failed with r and its message
 * (dt_last_error), and its call returns r. */
struct dt_rank_ctx;
dt_result dt_fault_fail_rank(struct dt_rank_ctx *rc, dt_result r);

#endif /* DT_COMM_FAULT_H */
