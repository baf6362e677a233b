/* dtgrade.h - the grader's parts, and what they share.
 *
 *   main.c      options, the run over labs, the exit status
 *   lists.c     a lab's tests: `grade --list`, or its sources when it did not build
 *   schedule.c  runs a lab's tests, a few at a time, and collects each verdict
 *   supervise.c one test in its own supervisor: limits, deadline, cleanup
 *   proctree.c  a process's descendants: counted, measured, killed
 *   verdict.c   what a finished test's status, channel and output mean
 *   digest.c    the failure text: each rank's last lines, capped
 *   report.c    the score table
 *   results.c   Gradescope's results.json
 *   shm.c       shared-memory segments: a test's, and stale ones
 *   leftover.c  a test's temporary folder, and the files it left behind
 *   splice.c    `--splice`: the official files with the student's fences
 *   util.c      allocation, formatting, time, files
 *
 * libc and POSIX only (with Linux's /proc and prctl where they exist), so
 * that it grades even when libdt does not build. */
#ifndef DTGRADE_H
#define DTGRADE_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define MAX_SLOTS 16
#define DETAILS_CAP 4096     /* bytes of failure text kept per test */
#define LINE_CAP 1024        /* bytes of one output line kept */
#define REASON_SHOWN 100     /* characters of a reason shown in the table */
#define STARVE_CAP 3         /* a deadline moves by at most 3 timeouts (below) */

enum status {
    ST_RUNNING = -2,
    ST_PENDING = -1,
    ST_PASS,
    ST_FAIL,        /* an EXPECT failed, or a non-zero exit */
    ST_CRASH,       /* killed by a signal */
    ST_TIMEOUT,     /* still running at its deadline */
    ST_SANITIZER,   /* ASan, UBSan or TSan reported an error */
    ST_LIMIT,       /* a resource limit was reached */
    ST_EXIT,        /* ended before the test body finished */
    ST_INTERRUPTED, /* the grader was interrupted while it ran */
    ST_NOT_RUN,     /* never started: interrupted, or --stop-on-fail */
    ST_BUILD,       /* the lab did not build */
    ST_SKIP,        /* left out on purpose: --only, --no-hidden */
    ST_SKIPPED,     /* the test skipped itself (dt_test_skip), saying why */
};
extern const char *const status_name[];

/* Per-test resource limits; 0 means the grader's default. */
typedef struct {
    double as_mib;    /* address space per process (RLIMIT_AS) */
    double cpu_s;     /* CPU seconds per process (RLIMIT_CPU) */
    double fsize_mib; /* size of any file written or truncated to (RLIMIT_FSIZE) */
    int tasks;        /* processes and threads of the test, all together */
} limits;

/* What the supervisor measured and saw of one run. */
typedef struct {
    int status;        /* wait status of the test's process */
    int reaped;        /* status is known */
    int timed_out, interrupted, over_tasks;
    int tasks_peak;    /* most processes + threads seen at once */
    long starved_ms;   /* how much the deadline moved while the test waited for CPUs */
    long vm_peak_kib;  /* largest VmPeak seen of any of its processes, or the
                          largest resident size when that is larger */
    long cpu_ms;       /* CPU time of the test and what it waited for */
    int leftovers;     /* processes that could not be killed */
} run_report;

/* The output of a run (its tail) and its completion channel. */
typedef struct {
    char *buf;
    size_t len;
    char first_fail[LINE_CAP]; /* the first "FAIL: " line, even when cut */
    char chan[1024];           /* lines from the completion channel */
    size_t chan_len;
} run_output;

typedef struct test_row {
    char *name;
    int points;
    double timeout_s;
    int hidden, race;
    limits lim;
    enum status st;
    char *reason;  /* one line, in full; NULL when passed */
    char *details; /* the failure text (reason first), capped; may be NULL */
    char *output;  /* a passing test's output tail; may be NULL */
    double seconds;
    run_report rep;
    int race_pending; /* passed the plain build; the race run is next */
} test_row;

typedef struct {
    const char *name;        /* e.g. 02-collectives */
    const char *binary;
    const char *race_binary; /* the ThreadSanitizer build, or NULL */
    test_row *rows;
    int nrows, cap;
    int score, max, passed, failed, skipped;
    int build_failed;
    int sanitized;    /* the binary was built with a sanitizer */
    char *build_text; /* why it did not build (the build log's errors) */
    char *notes;      /* what the splice said about the student's files */
} lab_t;

/* A test to run: the binary, its arguments, and the limits in effect. */
typedef struct {
    const char *binary;
    const char *test;    /* NULL: `--list` */
    double timeout_s;    /* after scaling */
    limits lim;          /* after defaults; as_mib 0: none */
    char job[64];        /* DT_JOB_ID */
    char token[40];      /* the completion token */
    char tmpdir[1024];   /* TMPDIR: the test's own, emptied and removed after it */
    char blas_mark[1024]; /* DT_BLAS_MARK (--blas-marks): ""; else created at its first BLAS use */
} run_spec;

#define MAX_PIDS 64 /* processes of a test remembered (leftover.c) */

typedef struct {
    pid_t sup, test;     /* the supervisor and the test's process */
    int out_fd, chan_fd, rep_fd;
    int out_eof, chan_eof, rep_eof, ended;
    double started, deadline;
    char rep_line[512];
    size_t rep_len;
    run_report rep;
    run_output out;
    pid_t pids[MAX_PIDS]; /* the test's processes the supervisor saw */
    int npids;
} run_t;

typedef struct {
    const char *results;
    const char *tests_root;
    const char *job_prefix;
    const char *only;
    const char *blas_marks; /* --blas-marks DIR: each test's DT_BLAS_MARK is DIR/LAB.TEST */
    const char *blas_only;  /* --blas-only DIR: only the tests with a mark there */
    const char *notice_file;
    const char *tmp_root; /* the tests' temporary folders go below it */
    double timeout_scale, race_timeout_scale;
    limits lim;          /* the defaults */
    int jobs;
    int hidden;
    int quiet, verbose;
    int min_score_full, expect_zero, expect_loss, stop_on_fail;
} options;
extern options opt;
extern volatile sig_atomic_t interrupted; /* the signal that interrupted the grader, or 0 */

/* util.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double now_s(void);
const char *signal_name(int sig);
void copy_line(char *out, size_t cap, const char *s, const char *end);
const char *find_line(const char *s, const char *end, const char *prefix);
const char *find_line_with(const char *s, const char *end, const char *needle);
char *read_file(const char *path, size_t max, size_t *len);
int file_contains(const char *path, const char *needle);
void random_hex(char *out, size_t nbytes);
void append(char **s, size_t *len, size_t *cap, const char *data, size_t n);

/* lists.c */
test_row *add_row(lab_t *lab, const char *name, int points, int hidden);
int parse_list(lab_t *lab, const char *text, size_t len);
void scan_sources(lab_t *lab);
int points_main(int argc, char **argv);

/* supervise.c */
void run_start(run_t *r, const run_spec *sp);
void run_poll_fds(run_t *const *runs, int n, double wake);
void run_stop(run_t *r);
void run_finish(run_t *r);
void limits_resolve(limits *out, const limits *test, int sanitized, double timeout_s);

/* proctree.c */
typedef struct {
    pid_t tid;
    unsigned long long delay_ns; /* time runnable, waiting for a CPU */
} thread_delay;
typedef struct {
    int tasks;           /* processes' threads, all together */
    pid_t pids[MAX_PIDS]; /* processes seen in any sample so far (the first MAX_PIDS) */
    int npids;
    long vm_peak_kib;    /* the largest VmPeak among them */
    double waited_s;     /* the most one thread waited for a CPU since the last sample */
    thread_delay *seen;  /* the threads of the last sample */
    int nseen;
} tree_sample;
void proctree_sample(pid_t root, tree_sample *s);
int proctree_kill(pid_t pgid, double seconds, pid_t watch, int *status, int *reaped);

/* verdict.c */
void verdict(test_row *row, const run_t *r, const run_spec *sp, int race_run);
int binary_is_sanitized(const char *path);

/* digest.c */
char *make_details(const char *reason, const char *excerpt, const char *buf, size_t len);

/* schedule.c */
void run_lab(lab_t *lab);
void read_lab_files(lab_t *lab);

/* report.c */
void print_header(void);
void print_row(const test_row *r);
void print_lab_notes(const lab_t *lab);

/* results.c */
int write_results(const lab_t *labs, int nlabs, int score, int max, double secs);

/* leftover.c */
typedef struct {
    char **names; /* this user's entries of /tmp named like the project's */
    int n;
} tmp_listing;
const char *folder_absolute(const char *option, const char *dir, int make);
void tmp_prepare(run_spec *sp);
void tmp_list(tmp_listing *out);
void tmp_listing_free(tmp_listing *l);
char *tmp_leftovers(const run_spec *sp, const run_t *r, const tmp_listing *before);

/* shm.c */
void shm_unlink_job(const char *job);
int shm_sweep_stale(void);

/* splice.c */
int splice_main(int argc, char **argv);

#endif /* DTGRADE_H */
