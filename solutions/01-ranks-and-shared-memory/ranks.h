/* ranks.h - lab 01: ranks over shared memory. A barrier built from C11
 * atomics in a shared window, broadcast (linear and binomial tree) and a
 * ring pass over point-to-point messages.
 * Read chapters/01-ranks-and-shared-memory.md first.
 *
 * Rules of the lab (the tests check them through dt_comm_stats): your code
 * may use dt_send, dt_recv and dt_sendrecv, the window of lab_barrier_init,
 * and C11 atomics. It may NOT call the library's collectives (dt_barrier,
 * dt_broadcast, dt_allreduce, ...): the stats of every collective kind must
 * stay at 0 calls. */
#ifndef LAB_RANKS_H
#define LAB_RANKS_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dt/comm.h"
#include "dt/core.h"

/* ---------------------------------------------------------------- task 1: barrier */

/* The part of the barrier that every rank sees: it lies in a window
 * (dt_win_allocate), so that all ranks read and write the same bytes. The
 * two words sit on separate cache lines: the arrivals hammer `arrived`
 * while the waiters read `sense`. */
typedef struct {
    alignas(64) atomic_int arrived; /* ranks that reached this episode */
    alignas(64) atomic_int sense;   /* flipped by the last rank to arrive */
} lab_barrier_shared;

/* One rank's handle on the barrier. */
typedef struct {
    lab_barrier_shared *shared; /* in the window: the same on every rank */
    dt_win *win;
    int nranks;
    int my_sense;     /* this rank's private sense (0 before the first wait) */
    double timeout_s; /* a wait longer than this returns DT_ERR_TIMEOUT */
    /* The waiting policy lab_pause follows (lab_barrier_init sets the
     * defaults below; run.c's --spin and --yield change them): */
    uint64_t spin_polls;  /* polls of a wait spent spinning ... */
    uint64_t yield_polls; /* ... then polls spent yielding, then naps */
    /* How this rank waited, summed over its waits (for run.c; your
     * lab_pause keeps them): */
    uint64_t polls;  /* reads of `sense` that found the episode not over */
    uint64_t yields; /* sched_yield() calls */
    uint64_t sleeps; /* naps of a few microseconds */
} lab_barrier;

#define LAB_SPIN_POLLS 20
#define LAB_YIELD_POLLS 2000

/* Collective over comm: allocates the shared part in a window and fills b
 * (spin_polls = LAB_SPIN_POLLS, yield_polls = LAB_YIELD_POLLS).
 * timeout_s > 0. (Given.) */
dt_result lab_barrier_init(lab_barrier *b, dt_comm *comm, double timeout_s);

/* Collective: frees the window. (Given.) */
dt_result lab_barrier_destroy(lab_barrier *b);

/* Task 1a: what a waiting rank does after its poll number `poll` (0, 1, 2,
 * ... within one wait) found the episode not over yet. For the first
 * b->spin_polls polls spin (lab_cpu_relax); for the next b->yield_polls
 * give the core away (sched_yield); after that nap (dt_sleep of a few
 * tens of microseconds). Counts what it did in b->polls, b->yields,
 * b->sleeps. Chapter section 4 says why. */
void lab_pause(lab_barrier *b, uint64_t poll);

/* Task 1b: returns once every rank of the barrier has entered it (a
 * sense-reversing barrier: section 4). Reusable: rank r may call it again at
 * once. Everything a rank wrote before its wait is visible to every rank
 * after theirs (acquire/release). DT_ERR_TIMEOUT (saying how many ranks had
 * arrived) after b->timeout_s seconds; DT_ERR_INVALID_ARG for a NULL or
 * uninitialised b. */
dt_result lab_barrier_wait(lab_barrier *b);

/* A hint to the core that this thread is spinning (x86: the pause
 * instruction), so that it wastes less power and lets the other hardware
 * thread of the core run. (Given.) */
static inline void lab_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* ---------------------------------------------------------------- task 2: broadcast */

/* Both broadcasts copy count elements of dtype from the root's buf to buf on
 * every other rank (in place: the root's buf is the source). Every rank of
 * comm calls them with the same count, dtype and root. A root outside
 * [0, size) returns DT_ERR_INVALID_ARG on every rank, without sending
 * anything. Errors of dt_send / dt_recv are passed on. */

/* Task 2a: the root sends the whole buffer to every other rank in turn. */
dt_result lab_bcast_linear(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm);

/* Task 2b: a binomial tree (section 6): in round k the ranks that already
 * hold the data each send it to one rank that does not, so the number of
 * holders doubles and ceil(log2 N) rounds suffice. Each rank receives once
 * (the root never) and sends to the largest subtree first. */
dt_result lab_bcast_tree(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm);

/* ---------------------------------------------------------------- task 3: ring pass */

/* Task 3: every rank r sends sendbuf (count elements) to rank (r+1) mod N
 * and receives into recvbuf what rank (r-1) mod N sent, without deadlock
 * for any N and any count (section 7): sends above 16 KiB wait for their
 * receiver. sendbuf and recvbuf must not overlap. One rank copies sendbuf
 * to recvbuf. */
dt_result lab_ring_pass(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        dt_comm *comm);

#endif /* LAB_RANKS_H */
