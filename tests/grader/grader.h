/* grader.h - how a test is written.
 *
 *     #include "grader.h"
 *
 *     TEST(ring_allreduce_small, 2)          // name, points
 *     {
 *         float x = 1;
 *         EXPECT(x == 1, "x = %g, expected 1", x);
 *         EXPECT_OK(lab_function(...));       // a dt_result that must be DT_OK
 *     }
 *
 * TEST_T(name, points, timeout_s) gives a timeout other than the default
 * 10 s; TEST_HIDDEN(name, points) and TEST_HIDDEN_T(...) register a test that
 * is graded but left out of the student tree (write hidden tests in files
 * named hidden_*.c: `make dist-student` drops those files).
 *
 * Each form takes options after its arguments, as designated initializers
 * of dt_test (0 keeps the grader's default):
 *     TEST_T(hogwild_trains_digits, 3, 30, .race = 1)
 *     TEST(big_buffers, 2, .as_mib = 8192, .tasks = 512)
 *   .race = 1       race-sensitive: the race is the lab's bug, so `make check`
 *                   also runs it from a ThreadSanitizer build of the lab,
 *                   and a reported race fails it
 *   .own_backend = 1  the test picks its backends itself (it sets
 *                   dt_launch_opts.backend: the proc launcher, dtrun's
 *                   programs, thread against proc): under `BACKEND=mpi`
 *                   it runs once, as itself, not under mpirun. Every other
 *                   test takes the backend from DT_BACKEND (dt_launch_opts_init)
 *                   and, under `BACKEND=mpi`, runs in every process of
 *                   `mpirun -np DT_MPI_NP` (test_main.c)
 *   .as_mib         address space per process, MiB (default 4096)
 *   .cpu_s          CPU seconds per process (default twice the timeout)
 *   .fsize_mib      size of a file the test writes, MiB (default 64)
 *   .tasks          processes and threads at once (default 256)
 *
 * A test passes when its function returns on the main thread and the
 * process then exits with status 0: the harness (test_main.c) tells the
 * grader so on a channel of its own, with a token that changes every run.
 * An exit before that (exit(), _exit(), a rank that exits, a constructor
 * that ends the process) fails the test. A failed EXPECT prints
 *     FAIL: tests/02-collectives/test_ring.c:41: rank 3: recv[17] = 2, expected 6
 * (the rank is the logging rank of the calling thread, when there is one)
 * and ends the test's process with status 1. The driver (dtgrade) runs each
 * test in its own process group with its timeout and limits, so a test may
 * crash, hang or fork: the grader survives it. */
#ifndef DT_GRADER_H
#define DT_GRADER_H

#include "dt/comm.h"
#include "dt/core.h"

typedef struct dt_test {
    const char *name;
    int points;
    int hidden;
    void (*fn)(void);
    const char *file;
    double timeout_s; /* 0: 10 s */
    int race;
    int own_backend; /* 1: not run under mpirun (see above) */
    double as_mib, cpu_s, fsize_mib;
    int tasks;
    struct dt_test *next;
} dt_test;

void dt_test_register(dt_test *t);

/* Ends the test as failed with "FAIL: file:line: [rank R: ]message", and
 * " (see WHERE)" when the test named WHERE with dt_test_see. */
void dt_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Ends the test as skipped, saying why ("SKIP: reason"): for a check that
 * cannot run in this build or on this machine (an AddressSanitizer check
 * in a plain build). The grader shows it as "skipped" with the reason,
 * neither passed nor failed, its points out of the maximum: a check that
 * cannot run passes nothing. Call it from the test's own process, not a
 * rank. */
void dt_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The folder for the test's temporary files: $TMPDIR, which the grader
 * sets to a fresh folder of the test's own and checks is empty after the
 * test (a test removes what it writes); build/tmp (made if missing) when
 * unset, as in a run by hand from the repository's root. */
const char *dt_test_tmpdir(void);

/* What a memory test checks besides its formula's tags: a rank's whole
 * peak. Memory the lab's code allocated outside dt_mem_alloc (malloc,
 * calloc, realloc, aligned allocations, strdup, mmap: charged to the rank
 * under DT_MEM_UNTAGGED in a lab's test binary) has no tag, so it counts
 * against the formula as a whole: with `counted` the bytes of the
 * formula's tags at their peak, `untagged` the untagged bytes over the
 * same span (dt_mem_stats' peak[DT_MEM_UNTAGGED], or its growth) and
 * `formula` the formula's total, DT_OK when counted + untagged <= (1 +
 * tol) formula, else DT_ERR_MISMATCH with a message (starting with `what`)
 * that says how many bytes were allocated outside dt_mem_alloc. */
dt_result dt_test_whole_peak(double counted, double untagged, double formula, double tol,
                             const char *what);

/* Names the text that explains what this test checks, e.g.
 * dt_test_see("chapter 02, section 5"): every failure of the test from
 * here on ends with " (see chapter 02, section 5)". Call it first in the
 * test, before any rank starts; where is a string literal. */
void dt_test_see(const char *where);

/* The backend the environment named when the test started (DT_BACKEND, as
 * `make check BACKEND=...` sets it; thread when unset or not a backend's
 * name, which dt_launch_opts_init reports). Read once, before the test,
 * whatever a launch does to the environment afterwards. */
dt_backend dt_test_backend(void);

/* Inside a rank: DT_OK when the rank of world rank world_rank runs where
 * `backend` puts ranks; else DT_ERR_MISMATCH with a message saying where it
 * runs. A rank of a launch that should take its backend from the
 * environment calls dt_test_on_backend(rank, dt_test_backend()): `make
 * check BACKEND=...` then shows that the ranks ran there, not only that the
 * test passed, and a launch that pins another backend fails. What it
 * checks:
 *   thread  the rank runs in the test's own process;
 *   proc    the rank is a process of its own, not the test's;
 *   mpi     the rank runs in the test's process, started by mpirun as the MPI
 *           process of the same rank (OMPI_COMM_WORLD_RANK or PMI_RANK).
 * A launch pinned to threads under mpirun fails it in every process but
 * one (the others are not MPI rank 0 and still run a rank 0). */
dt_result dt_test_on_backend(int world_rank, dt_backend backend);

/* Runs this binary's test `name` in a fresh process, a new exec of the
 * binary (`grade --run NAME`), with the variables set[] ("NAME=VALUE",
 * NULL-ended; set may be NULL) added to its environment. Its output goes
 * where this process's goes, so its FAIL line is the test's reason. Waits
 * at most timeout_s, then kills it. DT_OK when it exited with status 0;
 * else DT_ERR_TIMEOUT or DT_ERR_INTERNAL with a message saying how it
 * ended. For what must cross a process boundary, such as a checkpoint
 * saved in one process and loaded in another: the test reads set[] with
 * getenv to know which side it is. */
dt_result dt_test_run_fresh(const char *name, const char *const *set, double timeout_s);

/* The options (...) are designated initializers of dt_test's fields. */
#define DT_TEST_DEFINE(name_, points_, hidden_, ...)                         \
    static void name_(void);                                                 \
    static dt_test name_##_entry = {.name = #name_, .points = (points_),     \
                                    .hidden = (hidden_), .fn = name_,        \
                                    .file = __FILE__, __VA_ARGS__};          \
    __attribute__((constructor)) static void name_##_register(void)          \
    {                                                                        \
        dt_test_register(&name_##_entry);                                    \
    }                                                                        \
    static void name_(void)

#define TEST(name, points, ...) DT_TEST_DEFINE(name, points, 0, __VA_ARGS__)
#define TEST_T(name, points, timeout, ...)                                   \
    DT_TEST_DEFINE(name, points, 0, .timeout_s = (timeout), __VA_ARGS__)
#define TEST_HIDDEN(name, points, ...) DT_TEST_DEFINE(name, points, 1, __VA_ARGS__)
#define TEST_HIDDEN_T(name, points, timeout, ...)                            \
    DT_TEST_DEFINE(name, points, 1, .timeout_s = (timeout), __VA_ARGS__)

#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond))                                                         \
            dt_test_fail(__FILE__, __LINE__, __VA_ARGS__);                   \
    } while (0)

/* expr is a dt_result; anything but DT_OK fails with its name and message. */
#define EXPECT_OK(expr)                                                      \
    do {                                                                     \
        dt_result expect_ok_r_ = (expr);                                     \
        if (expect_ok_r_ != DT_OK)                                           \
            dt_test_fail(__FILE__, __LINE__, "%s returned %s%s%s", #expr,    \
                         dt_strerror(expect_ok_r_),                          \
                         dt_last_error()[0] ? ": " : "", dt_last_error());   \
    } while (0)

/* expr must fail with exactly the result want. */
#define EXPECT_ERR(expr, want)                                               \
    do {                                                                     \
        dt_result expect_err_r_ = (expr);                                    \
        if (expect_err_r_ != (want))                                         \
            dt_test_fail(__FILE__, __LINE__, "%s returned %s, expected %s",  \
                         #expr, dt_strerror(expect_err_r_),                  \
                         dt_strerror(want));                                 \
    } while (0)

#define EXPECT_NEAR(a, b, rel)                                               \
    do {                                                                     \
        double en_a_ = (double)(a), en_b_ = (double)(b);                     \
        double en_d_ = en_a_ - en_b_, en_m_ = en_b_ < 0 ? -en_b_ : en_b_;    \
        if (en_d_ < 0) en_d_ = -en_d_;                                       \
        if (!(en_d_ <= (rel) * (en_m_ > 1e-30 ? en_m_ : 1e-30) ||            \
              en_d_ <= 1e-30))                                               \
            dt_test_fail(__FILE__, __LINE__, "%s = %.9g, expected %.9g "     \
                         "(relative tolerance %g)", #a, en_a_, en_b_,        \
                         (double)(rel));                                     \
    } while (0)

#endif /* DT_GRADER_H */
