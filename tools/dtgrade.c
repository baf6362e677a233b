/* dtgrade - the grader: runs every test of one or more lab test binaries in
 * isolation and prints a score table.
 *
 *   dtgrade [options] [NAME=]GRADE_BINARY ...
 *
 * For each binary it asks `grade --list` for the tests (name, points,
 * timeout, visibility), then runs each as `grade --run NAME` in a forked
 * process of its own process group, with stdout and stderr captured through
 * one pipe and the environment variable DT_JOB_ID set to a name unique to
 * that test. libdt names its shared-memory segments /dtlab.<uid>.<DT_JOB_ID>...,
 * so after the test, whatever happened, the grader kills the whole process
 * group and unlinks every /dev/shm/dtlab.<uid>.<DT_JOB_ID>* entry.
 *
 * A test passes when its process exits with status 0 before its timeout.
 * Otherwise the reason is one line:
 *   CRASH: SIGSEGV            killed by a signal (any signal)
 *   TIMEOUT after 10 s        still running at its deadline
 *   SANITIZER: ...            AddressSanitizer / UBSan / TSan reported an error
 *   FAIL: file:line: ...      the first "FAIL:" line the test printed
 *   FAIL: exit status N       a non-zero exit without a FAIL: line
 * A missing binary means the lab did not build: its tests (read from the
 * TEST(...) lines of the .c files in tests/NAME/) are all reported BUILD FAILED, so the
 * lab scores 0 out of its real maximum.
 *
 * Exit status: 0 whatever the score; 2 on a usage or grader error; 1 when an
 * --expect-* or --min-score-full condition does not hold.
 *
 * libc and POSIX only (plus Linux's child subreaper when available, so that
 * grandchildren of a test are reaped here). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MAX_SLOTS 16
#define OUT_CAP (512u * 1024u) /* bytes of output kept per test (the tail) */
#define DIGEST_LINES 14        /* lines of output shown for a failure */
#define RANK_LINES 4           /* lines per rank for a multi-rank failure */
#define LINE_MAX_SHOWN 240

enum status { ST_PASS, ST_FAIL, ST_CRASH, ST_TIMEOUT, ST_SANITIZER, ST_BUILD, ST_SKIP };
static const char *status_name[] = {"pass", "FAIL", "CRASH", "TIMEOUT", "SANITIZER",
                                    "BUILD", "skip"};

typedef struct {
    char *name;
    int points;
    double timeout_s;
    int hidden;
    enum status st;
    char *reason;  /* one line; NULL when passed */
    char *digest;  /* output tail, per rank when ranks spoke; may be NULL */
    double seconds;
} test_row;

typedef struct {
    const char *name;   /* e.g. 02-collectives */
    const char *binary;
    test_row *rows;
    int nrows;
    int score, max;
    int passed, failed;
    int build_failed;
} lab_t;

typedef struct {
    pid_t pid;
    int fd;
    int row;
    double deadline, started;
    char job[64];
    char *buf;
    size_t len;
    char first_fail[LINE_MAX_SHOWN + 1];
    int exited, status, timed_out, eof;
} slot_t;

static struct {
    const char *results;
    const char *tests_root;
    const char *job_prefix;
    const char *only;
    double timeout_scale;
    int jobs;
    int hidden;          /* run hidden tests */
    int quiet, verbose;
    int min_score_full, expect_zero, expect_loss, stop_on_fail;
} opt = {NULL, "tests", NULL, NULL, 1.0, 1, 1, 0, 0, 0, 0, 0, 0};

static unsigned job_counter;
static volatile sig_atomic_t interrupted;
static slot_t slots[MAX_SLOTS];

/* ------------------------------------------------------------ small helpers */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtgrade: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s);
    char *p = xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *signal_name(int sig)
{
    static char other[32];
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGALRM: return "SIGALRM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: snprintf(other, sizeof other, "signal %d", sig); return other;
    }
}

/* Copies one line (up to '\n') into out, at most LINE_MAX_SHOWN bytes. */
static void copy_line(char *out, const char *s, const char *end)
{
    size_t n = 0;
    while (s + n < end && s[n] != '\n' && n < LINE_MAX_SHOWN)
        n++;
    memcpy(out, s, n);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
}

/* Finds the first line of [s, end) that starts with prefix. */
static const char *find_line(const char *s, const char *end, const char *prefix)
{
    size_t pn = strlen(prefix);
    for (const char *p = s; p < end;) {
        if ((size_t)(end - p) >= pn && memcmp(p, prefix, pn) == 0)
            return p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        p = nl + 1;
    }
    return NULL;
}

/* Finds the first line of [s, end) that contains needle. */
static const char *find_line_with(const char *s, const char *end, const char *needle)
{
    size_t nn = strlen(needle);
    for (const char *p = s; p + nn <= end; p++) {
        if (memcmp(p, needle, nn) == 0) {
            while (p > s && p[-1] != '\n')
                p--;
            return p;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ test lists */

/* Appends a zeroed row named name to lab's table (grown by doubling). */
static test_row *add_row(lab_t *lab, int *cap, const char *name, int points, int hidden)
{
    if (lab->nrows == *cap) {
        *cap *= 2;
        lab->rows = realloc(lab->rows, sizeof(test_row) * (size_t)*cap);
        if (!lab->rows)
            die("out of memory");
    }
    test_row *r = &lab->rows[lab->nrows++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(name);
    r->points = points;
    r->hidden = hidden;
    return r;
}

/* Parses `grade --list` output: name \t points \t timeout \t visibility. */
static int parse_list(lab_t *lab, char *text)
{
    int cap = 16;
    lab->rows = xmalloc(sizeof(test_row) * (size_t)cap);
    lab->nrows = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char name[256], vis[32];
        int points;
        double timeout;
        if (sscanf(line, "%255[^\t]\t%d\t%lf\t%31s", name, &points, &timeout, vis) != 4)
            return -1;
        add_row(lab, &cap, name, points, strcmp(vis, "hidden") == 0)->timeout_s = timeout;
    }
    return 0;
}

/* Runs `binary --list` and returns its stdout, or NULL when it failed. */
static char *read_list(const char *binary)
{
    int fds[2];
    if (pipe(fds) != 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(binary, binary, "--list", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    double deadline = now_s() + 10.0;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int ms = (int)((deadline - now_s()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) == 0) {
            kill(pid, SIGKILL);
            break;
        }
        if (len + 1024 > cap)
            buf = realloc(buf, cap *= 2);
        if (!buf)
            die("out of memory");
        ssize_t n = read(fds[0], buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    buf[len] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A lab that did not build: its tests are read from the TEST(...) lines of
 * its sources so that it scores 0 out of its real maximum. */
static void scan_sources(lab_t *lab)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", opt.tests_root, lab->name);
    int cap = 16;
    lab->rows = xmalloc(sizeof(test_row) * (size_t)cap);
    lab->nrows = 0;
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    for (int e = 0; e < n; e++) {
        const char *fn = ents[e]->d_name;
        size_t fl = strlen(fn);
        int hidden_file = strncmp(fn, "hidden_", 7) == 0;
        if (fl < 3 || strcmp(fn + fl - 2, ".c") != 0 || (hidden_file && !opt.hidden)) {
            free(ents[e]);
            continue;
        }
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, fn);
        free(ents[e]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char *p = line;
            while (*p == ' ' || *p == '\t')
                p++;
            char kind[32], name[256];
            int points;
            if (sscanf(p, "%31[A-Z_](%255[A-Za-z0-9_] , %d", kind, name, &points) != 3)
                continue;
            int hidden = strncmp(kind, "TEST_HIDDEN", 11) == 0;
            if (strcmp(kind, "TEST") && strcmp(kind, "TEST_T") && !hidden)
                continue;
            if (hidden && !opt.hidden)
                continue;
            add_row(lab, &cap, name, points, hidden);
        }
        fclose(f);
    }
    if (n >= 0)
        free(ents);
    if (lab->nrows == 0) { /* no sources either: one row for the build */
        test_row *r = &lab->rows[lab->nrows++];
        memset(r, 0, sizeof *r);
        r->name = xstrdup("build");
        r->points = 1;
    }
    for (int i = 0; i < lab->nrows; i++) {
        lab->rows[i].st = ST_BUILD;
        lab->rows[i].reason = xprintf("BUILD FAILED: %s is missing", lab->binary);
    }
}

/* ------------------------------------------------------------ cleanup */

/* Unlinks /dev/shm/dtlab.<uid>.<job>* : the segments of this test's job. */
static void unlink_shm(const char *job)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "dtlab.%u.%s", (unsigned)getuid(), job);
    size_t pl = strlen(prefix);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) == 0) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

/* Reaps whatever exited: slot children and, with the subreaper, orphans. */
static void reap(void)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < MAX_SLOTS; i++) {
            if (slots[i].pid == pid && !slots[i].exited) {
                slots[i].exited = 1;
                slots[i].status = st;
            }
        }
    }
}

static void on_signal(int sig)
{
    interrupted = sig;
}

/* ------------------------------------------------------------ running */

static void slot_append(slot_t *s, const char *data, size_t n)
{
    if (!s->buf)
        s->buf = xmalloc(OUT_CAP);
    if (n > OUT_CAP) {
        data += n - OUT_CAP;
        n = OUT_CAP;
    }
    if (s->len + n > OUT_CAP) {
        /* Keep the tail, but remember the first FAIL: line before it goes. */
        size_t drop = s->len + n - OUT_CAP;
        if (!s->first_fail[0]) {
            const char *f = find_line(s->buf, s->buf + drop, "FAIL: ");
            if (f)
                copy_line(s->first_fail, f, s->buf + s->len);
        }
        memmove(s->buf, s->buf + drop, s->len - drop);
        s->len -= drop;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
}

static void slot_drain(slot_t *s)
{
    char chunk[8192];
    for (;;) {
        ssize_t n = read(s->fd, chunk, sizeof chunk);
        if (n > 0) {
            slot_append(s, chunk, (size_t)n);
            continue;
        }
        if (n == 0)
            s->eof = 1;
        break; /* EAGAIN, EOF or error */
    }
}

static void start_test(slot_t *s, const lab_t *lab, int row)
{
    const test_row *r = &lab->rows[row];
    memset(s, 0, sizeof *s);
    s->row = row;
    snprintf(s->job, sizeof s->job, "%s%05u", opt.job_prefix, job_counter++);
    int fds[2];
    if (pipe(fds) != 0)
        die("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        setenv("DT_JOB_ID", s->job, 1);
        char tmo[32];
        snprintf(tmo, sizeof tmo, "%g", r->timeout_s * opt.timeout_scale);
        setenv("DT_TEST_TIMEOUT", tmo, 1);
        execl(lab->binary, lab->binary, "--run", r->name, (char *)NULL);
        fprintf(stderr, "FAIL: cannot run %s: %s\n", lab->binary, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: no race with the child's own call */
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    s->pid = pid;
    s->fd = fds[0];
    s->started = now_s();
    s->deadline = s->started + r->timeout_s * opt.timeout_scale;
}

/* The output tail: when ranks spoke ("[rank R] ..."), the last lines of each
 * rank, so that a multi-rank failure shows every rank, not only the last. */
static char *make_digest(const char *buf, size_t len)
{
    if (len == 0)
        return NULL;
    enum { MAXR = 64 };
    const char *rank_last[MAXR][RANK_LINES];
    int rank_n[MAXR] = {0};
    const char *gen[DIGEST_LINES];
    int gen_n = 0, any_rank = 0;
    const char *end = buf + len;
    for (const char *p = buf; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        int r;
        if (sscanf(p, "[rank %d]", &r) == 1 && r >= 0 && r < MAXR) {
            rank_last[r][rank_n[r] % RANK_LINES] = p;
            rank_n[r]++;
            any_rank = 1;
        } else if (p != next) {
            gen[gen_n % DIGEST_LINES] = p;
            gen_n++;
        }
        p = next;
    }
    size_t cap = 4096, used = 0;
    char *out = xmalloc(cap);
    out[0] = '\0';
    char line[LINE_MAX_SHOWN + 1];
#define DIGEST_ADD(ptr)                                                      \
    do {                                                                     \
        copy_line(line, (ptr), end);                                         \
        size_t ln = strlen(line);                                            \
        if (used + ln + 2 > cap)                                             \
            out = realloc(out, cap = 2 * cap + ln);                          \
        if (!out)                                                            \
            die("out of memory");                                            \
        memcpy(out + used, line, ln);                                        \
        used += ln;                                                          \
        out[used++] = '\n';                                                  \
        out[used] = '\0';                                                    \
    } while (0)
    int gshow = any_rank ? DIGEST_LINES / 2 : DIGEST_LINES;
    int g0 = gen_n > gshow ? gen_n - gshow : 0;
    for (int i = g0; i < gen_n; i++)
        DIGEST_ADD(gen[i % DIGEST_LINES]);
    for (int r = 0; r < MAXR; r++) {
        int k0 = rank_n[r] > RANK_LINES ? rank_n[r] - RANK_LINES : 0;
        for (int k = k0; k < rank_n[r]; k++)
            DIGEST_ADD(rank_last[r][k % RANK_LINES]);
    }
#undef DIGEST_ADD
    if (used == 0) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *sanitizer_markers[] = {
    "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
    "runtime error:", "ERROR: UndefinedBehaviorSanitizer", NULL};

/* The test's process is gone (or timed out): decide its verdict. */
static void finish_test(slot_t *s, lab_t *lab)
{
    test_row *r = &lab->rows[s->row];
    /* Kill whatever the test left (forked ranks, stray children), then
     * collect the last output and remove its shared memory. */
    kill(-s->pid, SIGKILL);
    if (!s->exited) {
        int st;
        if (waitpid(s->pid, &st, 0) == s->pid) {
            s->exited = 1;
            s->status = st;
        }
    }
    double until = now_s() + 0.5;
    while (!s->eof && now_s() < until) {
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0)
            slot_drain(s);
    }
    close(s->fd);
    reap();
    unlink_shm(s->job);

    const char *buf = s->buf ? s->buf : "";
    const char *end = buf + s->len;
    r->seconds = now_s() - s->started;
    r->digest = make_digest(buf, s->len);
    char line[LINE_MAX_SHOWN + 1];
    const char *san = NULL;
    for (int i = 0; sanitizer_markers[i] && !san; i++)
        san = find_line_with(buf, end, sanitizer_markers[i]);
    const char *failp = find_line(buf, end, "FAIL: ");
    if (!s->first_fail[0] && failp)
        copy_line(s->first_fail, failp, end);

    if (s->timed_out) {
        r->st = ST_TIMEOUT;
        r->reason = xprintf("TIMEOUT after %g s", r->timeout_s * opt.timeout_scale);
    } else if (WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0 && !san) {
        r->st = ST_PASS;
    } else if (san) {
        copy_line(line, san, end);
        const char *l = line;
        while (*l == '=' || isdigit((unsigned char)*l) || *l == ' ')
            l++; /* drop ASan's "==1234==" */
        r->st = ST_SANITIZER;
        r->reason = xprintf("SANITIZER: %s", l);
    } else if (WIFSIGNALED(s->status)) {
        r->st = ST_CRASH;
        r->reason = xprintf("CRASH: %s", signal_name(WTERMSIG(s->status)));
    } else if (s->first_fail[0]) {
        r->st = ST_FAIL;
        r->reason = xstrdup(s->first_fail);
    } else {
        r->st = ST_FAIL;
        int code = WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1;
        if (code == 127 || code == 2) {
            const char *last = NULL; /* e.g. "no test named ..." */
            for (const char *p = buf; p < end;) {
                last = p;
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                p = nl ? nl + 1 : end;
            }
            if (last) {
                copy_line(line, last, end);
                r->reason = xprintf("FAIL: exit status %d: %s", code, line);
            }
        }
        if (!r->reason)
            r->reason = xprintf("FAIL: exit status %d", code);
    }
    free(s->buf);
    s->buf = NULL;
    s->pid = 0;
}

static void print_row(const lab_t *lab, const test_row *r)
{
    if (opt.quiet && (r->st == ST_PASS || r->st == ST_SKIP))
        return;
    /* Tests left out on purpose (--only, --no-hidden) are not shown. */
    if (r->st == ST_SKIP && r->reason &&
        (!strcmp(r->reason, "not selected") || !strcmp(r->reason, "hidden")))
        return;
    /* A skeleton is expected to fail: show only what is not a plain FAIL. */
    if (opt.quiet && opt.expect_zero && r->st == ST_FAIL)
        return;
    (void)lab;
    int got = r->st == ST_PASS ? r->points : 0;
    printf("  %-34s %3d/%-3d %-9s %s%s\n", r->name, got, r->points, status_name[r->st],
           r->reason ? r->reason : "", r->hidden ? "  (hidden)" : "");
    if (r->st != ST_PASS && r->st != ST_SKIP && r->st != ST_BUILD && r->digest &&
        !opt.quiet) {
        /* The output tail, indented, unless it is just the reason again. */
        int n = 0;
        for (const char *p = r->digest; *p; p++)
            n += *p == '\n';
        int same = n == 1 && r->reason && strncmp(r->digest, r->reason, strlen(r->reason)) == 0;
        if (!same || opt.verbose) {
            for (const char *p = r->digest; *p;) {
                const char *nl = strchr(p, '\n');
                int ln = nl ? (int)(nl - p) : (int)strlen(p);
                printf("      | %.*s\n", ln, p);
                p += ln + (nl ? 1 : 0);
            }
        }
    }
    fflush(stdout);
}

static void run_lab(lab_t *lab)
{
    struct stat sb;
    printf("== %s  (%s)\n", lab->name, lab->binary);
    char *list = NULL;
    if (stat(lab->binary, &sb) != 0 || !(sb.st_mode & S_IXUSR)) {
        lab->build_failed = 1;
        scan_sources(lab);
    } else if (!(list = read_list(lab->binary)) || parse_list(lab, list) != 0) {
        lab->build_failed = 1;
        scan_sources(lab);
        for (int i = 0; i < lab->nrows; i++) {
            free(lab->rows[i].reason);
            lab->rows[i].reason = xprintf("BUILD FAILED: '%s --list' did not work",
                                          lab->binary);
        }
    }
    free(list);
    if (!lab->build_failed) {
        for (int i = 0; i < lab->nrows; i++) {
            test_row *r = &lab->rows[i];
            if ((r->hidden && !opt.hidden) || (opt.only && !strstr(r->name, opt.only))) {
                r->st = ST_SKIP;
                r->reason = xstrdup(r->hidden && !opt.hidden ? "hidden" : "not selected");
            } else {
                r->st = -1; /* pending */
            }
        }
        printf("  %-34s %-7s %-9s %s\n", "test", "points", "status", "reason");
        int next = 0, printed = 0, active = 0, stop = 0;
        for (;;) {
            while (active < opt.jobs && next < lab->nrows && !interrupted && !stop) {
                if ((int)lab->rows[next].st == -1) {
                    for (int k = 0; k < opt.jobs; k++) {
                        if (!slots[k].pid) {
                            start_test(&slots[k], lab, next);
                            active++;
                            break;
                        }
                    }
                }
                next++;
            }
            /* Rows are printed in order, as soon as each is known. */
            while (printed < lab->nrows && (int)lab->rows[printed].st != -1)
                print_row(lab, &lab->rows[printed++]);
            if (active == 0 && (next >= lab->nrows || interrupted || stop))
                break;
            struct pollfd pfd[MAX_SLOTS];
            int idx[MAX_SLOTS], np = 0;
            double wake = now_s() + 0.05;
            for (int k = 0; k < opt.jobs; k++) {
                if (slots[k].pid && !slots[k].eof) {
                    pfd[np].fd = slots[k].fd;
                    pfd[np].events = POLLIN;
                    idx[np++] = k;
                }
                if (slots[k].pid && slots[k].deadline < wake)
                    wake = slots[k].deadline;
            }
            int ms = (int)((wake - now_s()) * 1000) + 1;
            if (ms < 1)
                ms = 1;
            if (np > 0 && poll(pfd, (nfds_t)np, ms) > 0) {
                for (int i = 0; i < np; i++)
                    if (pfd[i].revents)
                        slot_drain(&slots[idx[i]]);
            } else if (np == 0) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            reap();
            double t = now_s();
            for (int k = 0; k < opt.jobs; k++) {
                slot_t *s = &slots[k];
                if (!s->pid)
                    continue;
                if (!s->exited && (t >= s->deadline || interrupted))
                    s->timed_out = 1;
                if (s->exited || s->timed_out) {
                    finish_test(s, lab);
                    active--;
                    if (opt.stop_on_fail && lab->rows[s->row].st != ST_PASS)
                        stop = 1;
                }
            }
        }
        for (int i = 0; i < lab->nrows; i++) {
            if ((int)lab->rows[i].st == -1) { /* not run: interrupted or stopped */
                lab->rows[i].st = ST_SKIP;
                lab->rows[i].reason = xstrdup(stop ? "not run (--stop-on-fail)" : "interrupted");
            }
        }
        while (printed < lab->nrows)
            print_row(lab, &lab->rows[printed++]);
    } else {
        printf("  %-34s %-7s %-9s %s\n", "test", "points", "status", "reason");
        for (int i = 0; i < lab->nrows; i++)
            print_row(lab, &lab->rows[i]);
    }
    for (int i = 0; i < lab->nrows; i++) {
        test_row *r = &lab->rows[i];
        if (r->st == ST_SKIP)
            continue;
        lab->max += r->points;
        if (r->st == ST_PASS) {
            lab->score += r->points;
            lab->passed++;
        } else {
            lab->failed++;
        }
    }
    printf("  Score: %d/%d%s\n\n", lab->score, lab->max,
           lab->build_failed ? "  (BUILD FAILED)" : "");
}

/* ------------------------------------------------------------ results.json */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            p++;
        } else if (c == '\n') {
            fputs("\\n", f);
            p++;
        } else if (c == '\t') {
            fputs("\\t", f);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            p++;
        } else {
            /* Valid UTF-8 is kept; any other byte becomes '?'. */
            int n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            int ok = n > 0;
            for (int i = 1; ok && i < n; i++)
                ok = (p[i] & 0xc0) == 0x80;
            if (ok) {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            } else {
                fputc('?', f);
                p++;
            }
        }
    }
    fputc('"', f);
}

static void mkdirs_for(const char *path)
{
    char tmp[2048];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
}

static int write_results(const lab_t *labs, int nlabs, int score, int max, double secs)
{
    mkdirs_for(opt.results);
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", opt.results);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "dtgrade: cannot write %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"score\": %d,\n  \"max_score\": %d,\n  \"execution_time\": %.0f,\n",
            score, max, secs);
    fprintf(f, "  \"output\": ");
    char summary[256];
    snprintf(summary, sizeof summary, "Score: %d/%d", score, max);
    json_str(f, summary);
    fprintf(f, ",\n  \"tests\": [");
    int first = 1;
    for (int l = 0; l < nlabs; l++) {
        for (int i = 0; i < labs[l].nrows; i++) {
            const test_row *r = &labs[l].rows[i];
            if (r->st == ST_SKIP)
                continue;
            char name[512];
            snprintf(name, sizeof name, "%s/%s", labs[l].name, r->name);
            char *out;
            if (r->st == ST_PASS)
                out = xprintf("passed\n%s", r->digest ? r->digest : "");
            else
                out = xprintf("%s\n%s", r->reason ? r->reason : "", r->digest ? r->digest : "");
            fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
            json_str(f, name);
            fprintf(f, ", \"score\": %d, \"max_score\": %d, \"status\": \"%s\", "
                       "\"visibility\": \"%s\",\n     \"output\": ",
                    r->st == ST_PASS ? r->points : 0, r->points,
                    r->st == ST_PASS ? "passed" : "failed", r->hidden ? "hidden" : "visible");
            json_str(f, out);
            fprintf(f, "}");
            free(out);
            first = 0;
        }
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0 || rename(tmp, opt.results) != 0) {
        fprintf(stderr, "dtgrade: cannot write %s\n", opt.results);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
        "usage: dtgrade [options] [NAME=]GRADE_BINARY ...\n"
        "  NAME defaults to the binary's folder name (e.g. 02-collectives).\n"
        "  --results FILE     where to write results.json (default: $DT_RESULTS,\n"
        "                     else build/results.json)\n"
        "  --tests-root DIR   where a lab's test sources are (default: tests); read\n"
        "                     to list the tests of a lab whose binary is missing\n"
        "  --only TEXT        run only the tests whose name contains TEXT\n"
        "  --hidden           run hidden tests too (the default)\n"
        "  --no-hidden        leave hidden tests out\n"
        "  -j N               run N tests at a time (default 1)\n"
        "  --timeout-scale F  multiply every timeout by F (default: $DT_TIMEOUT_SCALE or 1)\n"
        "  --job-prefix P     DT_JOB_ID of each test is P followed by a number\n"
        "  -q, --quiet        print only failed rows and the scores\n"
        "  -v, --verbose      print the output of every failed test in full\n"
        "  --min-score-full   exit 1 unless every test passed\n"
        "  --expect-zero      exit 1 if any point is scored, a lab does not build\n"
        "                     or a test times out (for untouched skeletons)\n"
        "  --expect-loss      exit 1 if full marks (for known-bad variants)\n"
        "  --stop-on-fail     stop a lab at its first failed test (the rest: skip)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    lab_t *labs = xmalloc(sizeof(lab_t) * (size_t)argc);
    int nlabs = 0;
    const char *env_scale = getenv("DT_TIMEOUT_SCALE");
    if (env_scale && *env_scale)
        opt.timeout_scale = atof(env_scale);
    opt.results = getenv("DT_RESULTS");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT_ARG() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (!strcmp(a, "--results")) opt.results = NEXT_ARG();
        else if (!strcmp(a, "--tests-root")) opt.tests_root = NEXT_ARG();
        else if (!strcmp(a, "--only")) opt.only = NEXT_ARG();
        else if (!strcmp(a, "--hidden")) opt.hidden = 1;
        else if (!strcmp(a, "--no-hidden")) opt.hidden = 0;
        else if (!strcmp(a, "-j")) opt.jobs = atoi(NEXT_ARG());
        else if (!strncmp(a, "-j", 2) && isdigit((unsigned char)a[2])) opt.jobs = atoi(a + 2);
        else if (!strcmp(a, "--timeout-scale")) opt.timeout_scale = atof(NEXT_ARG());
        else if (!strcmp(a, "--job-prefix")) opt.job_prefix = NEXT_ARG();
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) opt.quiet = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) opt.verbose = 1;
        else if (!strcmp(a, "--min-score-full")) opt.min_score_full = 1;
        else if (!strcmp(a, "--expect-zero")) opt.expect_zero = 1;
        else if (!strcmp(a, "--expect-loss")) opt.expect_loss = 1;
        else if (!strcmp(a, "--stop-on-fail")) opt.stop_on_fail = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage();
        else if (a[0] == '-') { fprintf(stderr, "dtgrade: unknown option %s\n", a); usage(); }
        else {
            lab_t *lab = &labs[nlabs++];
            memset(lab, 0, sizeof *lab);
            const char *eq = strchr(a, '=');
            if (eq) {
                lab->name = strndup(a, (size_t)(eq - a));
                lab->binary = eq + 1;
            } else {
                /* build/labs/02-collectives/grade -> 02-collectives */
                char *copy = xstrdup(a);
                char *slash = strrchr(copy, '/');
                if (slash) {
                    *slash = '\0';
                    char *s2 = strrchr(copy, '/');
                    lab->name = s2 ? s2 + 1 : copy;
                } else {
                    lab->name = a;
                }
                lab->binary = a;
            }
        }
#undef NEXT_ARG
    }
    if (nlabs == 0)
        usage();
    if (opt.jobs < 1 || opt.jobs > MAX_SLOTS)
        die("-j must be between 1 and %d", MAX_SLOTS);
    if (!(opt.timeout_scale > 0))
        die("the timeout scale must be positive");
    if (!opt.results || !*opt.results)
        opt.results = "build/results.json";
    char prefix[64];
    if (!opt.job_prefix) {
        snprintf(prefix, sizeof prefix, "g%ld.", (long)getpid());
        opt.job_prefix = prefix;
    }
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* orphans of a test are reaped here */
#endif
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    double t0 = now_s();
    int score = 0, max = 0, passed = 0, failed = 0, builds_failed = 0, timeouts = 0;
    for (int l = 0; l < nlabs && !interrupted; l++) {
        run_lab(&labs[l]);
        score += labs[l].score;
        max += labs[l].max;
        passed += labs[l].passed;
        failed += labs[l].failed;
        builds_failed += labs[l].build_failed;
        for (int i = 0; i < labs[l].nrows; i++)
            timeouts += labs[l].rows[i].st == ST_TIMEOUT;
    }
    double secs = now_s() - t0;
    int werr = write_results(labs, nlabs, score, max, secs);
    if (nlabs > 1) {
        printf("Labs:");
        for (int l = 0; l < nlabs; l++)
            printf(" %s %d/%d%s", labs[l].name, labs[l].score, labs[l].max,
                   l + 1 < nlabs ? "," : "\n");
    }
    /* CPU time of every test process (and what they forked), for the
     * grading budget of a small autograder machine. */
    struct rusage ru;
    double cpu = 0;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
              (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    printf("Score: %d/%d  (%.1f s, cpu %.1f s, results in %s)\n", score, max, secs, cpu,
           opt.results);

    int rc = 0;
    fflush(stdout); /* the verdicts below go to stderr, after the table */
    if (interrupted) {
        fprintf(stderr, "dtgrade: interrupted\n");
        rc = 2;
    } else if (werr) {
        rc = 2;
    }
    if (opt.min_score_full && (failed > 0 || max == 0)) {
        fprintf(stderr, "dtgrade: expected full marks, got %d/%d\n", score, max);
        rc = rc ? rc : 1;
    }
    if (opt.expect_zero && (score > 0 || builds_failed > 0 || timeouts > 0)) {
        fprintf(stderr, "dtgrade: expected an untouched skeleton to build and score 0 "
                        "without timeouts; got %d/%d, %d build failure(s), %d timeout(s)\n",
                score, max, builds_failed, timeouts);
        rc = rc ? rc : 1;
    }
    if (opt.expect_loss && (failed == 0 || builds_failed > 0)) {
        fprintf(stderr, "dtgrade: expected lost points, got %s\n",
                builds_failed ? "a build failure" : "full marks");
        rc = rc ? rc : 1;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return rc;
}
