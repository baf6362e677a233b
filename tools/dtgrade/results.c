/* results.c - Gradescope's results.json: score, max_score, a top-level
 * "output" that every student sees (the score, a notice, why a lab did not
 * build, each lab's notes about the student's files), and one entry
 * per test with its failure text, stored once. */
#include "dtgrade.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            p++;
        } else if (c == '\n' || c == '\t') {
            fputs(c == '\n' ? "\\n" : "\\t", f);
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
            fwrite(ok ? (const char *)p : "?", 1, ok ? (size_t)n : 1, f);
            p += ok ? n : 1;
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

/* The top-level message: what every student sees above the tests. */
static char *top_output(const lab_t *labs, int nlabs, int score, int max)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    if (opt.notice_file) {
        size_t n;
        char *notice = read_file(opt.notice_file, 8192, &n);
        if (notice && n) {
            append(&s, &len, &cap, notice, n);
            if (notice[n - 1] != '\n')
                append(&s, &len, &cap, "\n", 1);
            append(&s, &len, &cap, "\n", 1);
        }
        free(notice);
    }
    char line[256];
    snprintf(line, sizeof line, "Score: %d/%d\n", score, max);
    append(&s, &len, &cap, line, strlen(line));
    /* The labs that did not build first (what to fix first: the
     * compiler's messages, then the notes on the lab's files), then the
     * others' notes. */
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < nlabs; l++) {
            const lab_t *lab = &labs[l];
            if ((!lab->notes && !lab->build_text) || lab->build_failed != (pass == 0))
                continue;
            snprintf(line, sizeof line, "\n== %s%s\n", lab->name,
                     lab->build_failed ? ": BUILD FAILED (fix this first: every test of the lab "
                                         "scores 0)" : "");
            append(&s, &len, &cap, line, strlen(line));
            if (lab->build_text)
                append(&s, &len, &cap, lab->build_text, strlen(lab->build_text));
            if (lab->notes)
                append(&s, &len, &cap, lab->notes, strlen(lab->notes));
        }
    }
    return s;
}

static void write_test(FILE *f, const lab_t *lab, const test_row *r, int first)
{
    char *name = xprintf("%s/%s", lab->name, r->name);
    char *out;
    if (r->st == ST_PASS)
        out = xprintf("passed\n%s", r->output ? r->output : "");
    else if (r->st == ST_SKIPPED)
        out = xprintf("skipped: %s\n", r->reason ? r->reason : "");
    else if (r->st == ST_BUILD) /* its reason points above, where the terminal's table has them */
        out = xprintf("BUILD FAILED: the lab did not build, so this test did not run. Why is at "
                      "the top of these results, under \"== %s: BUILD FAILED\".\n", lab->name);
    else
        out = xstrdup(r->details ? r->details : r->reason ? r->reason : "");
    fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
    json_str(f, name);
    if (r->st == ST_SKIPPED) /* out of the maximum, neither passed nor failed */
        fprintf(f, ", \"score\": 0, \"max_score\": 0, \"visibility\": \"%s\",\n",
                r->hidden ? "hidden" : "visible");
    else
        fprintf(f, ", \"score\": %d, \"max_score\": %d, \"status\": \"%s\", "
                   "\"visibility\": \"%s\",\n", r->st == ST_PASS ? r->points : 0, r->points,
                r->st == ST_PASS ? "passed" : "failed", r->hidden ? "hidden" : "visible");
    fprintf(f, "     \"extra_data\": {\"verdict\": \"%s\", \"seconds\": %.2f, \"cpu_seconds\": %.2f, "
               "\"tasks_peak\": %d, \"vm_peak_mib\": %.0f},\n     \"output\": ",
            status_name[r->st], r->seconds, (double)r->rep.cpu_ms / 1000.0, r->rep.tasks_peak,
            (double)r->rep.vm_peak_kib / 1024.0);
    json_str(f, out);
    fprintf(f, "}");
    free(out);
    free(name);
}

int write_results(const lab_t *labs, int nlabs, int score, int max, double secs)
{
    mkdirs_for(opt.results);
    char *tmp = xprintf("%s.tmp", opt.results);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "dtgrade: cannot write %s: %s\n", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    fprintf(f, "{\n  \"score\": %d,\n  \"max_score\": %d,\n  \"execution_time\": %.0f,\n", score,
            max, secs);
    char *top = top_output(labs, nlabs, score, max);
    fprintf(f, "  \"output\": ");
    json_str(f, top);
    free(top);
    fprintf(f, ",\n  \"tests\": [");
    int first = 1;
    for (int l = 0; l < nlabs; l++) {
        for (int i = 0; i < labs[l].nrows; i++) {
            if (labs[l].rows[i].st == ST_SKIP)
                continue;
            write_test(f, &labs[l], &labs[l].rows[i], first);
            first = 0;
        }
    }
    fprintf(f, "\n  ]\n}\n");
    int bad = fclose(f) != 0 || rename(tmp, opt.results) != 0;
    if (bad)
        fprintf(stderr, "dtgrade: cannot write %s\n", opt.results);
    free(tmp);
    return bad ? -1 : 0;
}
