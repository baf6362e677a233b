/* mem_internal.h - what mem.c offers untagged.c: charging a rank for
 * memory that dt_mem_alloc did not hand out (DT_MEM_UNTAGGED). */
#ifndef DT_MEM_INTERNAL_H
#define DT_MEM_INTERNAL_H

#include "dt/core.h"

#include <sys/types.h>

/* Charges bytes to the calling thread's rank (its bound context, else the
 * process's default) under DT_MEM_UNTAGGED; returns that context, held
 * until the matching dt_mem_uncharge_untagged (which may come from any
 * thread, after the rank ended). */
dt_mem_ctx *dt_mem_charge_untagged(size_t bytes);
void dt_mem_uncharge_untagged(dt_mem_ctx *ctx, size_t bytes);

/* For a mapping unmapped in part: credits bytes of ctx's charge and keeps
 * the context held; holds ctx once more (the rest of a mapping split in
 * two). Each hold ends with one dt_mem_uncharge_untagged. */
void dt_mem_credit_untagged(dt_mem_ctx *ctx, size_t bytes);
void dt_mem_ctx_hold(dt_mem_ctx *ctx);

/* The functions a lab's objects call in place of the C library's
 * allocator in its test binary (untagged.c; tests/grader/untagged.redefine
 * renames the calls). */
void *dt_untagged_malloc(size_t bytes);
void *dt_untagged_calloc(size_t count, size_t size);
void *dt_untagged_realloc(void *p, size_t bytes);
void *dt_untagged_reallocarray(void *p, size_t count, size_t size);
void dt_untagged_free(void *p);
void *dt_untagged_aligned_alloc(size_t alignment, size_t bytes);
void *dt_untagged_memalign(size_t alignment, size_t bytes);
int dt_untagged_posix_memalign(void **out, size_t alignment, size_t bytes);
void *dt_untagged_valloc(size_t bytes);
void *dt_untagged_pvalloc(size_t bytes);
char *dt_untagged_strdup(const char *s);
char *dt_untagged_strndup(const char *s, size_t n);
void *dt_untagged_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *dt_untagged_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int dt_untagged_munmap(void *addr, size_t len);
void *dt_untagged_mremap(void *old, size_t old_len, size_t new_len, int flags, ...);

#endif /* DT_MEM_INTERNAL_H */
