/* proctree.c - a process's descendants, found in /proc: counted and
 * measured while a test runs, killed after it.
 *
 * The supervisor of a test is a child subreaper (supervise.c): whatever
 * the test starts stays its descendant, even a process that called
 * setsid() or whose parent died, so "every process the test started" is
 * exactly "every descendant of the supervisor". They are found from the
 * supervisor down through /proc/<pid>/task/<tid>/children, where the
 * kernel has it (CONFIG_PROC_CHILDREN), else by one scan of every
 * /proc/<pid>/stat (parent pids), which every Linux has. The scan reads a
 * file per process of the machine at every sample (20 a second per test):
 * on a machine running the suite, most of the grader's own time. The
 * children lists may miss a process forked or ended during the walk: a
 * sample is taken again 50 ms later, and proctree_kill repeats until the
 * supervisor has no child left. */
#include "dtgrade.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pid_t pid, ppid;
    int threads;
} proc_info;

/* Reads /proc/PID/stat: the parent and the number of threads. The name
 * (field 2) may hold spaces and parentheses: fields follow the last ')'. */
static int read_stat(pid_t pid, proc_info *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
     * cmajflt utime stime cutime cstime priority nice num_threads */
    char state;
    int ppid;
    long skip, threads;
    if (sscanf(p + 1, " %c %d %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld",
               &state, &ppid, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip,
               &skip, &skip, &skip, &skip, &skip, &skip, &threads) != 18)
        return -1;
    out->pid = pid;
    out->ppid = ppid;
    out->threads = state == 'Z' ? 0 : (int)threads;
    return 0;
}

/* Every process of the machine that can be read, with its parent. */
static int scan_all(proc_info **out)
{
    int cap = 256, n = 0;
    proc_info *all = xmalloc(sizeof *all * (size_t)cap);
    DIR *d = opendir("/proc");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            if (n == cap)
                all = xrealloc(all, sizeof *all * (size_t)(cap *= 2));
            if (read_stat((pid_t)atoi(e->d_name), &all[n]) == 0)
                n++;
        }
        closedir(d);
    }
    *out = all;
    return n;
}

/* Appends the children of pid's threads (/proc/PID/task/TID/children) to
 * out[*n..max). -1 when the kernel has no such files. */
static int children_of(pid_t pid, pid_t *out, int *n, int max)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0; /* ended meanwhile */
    struct dirent *e;
    int have = 0;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/children", (int)pid, e->d_name);
        FILE *f = fopen(path, "re");
        if (!f) {
            if (errno == ENOENT && have == 0 && pid == getpid()) {
                closedir(d);
                return -1; /* no CONFIG_PROC_CHILDREN: this process's threads exist */
            }
            continue;
        }
        have = 1;
        int c;
        while (*n < max && fscanf(f, "%d", &c) == 1)
            out[(*n)++] = (pid_t)c;
        fclose(f);
    }
    closedir(d);
    return 0;
}

/* The descendants of root (not root itself), at most max, into out (with
 * their thread counts in threads, when not NULL). Returns how many. */
static int descendants(pid_t root, pid_t *out, int *threads, int max)
{
    /* The kernel's children lists, walked down from root, breadth first. */
    static int no_children_files = -1; /* unknown until the first walk from this process */
    if (no_children_files != 1 && root == getpid()) {
        int found = 0;
        if (children_of(root, out, &found, max) == 0) {
            no_children_files = 0;
            for (int from = 0; from < found; from++)
                children_of(out[from], out, &found, max);
            for (int i = 0; threads && i < found; i++) {
                proc_info pi;
                threads[i] = read_stat(out[i], &pi) == 0 ? pi.threads : 0;
            }
            return found;
        }
        no_children_files = 1;
    }
    proc_info *all;
    int n = scan_all(&all), found = 0;
    /* Breadth first: out[0..found) are known descendants; each pass adds
     * the children of those found in the previous one. */
    int from = 0;
    pid_t parent = root;
    for (;;) {
        for (int i = 0; i < n && found < max; i++) {
            if (all[i].ppid == parent && all[i].pid != root) {
                if (threads)
                    threads[found] = all[i].threads;
                out[found++] = all[i].pid;
                all[i].ppid = -1; /* taken */
            }
        }
        if (from >= found)
            break;
        parent = out[from++];
    }
    free(all);
    return found;
}

/* Peak virtual size of one process (VmPeak), in KiB; 0 when unknown. */
static long vm_peak_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long kib = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmPeak: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Nanoseconds thread tid of pid spent runnable but waiting for a CPU
 * (field 2 of its schedstat); 0 when unknown. */
static unsigned long long run_delay_ns(pid_t pid, const char *tid)
{
    char path[300];
    unsigned long long on_cpu, delay = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", (int)pid, tid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fscanf(f, "%llu %llu", &on_cpu, &delay) != 2)
            delay = 0;
        fclose(f);
    }
    return delay;
}

/* Adds pid's threads to the sample: the most any of them waited for a CPU
 * since the previous sample (a thread not seen before: since it started). */
static void sample_threads(pid_t pid, tree_sample *s, thread_delay *now, int *n, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < max) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        thread_delay t = {(pid_t)atoi(e->d_name), run_delay_ns(pid, e->d_name)};
        unsigned long long before = 0;
        for (int i = 0; i < s->nseen; i++)
            if (s->seen[i].tid == t.tid)
                before = s->seen[i].delay_ns;
        double waited = t.delay_ns > before ? 1e-9 * (double)(t.delay_ns - before) : 0;
        if (waited > s->waited_s)
            s->waited_s = waited;
        now[(*n)++] = t;
    }
    closedir(d);
}

/* The processes and threads below root, all together (and the processes
 * among them not seen before, into s->pids); the largest VmPeak
 * among them; and how long the most delayed of their threads waited for a
 * CPU since the previous sample (a test starved by other load is not a
 * test that hangs: the supervisor moves its deadline by that much). */
void proctree_sample(pid_t root, tree_sample *s)
{
    enum { MAXP = 4096 };
    static pid_t pids[MAXP];
    static int threads[MAXP];
    static thread_delay now[MAXP];
    int n = descendants(root, pids, threads, MAXP), nthreads = 0;
    s->tasks = 0;
    s->vm_peak_kib = 0;
    s->waited_s = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int k = 0; k < s->npids && !known; k++)
            known = s->pids[k] == pids[i];
        if (!known && s->npids < MAX_PIDS)
            s->pids[s->npids++] = pids[i];
        s->tasks += threads[i] > 0 ? threads[i] : 0;
        long v = vm_peak_kib(pids[i]);
        if (v > s->vm_peak_kib)
            s->vm_peak_kib = v;
        if (threads[i] > 0)
            sample_threads(pids[i], s, now, &nthreads, MAXP);
    }
    s->seen = xrealloc(s->seen, sizeof *now * (size_t)(nthreads ? nthreads : 1));
    memcpy(s->seen, now, sizeof *now * (size_t)nthreads);
    s->nseen = nthreads;
}

/* Kills the process group pgid and then every descendant of this process,
 * reaping them, until none is left or `seconds` have passed (a process in
 * uninterruptible sleep can take a while to die). Returns how many are
 * left. Orphans come back to this process (it is a subreaper), so each
 * round finds the children of those killed in the round before. When the
 * process `watch` is reaped here, its wait status goes to *status. */
int proctree_kill(pid_t pgid, double seconds, pid_t watch, int *status, int *reaped)
{
    enum { MAXP = 4096 };
    static pid_t pids[MAXP];
    if (pgid > 0)
        kill(-pgid, SIGKILL);
    double until = now_s() + seconds;
    for (;;) {
        int n = descendants(getpid(), pids, NULL, MAXP);
        for (int i = 0; i < n; i++)
            kill(pids[i], SIGKILL);
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p == watch && !*reaped) {
                *status = st;
                *reaped = 1;
            }
        }
        if (p < 0 && errno == ECHILD && n == 0)
            return 0;
        if (now_s() >= until)
            return n;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
