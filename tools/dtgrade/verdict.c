/* verdict.c - what a finished run means: pass, or the one reason why not.
 *
 * A test passes only when its body finished: test_main writes
 * "done TOKEN PID" on the completion channel after the test function
 * returned on the main thread, and the process then exits with status 0.
 * TOKEN is random per run, so output that merely looks right, an early
 * exit(0) or _exit(0) (in the body, in a rank, in a constructor) or a
 * child that returned from the test function cannot pass it. */
#include "dtgrade.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *const san_markers[] = {
    "WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
    "runtime error:", "ERROR: UndefinedBehaviorSanitizer", NULL};
static const char *const oom_markers[] = {"Cannot allocate memory", "out of memory",
                                          "std::bad_alloc", NULL};

/* Whether a binary was built with a sanitizer (it then needs no
 * address-space limit: the sanitizers reserve terabytes of it). */
int binary_is_sanitized(const char *path)
{
    return file_contains(path, "__asan_init") || file_contains(path, "__tsan_init");
}

/* What the completion channel said (tests/grader/test_main.c). */
typedef struct {
    int done;   /* the test's own process finished the body */
    int fail;   /* an EXPECT failed somewhere */
    int early;  /* exit() before the body finished */
    int early_rank, early_status;
    int skip;   /* the test's own process skipped it (dt_test_skip) */
} channel;

static channel read_channel(const run_t *r, const char *token)
{
    channel c = {0, 0, 0, -1, 0, 0};
    const char *end = r->out.chan + r->out.chan_len;
    for (const char *p = r->out.chan; p < end;) {
        char line[256], kind[8], tok[48];
        int pid = 0, a = -1, b = 0;
        copy_line(line, sizeof line, p, end);
        int n = sscanf(line, "%7s %47s %d %d %d", kind, tok, &pid, &a, &b);
        if (n >= 3 && strcmp(tok, token) == 0) {
            if (!strcmp(kind, "done") && pid == r->test)
                c.done = 1;
            else if (!strcmp(kind, "skip") && pid == r->test)
                c.skip = 1;
            else if (!strcmp(kind, "fail"))
                c.fail = 1;
            else if (!strcmp(kind, "exit") && n == 5 && !c.early)
                c = (channel){c.done, c.fail, 1, a, b, c.skip};
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return c;
}

/* "    #0 0x4a1b in fn /x/labs/04-async/hogwild.c:32:5 (grade+0x12)" (ASan) or
 * "    #0 fn /x/labs/04-async/hogwild.c:32 (grade+0x12)" (TSan): "fn hogwild.c:32:5". */
static void frame_brief(char *out, size_t cap, const char *p, const char *end)
{
    char line[LINE_CAP], *tok[8];
    int n = 0;
    copy_line(line, sizeof line, p, end);
    for (char *s = strtok(line, " \t"); s && n < 8; s = strtok(NULL, " \t"))
        tok[n++] = s;
    int i = 1; /* after "#0" */
    if (i < n && !strncmp(tok[i], "0x", 2))
        i++;
    if (i < n && !strcmp(tok[i], "in"))
        i++;
    const char *fn = i < n ? tok[i] : "?";
    const char *file = i + 1 < n && tok[i + 1][0] != '(' ? tok[i + 1] : "";
    const char *base = strrchr(file, '/');
    snprintf(out, cap, "%s%s%s", fn, *file ? " " : "", base ? base + 1 : file);
}

/* The first "#0" frame within a few lines after p, or NULL. */
static const char *first_frame(const char *p, const char *end)
{
    for (int lines = 0; p && p < end && lines < 12; lines++) {
        const char *s = p;
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        if (end - s > 3 && !memcmp(s, "#0 ", 3))
            return s;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : NULL;
    }
    return NULL;
}

/* The reason a sanitizer gives (from its report at m) and an excerpt of
 * the report (its first lines). */
static char *sanitizer_reason(const char *m, const char *end, char **excerpt)
{
    char line[LINE_CAP], a[LINE_CAP / 2] = "", b[LINE_CAP / 2] = "";
    copy_line(line, sizeof line, m, end);
    char *what = line;
    while (*what == '=' || isdigit((unsigned char)*what) || *what == ' ')
        what++; /* "==1234==" */
    if (!strncmp(what, "WARNING: ", 9) || !strncmp(what, "ERROR: ", 7))
        what = strchr(what, ' ') + 1;
    char *pid = strstr(what, " (pid=");
    if (pid)
        *pid = '\0';
    const char *f = first_frame(m, end);
    if (f)
        frame_brief(a, sizeof a, f, end);
    const char *prev = find_line_with(m, end, "Previous ");
    if (prev && prev - m < 4000 && (f = first_frame(prev, end)) != NULL)
        frame_brief(b, sizeof b, f, end);
    /* The report's first lines: what, where, and the other access. */
    size_t len = 0, cap = 0;
    *excerpt = NULL;
    const char *p = m;
    for (int k = 0; p < end && k < 40; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        append(excerpt, &len, &cap, p, (size_t)(next - p));
        if (end - p > 8 && !memcmp(p, "SUMMARY:", 8))
            break;
        p = next;
    }
    if (*b)
        return xprintf("SANITIZER: %s in %s; the other access in %s", what, a, b);
    if (*a)
        return xprintf("SANITIZER: %s in %s", what, a);
    return xprintf("SANITIZER: %s", what);
}

/* A reason for a run that did not pass because of a resource limit, or
 * NULL when nothing points at one. */
static char *limit_reason(const run_t *r, const run_spec *sp, const char *buf, const char *end)
{
    const run_report *rep = &r->rep;
    int sig = WIFSIGNALED(rep->status) ? WTERMSIG(rep->status) : 0;
    if (sig == SIGXCPU || (sig == SIGKILL && rep->cpu_ms >= (long)(sp->lim.cpu_s * 1000)) ||
        find_line_with(buf, end, "CPU time limit exceeded"))
        return xprintf("LIMIT: CPU time: a process of the test used its %g s of CPU "
                       "(RLIMIT_CPU)", sp->lim.cpu_s);
    if (sig == SIGXFSZ || find_line_with(buf, end, "File size limit exceeded") ||
        find_line_with(buf, end, "File too large"))
        return xprintf("LIMIT: file size: the test wrote a file past %g MiB (RLIMIT_FSIZE)",
                       sp->lim.fsize_mib);
    if (sp->lim.as_mib <= 0)
        return NULL;
    const char *oom = NULL;
    for (int i = 0; oom_markers[i] && !oom; i++)
        oom = find_line_with(buf, end, oom_markers[i]);
    double peak_mib = (double)rep->vm_peak_kib / 1024.0;
    if (peak_mib < 0.9 * sp->lim.as_mib && !oom)
        return NULL;
    char line[LINE_CAP] = "";
    if (oom)
        copy_line(line, sizeof line, oom, end);
    return xprintf("LIMIT: address space: %g MiB per process (RLIMIT_AS); largest seen "
                   "%.0f MiB%s%s", sp->lim.as_mib, peak_mib, *line ? "; " : "", line);
}

/* A failure whose message is libdt's timeout ("... returned
 * DT_ERR_TIMEOUT: labs/02-collectives/ring.c:45: timeout after 5 s in recv
 * #1: deadlock: ..."): a test that waited past a deadline, the same
 * verdict as the grader's own deadline (chapter 00, section 4), its reason
 * led by what matters: "TIMEOUT after 5 s in recv #1 at ring.c:45:
 * deadlock: ...", then where the test saw it. NULL for any other failure
 * (an EXPECT_ERR that wanted DT_ERR_TIMEOUT says "expected DT_ERR_TIMEOUT"
 * and no "timeout after"). */
static char *library_timeout(const char *fail)
{
    const char *err = strstr(fail, "DT_ERR_TIMEOUT: ");
    const char *after = err ? strstr(err, "timeout after ") : NULL;
    if (!after)
        return NULL;
    /* The blocking call's site just before: "PATH:LINE: " (dt/comm.h). */
    const char *site = NULL, *p = after;
    if (p - err > 2 && p[-1] == ' ' && p[-2] == ':') {
        const char *q = p - 2;
        while (q > err && isdigit((unsigned char)q[-1]))
            q--;
        if (q < p - 2 && q > err && q[-1] == ':') {
            site = q - 1;
            while (site > err && site[-1] != ' ')
                site--;
        }
    }
    char at[256] = "";
    if (site) {
        const char *base = site;
        for (const char *s = site; s < after - 2; s++)
            if (*s == '/')
                base = s + 1;
        snprintf(at, sizeof at, " at %.*s", (int)(after - 2 - base), base);
    }
    /* "timeout after 5 s in recv #1: rest": the site goes before the colon */
    const char *colon = strstr(after, ": ");
    const char *head = after + strlen("timeout ");
    const char *where = fail + (strncmp(fail, "FAIL: ", 6) ? 0 : 6);
    size_t where_len = (size_t)(err - where);
    const char *cut = strstr(where, " returned ");
    if (cut && cut < err)
        where_len = (size_t)(cut - where);
    while (where_len > 0 && (where[where_len - 1] == ':' || where[where_len - 1] == ' '))
        where_len--;
    if (!colon)
        return xprintf("TIMEOUT %s%s [%.*s]", head, at, (int)where_len, where);
    return xprintf("TIMEOUT %.*s%s%s [%.*s]", (int)(colon - head), head, at, colon,
                   (int)where_len, where);
}

/* The reason of an exit before the test's body finished. */
static char *exit_reason(const run_t *r, const channel *c)
{
    if (c->early && c->early_rank >= 0)
        return xprintf("EXIT: rank %d called exit(%d) before the test finished",
                       c->early_rank, c->early_status);
    if (c->early)
        return xprintf("EXIT: exit(%d) was called before the test finished", c->early_status);
    return xprintf("EXIT: the test's process exited with status %d before the test "
                   "finished", WEXITSTATUS(r->rep.status));
}

void verdict(test_row *row, const run_t *r, const run_spec *sp, int race_run)
{
    const run_report *rep = &r->rep;
    const char *buf = r->out.buf ? r->out.buf : "";
    const char *end = buf + r->out.len;
    channel c = read_channel(r, sp->token);
    const char *san = NULL;
    for (int i = 0; san_markers[i] && !san; i++)
        san = find_line_with(buf, end, san_markers[i]);
    int exited = rep->reaped && WIFEXITED(rep->status);
    int code = exited ? WEXITSTATUS(rep->status) : -1;
    char line[LINE_CAP];
    char *reason = NULL, *excerpt = NULL;
    enum status st;
    if (rep->interrupted) {
        st = ST_INTERRUPTED;
        reason = xprintf("INTERRUPTED: the grader was stopped while the test ran");
    } else if (rep->timed_out) {
        st = ST_TIMEOUT;
        reason = rep->starved_ms >= 100
                     ? xprintf("TIMEOUT after %g s (and %.1f s more while its threads waited for "
                               "a CPU)", sp->timeout_s, (double)rep->starved_ms / 1000.0)
                     : xprintf("TIMEOUT after %g s", sp->timeout_s);
    } else if (rep->over_tasks) {
        st = ST_LIMIT;
        reason = xprintf("LIMIT: processes and threads: more than %d at once "
                         "(the test's limit)", sp->lim.tasks);
    } else if (c.early) { /* first: a leak report at an early exit is its consequence */
        st = ST_EXIT;
        reason = exit_reason(r, &c);
    } else if (san) {
        st = ST_SANITIZER;
        reason = sanitizer_reason(san, end, &excerpt);
    } else if (exited && code == 0 && c.skip && !c.fail) {
        /* skipped, saying why: not a pass (a check that cannot run here
         * passes nothing), and out of the maximum */
        st = ST_SKIPPED;
        const char *why = find_line(buf, end, "SKIP: ");
        if (why)
            copy_line(line, sizeof line, why + 6, end);
        reason = xstrdup(why ? line : "the test skipped itself");
    } else if (exited && code == 0 && c.done && !c.fail) {
        st = ST_PASS;
    } else if ((reason = limit_reason(r, sp, buf, end)) != NULL) {
        st = ST_LIMIT;
    } else if (!rep->reaped || WIFSIGNALED(rep->status)) {
        st = ST_CRASH;
        reason = rep->reaped ? xprintf("CRASH: %s", signal_name(WTERMSIG(rep->status)))
                             : xprintf("CRASH: the test's process could not be waited for");
    } else if (r->out.first_fail[0] || find_line(buf, end, "FAIL: ")) {
        st = ST_FAIL;
        if (!r->out.first_fail[0])
            copy_line(line, sizeof line, find_line(buf, end, "FAIL: "), end);
        reason = xstrdup(r->out.first_fail[0] ? r->out.first_fail : line);
        char *t = library_timeout(reason);
        if (t) {
            st = ST_TIMEOUT;
            free(reason);
            reason = t;
        }
    } else if (!c.done) {
        st = ST_EXIT;
        reason = exit_reason(r, &c);
    } else {
        st = ST_FAIL;
        reason = xprintf("FAIL: exit status %d after the test finished", code);
    }
    if (race_run && reason) {
        char *r2 = xprintf("%s [ThreadSanitizer build]", reason);
        free(reason);
        reason = r2;
    }
    row->st = st;
    row->reason = reason;
    row->seconds = now_s() - r->started;
    row->rep = *rep;
    if (st == ST_PASS || st == ST_SKIPPED) {
        row->output = make_details(NULL, NULL, buf, r->out.len);
    } else {
        /* A sanitizer's report is its excerpt: the tail is what came before. */
        size_t tail = san && st == ST_SANITIZER ? (size_t)(san - buf) : r->out.len;
        row->details = make_details(reason, excerpt, buf, tail);
        if (rep->leftovers > 0) {
            char *d = xprintf("%s[the grader could not kill %d of the test's processes]\n",
                              row->details, rep->leftovers);
            free(row->details);
            row->details = d;
        }
    }
    free(excerpt);
}
