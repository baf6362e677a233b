/* digest.c - the failure text of a test: its reason in full, then what
 * the test printed last. When ranks spoke ("[rank R] ..."), the last lines
 * of each rank are kept, not only the last lines overall, so that a
 * multi-rank failure shows every rank. Capped at DETAILS_CAP bytes; a line
 * identical to the reason is not repeated. */
#include "dtgrade.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_LINES 14 /* lines of general output kept */
#define RANK_LINES 4    /* lines kept per rank */
#define MAX_RANKS 64

typedef struct {
    char *s;
    size_t len, cap;
    const char *skip; /* a line not to repeat */
    int full;
} text;

/* Adds one line of the output (from p to its end of line) unless it is
 * the skipped one, or the text is full. */
static void add_line(text *t, const char *p, const char *end)
{
    char line[LINE_CAP];
    copy_line(line, sizeof line, p, end);
    if (t->full || (t->skip && strcmp(line, t->skip) == 0))
        return;
    size_t n = strlen(line);
    if (t->len + n + 1 > DETAILS_CAP) {
        char cut[80];
        snprintf(cut, sizeof cut, "[... cut: the failure text is capped at %d KiB]",
                 DETAILS_CAP / 1024);
        append(&t->s, &t->len, &t->cap, cut, strlen(cut));
        append(&t->s, &t->len, &t->cap, "\n", 1);
        t->full = 1;
        return;
    }
    append(&t->s, &t->len, &t->cap, line, n);
    append(&t->s, &t->len, &t->cap, "\n", 1);
}

/* The output's tail, rank by rank, appended to t. */
static void add_tail(text *t, const char *buf, size_t len)
{
    const char *rank_last[MAX_RANKS][RANK_LINES];
    int rank_n[MAX_RANKS] = {0};
    const char *gen[DIGEST_LINES];
    int gen_n = 0, any_rank = 0;
    const char *end = buf + len;
    for (const char *p = buf; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        int r;
        if (sscanf(p, "[rank %d]", &r) == 1 && r >= 0 && r < MAX_RANKS) {
            rank_last[r][rank_n[r] % RANK_LINES] = p;
            rank_n[r]++;
            any_rank = 1;
        } else if (next - p > 1) {
            gen[gen_n % DIGEST_LINES] = p;
            gen_n++;
        }
        p = next;
    }
    int gshow = any_rank ? DIGEST_LINES / 2 : DIGEST_LINES;
    for (int i = gen_n > gshow ? gen_n - gshow : 0; i < gen_n; i++)
        add_line(t, gen[i % DIGEST_LINES], end);
    for (int r = 0; r < MAX_RANKS; r++)
        for (int k = rank_n[r] > RANK_LINES ? rank_n[r] - RANK_LINES : 0; k < rank_n[r]; k++)
            add_line(t, rank_last[r][k % RANK_LINES], end);
}

/* reason (may be NULL), then the lines of excerpt (may be NULL: e.g. a
 * sanitizer's report), then the output's tail. NULL when all are empty. */
char *make_details(const char *reason, const char *excerpt, const char *buf, size_t len)
{
    text t = {NULL, 0, 0, reason, 0};
    if (reason) {
        size_t n = strlen(reason);
        append(&t.s, &t.len, &t.cap, reason, n < DETAILS_CAP / 2 ? n : DETAILS_CAP / 2);
        append(&t.s, &t.len, &t.cap, "\n", 1);
    }
    if (excerpt) {
        const char *end = excerpt + strlen(excerpt);
        for (const char *p = excerpt; p < end;) {
            add_line(&t, p, end);
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
        }
    }
    if (buf && len)
        add_tail(&t, buf, len);
    return t.s;
}
