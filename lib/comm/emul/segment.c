/* segment.c - the proc backend's shared-memory segment as a file: its
 * name, its creation, the checks before a program attaches to it, and the
 * removal of segments left over by jobs that were killed.
 *
 * A segment's name is
 *
 *     /dtlab.<uid>.<job>.<pid>.<random>
 *
 *   uid     the owner's user id. Everything of one user starts with
 *           /dtlab.<uid>. (the grader's cleanup relies on that prefix);
 *   job     DT_JOB_ID when set (the grader sets one per test, and removes
 *           every /dtlab.<uid>.<job>* after the test), else the launcher's pid;
 *   pid     the launcher's pid: while that process lives, the job may too;
 *   random  16 hex digits from getrandom(), so that no other local user
 *           can guess a name and create it first to make a launch fail.
 *
 * Creation is O_CREAT | O_EXCL with mode 0600: a name that exists is never
 * reused. The launcher unlinks the name as soon as no process needs to open
 * it (at once for forked ranks, when the last program has attached for
 * dtrun) and again at the end of the job, so a name is left behind only
 * when the launcher itself is killed with SIGKILL before then.
 *
 * The stale rule: a segment whose name has the shape above with this
 * user's uid, that this user owns, and whose <pid> is no longer a process
 * (kill(pid, 0) fails with ESRCH) belongs to a job that is gone; every proc
 * launch (dt_launch with the proc backend, dtrun) removes such segments
 * before it creates its own. A pid the system has given to a new process
 * only keeps a stale segment until that process ends; a segment of the old
 * shape (no random part) is never touched.
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SHM_DIR "/dev/shm"     /* where glibc's shm_open keeps its files */
#define RANDOM_HEX 16          /* the random part: 64 bits */
#define SEGMENT_MODE 0600
#define ARENA_DEFAULT_MB 1024

/* ---------------------------------------------------------------- names */

/* 8 unpredictable bytes as 16 hex digits (out has RANDOM_HEX + 1 chars). */
static dt_result random_hex(char *out)
{
    unsigned char b[RANDOM_HEX / 2];
    ssize_t got = getrandom(b, sizeof b, GRND_NONBLOCK);
    if (got != (ssize_t)sizeof b) { /* no entropy yet at boot: ask the device */
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        got = fd >= 0 ? read(fd, b, sizeof b) : -1;
        if (fd >= 0)
            close(fd);
    }
    if (got != (ssize_t)sizeof b)
        return dt_fail(DT_ERR_IO, "cannot draw a random name for the job's shared memory: %s",
                       strerror(errno));
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return DT_OK;
}

static int all_of(const char *s, size_t len, const char *set)
{
    return len > 0 && strspn(s, set) >= len;
}

/* The launcher's pid when name (without the leading '/') is a segment of
 * this user in the shape above; else 0. */
static long owner_pid(const char *name)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "dtlab.%u.", (unsigned)getuid());
    size_t len = strlen(name), plen = strlen(prefix);
    if (strncmp(name, prefix, plen) != 0 || len < plen + RANDOM_HEX + 4)
        return 0;
    const char *rnd = name + len - RANDOM_HEX;
    if (rnd[-1] != '.' || !all_of(rnd, RANDOM_HEX, "0123456789abcdef"))
        return 0;
    const char *end = rnd - 1, *pid = end;
    while (pid > name + plen && pid[-1] != '.')
        pid--;
    if (pid <= name + plen + 1 || !all_of(pid, (size_t)(end - pid), "0123456789") ||
        end - pid > 9)
        return 0; /* no job part, or no pid */
    return strtol(pid, NULL, 10);
}

int dt_segment_name_ok(const char *name)
{
    return name && name[0] == '/' && strlen(name) < DT_SEGMENT_NAME_MAX &&
           owner_pid(name + 1) > 0;
}

int dt_segment_clean_stale(void)
{
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = owner_pid(e->d_name);
        struct stat st;
        if (pid <= 1 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* not ours, or its launcher lives (EPERM: it exists) */
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            st.st_uid != getuid() || !S_ISREG(st.st_mode))
            continue;
        char path[DT_SEGMENT_NAME_MAX + 2];
        if (snprintf(path, sizeof path, "/%s", e->d_name) < (int)sizeof path)
            removed += shm_unlink(path) == 0;
    }
    closedir(d);
    return removed;
}

/* ---------------------------------------------------------------- create */

/* The arena's size: DT_ARENA_MB, by default 1 GB or all of /dev/shm where
 * that is smaller. The mapping is sparse (the arena reserves pages as it
 * uses them, see arena.c): the size is only a limit, but one larger than
 * /dev/shm itself is surely a mistake. */
static dt_result arena_size(int fd, size_t arena_mb, size_t *size)
{
    *size = (arena_mb ? arena_mb : ARENA_DEFAULT_MB) << 20;
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) != 0)
        return DT_OK;
    size_t all = (size_t)((uint64_t)vfs.f_blocks * vfs.f_frsize);
    if (all >= *size)
        return DT_OK;
    if (!arena_mb) {
        *size = all;
        return DT_OK;
    }
    return dt_fail(DT_ERR_NOMEM, "the job's arena (DT_ARENA_MB=%zu) is larger than all of "
                   "/dev/shm (%zu MB): set DT_ARENA_MB smaller", arena_mb, all >> 20);
}

dt_result dt_segment_create(const dt_resolved *res, void *hint, char *name, void **base,
                            size_t *size)
{
    char rnd[RANDOM_HEX + 1], pid[24];
    DT_TRY(random_hex(rnd));
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(name, DT_SEGMENT_NAME_MAX, "/dtlab.%u.%s.%s.%s", (unsigned)getuid(),
             res->job_id[0] ? res->job_id : pid, pid, rnd);
    dt_segment_clean_stale();
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, SEGMENT_MODE);
    if (fd < 0)
        return dt_fail(DT_ERR_IO, "cannot create shared memory %s: %s", name, strerror(errno));
    /* the umask may have taken bits away; attach checks for exactly 0600 */
    dt_result r = fchmod(fd, SEGMENT_MODE) == 0 ? DT_OK
                  : dt_fail(DT_ERR_IO, "cannot set the mode of %s: %s", name, strerror(errno));
    if (r == DT_OK)
        r = arena_size(fd, res->arena_mb, size);
    if (r == DT_OK && ftruncate(fd, (off_t)*size) != 0)
        r = dt_fail(DT_ERR_NOMEM, "cannot size shared memory %s to %zu bytes: %s", name, *size,
                    strerror(errno));
    if (r == DT_OK) {
        *base = mmap(hint, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (*base == MAP_FAILED)
            r = dt_fail(DT_ERR_NOMEM, "cannot map shared memory %s: %s", name, strerror(errno));
    }
    close(fd);
    if (r != DT_OK)
        shm_unlink(name);
    return r;
}

/* ---------------------------------------------------------------- attach */

dt_result dt_segment_open(const char *name, size_t min_bytes, int *fd_out, size_t *size)
{
    if (!dt_segment_name_ok(name))
        return dt_fail(DT_ERR_INVALID_ARG, "DT_SHM='%.100s': expected the name of a job's "
                       "shared memory, /dtlab.%u.<job>.<pid>.<random>, as dtrun sets it",
                       name ? name : "", (unsigned)getuid());
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return dt_fail(DT_ERR_IO, "dt_init: cannot open the job's shared memory %s: %s", name,
                       strerror(errno));
    struct stat st;
    dt_result r = DT_OK;
    if (fstat(fd, &st) != 0)
        r = dt_fail(DT_ERR_IO, "dt_init: cannot stat %s: %s", name, strerror(errno));
    else if (st.st_uid != getuid())
        r = dt_fail(DT_ERR_STATE, "dt_init: %s belongs to user %u, not to this user (%u): "
                    "refusing another user's segment", name, (unsigned)st.st_uid,
                    (unsigned)getuid());
    else if ((st.st_mode & 07777) != SEGMENT_MODE)
        r = dt_fail(DT_ERR_STATE, "dt_init: %s has mode %04o, expected %04o: not a segment "
                    "that a launcher made", name, (unsigned)(st.st_mode & 07777), SEGMENT_MODE);
    else if ((size_t)st.st_size < min_bytes)
        r = dt_fail(DT_ERR_STATE, "dt_init: %s is %lld bytes, shorter than a job's header "
                    "(%zu bytes): not a job's shared memory", name, (long long)st.st_size,
                    min_bytes);
    if (r != DT_OK) {
        close(fd);
        return r;
    }
    *fd_out = fd;
    *size = (size_t)st.st_size;
    return DT_OK;
}
