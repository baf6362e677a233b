/* trace.c - DT_TRACE: every rank's compute and communication regions, and
 * the program's own regions and instants (dt_trace_begin, dt_trace_instant),
 * in the Chrome trace-event format (open the file in Perfetto or
 * chrome://tracing). Two processes: "wall" and "modeled", one track
 * (thread) per rank in each; async collectives on a second track. */
#include "trace.h"

#include "handle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_named(dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                      double m1, const char *name)
{
    if (!rc->tracing)
        return;
    pthread_mutex_lock(&rc->trace_lock);
    if (rc->ntrace == rc->captrace) {
        size_t cap = rc->captrace ? 2 * rc->captrace : 256;
        dt_trace_ev *t = realloc(rc->trace, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&rc->trace_lock);
            return; /* a trace with a gap beats a failed run */
        }
        rc->trace = t;
        rc->captrace = cap;
    }
    dt_trace_ev *ev = &rc->trace[rc->ntrace++];
    *ev = (dt_trace_ev){kind, lane, w0, w1, m0, m1, ""};
    snprintf(ev->name, sizeof ev->name, "%s", name);
    pthread_mutex_unlock(&rc->trace_lock);
}

void dt_trace_add(dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                  double m1)
{
    add_named(rc, kind, lane, w0, w1, m0, m1, "");
}

void dt_trace_mark(dt_rank_ctx *rc, const char *name)
{
    double now = dt_now();
    add_named(rc, DT_TRACE_INSTANT, 0, now, now, rc->clock, rc->clock, name);
}

/* ---------------------------------------------------------------- the program's marks */

/* A name goes into the JSON as it is: printable, no quote or backslash. */
static dt_result check_name(const char *fn, const char *name)
{
    if (!name)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: name is NULL", fn);
    size_t n = strlen(name);
    if (n == 0 || n >= DT_TRACE_NAME)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: name '%.40s' has %zu characters, expected 1 "
                       "to %d", fn, name, n, DT_TRACE_NAME - 1);
    for (size_t i = 0; i < n; i++)
        if (name[i] < ' ' || name[i] > '~' || name[i] == '"' || name[i] == '\\')
            return dt_fail(DT_ERR_INVALID_ARG, "%s: name '%s': character %zu is not printable, "
                           "or is '\"' or '\\'", fn, name, i + 1);
    return DT_OK;
}

dt_result dt_trace_begin(dt_comm *comm, const char *name)
{
    DT_TRY(dt_comm_check(comm, "dt_trace_begin"));
    DT_TRY(check_name("dt_trace_begin", name));
    dt_rank_ctx *rc = comm->rc;
    if (rc->nopen == DT_TRACE_DEPTH)
        return dt_fail(DT_ERR_STATE, "dt_trace_begin('%s'): %d regions are open already, the "
                       "most that nest", name, DT_TRACE_DEPTH);
    dt_trace_open *o = &rc->open[rc->nopen++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->w0 = dt_now(), o->m0 = rc->clock;
    return DT_OK;
}

dt_result dt_trace_end(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_trace_end"));
    dt_rank_ctx *rc = comm->rc;
    if (rc->nopen == 0)
        return dt_fail(DT_ERR_STATE, "dt_trace_end: no region is open (dt_trace_begin)");
    const dt_trace_open *o = &rc->open[--rc->nopen];
    add_named(rc, DT_TRACE_REGION, 0, o->w0, dt_now(), o->m0, rc->clock, o->name);
    return DT_OK;
}

dt_result dt_trace_instant(dt_comm *comm, const char *name)
{
    DT_TRY(dt_comm_check(comm, "dt_trace_instant"));
    DT_TRY(check_name("dt_trace_instant", name));
    dt_trace_mark(comm->rc, name);
    return DT_OK;
}

/* ---------------------------------------------------------------- the file */

static const char *ev_name(const dt_trace_ev *ev)
{
    if (ev->kind == DT_TRACE_REGION || ev->kind == DT_TRACE_INSTANT)
        return ev->name;
    return ev->kind >= 0 && ev->kind < DT_NUM_COLLS ? dt_coll_name(ev->kind) : "compute";
}

static const char *ev_cat(const dt_trace_ev *ev)
{
    if (ev->kind == DT_TRACE_REGION || ev->kind == DT_TRACE_INSTANT)
        return "program";
    return ev->kind >= 0 && ev->kind < DT_NUM_COLLS ? "comm" : "compute";
}

/* The file's end as this writer leaves it: an appended job goes before it. */
static const char tail[] = "\n]}\n";

/* Where the jobs appended to one file start on its clocks: wall times from
 * the first job's start, modeled times after the last job's end. One
 * process writes a file at a time (the launches that trace are in turn). */
static struct {
    pthread_mutex_t lock;
    char path[1024];
    double wall0, modeled_end;
} last = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};

/* *out: the file, placed after its events (append, a trace this writer
 * wrote: *fresh = 0) or new (*fresh = 1). */
static dt_result open_trace(const char *path, int append, FILE **out, int *fresh)
{
    *fresh = 1;
    FILE *f = append ? fopen(path, "r+") : NULL;
    if (append && !f && errno != ENOENT)
        return dt_fail(DT_ERR_IO, "cannot append to the trace '%s'", path);
    if (f) {
        char end[sizeof tail] = "";
        long back = -(long)(sizeof tail - 1);
        if (fseek(f, back, SEEK_END) != 0 || fread(end, 1, sizeof tail - 1, f) != sizeof tail - 1 ||
            strcmp(end, tail) != 0 || fseek(f, back, SEEK_END) != 0) {
            fclose(f);
            return dt_fail(DT_ERR_INVALID_ARG, "cannot append to the trace '%s': it does not "
                           "end as a trace DT_TRACE wrote", path);
        }
        *fresh = 0;
    } else if (!(f = fopen(path, "w"))) {
        return dt_fail(DT_ERR_IO, "cannot write the trace '%s'", path);
    }
    *out = f;
    return DT_OK;
}

static void write_ev(FILE *f, const dt_trace_ev *ev, int pid, int tid, double ts, double dur)
{
    if (ev->kind == DT_TRACE_INSTANT)
        fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,"
                "\"tid\":%d,\"ts\":%.3f}", ev_name(ev), ev_cat(ev), pid, tid, ts);
    else
        fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                "\"ts\":%.3f,\"dur\":%.3f}", ev_name(ev), ev_cat(ev), pid, tid, ts, dur);
}

/* Writes the events of ranks rcs[0..n); wall times relative to wall0. */
dt_result dt_trace_write(const char *path, int append, dt_rank_ctx *const *rcs, int n,
                         double wall0)
{
    int fresh;
    FILE *f = NULL;
    pthread_mutex_lock(&last.lock);
    dt_result r = open_trace(path, append, &f, &fresh);
    if (r != DT_OK) {
        pthread_mutex_unlock(&last.lock);
        return r;
    }
    double m_off = 0;
    if (!fresh && strcmp(last.path, path) == 0)
        wall0 = last.wall0, m_off = last.modeled_end;
    if (fresh) {
        fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"wall\"}},\n");
        fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"modeled\"}}");
    }
    double m_end = m_off;
    for (int i = 0; i < n; i++) {
        const dt_rank_ctx *rc = rcs[i];
        for (int pid = 0; pid < 2; pid++)
            for (int lane = 0; lane < DT_LANES; lane++)
                fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"name\":\"rank %d%s\"}}", pid, rc->world_rank * 2 + lane,
                        rc->world_rank, lane ? " async" : "");
        for (size_t e = 0; e < rc->ntrace; e++) {
            const dt_trace_ev *ev = &rc->trace[e];
            int tid = rc->world_rank * 2 + ev->lane;
            write_ev(f, ev, 0, tid, (ev->w0 - wall0) * 1e6, (ev->w1 - ev->w0) * 1e6);
            write_ev(f, ev, 1, tid, (m_off + ev->m0) * 1e6, (ev->m1 - ev->m0) * 1e6);
            m_end = ev->m1 + m_off > m_end ? ev->m1 + m_off : m_end;
        }
    }
    fprintf(f, "%s", tail);
    snprintf(last.path, sizeof last.path, "%s", path);
    last.wall0 = wall0, last.modeled_end = m_end;
    pthread_mutex_unlock(&last.lock);
    if (fclose(f) != 0)
        return dt_fail(DT_ERR_IO, "cannot write the trace '%s'", path);
    return DT_OK;
}
