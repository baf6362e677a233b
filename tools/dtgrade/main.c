/* dtgrade - the grader: runs every test of one or more lab test binaries,
 * each in isolation, and prints a score table.
 *
 *   dtgrade [options] [NAME=]GRADE_BINARY ...
 *   dtgrade --splice OFFICIAL_DIR STUDENT_DIR OUT_DIR [SHOWN_AS]
 *   dtgrade --points TESTS_ROOT LAB...
 *
 * For each binary it asks `grade --list` for the tests (name, points,
 * timeout, visibility, race sensitivity, limits), then runs each as
 * `grade --run NAME` under a supervisor of its own (supervise.c): its own
 * process group, resource limits, a deadline, a completion channel, and
 * afterwards every process it started killed and its shared memory
 * removed. The verdict (verdict.c) is pass, or one line: FAIL, CRASH,
 * TIMEOUT, SANITIZER, LIMIT, EXIT (ended before its body finished),
 * INTERRUPTED, NOT RUN or BUILD. The table keeps one line per test, with
 * the full failure text under it; results.json gets it once.
 *
 * Exit status: 0 whatever the score; 2 on a usage or grader error; 1 when
 * an --expect-* or --min-score-full condition does not hold; 128 + the
 * signal when interrupted. */
#include "dtgrade.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

options opt = {
    .results = NULL, .tests_root = "tests", .timeout_scale = 1.0, .race_timeout_scale = 5.0,
    .lim = {.as_mib = 4096, .cpu_s = 0, .fsize_mib = 2048, .tasks = 256},
    .jobs = 1, .hidden = 1,
};
volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    if (!interrupted)
        interrupted = sig;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dtgrade [options] [NAME=]GRADE_BINARY ...\n"
        "       dtgrade --splice OFFICIAL_DIR STUDENT_DIR OUT_DIR [SHOWN_AS]\n"
        "       dtgrade --points TESTS_ROOT LAB...   (visible and hidden points)\n"
        "  NAME defaults to the binary's folder name (e.g. 02-collectives).\n"
        "  --race NAME=BINARY  the lab's ThreadSanitizer build: its race-sensitive tests\n"
        "                      that pass are run again from it\n"
        "  --results FILE      where to write results.json (default: $DT_RESULTS,\n"
        "                      else build/results.json)\n"
        "  --tests-root DIR    where a lab's test sources are (default: tests); read\n"
        "                      to list the tests of a lab whose binary is missing\n"
        "  --notice FILE       text to put above everything in results.json's output\n"
        "  --tmp-root DIR      each test's temporary folder (TMPDIR) is DIR/JOB, which\n"
        "                      must be empty after the test (default: tmp/ beside the\n"
        "                      results file)\n"
        "  --only TEXT         run only the tests whose name contains TEXT\n"
        "  --blas-marks DIR    each test's first use of the BLAS (an sgemm, what the\n"
        "                      BLAS is) creates DIR/LAB.TEST (make test-kernels)\n"
        "  --blas-only DIR     run only the tests that left a mark in DIR: the others\n"
        "                      compute the same bits whatever the BLAS\n"
        "  --hidden            run hidden tests too (the default)\n"
        "  --no-hidden         leave hidden tests out\n"
        "  -j N                run N tests at a time (1 to %d; default 1)\n"
        "  --timeout-scale F   multiply every timeout by F (default: $DT_TIMEOUT_SCALE or 1)\n"
        "  --race-timeout-scale F  the same for runs of the race build (default 5)\n"
        "  --limit-as MIB      address space per process (default 4096; 0: none; none\n"
        "                      for a sanitized binary)\n"
        "  --limit-cpu S       CPU seconds per process (default: twice the timeout, >= 10)\n"
        "  --limit-fsize MIB   size of a file the test writes (default 2048: the proc\n"
        "                      backend sizes its 1 GiB arena with ftruncate)\n"
        "  --limit-tasks N     processes and threads of a test at once (default 256)\n"
        "  --job-prefix P      DT_JOB_ID of each test is P followed by a number\n"
        "  -q, --quiet         print only failed rows and the scores\n"
        "  -v, --verbose       print the output of passed tests too\n"
        "  --min-score-full    exit 1 unless every test passed\n"
        "  --expect-zero       exit 1 if any point is scored, a lab does not build\n"
        "                      or a test times out (for untouched skeletons)\n"
        "  --expect-loss       exit 1 if full marks (for known-bad variants)\n"
        "  --stop-on-fail      stop a lab at its first failed test (the rest: not run)\n"
        "A test's own registration may set its limits (tests/grader/grader.h).\n",
        MAX_SLOTS);
}

static void bad_value(const char *what, const char *value, const char *want)
{
    die("%s: '%s' is not %s", what, value, want);
}

static double parse_number(const char *what, const char *value, double lo, double hi,
                           int whole, const char *want)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (!*value || *end || errno || !(v >= lo && v <= hi) || (whole && v != (double)(long)v))
        bad_value(what, value, want);
    return v;
}

/* NAME=BINARY, or a path whose folder names the lab. */
static void parse_lab(lab_t *lab, const char *a, const char *what)
{
    memset(lab, 0, sizeof *lab);
    const char *eq = strchr(a, '=');
    if (eq) {
        lab->name = strndup(a, (size_t)(eq - a));
        lab->binary = eq + 1;
        if (!*lab->name || strchr(lab->name, '/') || !*lab->binary)
            die("%s: '%s' is not NAME=BINARY (a lab's name and its test binary)", what, a);
        return;
    }
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

static int parse_args(int argc, char **argv, lab_t *labs)
{
    int nlabs = 0;
    lab_t race;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VALUE() (i + 1 < argc ? argv[++i] : (die("%s needs a value (see --help)", a), ""))
#define NUMBER(lo, hi, whole, want) parse_number(a, VALUE(), lo, hi, whole, want)
        if (!strcmp(a, "--results")) opt.results = VALUE();
        else if (!strcmp(a, "--tests-root")) opt.tests_root = VALUE();
        else if (!strcmp(a, "--notice")) opt.notice_file = VALUE();
        else if (!strcmp(a, "--tmp-root")) opt.tmp_root = VALUE();
        else if (!strcmp(a, "--only")) opt.only = VALUE();
        else if (!strcmp(a, "--blas-marks")) opt.blas_marks = VALUE();
        else if (!strcmp(a, "--blas-only")) opt.blas_only = VALUE();
        else if (!strcmp(a, "--hidden")) opt.hidden = 1;
        else if (!strcmp(a, "--no-hidden")) opt.hidden = 0;
        else if (!strcmp(a, "-j") || !strcmp(a, "--jobs"))
            opt.jobs = (int)NUMBER(1, MAX_SLOTS, 1, "a whole number from 1 to 16");
        else if (!strncmp(a, "-j", 2) && a[2])
            opt.jobs = (int)parse_number("-j", a + 2, 1, MAX_SLOTS, 1, "a whole number from 1 to 16");
        else if (!strcmp(a, "--timeout-scale"))
            opt.timeout_scale = NUMBER(0.01, 1000, 0, "a number from 0.01 to 1000");
        else if (!strcmp(a, "--race-timeout-scale"))
            opt.race_timeout_scale = NUMBER(0.01, 1000, 0, "a number from 0.01 to 1000");
        else if (!strcmp(a, "--limit-as"))
            opt.lim.as_mib = NUMBER(0, 1 << 24, 0, "a size in MiB (0: no limit)");
        else if (!strcmp(a, "--limit-cpu"))
            opt.lim.cpu_s = NUMBER(0, 1e6, 0, "a number of seconds (0: twice the timeout)");
        else if (!strcmp(a, "--limit-fsize"))
            opt.lim.fsize_mib = NUMBER(1, 1 << 24, 0, "a size in MiB, at least 1");
        else if (!strcmp(a, "--limit-tasks"))
            opt.lim.tasks = (int)NUMBER(1, 1 << 20, 1, "a whole number, at least 1");
        else if (!strcmp(a, "--job-prefix")) opt.job_prefix = VALUE();
        else if (!strcmp(a, "--race")) {
            parse_lab(&race, VALUE(), a);
            int found = 0;
            for (int l = 0; l < nlabs; l++)
                if (!strcmp(labs[l].name, race.name))
                    labs[l].race_binary = race.binary, found = 1;
            if (!found)
                die("--race: '%s' names no lab given before it", argv[i]);
        }
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) opt.quiet = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) opt.verbose = 1;
        else if (!strcmp(a, "--min-score-full")) opt.min_score_full = 1;
        else if (!strcmp(a, "--expect-zero")) opt.expect_zero = 1;
        else if (!strcmp(a, "--expect-loss")) opt.expect_loss = 1;
        else if (!strcmp(a, "--stop-on-fail")) opt.stop_on_fail = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        else if (a[0] == '-') die("unknown option '%s' (see --help)", a);
        else parse_lab(&labs[nlabs++], a, "a lab");
#undef NUMBER
#undef VALUE
    }
    if (opt.job_prefix && (!*opt.job_prefix || strchr(opt.job_prefix, '/')))
        die("--job-prefix: '%s' is not a name part (no '/', not empty)", opt.job_prefix);
    if (opt.results && !*opt.results)
        die("--results: the file name is empty");
    if (opt.tmp_root && !*opt.tmp_root)
        die("--tmp-root: the folder name is empty");
    if ((opt.blas_marks && !*opt.blas_marks) || (opt.blas_only && !*opt.blas_only))
        die("%s: the folder name is empty", opt.blas_marks && !*opt.blas_marks ? "--blas-marks" : "--blas-only");
    return nlabs;
}

/* Labs the grader never reached (interrupted): their tests are listed from
 * the sources, not run, so that the maximum score stays whole. */
static void not_reached(lab_t *lab)
{
    printf("== %s  (%s)\n", lab->name, lab->binary);
    scan_sources(lab);
    for (int i = 0; i < lab->nrows; i++) {
        lab->rows[i].st = ST_NOT_RUN;
        lab->rows[i].reason = xstrdup("not run: the grader was interrupted");
        lab->max += lab->rows[i].points;
        lab->failed++;
    }
    printf("  Score: 0/%d  (not run)\n\n", lab->max);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--splice"))
        return splice_main(argc - 2, argv + 2);
    if (argc > 1 && !strcmp(argv[1], "--points"))
        return points_main(argc - 2, argv + 2);
    const char *env = getenv("DT_TIMEOUT_SCALE");
    if (env && *env)
        opt.timeout_scale =
            parse_number("DT_TIMEOUT_SCALE", env, 0.01, 1000, 0, "a number from 0.01 to 1000");
    opt.results = getenv("DT_RESULTS");
    lab_t *labs = xmalloc(sizeof(lab_t) * (size_t)argc);
    int nlabs = parse_args(argc, argv, labs);
    if (nlabs == 0) {
        usage(stderr);
        return 2;
    }
    if (!opt.results || !*opt.results)
        opt.results = "build/results.json";
    /* The tests' temporary folders: beside the results unless told; an
     * absolute path, so that a test that changes its folder keeps it. */
    if (!opt.tmp_root) {
        const char *slash = strrchr(opt.results, '/');
        opt.tmp_root = slash ? xprintf("%.*s/tmp", (int)(slash - opt.results), opt.results)
                             : "tmp";
    }
    opt.tmp_root = folder_absolute("--tmp-root", opt.tmp_root, 1);
    if (opt.blas_marks)
        opt.blas_marks = folder_absolute("--blas-marks", opt.blas_marks, 1);
    if (opt.blas_only)
        opt.blas_only = folder_absolute("--blas-only", opt.blas_only, 0);
    char prefix[64];
    if (!opt.job_prefix) {
        snprintf(prefix, sizeof prefix, "g%ld.", (long)getpid());
        opt.job_prefix = prefix;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a wait returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int stale = shm_sweep_stale();
    if (stale)
        printf("dtgrade: removed %d stale shared-memory segment(s) of this user's ended jobs\n\n",
               stale);

    double t0 = now_s();
    int score = 0, max = 0, passed = 0, failed = 0, builds_failed = 0, timeouts = 0, cut = 0;
    int not_run = 0, skipped = 0;
    for (int l = 0; l < nlabs; l++) {
        if (interrupted)
            not_reached(&labs[l]);
        else
            run_lab(&labs[l]);
        score += labs[l].score;
        max += labs[l].max;
        passed += labs[l].passed;
        failed += labs[l].failed;
        skipped += labs[l].skipped;
        builds_failed += labs[l].build_failed;
        for (int i = 0; i < labs[l].nrows; i++) {
            timeouts += labs[l].rows[i].st == ST_TIMEOUT;
            cut += labs[l].rows[i].st == ST_INTERRUPTED || labs[l].rows[i].st == ST_NOT_RUN;
            not_run += labs[l].rows[i].st == ST_NOT_RUN;
        }
    }
    double secs = now_s() - t0;
    int werr = write_results(labs, nlabs, score, max, secs);
    if (nlabs > 1) {
        printf("Labs:");
        for (int l = 0; l < nlabs; l++)
            printf(" %s %d/%d%s", labs[l].name, labs[l].score, labs[l].max,
                   l + 1 < nlabs ? "," : "\n");
    }
    /* CPU time of every test (and what they started), for the grading
     * budget of a small autograder machine. */
    struct rusage ru;
    double cpu = 0;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
              (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    printf("Score: %d/%d  (%.1f s, cpu %.1f s, results in %s)\n", score, max, secs, cpu,
           opt.results);

    int rc = werr ? 2 : 0;
    fflush(stdout); /* the verdicts below go to stderr, after the table */
    if (interrupted) {
        fprintf(stderr, "dtgrade: interrupted by %s: %d test(s) interrupted or not run, "
                        "scored 0 of their points (the maximum is unchanged)\n",
                signal_name(interrupted), cut);
        rc = 128 + interrupted;
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
    /* The closing line: tests that ran; those that did not are counted apart. */
    char more[64] = "";
    if (skipped) /* tests that skipped themselves, saying why: neither passed nor failed */
        snprintf(more, sizeof more, ", %d skipped", skipped);
    if (not_run)
        printf("%d passed, %d failed, %d not run%s\n", passed, failed - not_run, not_run, more);
    else
        printf("%d passed, %d failed%s\n", passed, failed, more);
    return rc;
}
