/* sync.h - the barrier-exchange (sync.c): a barrier that also exchanges one
 * small record per rank. Collectives use it for the debug check, the
 * shared-memory shortcuts (buffer addresses, tiny values), splits and
 * windows. Not a public header. */
#ifndef DT_COMM_SYNC_H
#define DT_COMM_SYNC_H

#include "handle.h"

/* One rank's record: a cache line of its own, written by the rank, then
 * stamped with the exchange's number; the others poll the stamps. Records
 * are double-buffered by the parity of the exchange: a rank can be at most
 * one exchange ahead of the slowest reader. What a record says depends on
 * who exchanges it: one member of the union. */
typedef struct dt_rec {
    _Alignas(64) double clock;  /* the lane's modeled clock on entry */
    _Atomic uint32_t stamp;     /* 1 + the exchange's number */
    union {
        uint64_t words[6];      /* raw payload: the tiny allreduce's values */
        struct {                /* the debug check: the call as issued */
            uint64_t sig, count, seq;
        } call;
        struct {                /* a shortcut: where its buffers are */
            uint64_t sendbuf, recvbuf;
            int64_t send_pid, recv_pid; /* owners (0: the shared arena) */
        } bufs;
        struct {                /* dt_comm_split */
            int64_t color, key;
        } split;
        struct {                /* dt_comm_split, second round */
            uint64_t group, failed;
        } made;
        struct {                /* dt_win_allocate */
            uint64_t bytes, base;
            char why[32];       /* rank 0's failure, when base is 0 */
        } win;
    } u;
} dt_rec;

/* The barrier-exchange on the call's lane: publishes mine, waits for all,
 * returns the array of records (valid until this lane's next exchange). */
dt_result dt_sync_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all);

/* The latest clock of all records (a collective cannot end on any rank
 * before every rank has joined it). */
double dt_sync_max_clock(const dt_rec *all, int n);

#endif /* DT_COMM_SYNC_H */
