/* test_data.c - synthetic sets by (seed, rank), the digits loader and its
 * errors, split, gather, and the distributed sampler. */
#include "grader.h"
#include "dt/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TEST(data_synthetic_sets_depend_on_seed_and_rank_only, 1)
{
    dt_dataset a, b, c;
    EXPECT_OK(dt_data_blobs(&a, 50, 3, 4, 5, 7, 0));
    EXPECT_OK(dt_data_blobs(&b, 80, 3, 4, 5, 7, 0)); /* more samples: the first 50 unchanged */
    EXPECT(memcmp(a.x, b.x, 50 * 3 * sizeof(float)) == 0 && memcmp(a.y, b.y, 50 * 4) == 0,
           "a sample does not depend on how many are drawn");
    EXPECT_OK(dt_data_blobs(&c, 50, 3, 4, 5, 7, 1));
    EXPECT(memcmp(a.x, c.x, 50 * 3 * sizeof(float)) != 0, "another rank, other samples");
    int seen[4] = {0};
    for (size_t i = 0; i < 50; i++) {
        EXPECT(a.y[i] >= 0 && a.y[i] < 4, "label %d", a.y[i]);
        seen[a.y[i]]++;
    }
    EXPECT(seen[0] && seen[1] && seen[2] && seen[3], "all classes drawn");
    dt_dataset_free(&a), dt_dataset_free(&b), dt_dataset_free(&c);

    EXPECT_OK(dt_data_spirals(&a, 30, 3, 0.01f, 1, 0));
    EXPECT(a.features == 2 && a.classes == 3, "spirals are 2-D");
    for (size_t i = 0; i < 30; i++)
        EXPECT(a.x[2 * i] * a.x[2 * i] + a.x[2 * i + 1] * a.x[2 * i + 1] < 1.2f, "radius <= 1");
    dt_dataset_free(&a);

    EXPECT_OK(dt_data_sequences(&a, 20, 6, 11, 3, 2));
    for (size_t i = 0; i < 20; i++) {
        const int32_t *t = a.tokens + i * 6, *y = a.y + i * 6;
        int stride = (t[1] - t[0] + 11) % 11;
        EXPECT(stride >= 1 && stride <= 3, "stride %d", stride);
        for (int k = 0; k < 6; k++) {
            EXPECT(y[k] == (t[k] + stride) % 11, "target is the next token");
            EXPECT(k == 5 || t[k + 1] == y[k], "inputs shift by one");
        }
    }
    dt_dataset_free(&a);
    EXPECT_ERR(dt_data_blobs(&a, 0, 3, 4, 1, 1, 0), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_data_sequences(&a, 5, 0, 4, 1, 0), DT_ERR_INVALID_ARG);
}

TEST(data_digits_load_and_split, 2)
{
    dt_dataset all, train, test, train2, test2;
    EXPECT_OK(dt_data_load_digits(&all, NULL));
    EXPECT(all.n == 1797 && all.features == 64 && all.classes == 10, "1797 x 64, 10 classes");
    /* the first line of the file: 0,0,5,13,9,1,0,0,... label 0 */
    EXPECT(all.x[2] == 5.0f / 16 && all.x[3] == 13.0f / 16 && all.y[0] == 0, "first sample");
    int count[10] = {0};
    float lo = 1, hi = 0;
    for (size_t i = 0; i < all.n; i++) {
        count[all.y[i]]++;
        for (int p = 0; p < 64; p++) {
            float v = all.x[i * 64 + p];
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
    }
    EXPECT(lo == 0 && hi == 1, "normalised to [0, 1]: %g..%g", lo, hi);
    for (int c = 0; c < 10; c++)
        EXPECT(count[c] >= 174 && count[c] <= 183, "class %d has %d samples", c, count[c]);
    EXPECT_OK(dt_data_split(&all, 0.2, 5, &train, &test));
    EXPECT(test.n == 359 && train.n == 1438, "split %zu / %zu", train.n, test.n);
    EXPECT_OK(dt_data_split(&all, 0.2, 5, &train2, &test2));
    EXPECT(memcmp(test.x, test2.x, test.n * 64 * sizeof(float)) == 0, "deterministic split");
    /* every sample lands on exactly one side: compare label histograms */
    int back[10] = {0};
    for (size_t i = 0; i < train.n; i++)
        back[train.y[i]]++;
    for (size_t i = 0; i < test.n; i++)
        back[test.y[i]]++;
    EXPECT(memcmp(back, count, sizeof back) == 0, "train + test = all");
    EXPECT_ERR(dt_data_split(&all, 0, 5, &train2, &test2), DT_ERR_INVALID_ARG);
    dt_dataset_free(&all), dt_dataset_free(&train), dt_dataset_free(&test);
    dt_dataset_free(&train2), dt_dataset_free(&test2);
}

/* Writes text to a temporary file and loads it as digits. */
static dt_result load_text(const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/digits.csv", dt_test_tmpdir());
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "temporary file");
    fputs(text, f);
    fclose(f);
    dt_dataset d;
    dt_result r = dt_data_load_digits(&d, path);
    if (r == DT_OK)
        dt_dataset_free(&d);
    remove(path);
    return r;
}

static char *digits_line(int pixel, int label, int fields)
{
    static char buf[512];
    size_t n = 0;
    for (int f = 0; f < fields; f++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, f ? ",%d" : "%d",
                              f == 10 ? pixel : f == fields - 1 ? label : 1);
    snprintf(buf + n, sizeof buf - n, "\n");
    return buf;
}

TEST(data_digits_errors_name_line_and_column, 1)
{
    char path[4200], text[2048], want[4300];
    dt_dataset d;
    EXPECT_ERR(dt_data_load_digits(&d, "no/such/digits.csv"), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "no/such/digits.csv"), "names the file: %s", dt_last_error());
    /* line 2, field 11: pixel 17 */
    snprintf(text, sizeof text, "%s", digits_line(3, 4, 65));
    strcat(text, digits_line(17, 4, 65));
    EXPECT_ERR(load_text(text, path, sizeof path), DT_ERR_INVALID_ARG);
    snprintf(want, sizeof want, "%s:2:11: pixel 17 outside 0..16", path);
    EXPECT(strstr(dt_last_error(), want), "message '%s', expected '%s'", dt_last_error(), want);
    /* a label out of range in column 65 */
    EXPECT_ERR(load_text(digits_line(3, 12, 65), path, sizeof path), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), ":1:65: label 12"), "message: %s", dt_last_error());
    /* too few and too many fields */
    EXPECT_ERR(load_text(digits_line(3, 4, 64), path, sizeof path), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), ":1:64: 64 fields, expected 65"), "message: %s",
           dt_last_error());
    EXPECT_ERR(load_text(digits_line(3, 4, 66), path, sizeof path), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "more than 65 fields"), "message: %s", dt_last_error());
    /* not a number */
    EXPECT_ERR(load_text("1,2,x\n", path, sizeof path), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), ":1:3: expected an integer"), "message: %s", dt_last_error());
    EXPECT_ERR(load_text("\n\n", path, sizeof path), DT_ERR_INVALID_ARG);
    /* CRLF line ends and a blank last line are fine */
    snprintf(text, sizeof text, "%s", digits_line(3, 4, 65));
    strcpy(strchr(text, '\n'), "\r\n\n");
    EXPECT_OK(load_text(text, path, sizeof path));
}

TEST(data_sampler_shards_are_disjoint_and_cover, 2)
{
    size_t sizes[] = {1, 7, 16, 17, 100};
    for (size_t si = 0; si < 5; si++)
        for (int ranks = 1; ranks <= 8; ranks++)
            for (int drop = 0; drop < 2; drop++) {
                size_t n = sizes[si];
                if (drop && n < (size_t)ranks)
                    continue;
                int *hits = calloc(n, sizeof(int));
                size_t per = 0;
                for (int r = 0; r < ranks; r++) {
                    dt_sampler s;
                    EXPECT_OK(dt_sampler_init(&s, n, ranks, r, 1, drop, 42));
                    per = s.num_samples;
                    EXPECT(per == (drop ? n / ranks : (n + ranks - 1) / ranks), "per-rank count");
                    size_t *idx = malloc(per * sizeof *idx + 1);
                    EXPECT_OK(dt_sampler_indices(&s, 3, idx));
                    for (size_t j = 0; j < per; j++) {
                        EXPECT(idx[j] < n, "index in range");
                        hits[idx[j]]++;
                    }
                    free(idx);
                }
                size_t covered = 0, extra = 0;
                for (size_t i = 0; i < n; i++) {
                    covered += hits[i] > 0;
                    extra += hits[i] > 1 ? (size_t)hits[i] - 1 : 0;
                    EXPECT(drop ? hits[i] <= 1 : hits[i] >= 1,
                           "n=%zu ranks=%d drop=%d: sample %zu seen %d times", n, ranks, drop, i,
                           hits[i]);
                }
                if (drop) /* disjoint, and only the cut tail is missing */
                    EXPECT(covered == per * (size_t)ranks, "drop_last keeps %zu", covered);
                else /* covering, and only the padding repeats */
                    EXPECT(extra == per * (size_t)ranks - n, "padding of %zu", extra);
                free(hits);
            }
}

TEST(data_sampler_epochs_and_order, 1)
{
    dt_sampler s;
    size_t a[10], b[10], c[10];
    EXPECT_OK(dt_sampler_init(&s, 10, 1, 0, 0, 0, 1));
    EXPECT_OK(dt_sampler_indices(&s, 0, a));
    for (size_t i = 0; i < 10; i++)
        EXPECT(a[i] == i, "no shuffle: identity order");
    EXPECT_OK(dt_sampler_init(&s, 10, 1, 0, 1, 0, 1));
    EXPECT_OK(dt_sampler_indices(&s, 0, a));
    EXPECT_OK(dt_sampler_indices(&s, 1, b));
    EXPECT_OK(dt_sampler_indices(&s, 0, c));
    EXPECT(memcmp(a, b, sizeof a) != 0, "epochs differ");
    EXPECT(memcmp(a, c, sizeof a) == 0, "an epoch is reproducible");
    /* padding repeats the head of the epoch order, as torch does: n = 3,
     * 2 ranks: order o0 o1 o2 o0 -> rank 1 gets o1, o0 */
    size_t r0[2], r1[2];
    dt_sampler s0, s1;
    EXPECT_OK(dt_sampler_init(&s0, 3, 2, 0, 1, 0, 9));
    EXPECT_OK(dt_sampler_init(&s1, 3, 2, 1, 1, 0, 9));
    EXPECT_OK(dt_sampler_indices(&s0, 0, r0));
    EXPECT_OK(dt_sampler_indices(&s1, 0, r1));
    EXPECT(r1[1] == r0[0], "the pad is the first index of the order");
    EXPECT_ERR(dt_sampler_init(&s, 3, 4, 0, 1, 1, 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_sampler_init(&s, 3, 2, 2, 1, 0, 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_sampler_init(&s, 0, 1, 0, 1, 0, 1), DT_ERR_INVALID_ARG);
}

TEST(data_gather, 1)
{
    dt_dataset d;
    EXPECT_OK(dt_data_sequences(&d, 5, 3, 7, 1, 0));
    size_t idx[2] = {4, 1};
    int32_t tok[6], y[6];
    EXPECT_OK(dt_data_gather(&d, idx, 2, NULL, tok, y));
    EXPECT(memcmp(tok, d.tokens + 12, 3 * 4) == 0 && memcmp(y + 3, d.y + 3, 3 * 4) == 0,
           "rows of samples 4 and 1");
    idx[1] = 5;
    EXPECT_ERR(dt_data_gather(&d, idx, 2, NULL, tok, y), DT_ERR_INVALID_ARG);
    dt_dataset_free(&d);
}

/* dt_sampler_next walks each rank's epochs batch by batch, as dt_train
 * does (a partial last batch dropped); its position, counted over all
 * ranks, means the same on another rank count; and it goes through a
 * checkpoint (dt_sampler_state). */
TEST(data_sampler_position_walks_epochs_and_survives_a_checkpoint, 2)
{
    dt_sampler s, s4;
    dt_sampler_pos pos = {0, 0};
    size_t order[20], batch[4], u2[8], u4[8];
    EXPECT_OK(dt_sampler_init(&s, 41, 2, 1, 1, 1, 5)); /* 20 per rank: 6 batches of 3, 2 dropped */
    for (uint64_t e = 0; e < 3; e++) {
        EXPECT_OK(dt_sampler_indices(&s, e, order));
        for (size_t b = 0; b < 6; b++) {
            EXPECT_OK(dt_sampler_next(&s, &pos, 3, batch));
            EXPECT(pos.epoch == e && pos.consumed == (b + 1) * 3 * 2, "epoch %llu batch %zu: "
                   "position {%llu, %llu}", (unsigned long long)e, b,
                   (unsigned long long)pos.epoch, (unsigned long long)pos.consumed);
            EXPECT(!memcmp(batch, order + 3 * b, sizeof(size_t) * 3), "epoch %llu batch %zu is "
                   "not the shard's", (unsigned long long)e, b);
        }
    }
    /* 2 ranks of batch 4 and 4 ranks of batch 2, at the same position: the
       same global batch */
    dt_sampler_pos p2 = {1, 16}, p4 = {1, 16};
    for (int r = 0; r < 4; r++) {
        EXPECT_OK(dt_sampler_init(&s4, 40, 4, r, 1, 1, 5));
        dt_sampler_pos q = p4;
        EXPECT_OK(dt_sampler_next(&s4, &q, 2, u4 + 2 * r));
        if (r < 2) {
            EXPECT_OK(dt_sampler_init(&s, 40, 2, r, 1, 1, 5));
            q = p2;
            EXPECT_OK(dt_sampler_next(&s, &q, 4, u2 + 4 * r));
        }
    }
    int same = 1;
    for (int i = 0; i < 8; i++) {
        int found = 0;
        for (int k = 0; k < 8; k++)
            found |= u2[i] == u4[k];
        same &= found;
    }
    EXPECT(same, "the global batch at a position differs between 2 and 4 ranks");
    dt_sampler_pos odd = {0, 3};
    EXPECT_ERR(dt_sampler_next(&s, &odd, 4, batch), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "2 ranks") != NULL, "says why: %s", dt_last_error());
    /* through a checkpoint file */
    char tdir[4096], path[4200];
    snprintf(tdir, sizeof tdir, "%s/dtlab-sampler-XXXXXX", dt_test_tmpdir());
    EXPECT(mkdtemp(tdir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/s.dtck", tdir);
    dt_ckpt_io *io;
    dt_sampler_pos saved = {7, 12}, back = {0, 0};
    EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, dt_sampler_state(&s, &saved, io, "sampler"), NULL));
    EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, dt_sampler_state(&s, &back, io, "sampler"), NULL));
    EXPECT(back.epoch == 7 && back.consumed == 12, "read back {%llu, %llu}",
           (unsigned long long)back.epoch, (unsigned long long)back.consumed);
    EXPECT_OK(dt_sampler_init(&s4, 40, 2, 0, 1, 1, 6)); /* another seed: another order */
    EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_ERR(dt_ckpt_io_end(io, dt_sampler_state(&s4, &back, io, "sampler"), NULL),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "sampler.order"), "names the record: %s", dt_last_error());
    unlink(path), rmdir(tdir);
}
