/* test_resume.c - lab 11: a mixed-precision run saved through the
 * library's checkpoints (dt_train_state: the master weights, and the
 * scaler and momentum the lab's hooks keep) and resumed in a NEW PROCESS
 * ends with the same master weights and the same scaler as a run that
 * never stopped. The scale starts high enough that fp16 overflows, so the
 * run skips steps, backs the scale off and grows it again on both sides of
 * the checkpoint: a resume with a fresh scaler would skip other steps and
 * end elsewhere (checked too), which is why the scaler is training state. */
#include "grader.h"
#include "memory_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ROWS = 16, STEPS = 10, SAVED_AT = 5 };

typedef struct {
    float scale;
    long steps, skipped;
} scaler_seen;

/* The scaler of the test: overflows at first (2^24), backs off by half,
 * grows after 2 clean steps. */
static lab_scaler_config scaler_config(void)
{
    lab_scaler_config c = lab_gradscaler_config();
    c.init_scale = 16777216.0f;
    c.growth_interval = 2;
    return c;
}

/* Trains from step `from` (0: a new model from seed; else the checkpoint
 * at path) to step `to`; saves at `to` when save is set; fresh_scaler
 * drops the loaded scaler (the control). Writes the master weights and
 * the scaler to out (NULL: not). */
static void run(const char *path, long from, long to, int save, int fresh_scaler,
                const char *out)
{
    dt_model m;
    dt_trainer t;
    lab_mp mp;
    lab_scaler s;
    dt_trainer_config tc = {0};
    lab_scaler_config sc = scaler_config();
    tc.optim = dt_sgd_config(0.05f, 0.9f, 0);
    EXPECT_OK(dt_model_create_spec(&m, "mlp:64,48,10", from ? 99 : MT_SEED));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, &tc));
    EXPECT_OK(lab_scaler_init(&s, &sc));
    EXPECT_OK(lab_mp_create(&mp, &m, DT_F16, ROWS, &tc.optim));
    EXPECT_OK(lab_mp_use_in_trainer(&t, &mp, &s));
    dt_ckpt_io *io;
    if (from) {
        EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
        EXPECT_OK(dt_ckpt_io_end(io, dt_train_state(&t, io), NULL));
        EXPECT(t.step == from, "the checkpoint is of step %ld, expected %ld", t.step, from);
        if (fresh_scaler)
            EXPECT_OK(lab_scaler_init(&s, &sc));
    }
    float x[ROWS * 64];
    int32_t y[ROWS];
    for (long k = from; k < to; k++) {
        mt_batch(x, y, ROWS, 64, 10, 500 + (uint64_t)k);
        dt_batch b = {x, NULL, y, ROWS, 1, 1};
        EXPECT_OK(dt_train_step(&t, &b));
    }
    if (save) {
        EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
        EXPECT_OK(dt_ckpt_io_end(io, dt_train_state(&t, io), NULL));
    }
    if (out) {
        scaler_seen seen = {s.scale, s.steps, s.skipped};
        FILE *f = fopen(out, "wb");
        EXPECT(f && fwrite(&seen, sizeof seen, 1, f) == 1 &&
               fwrite(m.params, sizeof(float), m.num_params, f) == m.num_params &&
               fclose(f) == 0, "cannot write %s", out);
    }
    dt_trainer_free(&t);
    lab_mp_free(&mp);
    dt_model_free(&m);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "%s is missing", path);
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

TEST_T(mixed_precision_resumes_in_a_new_process, 2, 60)
{
    dt_test_see("chapter 11, section 4");
    char dir[4096], ckpt[4200], straight[4200], resumed[4200], fresh[4200];
    const char *child = getenv("LAB11_RESUME");
    if (child) { /* the fresh process: "DIR FRESH_SCALER" */
        int fresh_scaler;
        EXPECT(sscanf(child, "%4095s %d", dir, &fresh_scaler) == 2, "LAB11_RESUME='%s'", child);
        snprintf(ckpt, sizeof ckpt, "%s/rank0.dtck", dir);
        snprintf(resumed, sizeof resumed, "%s/%s.out", dir, fresh_scaler ? "fresh" : "resumed");
        run(ckpt, SAVED_AT, STEPS, 0, fresh_scaler, resumed);
        return;
    }
    snprintf(dir, sizeof dir, "%s/dtlab-mp-XXXXXX", dt_test_tmpdir());
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    snprintf(ckpt, sizeof ckpt, "%s/rank0.dtck", dir);
    snprintf(straight, sizeof straight, "%s/straight.out", dir);
    snprintf(resumed, sizeof resumed, "%s/resumed.out", dir);
    snprintf(fresh, sizeof fresh, "%s/fresh.out", dir);
    run(ckpt, 0, STEPS, 0, 0, straight);
    run(ckpt, 0, SAVED_AT, 1, 0, NULL);
    for (int f = 0; f < 2; f++) {
        char var[4200];
        snprintf(var, sizeof var, "LAB11_RESUME=%s %d", dir, f);
        const char *set[] = {var, NULL};
        dt_result r = dt_test_run_fresh("mixed_precision_resumes_in_a_new_process", set, 30);
        EXPECT(r == DT_OK, "%s", dt_last_error());
    }
    size_t na, nb, nc;
    unsigned char *a = slurp(straight, &na), *b = slurp(resumed, &nb), *c = slurp(fresh, &nc);
    scaler_seen sa, sb;
    memcpy(&sa, a, sizeof sa), memcpy(&sb, b, sizeof sb);
    unlink(ckpt), unlink(straight), unlink(resumed), unlink(fresh), rmdir(dir);
    EXPECT(sa.skipped >= 2 && sa.skipped < STEPS, "the straight run skipped %ld of %d steps: "
           "the test needs overflows (and steps that run)", sa.skipped, STEPS);
    EXPECT(sa.scale == sb.scale && sa.steps == sb.steps && sa.skipped == sb.skipped,
           "resumed in a new process after %d of %d steps: the scaler ends at S = %g after %ld "
           "steps (%ld skipped); without stopping S = %g after %ld (%ld skipped)", SAVED_AT,
           STEPS, (double)sb.scale, sb.steps, sb.skipped, (double)sa.scale, sa.steps,
           sa.skipped);
    size_t i = sizeof sa;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    size_t at = (i - sizeof sa) / sizeof(float);
    float wa = 0, wb = 0;
    if (at * sizeof(float) + sizeof sa + sizeof(float) <= (na < nb ? na : nb))
        memcpy(&wa, a + sizeof sa + at * sizeof(float), sizeof wa),
            memcpy(&wb, b + sizeof sa + at * sizeof(float), sizeof wb);
    EXPECT(na == nb && i == na, "resumed in a new process after %d of %d steps: the master "
           "weights differ from the run that never stopped, first at parameter %zu: %.9g "
           "resumed, %.9g without stopping (%zu and %zu bytes of state)", SAVED_AT, STEPS, at,
           (double)wb, (double)wa, nb, na);
    EXPECT(nc != na || memcmp(a, c, na) != 0, "a resume with a fresh scaler ends where the run "
           "that never stopped does: the scaler made no difference, the test cannot see it");
    free(a), free(b), free(c);
}
