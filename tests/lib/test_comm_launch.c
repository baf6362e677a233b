/* test_comm_launch.c - what a launch accepts: every variable of the
 * environment and every option is checked, and a bad one is refused with a
 * message naming it and its value, never ignored or replaced by a default;
 * and what dt_init accepts as the job's shared memory. */
#include "test_comm_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static dt_result nothing_rank(dt_comm *c, void *arg)
{
    (void)c;
    (void)arg;
    return DT_OK;
}

/* One bad value of each variable a launch reads, and a text its message
 * must hold (the variable and the value, at least). */
static const struct {
    const char *var, *value, *says;
} bad_env[] = {
    {"DT_NRANKS", "0", "DT_NRANKS='0'"},
    {"DT_NRANKS", "abc", "DT_NRANKS='abc'"},
    {"DT_NRANKS", "1025", "from 1 to 1024"},
    {"DT_BACKEND", "carrier-pigeon", "DT_BACKEND: unknown backend 'carrier-pigeon'"},
    {"DT_NET", "warp", "DT_NET: unknown network preset 'warp'"},
    {"DT_NET", "alpha=2parsecs", "DT_NET: bad network 'alpha=2parsecs'"},
    {"DT_TIMEOUT", "abc", "DT_TIMEOUT='abc'"},
    {"DT_TIMEOUT", "-1", "DT_TIMEOUT='-1'"},
    {"DT_TIMEOUT", "5s", "DT_TIMEOUT='5s'"},
    {"DT_DEBUG", "2", "DT_DEBUG='2'"},
    {"DT_DEBUG", "yes", "DT_DEBUG='yes'"},
    {"DT_ALGO", "fastest", "DT_ALGO: unknown algorithm 'fastest'"},
    {"DT_FAULT", "explode", "DT_FAULT: bad fault 'explode'"},
    {"DT_SPIN_US", "-3", "DT_SPIN_US='-3'"},
    {"DT_BIND", "yes", "DT_BIND='yes'"},
    {"DT_ARENA_MB", "abc", "DT_ARENA_MB='abc'"},
    {"DT_ARENA_MB", "-5", "DT_ARENA_MB='-5'"},
    {"DT_JOB_ID", "../etc", "DT_JOB_ID='../etc'"},
};

TEST(comm_launch_refuses_bad_variables, 2)
{
    for (size_t i = 0; i < TC_LEN(bad_env); i++) {
        setenv(bad_env[i].var, bad_env[i].value, 1);
        dt_launch_opts o;
        dt_result r = dt_launch_opts_init(&o);
        EXPECT(r == DT_ERR_INVALID_ARG, "%s=%s: dt_launch_opts_init returned %s",
               bad_env[i].var, bad_env[i].value, dt_strerror(r));
        EXPECT(strstr(dt_last_error(), bad_env[i].says), "%s=%s: message '%s' lacks '%s'",
               bad_env[i].var, bad_env[i].value, dt_last_error(), bad_env[i].says);
        o.nranks = 2;
        o.timeout_s = 5;
        /* a program that did not look at dt_launch_opts_init's result */
        EXPECT_ERR(dt_launch(&o, nothing_rank, NULL), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad_env[i].says), "%s=%s: dt_launch said '%s'",
               bad_env[i].var, bad_env[i].value, dt_last_error());
        EXPECT_ERR(dt_launch(NULL, nothing_rank, NULL), DT_ERR_INVALID_ARG);
        unsetenv(bad_env[i].var);
    }
    /* and with every variable unset or good, the same calls work */
    dt_launch_opts o;
    EXPECT_OK(dt_launch_opts_init(&o));
    EXPECT_OK(dt_launch(NULL, nothing_rank, NULL));
    setenv("DT_ARENA_MB", "64", 1);
    setenv("DT_SPIN_US", "0", 1);
    setenv("DT_JOB_ID", "g1.test-00_1", 1);
    o.nranks = 2;
    o.backend = DT_BACKEND_PROC;
    EXPECT_OK(dt_launch(&o, nothing_rank, NULL));
}

TEST(comm_launch_refuses_bad_options, 1)
{
    static const struct {
        double timeout_s;
        int debug;
        const char *says;
    } bad[] = {
        {-1, 0, "timeout_s = -1"},
        {1e-9, 0, "timeout_s = 1e-09"},
        {1e30, 0, "timeout_s = 1e+30"},
        {5, 7, "debug = 7"},
    };
    for (size_t i = 0; i < TC_LEN(bad); i++) {
        dt_launch_opts o = tc_opts(2, DT_ALGO_AUTO);
        o.timeout_s = bad[i].timeout_s;
        o.debug = bad[i].debug;
        EXPECT_ERR(dt_launch(&o, nothing_rank, NULL), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i].says), "message '%s' lacks '%s'",
               dt_last_error(), bad[i].says);
    }
    dt_launch_opts o = tc_opts(2, DT_ALGO_AUTO);
    o.net = "warp";
    EXPECT_ERR(dt_launch(&o, nothing_rank, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "net: unknown network preset 'warp'"), "message '%s'",
           dt_last_error());
    o = tc_opts(2, DT_ALGO_AUTO);
    o.fault = "kill:rank=x";
    EXPECT_ERR(dt_launch(&o, nothing_rank, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "fault: bad fault 'kill:rank=x'"), "message '%s'",
           dt_last_error());
    o = tc_opts(2, DT_ALGO_AUTO);
    o.timeout_s = 0; /* 0 still means DT_TIMEOUT, else 30 s */
    EXPECT_OK(dt_launch(&o, nothing_rank, NULL));
}

/* ---------------------------------------------------------------- dt_init */

/* A segment named as the launcher names them (see lib/comm/emul/segment.c) with
 * the given mode and size; its name is written to name. */
static int make_segment(char *name, size_t cap, mode_t mode, off_t bytes)
{
    snprintf(name, cap, "/dtlab.%u.attach-test.%d.%016x", (unsigned)getuid(), (int)getpid(),
             (unsigned)dt_hash64((uint64_t)getpid(), (uint64_t)mode, (uint64_t)bytes));
    shm_unlink(name);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT(fd >= 0, "shm_open(%s): %s", name, strerror(errno));
    EXPECT(fchmod(fd, mode) == 0 && ftruncate(fd, bytes) == 0, "sizing %s", name);
    return fd;
}

/* dt_init refuses what is not its job's segment, naming it, and never
 * reads past the end of a short one (a SIGBUS would end this test). About
 * dtrun's jobs (the proc backend): not run under mpirun, where dt_init
 * would join the MPI job instead. */
TEST(comm_init_refuses_bad_segments, 2, .own_backend = 1)
{
    dt_comm *world;
    setenv("WORLD_SIZE", "2", 1);
    setenv("RANK", "0", 1);
    setenv("DT_SHM", "/etc-passwd", 1);
    EXPECT_ERR(dt_init(&world), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "DT_SHM='/etc-passwd'"), "message '%s'", dt_last_error());

    char name[128];
    static const struct {
        mode_t mode;
        off_t bytes;
        const char *says;
    } bad[] = {
        {0600, 0, "shorter than a job's header"},
        {0600, 10, "shorter than a job's header"},
        {0644, 1 << 16, "has mode 0644, expected 0600"},
        {0600, 1 << 16, "is not a dtlab job"},
    };
    for (size_t i = 0; i < TC_LEN(bad); i++) {
        int fd = make_segment(name, sizeof name, bad[i].mode, bad[i].bytes);
        setenv("DT_SHM", name, 1);
        dt_result r = dt_init(&world);
        close(fd);
        shm_unlink(name);
        EXPECT(r != DT_OK, "dt_init joined %s (mode %o, %lld bytes)", name,
               (unsigned)bad[i].mode, (long long)bad[i].bytes);
        EXPECT(strstr(dt_last_error(), bad[i].says) && strstr(dt_last_error(), name),
               "message '%s' lacks '%s' or the name", dt_last_error(), bad[i].says);
    }
    setenv("DT_SHM", name, 1); /* now removed */
    EXPECT_ERR(dt_init(&world), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "cannot open"), "message '%s'", dt_last_error());
    if (geteuid() == 0) { /* only root can give a file away */
        int fd = make_segment(name, sizeof name, 0600, 1 << 16);
        EXPECT(fchown(fd, 65534, 65534) == 0, "fchown: %s", strerror(errno));
        EXPECT_ERR(dt_init(&world), DT_ERR_STATE);
        close(fd);
        shm_unlink(name);
        EXPECT(strstr(dt_last_error(), "belongs to user 65534"), "message '%s'",
               dt_last_error());
    } else {
        dt_log("another user's segment: not exercised (it needs root to make one)");
    }
    unsetenv("DT_SHM");
    setenv("RANK", "abc", 1);
    EXPECT_ERR(dt_init(&world), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "RANK='abc'"), "message '%s'", dt_last_error());
    setenv("RANK", "2", 1);
    EXPECT_ERR(dt_init(&world), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "RANK='2': expected a whole number from 0 to 1"),
           "message '%s'", dt_last_error());
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    EXPECT_OK(dt_init(&world)); /* alone: a job of one rank */
    EXPECT_OK(dt_finalize(world));
}
