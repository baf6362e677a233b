/* util.c - allocation that never returns NULL, formatting, time, files. */
#include "dtgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "dtgrade: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s);
    char *p = xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* Appends n bytes to the growing string *s (always NUL-terminated). */
void append(char **s, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = 2 * (*cap + n) + 64;
        *s = xrealloc(*s, *cap);
    }
    memcpy(*s + *len, data, n);
    *len += n;
    (*s)[*len] = '\0';
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *signal_name(int sig)
{
    static const struct { int sig; const char *name; } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
        {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"}, {SIGALRM, "SIGALRM"}, {SIGHUP, "SIGHUP"},
        {SIGQUIT, "SIGQUIT"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    return "another signal";
}

/* Copies one line of [s, end) (up to '\n', at most cap - 1 bytes) into out,
 * without trailing blanks. */
void copy_line(char *out, size_t cap, const char *s, const char *end)
{
    size_t n = 0;
    while (s + n < end && s[n] != '\n' && n + 1 < cap)
        n++;
    memcpy(out, s, n);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
}

/* The first line of [s, end) that starts with prefix, or NULL. */
const char *find_line(const char *s, const char *end, const char *prefix)
{
    size_t pn = strlen(prefix);
    for (const char *p = s; p < end;) {
        if ((size_t)(end - p) >= pn && memcmp(p, prefix, pn) == 0)
            return p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        p = nl + 1;
    }
    return NULL;
}

/* The first line of [s, end) that contains needle, or NULL. */
const char *find_line_with(const char *s, const char *end, const char *needle)
{
    size_t nn = strlen(needle);
    for (const char *p = s; p + nn <= end; p++) {
        if (memcmp(p, needle, nn) == 0) {
            while (p > s && p[-1] != '\n')
                p--;
            return p;
        }
    }
    return NULL;
}

/* The first max bytes of a file, NUL-terminated, or NULL when it cannot be
 * read. */
char *read_file(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max)
                break;
            cap = 2 * cap > max ? max : 2 * cap;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Whether the file holds the bytes of needle (e.g. a symbol's name). */
int file_contains(const char *path, const char *needle)
{
    size_t n;
    char *buf = read_file(path, (size_t)256 << 20, &n);
    if (!buf)
        return 0;
    int found = memmem(buf, n, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}

/* 2 * nbytes hex digits from the kernel's random source (the time and pid
 * when it cannot be read: the token must only be unguessable by accident). */
void random_hex(char *out, size_t nbytes)
{
    unsigned char raw[32];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, raw, nbytes) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)nbytes) {
        unsigned long long x = (unsigned long long)(now_s() * 1e9) ^ ((unsigned long long)getpid() << 32);
        for (size_t i = 0; i < nbytes; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            raw[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", raw[i]);
}
