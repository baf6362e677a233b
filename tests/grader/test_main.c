/* test_main.c - the main() of every test binary.
 *
 *   grade --list            one line per test, tab-separated:
 *                           test NAME POINTS TIMEOUT VISIBILITY RACE AS_MIB CPU_S FSIZE_MIB TASKS
 *   grade --run NAME        runs one test in this process
 *   grade                   runs every test in this process, in order (for
 *                           debugging; a crash stops the run: use dtgrade)
 *
 * The completion channel. dtgrade passes DT_GRADE_DONE=FD:TOKEN, a pipe and
 * a token that is new for every run. Before anything else runs (a
 * constructor of the highest priority, ahead of any lab file's), the
 * harness takes both; main() then removes the variable and closes the
 * pipe on exec, so that programs the test starts do not inherit them (not
 * the constructor: a constructor of libdt may execute the program again
 * before main, and the new image needs both). It then writes, as single
 * lines:
 *   done TOKEN PID          after the test function returned on the main
 *                           thread (or the list was printed)
 *   fail TOKEN PID          when an EXPECT failed, in any process
 *   exit TOKEN PID RANK S   when exit(S) ends the main process, or a rank's
 *                           process, before the test finished
 * dtgrade passes a test only with "done" from the test's own process and
 * exit status 0 (tools/dtgrade/verdict.c). Without DT_GRADE_DONE (a run by
 * hand) the binary behaves the same and writes nothing.
 *
 * Registration happens in constructors, before main; tests are kept in the
 * order their files list them. */
#include "grader.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static dt_test *first, **last = &first;
/* Set by the running test (dt_test_see) before it starts any rank; read
 * only when it fails. One test runs per process (or one after another). */
static const char *see_where;

/* The channel: set once, before main, by the main thread; read-only after
 * (forked ranks inherit copies, which is what they need to report). */
static int chan_fd = -1;
/* The process that runs the test function (set before it starts; forked
 * ranks inherit the value, which is then their parent's pid). */
static pid_t test_pid;
static dt_backend test_backend; /* DT_BACKEND when the test started */
static char chan_token[48];
static pid_t main_pid;
static volatile int finished;

void dt_test_register(dt_test *t)
{
    t->next = NULL;
    *last = t;
    last = &t->next;
}

static void chan_say(const char *kind, int rank, int status)
{
    if (chan_fd < 0)
        return;
    char line[128];
    int n = rank == -2
        ? snprintf(line, sizeof line, "%s %s %ld\n", kind, chan_token, (long)getpid())
        : snprintf(line, sizeof line, "%s %s %ld %d %d\n", kind, chan_token, (long)getpid(),
                   rank, status);
    ssize_t w = write(chan_fd, line, (size_t)n); /* one short write: atomic on a pipe */
    (void)w;
}

/* exit() before the test finished: in the main process, or in a rank's
 * (a forked rank inherits this handler). Other forked processes of a test
 * may exit as they like. _exit() skips this; the missing "done" tells. */
static void on_early_exit(int status, void *arg)
{
    (void)arg;
    int rank = dt_log_rank();
    if (finished && getpid() == main_pid)
        return;
    if (getpid() != main_pid && rank < 0)
        return;
    chan_say("exit", rank, status);
}

__attribute__((constructor(101))) static void chan_open(void)
{
    const char *v = getenv("DT_GRADE_DONE");
    int fd;
    char token[48];
    if (!v || sscanf(v, "%d:%47s", &fd, token) != 2 || fcntl(fd, F_GETFD) < 0)
        return;
    chan_fd = fd;
    memcpy(chan_token, token, sizeof chan_token);
    main_pid = getpid();
    on_exit(on_early_exit, NULL);
}

/* Before any test runs: nothing the test starts inherits the channel. */
static void chan_keep_private(void)
{
    if (chan_fd < 0)
        return;
    fcntl(chan_fd, F_SETFD, FD_CLOEXEC);
    unsetenv("DT_GRADE_DONE");
}

void dt_test_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    int n;
    if (dt_log_rank() >= 0)
        n = snprintf(msg, sizeof msg, "FAIL: %s:%d: rank %d: ", file, line, dt_log_rank());
    else
        n = snprintf(msg, sizeof msg, "FAIL: %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (see_where) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof msg - used - 1, " (see %s)", see_where);
    }
    strcat(msg, "\n");
    fflush(stdout);
    ssize_t w = write(STDERR_FILENO, msg, strlen(msg));
    (void)w;
    chan_say("fail", -2, 0);
    _exit(1);
}

void dt_test_see(const char *where) { see_where = where; }

/* Running every test in one process (no argument): a skip goes on with
 * the next test instead of ending the process. */
static jmp_buf *skip_to;

void dt_test_skip(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    fflush(stdout);
    dprintf(STDERR_FILENO, "SKIP: %s\n", msg);
    if (skip_to)
        longjmp(*skip_to, 1);
    chan_say("skip", -2, 0);
    finished = 1;
    _exit(0);
}

const char *dt_test_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    if (t && t[0])
        return t;
    mkdir("build", 0777);
    mkdir("build/tmp", 0777);
    return "build/tmp";
}

dt_result dt_test_whole_peak(double counted, double untagged, double formula, double tol,
                             const char *what)
{
    double allowed = (1 + tol) * formula;
    if (counted + untagged <= allowed)
        return DT_OK;
    return dt_fail(DT_ERR_MISMATCH, "%s: the rank's whole peak is %.0f bytes: %.0f of the "
                   "formula's tags and %.0f allocated outside dt_mem_alloc (malloc, calloc, "
                   "realloc, mmap...: memory no tag shows); the formula allows %.0f (%.0f, "
                   "within %g%%)", what, counted + untagged, counted, untagged, allowed, formula,
                   100 * tol);
}

/* ------------------------------------------------ a crash at the memory limit */

/* Under dtgrade's address-space limit (RLIMIT_AS) a failed allocation
 * returns NULL, and code that uses it anyway dies of SIGSEGV. dtgrade
 * samples each process's size, but one that dies right after it reached
 * the limit can end between two samples; so the test's process says, as it
 * dies, how close to the limit it was, and the verdict does not depend on
 * when the sample was taken. The handler runs once (SA_RESETHAND) and
 * returns: the fault repeats with the default action. Not installed without
 * a limit (sanitized builds have none and handle SIGSEGV themselves). */
static long as_limit_kib;

/* VmSize from /proc/self/status, with async-signal-safe calls only. */
static long vm_size_kib(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "VmSize:");
    if (!p)
        return -1;
    long kib = 0;
    for (p += 7; *p == ' ' || *p == '\t'; p++)
        ;
    for (; *p >= '0' && *p <= '9'; p++)
        kib = kib * 10 + (*p - '0');
    return kib;
}

static char *put_long(char *at, long v)
{
    char digits[24];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *at++ = digits[--n];
    return at;
}

static void on_fault(int sig)
{
    (void)sig;
    long kib = vm_size_kib();
    if (kib < 0 || kib < as_limit_kib / 10 * 9)
        return;
    char line[160], *at = line;
    const char *a = "address space: ", *b = " MiB of the process's ", *c =
        " MiB limit in use at the fault: out of memory\n";
    at = stpcpy(at, a);
    at = put_long(at, kib >> 10);
    at = stpcpy(at, b);
    at = put_long(at, as_limit_kib >> 10);
    at = stpcpy(at, c);
    ssize_t w = write(STDERR_FILENO, line, (size_t)(at - line));
    (void)w;
}

static void watch_address_space(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    as_limit_kib = (long)(rl.rlim_cur >> 10);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* ------------------------------------------------ where a rank runs */

/* This process's rank in an MPI job from its launcher's variables, as
 * lib/comm's mpi backend reads them; -1 outside one. */
static int mpi_process_rank(void) { return dt_mpi_world_rank(); }

dt_backend dt_test_backend(void) { return test_backend; }

/* Before each test: who runs it, and the backend its launches should take. */
static void test_starts(void)
{
    test_pid = getpid();
    const char *b = getenv("DT_BACKEND");
    if (!b || !b[0] || dt_backend_parse(b, &test_backend) != DT_OK)
        test_backend = DT_BACKEND_THREAD;
}

dt_result dt_test_on_backend(int world_rank, dt_backend backend)
{
    long me = (long)getpid(), test = (long)test_pid;
    int mpi = mpi_process_rank();
    const char *name = dt_backend_name(backend);
    switch (backend) {
    case DT_BACKEND_THREAD:
        if (me == test)
            return DT_OK;
        return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d runs in process %ld, not in the "
                       "test's process %ld", name, world_rank, me, test);
    case DT_BACKEND_PROC:
        if (me != test)
            return DT_OK;
        return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d runs in the test's own process "
                       "%ld, not in a process of its own", name, world_rank, me);
    case DT_BACKEND_NCCL: /* one process per GPU rank, forked as proc's */
        if (me != test)
            return DT_OK;
        return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d runs in the test's own process "
                       "%ld, not in a process of its own", name, world_rank, me);
    case DT_BACKEND_MPI:
        if (me == test && mpi == world_rank)
            return DT_OK;
        if (mpi < 0)
            return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d runs outside an MPI job "
                           "(no OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK)", name,
                           world_rank);
        return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d runs in MPI process %d%s", name,
                       world_rank, mpi, me == test ? "" : ", in a process the test forked");
    default:
        return dt_fail(DT_ERR_MISMATCH, "backend %s: rank %d cannot tell whether it runs "
                       "there", name, world_rank);
    }
}

/* ------------------------------------------------ the mpi backend */

/* `make check BACKEND=mpi` sets DT_MPI_NP: a test then runs under `mpirun
 * -np DT_MPI_NP`, every process running the whole test (libdt's dt_launch
 * runs each rank in its own process, lib/comm/mpi/mpi_launch.c). This process
 * stays the test's own for the grader: it waits for mpirun and passes when
 * every process did (mpirun's status 0). The ranks' output goes where this
 * process's goes; the channel stays here (chan_keep_private closed it on
 * exec). -1: not asked for, already inside an MPI job, or a test that picks
 * its backends itself (.own_backend: it runs once, here). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Each mpirun gets a session directory of its own: Open MPI's default
 * one in /tmp is shared by every mpirun of the user, and an mpirun that
 * ends removes it while another, started at that moment, is creating its
 * own there ("orte_session_dir failed": two tests at once on a busy
 * machine failed so). Open MPI 4 reads it from orte_tmpdir_base, 5 (PRRTE)
 * from prte_top_session_dir; MPICH's Hydra keeps none. */
static char *own_session_dir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/dtlab-mpirun-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    return mkdtemp(dir);
}

static int run_under_mpirun(const char *self, const dt_test *t)
{
    const char *np = getenv("DT_MPI_NP");
    if (!np || !np[0] || dt_mpi_world_rank() >= 0 || t->own_backend)
        return -1;
    /* The launcher and its flags: DT_MPIRUN, which the Makefile derives
     * from MPICC's family (mpirun.mpich -bind-to none, ...), else Open MPI
     * 4's: more ranks than cores, as on a laptop; a Gradescope container
     * runs as root. */
    char *argv[32], words[512];
    int n = 0;
    const char *launcher = getenv("DT_MPIRUN"), *family = getenv("DT_MPI_FAMILY");
    if (launcher && launcher[0]) {
        snprintf(words, sizeof words, "%s", launcher);
        for (char *w = strtok(words, " \t"); w && n < 24; w = strtok(NULL, " \t"))
            argv[n++] = w;
    } else {
        family = "openmpi4";
        argv[n++] = "mpirun";
        argv[n++] = "--oversubscribe";
        argv[n++] = "--bind-to";
        argv[n++] = "none";
        if (geteuid() == 0)
            argv[n++] = "--allow-run-as-root";
    }
    const char *session_var = !family || !strcmp(family, "openmpi4") ? "OMPI_MCA_orte_tmpdir_base"
                              : !strcmp(family, "openmpi5")          ? "PRTE_MCA_prte_top_session_dir"
                                                                     : NULL;
    argv[n++] = "-np";
    argv[n++] = (char *)np;
    argv[n++] = (char *)self;
    argv[n++] = "--run";
    argv[n++] = (char *)t->name;
    argv[n] = NULL;
    char session[4096];
    int own = session_var && own_session_dir(session, sizeof session) != NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (own)
            setenv(session_var, session, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "FAIL: DT_MPI_NP=%s: cannot run %s (DT_MPIRUN)\n", np, argv[0]);
        _exit(127);
    }
    int status = 0;
    int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
    if (own)
        nftw(session, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!waited)
        return 127;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void finish(void)
{
    fflush(stdout);
    finished = 1;
    chan_say("done", -2, 0);
}

dt_result dt_test_run_fresh(const char *name, const char *const *set, double timeout_s)
{
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return dt_fail(DT_ERR_INTERNAL, "fresh process for %s: fork: %s", name, strerror(errno));
    if (pid == 0) {
        for (int i = 0; set && set[i]; i++)
            putenv((char *)set[i]);
        char *argv[] = {"grade", "--run", (char *)name, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    double deadline = dt_now() + timeout_s;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && dt_now() < deadline)
        dt_sleep(0.005);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return dt_fail(DT_ERR_TIMEOUT, "the fresh process of %s ran past %g s", name, timeout_s);
    }
    if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return dt_fail(DT_ERR_INTERNAL, "the fresh process of %s %s %d (its FAIL line, above, "
                       "says why)", name, w >= 0 && WIFSIGNALED(st) ? "was killed by signal"
                       : "exited with status", w < 0 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st)
                       : WEXITSTATUS(st));
    return DT_OK;
}

int main(int argc, char **argv)
{
    chan_keep_private();
    watch_address_space();
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (dt_test *t = first; t; t = t->next)
            printf("test\t%s\t%d\t%g\t%s\t%d\t%g\t%g\t%g\t%d\n", t->name, t->points,
                   t->timeout_s > 0 ? t->timeout_s : 10.0, t->hidden ? "hidden" : "visible",
                   t->race, t->as_mib, t->cpu_s, t->fsize_mib, t->tasks);
        finish();
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--run") == 0) {
        for (dt_test *t = first; t; t = t->next) {
            if (strcmp(t->name, argv[2]) != 0)
                continue;
            int mpi = run_under_mpirun(argv[0], t);
            if (mpi == 0)
                finish();
            if (mpi >= 0)
                return mpi;
            test_starts();
            t->fn();
            finish();
            return 0;
        }
        fprintf(stderr, "FAIL: no test named '%s'\n", argv[2]);
        return 2;
    }
    if (argc == 1) {
        volatile int n = 0, skipped = 0; /* kept across a skip's longjmp */
        for (dt_test *t = first; t; t = t->next) {
            fprintf(stderr, "-- %s\n", t->name);
            see_where = NULL;
            test_starts();
            jmp_buf here;
            skip_to = &here;
            if (setjmp(here) == 0) {
                t->fn();
                n++;
            } else {
                skipped++;
            }
            skip_to = NULL;
        }
        if (skipped)
            fprintf(stderr, "%d passed, 0 failed, %d skipped\n", n, skipped);
        else
            fprintf(stderr, "%d passed, 0 failed\n", n);
        finish();
        return 0;
    }
    fprintf(stderr, "usage: %s [--list | --run NAME]\n", argv[0]);
    return 2;
}
