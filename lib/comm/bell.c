/* bell.c - each rank's doorbell: whoever publishes what a rank may wait
 * for rings it; a waiting rank sleeps on it (futex) once spinning and
 * yielding have not been enough (wait.c). */
#include "bell.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex_op(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE: the word may lie in memory shared by processes. */
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* The caller has just published what the sleeper waits for. The fence
 * orders that store before the load of sleepers; a waiter counts itself a
 * sleeper before its last look at the condition (dt_wait_until), so either
 * it sees the condition or we see it and wake it. No sleeper: no write to
 * the bell's cache line at all. */
void dt_bell_ring(dt_bell *b)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0) {
        atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
        futex_op(&b->seq, FUTEX_WAKE, INT_MAX, NULL);
    }
}

void dt_bell_sleep(dt_bell *b, uint32_t seen, double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    futex_op(&b->seq, FUTEX_WAIT, seen, &ts);
}
