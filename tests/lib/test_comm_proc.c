/* test_comm_proc.c - the proc backend: ranks as processes over one shared
 * arena; dead ranks and ranks that exit early; no leftovers in /dev/shm,
 * and stale ones removed; programs started like
 * dtrun's (dt_launch_program + dt_init). These tests pick the proc backend
 * themselves (.own_backend: under BACKEND=mpi they run once, not under
 * mpirun). And every backend gives the thread backend's bits. */
#include "test_comm_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static dt_launch_opts proc_opts(int n)
{
    dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
    o.backend = DT_BACKEND_PROC;
    return o;
}

/* Segments of this process's jobs still in /dev/shm. */
static int leftovers(void)
{
    char prefix[64];
    const char *job = getenv("DT_JOB_ID");
    snprintf(prefix, sizeof prefix, "dtlab.%u.%s.", (unsigned)getuid(), job ? job : "");
    if (!job)
        snprintf(prefix, sizeof prefix, "dtlab.%u.%d.", (unsigned)getuid(), (int)getpid());
    DIR *d = opendir("/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static dt_result nothing_rank(dt_comm *c, void *arg)
{
    (void)c;
    (void)arg;
    return DT_OK;
}

/* ---------------------------------------------------------------- dead ranks */

static dt_result long_allreduce_rank(dt_comm *c, void *arg)
{
    (void)arg;
    size_t count = 1 << 18;
    float *x = calloc(count, sizeof *x);
    for (int i = 0; i < 50; i++)
        DT_CHECK(dt_allreduce(x, x, count, DT_F32, DT_SUM, c));
    free(x);
    return DT_OK;
}

static dt_result exits_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    if (dt_comm_rank(c) == 1)
        _exit(3);
    return dt_allreduce(x, x, 4, DT_F32, DT_SUM, c);
}

TEST_T(comm_proc_killed_rank_is_reported, 4, 30, .own_backend = 1)
{
    dt_launch_opts o = proc_opts(4);
    o.debug = 0;
    o.timeout_s = 30;
    o.fault = "kill:rank=2:at=allreduce#5";
    double t0 = dt_now();
    EXPECT_ERR(dt_launch(&o, long_allreduce_rank, NULL), DT_ERR_PEER_DIED);
    double took = dt_now() - t0;
    EXPECT(strstr(dt_last_error(), "rank 2: killed by signal 9"), "report: '%s'",
           dt_last_error());
    EXPECT(took < 2.5, "the others noticed after %g s", took);
    EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");

    o.fault = NULL;
    EXPECT_ERR(dt_launch(&o, exits_rank, NULL), DT_ERR_PEER_DIED);
    EXPECT(strstr(dt_last_error(), "rank 1: exited with status 3"), "report: '%s'",
           dt_last_error());
    EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");
}

/* A rank that ends its process before its function returned, with status
 * 0, is a failure, whatever the other ranks did: mode 0 _exit(0) while the
 * others wait in an allreduce, mode 1 _exit(0) while the others return at
 * once. (exit(0) ends the process the same way, after the atexit handlers,
 * which under AddressSanitizer report the rank's memory as leaked.) The
 * others' results are written into memory shared with the test (the forked
 * ranks' writes to arg are their own). */
typedef struct {
    int mode;
    _Atomic int seen[4]; /* each rank's allreduce result, + 1 */
} early_arg;

static dt_result early_exit_rank(dt_comm *c, void *arg)
{
    early_arg *a = arg;
    float x[4] = {0};
    int r = dt_comm_rank(c);
    if (r == 1)
        _exit(0);
    if (a->mode == 1)
        return DT_OK;
    dt_result res = dt_allreduce(x, x, 4, DT_F32, DT_SUM, c);
    atomic_store(&a->seen[r], (int)res + 1);
    return res;
}

TEST_T(comm_proc_early_exit_is_a_failure, 3, 30, .own_backend = 1)
{
    early_arg *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    EXPECT(a != MAP_FAILED, "mmap");
    for (int mode = 0; mode < 2; mode++) {
        memset(a, 0, sizeof *a);
        a->mode = mode;
        dt_launch_opts o = proc_opts(4);
        o.debug = 0;
        EXPECT_ERR(dt_launch(&o, early_exit_rank, a), DT_ERR_PEER_DIED);
        EXPECT(strstr(dt_last_error(), "rank 1: exited with status 0 before its function "
                      "returned"), "mode %d: report '%s'", mode, dt_last_error());
        for (int r = 0; mode == 0 && r < 4; r++)
            EXPECT(r == 1 || atomic_load(&a->seen[r]) == (int)DT_ERR_PEER_DIED + 1,
                   "mode %d: rank %d's allreduce returned %s, expected DT_ERR_PEER_DIED", mode,
                   r, dt_strerror((dt_result)(atomic_load(&a->seen[r]) - 1)));
        EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");
    }
    munmap(a, sizeof *a);
}

/* ---------------------------------------------------------------- stale segments */

/* A segment of this user whose launcher is gone (the pid in its name is no
 * process) is removed by the next proc launch; one whose launcher lives,
 * and one of another shape, are left alone. */
TEST_T(comm_proc_stale_segments_are_removed, 2, 30, .own_backend = 1)
{
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    EXPECT(gone > 0 && waitpid(gone, NULL, 0) == gone, "fork");
    const char *job = getenv("DT_JOB_ID") ? getenv("DT_JOB_ID") : "stale-test";
    char stale[128], live[128], other[128];
    snprintf(stale, sizeof stale, "/dtlab.%u.%s.%d.0123456789abcdef", (unsigned)getuid(), job,
             (int)gone);
    snprintf(live, sizeof live, "/dtlab.%u.%s.%d.0123456789abcdef", (unsigned)getuid(), job,
             (int)getpid());
    snprintf(other, sizeof other, "/dtlab.%u.%s.%d.1", (unsigned)getuid(), job, (int)gone);
    const char *names[] = {stale, live, other};
    for (int i = 0; i < 3; i++) {
        int fd = shm_open(names[i], O_CREAT | O_RDWR, 0600);
        EXPECT(fd >= 0, "shm_open(%s): %s", names[i], strerror(errno));
        close(fd);
    }
    dt_launch_opts o = proc_opts(2);
    EXPECT_OK(dt_launch(&o, nothing_rank, NULL));
    int reused = kill(gone, 0) == 0; /* the system gave the pid away meanwhile */
    int exists[3];
    for (int i = 0; i < 3; i++) {
        int fd = shm_open(names[i], O_RDONLY, 0);
        exists[i] = fd >= 0;
        if (fd >= 0)
            close(fd);
        shm_unlink(names[i]);
    }
    if (reused)
        dt_log("pid %d was reused: the stale segment's removal is not exercised", (int)gone);
    else
        EXPECT(!exists[0], "%s (launcher %d is gone) was not removed", stale, (int)gone);
    EXPECT(exists[1], "%s (launcher alive) was removed", live);
    EXPECT(exists[2], "%s (not a segment's shape) was removed", other);
}

/* ---------------------------------------------------------------- sharing */

static dt_result proc_features_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    /* a window: the same memory in every process */
    void *base;
    dt_win *w;
    EXPECT_OK(dt_win_allocate(c, 4096, &base, &w));
    _Atomic long *counter = base;
    for (int i = 0; i < 1000; i++)
        atomic_fetch_add(counter, 1);
    EXPECT_OK(dt_barrier(c));
    EXPECT(atomic_load(counter) == 1000L * n, "window counter %ld", atomic_load(counter));
    EXPECT_OK(dt_win_free(w));
    /* split and async, as in the thread backend */
    dt_comm *half;
    EXPECT_OK(dt_comm_split(c, r % 2, r, &half));
    int32_t x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = r + i;
    dt_request *q;
    EXPECT_OK(dt_iallreduce(x, y, 1000, DT_I32, DT_MAX, half, &q));
    EXPECT_OK(dt_wait(q));
    int top = (n - 1) % 2 == r % 2 ? n - 1 : n - 2;
    for (int i = 0; i < 1000; i++)
        EXPECT(y[i] == top + i, "max [%d] = %d, expected %d", i, y[i], top + i);
    EXPECT_OK(dt_comm_free(half));
    /* a large point-to-point message goes process to process */
    size_t big = 1 << 20;
    int32_t *buf = malloc(big * sizeof *buf);
    if (r == 0)
        for (size_t i = 0; i < big; i++)
            buf[i] = (int32_t)i;
    if (r == 0)
        EXPECT_OK(dt_send(buf, big, DT_I32, n - 1, c));
    if (r == n - 1) {
        EXPECT_OK(dt_recv(buf, big, DT_I32, 0, c));
        for (size_t i = 0; i < big; i++)
            EXPECT(buf[i] == (int32_t)i, "p2p [%zu] = %d", i, buf[i]);
    }
    free(buf);
    return DT_OK;
}

TEST_T(comm_proc_window_split_async_p2p, 3, 30, .own_backend = 1)
{
    dt_launch_opts o = proc_opts(4);
    EXPECT_OK(dt_launch(&o, proc_features_rank, NULL));
    EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");
}

/* Every rank first passes a barrier (collective #1), so that all three
 * are running when the deadline starts; the deadline is long enough (2 s)
 * that a rank the scheduler holds back on a loaded machine is in its
 * allreduce by then (with 0.3 s and no barrier, a forked rank not yet
 * started showed as "in no communication call"). Rank 0 then returns
 * without joining: had it called another collective (a broadcast), a
 * waiting rank that read its board while the broadcast ran would rightly
 * report a mismatch instead, as it did under a load of 20. */
static dt_result proc_timeout_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[10] = {0};
    DT_CHECK(dt_barrier(c));
    if (dt_comm_rank(c) == 0)
        return DT_OK;
    return dt_allreduce(x, x, 10, DT_F32, DT_SUM, c);
}

TEST_T(comm_proc_timeout_report, 2, 30, .own_backend = 1)
{
    dt_launch_opts o = proc_opts(3);
    o.debug = 0;
    o.timeout_s = 2;
    EXPECT_ERR(dt_launch(&o, proc_timeout_rank, NULL), DT_ERR_TIMEOUT);
    EXPECT(tc_waits_in(dt_last_error(), 1, "allreduce #2 (count 10)"), "report: '%s'",
           dt_last_error());
}

/* ---------------------------------------------------------------- determinism */

/* The thread backend's hashes, per rank: written by the thread ranks of
 * this process, read by the ranks of the backend compared (forked ranks
 * inherit them; every mpi process runs the thread launch itself). */
static uint64_t thread_hash[5];

static uint64_t det_hash(dt_comm *c, dt_algo algo)
{
    size_t count = 4099;
    float *x = malloc(count * sizeof *x);
    dt_rng rng;
    dt_rng_init(&rng, 11, (uint64_t)dt_comm_rank(c));
    for (size_t i = 0; i < count; i++)
        x[i] = dt_rng_normal(&rng);
    EXPECT_OK(dt_comm_set_algo(c, algo));
    EXPECT_OK(dt_allreduce(x, x, count, DT_F32, DT_SUM, c));
    uint64_t h = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        h = dt_hash64(h, bits, i);
    }
    free(x);
    return h;
}

static dt_result det_thread_rank(dt_comm *c, void *arg)
{
    thread_hash[dt_comm_rank(c)] = det_hash(c, *(dt_algo *)arg);
    return DT_OK;
}

/* The backend compared with threads: DT_BACKEND's, or proc when that is
 * thread. */
static dt_backend compared_backend(void)
{
    return tc_backend() == DT_BACKEND_THREAD ? DT_BACKEND_PROC : tc_backend();
}

static dt_result det_other_rank(dt_comm *c, void *arg)
{
    uint64_t h = det_hash(c, *(dt_algo *)arg);
    EXPECT(h == thread_hash[dt_comm_rank(c)], "rank %d: the %s backend's result differs "
           "from the thread backend's", dt_comm_rank(c), dt_backend_name(compared_backend()));
    return DT_OK;
}

/* Every algorithm, against threads. 4099 floats (16 KiB) take no shortcut:
 * AUTO is the tree on every backend, mpi included. */
TEST_T(comm_backends_give_identical_bits, 2, 30)
{
    dt_backend other = compared_backend();
    for (int ai = 0; ai < TC_LEN(tc_algos); ai++) {
        dt_algo algo = tc_algos[ai];
        dt_launch_opts o = tc_opts(5, DT_ALGO_AUTO);
        o.backend = DT_BACKEND_THREAD;
        EXPECT_OK(dt_launch(&o, det_thread_rank, &algo));
        o.backend = other;
        EXPECT_OK(dt_launch(&o, det_other_rank, &algo));
    }
}

/* ---------------------------------------------------------------- programs (dtrun) */

/* A program's main as dtrun starts it: it joins with dt_init. Run alone it
 * is a job of one rank. DT_TEST_EXIT=R makes rank R exit with status 3. */
TEST(comm_dtrun_child_program, 1, .own_backend = 1)
{
    dt_comm *world;
    EXPECT_OK(dt_init(&world));
    int r = dt_comm_rank(world), n = dt_comm_size(world);
    long rank_var, exit_rank;
    EXPECT_OK(dt_env_long("RANK", 0, 0, DT_MAX_RANKS, &rank_var));
    EXPECT_OK(dt_env_long("DT_TEST_EXIT", -1, -1, DT_MAX_RANKS, &exit_rank));
    EXPECT(r == (int)rank_var, "rank %d, RANK %ld", r, rank_var);
    int32_t v = r + 1, sum = 0;
    EXPECT_OK(dt_allreduce(&v, &sum, 1, DT_I32, DT_SUM, world));
    EXPECT(sum == n * (n + 1) / 2, "sum %d on %d ranks", sum, n);
    if (exit_rank == r)
        _exit(3);
    if (exit_rank < 0)
        EXPECT_OK(dt_barrier(world));
    EXPECT_OK(dt_finalize(world));
}

TEST_T(comm_launch_program_like_dtrun, 3, 30, .own_backend = 1)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(len > 0, "cannot find this test binary");
    self[len] = '\0';
    char *argv[] = {self, "--run", "comm_dtrun_child_program", NULL};
    dt_launch_opts o = proc_opts(3);
    int code = -1;
    unsetenv("DT_TEST_EXIT");
    EXPECT_OK(dt_launch_program(&o, argv, &code));
    EXPECT(code == 0, "exit code %d", code);
    setenv("DT_TEST_EXIT", "1", 1);
    EXPECT_ERR(dt_launch_program(&o, argv, &code), DT_ERR_PEER_DIED);
    unsetenv("DT_TEST_EXIT");
    EXPECT(code == 3, "the first non-zero exit is passed on: %d", code);
    EXPECT(strstr(dt_last_error(), "rank 1: exited with status 3"), "report: '%s'",
           dt_last_error());
    char *missing[] = {"/nonexistent/program", NULL};
    EXPECT(dt_launch_program(&o, missing, &code) != DT_OK, "a missing program fails");
    EXPECT(strstr(dt_last_error(), "cannot run"), "report: '%s'", dt_last_error());
    EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");
}

/* An arena larger than all of /dev/shm is refused with a message, before
 * any rank starts. */
TEST(comm_proc_arena_too_large_is_refused, 1, .own_backend = 1)
{
    setenv("DT_ARENA_MB", "100000000", 1); /* 100 TB */
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2;
    o.backend = DT_BACKEND_PROC;
    dt_result r = dt_launch(&o, nothing_rank, NULL);
    unsetenv("DT_ARENA_MB");
    EXPECT(r == DT_ERR_NOMEM, "launch returned %s, expected DT_ERR_NOMEM", dt_strerror(r));
    EXPECT(strstr(dt_last_error(), "DT_ARENA_MB") != NULL, "message '%s' names DT_ARENA_MB",
           dt_last_error());
}

static dt_result big_window_rank(dt_comm *c, void *arg)
{
    void *base;
    dt_win *w;
    DT_CHECK(dt_win_allocate(c, *(size_t *)arg, &base, &w));
    memset(base, 1, *(size_t *)arg);
    return dt_win_free(w);
}

/* A job whose arena outgrows a full /dev/shm gets an error that says so,
 * not a SIGBUS; and a small job fits beside a nearly full /dev/shm (the
 * arena's size is a limit, its pages are taken as they are used). The
 * test fills /dev/shm but for 2 MB, which would break any job running
 * beside it: it runs only when DT_TEST_FILL_SHM=1 says that this /dev/shm
 * is its own (make test's small-shm step: a private 64 MB /dev/shm, one
 * test at a time). */
TEST_T(comm_proc_full_shm_is_an_error, 2, 30, .own_backend = 1)
{
    if (!getenv("DT_TEST_FILL_SHM")) {
        dt_log("not exercised: DT_TEST_FILL_SHM=1 is not set");
        return;
    }
    struct statvfs vfs;
    EXPECT(statvfs("/dev/shm", &vfs) == 0, "statvfs /dev/shm");
    size_t free_b = (size_t)((uint64_t)vfs.f_bavail * vfs.f_frsize);
    if (free_b > ((size_t)256 << 20) || free_b < ((size_t)8 << 20)) {
        dt_log("not exercised: /dev/shm has %zu MB free (it needs 8 to 256)", free_b >> 20);
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "/dtlab.%u.filler.%d", (unsigned)getuid(), (int)getpid());
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT(fd >= 0, "shm_open %s", name);
    shm_unlink(name); /* the space stays taken while fd is open */
    int e = posix_fallocate(fd, 0, (off_t)(free_b - ((size_t)2 << 20)));
    EXPECT(e == 0, "filling /dev/shm: %s", strerror(e));

    dt_launch_opts o = proc_opts(2);
    size_t small = 4096, big = (size_t)4 << 20;
    dt_result r1 = dt_launch(&o, big_window_rank, &small);
    char msg1[512];
    snprintf(msg1, sizeof msg1, "%s", dt_last_error());
    dt_result r2 = dt_launch(&o, big_window_rank, &big);
    close(fd);
    EXPECT(r1 == DT_OK, "a 4 KB window beside a nearly full /dev/shm: %s (%s)", dt_strerror(r1),
           msg1);
    EXPECT(r2 == DT_ERR_NOMEM, "a 4 MB window with 2 MB free returned %s, expected "
           "DT_ERR_NOMEM", dt_strerror(r2));
    EXPECT(strstr(dt_last_error(), "/dev/shm is full"), "message '%s' says /dev/shm is full",
           dt_last_error());
    EXPECT(leftovers() == 0, "a shared-memory segment was left in /dev/shm");
}

/* Buffers from dt_alloc_shared (in the arena: addressed directly) beside
 * private ones (cross-memory copies), in one call: large allreduces,
 * reduce-scatters, allgathers and messages give the right values. */
static dt_result shared_buffers_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    size_t count = 200003; /* above the shortcuts' 256 KiB */
    float *in, *out;
    int shared = r % 2; /* odd ranks use shared memory, even ones the heap */
    if (shared) {
        DT_CHECK(dt_alloc_shared(c, count * (size_t)n * sizeof(float), (void **)&in));
        DT_CHECK(dt_alloc_shared(c, count * (size_t)n * sizeof(float), (void **)&out));
    } else {
        in = calloc(count * (size_t)n, sizeof(float));
        out = calloc(count * (size_t)n, sizeof(float));
    }
    for (size_t i = 0; i < count * (size_t)n; i++)
        in[i] = (float)(r + 1) + (float)(i % 100);
    size_t bad = 0;
    float ranks_sum = (float)(n * (n + 1) / 2);
    EXPECT_OK(dt_allreduce(in, out, count, DT_F32, DT_SUM, c));
    for (size_t i = 0; i < count; i++)
        bad += out[i] != ranks_sum + (float)n * (float)(i % 100);
    EXPECT_OK(dt_reduce_scatter(in, out, count, DT_F32, DT_SUM, c));
    for (size_t i = 0; i < count; i++)
        bad += out[i] != ranks_sum + (float)n * (float)(((size_t)r * count + i) % 100);
    EXPECT_OK(dt_allgather(in, out, count, DT_F32, c));
    for (size_t i = 0; i < count * (size_t)n; i++)
        bad += out[i] != (float)(i / count + 1) + (float)(i % count % 100);
    if (r == 0)
        EXPECT_OK(dt_send(in, count, DT_F32, 1, c));
    if (r == 1) {
        EXPECT_OK(dt_recv(out, count, DT_F32, 0, c));
        for (size_t i = 0; i < count; i++)
            bad += out[i] != 1.0f + (float)(i % 100);
    }
    EXPECT(bad == 0, "rank %d (%s buffers): %zu wrong values", r, shared ? "shared" : "private",
           bad);
    if (shared) {
        dt_free_shared(c, in);
        dt_free_shared(c, out);
    } else {
        free(in), free(out);
    }
    return DT_OK;
}

TEST_T(comm_proc_shared_buffers, 2, 60, .own_backend = 1)
{
    for (int n = 2; n <= 3; n++) {
        dt_launch_opts o = proc_opts(n);
        EXPECT_OK(dt_launch(&o, shared_buffers_rank, NULL));
        o.backend = DT_BACKEND_THREAD; /* plain memory there: the same code */
        EXPECT_OK(dt_launch(&o, shared_buffers_rank, NULL));
    }
    void *p;
    EXPECT_ERR(dt_alloc_shared(NULL, 64, &p), DT_ERR_INVALID_ARG);
}
