/* replay.h - what a shortcut costs (replay.c): the messages of the network
 * algorithm it stands for, replayed for every rank through THE RULE of
 * dt/net.h, from every rank's entry state in the barrier-exchange's
 * records. The same functions, in the same order, with the same link for
 * each pair of members (dt_comm_pair_link), as port.c applies when the
 * algorithm runs over messages: the same clock, ports and stats. Not a
 * public header. */
#ifndef DT_COMM_REPLAY_H
#define DT_COMM_REPLAY_H

#include "../sync.h"

/* One rank's timeline (its clock and ports) and its traffic, after the
 * replay. */
typedef struct {
    double t;
    dt_net_ports ports;
    uint64_t bytes_sent, bytes_recv, msgs_sent, msgs_recv;
} dt_replay;

/* The ring's phases of dt_ring_rs / dt_ring_ag (algo_blocks.c) on count
 * elements of es bytes in n chunks: reduce-scatter (with the combine after
 * each step), allgather, or both (allreduce), on c's n members. out: rank
 * me's result. */
typedef enum { DT_REPLAY_RS = 1, DT_REPLAY_AG = 2, DT_REPLAY_RS_AG = 3 } dt_replay_phases;
dt_result dt_replay_ring(const dt_comm *c, const dt_rec *all, int n, int me, size_t count,
                         size_t es, dt_replay_phases phases, dt_replay *out);

/* The last recursive-doubling replay of a lane (its inputs and rank me's
 * result): a replay with the same inputs (every rank entered in the same
 * state: a loop of tiny allreduces where no modeled time passes, on the
 * network "none" without compute regions) has the same result, taken from
 * here. */
#define DT_REPLAY_MEMO_N 8
typedef struct dt_replay_memo {
    int n;              /* 0: empty */
    size_t bytes;
    dt_net link;
    double clock[DT_REPLAY_MEMO_N];
    dt_net_ports ports[DT_REPLAY_MEMO_N];
    dt_replay out;
} dt_replay_memo;

/* Recursive doubling of allreduce_rd (algo_coll.c) on bytes; memo (may be
 * NULL): the lane's last one, consulted and kept up to date. */
dt_result dt_replay_rd(const dt_comm *c, const dt_rec *all, int n, int me, size_t bytes,
                       dt_replay *out, dt_replay_memo *memo);

#endif /* DT_COMM_REPLAY_H */
