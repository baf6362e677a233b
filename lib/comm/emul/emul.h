/* emul.h - the emulation backends, thread and proc: ranks are threads of
 * one process or forked processes, and everything they share (the job,
 * its boards, the groups' ports and records, windows) lies in the job's
 * shared memory (the heap, or the proc backend's arena mapped at one
 * address in every process). What fills their tables (emulation.c):
 *
 *   port.c        messages: each member's port, matching, copies (copy.c)
 *   stamps.c      the barrier-exchange: stamped records, polled
 *   wait.c        the wait policy: spin, yield, sleep on the doorbell
 *   any_boards.c  dt_recv_any's choice, from the ports and the boards
 *   shortcut.c    AUTO's shortcuts over shared memory, priced by replay.c
 *   group.c       a group's ports, dt_comm_split, windows
 *   thread.c      the thread backend's launch
 *   proc.c        the proc backend's launch (and dtrun's), in a segment
 *                 (segment.c)
 *   attach.c      dt_init and dt_finalize: dtrun's programs, or one rank
 *
 * Not a public header. */
#ifndef DT_COMM_EMUL_H
#define DT_COMM_EMUL_H

#include "../backend.h"

#include <pthread.h>

/* ---------------------------------------------------------------- ports (port.c) */

/* A member's inbox: two FIFO lists, sends that no receive has matched yet
 * and receives that no send has matched yet. A group's ports, one per
 * member, are its backend part (dt_comm_shared.be), in shared memory. */
typedef struct dt_port {
    pthread_mutex_t lock; /* guards both lists */
    dt_msg *sends, *sends_tail;
    dt_msg *recvs, *recvs_tail;
} dt_port;

static inline dt_port *dt_port_of(const dt_comm_shared *sh, int member)
{
    return (dt_port *)sh->be + member;
}

void dt_port_init(dt_port *port);
/* Frees what a port still holds when its group goes (eager sends nobody
 * received). */
void dt_port_destroy(dt_job *job, dt_port *port);

/* The entries isend ... cancel of the table (backend.h, port.h). */
dt_result dt_port_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out);
dt_result dt_port_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out);
dt_result dt_port_wait(dt_call *call, dt_xfer *x, int *src);
int dt_port_done(const dt_xfer *x);
void dt_port_cancel(dt_call *call, dt_xfer *x);

/* The departure of the first unmatched send with tag from each source in
 * the caller's port (depart[0 .. size): NAN where there is none). */
void dt_port_pending(dt_call *call, uint64_t tag, double *depart);

/* ---------------------------------------------------------------- the rest of the table */

/* The barrier-exchange of sync.h (stamps.c). */
dt_result dt_stamps_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all);

/* dt_recv_any's source, by the rule of any.h read from the boards and the
 * port (any_boards.c). */
dt_result dt_boards_choose_any(dt_call *call, size_t bytes, int *src);

/* Groups and windows (group.c): the entries of backend.h. */
dt_result dt_emul_group_init(dt_job *job, dt_comm_shared *sh);
void dt_emul_group_free(dt_job *job, dt_comm_shared *sh);
dt_result dt_emul_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                        dt_comm **out);
dt_result dt_emul_win_allocate(dt_comm *comm, size_t bytes, void **base, void **handle);
void dt_emul_win_free(dt_comm *comm, void *base, void *handle, int synced);

/* The launches: ranks as threads of this process (thread.c), as forked
 * processes over one segment (proc.c). */
dt_result dt_launch_threads(const dt_resolved *res, dt_rank_fn fn, void *arg);
dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg);
/* DT_FAULT's kill in the proc backend: SIGKILL, as a crash (proc.c). */
dt_result dt_proc_kill(dt_rank_ctx *rc, dt_result r);

/* dt_init and dt_finalize (attach.c): a program dtrun started (DT_SHM set:
 * dt_proc_started) joins its segment's job; one run alone is a job of
 * one rank. */
int dt_proc_started(void);
dt_result dt_emul_attach(dt_comm **world);
dt_result dt_emul_detach(dt_comm *world);

#endif /* DT_COMM_EMUL_H */
