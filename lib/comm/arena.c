/* arena.c - a small allocator inside one shared mapping (the proc backend's
 * job arena), and the job's shared allocation entry points.
 *
 * Blocks are powers of two from 64 bytes up, each with a 64-byte header
 * giving its size class; freed blocks go to a free list per class, new
 * ones are cut from the end (a bump pointer). One process-shared mutex
 * guards it all: allocations happen when messages are posted or
 * communicators made, not per element.
 *
 *   arena: [dt_arena header][block][block]...........[unused]
 *   block: [dt_blk: class, magic][payload ...]
 */
#include "comm_internal.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_CLASSES 48
#define BLK_MAGIC 0x626c6bU /* "blk" */

typedef struct {
    uint32_t cls;   /* the block spans 64 << cls bytes, header included */
    uint32_t magic;
    void *next;     /* in a free list */
    char pad[48];
} dt_blk;

_Static_assert(sizeof(dt_blk) == 64, "the header keeps payloads 64-byte aligned");

typedef struct {
    pthread_mutex_t lock;
    size_t size;    /* bytes of the whole mapping */
    size_t top;     /* offset of the first never-used byte */
    dt_blk *free_list[ARENA_CLASSES];
} dt_arena;

/* The arena's own header lies at the start of the mapping, after a gap the
 * proc backend uses for its fixed header (magic, version, job pointer). */
#define ARENA_OFFSET 4096

void dt_arena_init(void *base, size_t size);

void dt_arena_init(void *base, size_t size)
{
    dt_arena *a = (dt_arena *)((char *)base + ARENA_OFFSET);
    dt_shared_mutex_init(&a->lock);
    a->size = size;
    a->top = (ARENA_OFFSET + sizeof(dt_arena) + 63) / 64 * 64;
    for (int i = 0; i < ARENA_CLASSES; i++)
        a->free_list[i] = NULL;
}

void *dt_arena_alloc(void *base, size_t bytes)
{
    dt_arena *a = (dt_arena *)((char *)base + ARENA_OFFSET);
    uint32_t cls = 0;
    while (cls < ARENA_CLASSES && ((size_t)64 << cls) < bytes + sizeof(dt_blk))
        cls++;
    if (cls >= ARENA_CLASSES)
        return NULL;
    size_t span = (size_t)64 << cls;
    dt_shared_lock(&a->lock);
    dt_blk *b = a->free_list[cls];
    if (b) {
        a->free_list[cls] = b->next;
    } else if (a->top + span <= a->size) {
        b = (dt_blk *)((char *)base + a->top);
        a->top += span;
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

void *dt_shm_alloc(dt_job *job, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    void *p;
    if (job && job->arena) {
        p = dt_arena_alloc(job->arena, bytes);
        if (!p)
            dt_fail(DT_ERR_NOMEM, "the job's shared arena is full (%zu bytes wanted; "
                    "set DT_ARENA_MB larger)", bytes);
        return p;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    p = aligned_alloc(64, rounded);
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
