/* dt/core.h - the bottom layer of libdt: results and errors, logging,
 * a counter-based RNG, timers, environment knobs, dtypes with their
 * half-precision conversions, and memory accounting by tag.
 *
 * Conventions (every layer follows them):
 *  - Every call that can fail returns a dt_result. The library never exits
 *    and never prints on error: it records a message for the calling rank
 *    (dt_last_error) and returns. A call refused for its arguments changes
 *    nothing. A call that fails on the way (out of memory, a timeout, a
 *    rank that died) writes nothing outside its outputs, which may then
 *    hold partial results; every object stays valid to free.
 *  - Per-rank state is thread-local or lives in a rank's context, never in
 *    process-global mutable variables: with the thread backend, ranks are
 *    threads of one process.
 */
#ifndef DT_CORE_H
#define DT_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- results */

typedef enum {
    DT_OK = 0,
    DT_ERR_INVALID_ARG,     /* a NULL buffer, a size or index out of range, ... */
    DT_ERR_NOMEM,           /* an allocation failed */
    DT_ERR_NOT_IMPLEMENTED, /* a lab stub the student has not filled in yet */
    DT_ERR_TIMEOUT,         /* a blocking wait ran past its deadline */
    DT_ERR_MISMATCH,        /* ranks called different collectives / counts / roots */
    DT_ERR_PEER_DIED,       /* another rank of the job died */
    DT_ERR_IO,              /* a file could not be read or written */
    DT_ERR_STATE,           /* the object is in the wrong state (e.g. used after free) */
    DT_ERR_UNSUPPORTED,     /* valid but not supported by this backend or build */
    DT_ERR_INTERNAL,        /* a bug in libdt */
    DT_ERR_FAULT,           /* a failure injected on purpose (DT_FAULT) */
    DT_ERR_INTERRUPTED,     /* the launcher got SIGINT/SIGTERM/SIGHUP and stopped the job */
    DT_NUM_RESULTS
} dt_result;

/* The name of a result, e.g. "DT_ERR_TIMEOUT". Never NULL. */
const char *dt_strerror(dt_result r);

/* The message recorded by the last failing call on this rank (thread), or ""
 * when none. The string stays valid until the next failing call. */
const char *dt_last_error(void);

/* Records a formatted message for this rank and returns r, so that a failure
 * reads: return dt_fail(DT_ERR_INVALID_ARG, "count %zu too large", count); */
dt_result dt_fail(dt_result r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears this rank's last error message. */
void dt_clear_error(void);

/* Used by DT_CHECK: prefixes the message with where the failing call was. */
void dt_check_trace(const char *file, int line, const char *expr, dt_result r);

/* Evaluates expr; on failure, records file:line and returns the result. */
#define DT_CHECK(expr)                                                       \
    do {                                                                     \
        dt_result dt_check_r_ = (expr);                                      \
        if (dt_check_r_ != DT_OK) {                                          \
            dt_check_trace(__FILE__, __LINE__, #expr, dt_check_r_);          \
            return dt_check_r_;                                              \
        }                                                                    \
    } while (0)

/* ---------------------------------------------------------------- logging */

/* The rank used as the prefix of this thread's log lines (-1: none). The
 * launcher sets it on each rank. */
void dt_log_set_rank(int rank);
int dt_log_rank(void);

/* Writes "[rank R] message\n" to stderr as one write, so that lines of
 * different ranks do not interleave. Only programs and tests call it; the
 * library itself stays silent unless DT_VERBOSE=1. */
void dt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------- RNG */

/* A counter-based generator: value i of stream (seed, stream) is a pure
 * function of (seed, stream, i), so every rank and every backend sees the
 * same numbers for the same seed and rank, whatever the order of calls. */
uint64_t dt_hash64(uint64_t seed, uint64_t stream, uint64_t i);

typedef struct {
    uint64_t seed, stream, counter;
} dt_rng;

void dt_rng_init(dt_rng *rng, uint64_t seed, uint64_t stream);
uint64_t dt_rng_u64(dt_rng *rng);
float dt_rng_uniform(dt_rng *rng);   /* in [0, 1) */
float dt_rng_normal(dt_rng *rng);    /* mean 0, standard deviation 1 */
uint32_t dt_rng_below(dt_rng *rng, uint32_t n); /* in [0, n), n > 0 */
/* n calls of dt_rng_normal, in order, into out: the same bits. A stream
 * filled from its start is kept (process-wide, up to 256 MiB in all), so
 * that ranks and jobs that make the same model draw its values once. */
void dt_rng_fill_normal(dt_rng *rng, float *out, size_t n);

/* ---------------------------------------------------------------- time */

double dt_now(void);         /* seconds, monotonic clock */
void dt_sleep(double seconds);
/* Seconds of CPU time used by the calling thread (CLOCK_THREAD_CPUTIME_ID):
 * what a piece of work cost itself, on a machine where the wall clock also
 * counts other programs. */
double dt_thread_cpu(void);

/* Sorts v[0 .. n) in ascending order (NaNs compare equal to everything:
 * keep them out). */
void dt_sort_doubles(double *v, size_t n);
/* The median of v[0 .. n): the middle value, or the mean of the two middle
 * ones for an even n; NaN for n == 0. Sorts v in place. */
double dt_median(double *v, size_t n);

/* ---------------------------------------------------------------- env */

/* Numbers from a command line, checked: the whole text must be a number
 * within [min, max] (a whole number for dt_parse_long; for dt_parse_bytes a
 * whole number of bytes).
 * Sizes, one convention for every tool and program (nccl-tests' -b 8M):
 * K, M, G, T mean 2^10, 2^20, 2^30, 2^40 bytes, Ki, Mi, Gi, Ti the same
 * (lower case k, m, g, t too), and a decimal size is written as a plain
 * number: 256M = 256Mi = 268435456, 1e6 = 1000000, 1.5K = 1536.
 * Otherwise DT_ERR_INVALID_ARG with a message that names what (the option),
 * the text and what was expected, e.g.
 *     "-n 'abc': expected a whole number from 1 to 1024";
 * *out is then left as it was. */
dt_result dt_parse_long(const char *what, const char *text, long min, long max, long *out);
dt_result dt_parse_double(const char *what, const char *text, double min, double max,
                          double *out);
dt_result dt_parse_bytes(const char *what, const char *text, size_t min, size_t max,
                         size_t *out);

/* Variables of the environment. Unset or empty: *out = dflt and DT_OK.
 * Otherwise as dt_parse_long / dt_parse_double, the message naming the
 * variable: "DT_TIMEOUT='abc': expected a number from 0.001 to 1e+06".
 * There is no silent fallback: a value that does not parse is an error. */
dt_result dt_env_long(const char *name, long dflt, long min, long max, long *out);
dt_result dt_env_double(const char *name, double dflt, double min, double max, double *out);
/* The value of a variable, or dflt when it is unset or empty. */
const char *dt_env_str(const char *name, const char *dflt);

/* ---------------------------------------------------------------- dtypes */

typedef enum {
    DT_F32 = 0,
    DT_F16,
    DT_BF16,
    DT_I32,
    DT_I8,
    DT_U8,
    DT_NUM_DTYPES
} dt_dtype;

/* Bytes of one element; 0 for an unknown dtype. */
size_t dt_dtype_size(dt_dtype t);
const char *dt_dtype_name(dt_dtype t); /* "f32", ...; "?" when unknown */
int dt_dtype_valid(dt_dtype t);

/* IEEE half and bfloat16, round to nearest even; inf and nan are kept
 * (a nan stays a nan), overflow to half gives inf. */
uint16_t dt_f32_to_f16(float f);
float dt_f16_to_f32(uint16_t h);
uint16_t dt_f32_to_bf16(float f);
float dt_bf16_to_f32(uint16_t b);

/* ---------------------------------------------------------------- memory */

/* Every buffer of the library is allocated with a tag, and each rank keeps
 * current and peak bytes per tag: the ZeRO and FSDP chapters are graded on
 * these figures. DT_MEM_UNTAGGED is no tag of dt_mem_alloc: it counts what
 * a lab's code allocates past it (malloc, calloc, realloc, aligned
 * allocations, strdup, mmap) in a lab's test binary, where the grader
 * charges those calls to the rank too (lib/core/untagged.c); elsewhere it
 * stays 0. A rank's whole memory is every tag, untagged included. */
typedef enum {
    DT_MEM_PARAM = 0,
    DT_MEM_GRAD,
    DT_MEM_OPTIM,
    DT_MEM_ACT,
    DT_MEM_COMM,
    DT_MEM_OTHER,
    DT_MEM_UNTAGGED,
    DT_MEM_NUM_TAGS
} dt_mem_tag;

const char *dt_mem_tag_name(dt_mem_tag tag); /* "param", "grad", ..., "untagged" */

/* Zeroed memory aligned to 64 bytes, charged to the calling rank under tag.
 * Returns NULL (and records why) when bytes is 0, the tag is unknown or
 * DT_MEM_UNTAGGED, or memory is short. The block is rounded up to 64
 * bytes; under AddressSanitizer the rounding and the block's header are
 * poisoned, so that a write past either end is reported. */
void *dt_mem_alloc(dt_mem_tag tag, size_t bytes);

/* Frees a block of dt_mem_alloc and credits the rank it was charged to,
 * whichever thread frees it. NULL is ignored. */
void dt_mem_free(void *p);

/* The bytes a block was allocated with (0 for NULL). */
size_t dt_mem_size(const void *p);

typedef struct {
    size_t current[DT_MEM_NUM_TAGS];
    size_t peak[DT_MEM_NUM_TAGS];
    size_t current_total;
    size_t peak_total; /* the peak of the sum, not the sum of the peaks */
} dt_mem_stats;

/* The figures of the calling rank. */
void dt_mem_stats_get(dt_mem_stats *out);

/* Sets the peaks of the calling rank to the current values. */
void dt_mem_reset_peak(void);

/* A rank's accounting. The launcher creates one per rank and binds it on
 * the rank's thread; a thread with none bound is charged to a process-wide
 * default. A context lives until it is released and its last block freed. */
typedef struct dt_mem_ctx dt_mem_ctx;
dt_mem_ctx *dt_mem_ctx_create(void);
void dt_mem_ctx_release(dt_mem_ctx *ctx);
/* Binds ctx (NULL: the default) to the calling thread; returns the previous. */
dt_mem_ctx *dt_mem_bind(dt_mem_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* DT_CORE_H */
