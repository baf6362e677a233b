/* splice.c - `dtgrade --splice OFFICIAL_DIR STUDENT_DIR OUT_DIR [SHOWN_AS]`:
 * one lab's files as the grader builds them: every file of the official
 * lab (OFFICIAL_DIR), with the bodies of its student fences
 *     / * BEGIN STUDENT CODE * / ... / * END STUDENT CODE * /
 * taken from the student's copy (STUDENT_DIR), fence by fence in order.
 * Everything outside the fences, and every file without a fence (the
 * lab's headers), is the official text, so a student's copy can change
 * nothing but the code the lab asks for.
 *
 * A .c file starts with `#line 1 "SHOWN_AS/FILE"` (and resynchronises
 * after each fence), so that compiler messages, __FILE__ and sanitizer
 * reports name the student's file and lines. Files are rewritten only
 * when their text changes (make then rebuilds only what changed).
 *
 * Prints one line per note or problem, naming the student's file:
 *   note: ... changes outside the fences are not graded / file missing
 *   error: ... the fences do not match the official file's
 * Exit status: 0 when every file could be spliced, 1 when a file's fences
 * do not match (nothing is written for the lab: it does not build), 2 on
 * a usage or I/O error. */
#include "dtgrade.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FENCES 64

typedef struct {
    char *text;
    char **line; /* line[i] points into text; '\n' replaced by '\0' */
    int n;
    int begin[MAX_FENCES], end[MAX_FENCES]; /* line indexes of the fence lines */
    int nf;
} source;

static int is_begin(const char *l) { return strstr(l, "BEGIN STUDENT CODE") != NULL; }
static int is_end(const char *l) { return strstr(l, "END STUDENT CODE") != NULL; }

/* Reads and splits a file into lines. -1 when it cannot be read. */
static int load(source *s, const char *path)
{
    memset(s, 0, sizeof *s);
    size_t len;
    s->text = read_file(path, (size_t)16 << 20, &len);
    if (!s->text)
        return -1;
    int cap = 64;
    s->line = xmalloc(sizeof(char *) * (size_t)cap);
    for (char *p = s->text; p < s->text + len;) {
        if (s->n == cap)
            s->line = xrealloc(s->line, sizeof(char *) * (size_t)(cap *= 2));
        s->line[s->n++] = p;
        char *nl = memchr(p, '\n', (size_t)(s->text + len - p));
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return 0;
}

static void unload(source *s)
{
    free(s->text);
    free(s->line);
}

/* Finds the fences; on a pairing problem, prints it and returns -1. */
static int find_fences(source *s, const char *shown)
{
    int open_at = -1;
    for (int i = 0; i < s->n; i++) {
        if (is_begin(s->line[i])) {
            if (open_at >= 0) {
                printf("error: %s:%d: BEGIN STUDENT CODE inside the fence opened at line %d\n",
                       shown, i + 1, open_at + 1);
                return -1;
            }
            if (s->nf == MAX_FENCES) {
                printf("error: %s:%d: more than %d student fences\n", shown, i + 1, MAX_FENCES);
                return -1;
            }
            open_at = i;
            s->begin[s->nf] = i;
        } else if (is_end(s->line[i])) {
            if (open_at < 0) {
                printf("error: %s:%d: END STUDENT CODE without a BEGIN STUDENT CODE before it\n",
                       shown, i + 1);
                return -1;
            }
            s->end[s->nf++] = i;
            open_at = -1;
        }
    }
    if (open_at >= 0) {
        printf("error: %s:%d: BEGIN STUDENT CODE is never closed by END STUDENT CODE\n", shown,
               open_at + 1);
        return -1;
    }
    return 0;
}

static int same_lines(const source *a, const source *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->line[i], b->line[i]) != 0)
            return 0;
    return 1;
}

/* The last non-blank line before official fence k: how a student finds it. */
static const char *fence_context(const source *o, int k)
{
    for (int i = o->begin[k] - 1; i >= 0; i--) {
        const char *l = o->line[i];
        while (*l == ' ' || *l == '\t')
            l++;
        if (*l)
            return l;
    }
    return "(the top of the file)";
}

/* Notes the first line outside the fences where the student's copy
 * differs from the official one. */
static void note_outside_changes(const source *o, const source *s, const char *shown)
{
    int io = 0, is = 0;
    for (int k = 0; k <= o->nf; k++) {
        int eo = k < o->nf ? o->begin[k] : o->n, es = k < o->nf ? s->begin[k] : s->n;
        for (; io < eo || is < es; io++, is++) {
            if (io >= eo || is >= es || strcmp(o->line[io], s->line[is]) != 0) {
                printf("note: %s:%d: differs from the lab's file outside the student fences: "
                       "changes outside the fences are not graded\n", shown, is + 1);
                return;
            }
        }
        if (k < o->nf) {
            io = o->end[k];
            is = s->end[k];
        }
    }
}

static void put_line(char **out, size_t *len, size_t *cap, const char *l)
{
    append(out, len, cap, l, strlen(l));
    append(out, len, cap, "\n", 1);
}

/* The official text with the student's fence bodies. */
static char *splice_text(const source *o, const source *s, const char *shown, size_t *len)
{
    char *out = NULL, hdr[1200];
    size_t cap = 0;
    *len = 0;
    snprintf(hdr, sizeof hdr, "#line 1 \"%s\"", shown);
    put_line(&out, len, &cap, hdr);
    int i = 0;
    for (int k = 0; k < o->nf; k++) {
        for (; i <= o->begin[k]; i++)
            put_line(&out, len, &cap, o->line[i]);
        snprintf(hdr, sizeof hdr, "#line %d \"%s\"", s->begin[k] + 2, shown);
        put_line(&out, len, &cap, hdr);
        for (int j = s->begin[k] + 1; j < s->end[k]; j++)
            put_line(&out, len, &cap, s->line[j]);
        snprintf(hdr, sizeof hdr, "#line %d \"%s\"", s->end[k] + 1, shown);
        put_line(&out, len, &cap, hdr);
        i = o->end[k];
    }
    for (; i < o->n; i++)
        put_line(&out, len, &cap, o->line[i]);
    return out;
}

/* Writes path only when its content differs (keeps its time otherwise). */
static int write_if_changed(const char *path, const char *text, size_t len)
{
    size_t old_len;
    char *old = read_file(path, len + 1, &old_len);
    int same = old && old_len == len && memcmp(old, text, len) == 0;
    free(old);
    if (same)
        return 0;
    char *tmp = xprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        printf("error: cannot write %s: %s\n", path, strerror(errno));
    free(tmp);
    return ok ? 0 : -1;
}

/* One file: its spliced text into *text. 0, or -1 on a fence mismatch. */
static int splice_file(const char *official, const char *student, const char *shown,
                       char **text, size_t *len)
{
    source o, s;
    if (load(&o, official) != 0) {
        printf("error: cannot read %s: %s\n", official, strerror(errno));
        return -1;
    }
    int rc = find_fences(&o, official);
    int have = rc == 0 && load(&s, student) == 0;
    if (rc == 0 && o.nf > 0 && !have)
        printf("note: %s: not found: the lab's unchanged file is graded\n", shown);
    if (rc == 0 && have && o.nf > 0) {
        rc = find_fences(&s, shown);
        if (rc == 0 && s.nf != o.nf) {
            int k = s.nf < o.nf ? s.nf : o.nf;
            printf("error: %s: has %d student fence(s), the lab's file has %d: fence %d (after "
                   "\"%.80s\") %s\n", shown, s.nf, o.nf, k + 1, fence_context(&o, k),
                   s.nf < o.nf ? "is missing" : "is one too many");
            rc = -1;
        }
        if (rc == 0) {
            note_outside_changes(&o, &s, shown);
            *text = splice_text(&o, &s, shown, len);
        }
    } else if (rc == 0 && have && !same_lines(&o, &s)) {
        printf("note: %s: has no student fence: your changes to it are not graded\n", shown);
    }
    if (rc == 0 && !*text) { /* no fence: the official file as it is */
        size_t n = strlen(official);
        char *body = read_file(official, (size_t)16 << 20, len);
        if (n > 2 && !strcmp(official + n - 2, ".c")) { /* named as the student knows it */
            *text = xprintf("#line 1 \"%s\"\n%s", shown, body);
            *len = strlen(*text);
            free(body);
        } else {
            *text = body;
        }
    }
    if (have)
        unload(&s);
    unload(&o);
    return rc;
}

static int is_source(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

int splice_main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: dtgrade --splice OFFICIAL_DIR STUDENT_DIR OUT_DIR [SHOWN_AS]\n");
        return 2;
    }
    const char *odir = argv[0], *sdir = argv[1], *out = argv[2], *shown = argc == 4 ? argv[3] : sdir;
    struct dirent **ents;
    int n = scandir(odir, &ents, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "dtgrade: --splice: cannot read the official folder '%s': %s\n", odir,
                strerror(errno));
        return 2;
    }
    struct stat sb;
    if (stat(sdir, &sb) != 0)
        printf("note: %s: not found: the lab's unchanged files are graded\n", shown);
    char *texts[256] = {0};
    size_t lens[256];
    int nfiles = 0, bad = 0;
    for (int e = 0; e < n; e++) {
        const char *fn = ents[e]->d_name;
        if (is_source(fn) && nfiles < 256) {
            char *of = xprintf("%s/%s", odir, fn), *sf = xprintf("%s/%s", sdir, fn);
            char *sh = xprintf("%s/%s", shown, fn);
            if (splice_file(of, sf, sh, &texts[nfiles], &lens[nfiles]) != 0)
                bad = 1;
            nfiles++;
            free(of), free(sf), free(sh);
        }
    }
    if (!bad) {
        mkdir(out, 0755);
        for (int e = 0, f = 0; e < n; e++) {
            if (!is_source(ents[e]->d_name) || f >= nfiles)
                continue;
            char *p = xprintf("%s/%s", out, ents[e]->d_name);
            if (write_if_changed(p, texts[f], lens[f]) != 0)
                bad = 2;
            free(p);
            f++;
        }
    }
    /* Files of the folder that are no longer the lab's go (a file the
     * official lab dropped must not be compiled from an old splice). */
    struct dirent **oents;
    int on = bad ? -1 : scandir(out, &oents, NULL, alphasort);
    for (int e = 0; e < on; e++) {
        char *of = xprintf("%s/%s", odir, oents[e]->d_name);
        if (is_source(oents[e]->d_name) && stat(of, &sb) != 0) {
            char *p = xprintf("%s/%s", out, oents[e]->d_name);
            unlink(p);
            free(p);
        }
        free(of);
        free(oents[e]);
    }
    if (on >= 0)
        free(oents);
    /* The student's files that are not the lab's: said, not taken. */
    struct dirent **sents;
    int sn = scandir(sdir, &sents, NULL, alphasort);
    for (int e = 0; e < sn; e++) {
        char *of = xprintf("%s/%s", odir, sents[e]->d_name);
        if (is_source(sents[e]->d_name) && stat(of, &sb) != 0)
            printf("note: %s/%s: not a file of the lab: not graded\n", shown, sents[e]->d_name);
        free(of);
        free(sents[e]);
    }
    if (sn >= 0)
        free(sents);
    for (int e = 0; e < n; e++)
        free(ents[e]);
    free(ents);
    for (int f = 0; f < nfiles; f++)
        free(texts[f]);
    return bad;
}
