/* stream.c - streams and events on the host (dt/stream.h): each stream a
 * thread running an in-order queue; one lock and one condition per device
 * guard every queue, event and clock (a device has a handful of streams,
 * and the tasks, not the bookkeeping, take the time).
 *
 * Happens-before, CUDA's model, as vector clocks counted at enqueue:
 * stream i's k-th task has the stamp (i, k); known[j] of a stream is the
 * last task of stream j that is ordered before whatever i enqueues next.
 * A record copies its stream's clock into the event; a wait merges the
 * event's clock into the stream's; a synchronize merges into the host's
 * clock, which every later launch inherits (the host enqueues it after the
 * wait returned). An earlier access (j, k) is ordered before a new task of
 * stream i exactly when known_i[j] >= k. */
#include "dt/stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *lo, *hi; /* [lo, hi) */
    int stream;
    long seq;
    int write;
    char what[48];
} access_rec;

typedef enum { TASK_FN, TASK_RECORD, TASK_WAIT } task_kind;

typedef struct task {
    struct task *next;
    task_kind kind;
    dt_stream_fn fn;
    void *arg;
    dt_event *ev;
    long gen;  /* RECORD: the mark it completes; WAIT: the mark it waits for */
    char what[48];
} task;

struct dt_device {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double timeout_s;
    dt_mem_ctx *mem;
    int log_rank;
    int nstreams;
    dt_stream *streams[DT_DEVICE_MAX_STREAMS];
    long host_known[DT_DEVICE_MAX_STREAMS];
    access_rec *acc;
    size_t nacc, cap;
};

struct dt_stream {
    dt_device *dev;
    int idx;
    char name[32];
    pthread_t thread;
    task *head, *tail;
    long enqueued, done; /* tasks of every kind */
    long known[DT_DEVICE_MAX_STREAMS];
    int stop, running;
    dt_result failed;
    char err[512];
};

struct dt_event {
    dt_device *dev;
    long recorded, completed;
    long clock[DT_DEVICE_MAX_STREAMS];
    char stream[32]; /* where it was last recorded */
};

static struct timespec deadline(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + (long long)(s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

static void fail_stream(dt_stream *s, dt_result r, const char *what, const char *msg)
{
    if (s->failed != DT_OK)
        return;
    s->failed = r;
    snprintf(s->err, sizeof s->err, "stream '%s': %s: %s", s->name, what, msg);
}

/* Runs one task; called with the lock held, returns with it held. */
static void run_task(dt_stream *s, task *t)
{
    dt_device *d = s->dev;
    if (t->kind == TASK_FN) {
        if (s->failed != DT_OK)
            return;
        pthread_mutex_unlock(&d->mu);
        dt_result r = t->fn(t->arg);
        char msg[400];
        snprintf(msg, sizeof msg, "%s", r == DT_OK ? "" : dt_last_error());
        pthread_mutex_lock(&d->mu);
        if (r != DT_OK)
            fail_stream(s, r, t->what, msg);
    } else if (t->kind == TASK_RECORD) {
        /* completed even on a failed stream, so that no waiter hangs: the
         * failure is reported by its own stream's synchronize */
        if (t->ev->completed < t->gen)
            t->ev->completed = t->gen;
    } else if (s->failed == DT_OK) {
        struct timespec ts = deadline(d->timeout_s);
        int rc = 0;
        while (t->ev->completed < t->gen && rc == 0)
            rc = pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        if (t->ev->completed < t->gen) {
            char msg[160];
            snprintf(msg, sizeof msg, "waited %.1f s for an event recorded on stream '%s'",
                     d->timeout_s, t->ev->stream);
            fail_stream(s, DT_ERR_TIMEOUT, t->what, msg);
        }
    }
}

static void *stream_main(void *arg)
{
    dt_stream *s = arg;
    dt_device *d = s->dev;
    dt_mem_bind(d->mem);
    dt_log_set_rank(d->log_rank);
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&d->cv, &d->mu);
        if (!s->head)
            break;
        task *t = s->head;
        s->running = 1;
        run_task(s, t);
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        s->done++;
        s->running = 0;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        free(t->arg);
        free(t);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

dt_result dt_device_create(dt_device **out, double timeout_s)
{
    if (!out || timeout_s < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_device_create: %s",
                       !out ? "out is NULL" : "timeout_s is negative");
    dt_device *d = calloc(1, sizeof *d);
    if (!d)
        return dt_fail(DT_ERR_NOMEM, "dt_device_create: no memory");
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->timeout_s = timeout_s > 0 ? timeout_s : 60;
    d->mem = dt_mem_bind(NULL);
    dt_mem_bind(d->mem); /* read, not changed: the rank's context */
    d->log_rank = dt_log_rank();
    *out = d;
    return DT_OK;
}

void dt_device_destroy(dt_device *d)
{
    if (!d)
        return;
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d->acc);
    free(d);
}

dt_result dt_stream_create(dt_device *d, const char *name, dt_stream **out)
{
    if (!d || !name || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_stream_create: %s is NULL",
                       !d ? "device" : !name ? "name" : "out");
    if (d->nstreams == DT_DEVICE_MAX_STREAMS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_stream_create: a device has at most %d streams",
                       DT_DEVICE_MAX_STREAMS);
    dt_stream *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(DT_ERR_NOMEM, "dt_stream_create: no memory");
    s->dev = d;
    snprintf(s->name, sizeof s->name, "%s", name);
    pthread_mutex_lock(&d->mu);
    s->idx = d->nstreams;
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        pthread_mutex_unlock(&d->mu);
        free(s);
        return dt_fail(DT_ERR_NOMEM, "dt_stream_create: no thread for stream '%s'", name);
    }
    d->streams[d->nstreams++] = s;
    pthread_mutex_unlock(&d->mu);
    *out = s;
    return DT_OK;
}

void dt_stream_destroy(dt_stream *s)
{
    if (!s)
        return;
    dt_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    s->stop = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(s->thread, NULL);
    /* the slot stays taken: clocks of other streams still index it */
    pthread_mutex_lock(&d->mu);
    d->streams[s->idx] = NULL;
    pthread_mutex_unlock(&d->mu);
    free(s);
}

const char *dt_stream_name(const dt_stream *s) { return s ? s->name : "(null)"; }

static void merge(long *into, const long *from)
{
    for (int j = 0; j < DT_DEVICE_MAX_STREAMS; j++)
        if (from[j] > into[j])
            into[j] = from[j];
}

/* Appends t to s's queue with the next stamp; lock held. */
static long push(dt_stream *s, task *t)
{
    merge(s->known, s->dev->host_known);
    t->next = NULL;
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->known[s->idx] = ++s->enqueued;
    pthread_cond_broadcast(&s->dev->cv);
    return s->enqueued;
}

/* An access that no stream and not the host can still race with is done
 * with: dropped, so that the table stays as small as the work in flight. */
static void prune(dt_device *d)
{
    size_t k = 0;
    for (size_t i = 0; i < d->nacc; i++) {
        const access_rec *a = &d->acc[i];
        int live = d->host_known[a->stream] < a->seq;
        for (int j = 0; !live && j < d->nstreams; j++)
            live = d->streams[j] && d->streams[j]->known[a->stream] < a->seq;
        if (live)
            d->acc[k++] = *a;
    }
    d->nacc = k;
}

/* The race check of one span of a new task of s; lock held. */
static dt_result check_span(dt_stream *s, const long *known, const char *what, dt_span sp,
                            int write)
{
    dt_device *d = s->dev;
    const char *lo = sp.ptr, *hi = lo + sp.bytes;
    /* newest first: the message names the access the missing wait was for */
    for (size_t i = d->nacc; i-- > 0;) {
        const access_rec *a = &d->acc[i];
        if (a->stream == s->idx || (!write && !a->write) || a->hi <= lo || hi <= a->lo ||
            known[a->stream] >= a->seq)
            continue;
        const dt_stream *o = d->streams[a->stream];
        return dt_fail(DT_ERR_STATE, "race: '%s' on stream '%s' %s %zu bytes that '%s' on "
                       "stream '%s' %s, and no event orders them (record an event after it "
                       "on '%s' and make '%s' wait for it)", what, s->name,
                       write ? "writes" : "reads", sp.bytes, a->what, o ? o->name : "?",
                       a->write ? "writes" : "reads", o ? o->name : "?", s->name);
    }
    return DT_OK;
}

static dt_result note(dt_device *d, dt_span sp, int stream, long seq, int write,
                      const char *what)
{
    if (d->nacc == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        access_rec *n = realloc(d->acc, cap * sizeof *n);
        if (!n)
            return dt_fail(DT_ERR_NOMEM, "dt_stream_launch: no memory for the race check");
        d->acc = n, d->cap = cap;
    }
    access_rec *a = &d->acc[d->nacc++];
    a->lo = sp.ptr, a->hi = a->lo + sp.bytes, a->stream = stream, a->seq = seq;
    a->write = write;
    snprintf(a->what, sizeof a->what, "%s", what);
    return DT_OK;
}

dt_result dt_stream_launch(dt_stream *s, const char *what, dt_stream_fn fn, const void *arg,
                           size_t arg_bytes, const dt_span *reads, int nreads,
                           const dt_span *writes, int nwrites)
{
    if (!s || !what || !fn || (arg_bytes && !arg) || nreads < 0 || nwrites < 0 ||
        (nreads && !reads) || (nwrites && !writes))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_stream_launch: %s",
                       !s ? "stream is NULL" : !what ? "what is NULL" : !fn ? "fn is NULL"
                       : "an argument or span list is NULL, or a count negative");
    task *t = calloc(1, sizeof *t);
    void *copy = arg_bytes ? malloc(arg_bytes) : NULL;
    if (!t || (arg_bytes && !copy)) {
        free(t), free(copy);
        return dt_fail(DT_ERR_NOMEM, "dt_stream_launch: no memory for '%s'", what);
    }
    if (arg_bytes)
        memcpy(copy, arg, arg_bytes);
    t->kind = TASK_FN, t->fn = fn, t->arg = copy;
    snprintf(t->what, sizeof t->what, "%s", what);
    dt_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    long known[DT_DEVICE_MAX_STREAMS];
    memcpy(known, s->known, sizeof known);
    merge(known, d->host_known);
    dt_result r = s->failed != DT_OK
        ? dt_fail(DT_ERR_STATE, "dt_stream_launch '%s': %s", what, s->err) : DT_OK;
    for (int i = 0; r == DT_OK && i < nreads; i++)
        r = check_span(s, known, what, reads[i], 0);
    for (int i = 0; r == DT_OK && i < nwrites; i++)
        r = check_span(s, known, what, writes[i], 1);
    if (r == DT_OK) {
        long seq = s->enqueued + 1;
        prune(d);
        for (int i = 0; r == DT_OK && i < nreads; i++)
            r = note(d, reads[i], s->idx, seq, 0, what);
        for (int i = 0; r == DT_OK && i < nwrites; i++)
            r = note(d, writes[i], s->idx, seq, 1, what);
    }
    if (r == DT_OK)
        push(s, t);
    pthread_mutex_unlock(&d->mu);
    if (r != DT_OK)
        free(t), free(copy);
    return r;
}

dt_result dt_stream_synchronize(dt_stream *s)
{
    if (!s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_stream_synchronize: stream is NULL");
    dt_device *d = s->dev;
    struct timespec ts = deadline(d->timeout_s);
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    long target = s->enqueued;
    while (s->done < target && rc == 0)
        rc = pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    dt_result r = DT_OK;
    if (s->failed != DT_OK)
        r = dt_fail(s->failed, "%s", s->err);
    else if (s->done < target)
        /* the task it is stuck at: a wait names the stream it waits for */
        r = dt_fail(DT_ERR_TIMEOUT, "dt_stream_synchronize: stream '%s' still had %ld tasks "
                    "after %.1f s, the first '%s'", s->name, target - s->done, d->timeout_s,
                    s->head ? s->head->what : "?");
    else
        merge(d->host_known, s->known);
    pthread_mutex_unlock(&d->mu);
    return r;
}

dt_result dt_event_create(dt_device *d, dt_event **out)
{
    if (!d || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_event_create: %s is NULL", !d ? "device" : "out");
    dt_event *e = calloc(1, sizeof *e);
    if (!e)
        return dt_fail(DT_ERR_NOMEM, "dt_event_create: no memory");
    e->dev = d;
    snprintf(e->stream, sizeof e->stream, "(none)");
    *out = e;
    return DT_OK;
}

void dt_event_destroy(dt_event *e) { free(e); }

static dt_result enqueue_mark(dt_event *e, dt_stream *s, task_kind kind, const char *fn)
{
    if (!e || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %s is NULL", fn, !e ? "event" : "stream");
    if (e->dev != s->dev)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: the event and stream '%s' are of different "
                       "devices", fn, s->name);
    task *t = calloc(1, sizeof *t);
    if (!t)
        return dt_fail(DT_ERR_NOMEM, "%s: no memory", fn);
    t->kind = kind, t->ev = e;
    dt_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    if (kind == TASK_RECORD) {
        t->gen = ++e->recorded;
        snprintf(t->what, sizeof t->what, "event record");
        merge(s->known, d->host_known);
        memcpy(e->clock, s->known, sizeof e->clock);
        snprintf(e->stream, sizeof e->stream, "%s", s->name);
    } else {
        t->gen = e->recorded;
        snprintf(t->what, sizeof t->what, "wait for an event of '%.20s'", e->stream);
        merge(s->known, e->clock);
    }
    push(s, t);
    pthread_mutex_unlock(&d->mu);
    return DT_OK;
}

dt_result dt_event_record(dt_event *e, dt_stream *s)
{
    return enqueue_mark(e, s, TASK_RECORD, "dt_event_record");
}

dt_result dt_stream_wait_event(dt_stream *s, dt_event *e)
{
    return enqueue_mark(e, s, TASK_WAIT, "dt_stream_wait_event");
}

dt_result dt_event_synchronize(dt_event *e)
{
    if (!e)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_event_synchronize: event is NULL");
    dt_device *d = e->dev;
    struct timespec ts = deadline(d->timeout_s);
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    long target = e->recorded;
    long clock[DT_DEVICE_MAX_STREAMS];
    memcpy(clock, e->clock, sizeof clock);
    while (e->completed < target && rc == 0)
        rc = pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    dt_result r = DT_OK;
    if (e->completed < target)
        r = dt_fail(DT_ERR_TIMEOUT, "dt_event_synchronize: the event of stream '%s' not "
                    "reached after %.1f s", e->stream, d->timeout_s);
    else
        merge(d->host_known, clock);
    pthread_mutex_unlock(&d->mu);
    return r;
}
