/* reshard.c - lab 14, task 4: a ZeRO-1 checkpoint of N ranks resumed on M
 * (chapter 14, section 6). Each saved shard holds one block of AdamW's
 * state with its range (update.shard.range: offset and count); the M
 * ranks cut their own blocks from the N blocks laid back where their
 * ranges say. */
#include "ft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BEGIN STUDENT CODE */
enum { MAX_SAVED = 64 };

typedef struct {
    long step;               /* the checkpoint's */
    long opt_step;           /* AdamW's updates done */
    float *params;           /* [P], from shard 0 */
    float *m, *v;            /* [P] each: every block laid back at its offset */
} whole_state;

/* Shard k of dir: whole, listed by the manifest, ZeRO-1's; its block of
 * the optimizer's state into w at the block's range. */
static dt_result read_block(const char *dir, int k, int N, const dt_ckpt_file_info *entry,
                            size_t P, whole_state *w)
{
    char path[LAB_PATH + 32];
    dt_ckpt_reader *rd;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, k));
    DT_CHECK(dt_ckpt_open(&rd, path));
    dt_result res = dt_ckpt_expect_header(rd, DT_CKPT_SHARD, k, N);
    if (res == DT_OK)
        res = dt_ckpt_verify(rd, entry);
    const dt_ckpt_record *hook = res == DT_OK ? dt_ckpt_find(rd, "update.hook") : NULL;
    if (res == DT_OK && (!hook || hook->bytes != 5 || memcmp(hook->data, "zero1", 5)))
        res = dt_fail(DT_ERR_UNSUPPORTED, "%s: not a ZeRO-1 shard (update.hook): only ZeRO-1's "
                      "blocks are cut by the world size; a DDP rank holds the whole state", path);
    uint64_t range[2] = {0, 0};
    size_t two = 2;
    long step = 0, opt_step = 0;
    if (res == DT_OK)
        res = dt_ckpt_get(rd, "update.shard.range", DT_CKPT_U64, 1, &two, range);
    if (res == DT_OK && (range[0] > P || range[1] > P - range[0]))
        res = dt_fail(DT_ERR_INVALID_ARG, "%s: update.shard.range [%llu, +%llu) is outside the "
                      "%zu parameters", path, (unsigned long long)range[0],
                      (unsigned long long)range[1], P);
    if (res == DT_OK)
        res = dt_ckpt_get(rd, "trainer.step", DT_CKPT_I64, 0, NULL, &step);
    if (res == DT_OK)
        res = dt_ckpt_get(rd, "update.shard.step", DT_CKPT_I64, 0, NULL, &opt_step);
    if (res == DT_OK && (step != w->step || (k > 0 && opt_step != w->opt_step)))
        res = dt_fail(DT_ERR_INVALID_ARG, "%s: step %ld, optimizer step %ld; the manifest says "
                      "step %ld", path, step, opt_step, w->step);
    if (res == DT_OK) {
        const dt_ckpt_record *st = dt_ckpt_find(rd, "update.shard.state");
        size_t c = (size_t)range[1];
        if (!st || st->type != DT_CKPT_F32 || st->count != 2 * c)
            res = dt_fail(DT_ERR_INVALID_ARG, "%s: update.shard.state is not AdamW's 2 x %zu "
                          "floats", path, c);
        else {
            memcpy(w->m + range[0], st->data, c * sizeof(float));
            memcpy(w->v + range[0], (const float *)st->data + c, c * sizeof(float));
            w->opt_step = opt_step;
        }
    }
    if (res == DT_OK && k == 0)
        res = dt_ckpt_get(rd, "model.params", DT_CKPT_F32, 1, &P, w->params);
    dt_ckpt_close(rd);
    return res;
}

/* The manifest (any world size N) and every shard it lists. */
static dt_result read_all(lab_run *r, const char *dir, whole_state *w, dt_sampler_pos *pos,
                          dt_rng *augment)
{
    char path[LAB_PATH + 32];
    dt_ckpt_io *io;
    DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
    DT_CHECK(dt_ckpt_io_load(&io, path, DT_CKPT_MANIFEST, -1, -1));
    int N = dt_ckpt_reader_header(dt_ckpt_io_reader(io))->ranks;
    if (N < 1 || N > MAX_SAVED) {
        dt_ckpt_io_end(io, DT_ERR_INVALID_ARG, NULL);
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %d ranks (1 .. %d)", path, N, MAX_SAVED);
    }
    uint64_t bytes[MAX_SAVED];
    uint32_t sums[MAX_SAVED];
    size_t n = (size_t)N;
    dt_result res = dt_ckpt_io_record(io, "shards.bytes", DT_CKPT_U64, 1, &n, bytes);
    if (res == DT_OK)
        res = dt_ckpt_io_record(io, "shards.checksum", DT_CKPT_U32, 1, &n, sums);
    if (res == DT_OK)
        res = lab_global_state(r, &w->step, pos, augment, io);
    DT_CHECK(dt_ckpt_io_end(io, res, NULL));
    for (int k = 0; k < N; k++)
        DT_CHECK(read_block(dir, k, N, &(dt_ckpt_file_info){bytes[k], sums[k]},
                            r->model.num_params, w));
    return DT_OK;
}
/* END STUDENT CODE */

dt_result lab_reshard_load(lab_run *r, const char *root)
{
    /* BEGIN STUDENT CODE */
    if (r->strategy != LAB_ZERO1)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_reshard_load: a DDP run keeps the whole state "
                       "on every rank: only ZeRO-1's blocks are cut by the world size");
    size_t P = r->model.num_params;
    char dir[LAB_PATH];
    dt_sampler_pos pos;
    dt_rng augment;
    whole_state w = {0};
    dt_optimizer *o = NULL;
    int n = 0;
    w.params = malloc(P * sizeof(float));
    w.m = calloc(P, sizeof(float));
    w.v = calloc(P, sizeof(float));
    dt_result res = w.params && w.m && w.v ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_reshard_load");
    if (res == DT_OK)
        res = lab_read_latest(dir, sizeof dir, root);
    if (res == DT_OK)
        res = read_all(r, dir, &w, &pos, &augment);
    if (res == DT_OK)
        res = dt_train_optimizers(&r->trainer, &o, 1, &n);
    size_t off = 0, len = 0;
    dt_block(P, r->ranks, r->rank, &off, &len);
    if (res == DT_OK && (n != 1 || o->offset != off || o->count != len || o->slots != 2))
        res = dt_fail(DT_ERR_INTERNAL, "lab_reshard_load: rank %d's optimizer is not AdamW over "
                      "its block [%zu, +%zu)", r->rank, off, len);
    /* every rank read every file before any copies */
    char why[1024] = ""; /* this rank's reason, which a peer's failure must not replace */
    if (res != DT_OK)
        snprintf(why, sizeof why, "%s", dt_last_error());
    int bad = res != DT_OK, any = 0;
    dt_result ag = dt_allreduce(&bad, &any, 1, DT_I32, DT_MAX, r->comm);
    if (res != DT_OK)
        res = dt_fail(res, "%s", why);
    else if (ag != DT_OK)
        res = ag;
    if (res == DT_OK && any)
        res = dt_fail(DT_ERR_INVALID_ARG, "another rank refused the checkpoint");
    if (res == DT_OK) {
        memcpy(r->model.params, w.params, P * sizeof(float));
        memcpy(o->state, w.m + off, len * sizeof(float));
        memcpy(o->state + len, w.v + off, len * sizeof(float));
        o->step = w.opt_step;
        r->trainer.step = w.step;
        r->pos = pos, r->augment = augment;
    }
    free(w.params), free(w.m), free(w.v);
    return res;
    /* END STUDENT CODE */
}
