/* cmp_ckpt.c - lab 10's checkpoint tests (cmp_test.h): saved in one
 * process, checked against compress.h's records, resumed in a fresh one.
 *
 *   this process                          a fresh exec of the test binary
 *   12 steps -> DIR/straight-R.f32
 *   6 steps, lab_cdp_save -> DIR/rankR.ckpt
 *   the file's records checked
 *                         CMP_CKPT_RESUME="i DIR" -->
 *                                          lab_cdp_load(DIR/rankR.ckpt) into
 *                                          a model from another seed, 6 more
 *                                          steps -> DIR/resumed-R.f32
 *   straight-R.f32 == resumed-R.f32, bit for bit */
#include "cmp_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RANKS = 2 };

typedef struct {
    cmp_ckpt_run run;
    char dir[4096];
    int resume;
} side;

static void file_of(char *out, size_t cap, const char *dir, const char *what, int rank)
{
    snprintf(out, cap, "%s/%s%d.%s", dir, what, rank, strcmp(what, "rank") ? "f32" : "ckpt");
}

static dt_result write_floats(const char *path, const float *x, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(x, sizeof *x, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? DT_OK : dt_fail(DT_ERR_IO, "%s: cannot write", path);
}

/* ---------------------------------------------------------------- the file's records */

typedef struct {
    const char *name;
    dt_ckpt_type type;
    int ndim;
    size_t shape[2];
} expected;

dt_result cmp_ckpt_check(const char *path, const lab_cdp *c, const dt_optim_config *opt,
                         long steps, const float *params)
{
    size_t n = c->n, slots = dt_optim_state_bytes_per_param(opt) / sizeof(float);
    expected want[8] = {{"step", DT_CKPT_I64, 0, {0, 0}},
                        {"params", DT_CKPT_F32, 1, {n, 0}},
                        {"optimizer.range", DT_CKPT_U64, 1, {2, 0}},
                        {"optimizer.step", DT_CKPT_I64, 0, {0, 0}},
                        {"optimizer.state", DT_CKPT_F32, 2, {slots, n}}};
    int num = 5;
    if (c->error)
        want[num++] = (expected){"error", DT_CKPT_F32, 1, {n, 0}};
    if (c->server_error)
        want[num++] = (expected){"server_error", DT_CKPT_F32, 1, {c->block_len[0], 0}};
    if (c->lr_q)
        want[num++] = (expected){"powersgd.q", DT_CKPT_F32, 1, {c->lr_q_count, 0}};
    dt_ckpt_reader *r;
    dt_result res = dt_ckpt_open(&r, path);
    if (res != DT_OK)
    {
        char why[512];
        snprintf(why, sizeof why, "%s", dt_last_error());
        return dt_fail(DT_ERR_MISMATCH, "the checkpoint is not a file of dt/ckpt.h's format: %s",
                       why);
    }
    res = dt_ckpt_expect_header(r, DT_CKPT_SHARD, c->rank, c->ranks);
    for (int i = 0; res == DT_OK && i < num; i++) {
        const dt_ckpt_record *rec = dt_ckpt_find(r, want[i].name);
        void *buf = malloc(rec && rec->bytes ? rec->bytes : 1);
        if (dt_ckpt_get(r, want[i].name, want[i].type, want[i].ndim, want[i].shape, buf) !=
            DT_OK) { /* its message names the file and the record: keep it */
            char why[512];
            snprintf(why, sizeof why, "%s", dt_last_error());
            res = dt_fail(DT_ERR_MISMATCH, "%s (compress.h lists it for this configuration)",
                          why);
        }
        free(buf);
    }
    for (int i = 0; res == DT_OK && i < dt_ckpt_reader_header(r)->records; i++) {
        const char *name = dt_ckpt_record_at(r, i)->name;
        int listed = 0;
        for (int k = 0; k < num; k++)
            listed |= !strcmp(name, want[k].name);
        if (!listed)
            res = dt_fail(DT_ERR_MISMATCH, "%s: record \"%s\" is not one compress.h lists for "
                          "this configuration", path, name);
    }
    if (res == DT_OK) {
        long step = -1, ostep = -1;
        uint64_t range[2] = {1, 1};
        size_t two = 2;
        float *p = malloc(n * sizeof *p);
        dt_ckpt_get(r, "step", DT_CKPT_I64, 0, NULL, &step);
        dt_ckpt_get(r, "optimizer.step", DT_CKPT_I64, 0, NULL, &ostep);
        dt_ckpt_get(r, "optimizer.range", DT_CKPT_U64, 1, &two, range);
        long d = p && dt_ckpt_get(r, "params", DT_CKPT_F32, 1, &n, p) == DT_OK
                     ? cmp_first_diff(p, params, n) : 0;
        if (step != steps || ostep != steps || range[0] != 0 || range[1] != n)
            res = dt_fail(DT_ERR_MISMATCH, "%s: step %ld, optimizer.step %ld, optimizer.range "
                          "[%llu, %llu); after %ld steps of the whole model expected %ld, %ld, "
                          "[0, %zu)", path, step, ostep, (unsigned long long)range[0],
                          (unsigned long long)range[1], steps, steps, steps, n);
        else if (d >= 0)
            res = dt_fail(DT_ERR_MISMATCH, "%s: record \"params\" holds %.9g at %ld; the "
                          "model's parameter is %.9g", path, p ? (double)p[d] : 0.0, d,
                          (double)params[d]);
        free(p);
    }
    dt_ckpt_close(r);
    return res;
}

/* ---------------------------------------------------------------- the two sides */

static dt_result first_side(dt_comm *w, const side *s, const char *ckpt)
{
    dt_dataset d = {0};
    dt_model m = {0};
    dt_trainer_config tc = {0};
    lab_cdp c;
    tc.optim = s->run.opt;
    DT_CHECK(dt_data_blobs(&d, 256, 12, 4, 1.5f, 8, 0));
    dt_result r = dt_model_create_spec(&m, "mlp:12,16,4", 3);
    if (r == DT_OK)
        r = lab_cdp_init(&c, w, &m, &s->run.cc, &tc);
    if (r == DT_OK) {
        r = lab_cdp_train(&c, &d, 8, 4, s->run.saved_at, NULL);
        if (r == DT_OK)
            r = lab_cdp_save(&c, ckpt);
        if (r == DT_OK)
            r = cmp_ckpt_check(ckpt, &c, &s->run.opt, s->run.saved_at, m.params);
        lab_cdp_free(&c);
    }
    dt_model_free(&m);
    dt_dataset_free(&d);
    return r;
}

static dt_result side_rank(dt_comm *w, void *arg)
{
    const side *s = arg;
    int rank = dt_comm_rank(w);
    char ckpt[4200], out[4200];
    dt_model m = {0};
    file_of(ckpt, sizeof ckpt, s->dir, "rank", rank);
    file_of(out, sizeof out, s->dir, s->resume ? "resumed-" : "straight-", rank);
    /* the resumed run's model starts from another seed: only the file can make it right */
    dt_result r = cmp_train_until(w, &s->run.cc, s->run.opt, s->resume ? 99 : 3,
                                  s->resume ? ckpt : NULL, NULL, s->run.steps, &m);
    if (r == DT_OK)
        r = write_floats(out, m.params, m.num_params);
    dt_model_free(&m);
    if (r == DT_OK && !s->resume)
        r = first_side(w, s, ckpt);
    return r;
}

/* -1 when rank's two runs ended with the same bits; else the first
 * parameter that differs, and its two values. */
static long compare(const char *dir, int rank, float *resumed, float *straight)
{
    char a[4200], b[4200];
    file_of(a, sizeof a, dir, "straight-", rank);
    file_of(b, sizeof b, dir, "resumed-", rank);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    EXPECT(fa && fb, "%s or %s is missing", a, b);
    long i = 0;
    while (fread(straight, sizeof *straight, 1, fa) == 1) {
        EXPECT(fread(resumed, sizeof *resumed, 1, fb) == 1, "%s is shorter than %s", b, a);
        if (memcmp(straight, resumed, sizeof *resumed))
            break;
        i++;
    }
    int ended = feof(fa);
    fclose(fa), fclose(fb);
    return ended ? -1 : i;
}

static void clean(const char *dir)
{
    char path[4200];
    const char *what[3] = {"rank", "straight-", "resumed-"};
    for (int rank = 0; rank < RANKS; rank++)
        for (int k = 0; k < 3; k++) {
            file_of(path, sizeof path, dir, what[k], rank);
            unlink(path);
        }
    rmdir(dir);
}

void cmp_ckpt_resume_test(const char *test, const cmp_ckpt_run *runs, int n)
{
    side s;
    const char *child = getenv("CMP_CKPT_RESUME");
    if (child) { /* the fresh process: the resume side of run i */
        int i;
        EXPECT(sscanf(child, "%d %4095s", &i, s.dir) == 2 && i >= 0 && i < n,
               "CMP_CKPT_RESUME='%s'", child);
        s.run = runs[i], s.resume = 1;
        dt_result r = cmp_launch(RANKS, NULL, side_rank, &s);
        EXPECT(r == DT_OK, "%s, resumed in a new process from the checkpoint: %s",
               lab_method_name(runs[i].cc.method), dt_last_error());
        return;
    }
    snprintf(s.dir, sizeof s.dir, "%s/dtlab-ckpt-XXXXXX", dt_test_tmpdir());
    EXPECT(mkdtemp(s.dir) != NULL, "mkdtemp %s failed", s.dir);
    for (int i = 0; i < n; i++) {
        char var[4200];
        s.run = runs[i], s.resume = 0;
        const char *name = lab_method_name(runs[i].cc.method);
        dt_result r = cmp_launch(RANKS, NULL, side_rank, &s);
        if (r != DT_OK)
            clean(s.dir);
        EXPECT(r == DT_OK, "%s, saved after %ld steps: %s", name, runs[i].saved_at,
               dt_last_error());
        snprintf(var, sizeof var, "CMP_CKPT_RESUME=%d %s", i, s.dir);
        const char *set[] = {var, NULL};
        r = dt_test_run_fresh(test, set, 30);
        if (r != DT_OK)
            clean(s.dir);
        EXPECT(r == DT_OK, "%s: %s", name, dt_last_error());
        for (int rank = 0; rank < RANKS; rank++) {
            float got, want;
            long k = compare(s.dir, rank, &got, &want);
            if (k >= 0)
                clean(s.dir);
            EXPECT(k < 0, "%s: resumed in a new process after %ld of %ld steps, rank %d's "
                   "parameter %ld is %.9g; without stopping it is %.9g", name, runs[i].saved_at,
                   runs[i].steps, rank, k, (double)got, (double)want);
        }
    }
    clean(s.dir);
}
