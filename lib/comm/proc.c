/* proc.c - the proc backend: ranks are processes over one POSIX
 * shared-memory arena per job; and dt_init / dt_finalize / dt_launch_program
 * for programs started by tools/dtrun.
 *
 * The arena (shm_open + mmap, mode 0600, named /dtlab.<uid>.<job>.<n>,
 * <job> = DT_JOB_ID or the launcher's pid) starts with a header (magic,
 * version, size, its own address, the job); the job's shared state is
 * allocated inside it. All shared structures hold plain pointers, so every
 * process maps the arena at the same address: forked ranks inherit the
 * mapping, and programs started by dt_launch_program map it at the address
 * the header records (MAP_FIXED_NOREPLACE).
 *
 * The launcher is the parent of every rank: when one dies (a signal, or an
 * exit before its function returned) it marks the rank dead and rings every
 * doorbell, so the others return DT_ERR_PEER_DIED at once. The segment's
 * name is unlinked as soon as no process needs to open it any more (at once
 * for forked ranks; when the last rank has attached for dtrun), so nothing
 * is left in /dev/shm even when the job fails or is killed.
 */
#include "launch.h"

#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROC_MAGIC 0x64746c6162617261ULL /* "dtlabara" */
#define PROC_VERSION 1
/* Where dtrun asks for its arena, so that the programs it starts can map it
 * at the same address: above where a position-independent program and its
 * heap are put (0x5555... plus at most 1 TB of randomization) and below the
 * libraries; inside what ThreadSanitizer and AddressSanitizer leave to the
 * program (their shadow memory takes other ranges), so that the sanitized
 * builds get this address too instead of one among the libraries, where an
 * exec'd rank may already have something mapped. */
#define PROC_ADDR_HINT ((void *)0x566000000000ULL)

typedef struct {
    dt_trace_ev *ev;
    size_t n;
} proc_trace;

typedef struct {
    uint64_t magic;
    uint32_t version;
    int nranks;
    size_t size;
    void *base;          /* the address every process maps it at */
    dt_job *job;
    _Atomic int attached;
    int tracing;
    char name[64];
    proc_trace *traces;  /* [nranks], in the arena */
} proc_header;

/* ---------------------------------------------------------------- the arena */

static _Atomic int arena_counter;

/* The arena's size: DT_ARENA_MB, by default 1 GB or all of /dev/shm where
 * that is smaller. The mapping is sparse (the arena reserves pages as it
 * uses them, see arena.c): the size is only a limit, but one larger than
 * /dev/shm itself is surely a mistake. */
static dt_result arena_size(int fd, size_t *size)
{
    const char *env = dt_env_str("DT_ARENA_MB", NULL);
    *size = (size_t)dt_env_long("DT_ARENA_MB", 1024) << 20;
    if (*size < (1u << 20))
        *size = 1u << 20;
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) != 0)
        return DT_OK;
    size_t all = (size_t)((uint64_t)vfs.f_blocks * vfs.f_frsize);
    if (all >= *size)
        return DT_OK;
    if (!env) {
        *size = all;
        return DT_OK;
    }
    return dt_fail(DT_ERR_NOMEM, "the job's arena (DT_ARENA_MB=%zu) is larger than all of "
                   "/dev/shm (%zu MB): set DT_ARENA_MB smaller", *size >> 20, all >> 20);
}

static dt_result arena_create(const dt_resolved *res, void *hint, proc_header **out)
{
    char name[64];
    const char *job = dt_env_str("DT_JOB_ID", NULL);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(name, sizeof name, "/dtlab.%u.%.20s.%d", (unsigned)getuid(), job ? job : pid,
             atomic_fetch_add(&arena_counter, 1));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return dt_fail(DT_ERR_IO, "cannot create shared memory %s: %s", name, strerror(errno));
    size_t size;
    dt_result r = arena_size(fd, &size);
    if (r == DT_OK && ftruncate(fd, (off_t)size) != 0)
        r = dt_fail(DT_ERR_NOMEM, "cannot size shared memory %s to %zu bytes: %s", name, size,
                    strerror(errno));
    void *base = MAP_FAILED;
    if (r == DT_OK) {
        base = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED)
            r = dt_fail(DT_ERR_NOMEM, "cannot map shared memory %s: %s", name, strerror(errno));
    }
    close(fd);
    if (r == DT_OK)
        r = dt_arena_init(base, size); /* reserves the headers' pages first */
    proc_header *h = base;
    if (r == DT_OK) {
        h->magic = PROC_MAGIC;
        h->version = PROC_VERSION;
        h->nranks = res->o.nranks;
        h->size = size;
        h->base = base;
        h->tracing = res->o.trace_path && res->o.trace_path[0];
        snprintf(h->name, sizeof h->name, "%s", name);
        h->job = dt_arena_alloc(base, sizeof(dt_job));
        h->traces = dt_arena_alloc(base, sizeof(proc_trace) * (size_t)res->o.nranks);
        r = h->job && h->traces ? dt_job_init(h->job, res, base, size) : DT_ERR_NOMEM;
    }
    if (r != DT_OK) { /* the message says why: /dev/shm or the arena is full */
        if (base != MAP_FAILED)
            munmap(base, size);
        shm_unlink(name);
        return r;
    }
    *out = h;
    return DT_OK;
}

static void arena_destroy(proc_header *h)
{
    char name[64];
    snprintf(name, sizeof name, "%s", h->name);
    munmap(h->base, h->size);
    shm_unlink(name); /* ENOENT when already unlinked: fine */
}

/* A rank copies its trace events into the arena before it ends. */
static void export_trace(proc_header *h, dt_rank_ctx *rc)
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

static dt_result write_trace(proc_header *h, const char *path, double wall0)
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
        r = dt_trace_write(path, ptrs, n, wall0);
    }
    free(rcs);
    free(ptrs);
    return r;
}

/* ---------------------------------------------------------------- the launcher */

/* The launcher saw rank r's process end. */
static void rank_exited(dt_job *job, int r, int status, int *exit_code)
{
    dt_board *b = &job->board[r];
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (exit_code && *exit_code == 0 && code != 0)
        *exit_code = code;
    int st = atomic_load(&b->state);
    char msg[160];
    if (WIFSIGNALED(status)) {
        snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else if (st == DT_RANK_RUNNING && code == 0) {
        dt_rank_end(job, r, DT_OK, ""); /* a program that skipped dt_finalize */
        return;
    } else if (st == DT_RANK_RUNNING || (st == DT_RANK_DONE && code != 0)) {
        snprintf(msg, sizeof msg, "exited with status %d", code);
    } else {
        return; /* it ended through dt_rank_end: its result says it all */
    }
    dt_rank_died(job, r, msg);
}

typedef struct {
    dt_rank_fn fn;
    void *arg;
    char *const *argv; /* dt_launch_program */
} proc_body;

static void child_main(proc_header *h, const dt_resolved *res, int r, pid_t parent,
                       const proc_body *body)
{
    /* die with the launcher; let siblings read and write our memory
     * (process_vm_*) even where Yama restricts ptrace to descendants */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    dt_job *job = h->job;
    atomic_store(&job->board[r].pid, (int)getpid());
    if (body->argv) {
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
        _exit(127);
    }
    dt_rank_ctx rc;
    dt_rank_ctx_init(&rc, job, r, res);
    rc.mem = dt_mem_ctx_create();
    dt_result res_r = dt_rank_run(&rc, body->fn, body->arg);
    export_trace(h, &rc);
    fflush(NULL); /* _exit does not: the rank's printf output would be lost */
    _exit(res_r == DT_OK ? 0 : 1);
}

static dt_result run_job(const dt_resolved *res, const proc_body *body, void *hint,
                         int *exit_code)
{
    proc_header *h = NULL;
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
    double wall0 = dt_now();
    pid_t parent = getpid();
    fflush(NULL); /* or buffered output would be written once per rank */
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            child_main(h, res, r, parent, body);
        if (pids[r] < 0) {
            char msg[120];
            snprintf(msg, sizeof msg, "cannot fork rank %d: %s", r, strerror(errno));
            dt_rank_end(job, r, DT_ERR_NOMEM, msg);
        } else {
            atomic_store(&job->board[r].pid, (int)pids[r]);
        }
    }
    int alive = 0;
    for (int r = 0; r < n; r++)
        alive += pids[r] > 0;
    while (alive > 0) {
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0 && errno == EINTR)
            continue;
        if (p < 0)
            break;
        for (int r = 0; r < n; r++) {
            if (pids[r] == p) {
                rank_exited(job, r, status, exit_code);
                pids[r] = -1;
                alive--;
            }
        }
    }
    free(pids);
    dt_result r = dt_job_result(job);
    char keep[512];
    snprintf(keep, sizeof keep, "%s", dt_last_error());
    if (res->o.trace_path && res->o.trace_path[0]) {
        dt_result tr = write_trace(h, res->o.trace_path, wall0);
        if (r == DT_OK)
            r = tr;
        else
            dt_fail(r, "%s", keep);
    }
    arena_destroy(h);
    return r;
}

dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    proc_body body = {fn, arg, NULL};
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
    proc_body body = {NULL, NULL, argv};
    int code = 0;
    dt_result r = run_job(&res, &body, PROC_ADDR_HINT, &code);
    if (exit_code)
        *exit_code = code;
    return r;
}

/* ---------------------------------------------------------------- dt_init */

/* One job per process: what dt_init joined. */
typedef struct {
    proc_header *h;     /* NULL for a job of one rank run alone */
    dt_job solo_job;
    dt_rank_ctx rc;
    dt_comm *world;
} joined_job;

static joined_job *joined;

static dt_result attach(const char *name, int rank, int size, proc_header **out)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return dt_fail(DT_ERR_IO, "dt_init: cannot open the job's shared memory %s: %s", name,
                       strerror(errno));
    proc_header *peek = mmap(NULL, sizeof *peek, PROT_READ, MAP_SHARED, fd, 0);
    if (peek == MAP_FAILED) {
        close(fd);
        return dt_fail(DT_ERR_IO, "dt_init: cannot map %s: %s", name, strerror(errno));
    }
    int ok = peek->magic == PROC_MAGIC && peek->version == PROC_VERSION;
    void *base = peek->base;
    size_t bytes = peek->size;
    int nranks = peek->nranks;
    munmap(peek, sizeof *peek);
    if (!ok) {
        close(fd);
        return dt_fail(DT_ERR_STATE, "dt_init: %s is not a dtlab job of this version", name);
    }
    if (size != nranks || rank < 0 || rank >= nranks) {
        close(fd);
        return dt_fail(DT_ERR_INVALID_ARG, "dt_init: RANK %d / WORLD_SIZE %d do not match the "
                       "job's %d ranks", rank, size, nranks);
    }
    void *p = mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    close(fd);
    if (p != base) {
        if (p != MAP_FAILED)
            munmap(p, bytes);
        return dt_fail(DT_ERR_NOMEM, "dt_init: cannot map the job's arena at %p", base);
    }
    proc_header *h = base;
    if (atomic_fetch_add(&h->attached, 1) + 1 == h->nranks)
        shm_unlink(name); /* everyone is in: the name is no longer needed */
    *out = h;
    return DT_OK;
}

dt_result dt_init(dt_comm **world)
{
    if (!world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_init: world is NULL");
    *world = NULL;
    if (joined)
        return dt_fail(DT_ERR_STATE, "dt_init: already initialized");
    const char *name = dt_env_str("DT_SHM", NULL);
    int rank = (int)dt_env_long("RANK", 0), size = (int)dt_env_long("WORLD_SIZE", 1);
    if (!name && size > 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_init: WORLD_SIZE is %d but DT_SHM is not set: "
                       "start the program with dtrun", size);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = size;
    o.backend = name ? DT_BACKEND_PROC : DT_BACKEND_THREAD;
    dt_resolved res;
    DT_TRY(dt_opts_resolve(&o, &res));
    joined_job *j = calloc(1, sizeof *j);
    if (!j)
        return dt_fail(DT_ERR_NOMEM, "dt_init: out of memory");
    dt_job *job = &j->solo_job;
    dt_result r = DT_OK;
    if (name) {
        r = attach(name, rank, size, &j->h);
        if (r == DT_OK)
            job = j->h->job;
    } else {
        res.o.nranks = 1;
        r = dt_job_init(job, &res, NULL, 0);
    }
    if (r == DT_OK) {
        dt_rank_ctx_init(&j->rc, job, rank, &res);
        if (j->h)
            j->rc.tracing = j->h->tracing; /* the launcher writes the file */
        j->rc.mem = dt_mem_ctx_create();
        dt_mem_bind(j->rc.mem);
        dt_rank_bind(job, rank);
        r = dt_comm_make(&j->rc, job->world, rank, &j->world);
    }
    if (r != DT_OK) {
        free(j);
        return r;
    }
    dt_log_set_rank(rank);
    joined = j;
    *world = j->world;
    return DT_OK;
}

dt_result dt_finalize(dt_comm *world)
{
    DT_TRY(dt_comm_check(world, "dt_finalize"));
    joined_job *j = joined;
    if (!j || j->world != world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_finalize: not the communicator of dt_init");
    dt_rank_free_comms(&j->rc);
    if (j->h) {
        export_trace(j->h, &j->rc);
        dt_rank_end(j->h->job, j->rc.world_rank, DT_OK, "");
    }
    free(j->rc.trace);
    pthread_mutex_destroy(&j->rc.trace_lock);
    dt_mem_bind(NULL);
    if (j->h)
        munmap(j->h->base, j->h->size);
    else
        dt_shm_free(&j->solo_job, j->solo_job.board);
    dt_mem_ctx_release(j->rc.mem);
    free(j);
    joined = NULL;
    dt_log_set_rank(-1);
    return DT_OK;
}
