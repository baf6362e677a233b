/* schedule.c - grades one lab: lists its tests, runs them (opt.jobs at a
 * time, each under its own supervisor), and prints each row as soon as it
 * and every row above it are known.
 *
 * A race-sensitive test (registered with .race = 1) that passes is run
 * again from the lab's ThreadSanitizer build, when there is one; a race
 * reported there fails it. */
#include "dtgrade.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_TIMEOUT_S 10.0
#define BUILD_TEXT_CAP 4096

typedef struct {
    run_t run;
    run_spec spec;
    int row;   /* -1: free */
    int race;
    tmp_listing before; /* /tmp as the run started (leftover.c) */
} slot_t;

static unsigned job_counter;

static void spec_init(run_spec *sp, const char *binary, const char *test, double timeout_s,
                      const limits *lim, int sanitized)
{
    memset(sp, 0, sizeof *sp);
    sp->binary = binary;
    sp->test = test;
    sp->timeout_s = timeout_s;
    limits_resolve(&sp->lim, lim, sanitized, timeout_s);
    snprintf(sp->job, sizeof sp->job, "%s%05u", opt.job_prefix, job_counter++);
    random_hex(sp->token, 16);
    tmp_prepare(sp);
}

/* Waits for one run to end (used for `--list`). */
static void run_to_end(run_t *r)
{
    run_t *one[1] = {r};
    while (!r->rep_eof && !interrupted) {
        run_poll_fds(one, 1, now_s() + 0.2);
        if (now_s() > r->deadline + 10)
            break;
    }
    if (!r->rep_eof)
        run_stop(r);
    run_finish(r);
}

static int executable(const char *path)
{
    struct stat sb;
    return path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & S_IXUSR);
}

/* The lab's tests from `grade --list`, run like a test (limits, timeout,
 * completion channel: a list cut short by an exit is no list). Returns
 * NULL, or why the list could not be had. */
static char *list_tests(lab_t *lab)
{
    run_spec sp;
    limits none = {0, 0, 0, 0};
    spec_init(&sp, lab->binary, NULL, LIST_TIMEOUT_S * opt.timeout_scale, &none,
              lab->sanitized);
    run_t r;
    tmp_listing nothing = {NULL, 0};
    run_start(&r, &sp);
    run_to_end(&r);
    shm_unlink_job(sp.job);
    free(tmp_leftovers(&sp, &r, &nothing)); /* removes its folder; a list writes nothing */
    test_row probe = {0};
    verdict(&probe, &r, &sp, 0);
    char *why = NULL;
    if (probe.st != ST_PASS)
        why = xprintf("'%s --list' failed: %s", lab->binary, probe.reason);
    else if (parse_list(lab, r.out.buf ? r.out.buf : "", r.out.len) <= 0)
        why = xprintf("'%s --list' listed no test", lab->binary);
    free(probe.reason);
    free(probe.details);
    free(probe.output);
    free(r.out.buf);
    return why;
}

/* The lines of a build log worth showing: errors, else its last lines;
 * lines that name a hidden test's file are withheld. */
static char *build_errors(const char *log_path)
{
    size_t n;
    char *log = read_file(log_path, 1 << 20, &n);
    if (!log)
        return NULL;
    char *out = NULL;
    size_t len = 0, cap = 0;
    int withheld = 0, any = 0;
    for (int pass = 0; pass < 2 && !any; pass++) {
        const char *end = log + n;
        int lines = 0;
        for (const char *p = log; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *next = nl ? nl + 1 : end;
            char line[LINE_CAP];
            copy_line(line, sizeof line, p, end);
            lines++;
            int keep = pass == 1 ? 1 : strstr(line, "error") || strstr(line, "undefined reference") ||
                                            strstr(line, "fence") || strstr(line, "note: ");
            if (keep && strstr(line, "hidden_")) {
                withheld++;
            } else if (keep && len < BUILD_TEXT_CAP) {
                append(&out, &len, &cap, line, strlen(line));
                append(&out, &len, &cap, "\n", 1);
                any = 1;
            }
            p = next;
        }
        (void)lines;
    }
    if (withheld) {
        char w[96];
        snprintf(w, sizeof w, "(%d line(s) about hidden tests withheld)\n", withheld);
        append(&out, &len, &cap, w, strlen(w));
    }
    free(log);
    return out;
}

/* What the build left beside the binary: splice.txt (the splice's notes
 * about the student's files) and build.log (the compiler's output). */
void read_lab_files(lab_t *lab)
{
    char *copy = xstrdup(lab->binary);
    char *dir = dirname(copy);
    char *p = xprintf("%s/splice.txt", dir);
    size_t n;
    lab->notes = read_file(p, 8192, &n);
    if (lab->notes && n == 0) {
        free(lab->notes);
        lab->notes = NULL;
    }
    free(p);
    if (!executable(lab->binary)) {
        p = xprintf("%s/build.log", dir);
        lab->build_text = build_errors(p);
        free(p);
    }
    free(copy);
    if (lab->race_binary && !executable(lab->race_binary)) {
        copy = xstrdup(lab->race_binary);
        p = xprintf("%s/build.log", dirname(copy));
        char *e = build_errors(p);
        char *t = xprintf("%s%sThe ThreadSanitizer build failed:\n%s", lab->build_text ? lab->build_text : "",
                          lab->build_text ? "\n" : "", e ? e : "(no build log)\n");
        free(lab->build_text);
        lab->build_text = t;
        free(e);
        free(p);
        free(copy);
    }
}

/* DIR/LAB.TEST: the file libdt creates at the test's first use of the BLAS
 * (DT_BLAS_MARK, lib/tensor/blas.c). */
static void blas_mark_path(char *out, size_t len, const char *dir, const lab_t *lab,
                           const test_row *r)
{
    snprintf(out, len, "%s/%s.%s", dir, lab->name, r->name);
}

static void start_slot(slot_t *s, lab_t *lab, int i, int race)
{
    test_row *r = &lab->rows[i];
    double scale = race ? opt.race_timeout_scale : opt.timeout_scale;
    spec_init(&s->spec, race ? lab->race_binary : lab->binary, r->name, r->timeout_s * scale,
              &r->lim, race ? 1 : lab->sanitized);
    if (opt.blas_marks)
        blas_mark_path(s->spec.blas_mark, sizeof s->spec.blas_mark, opt.blas_marks, lab, r);
    s->row = i;
    s->race = race;
    r->race_pending = race ? 2 : 0; /* 2: the race run is under way */
    if (!race)
        r->st = ST_RUNNING;
    tmp_list(&s->before);
    run_start(&s->run, &s->spec);
}

/* A run that left files behind fails (a pass becomes FAIL naming them);
 * one that failed anyway gets the note under its reason. */
static void check_leftovers(slot_t *s, test_row *r)
{
    char *left = tmp_leftovers(&s->spec, &s->run, &s->before);
    tmp_listing_free(&s->before);
    if (!left)
        return;
    if (r->st == ST_PASS || r->st == ST_SKIPPED) {
        r->st = ST_FAIL;
        free(r->reason);
        r->reason = left;
        free(r->details);
        r->details = make_details(left, NULL, s->run.out.buf ? s->run.out.buf : "", s->run.out.len);
        free(r->output);
        r->output = NULL;
    } else {
        char *d = xprintf("%s[%s]\n", r->details ? r->details : "", left);
        free(r->details);
        r->details = d;
        free(left);
    }
}

/* A run ended: its verdict goes to its row (a race run's only when it did
 * not pass). */
static void end_slot(slot_t *s, lab_t *lab)
{
    test_row *r = &lab->rows[s->row];
    run_finish(&s->run);
    shm_unlink_job(s->spec.job);
    if (!s->race) {
        verdict(r, &s->run, &s->spec, 0);
        check_leftovers(s, r);
        if (r->st == ST_PASS && r->race && lab->race_binary && !interrupted) {
            if (executable(lab->race_binary)) {
                r->race_pending = 1;
            } else {
                r->st = ST_BUILD;
                r->reason = xprintf("BUILD FAILED: the ThreadSanitizer build of this race-"
                                    "sensitive test failed");
            }
        }
    } else {
        test_row rr = {0};
        verdict(&rr, &s->run, &s->spec, 1);
        check_leftovers(s, &rr);
        r->race_pending = 0;
        r->seconds += rr.seconds;
        if (rr.st != ST_PASS) {
            r->st = rr.st;
            r->reason = rr.reason;
            r->details = rr.details;
            r->rep = rr.rep;
            free(r->output);
            r->output = NULL;
        } else {
            free(rr.reason);
            free(rr.details);
        }
        free(rr.output);
    }
    free(s->run.out.buf);
    s->row = -1;
}

/* The next run to start: a race run first (its row is waiting to be
 * printed), then the next test not started. -1: none. */
static int next_job(lab_t *lab, int *race)
{
    for (int i = 0; i < lab->nrows; i++) {
        if (lab->rows[i].race_pending == 1) {
            *race = 1;
            return i;
        }
    }
    for (int i = 0; i < lab->nrows; i++) {
        if (lab->rows[i].st == ST_PENDING) {
            *race = 0;
            return i;
        }
    }
    return -1;
}

static int row_final(const test_row *r)
{
    return r->st >= ST_PASS && r->race_pending == 0;
}

static void run_tests(lab_t *lab)
{
    slot_t slots[MAX_SLOTS];
    for (int k = 0; k < opt.jobs; k++)
        slots[k].row = -1;
    int printed = 0, active = 0, stop = 0;
    for (;;) {
        int race, i;
        while (active < opt.jobs && !interrupted && !stop && (i = next_job(lab, &race)) >= 0) {
            for (int k = 0; k < opt.jobs; k++) {
                if (slots[k].row < 0) {
                    start_slot(&slots[k], lab, i, race);
                    active++;
                    break;
                }
            }
        }
        while (printed < lab->nrows && row_final(&lab->rows[printed]))
            print_row(&lab->rows[printed++]);
        if (active == 0)
            break;
        run_t *runs[MAX_SLOTS];
        int n = 0;
        for (int k = 0; k < opt.jobs; k++) {
            if (slots[k].row >= 0) {
                if (interrupted)
                    run_stop(&slots[k].run);
                runs[n++] = &slots[k].run;
            }
        }
        run_poll_fds(runs, n, now_s() + 0.2);
        for (int k = 0; k < opt.jobs; k++) {
            slot_t *s = &slots[k];
            if (s->row < 0)
                continue;
            if (s->run.rep_eof || now_s() > s->run.deadline + 10) {
                end_slot(s, lab);
                active--;
                for (int j = 0; j < lab->nrows; j++)
                    if (opt.stop_on_fail && row_final(&lab->rows[j]) &&
                        lab->rows[j].st != ST_PASS && lab->rows[j].st != ST_SKIP &&
                        lab->rows[j].st != ST_SKIPPED)
                        stop = 1;
            }
        }
    }
    for (int i = 0; i < lab->nrows; i++) {
        test_row *r = &lab->rows[i];
        if (r->st == ST_PENDING || r->race_pending) {
            r->st = ST_NOT_RUN;
            r->race_pending = 0;
            r->reason = xstrdup(interrupted ? "not run: the grader was interrupted"
                                            : "not run (--stop-on-fail)");
        }
    }
    while (printed < lab->nrows)
        print_row(&lab->rows[printed++]);
}

/* The test left its mark in --blas-only's folder: it used the BLAS. */
static int blas_marked(const lab_t *lab, const test_row *r)
{
    char path[1024];
    struct stat sb;
    blas_mark_path(path, sizeof path, opt.blas_only, lab, r);
    return stat(path, &sb) == 0;
}

void run_lab(lab_t *lab)
{
    printf("== %s  (%s)\n", lab->name, lab->binary);
    read_lab_files(lab);
    char *why = NULL;
    lab->sanitized = executable(lab->binary) && binary_is_sanitized(lab->binary);
    if (!executable(lab->binary))
        why = xprintf("BUILD FAILED: %s is missing", lab->binary);
    else
        why = list_tests(lab);
    if (why && !interrupted) {
        lab->build_failed = 1;
        scan_sources(lab);
        for (int i = 0; i < lab->nrows; i++)
            lab->rows[i].reason = xstrdup(lab->build_text ? "BUILD FAILED: the lab did not build "
                                          "(the compiler's messages are above)" : why);
        if (!lab->build_text)
            lab->build_text = xprintf("%s\n", why);
    }
    print_lab_notes(lab);
    print_header();
    if (why) {
        for (int i = 0; i < lab->nrows; i++)
            print_row(&lab->rows[i]);
    } else {
        for (int i = 0; i < lab->nrows; i++) {
            test_row *r = &lab->rows[i];
            if ((r->hidden && !opt.hidden) || (opt.only && !strstr(r->name, opt.only))) {
                r->st = ST_SKIP;
                r->reason = xstrdup(r->hidden && !opt.hidden ? "hidden" : "not selected");
            } else if (opt.blas_only && !blas_marked(lab, r)) {
                r->st = ST_SKIP;
                r->reason = xstrdup("not selected: it used no BLAS under --blas-marks");
            }
        }
        run_tests(lab);
    }
    free(why);
    for (int i = 0; i < lab->nrows; i++) {
        test_row *r = &lab->rows[i];
        if (r->st == ST_SKIP)
            continue;
        if (r->st == ST_SKIPPED) { /* neither passed nor failed: out of the maximum */
            lab->skipped++;
            continue;
        }
        lab->max += r->points;
        if (r->st == ST_PASS) {
            lab->score += r->points;
            lab->passed++;
        } else {
            lab->failed++;
        }
    }
    printf("  Score: %d/%d%s\n\n", lab->score, lab->max, lab->build_failed ? "  (BUILD FAILED)" : "");
    fflush(stdout);
}
