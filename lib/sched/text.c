/* text.c - a schedule as a text table that a person can write by hand:
 * a header line, then one "rank stage micro kind" line per step (the form
 * is in dt/sched.h). */
#include "sched_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define LINE_MAX_CHARS 256
#define FILE_MAX_BYTES (16u << 20)

/* Copies the line that starts at *p into buf without its comment and
 * newline, and moves *p to the next line. -1 when it is too long. */
static int next_line(const char **p, char *buf, size_t size)
{
    const char *end = strchr(*p, '\n');
    size_t len = end ? (size_t)(end - *p) : strlen(*p);
    int ok = len < size;
    if (ok) {
        memcpy(buf, *p, len);
        buf[len] = '\0';
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
    }
    *p += len + (end != NULL);
    return ok ? 0 : -1;
}

static int blank(const char *s)
{
    return s[strspn(s, " \t\r")] == '\0';
}

/* The last error, prefixed with where it was found. */
static dt_result at_line(const char *name, int lineno)
{
    char why[400];
    snprintf(why, sizeof why, "%s", dt_last_error()); /* dt_fail writes over it */
    return dt_fail(DT_ERR_INVALID_ARG, "%s:%d: %s", name, lineno, why);
}

static dt_result parse_header(dt_schedule **out, const char *line, const char *name, int lineno)
{
    int ranks, chunks, micro, used = -1;
    if (sscanf(line, " schedule ranks=%d chunks=%d micro=%d %n", &ranks, &chunks, &micro, &used) != 3 ||
        used < 0 || line[used] != '\0')
        return dt_fail(DT_ERR_INVALID_ARG, "%s:%d: expected the header "
                       "'schedule ranks=P chunks=V micro=M' before any step, got '%s'",
                       name, lineno, line);
    if (dt_sched_create(out, ranks, chunks, micro) != DT_OK) return at_line(name, lineno);
    return DT_OK;
}

static dt_result parse_step(dt_schedule *s, const char *line, const char *name, int lineno)
{
    int rank, stage, micro, used = -1;
    char k;
    if (sscanf(line, " %d %d %d %c %n", &rank, &stage, &micro, &k, &used) != 4 || used < 0 ||
        line[used] != '\0')
        return dt_fail(DT_ERR_INVALID_ARG, "%s:%d: expected 'rank stage micro kind', got '%s'",
                       name, lineno, line);
    dt_step_kind kind = k == 'F' ? DT_STEP_F : k == 'B' ? DT_STEP_B : k == 'W' ? DT_STEP_W
                                                                         : DT_NUM_STEP_KINDS;
    if (kind == DT_NUM_STEP_KINDS)
        return dt_fail(DT_ERR_INVALID_ARG, "%s:%d: kind '%c' is not F, B or W", name, lineno, k);
    int owner = dt_sched_rank_of(s, stage);
    if (owner >= 0 && owner != rank)
        return dt_fail(DT_ERR_INVALID_ARG, "%s:%d: stage %d runs on rank %d (stage %% %d), not on "
                       "rank %d", name, lineno, stage, owner, s->ranks, rank);
    if (dt_sched_add(s, stage, micro, kind) != DT_OK) return at_line(name, lineno);
    return DT_OK;
}

dt_result dt_sched_parse(dt_schedule **out, const char *text, const char *name)
{
    if (!out || !text) return dt_fail(DT_ERR_INVALID_ARG, "schedule parse: NULL %s", out ? "text" : "out");
    if (!name) name = "schedule";
    dt_schedule *s = NULL;
    char line[LINE_MAX_CHARS];
    dt_result r = DT_OK;
    int lineno = 0;
    for (const char *p = text; *p && r == DT_OK;) {
        lineno++;
        if (next_line(&p, line, sizeof line) < 0)
            r = dt_fail(DT_ERR_INVALID_ARG, "%s:%d: line longer than %d characters", name, lineno,
                        LINE_MAX_CHARS - 1);
        else if (blank(line)) continue;
        else if (!s) r = parse_header(&s, line, name, lineno);
        else r = parse_step(s, line, name, lineno);
    }
    if (r == DT_OK && !s)
        r = dt_fail(DT_ERR_INVALID_ARG, "%s: no header 'schedule ranks=P chunks=V micro=M'", name);
    if (r != DT_OK) {
        dt_sched_free(s);
        return r;
    }
    *out = s;
    return DT_OK;
}

/* The whole file as a string (tag OTHER). */
static dt_result read_text(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return dt_fail(DT_ERR_IO, "cannot open schedule '%s': %s", path, strerror(errno));
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = NULL;
    dt_result r = DT_OK;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
        r = dt_fail(DT_ERR_IO, "cannot read schedule '%s': not a regular file", path);
    else if ((unsigned long)size > FILE_MAX_BYTES)
        r = dt_fail(DT_ERR_INVALID_ARG, "schedule '%s' is %ld bytes, more than %u", path, size,
                    FILE_MAX_BYTES);
    else if (!(buf = dt_mem_alloc(DT_MEM_OTHER, (size_t)size + 1)))
        r = dt_fail(DT_ERR_NOMEM, "no memory to read schedule '%s'", path);
    else if (fread(buf, 1, (size_t)size, f) != (size_t)size)
        r = dt_fail(DT_ERR_IO, "cannot read schedule '%s'", path);
    else if (memchr(buf, '\0', (size_t)size))
        r = dt_fail(DT_ERR_INVALID_ARG, "schedule '%s' is not text (it holds a NUL byte)", path);
    fclose(f);
    if (r != DT_OK) {
        dt_mem_free(buf);
        return r;
    }
    *out = buf; /* zeroed by dt_mem_alloc: buf[size] ends the string */
    return DT_OK;
}

dt_result dt_sched_read(dt_schedule **out, const char *path)
{
    if (!out || !path) return dt_fail(DT_ERR_INVALID_ARG, "schedule read: NULL %s", out ? "path" : "out");
    char *text = NULL;
    DT_CHECK(read_text(path, &text));
    dt_result r = dt_sched_parse(out, text, path);
    dt_mem_free(text);
    return r;
}

dt_result dt_sched_write(const dt_schedule *s, const char *path)
{
    if (!s || !path) return dt_fail(DT_ERR_INVALID_ARG, "schedule write: NULL %s", s ? "path" : "schedule");
    FILE *f = fopen(path, "w");
    if (!f) return dt_fail(DT_ERR_IO, "cannot write schedule '%s': %s", path, strerror(errno));
    fprintf(f, "# a pipeline schedule: stage s runs on rank s %% ranks; each rank runs\n"
               "# its steps in the order of its lines\n"
               "schedule ranks=%d chunks=%d micro=%d\n# rank stage micro kind\n",
            s->ranks, s->chunks, s->micro);
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++)
            fprintf(f, "%d %d %d %s\n", r, s->steps[r][i].stage, s->steps[r][i].micro,
                    dt_step_kind_name(s->steps[r][i].kind));
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) return dt_fail(DT_ERR_IO, "cannot write schedule '%s'", path);
    return DT_OK;
}
