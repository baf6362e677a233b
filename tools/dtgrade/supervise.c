/* supervise.c - one run of a test binary, in a supervisor of its own.
 *
 *   dtgrade ── supervisor (a child subreaper) ── the test (its own process
 *                                                 group, with limits)
 *
 * The supervisor starts the test, waits for it until its deadline, counts
 * its processes and threads every SAMPLE_S, and then kills every process
 * the test started: the supervisor is a subreaper, so a process that left
 * the test's process group (setsid) or lost its parent is still its
 * descendant (proctree.c). It reports one line to dtgrade:
 *   pid P                    when the test started
 *   pids P1 P2 ...           the test's processes it saw (lines of up to 16)
 *   end STATUS REAPED TIMEOUT INTERRUPTED OVER_TASKS TASKS VM_KIB CPU_MS LEFT STARVED_MS
 *
 * The deadline is the test's timeout of time it could run: while its most
 * delayed thread waited for a CPU (its schedstat's run delay: other load,
 * or more threads than cores), the deadline moves on by as much, up to
 * STARVE_CAP timeouts in all. A test that sleeps or waits for a message
 * forever is not delayed by the load, and times out on time; one that
 * spins forever runs into its CPU limit.
 * dtgrade reads the test's output (stdout and stderr, one pipe) and its
 * completion channel (another pipe, tests/grader/test_main.c) itself.
 *
 * Limits set on the test before it runs (each inherited by what it forks):
 * address space (RLIMIT_AS, per process), CPU seconds (RLIMIT_CPU, per
 * process), file size (RLIMIT_FSIZE), no core file (RLIMIT_CORE 0); the
 * number of processes and threads of the whole test is counted by the
 * supervisor (RLIMIT_NPROC counts all of a user's processes, not a test's). */
#include "dtgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define SAMPLE_S 0.05          /* how often the supervisor counts the test's tasks */
#define OUT_CAP (512u * 1024u) /* bytes of output kept per run (the tail) */
#define KILL_S 3.0             /* how long the cleanup may take */

/* The limits of one run: the test's own, else the grader's defaults. CPU
 * time defaults to twice the (scaled) timeout, at least 10 s. A sanitized
 * binary gets no address-space limit: ASan and TSan reserve terabytes of
 * shadow memory. */
void limits_resolve(limits *out, const limits *test, int sanitized, double timeout_s)
{
    out->as_mib = test->as_mib > 0 ? test->as_mib : opt.lim.as_mib;
    out->cpu_s = test->cpu_s > 0 ? test->cpu_s : opt.lim.cpu_s;
    if (!(out->cpu_s > 0))
        out->cpu_s = timeout_s * 2 > 10 ? timeout_s * 2 : 10;
    out->fsize_mib = test->fsize_mib > 0 ? test->fsize_mib : opt.lim.fsize_mib;
    out->tasks = test->tasks > 0 ? test->tasks : opt.lim.tasks;
    if (sanitized)
        out->as_mib = 0;
}

static void set_limit(int resource, double soft, double hard)
{
    struct rlimit rl = {(rlim_t)soft, (rlim_t)hard};
    setrlimit(resource, &rl);
}

/* The test's process: its own group, the limits, the pipes, exec. */
static void exec_test(const run_spec *sp, int out_w, int chan_w)
{
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    const double mib = 1024.0 * 1024.0;
    if (sp->lim.as_mib > 0)
        set_limit(RLIMIT_AS, sp->lim.as_mib * mib, sp->lim.as_mib * mib);
    set_limit(RLIMIT_CPU, sp->lim.cpu_s, sp->lim.cpu_s + 2);
    set_limit(RLIMIT_FSIZE, sp->lim.fsize_mib * mib, sp->lim.fsize_mib * mib);
    set_limit(RLIMIT_CORE, 0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    dup2(out_w, STDOUT_FILENO);
    dup2(out_w, STDERR_FILENO);
    fcntl(chan_w, F_SETFD, 0); /* the channel survives exec (and only it) */
    char v[96];
    snprintf(v, sizeof v, "%d:%s", chan_w, sp->token);
    setenv("DT_GRADE_DONE", v, 1);
    setenv("DT_JOB_ID", sp->job, 1);
    /* A folder of the test's own for what it writes (leftover.c checks
     * that it is empty afterwards). */
    if (sp->tmpdir[0])
        setenv("TMPDIR", sp->tmpdir, 1);
    snprintf(v, sizeof v, "%g", sp->timeout_s);
    setenv("DT_TEST_TIMEOUT", v, 1);
    if (sp->blas_mark[0])
        setenv("DT_BLAS_MARK", sp->blas_mark, 1);
    /* libdt runs its BLAS on one thread unless DT_BLAS_THREADS says more,
     * but OpenBLAS starts a pool of a thread per core as it loads, before
     * libdt can say so: a test would hold threads and address space it
     * never uses, and a main thread's pthread_exit would leave the process
     * alive (a TIMEOUT, not the EXIT it is). A value already set is kept. */
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    if (sp->test)
        execl(sp->binary, sp->binary, "--run", sp->test, (char *)NULL);
    else
        execl(sp->binary, sp->binary, "--list", (char *)NULL);
    fprintf(stderr, "FAIL: cannot run %s: %s\n", sp->binary, strerror(errno));
    _exit(127);
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        _exit(3);
}

/* The supervisor: never returns. */
static void supervise(const run_spec *sp, pid_t grader, int out_w, int chan_w, int rep_w)
{
    /* The signals that stop a run arrive through sigtimedwait only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the grader died: clean up */
#endif
    run_report rep = {0};
    if (getppid() != grader)
        rep.interrupted = 1;
    pid_t t = rep.interrupted ? -1 : fork();
    if (t == 0) {
        close(rep_w);
        exec_test(sp, out_w, chan_w);
    }
    close(out_w);
    close(chan_w);
    if (t < 0) {
        say(rep_w, "end 0 0 0 1 0 0 0 0 0 0\n");
        _exit(0);
    }
    setpgid(t, t); /* also here: no race with the child's own call */
    say(rep_w, "pid %d\n", (int)t);
    double start = now_s(), deadline = start + sp->timeout_s, next_sample = start + 0.01;
    double starved = 0, starve_cap = STARVE_CAP * sp->timeout_s;
    tree_sample ts = {0};
    while (!rep.reaped) {
        double now = now_s(), wake = next_sample < deadline ? next_sample : deadline;
        if (now >= deadline) {
            rep.timed_out = 1;
            break;
        }
        if (now >= next_sample) {
            proctree_sample(getpid(), &ts);
            rep.tasks_peak = ts.tasks > rep.tasks_peak ? ts.tasks : rep.tasks_peak;
            rep.vm_peak_kib = ts.vm_peak_kib > rep.vm_peak_kib ? ts.vm_peak_kib : rep.vm_peak_kib;
            if (ts.tasks > sp->lim.tasks) {
                rep.over_tasks = 1;
                break;
            }
            double more = ts.waited_s < starve_cap - starved ? ts.waited_s : starve_cap - starved;
            starved += more;
            deadline += more;
            next_sample = now + SAMPLE_S;
            continue;
        }
        double dt = wake - now;
        struct timespec ts = {(time_t)dt, (long)((dt - (double)(time_t)dt) * 1e9)};
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, &ts);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            rep.interrupted = 1;
            break;
        }
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p == t) {
                rep.status = st;
                rep.reaped = 1;
            }
        }
    }
    rep.leftovers = proctree_kill(t, KILL_S, t, &rep.status, &rep.reaped);
    /* Everything the test started was reaped here or by the test: the
     * children's usage is the test's. A peak that sampling missed (a short
     * test, or one that died at once) shows in the largest resident size. */
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        rep.cpu_ms = (long)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
                     (long)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
        if (ru.ru_maxrss > rep.vm_peak_kib)
            rep.vm_peak_kib = ru.ru_maxrss;
    }
    rep.starved_ms = (long)(starved * 1000);
    /* The processes seen, for the files a test leaves with its pid in
     * their name (leftover.c); a few per line, lines short. */
    for (int i = 0; i < ts.npids; i += 16) {
        char line[256];
        int len = snprintf(line, sizeof line, "pids");
        for (int k = i; k < ts.npids && k < i + 16; k++)
            len += snprintf(line + len, sizeof line - (size_t)len, " %d", (int)ts.pids[k]);
        say(rep_w, "%s\n", line);
    }
    say(rep_w, "end %d %d %d %d %d %d %ld %ld %d %ld\n", rep.status, rep.reaped, rep.timed_out,
        rep.interrupted, rep.over_tasks, rep.tasks_peak, rep.vm_peak_kib, rep.cpu_ms,
        rep.leftovers, rep.starved_ms);
    _exit(0);
}

static void make_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        die("pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

void run_start(run_t *r, const run_spec *sp)
{
    memset(r, 0, sizeof *r);
    int out[2], chan[2], rep[2];
    make_pipe(out);
    make_pipe(chan);
    make_pipe(rep);
    fflush(stdout);
    fflush(stderr);
    pid_t grader = getpid();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(out[0]);
        close(chan[0]);
        close(rep[0]);
        supervise(sp, grader, out[1], chan[1], rep[1]);
    }
    close(out[1]);
    close(chan[1]);
    close(rep[1]);
    r->sup = pid;
    r->out_fd = out[0];
    r->chan_fd = chan[0];
    r->rep_fd = rep[0];
    for (int i = 0; i < 3; i++) {
        int fd = i == 0 ? r->out_fd : i == 1 ? r->chan_fd : r->rep_fd;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    r->started = now_s();
    r->deadline = r->started + sp->timeout_s * (1 + STARVE_CAP); /* the supervisor's latest */
}

/* ------------------------------------------------------------ reading */

static void keep_output(run_output *o, const char *data, size_t n)
{
    if (!o->buf)
        o->buf = xmalloc(OUT_CAP);
    if (n > OUT_CAP) {
        data += n - OUT_CAP;
        n = OUT_CAP;
    }
    if (o->len + n > OUT_CAP) {
        /* Keep the tail, but remember the first FAIL: line before it goes. */
        size_t drop = o->len + n - OUT_CAP;
        if (!o->first_fail[0]) {
            const char *f = find_line(o->buf, o->buf + drop, "FAIL: ");
            if (f)
                copy_line(o->first_fail, sizeof o->first_fail, f, o->buf + o->len);
        }
        memmove(o->buf, o->buf + drop, o->len - drop);
        o->len -= drop;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

static void parse_report(run_t *r)
{
    char *nl;
    while ((nl = memchr(r->rep_line, '\n', r->rep_len)) != NULL) {
        *nl = '\0';
        run_report *p = &r->rep;
        int pid;
        if (sscanf(r->rep_line, "pid %d", &pid) == 1) {
            r->test = pid;
        } else if (!strncmp(r->rep_line, "pids ", 5)) {
            char *at = r->rep_line + 5, *end;
            long v;
            while (r->npids < MAX_PIDS && (v = strtol(at, &end, 10)) > 0 && end != at) {
                r->pids[r->npids++] = (pid_t)v;
                at = end;
            }
        } else if (sscanf(r->rep_line, "end %d %d %d %d %d %d %ld %ld %d %ld", &p->status,
                        &p->reaped, &p->timed_out, &p->interrupted, &p->over_tasks,
                        &p->tasks_peak, &p->vm_peak_kib, &p->cpu_ms, &p->leftovers,
                        &p->starved_ms) == 10)
            r->ended = 1;
        size_t used = (size_t)(nl + 1 - r->rep_line);
        memmove(r->rep_line, nl + 1, r->rep_len - used);
        r->rep_len -= used;
    }
}

/* Reads what is there on one of the run's pipes (non-blocking). */
static void drain(run_t *r, int which)
{
    char chunk[8192];
    int fd = which == 0 ? r->out_fd : which == 1 ? r->chan_fd : r->rep_fd;
    int *eof = which == 0 ? &r->out_eof : which == 1 ? &r->chan_eof : &r->rep_eof;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                *eof = 1;
            return;
        }
        if (which == 0) {
            keep_output(&r->out, chunk, (size_t)n);
        } else if (which == 1) { /* a few short lines; the rest is ignored */
            size_t room = sizeof r->out.chan - 1 - r->out.chan_len;
            size_t k = (size_t)n < room ? (size_t)n : room;
            memcpy(r->out.chan + r->out.chan_len, chunk, k);
            r->out.chan_len += k;
            r->out.chan[r->out.chan_len] = '\0';
        } else {
            size_t room = sizeof r->rep_line - 1 - r->rep_len;
            size_t k = (size_t)n < room ? (size_t)n : room;
            memcpy(r->rep_line + r->rep_len, chunk, k);
            r->rep_len += k;
            parse_report(r);
        }
    }
}

/* Waits until one of the runs' pipes has data or `wake` (a time of
 * now_s()), then reads what is there. */
void run_poll_fds(run_t *const *runs, int n, double wake)
{
    struct pollfd pfd[3 * MAX_SLOTS];
    int who[3 * MAX_SLOTS], which[3 * MAX_SLOTS], np = 0;
    for (int i = 0; i < n; i++) {
        for (int w = 0; w < 3; w++) {
            int eof = w == 0 ? runs[i]->out_eof : w == 1 ? runs[i]->chan_eof : runs[i]->rep_eof;
            if (eof)
                continue;
            pfd[np].fd = w == 0 ? runs[i]->out_fd : w == 1 ? runs[i]->chan_fd : runs[i]->rep_fd;
            pfd[np].events = POLLIN;
            who[np] = i;
            which[np++] = w;
        }
    }
    int ms = (int)((wake - now_s()) * 1000) + 1;
    if (ms < 1)
        ms = 1;
    if (np == 0) {
        struct timespec ts = {0, (long)ms * 1000 * 1000};
        nanosleep(&ts, NULL);
        return;
    }
    if (poll(pfd, (nfds_t)np, ms) <= 0)
        return;
    for (int i = 0; i < np; i++)
        if (pfd[i].revents)
            drain((run_t *)runs[who[i]], which[i]);
}

/* Asks the supervisor to stop the run (the grader was interrupted). */
void run_stop(run_t *r)
{
    if (r->sup > 0)
        kill(r->sup, SIGTERM);
}

/* After the supervisor's report (or its end): the last output, and the
 * supervisor reaped. A supervisor that died without a report is replaced
 * by a kill of the test's group and an "interrupted" report. */
void run_finish(run_t *r)
{
    double until = now_s() + 1.0;
    while (!r->rep_eof && now_s() < until) {
        run_t *one[1] = {r};
        run_poll_fds(one, 1, now_s() + 0.05);
    }
    if (!r->ended) {
        kill(r->sup, SIGKILL);
        if (r->test > 0)
            kill(-r->test, SIGKILL);
        r->rep.interrupted = 1;
    }
    int st;
    while (waitpid(r->sup, &st, 0) < 0 && errno == EINTR)
        ;
    /* Every writer is gone: the pipes end at once (a short wait covers a
     * process the supervisor could not kill). */
    until = now_s() + 0.5;
    while ((!r->out_eof || !r->chan_eof) && now_s() < until) {
        run_t *one[1] = {r};
        run_poll_fds(one, 1, now_s() + 0.05);
    }
    close(r->out_fd);
    close(r->chan_fd);
    close(r->rep_fd);
    r->sup = 0;
}
