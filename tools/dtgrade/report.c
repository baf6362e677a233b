/* report.c - the score table: one line per test, and under a failed test
 * its full failure text (the reason in full when the line had to cut it,
 * then every rank's last lines). */
#include "dtgrade.h"

#include <stdio.h>
#include <string.h>

const char *const status_name[] = {"pass",  "FAIL",        "CRASH",   "TIMEOUT",
                                   "SANITIZER", "LIMIT",   "EXIT",    "INTERRUPTED",
                                   "NOT RUN", "BUILD",     "skip",    "skipped"};

/* Prints text's lines with a prefix, from its line `from` on. */
static void print_lines(const char *prefix, const char *text, int from)
{
    int k = 0;
    for (const char *p = text; *p; k++) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        if (k >= from)
            printf("%s%.*s\n", prefix, n, p);
        p += n + (nl ? 1 : 0);
    }
}

void print_header(void)
{
    printf("  %-34s %-7s %-11s %s\n", "test", "points", "status", "reason");
}

void print_row(const test_row *r)
{
    if (opt.quiet && (r->st == ST_PASS || r->st == ST_SKIP))
        return;
    /* Tests left out on purpose (--only, --no-hidden) are not shown. */
    if (r->st == ST_SKIP)
        return;
    /* A skeleton is expected to fail: show only what is not a plain FAIL. */
    int skeleton_fail = opt.quiet && opt.expect_zero && r->st == ST_FAIL;
    if (skeleton_fail)
        return;
    int got = r->st == ST_PASS ? r->points : 0;
    const char *reason = r->reason ? r->reason : "";
    int cut = (int)strlen(reason) > REASON_SHOWN;
    if (r->st == ST_SKIPPED) /* out of the maximum: no points either way */
        printf("  %-34s   -/%-3d %-11s %.*s%s%s\n", r->name, r->points, status_name[r->st],
               REASON_SHOWN, reason, cut ? "..." : "", r->hidden ? "  (hidden)" : "");
    else
        printf("  %-34s %3d/%-3d %-11s %.*s%s%s\n", r->name, got, r->points, status_name[r->st],
               REASON_SHOWN, reason, cut ? "..." : "", r->hidden ? "  (hidden)" : "");
    if (r->details && r->st != ST_PASS && r->st != ST_BUILD && r->st != ST_NOT_RUN &&
        r->st != ST_SKIPPED) {
        /* The details start with the reason: shown again only when cut. */
        print_lines("      | ", r->details, cut ? 0 : 1);
    }
    fflush(stdout);
}

/* What the splice said about the student's files, and why the lab did not
 * build, above its table. */
void print_lab_notes(const lab_t *lab)
{
    if (lab->notes) {
        printf("  Your files:\n");
        print_lines("    | ", lab->notes, 0);
    }
    if (lab->build_text) {
        printf("  Build:\n");
        print_lines("    | ", lab->build_text, 0);
    }
}
