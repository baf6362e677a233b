/* ckpt.c - lab 14, tasks 1 to 3: a sharded checkpoint of a DDP or ZeRO-1
 * run in dt/ckpt.h's format, committed so that a crash at any moment
 * leaves a whole one (chapter 14, sections 4 and 5), and loaded back, or
 * refused, all or nothing. ft.h lists the files and their records. */
#include "ft.h"

#include <stdio.h>
#include <string.h>

/* ================================================================ task 1 */

dt_result lab_shard_state(lab_run *r, dt_ckpt_io *io)
{
    /* BEGIN STUDENT CODE */
    return dt_train_state(&r->trainer, io);
    /* END STUDENT CODE */
}

dt_result lab_global_state(lab_run *r, long *step, dt_sampler_pos *pos, dt_rng *augment,
                           dt_ckpt_io *io)
{
    /* BEGIN STUDENT CODE */
    uint64_t fp = lab_fingerprint(r);
    DT_CHECK(dt_ckpt_io_long(io, "step", step));
    DT_CHECK(dt_ckpt_io_expect(io, "fingerprint", DT_CKPT_U64, 0, NULL, &fp));
    DT_CHECK(dt_sampler_state(&r->sampler, pos, io, "sampler"));
    return dt_ckpt_io_rng(io, "augment", augment);
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

/* BEGIN STUDENT CODE */
enum { MAX_RANKS = 64 };

/* The manifest: the shard table first, then the global state. */
static dt_result manifest(lab_run *r, uint64_t *bytes, uint32_t *sums, long *step,
                          dt_sampler_pos *pos, dt_rng *augment, dt_ckpt_io *io)
{
    size_t n = (size_t)r->ranks;
    DT_CHECK(dt_ckpt_io_record(io, "shards.bytes", DT_CKPT_U64, 1, &n, bytes));
    DT_CHECK(dt_ckpt_io_record(io, "shards.checksum", DT_CKPT_U32, 1, &n, sums));
    return lab_global_state(r, step, pos, augment, io);
}
/* END STUDENT CODE */

dt_result lab_save(lab_run *r, const char *root)
{
    /* BEGIN STUDENT CODE */
    char dir[LAB_PATH], path[LAB_PATH + 32], old[LAB_PATH], latest[LAB_PATH];
    long step = r->trainer.step;
    if (r->ranks > MAX_RANKS)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_save: more than %d ranks", MAX_RANKS);
    DT_CHECK(lab_ckpt_dir(dir, sizeof dir, root, step));
    DT_CHECK(lab_latest_path(latest, sizeof latest, root));
    DT_CHECK(dt_ckpt_make_dir(dir));
    /* 1. every rank its shard, committed (fsync'd, renamed) */
    dt_ckpt_io *io;
    dt_ckpt_file_info mine;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, r->rank));
    DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, r->rank, r->ranks));
    DT_CHECK(dt_ckpt_io_end(io, lab_shard_state(r, io), &mine));
    DT_CHECK(dt_failure_point(r->comm, r->fail, step, DT_PHASE_MID_SAVE));
    /* 2. the table of every shard: once it is here, every shard is on disk */
    uint64_t entry[2] = {mine.bytes, mine.checksum}, table[2 * MAX_RANKS];
    DT_CHECK(dt_allgather(entry, table, sizeof entry, DT_U8, r->comm));
    DT_CHECK(dt_failure_point(r->comm, r->fail, step, DT_PHASE_BEFORE_MANIFEST));
    if (r->rank == 0) {
        uint64_t bytes[MAX_RANKS];
        uint32_t sums[MAX_RANKS];
        for (int k = 0; k < r->ranks; k++)
            bytes[k] = table[2 * k], sums[k] = (uint32_t)table[2 * k + 1];
        /* 3. the manifest, committed */
        DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
        DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_MANIFEST, 0, r->ranks));
        DT_CHECK(dt_ckpt_io_end(io, manifest(r, bytes, sums, &step, &r->pos, &r->augment, io),
                                NULL));
    }
    DT_CHECK(dt_failure_point(r->comm, r->fail, step, DT_PHASE_BEFORE_RENAME));
    if (r->rank == 0) {
        /* 4. "latest" moved atomically; 5. only then the old one removed */
        int had_old = lab_read_latest(old, sizeof old, root) == DT_OK && strcmp(old, dir);
        const char *name = strrchr(dir, '/') + 1;
        DT_CHECK(dt_ckpt_write_atomic(latest, name, strlen(name)));
        if (had_old)
            DT_CHECK(lab_remove_dir(old));
    }
    /* nobody goes on before the checkpoint is committed */
    return dt_barrier(r->comm);
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

/* BEGIN STUDENT CODE */
/* Every rank's verdict: DT_OK when all ranks' are; else this rank's own
 * failure, or one naming the rank that refused. */
static dt_result agree(lab_run *r, dt_result mine)
{
    /* this rank's own reason outlives the collective: a peer that refused
     * may end the job before our allreduce returns, and its failure would
     * replace the message that names our file */
    char why[1024] = "";
    if (mine != DT_OK)
        snprintf(why, sizeof why, "%s", dt_last_error());
    int bad = mine != DT_OK ? r->rank + 1 : 0, worst = 0;
    dt_result res = dt_allreduce(&bad, &worst, 1, DT_I32, DT_MAX, r->comm);
    if (mine != DT_OK)
        return dt_fail(mine, "%s", why);
    DT_CHECK(res);
    return worst ? dt_fail(DT_ERR_INVALID_ARG, "rank %d refused the checkpoint", worst - 1)
                 : DT_OK;
}

/* The manifest of dir into the temporaries, and this rank's entry. */
static dt_result read_manifest(lab_run *r, const char *dir, int ranks, long *step,
                               dt_sampler_pos *pos, dt_rng *augment, dt_ckpt_file_info *entry)
{
    char path[LAB_PATH + 32];
    uint64_t bytes[MAX_RANKS];
    uint32_t sums[MAX_RANKS];
    dt_ckpt_io *io;
    if (r->ranks > MAX_RANKS)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_load: more than %d ranks", MAX_RANKS);
    DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
    DT_CHECK(dt_ckpt_io_load(&io, path, DT_CKPT_MANIFEST, -1, ranks));
    DT_CHECK(dt_ckpt_io_end(io, manifest(r, bytes, sums, step, pos, augment, io), NULL));
    *entry = (dt_ckpt_file_info){bytes[r->rank], sums[r->rank]};
    return DT_OK;
}

/* This rank's shard of dir: whole, the one the manifest lists, of its step. */
static dt_result check_shard(lab_run *r, const char *dir, const dt_ckpt_file_info *entry,
                             long step)
{
    char path[LAB_PATH + 32];
    dt_ckpt_reader *rd;
    long saved = -1;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, r->rank));
    DT_CHECK(dt_ckpt_open(&rd, path));
    dt_result res = dt_ckpt_expect_header(rd, DT_CKPT_SHARD, r->rank, r->ranks);
    if (res == DT_OK)
        res = dt_ckpt_verify(rd, entry);
    if (res == DT_OK)
        res = dt_ckpt_get(rd, "trainer.step", DT_CKPT_I64, 0, NULL, &saved);
    if (res == DT_OK && saved != step)
        res = dt_fail(DT_ERR_INVALID_ARG, "%s: step %ld, its manifest says %ld", path, saved,
                      step);
    dt_ckpt_close(rd);
    return res;
}
/* END STUDENT CODE */

dt_result lab_load(lab_run *r, const char *root)
{
    /* BEGIN STUDENT CODE */
    char dir[LAB_PATH], path[LAB_PATH + 32];
    long step = 0;
    dt_sampler_pos pos;
    dt_rng augment;
    dt_ckpt_file_info entry;
    /* every file checked on every rank before anything is copied */
    dt_result res = lab_read_latest(dir, sizeof dir, root);
    if (res == DT_OK)
        res = read_manifest(r, dir, r->ranks, &step, &pos, &augment, &entry);
    if (res == DT_OK)
        res = check_shard(r, dir, &entry, step);
    DT_CHECK(agree(r, res));
    dt_ckpt_io *io;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, r->rank));
    DT_CHECK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, r->rank, r->ranks));
    DT_CHECK(dt_ckpt_io_end(io, lab_shard_state(r, io), NULL));
    r->pos = pos, r->augment = augment;
    return DT_OK;
    /* END STUDENT CODE */
}
