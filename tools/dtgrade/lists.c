/* lists.c - a lab's tests: what `grade --list` says, or, when the lab did
 * not build, what the TEST(...) lines of its sources register (so that a
 * lab that does not build scores 0 of its real maximum). */
#include "dtgrade.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends a zeroed row named name to lab's table. */
test_row *add_row(lab_t *lab, const char *name, int points, int hidden)
{
    if (lab->nrows == lab->cap) {
        lab->cap = lab->cap ? 2 * lab->cap : 16;
        lab->rows = xrealloc(lab->rows, sizeof(test_row) * (size_t)lab->cap);
    }
    test_row *r = &lab->rows[lab->nrows++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(name);
    r->points = points;
    r->hidden = hidden;
    r->st = ST_PENDING;
    return r;
}

/* Parses the lines of `grade --list` (tests/grader/test_main.c):
 *   test NAME POINTS TIMEOUT VISIBILITY RACE AS_MIB CPU_S FSIZE_MIB TASKS
 * tab-separated. Other lines (what a constructor printed) are ignored.
 * Returns the number of tests, or -1 when a test line is malformed. */
int parse_list(lab_t *lab, const char *text, size_t len)
{
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        if (n > 5 && memcmp(p, "test\t", 5) == 0 && n < 1024) {
            char line[1024], name[256], vis[16];
            memcpy(line, p, n);
            line[n] = '\0';
            int points, race, tasks, tail = 0;
            double timeout, as, cpu, fsize;
            if (sscanf(line, "test\t%255[^\t]\t%d\t%lf\t%15[^\t]\t%d\t%lf\t%lf\t%lf\t%d%n", name,
                       &points, &timeout, vis, &race, &as, &cpu, &fsize, &tasks, &tail) != 9 ||
                tail != (int)n || points < 0 || !(timeout > 0))
                return -1;
            test_row *r = add_row(lab, name, points, strcmp(vis, "hidden") == 0);
            r->timeout_s = timeout;
            r->race = race != 0;
            r->lim = (limits){as, cpu, fsize, tasks};
        }
        p = nl ? nl + 1 : end;
    }
    return lab->nrows;
}

/* The registrations of one source file. */
static void scan_file(lab_t *lab, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        char kind[32], name[256];
        int points;
        if (sscanf(p, "%31[A-Z_](%255[A-Za-z0-9_] , %d", kind, name, &points) != 3)
            continue;
        int hidden = !strcmp(kind, "TEST_HIDDEN") || !strcmp(kind, "TEST_HIDDEN_T");
        if (strcmp(kind, "TEST") && strcmp(kind, "TEST_T") && !hidden)
            continue;
        if (!hidden || opt.hidden)
            add_row(lab, name, points, hidden);
    }
    fclose(f);
}

/* A lab that did not build: its rows from tests_root/NAME/ (hidden_*.c only
 * when hidden tests are graded; never gpu_*.c, the tests compiled in make
 * gpu's build alone, empty elsewhere, so that a lab's points are the CPU
 * build's), all BUILD FAILED. */
void scan_sources(lab_t *lab)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", opt.tests_root, lab->name);
    for (int i = 0; i < lab->nrows; i++)
        free(lab->rows[i].name);
    lab->nrows = 0;
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    for (int e = 0; e < n; e++) {
        const char *fn = ents[e]->d_name;
        size_t fl = strlen(fn);
        if (fl > 2 && !strcmp(fn + fl - 2, ".c") && (opt.hidden || strncmp(fn, "hidden_", 7)) &&
            strncmp(fn, "gpu_", 4)) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, fn);
            scan_file(lab, path);
        }
        free(ents[e]);
    }
    if (n >= 0)
        free(ents);
    if (lab->nrows == 0) /* no sources either: one row for the build */
        add_row(lab, "build", 1, 0);
    for (int i = 0; i < lab->nrows; i++)
        lab->rows[i].st = ST_BUILD;
}

/* `dtgrade --points TESTS_ROOT LAB...`: the points each lab's sources
 * register, visible and hidden, one line per lab (tab-separated):
 *   LAB VISIBLE_TESTS VISIBLE_POINTS HIDDEN_TESTS HIDDEN_POINTS
 * (what the student tree's README tells about hidden tests). */
int points_main(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: dtgrade --points TESTS_ROOT LAB...\n");
        return 2;
    }
    opt.tests_root = argv[0];
    opt.hidden = 1;
    for (int i = 1; i < argc; i++) {
        lab_t lab = {0};
        lab.name = argv[i];
        scan_sources(&lab);
        int n[2] = {0, 0}, pts[2] = {0, 0};
        for (int k = 0; k < lab.nrows; k++) {
            if (lab.nrows == 1 && !strcmp(lab.rows[0].name, "build"))
                break; /* no sources: scan_sources' placeholder */
            n[lab.rows[k].hidden]++;
            pts[lab.rows[k].hidden] += lab.rows[k].points;
        }
        printf("%s\t%d\t%d\t%d\t%d\n", lab.name, n[0], pts[0], n[1], pts[1]);
    }
    return 0;
}
