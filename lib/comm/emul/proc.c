/* proc.c - the proc backend's launcher: ranks are processes over one POSIX
 * shared-memory arena per job (dt_launch with DT_BACKEND_PROC, and
 * dt_launch_program for tools/dtrun).
 *
 * The arena (a segment made by segment.c, which says how it is named and
 * cleaned) starts with a header (magic, version, size, its own address, the
 * job); the job's shared state is allocated inside it. All shared
 * structures hold plain pointers, so every process maps the arena at the
 * same address: forked ranks inherit the mapping, and programs started by
 * dt_launch_program map it at the address the header records (attach.c).
 *
 * The launcher is the parent of every rank: when one dies (a signal, or an
 * exit before its function returned) it marks the rank dead and rings every
 * doorbell, so the others return DT_ERR_PEER_DIED at once. Each rank dies
 * with the launcher (PR_SET_PDEATHSIG). The segment's name is unlinked as
 * soon as no process needs to open it any more (at once for forked ranks;
 * when the last program has attached for dtrun) and at the end of the job.
 */
#include "emul.h"

#include "proc.h"

#include "../shm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where dtrun asks for its arena, so that the programs it starts can map it
 * at the same address: above where a position-independent program and its
 * heap are put (0x5555... plus at most 1 TB of randomization) and below the
 * libraries; inside what ThreadSanitizer and AddressSanitizer leave to the
 * program (their shadow memory takes other ranges), so that the sanitized
 * builds get this address too instead of one among the libraries, where an
 * exec'd rank may already have something mapped. */
#define PROC_ADDR_HINT ((void *)0x566000000000ULL)

/* After forwarding a signal to its ranks, how long the launcher lets them
 * end on their own before it kills them; and how often it looks. */
#define STOP_GRACE_S 5.0
#define FORWARD_POLL_NS 100000000L

/* Exit statuses as the shell reports them: 128 + the signal of a process
 * killed by one; 127 for a program that could not be run. */
#define EXIT_BY_SIGNAL(sig) (128 + (sig))
#define EXIT_CANNOT_RUN 127

/* ---------------------------------------------------------------- the arena */

static dt_result arena_create(const dt_resolved *res, void *hint, dt_proc_header **out)
{
    char name[DT_SEGMENT_NAME_MAX];
    void *base;
    size_t size;
    DT_TRY(dt_segment_create(res, hint, name, &base, &size));
    dt_result r = dt_arena_init(base, size); /* reserves the headers' pages first */
    dt_proc_header *h = base;
    if (r == DT_OK) {
        h->magic = DT_PROC_MAGIC;
        h->version = DT_PROC_VERSION;
        h->nranks = res->o.nranks;
        h->size = size;
        h->base = base;
        h->tracing = res->o.trace_path && res->o.trace_path[0];
        snprintf(h->name, sizeof h->name, "%s", name);
        h->job = dt_arena_alloc(base, sizeof(dt_job));
        h->traces = dt_arena_alloc(base, sizeof(dt_proc_trace) * (size_t)res->o.nranks);
        r = h->job && h->traces ? dt_job_init(h->job, res, base, size) : DT_ERR_NOMEM;
    }
    if (r != DT_OK) { /* the message says why: /dev/shm or the arena is full */
        munmap(base, size);
        shm_unlink(name);
        return r;
    }
    *out = h;
    return DT_OK;
}

static void arena_destroy(dt_proc_header *h)
{
    char name[DT_SEGMENT_NAME_MAX];
    snprintf(name, sizeof name, "%s", h->name);
    munmap(h->base, h->size);
    shm_unlink(name); /* ENOENT when already unlinked: fine */
}

void dt_proc_export_trace(dt_proc_header *h, dt_rank_ctx *rc)
{
    if (!h->tracing || rc->ntrace == 0)
        return;
    dt_trace_ev *ev = dt_arena_alloc(h->base, rc->ntrace * sizeof *ev);
    if (!ev)
        return;
    memcpy(ev, rc->trace, rc->ntrace * sizeof *ev);
    h->traces[rc->world_rank].ev = ev;
    h->traces[rc->world_rank].n = rc->ntrace;
}

static dt_result write_trace(dt_proc_header *h, const char *path, int append, double wall0)
{
    int n = h->nranks;
    dt_rank_ctx *rcs = calloc((size_t)n, sizeof *rcs);
    dt_rank_ctx **ptrs = calloc((size_t)n, sizeof *ptrs);
    dt_result r = DT_ERR_NOMEM;
    if (rcs && ptrs) {
        for (int i = 0; i < n; i++) {
            rcs[i].world_rank = i;
            rcs[i].trace = h->traces[i].ev;
            rcs[i].ntrace = h->traces[i].n;
            ptrs[i] = &rcs[i];
        }
        r = dt_trace_write(path, append, ptrs, n, wall0);
    }
    free(rcs);
    free(ptrs);
    return r;
}

/* ---------------------------------------------------------------- the ranks */

typedef struct {
    dt_rank_fn fn;
    void *arg;
    char *const *argv;     /* dt_launch_program */
    const sigset_t *mask;  /* the caller's signal mask, for a program's rank */
} proc_body;

/* The launcher saw rank r's process end. A rank whose function had not
 * returned (its state still running) failed, whatever its status: exit(0)
 * in the middle of a rank's work is no success. A program that exits 0
 * without dt_finalize is done (it may never have joined the job). */
static void rank_exited(dt_job *job, int r, int status, const proc_body *body, int *exit_code)
{
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_BY_SIGNAL(WTERMSIG(status));
    if (exit_code && *exit_code == 0 && code != 0)
        *exit_code = code;
    int st = atomic_load(&job->board[r].state);
    char msg[160];
    if (WIFSIGNALED(status)) {
        snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else if (st == DT_RANK_RUNNING && body->argv && code == 0) {
        dt_rank_end(job, r, DT_OK, "");
        return;
    } else if (st == DT_RANK_RUNNING && !body->argv) {
        snprintf(msg, sizeof msg, "exited with status %d before its function returned", code);
    } else if (st == DT_RANK_RUNNING || (st == DT_RANK_DONE && code != 0)) {
        snprintf(msg, sizeof msg, "exited with status %d", code);
    } else {
        return; /* it ended through dt_rank_end: its result says it all */
    }
    dt_rank_died(job, r, msg);
}

static void child_main(dt_proc_header *h, const dt_resolved *res, int r, pid_t parent,
                       const proc_body *body)
{
    /* die with the launcher, even if it is killed with SIGKILL; a launcher
     * that died before this line would not be noticed, hence the check */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    /* let siblings read and write our memory (process_vm_*) even where
     * Yama restricts ptrace to descendants */
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    dt_job *job = h->job;
    atomic_store(&job->board[r].pid, (int)getpid());
    if (body->argv) {
        pthread_sigmask(SIG_SETMASK, body->mask, NULL); /* the launcher's waits blocked them */
        char v[32];
        snprintf(v, sizeof v, "%d", r);
        setenv("RANK", v, 1);
        setenv("LOCAL_RANK", v, 1);
        snprintf(v, sizeof v, "%d", h->nranks);
        setenv("WORLD_SIZE", v, 1);
        setenv("LOCAL_WORLD_SIZE", v, 1);
        setenv("DT_SHM", h->name, 1);
        setenv("DT_BACKEND", "proc", 1);
        execvp(body->argv[0], body->argv);
        char msg[200];
        snprintf(msg, sizeof msg, "cannot run '%s': %s", body->argv[0], strerror(errno));
        dt_rank_end(job, r, DT_ERR_IO, msg);
        _exit(EXIT_CANNOT_RUN);
    }
    dt_rank_ctx rc;
    dt_rank_ctx_init(&rc, job, r, res);
    rc.mem = dt_mem_ctx_create();
    dt_result res_r = dt_rank_run(&rc, body->fn, body->arg);
    dt_proc_export_trace(h, &rc);
    fflush(NULL); /* _exit does not: the rank's printf output would be lost */
    _exit(res_r == DT_OK ? 0 : 1);
}

/* ---------------------------------------------------------------- signals */

/* dt_launch_program forwards the signals that stop a job from a terminal or
 * a scheduler (SIGINT, SIGTERM, SIGHUP) to its ranks: while the ranks run
 * they are blocked and taken with sigtimedwait, together with SIGCHLD. The
 * ranks that are still there STOP_GRACE_S after the first one, or when a
 * second one comes, get SIGKILL. Signals the caller ignores (SIG_IGN, as a
 * shell sets SIGINT for a background job) stay ignored. */
typedef struct {
    sigset_t set;   /* what the wait takes */
    sigset_t old;   /* the caller's mask, restored at the end */
    int sig;        /* the first signal forwarded; 0 when none */
    int killed;     /* SIGKILL was sent */
    double kill_at;
} forwarding;

static void forward_begin(forwarding *f)
{
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    memset(f, 0, sizeof *f);
    sigemptyset(&f->set);
    sigaddset(&f->set, SIGCHLD);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction sa;
        if (sigaction(stops[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
            sigaddset(&f->set, stops[i]);
    }
    pthread_sigmask(SIG_BLOCK, &f->set, &f->old);
}

static void signal_ranks(const pid_t *pids, int n, int sig)
{
    for (int r = 0; r < n; r++)
        if (pids[r] > 0) /* not yet reaped: the pid is still the rank's */
            kill(pids[r], sig);
}

/* Waits up to FORWARD_POLL_NS for a signal; forwards a stop signal. */
static void forward_wait(forwarding *f, const pid_t *pids, int n)
{
    struct timespec poll = {0, FORWARD_POLL_NS};
    siginfo_t si;
    int s = sigtimedwait(&f->set, &si, &poll);
    if (s > 0 && s != SIGCHLD) {
        if (!f->sig) {
            f->sig = s;
            f->kill_at = dt_now() + STOP_GRACE_S;
            signal_ranks(pids, n, s);
        } else {
            f->kill_at = 0; /* a second signal: no more patience */
        }
    }
    if (f->sig && !f->killed && dt_now() >= f->kill_at) {
        signal_ranks(pids, n, SIGKILL);
        f->killed = 1;
    }
}

/* Takes what came after the last rank ended, then restores the mask. */
static void forward_end(forwarding *f)
{
    struct timespec zero = {0, 0};
    siginfo_t si;
    int s;
    while ((s = sigtimedwait(&f->set, &si, &zero)) > 0)
        if (s != SIGCHLD && !f->sig)
            f->sig = s;
    pthread_sigmask(SIG_SETMASK, &f->old, NULL);
}

/* ---------------------------------------------------------------- the launcher */

/* Waits until every started rank has ended (pids[r] <= 0 for those that
 * were not started), recording how each ended; with fw, forwarding stop
 * signals meanwhile. */
static void wait_ranks(dt_job *job, pid_t *pids, int n, const proc_body *body, forwarding *fw,
                       int *exit_code)
{
    int alive = 0;
    for (int r = 0; r < n; r++)
        alive += pids[r] > 0;
    while (alive > 0) {
        int status;
        pid_t p = waitpid(-1, &status, fw ? WNOHANG : 0);
        if (p == 0) {
            forward_wait(fw, pids, n);
            continue;
        }
        if (p < 0 && errno == EINTR)
            continue;
        if (p < 0)
            break; /* ECHILD: SIGCHLD is ignored, the ranks were reaped for us */
        for (int r = 0; r < n; r++) {
            if (pids[r] == p) {
                rank_exited(job, r, status, body, exit_code);
                pids[r] = -1;
                alive--;
            }
        }
    }
}

static dt_result run_job(const dt_resolved *res, const proc_body *body, void *hint,
                         int *exit_code)
{
    dt_proc_header *h = NULL;
    DT_TRY(arena_create(res, hint, &h));
    dt_job *job = h->job;
    int n = res->o.nranks;
    if (!body->argv)
        shm_unlink(h->name); /* forked ranks inherit the mapping: no name needed */
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    if (!pids) {
        arena_destroy(h);
        return dt_fail(DT_ERR_NOMEM, "out of memory");
    }
    forwarding fw;
    proc_body b = *body;
    if (body->argv) {
        forward_begin(&fw);
        b.mask = &fw.old;
    }
    double wall0 = dt_now();
    pid_t parent = getpid();
    fflush(NULL); /* or buffered output would be written once per rank */
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            child_main(h, res, r, parent, &b);
        if (pids[r] < 0) {
            char msg[120];
            snprintf(msg, sizeof msg, "cannot fork rank %d: %s", r, strerror(errno));
            dt_rank_end(job, r, DT_ERR_NOMEM, msg);
        } else {
            atomic_store(&job->board[r].pid, (int)pids[r]);
        }
    }
    wait_ranks(job, pids, n, &b, body->argv ? &fw : NULL, exit_code);
    free(pids);
    dt_job_out_return(job, res);
    if (body->argv)
        forward_end(&fw);
    dt_result r = dt_job_result(job);
    char keep[512];
    snprintf(keep, sizeof keep, "%s", dt_last_error());
    if (res->o.trace_path && res->o.trace_path[0]) {
        dt_result tr = write_trace(h, res->o.trace_path, res->o.trace_append, wall0);
        if (r == DT_OK)
            r = tr;
        else
            dt_fail(r, "%s", keep);
    }
    arena_destroy(h);
    if (body->argv && fw.sig) {
        if (exit_code)
            *exit_code = EXIT_BY_SIGNAL(fw.sig);
        r = dt_fail(DT_ERR_INTERRUPTED, "interrupted by signal %d (%s): passed on to the %d "
                    "ranks, which have ended; the job's shared memory is removed", fw.sig,
                    strsignal(fw.sig), n);
    }
    return r;
}

dt_result dt_proc_kill(dt_rank_ctx *rc, dt_result r)
{
    (void)rc;
    raise(SIGKILL); /* the launcher sees the rank die, as a crash */
    return r;
}

dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    proc_body body = {fn, arg, NULL, NULL};
    return run_job(res, &body, NULL, NULL);
}

dt_result dt_launch_program(const dt_launch_opts *opts, char *const argv[], int *exit_code)
{
    if (exit_code)
        *exit_code = 0;
    if (!argv || !argv[0])
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch_program: no program to run");
    dt_resolved res;
    DT_TRY(dt_opts_resolve(opts, &res));
    res.o.backend = DT_BACKEND_PROC;
    if (res.o.out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch_program: out blocks are for dt_launch's "
                       "rank functions; a program's ranks report through their own files");
    proc_body body = {NULL, NULL, argv, NULL};
    int code = 0;
    dt_result r = run_job(&res, &body, PROC_ADDR_HINT, &code);
    if (exit_code)
        *exit_code = code;
    return r;
}
