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
 * one exchange ahead of the slowest reader. dt_sync_exchange fills in the
 * lane's clock and ports; what the payload says depends on who exchanges
 * it: one member of the union. */
typedef struct dt_rec {
    _Alignas(64) double clock;  /* the lane's modeled clock on entry */
    dt_net_ports ports;         /* and its ports (THE RULE of dt/net.h) */
    uint32_t sig;               /* a collective's signature (coll.h); else a flag */
    _Atomic uint32_t stamp;     /* 1 + the exchange's number */
    union {
        uint64_t words[4];      /* raw payload: the tiny allreduce's values */
        struct {                /* the debug check: the call as issued */
            uint64_t count, seq;
        } call;
        struct {                /* a shortcut: where its buffers are */
            uint64_t sendbuf, recvbuf;
            int32_t send_pid, recv_pid; /* owners (0: the shared arena) */
            uint64_t count;
        } bufs;
        struct {                /* dt_comm_split */
            int64_t color, key;
            int64_t next_id;    /* the id this process would give a new group
                                   (where each member makes its own copy) */
        } split;
        struct {                /* dt_comm_split, second round */
            uint64_t group, failed;
        } made;
        struct {                /* dt_win_allocate (sig 1: rank 0 failed) */
            uint64_t bytes;
            union {
                uint64_t base;  /* the region */
                char why[24];   /* rank 0's failure, the words before ':' */
            } to;
        } win;
    } u;
} dt_rec;

/* Bytes of payload a record carries. */
#define DT_REC_PAYLOAD (sizeof(((dt_rec *)0)->u))

/* The barrier-exchange on the call's lane: publishes mine (with the call's
 * clock and the lane's ports), waits for all, returns the array of records
 * (valid until this lane's next exchange). */
dt_result dt_sync_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all);

/* The records of this exchange (the lane's current parity), with this
 * rank's filled in from mine, the call's clock and the lane's ports. */
dt_rec *dt_sync_records(dt_call *call, const dt_rec *mine);

/* The latest clock of all records (a collective cannot end on any rank
 * before every rank has joined it). */
double dt_sync_max_clock(const dt_rec *all, int n);

#endif /* DT_COMM_SYNC_H */
