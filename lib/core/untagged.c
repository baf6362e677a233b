/* untagged.c - memory a lab's code allocates outside dt_mem_alloc, charged
 * to its rank under DT_MEM_UNTAGGED.
 *
 * The memory tests of the labs compare what a rank holds with the
 * chapter's formula (dt_mem_stats). Memory from malloc carries no tag: a
 * ZeRO stage could keep the whole optimizer state there unseen. So in a
 * lab's test binary the grader renames the allocator calls of the lab's
 * objects to the functions below (tests/grader/lab-objects.sh runs
 * `objcopy --redefine-syms` with tests/grader/untagged.redefine). Renaming
 * the calls, not interposing malloc, leaves libdt, OpenBLAS and the tests
 * uncharged, and AddressSanitizer's and ThreadSanitizer's own malloc in
 * place: each function here calls the C library's (or the sanitizer's)
 * and records the block, its size and the rank it was charged to in a
 * table, so that a free from any thread credits that rank, as
 * dt_mem_free does. A pointer the table does not know (memory of the C
 * library or of libdt that the lab frees) passes through uncharged;
 * realloc of one charges what it grows into.
 *
 * Mappings (mmap, of any kind) are kept as ranges: munmap may unmap part
 * of one, which then splits. munmap and mremap hold the ranges' lock
 * across the system call, so that a mapping another thread gets at the
 * freed address is recorded after the old one is gone. */
#include "mem_internal.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUCKETS 4096 /* of the block table, hashed by address */

/* A block's address is kept hidden (HIDE(p)): a plain copy would make
 * LeakSanitizer take a block the lab never frees for one still in use. */
#define HIDE(p) ((uintptr_t)(p) ^ (uintptr_t)0x5a5a5a5a5a5a5a5aULL)

typedef struct block {
    uintptr_t key; /* HIDE(the block's address) */
    size_t bytes;
    dt_mem_ctx *ctx;
    struct block *next;
} block;

typedef struct range {
    uintptr_t a, n; /* [a, a + n), whole pages */
    dt_mem_ctx *ctx;
    struct range *next;
} range;

/* One lock for the table (a lab allocates rarely: set-up, a few buffers
 * per step), one for the mappings; never both held at once but in fork. */
static block *buckets[BUCKETS];
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static range *ranges;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread holds a lock would leave it held in the
 * child (a proc rank is a fork of the test): fork waits for both. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&blocks_lock);
    pthread_mutex_lock(&ranges_lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&ranges_lock);
    pthread_mutex_unlock(&blocks_lock);
}

__attribute__((constructor)) static void untagged_init(void)
{
    pthread_atfork(fork_prepare, fork_done, fork_done);
}

static size_t bucket_of(uintptr_t key)
{
    return (size_t)(((uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ULL) >> 52) % BUCKETS;
}

/* Puts a record into the table. A stale one at the same address (its
 * block was freed by code that is not renamed) is credited and dropped. */
static void put(block *n)
{
    size_t b = bucket_of(n->key);
    pthread_mutex_lock(&blocks_lock);
    block **at = &buckets[b];
    while (*at && (*at)->key != n->key)
        at = &(*at)->next;
    block *stale = *at;
    if (stale)
        *at = stale->next;
    n->next = buckets[b];
    buckets[b] = n;
    pthread_mutex_unlock(&blocks_lock);
    if (stale) {
        dt_mem_uncharge_untagged(stale->ctx, stale->bytes);
        free(stale);
    }
}

/* Records ptr (bytes long) as charged to the calling rank. */
static void track(void *ptr, size_t bytes)
{
    if (!ptr || bytes == 0)
        return;
    block *n = malloc(sizeof *n);
    if (!n)
        return; /* no room to record it: it stays uncharged */
    *n = (block){HIDE(ptr), bytes, dt_mem_charge_untagged(bytes), NULL};
    put(n);
}

/* Takes p out of the table: 1 and its record in *out, or 0 when unknown. */
static int take(void *ptr, block *out)
{
    uintptr_t key = HIDE(ptr);
    size_t b = bucket_of(key);
    pthread_mutex_lock(&blocks_lock);
    block **at = &buckets[b];
    while (*at && (*at)->key != key)
        at = &(*at)->next;
    block *found = *at;
    if (found)
        *at = found->next;
    pthread_mutex_unlock(&blocks_lock);
    if (!found)
        return 0;
    *out = *found;
    free(found);
    return 1;
}

/* Takes p out of the table and credits its rank. */
static void forget(void *ptr)
{
    block b;
    if (ptr && take(ptr, &b))
        dt_mem_uncharge_untagged(b.ctx, b.bytes);
}

void *dt_untagged_malloc(size_t bytes)
{
    void *p = malloc(bytes);
    track(p, bytes);
    return p;
}

void *dt_untagged_calloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    track(p, count * size); /* no overflow: calloc checked it */
    return p;
}

void dt_untagged_free(void *p)
{
    forget(p); /* first: once freed, another thread may get the address */
    free(p);
}

void *dt_untagged_realloc(void *p, size_t bytes)
{
    if (!p)
        return dt_untagged_malloc(bytes);
    block old;
    int known = take(p, &old);
    void *q = realloc(p, bytes);
    if (!q && bytes > 0) { /* failed: p is untouched, and stays charged */
        block *n = known ? malloc(sizeof *n) : NULL;
        if (n) {
            *n = old;
            put(n);
        } else if (known) {
            dt_mem_uncharge_untagged(old.ctx, old.bytes);
        }
        return NULL;
    }
    if (known)
        dt_mem_uncharge_untagged(old.ctx, old.bytes);
    track(q, bytes);
    return q;
}

void *dt_untagged_reallocarray(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return dt_untagged_realloc(p, count * size);
}

void *dt_untagged_aligned_alloc(size_t alignment, size_t bytes)
{
    void *p = aligned_alloc(alignment, bytes);
    track(p, bytes);
    return p;
}

void *dt_untagged_memalign(size_t alignment, size_t bytes)
{
    void *p = memalign(alignment, bytes);
    track(p, bytes);
    return p;
}

int dt_untagged_posix_memalign(void **out, size_t alignment, size_t bytes)
{
    int r = posix_memalign(out, alignment, bytes);
    if (r == 0)
        track(*out, bytes);
    return r;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t whole_pages(size_t bytes)
{
    size_t pg = page_size();
    return bytes > SIZE_MAX - pg ? bytes : (bytes + pg - 1) / pg * pg;
}

void *dt_untagged_valloc(size_t bytes)
{
    void *p = valloc(bytes);
    track(p, bytes);
    return p;
}

void *dt_untagged_pvalloc(size_t bytes)
{
    void *p = pvalloc(bytes);
    track(p, whole_pages(bytes ? bytes : 1));
    return p;
}

char *dt_untagged_strdup(const char *s)
{
    char *p = strdup(s);
    track(p, p ? strlen(p) + 1 : 0);
    return p;
}

char *dt_untagged_strndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    track(p, p ? strlen(p) + 1 : 0);
    return p;
}

/* ---------------------------------------------------------------- mappings */

/* Credits every recorded page in [a, a + n) and forgets it; a range that
 * sticks out keeps the rest (split in two when the hole is inside it).
 * The caller holds ranges_lock. */
static void unmap_ranges(uintptr_t a, size_t n)
{
    uintptr_t end = a + n;
    for (range **at = &ranges; *at;) {
        range *r = *at;
        uintptr_t lo = r->a > a ? r->a : a, rend = r->a + r->n;
        uintptr_t hi = rend < end ? rend : end;
        if (lo >= hi) {
            at = &r->next;
            continue;
        }
        int left = lo > r->a, right = hi < rend;
        if (!left && !right) {
            dt_mem_uncharge_untagged(r->ctx, hi - lo);
            *at = r->next;
            free(r);
            continue;
        }
        dt_mem_credit_untagged(r->ctx, hi - lo);
        if (left && right) {
            range *rest = malloc(sizeof *rest);
            if (rest) {
                dt_mem_ctx_hold(r->ctx);
                *rest = (range){hi, rend - hi, r->ctx, r->next};
                r->next = rest;
            } else { /* no room to record the rest: it goes uncharged */
                dt_mem_credit_untagged(r->ctx, rend - hi);
            }
            r->n = lo - r->a;
        } else if (left) {
            r->n = lo - r->a;
        } else {
            r->a = hi, r->n = rend - hi;
        }
        at = &r->next;
    }
}

/* Records [a, a + n) as charged to the calling rank. Holds ranges_lock. */
static void map_range(uintptr_t a, size_t n)
{
    range *r = malloc(sizeof *r);
    if (!r)
        return;
    *r = (range){a, n, dt_mem_charge_untagged(n), ranges};
    ranges = r;
}

void *dt_untagged_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    pthread_mutex_lock(&ranges_lock);
    void *p = mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED) {
        unmap_ranges((uintptr_t)p, whole_pages(len)); /* MAP_FIXED replaces what was there */
        map_range((uintptr_t)p, whole_pages(len));
    }
    pthread_mutex_unlock(&ranges_lock);
    return p;
}

void *dt_untagged_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return dt_untagged_mmap(addr, len, prot, flags, fd, off);
}

int dt_untagged_munmap(void *addr, size_t len)
{
    pthread_mutex_lock(&ranges_lock);
    int r = munmap(addr, len);
    if (r == 0)
        unmap_ranges((uintptr_t)addr, whole_pages(len));
    pthread_mutex_unlock(&ranges_lock);
    return r;
}

void *dt_untagged_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *to = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    pthread_mutex_lock(&ranges_lock);
    void *p = (flags & MREMAP_FIXED) ? mremap(old, old_len, new_len, flags, to)
                                     : mremap(old, old_len, new_len, flags);
    if (p != MAP_FAILED) {
        unmap_ranges((uintptr_t)old, whole_pages(old_len));
        unmap_ranges((uintptr_t)p, whole_pages(new_len));
        map_range((uintptr_t)p, whole_pages(new_len));
    }
    pthread_mutex_unlock(&ranges_lock);
    return p;
}
