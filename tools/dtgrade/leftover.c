/* leftover.c - a test's temporary folder, and the files it left behind.
 *
 * Nothing a test writes may outlive it. Each test gets a fresh folder of
 * its own, TMP_ROOT/JOB (TMPDIR in its environment; the tests and libdt
 * put their temporary files there); after the test it must be empty, and
 * it is removed. A file or folder left in it fails the test, named.
 *
 * Code that ignores TMPDIR and writes to /tmp itself is caught too: a new
 * entry of /tmp, of this user, named like the project's files (dt..., lab...),
 * whose name holds the process id of one of the test's processes (as such
 * names do: "/tmp/dtlab-fsdp-trace-4242.json"), fails the test. The pid
 * tells the test's files from those of anything else running on the
 * machine at the time (another grader, another suite), so the verdict
 * does not depend on what ran beside it; a name without a pid of the test
 * is not blamed on it. */
#include "dtgrade.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHOWN_MAX 3 /* leftovers named in a reason */

/* mkdir -p of path; 0 or -1. */
static int make_dirs(const char *path)
{
    char *p = xstrdup(path);
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            rc = -1;
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

/* The folder an option names, made if need be (make 1), as an absolute
 * path: a test that changes its folder keeps it. */
const char *folder_absolute(const char *option, const char *dir, int make)
{
    char *abs;
    if (make && make_dirs(dir) != 0)
        die("%s: cannot make the folder %s: %s", option, dir, strerror(errno));
    if (!(abs = realpath(dir, NULL)))
        die("%s: no folder %s: %s", option, dir, strerror(errno));
    return abs;
}

/* The test's folder, TMP_ROOT/JOB, made empty. */
void tmp_prepare(run_spec *sp)
{
    snprintf(sp->tmpdir, sizeof sp->tmpdir, "%s/%s", opt.tmp_root, sp->job);
    if (make_dirs(sp->tmpdir) != 0)
        die("cannot make the test's temporary folder %s: %s (--tmp-root)", sp->tmpdir,
            strerror(errno));
}

static int project_name(const char *n)
{
    return !strncmp(n, "dt", 2) || !strncmp(n, "lab", 3);
}

void tmp_list(tmp_listing *out)
{
    out->names = NULL;
    out->n = 0;
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    int cap = 0;
    uid_t me = getuid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        char path[512];
        if (!project_name(e->d_name))
            continue;
        snprintf(path, sizeof path, "/tmp/%s", e->d_name);
        if (lstat(path, &sb) != 0 || sb.st_uid != me)
            continue;
        if (out->n == cap)
            out->names = xrealloc(out->names, sizeof *out->names * (size_t)(cap = cap ? 2 * cap : 16));
        out->names[out->n++] = xstrdup(e->d_name);
    }
    closedir(d);
}

void tmp_listing_free(tmp_listing *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

/* Whether name holds one of the pids as a whole number. */
static int names_a_pid(const char *name, const run_t *r)
{
    for (const char *p = name; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > name && isdigit((unsigned char)p[-1])))
            continue;
        long v = strtol(p, NULL, 10);
        if (v > 0 && v == (long)r->test)
            return 1;
        for (int i = 0; i < r->npids; i++)
            if (v == (long)r->pids[i])
                return 1;
    }
    return 0;
}

/* The entries found in the test's folder (nftw's callback has no user
 * argument: one walk at a time, from the grader's single thread). */
static char *found;
static size_t found_len, found_cap;
static int found_n;
static size_t root_len;

static void note(const char *path)
{
    if (found_n++ < SHOWN_MAX) {
        if (found_len)
            append(&found, &found_len, &found_cap, ", ", 2);
        append(&found, &found_len, &found_cap, path, strlen(path));
    }
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    if (ftw->level == 1) /* what is in the folder, not in its subfolders */
        note(path + root_len + 1);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* After the test: NULL when it left nothing, else a reason naming what it
 * left (in its folder, which is removed, or in /tmp). */
char *tmp_leftovers(const run_spec *sp, const run_t *r, const tmp_listing *before)
{
    found = NULL;
    found_len = found_cap = 0;
    found_n = 0;
    char *reason = NULL;
    if (sp->tmpdir[0]) {
        root_len = strlen(sp->tmpdir);
        nftw(sp->tmpdir, visit, 16, FTW_PHYS);
        if (found_n > 0) {
            append(&found, &found_len, &found_cap, "", 1);
            reason = xprintf("FAIL: the test left %s%s behind in its temporary folder "
                             "(TMPDIR, %s): a test removes what it writes",
                             found, found_n > SHOWN_MAX ? " and more" : "", sp->tmpdir);
        }
        nftw(sp->tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(found);
        found = NULL;
        found_len = found_cap = 0;
        found_n = 0;
    }
    tmp_listing now;
    tmp_list(&now);
    for (int i = 0; i < now.n; i++) {
        int old = 0;
        for (int k = 0; k < before->n && !old; k++)
            old = !strcmp(now.names[i], before->names[k]);
        if (!old && names_a_pid(now.names[i], r)) {
            char path[512];
            snprintf(path, sizeof path, "/tmp/%s", now.names[i]);
            note(path);
        }
    }
    tmp_listing_free(&now);
    if (found_n > 0 && !reason) {
        append(&found, &found_len, &found_cap, "", 1);
        reason = xprintf("FAIL: the test left %s%s behind, outside its temporary folder "
                         "(write temporary files under $TMPDIR, and remove them)", found,
                         found_n > SHOWN_MAX ? " and more" : "");
    }
    free(found);
    found = NULL;
    return reason;
}
