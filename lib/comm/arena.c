/* arena.c - shared-memory primitives: a small allocator inside one shared
 * mapping (the proc backend's job arena), the job's shared allocation entry
 * points, and mutexes that processes share.
 *
 * Blocks are powers of two from 64 bytes up, each with a 64-byte header
 * giving its size class; freed blocks go to a free list per class, new
 * ones are cut from the end (a bump pointer). One process-shared mutex
 * guards it all: allocations happen when messages are posted or
 * communicators made, not per element.
 *
 * The mapping is sparse: /dev/shm gives it pages only when they are first
 * touched, and a touch that finds /dev/shm full kills the process with
 * SIGBUS. So the arena never touches a page it has not reserved first:
 * before the bump pointer moves into new pages they are populated with
 * madvise(MADV_POPULATE_WRITE), which fails with an error instead (on a
 * kernel older than 5.14, which lacks it, the free space of /dev/shm is
 * checked instead). A small job takes a few pages of /dev/shm, not the
 * arena's whole size, so jobs fit in a 64 MB /dev/shm (Docker's default).
 *
 *   arena: [dt_arena header][block][block]...........[unused]
 *   block: [dt_blk: class, magic][payload ...]
 */
#include "shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older C libraries lack the name */
#endif

/* ---------------------------------------------------------------- shared mutexes */

void dt_shared_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &at);
    pthread_mutexattr_destroy(&at);
}

void dt_shared_lock(pthread_mutex_t *m)
{
    /* the owner died inside its (short) critical section: what it guards
     * may be half-updated by a dead rank (a message nobody will match) */
    if (pthread_mutex_lock(m) == EOWNERDEAD)
        pthread_mutex_consistent(m);
}

/* ---------------------------------------------------------------- the arena */

#define ARENA_CLASSES 48
#define BLK_MAGIC 0x626c6bU /* "blk" */
#define BLK_UNIT 64         /* the smallest block, and every payload's alignment: a cache line */

typedef struct {
    uint32_t cls;   /* the block spans BLK_UNIT << cls bytes, header included */
    uint32_t magic;
    void *next;     /* in a free list */
    char pad[BLK_UNIT - 2 * sizeof(uint32_t) - sizeof(void *)];
} dt_blk;

_Static_assert(sizeof(dt_blk) == BLK_UNIT, "the header keeps payloads BLK_UNIT-aligned");

/* x rounded up to a multiple of BLK_UNIT */
static size_t unit_up(size_t x) { return (x + BLK_UNIT - 1) / BLK_UNIT * BLK_UNIT; }

typedef struct {
    pthread_mutex_t lock;
    size_t size;    /* bytes of the whole mapping */
    size_t top;     /* offset of the first never-used byte */
    size_t reserved; /* offset up to which pages are taken from /dev/shm */
    dt_blk *free_list[ARENA_CLASSES];
} dt_arena;

/* The arena's own header lies at the start of the mapping, after a gap the
 * proc backend uses for its fixed header (magic, version, job pointer). */
#define ARENA_OFFSET 4096

static size_t page_up(size_t x)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (x + page - 1) / page * page;
}

/* Takes the pages of [from, to) of the mapping from /dev/shm (from and to
 * are page-aligned), so that touching them later cannot raise SIGBUS.
 * DT_OK, or DT_ERR_NOMEM with a message when /dev/shm is full. */
static dt_result reserve_pages(void *base, size_t from, size_t to)
{
    if (to <= from)
        return DT_OK;
    if (madvise((char *)base + from, to - from, MADV_POPULATE_WRITE) == 0)
        return DT_OK;
    struct statvfs vfs;
    if (errno == EINVAL && statvfs("/dev/shm", &vfs) == 0 &&
        (uint64_t)vfs.f_bavail * vfs.f_frsize >= to - from)
        return DT_OK; /* an old kernel: the space is there, touching is safe */
    return dt_fail(DT_ERR_NOMEM, "/dev/shm is full: the job's shared arena needs %zu KB "
                   "more; free /dev/shm or make it larger", (to - from) >> 10);
}

dt_result dt_arena_init(void *base, size_t size)
{
    size_t top = unit_up(ARENA_OFFSET + sizeof(dt_arena));
    DT_TRY(reserve_pages(base, 0, page_up(top))); /* the headers, before they are written */
    dt_arena *a = (dt_arena *)((char *)base + ARENA_OFFSET);
    dt_shared_mutex_init(&a->lock);
    a->size = size;
    a->top = top;
    a->reserved = page_up(top);
    for (int i = 0; i < ARENA_CLASSES; i++)
        a->free_list[i] = NULL;
    return DT_OK;
}

void *dt_arena_alloc(void *base, size_t bytes)
{
    dt_arena *a = (dt_arena *)((char *)base + ARENA_OFFSET);
    uint32_t cls = 0;
    while (cls < ARENA_CLASSES && ((size_t)BLK_UNIT << cls) < bytes + sizeof(dt_blk))
        cls++;
    if (cls >= ARENA_CLASSES) {
        dt_fail(DT_ERR_NOMEM, "too large: %zu bytes of shared memory asked for", bytes);
        return NULL;
    }
    size_t span = (size_t)BLK_UNIT << cls;
    dt_shared_lock(&a->lock);
    dt_blk *b = a->free_list[cls];
    if (b) {
        a->free_list[cls] = b->next;
    } else if (a->top + span > a->size) {
        dt_fail(DT_ERR_NOMEM, "the job's shared arena is full: %zu bytes wanted; set "
                "DT_ARENA_MB larger", bytes);
    } else if (reserve_pages(base, a->reserved, page_up(a->top + span)) == DT_OK) {
        b = (dt_blk *)((char *)base + a->top);
        a->top += span;
        if (page_up(a->top) > a->reserved)
            a->reserved = page_up(a->top);
    }
    pthread_mutex_unlock(&a->lock);
    if (!b)
        return NULL;
    b->cls = cls;
    b->magic = BLK_MAGIC;
    b->next = NULL;
    memset(b + 1, 0, span - sizeof(dt_blk));
    return b + 1;
}

void dt_arena_free(void *base, void *p)
{
    if (!p)
        return;
    dt_arena *a = (dt_arena *)((char *)base + ARENA_OFFSET);
    dt_blk *b = (dt_blk *)p - 1;
    if (b->magic != BLK_MAGIC)
        return; /* not ours: leave it rather than corrupt the lists */
    b->magic = 0;
    dt_shared_lock(&a->lock);
    b->next = a->free_list[b->cls];
    a->free_list[b->cls] = b;
    pthread_mutex_unlock(&a->lock);
}

int dt_owner_pid(const dt_job *job, int pid, const void *p, size_t bytes)
{
    const char *a = job ? job->arena : NULL, *q = p;
    if (a && q >= a && bytes <= job->arena_bytes && (size_t)(q - a) <= job->arena_bytes - bytes)
        return 0;
    return pid;
}

void *dt_shm_alloc(dt_job *job, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    void *p;
    if (job && job->arena)
        return dt_arena_alloc(job->arena, bytes); /* says why when it fails */
    size_t rounded = unit_up(bytes);
    p = aligned_alloc(BLK_UNIT, rounded);
    if (!p) {
        dt_fail(DT_ERR_NOMEM, "out of memory for %zu bytes of shared state", bytes);
        return NULL;
    }
    memset(p, 0, rounded);
    return p;
}

void dt_shm_free(dt_job *job, void *p)
{
    if (job && job->arena)
        dt_arena_free(job->arena, p);
    else
        free(p);
}
