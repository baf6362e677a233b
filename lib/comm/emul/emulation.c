/* emulation.c - the tables of the emulation backends (backend.h): thread
 * and proc run every call the same way, over the shared memory of the job
 * (ports, stamps, boards), and differ in how their ranks are started and
 * how DT_FAULT kills one. */
#include "emul.h"

#include "shortcut.h"
#include "wait.h"

#include "../fault.h"

/* The collectives: AUTO's shortcut over shared memory where it took one,
 * else libdt's algorithm over the ports' messages. */
static dt_result emul_collective(dt_call *call, const dt_coll_args *a)
{
    return a->shortcut ? dt_shortcut_collective(call, a) : dt_alg_collective(call, a);
}

#define EMUL_OPS(name_, launch_, started_, kill_)                                         \
    {                                                                                     \
        .name = name_, .launch = launch_, .started = started_, .attach = dt_emul_attach, \
        .detach = dt_emul_detach, .kill = kill_, .group_init = dt_emul_group_init,       \
        .group_free = dt_emul_group_free, .split = dt_emul_split,                         \
        .win_allocate = dt_emul_win_allocate, .win_free = dt_emul_win_free,              \
        .collective = emul_collective, .shortcut = dt_shortcut_applies,                  \
        .isend = dt_port_isend, .irecv = dt_port_irecv, .wait = dt_port_wait,            \
        .done = dt_port_done, .cancel = dt_port_cancel,                                  \
        .choose_any = dt_boards_choose_any, .exchange = dt_stamps_exchange,              \
        .wait_until = dt_wait_until,                                                     \
    }

/* Ranks are threads of the launching process; run alone, a program is a
 * job of one rank (attach.c). */
const dt_backend_ops dt_thread_ops =
    EMUL_OPS("thread", dt_launch_threads, NULL, dt_fault_fail_rank);

/* Ranks are forked processes, or dtrun's programs (DT_SHM), over one
 * segment; DT_FAULT's kill is a SIGKILL, as a crash. */
const dt_backend_ops dt_proc_ops = EMUL_OPS("proc", dt_launch_proc, dt_proc_started, dt_proc_kill);
