/* test_stream.c - dt/stream.h: the host device's streams and events. The
 * race check's verdicts are made at enqueue, so each is checked here
 * without any timing; the ordering an event gives is checked by a task
 * that reads what another stream's task wrote. */
#include "grader.h"

#include "dt/stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

typedef struct {
    int *cell;
    int value;
} set_arg;

static dt_result set_task(void *p)
{
    set_arg *a = p;
    *a->cell = a->value;
    return DT_OK;
}

typedef struct {
    const int *cell;
    int want;
} check_arg;

static dt_result check_task(void *p)
{
    check_arg *a = p;
    return *a->cell == a->want ? DT_OK
        : dt_fail(DT_ERR_MISMATCH, "read %d, expected %d", *a->cell, a->want);
}

static dt_result fail_task(void *p)
{
    (void)p;
    return dt_fail(DT_ERR_FAULT, "the task failed on purpose");
}

/* Blocks its stream until the host sets *gate. */
static dt_result gate_task(void *p)
{
    atomic_int *gate = *(atomic_int **)p;
    while (!atomic_load(gate))
        ;
    return DT_OK;
}

TEST(stream_race_check_refuses_unordered_access, 1)
{
    dt_device *d;
    dt_stream *a, *b;
    dt_event *e;
    int cell = 0, other = 0;
    EXPECT_OK(dt_device_create(&d, 5));
    EXPECT_OK(dt_stream_create(d, "A", &a));
    EXPECT_OK(dt_stream_create(d, "B", &b));
    EXPECT_OK(dt_event_create(d, &e));
    dt_span c = {&cell, sizeof cell}, o = {&other, sizeof other};
    set_arg w = {&cell, 42};
    check_arg r = {&cell, 42};
    EXPECT_OK(dt_stream_launch(a, "write", set_task, &w, sizeof w, NULL, 0, &c, 1));
    /* B reads what A writes, unordered: refused, naming both */
    EXPECT_ERR(dt_stream_launch(b, "read", check_task, &r, sizeof r, &c, 1, NULL, 0),
               DT_ERR_STATE);
    EXPECT(strstr(dt_last_error(), "'write' on stream 'A'") &&
           strstr(dt_last_error(), "'read' on stream 'B'"), "the refusal says: %s",
           dt_last_error());
    /* another range, and a read of a read, are no race */
    EXPECT_OK(dt_stream_launch(b, "other", set_task, &(set_arg){&other, 1}, sizeof(set_arg),
                               NULL, 0, &o, 1));
    /* after a wait on A's event: enqueued, and it sees A's write */
    EXPECT_OK(dt_event_record(e, a));
    EXPECT_OK(dt_stream_wait_event(b, e));
    EXPECT_OK(dt_stream_launch(b, "read", check_task, &r, sizeof r, &c, 1, NULL, 0));
    EXPECT_OK(dt_stream_launch(a, "read too", check_task, &r, sizeof r, &c, 1, NULL, 0));
    /* A writing again while B's read is unordered before it: write after read */
    EXPECT_ERR(dt_stream_launch(a, "rewrite", set_task, &w, sizeof w, NULL, 0, &c, 1),
               DT_ERR_STATE);
    /* the host's synchronize orders everything before it */
    EXPECT_OK(dt_stream_synchronize(b));
    EXPECT_OK(dt_stream_launch(a, "rewrite", set_task, &w, sizeof w, NULL, 0, &c, 1));
    EXPECT_OK(dt_stream_synchronize(a));
    EXPECT(cell == 42 && other == 1, "cell %d, other %d", cell, other);
    dt_event_destroy(e);
    dt_stream_destroy(a);
    dt_stream_destroy(b);
    dt_device_destroy(d);
}

TEST(stream_failure_is_sticky_and_waits_time_out, 1)
{
    dt_device *d;
    dt_stream *a, *b;
    dt_event *e;
    int cell = 0;
    atomic_int gate = 0, *gp = &gate;
    EXPECT_OK(dt_device_create(&d, 0.3));
    EXPECT_OK(dt_stream_create(d, "A", &a));
    EXPECT_OK(dt_stream_create(d, "B", &b));
    EXPECT_OK(dt_event_create(d, &e));
    /* a failed task: later tasks are skipped, synchronize says why */
    EXPECT_OK(dt_stream_launch(a, "boom", fail_task, NULL, 0, NULL, 0, NULL, 0));
    EXPECT_ERR(dt_stream_synchronize(a), DT_ERR_FAULT);
    EXPECT(strstr(dt_last_error(), "boom") && strstr(dt_last_error(), "on purpose"),
           "the failure says: %s", dt_last_error());
    EXPECT_ERR(dt_stream_launch(a, "later", set_task, &(set_arg){&cell, 1}, sizeof(set_arg),
                                NULL, 0, NULL, 0), DT_ERR_STATE);
    /* B waits for an event behind a task that does not finish: a timeout,
     * B's wait's or the synchronize's (the same deadline: whichever comes
     * first), and either names the stream waited for */
    dt_stream *c;
    EXPECT_OK(dt_stream_create(d, "C", &c));
    EXPECT_OK(dt_stream_launch(c, "gate", gate_task, &gp, sizeof gp, NULL, 0, NULL, 0));
    EXPECT_OK(dt_event_record(e, c));
    EXPECT_OK(dt_stream_wait_event(b, e));
    EXPECT_ERR(dt_stream_synchronize(b), DT_ERR_TIMEOUT);
    EXPECT(strstr(dt_last_error(), "'C'"), "the timeout says: %s", dt_last_error());
    atomic_store(&gate, 1);
    EXPECT_OK(dt_stream_synchronize(c));
    EXPECT_ERR(dt_stream_launch(NULL, "x", set_task, NULL, 0, NULL, 0, NULL, 0),
               DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_device_create(NULL, 1), DT_ERR_INVALID_ARG);
    dt_event_destroy(e);
    dt_stream_destroy(a);
    dt_stream_destroy(b);
    dt_stream_destroy(c);
    dt_device_destroy(d);
}
