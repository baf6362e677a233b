/* shm.c - the shared-memory segments of the proc backend, removed when
 * their job is over.
 *
 * libdt names a job's segments /dtlab.<uid>.<job>... (lib/comm/emul/segment.c),
 * <job> being DT_JOB_ID, which the grader sets per test; other parts of a
 * name (a counter, an unpredictable suffix) may follow or precede it, so a
 * test's segments are those of this user whose name holds <job> as one
 * dot-separated part. A stale segment is one of this user's that no
 * process maps any more and that was last written STALE_AGE_S ago or more (a
 * job maps its segment right after creating and sizing it). */
#include "dtgrade.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_AGE_S 10

static size_t user_prefix(char *out, size_t cap)
{
    snprintf(out, cap, "dtlab.%u.", (unsigned)getuid());
    return strlen(out);
}

/* Whether name (after the user's prefix) holds job as a whole part. */
static int names_job(const char *rest, const char *job)
{
    size_t jl = strlen(job);
    for (const char *p = rest; (p = strstr(p, job)) != NULL; p++) {
        int starts = p == rest || p[-1] == '.';
        int ends = p[jl] == '\0' || p[jl] == '.';
        if (starts && ends)
            return 1;
    }
    return 0;
}

/* Unlinks this user's segments of the job: what its test left behind. */
void shm_unlink_job(const char *job)
{
    char prefix[64];
    size_t pl = user_prefix(prefix, sizeof prefix);
    if (!job || !*job)
        return;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) == 0 && names_job(e->d_name + pl, job)) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

/* Appends to *mapped every "/dev/shm/<prefix>..." name that some process
 * maps ("\n"-separated). */
static void mapped_segments(const char *prefix, char **mapped, size_t *len, size_t *cap)
{
    char needle[80];
    snprintf(needle, sizeof needle, "/dev/shm/%s", prefix);
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300], line[1024];
        snprintf(path, sizeof path, "/proc/%s/maps", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            char *p = strstr(line, needle);
            if (!p)
                continue;
            p += strlen("/dev/shm/");
            size_t n = strcspn(p, " \n");
            append(mapped, len, cap, p, n);
            append(mapped, len, cap, "\n", 1);
        }
        fclose(f);
    }
    closedir(d);
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && (p = strstr(p, name)) != NULL; p++)
        if ((p == list || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

/* Removes this user's segments whose job is gone. Returns how many. */
int shm_sweep_stale(void)
{
    char prefix[64];
    size_t pl = user_prefix(prefix, sizeof prefix);
    char *mapped = NULL;
    size_t len = 0, cap = 0;
    int removed = 0, looked = 0;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        struct stat sb;
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != getuid() ||
            now - sb.st_mtime < STALE_AGE_S)
            continue;
        if (!looked++)
            mapped_segments(prefix, &mapped, &len, &cap);
        if (!in_list(mapped, e->d_name) && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    free(mapped);
    return removed;
}
