/* attach.c - the emulation's dt_init and dt_finalize (join.c picks them):
 * a program started by tools/dtrun joins its job by mapping the job's
 * segment (named by DT_SHM) at the address the launcher recorded in its
 * header; run alone, it is a job of one rank.
 *
 * The segment is checked before anything in it is read: its name must be
 * a segment's (segment.c), it must belong to this user with mode 0600, and
 * be at least a header long (fstat), so that a short or foreign file is an
 * error that names it rather than a SIGBUS or a job run inside someone
 * else's memory; then the header's magic, version, size and rank count.
 */
#include "emul.h"

#include "proc.h"

#include "../shm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One job per process: what dt_init joined. */
typedef struct {
    dt_proc_header *h;  /* NULL for a job of one rank run alone */
    dt_job solo_job;
    dt_rank_ctx rc;
    dt_comm *world;
} joined_job;

static joined_job *joined;

/* What attach needs of the header, read from a mapping of it alone. */
typedef struct {
    void *base;
    size_t size;
    int nranks;
} header_view;

static dt_result read_header(const char *name, int fd, size_t file_bytes, header_view *out)
{
    const dt_proc_header *h = mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return dt_fail(DT_ERR_IO, "dt_init: cannot map %s: %s", name, strerror(errno));
    int ours = h->magic == DT_PROC_MAGIC && h->version == DT_PROC_VERSION;
    out->base = h->base;
    out->size = h->size;
    out->nranks = h->nranks;
    munmap((void *)h, sizeof *h);
    long page = sysconf(_SC_PAGESIZE);
    if (!ours)
        return dt_fail(DT_ERR_STATE, "dt_init: %s is not a dtlab job of this version", name);
    if (out->size != file_bytes || (uintptr_t)out->base % (uintptr_t)page != 0 ||
        out->nranks < 1 || out->nranks > DT_MAX_RANKS)
        return dt_fail(DT_ERR_STATE, "dt_init: the header of %s is damaged (size %zu of a "
                       "%zu-byte segment, %d ranks)", name, out->size, file_bytes, out->nranks);
    return DT_OK;
}

static dt_result attach(const char *name, int rank, int size, dt_proc_header **out)
{
    int fd;
    size_t bytes;
    DT_TRY(dt_segment_open(name, sizeof(dt_proc_header), &fd, &bytes));
    header_view head = {0};
    dt_result r = read_header(name, fd, bytes, &head);
    if (r == DT_OK && (size != head.nranks || rank < 0 || rank >= head.nranks))
        r = dt_fail(DT_ERR_INVALID_ARG, "dt_init: RANK %d / WORLD_SIZE %d do not match the "
                    "job's %d ranks", rank, size, head.nranks);
    void *p = MAP_FAILED;
    if (r == DT_OK)
        p = mmap(head.base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
                 0);
    close(fd);
    if (r != DT_OK)
        return r;
    if (p != head.base) {
        if (p != MAP_FAILED)
            munmap(p, bytes);
        return dt_fail(DT_ERR_NOMEM, "dt_init: cannot map the job's arena at %p", head.base);
    }
    dt_proc_header *h = head.base;
    if (atomic_fetch_add(&h->attached, 1) + 1 == h->nranks)
        shm_unlink(name); /* everyone is in: the name is no longer needed */
    *out = h;
    return DT_OK;
}

/* RANK and WORLD_SIZE, as dtrun (or torchrun) sets them. */
static dt_result read_rank(int *rank, int *size)
{
    long r, n;
    DT_TRY(dt_env_long("WORLD_SIZE", 1, 1, DT_MAX_RANKS, &n));
    DT_TRY(dt_env_long("RANK", 0, 0, n - 1, &r));
    *rank = (int)r;
    *size = (int)n;
    return DT_OK;
}

int dt_proc_started(void) { return dt_env_str("DT_SHM", NULL) != NULL; }

dt_result dt_emul_attach(dt_comm **world)
{
    const char *name = dt_env_str("DT_SHM", NULL);
    int rank, size;
    DT_TRY(read_rank(&rank, &size));
    if (!name && size > 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_init: WORLD_SIZE is %d but DT_SHM is not set: "
                       "start the program with dtrun", size);
    dt_launch_opts o;
    DT_TRY(dt_launch_opts_init(&o));
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

dt_result dt_emul_detach(dt_comm *world)
{
    joined_job *j = joined;
    if (!j || j->world != world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_finalize: not the communicator of dt_init");
    dt_rank_free_comms(&j->rc);
    if (j->h) {
        dt_proc_export_trace(j->h, &j->rc);
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
