/* mem.c - tagged allocations with current and peak bytes per rank.
 *
 * Each block carries a 64-byte header that records its size, its tag and the
 * accounting context it was charged to, so that any thread may free it and
 * the right rank is credited. Counters are atomics: a rank's figures may be
 * read by another thread (a test, the launcher) while the rank allocates.
 * A context is reference-counted by its live blocks, so that a block freed
 * after its rank has ended never touches freed memory.
 *
 * A block is its header and its bytes rounded up to 64: a write a little
 * past the end would land in the rounding, unseen by AddressSanitizer,
 * whose red zone starts after it (chapter 08's unpadded shard is such a
 * write). Under AddressSanitizer the header and the rounding are poisoned
 * (ASAN_POISON_MEMORY_REGION), and the header is read only by functions
 * the sanitizer does not instrument. */
#include "mem_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_ASAN 1
#endif
#endif
#ifdef MEM_ASAN
#include <sanitizer/asan_interface.h>
#define MEM_NO_ASAN __attribute__((no_sanitize_address))
#else
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define MEM_NO_ASAN
#endif

#define MEM_ALIGN 64
#define MEM_MAGIC 0x6474616c6c6f63ULL /* "dtalloc" */

struct dt_mem_ctx {
    _Atomic size_t current[DT_MEM_NUM_TAGS];
    _Atomic size_t peak[DT_MEM_NUM_TAGS];
    _Atomic size_t current_total;
    _Atomic size_t peak_total;
    _Atomic long refs; /* 1 for the owner while not released, + live blocks */
    int is_default;
};

typedef struct {
    uint64_t magic;
    size_t bytes;
    dt_mem_ctx *ctx;
    int tag;
    char pad[MEM_ALIGN - sizeof(uint64_t) - sizeof(size_t) - sizeof(void *) - sizeof(int)];
} mem_header;

_Static_assert(sizeof(mem_header) == MEM_ALIGN, "header keeps the block aligned");

static dt_mem_ctx default_ctx = {.refs = 1, .is_default = 1};
static _Thread_local dt_mem_ctx *bound_ctx;

static const char *const tag_names[DT_MEM_NUM_TAGS] = {
    "param", "grad", "optim", "act", "comm", "other", "untagged"};

const char *dt_mem_tag_name(dt_mem_tag tag)
{
    return ((int)tag >= 0 && tag < DT_MEM_NUM_TAGS) ? tag_names[tag] : "?";
}

static dt_mem_ctx *current_ctx(void) { return bound_ctx ? bound_ctx : &default_ctx; }

static void raise_peak(_Atomic size_t *peak, size_t value)
{
    size_t old = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > old &&
           !atomic_compare_exchange_weak_explicit(peak, &old, value, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static void ctx_unref(dt_mem_ctx *ctx)
{
    if (atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) == 1 && !ctx->is_default)
        free(ctx);
}

/* Charges bytes to the calling rank's context under tag; the context is
 * referenced until the matching uncharge. */
static dt_mem_ctx *charge(dt_mem_tag tag, size_t bytes)
{
    dt_mem_ctx *ctx = current_ctx();
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    size_t cur = atomic_fetch_add_explicit(&ctx->current[tag], bytes, memory_order_relaxed) + bytes;
    raise_peak(&ctx->peak[tag], cur);
    size_t tot = atomic_fetch_add_explicit(&ctx->current_total, bytes, memory_order_relaxed) + bytes;
    raise_peak(&ctx->peak_total, tot);
    return ctx;
}

static void uncharge(dt_mem_ctx *ctx, dt_mem_tag tag, size_t bytes)
{
    atomic_fetch_sub_explicit(&ctx->current[tag], bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&ctx->current_total, bytes, memory_order_relaxed);
    ctx_unref(ctx);
}

dt_mem_ctx *dt_mem_charge_untagged(size_t bytes) { return charge(DT_MEM_UNTAGGED, bytes); }

void dt_mem_uncharge_untagged(dt_mem_ctx *ctx, size_t bytes)
{
    uncharge(ctx, DT_MEM_UNTAGGED, bytes);
}

void dt_mem_credit_untagged(dt_mem_ctx *ctx, size_t bytes)
{
    atomic_fetch_sub_explicit(&ctx->current[DT_MEM_UNTAGGED], bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&ctx->current_total, bytes, memory_order_relaxed);
}

void dt_mem_ctx_hold(dt_mem_ctx *ctx)
{
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
}

static size_t block_total(size_t bytes)
{
    return (bytes + sizeof(mem_header) + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN;
}

void *dt_mem_alloc(dt_mem_tag tag, size_t bytes)
{
    if ((int)tag < 0 || tag >= DT_MEM_NUM_TAGS) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_mem_alloc: unknown tag %d", (int)tag);
        return NULL;
    }
    if (tag == DT_MEM_UNTAGGED) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_mem_alloc: DT_MEM_UNTAGGED counts memory allocated "
                "outside dt_mem_alloc; give the block its tag");
        return NULL;
    }
    if (bytes == 0 || bytes > SIZE_MAX - 2 * MEM_ALIGN) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_mem_alloc: bad size %zu bytes", bytes);
        return NULL;
    }
    size_t total = block_total(bytes);
    mem_header *h = aligned_alloc(MEM_ALIGN, total);
    if (!h) {
        dt_fail(DT_ERR_NOMEM, "dt_mem_alloc: out of memory for %zu bytes (%s)", bytes,
                tag_names[tag]);
        return NULL;
    }
    memset(h, 0, total);
    h->magic = MEM_MAGIC;
    h->bytes = bytes;
    h->tag = (int)tag;
    h->ctx = charge(tag, bytes);
    ASAN_POISON_MEMORY_REGION(h, sizeof *h);
    ASAN_POISON_MEMORY_REGION((char *)(h + 1) + bytes, total - sizeof *h - bytes);
    return h + 1;
}

/* The header of a block, read where AddressSanitizer keeps it poisoned
 * (field by field: a copy of the whole could become an instrumented memcpy). */
MEM_NO_ASAN static mem_header read_header(const void *p)
{
    const volatile mem_header *h = (const volatile mem_header *)p - 1;
    mem_header out;
    out.magic = h->magic;
    out.bytes = h->bytes;
    out.ctx = h->ctx;
    out.tag = h->tag;
    return out;
}

void dt_mem_free(void *p)
{
    if (!p)
        return;
    mem_header info = read_header(p), *h = (mem_header *)p - 1;
    if (info.magic != MEM_MAGIC)
        abort(); /* not a block of dt_mem_alloc, or freed twice: a bug to stop at */
    ASAN_UNPOISON_MEMORY_REGION(h, block_total(info.bytes));
    h->magic = 0;
    free(h);
    uncharge(info.ctx, (dt_mem_tag)info.tag, info.bytes);
}

size_t dt_mem_size(const void *p)
{
    return p ? read_header(p).bytes : 0;
}

void dt_mem_stats_get(dt_mem_stats *out)
{
    dt_mem_ctx *ctx = current_ctx();
    for (int t = 0; t < DT_MEM_NUM_TAGS; t++) {
        out->current[t] = atomic_load_explicit(&ctx->current[t], memory_order_relaxed);
        out->peak[t] = atomic_load_explicit(&ctx->peak[t], memory_order_relaxed);
    }
    out->current_total = atomic_load_explicit(&ctx->current_total, memory_order_relaxed);
    out->peak_total = atomic_load_explicit(&ctx->peak_total, memory_order_relaxed);
}

void dt_mem_reset_peak(void)
{
    dt_mem_ctx *ctx = current_ctx();
    for (int t = 0; t < DT_MEM_NUM_TAGS; t++)
        atomic_store_explicit(&ctx->peak[t],
                              atomic_load_explicit(&ctx->current[t], memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(&ctx->peak_total,
                          atomic_load_explicit(&ctx->current_total, memory_order_relaxed),
                          memory_order_relaxed);
}

dt_mem_ctx *dt_mem_ctx_create(void)
{
    dt_mem_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        dt_fail(DT_ERR_NOMEM, "dt_mem_ctx_create: out of memory");
        return NULL;
    }
    atomic_init(&ctx->refs, 1);
    return ctx;
}

void dt_mem_ctx_release(dt_mem_ctx *ctx)
{
    if (ctx && !ctx->is_default)
        ctx_unref(ctx);
}

dt_mem_ctx *dt_mem_bind(dt_mem_ctx *ctx)
{
    dt_mem_ctx *prev = bound_ctx;
    bound_ctx = (ctx && !ctx->is_default) ? ctx : NULL;
    return prev;
}
