/* test_mem.c - memory accounting beyond dt_mem_alloc's tags: what a lab's
 * code allocates outside it, charged to its rank under DT_MEM_UNTAGGED
 * (lib/core/untagged.c), and AddressSanitizer's view of dt_mem_alloc's
 * rounding (lib/core/mem.c). */
#include "grader.h"

#include "dt/comm.h"
#include "dt/core.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a lab's object calls once the grader renamed its allocator calls
 * (tests/grader/untagged.redefine), declared as such an object sees them. */
void *dt_untagged_malloc(size_t bytes);
void *dt_untagged_calloc(size_t count, size_t size);
void *dt_untagged_realloc(void *p, size_t bytes);
void dt_untagged_free(void *p);
int dt_untagged_posix_memalign(void **out, size_t alignment, size_t bytes);
char *dt_untagged_strdup(const char *s);
void *dt_untagged_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int dt_untagged_munmap(void *addr, size_t len);

static size_t untagged_now(void)
{
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    return s.current[DT_MEM_UNTAGGED];
}

static void *alloc_on_thread(void *arg)
{
    dt_mem_bind(arg);
    void *p = dt_untagged_malloc(777);
    dt_mem_bind(NULL);
    return p;
}

TEST(core_mem_untagged_charged_and_credited, 1)
{
    EXPECT(!strcmp(dt_mem_tag_name(DT_MEM_UNTAGGED), "untagged"), "the tag's name");
    EXPECT(dt_mem_alloc(DT_MEM_UNTAGGED, 8) == NULL, "dt_mem_alloc refuses DT_MEM_UNTAGGED");
    dt_mem_ctx *ctx = dt_mem_ctx_create();
    dt_mem_bind(ctx);
    char *m = dt_untagged_malloc(1000);
    EXPECT(m && untagged_now() == 1000, "malloc: %zu bytes untagged, expected 1000",
           untagged_now());
    m = dt_untagged_realloc(m, 5000);
    EXPECT(m && untagged_now() == 5000, "realloc: %zu, expected 5000", untagged_now());
    char *c = dt_untagged_calloc(10, 100);
    char *s = dt_untagged_strdup("hello");
    void *a = NULL;
    EXPECT(dt_untagged_posix_memalign(&a, 64, 640) == 0 && a, "posix_memalign");
    EXPECT(untagged_now() == 5000 + 1000 + 6 + 640, "calloc, strdup, posix_memalign: %zu",
           untagged_now());
    dt_mem_stats st;
    dt_mem_stats_get(&st);
    EXPECT(st.current_total == 6646 && st.peak_total == 6646,
           "the whole: current %zu, peak %zu, expected 6646", st.current_total, st.peak_total);
    dt_untagged_free(m), dt_untagged_free(c), dt_untagged_free(s), dt_untagged_free(a);
    dt_mem_stats_get(&st);
    EXPECT(st.current[DT_MEM_UNTAGGED] == 0 && st.peak[DT_MEM_UNTAGGED] == 6646,
           "after the frees: current %zu, peak %zu", st.current[DT_MEM_UNTAGGED],
           st.peak[DT_MEM_UNTAGGED]);

    /* mappings, unmapped in part: the rest stays charged */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    char *map = dt_untagged_mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(map != MAP_FAILED && untagged_now() == 3 * pg, "mmap of 3 pages: %zu",
           untagged_now());
    EXPECT(dt_untagged_munmap(map + pg, pg) == 0 && untagged_now() == 2 * pg,
           "the middle page unmapped: %zu, expected %zu", untagged_now(), 2 * pg);
    EXPECT(dt_untagged_munmap(map, 3 * pg) == 0 && untagged_now() == 0,
           "all unmapped: %zu", untagged_now());

    /* memory the lab did not get from the renamed calls passes through */
    char *plain = malloc(100);
    dt_untagged_free(plain);
    EXPECT(untagged_now() == 0, "a free of memory never charged credits nothing");
    plain = malloc(100);
    plain = dt_untagged_realloc(plain, 300);
    EXPECT(plain && untagged_now() == 300, "realloc of uncharged memory charges what it grows "
           "into: %zu", untagged_now());
    dt_untagged_free(plain);
    dt_mem_bind(NULL);

    /* a block charged on one thread, freed on another, credits the first */
    pthread_t t;
    void *far;
    pthread_create(&t, NULL, alloc_on_thread, ctx);
    pthread_join(t, &far);
    dt_mem_bind(ctx);
    EXPECT(untagged_now() == 777, "the thread's block charged to its rank: %zu",
           untagged_now());
    dt_mem_bind(NULL);
    dt_untagged_free(far);
    dt_mem_bind(ctx);
    EXPECT(untagged_now() == 0, "freed by another thread, credited to its rank: %zu",
           untagged_now());
    dt_mem_bind(NULL);
    dt_mem_ctx_release(ctx);
}

/* Each rank sees what it allocated itself, on threads and on processes;
 * the test's own thread is charged apart. */
static dt_result untagged_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(w);
    size_t want = 1000 * (size_t)(r + 1);
    void *p = dt_untagged_malloc(want);
    DT_CHECK(dt_barrier(w)); /* every rank holds its block now */
    size_t got = untagged_now();
    dt_untagged_free(p);
    if (!p || got != want)
        return dt_fail(DT_ERR_MISMATCH, "rank %d: %zu bytes untagged, it allocated %zu", r, got,
                       want);
    return DT_OK;
}

TEST(core_mem_untagged_per_rank, 1, .own_backend = 1)
{
    size_t before = untagged_now();
    dt_backend backends[2] = {DT_BACKEND_THREAD, DT_BACKEND_PROC};
    for (int b = 0; b < 2; b++) {
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = 3, o.backend = backends[b], o.timeout_s = 5;
        EXPECT_OK(dt_launch(&o, untagged_rank, NULL));
    }
    EXPECT(untagged_now() == before, "the test's own thread was charged for the ranks");
}

/* ------------------------------------------------ AddressSanitizer */

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#ifdef TEST_ASAN
/* Runs write_at(offset) on a fresh block of `bytes` in a child process;
 * returns its exit status and what it printed (the sanitizer's report). */
static int child_writes(size_t bytes, long offset, char *report, size_t cap)
{
    int fds[2];
    EXPECT(pipe(fds) == 0, "pipe");
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        volatile char *p = dt_mem_alloc(DT_MEM_GRAD, bytes);
        p[offset] = 1;
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fds[0], report + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    report[n] = '\0';
    close(fds[0]);
    int status;
    EXPECT(waitpid(pid, &status, 0) == pid, "waitpid");
    return status;
}
#endif

/* Chapter 08's padding mistake: a shard of 13 floats written at index 13.
 * dt_mem_alloc rounds the block up to 64 bytes; AddressSanitizer must see
 * a write past the end anyway, and past the start (the block's header). */
TEST(core_mem_asan_sees_writes_past_a_block, 1)
{
#ifndef TEST_ASAN
    dt_test_skip("this build has no AddressSanitizer (make unit SAN=address runs it): the "
                 "poisoned rounding of dt_mem_alloc is checked there only");
#else
    static char report[8192];
    static const struct { size_t bytes; long offset; const char *what; } bad[] = {
        {13 * sizeof(float), 13 * sizeof(float), "one float past a shard of 13"},
        {100, 100, "one byte past a block of 100"},
        {100, -1, "one byte before a block"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = child_writes(bad[i].bytes, bad[i].offset, report, sizeof report);
        EXPECT(!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && strstr(report, "AddressSanitizer") &&
               strstr(report, "use-after-poison"), "%s: AddressSanitizer said nothing (status "
               "%d): %.200s", bad[i].what, st, report);
    }
    /* the block's own last byte is writable: the poison starts right after it */
    int st = child_writes(100, 99, report, sizeof report);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a write to the last byte of a block of 100 "
           "was reported: %.200s", report);
#endif
}
