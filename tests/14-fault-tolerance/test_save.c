/* test_save.c - lab 14, tasks 1 and 2: the files of a checkpoint and the
 * commit protocol seen from outside. A DDP run on 2 ranks saves at step
 * 3: ROOT/latest names step-00000003, its manifest lists each shard's
 * size and checksum (the files' own), its step, fingerprint, sampler and
 * augmentation stream; each shard holds the trainer's records. Saved again
 * at step 6, latest moves and the old checkpoint is gone, with no
 * temporary file left behind. Then a resume of each strategy in a fresh
 * process equals the run that never stopped, bit for bit. */
#include "ft_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void expect_latest(const char *root, const char *want)
{
    char path[FT_FILE];
    size_t n;
    snprintf(path, sizeof path, "%s/latest", root);
    unsigned char *s = ft_slurp(path, &n);
    EXPECT(n == strlen(want) && !memcmp(s, want, n), "%s holds '%.*s', expected '%s'", path,
           (int)n, (const char *)s, want);
    free(s);
}

/* The manifest of dir: its records in order, its table against the files. */
static void check_manifest(const char *dir, int ranks, long step)
{
    char path[FT_FILE];
    dt_ckpt_reader *m;
    snprintf(path, sizeof path, "%s/manifest.dtck", dir);
    dt_result r = dt_ckpt_open(&m, path);
    EXPECT(r == DT_OK, "%s: %s", path, dt_last_error());
    if (r != DT_OK)
        return;
    const dt_ckpt_header *h = dt_ckpt_reader_header(m);
    EXPECT(h->kind == DT_CKPT_MANIFEST && h->ranks == ranks, "%s: kind %d, %d ranks", path,
           (int)h->kind, h->ranks);
    const char *want[] = {"shards.bytes", "shards.checksum", "step", "fingerprint",
                          "sampler.order", "sampler.epoch", "sampler.consumed", "augment"};
    for (int i = 0; i < 8; i++) {
        const dt_ckpt_record *rec = i < 2 ? dt_ckpt_record_at(m, i) : dt_ckpt_find(m, want[i]);
        EXPECT(rec && !strcmp(rec->name, want[i]), "%s: no record %s%s", path, want[i],
               i < 2 ? " in its place (the first two: dt/ckpt.h)" : "");
    }
    EXPECT(h->records == 8, "%s: %d records, ft.h lists 8", path, h->records);
    long saved = -1;
    EXPECT(dt_ckpt_get(m, "step", DT_CKPT_I64, 0, NULL, &saved) == DT_OK && saved == step,
           "%s: step %ld, expected %ld", path, saved, step);
    for (int k = 0; k < ranks; k++) {
        dt_ckpt_file_info e = {0};
        dt_ckpt_reader *s;
        char sp[FT_FILE];
        snprintf(sp, sizeof sp, "%s/rank-%05d.dtck", dir, k);
        EXPECT(dt_ckpt_manifest_shard(m, k, &e) == DT_OK, "%s: shard %d: %s", path, k,
               dt_last_error());
        if (dt_ckpt_open(&s, sp) != DT_OK) {
            EXPECT(0, "%s: %s", sp, dt_last_error());
            continue;
        }
        const dt_ckpt_header *sh = dt_ckpt_reader_header(s);
        EXPECT(sh->file.bytes == e.bytes && sh->file.checksum == e.checksum,
               "%s: size %llu, checksum %08x; the manifest lists %llu, %08x", sp,
               (unsigned long long)sh->file.bytes, sh->file.checksum,
               (unsigned long long)e.bytes, e.checksum);
        EXPECT(sh->kind == DT_CKPT_SHARD && sh->rank == k && sh->ranks == ranks,
               "%s: kind %d, rank %d of %d", sp, (int)sh->kind, sh->rank, sh->ranks);
        long ts = -1;
        EXPECT(dt_ckpt_get(s, "trainer.step", DT_CKPT_I64, 0, NULL, &ts) == DT_OK && ts == step,
               "%s: trainer.step %ld, expected %ld", sp, ts, step);
        EXPECT(dt_ckpt_find(s, "model.params") && dt_ckpt_find(s, "update.optimizer.state"),
               "%s: no model.params or update.optimizer.state: the trainer's state "
               "(dt_train_state)", sp);
        EXPECT(!dt_ckpt_find(s, "augment") && !dt_ckpt_find(s, "sampler.consumed"),
               "%s: the shared state belongs in the manifest, once", sp);
        dt_ckpt_close(s);
    }
    dt_ckpt_close(m);
}

/* No PATH.tmp left in dir. */
static void no_tmp(const char *dir, int ranks)
{
    char p[FT_FILE + 16];
    for (int k = 0; k < ranks; k++) {
        snprintf(p, sizeof p, "%s/rank-%05d.dtck.tmp", dir, k);
        EXPECT(!ft_exists(p), "%s left behind", p);
    }
    snprintf(p, sizeof p, "%s/manifest.dtck.tmp", dir);
    EXPECT(!ft_exists(p), "%s left behind", p);
}

TEST_T(ft_save_files_and_commit, 3, 60)
{
    dt_test_see("chapter 14, sections 4 and 5");
    char root[FT_PATH], d3[FT_FILE], d6[FT_FILE], p[FT_FILE];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_DDP, 2, root);
    j.until = 3, j.every = 3;
    EXPECT(ft_launch(&j) == DT_OK, "3 steps and a save: %s", dt_last_error());
    snprintf(d3, sizeof d3, "%s/step-00000003", root);
    snprintf(d6, sizeof d6, "%s/step-00000006", root);
    expect_latest(root, "step-00000003");
    check_manifest(d3, 2, 3);
    no_tmp(d3, 2);
    /* from the first checkpoint on to 6 steps (a resume, then a save) */
    j.start = FT_LOAD, j.until = 6;
    EXPECT(ft_launch(&j) == DT_OK, "resumed at 3, on to 6 and a save: %s", dt_last_error());
    expect_latest(root, "step-00000006");
    check_manifest(d6, 2, 6);
    no_tmp(d6, 2);
    snprintf(p, sizeof p, "%s/latest.tmp", root);
    EXPECT(!ft_exists(p), "%s left behind", p);
    EXPECT(!ft_exists(d3), "%s: the old checkpoint is still there once step 6 is latest", d3);
    ft_rmdir(root);
}

static void resume_in_a_new_process(const char *self, lab_strategy s, int ranks)
{
    const char *name = s == LAB_DDP ? "DDP" : "ZeRO-1";
    char root[FT_PATH];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(s, ranks, root);
    j.backend = dt_test_backend() == DT_BACKEND_PROC ? DT_BACKEND_PROC : DT_BACKEND_THREAD;
    j.until = 12, j.every = 0, j.out = "straight";
    EXPECT(ft_launch(&j) == DT_OK, "%s, 12 steps: %s", name, dt_last_error());
    j.until = 7, j.every = 3, j.out = NULL;
    EXPECT(ft_launch(&j) == DT_OK, "%s, 7 steps, saves at 3 and 6: %s", name, dt_last_error());
    j.start = FT_LOAD, j.model_seed = 77, j.until = 12, j.every = 0, j.out = "resumed";
    ft_in_fresh_process(self, &j);
    int rank;
    long i = ft_first_diff(root, "straight", "resumed", ranks, &rank);
    EXPECT(i < 0, "%s on %d ranks: resumed in a new process from step 6, parameter %ld of rank "
           "%d differs from the run that never stopped", name, ranks, i, rank);
    ft_rmdir(root);
}

TEST_T(ft_resume_is_bit_identical_in_a_new_process, 3, 60)
{
    dt_test_see("chapter 14, section 4");
    if (ft_child())
        return;
    resume_in_a_new_process("ft_resume_is_bit_identical_in_a_new_process", LAB_DDP, 2);
    resume_in_a_new_process("ft_resume_is_bit_identical_in_a_new_process", LAB_ZERO1, 3);
}

/* A commit that fails at its last step (ROOT/latest cannot be replaced:
 * ROOT/latest.tmp is a folder) leaves the old checkpoint latest and whole:
 * nothing of it was removed before the new one was committed. */
TEST_T(ft_failed_commit_keeps_the_old_checkpoint, 2, 60)
{
    dt_test_see("chapter 14, section 5");
    char root[FT_PATH - 64], p[FT_PATH];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_DDP, 2, root);
    j.until = 3, j.every = 3;
    EXPECT(ft_launch(&j) == DT_OK, "3 steps and a save: %s", dt_last_error());
    snprintf(p, sizeof p, "%s/latest.tmp", root);
    EXPECT(mkdir(p, 0700) == 0, "mkdir %s", p);
    j.until = 6, j.start = FT_LOAD;
    EXPECT(ft_launch(&j) != DT_OK, "a save whose ROOT/latest cannot be written succeeded");
    EXPECT(rmdir(p) == 0, "rmdir %s", p);
    expect_latest(root, "step-00000003");
    j.until = 3, j.model_seed = 77;
    EXPECT(ft_launch(&j) == DT_OK, "the old checkpoint, latest after the failed commit, does "
           "not load: %s", dt_last_error());
    ft_rmdir(root);
}
