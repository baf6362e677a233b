/* stream.h - streams and events, CUDA's model of a device's work, on the
 * host (chapter 15, section "Streams and events").
 *
 * A device runs work in STREAMS: each is an in-order queue; what is
 * enqueued on one runs after everything enqueued on it before, and runs
 * concurrently with the work of the other streams. An EVENT marks a
 * position in a stream (dt_event_record); dt_stream_wait_event makes a
 * stream's later work wait until the work before that position is done;
 * that is the only ordering between streams. The host enqueues and returns
 * at once; it waits with dt_stream_synchronize or dt_event_synchronize.
 *
 * Here a stream is a CPU thread that runs its queue, so that overlap and
 * its ordering mistakes are real on a laptop: a task of one stream runs
 * while one of another stream runs. A task is a function and a copy of its
 * argument. The device's kernels are the library's own CPU functions (nn,
 * optim, comm) called from such tasks: one implementation of each idea.
 *
 * The race check. A task states the byte ranges it reads and writes. At
 * ENQUEUE time (so the verdict never depends on how the threads happen to
 * run) the device checks, CUDA's happens-before with vector clocks, that
 * every earlier access of another stream to an overlapping range, where
 * either access writes, is ordered before this one by an event wait (or by
 * a synchronize of the host). A task that races is not enqueued: its
 * launch fails with DT_ERR_STATE, naming both tasks and streams. The
 * ordering is what CUDA requires, so code that passes here is ordered on
 * a GPU too.
 *
 * Errors: a task that fails stops its stream (later tasks are skipped, as
 * a CUDA error is sticky); dt_stream_synchronize returns the failure with
 * its message. Every wait has the device's deadline. */
#ifndef DT_STREAM_H
#define DT_STREAM_H

#include "dt/core.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_DEVICE_MAX_STREAMS 8

typedef struct dt_device dt_device;
typedef struct dt_stream dt_stream;
typedef struct dt_event dt_event;

/* A range of memory a task reads or writes. */
typedef struct {
    const void *ptr;
    size_t bytes;
} dt_span;

/* A task's work, run on its stream's thread; arg is the task's own copy. A
 * result other than DT_OK stops the stream. */
typedef dt_result (*dt_stream_fn)(void *arg);

/* A device for the calling rank: its streams' threads are charged to the
 * rank's memory context and log as its rank. timeout_s bounds every wait
 * (0: 60 s). Free with dt_device_destroy, after its streams and events. */
dt_result dt_device_create(dt_device **out, double timeout_s);
void dt_device_destroy(dt_device *d);

/* A stream named `name` (in messages; copied). At most
 * DT_DEVICE_MAX_STREAMS per device. Destroying waits for its queue. */
dt_result dt_stream_create(dt_device *d, const char *name, dt_stream **out);
void dt_stream_destroy(dt_stream *s);
const char *dt_stream_name(const dt_stream *s);

/* Enqueues fn(copy of arg's arg_bytes) on s, named `what` (copied), which
 * reads reads[0..nreads) and writes writes[0..nwrites). DT_ERR_STATE when
 * it races (above) or s has failed; nothing is enqueued then. */
dt_result dt_stream_launch(dt_stream *s, const char *what, dt_stream_fn fn, const void *arg,
                           size_t arg_bytes, const dt_span *reads, int nreads,
                           const dt_span *writes, int nwrites);

/* Waits until everything enqueued on s has run; its first failure, if any. */
dt_result dt_stream_synchronize(dt_stream *s);

dt_result dt_event_create(dt_device *d, dt_event **out);
void dt_event_destroy(dt_event *e);
/* Marks the current end of s's queue; a later record moves the mark. */
dt_result dt_event_record(dt_event *e, dt_stream *s);
/* s's later work waits until the work before e's last mark is done. An
 * event never recorded is complete (CUDA's rule). */
dt_result dt_stream_wait_event(dt_stream *s, dt_event *e);
/* The host waits for e's last mark. */
dt_result dt_event_synchronize(dt_event *e);

#ifdef __cplusplus
}
#endif

#endif /* DT_STREAM_H */
