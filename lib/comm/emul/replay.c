/* replay.c - the modeled time of a shortcut, replayed.
 *
 * A shortcut moves its data through shared memory, but charges what its
 * network algorithm would have cost: every rank holds the entry state
 * (clock, ports) of every rank from the barrier-exchange, so it can run
 * that algorithm's messages for all ranks, step by step, through THE RULE
 * of dt/net.h - the very functions port.c calls - and take its own exit
 * state. Each step mirrors one dt_msg_sendrecv of the reference (the
 * receive posted and the send departing at the rank's clock; the arrival,
 * then the send's completion, then the combine), so the figures are the
 * same bits as the reference's. Each message is priced by its pair's link
 * (dt_comm_pair_link), as port.c prices it. The cost is O(n) per step for
 * each rank. */
#include "replay.h"

#include "../algo.h"

#include <stdlib.h>

typedef struct {
    double t, posted, depart;
    dt_net_ports ports;
} lane;

/* The ranks' timelines, from the records: in small (a stack array, for the
 * tiny allreduce's sake) when they fit. */
#define SMALL_N 64
static lane *lanes_new(const dt_rec *all, int n, lane *small)
{
    lane *l = n <= SMALL_N ? small : malloc(sizeof *l * (size_t)n);
    if (!l) {
        dt_fail(DT_ERR_NOMEM, "no memory to replay %d ranks' messages", n);
        return NULL;
    }
    for (int r = 0; r < n; r++)
        l[r] = (lane){all[r].clock, 0, 0, all[r].ports};
    return l;
}

static void lanes_free(lane *l, const lane *small)
{
    if (l != small)
        free(l);
}

static void advance(double *t, double x)
{
    if (x > *t)
        *t = x;
}

/* A message of bytes from s to r posted at their clocks: first every
 * post (post_send), then every wait (take). */
static void post_send(const dt_net *link, lane *s, double bytes)
{
    s->depart = dt_net_depart(link, &s->ports, s->t, bytes);
}

/* The link from member a to member b of c. */
static const dt_net *pair(const dt_comm *c, int a, int b) { return dt_comm_pair_link(c, a, b); }

static void post_recv(lane *r)
{
    r->posted = r->t;
}

/* The receiver waits for the message from s, then the sender s2 (its own
 * message's receiver d) waits for its send. */
static void take(const dt_net *link, lane *r, const lane *s, double bytes)
{
    advance(&r->t, dt_net_arrive(link, &r->ports, s->depart, r->posted, bytes));
}

static void sent(const dt_net *link, lane *s, const lane *d, double bytes)
{
    advance(&s->t, dt_net_sent(link, s->depart, d->posted, bytes));
}

static void tally(dt_replay *out, int send, double bytes)
{
    if (send) {
        out->bytes_sent += (uint64_t)bytes;
        out->msgs_sent++;
    } else {
        out->bytes_recv += (uint64_t)bytes;
        out->msgs_recv++;
    }
}

static void finish(const lane *l, dt_replay *out)
{
    out->t = l->t;
    out->ports = l->ports;
}

/* One ring step: rank r sends chunk sc(r) to its right, receives chunk
 * sc(r-1) from its left (dt_msg_sendrecv), then combines it when rs. */
static void ring_step(const dt_comm *c, lane *l, int n, int me, size_t count, size_t es,
                      int shift, int rs, dt_replay *out)
{
    double b[DT_MAX_RANKS]; /* the chunk rank r sends at this step */
    for (int r = 0; r < n; r++) {
        b[r] = (double)(dt_chunk_len(count, n, (r - shift + 2 * n) % n) * es);
        post_recv(&l[r]);
        post_send(pair(c, r, (r + 1) % n), &l[r], b[r]);
    }
    for (int r = 0; r < n; r++) {
        int left = (r - 1 + n) % n, right = (r + 1) % n;
        take(pair(c, left, r), &l[r], &l[left], b[left]);
        sent(pair(c, r, right), &l[r], &l[right], b[r]);
        if (rs)
            l[r].t += dt_net_reduce_time(&c->link, b[left]);
    }
    tally(out, 1, b[me]);
    tally(out, 0, b[(me - 1 + n) % n]);
}

dt_result dt_replay_ring(const dt_comm *c, const dt_rec *all, int n, int me, size_t count,
                         size_t es, dt_replay_phases phases, dt_replay *out)
{
    lane small[SMALL_N], *l = lanes_new(all, n, small);
    if (!l)
        return DT_ERR_NOMEM;
    *out = (dt_replay){0};
    if (phases & DT_REPLAY_RS) /* dt_ring_rs: step s sends chunk r-s-1 */
        for (int s = 0; s < n - 1; s++)
            ring_step(c, l, n, me, count, es, s + 1, 1, out);
    if (phases & DT_REPLAY_AG) /* dt_ring_ag: step s sends chunk r-s */
        for (int s = 0; s < n - 1; s++)
            ring_step(c, l, n, me, count, es, s, 0, out);
    finish(&l[me], out);
    lanes_free(l, small);
    return DT_OK;
}

/* allreduce_rd: with p the largest power of two <= n and rem = n - p, the
 * first 2 rem ranks fold (even sends to odd, which combines), the p
 * remaining exchange with the partner at distance 1, 2, 4, ... and combine,
 * and the odd ones hand the result back. Rank of v: v < rem ? 2v+1 : v+rem. */
static int memo_hit(const dt_replay_memo *m, const dt_net *link, const dt_rec *all, int n,
                    size_t bytes)
{
    if (!m || m->n != n || m->bytes != bytes || m->link.alpha != link->alpha ||
        m->link.beta != link->beta || m->link.gamma != link->gamma)
        return 0;
    for (int r = 0; r < n; r++)
        if (m->clock[r] != all[r].clock || m->ports[r].send_free != all[r].ports.send_free ||
            m->ports[r].recv_free != all[r].ports.recv_free)
            return 0;
    return 1;
}

static void memo_keep(dt_replay_memo *m, const dt_net *link, const dt_rec *all, int n,
                      size_t bytes, const dt_replay *out)
{
    if (!m || n > DT_REPLAY_MEMO_N)
        return;
    m->n = n;
    m->bytes = bytes;
    m->link = *link;
    for (int r = 0; r < n; r++) {
        m->clock[r] = all[r].clock;
        m->ports[r] = all[r].ports;
    }
    m->out = *out;
}

dt_result dt_replay_rd(const dt_comm *c, const dt_rec *all, int n, int me, size_t bytes,
                       dt_replay *out, dt_replay_memo *memo)
{
    const dt_net *link = &c->link; /* the memo's key; each message pays its pair's */
    if (memo_hit(memo, link, all, n, bytes)) {
        *out = memo->out;
        return DT_OK;
    }
    lane small[SMALL_N], *l = lanes_new(all, n, small);
    if (!l)
        return DT_ERR_NOMEM;
    *out = (dt_replay){0};
    double b = (double)bytes, g = dt_net_reduce_time(&c->link, b);
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    int rem = n - p;
    for (int e = 0; e < 2 * rem; e += 2) { /* fold: e sends, e + 1 combines */
        const dt_net *link = pair(c, e, e + 1);
        post_send(link, &l[e], b);
        post_recv(&l[e + 1]);
        sent(link, &l[e], &l[e + 1], b);
        take(link, &l[e + 1], &l[e], b);
        l[e + 1].t += g;
        if (me == e || me == e + 1)
            tally(out, me == e, b);
    }
    for (int mask = 1; mask < p; mask <<= 1) {
        for (int v = 0; v < p; v++) {
            int r = v < rem ? 2 * v + 1 : v + rem, pv = v ^ mask;
            int peer = pv < rem ? 2 * pv + 1 : pv + rem;
            post_recv(&l[r]);
            post_send(pair(c, r, peer), &l[r], b);
        }
        for (int v = 0; v < p; v++) {
            int r = v < rem ? 2 * v + 1 : v + rem, pv = v ^ mask;
            int peer = pv < rem ? 2 * pv + 1 : pv + rem;
            take(pair(c, peer, r), &l[r], &l[peer], b);
            sent(pair(c, r, peer), &l[r], &l[peer], b);
            l[r].t += g;
            if (r == me) {
                tally(out, 1, b);
                tally(out, 0, b);
            }
        }
    }
    for (int e = 0; e < 2 * rem; e += 2) { /* unfold: e + 1 sends, e receives */
        const dt_net *link = pair(c, e + 1, e);
        post_send(link, &l[e + 1], b);
        post_recv(&l[e]);
        sent(link, &l[e + 1], &l[e], b);
        take(link, &l[e], &l[e + 1], b);
        if (me == e || me == e + 1)
            tally(out, me == e + 1, b);
    }
    finish(&l[me], out);
    lanes_free(l, small);
    memo_keep(memo, link, all, n, bytes, out);
    return DT_OK;
}
