/* dt/data.h - data sets and the distributed sampler.
 *
 * Synthetic sets are pure functions of (seed, rank): every rank, backend
 * and run produces the same samples for the same arguments. The digits set
 * is the real 8x8 handwritten digits shipped in data/ (see data/README.md).
 * The sampler splits each epoch across ranks as torch's DistributedSampler
 * does. The training loop that consumes them is the layer above
 * (dt/train.h). */
#ifndef DT_DATA_H
#define DT_DATA_H

#include "dt/ckpt.h"
#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- data sets */

/* Either a classification set (x: n x features floats, y: n labels in
 * [0, classes)) or a sequence set (tokens: n x seq inputs, y: n x seq
 * next-token targets, both in [0, classes), features = 0). Buffers are
 * owned (tag OTHER) and freed by dt_dataset_free. */
typedef struct {
    size_t n;
    size_t features;
    size_t classes;  /* classes, or the vocabulary of a sequence set */
    size_t seq;      /* tokens per sample; 0 for a classification set */
    float *x;
    int32_t *tokens;
    int32_t *y;
} dt_dataset;

void dt_dataset_free(dt_dataset *d);

/* Gaussian blobs: class centres drawn from seed alone (shared by all ranks,
 * spread `spread` around 0), samples from (seed, rank, i), unit noise. */
dt_result dt_data_blobs(dt_dataset *d, size_t n, size_t features, size_t classes, float spread,
                        uint64_t seed, int rank);

/* Interleaved spirals in 2-D, one arm per class, noise sd `noise`. */
dt_result dt_data_spirals(dt_dataset *d, size_t n, size_t classes, float noise, uint64_t seed,
                          int rank);

/* Next-token sequences over a vocabulary of `vocab`: each sample is an
 * arithmetic progression mod vocab, start and stride (1..3) drawn from
 * (seed, rank, i); tokens[t] = s_t, y[t] = s_{t+1}. From the first two
 * tokens on, the next one is determined: a model can learn it exactly. */
dt_result dt_data_sequences(dt_dataset *d, size_t n, size_t seq, size_t vocab, uint64_t seed,
                            int rank);

/* The digits set: 1797 lines "p0,...,p63,label", pixels 0..16, labels 0..9.
 * path NULL means $DT_DIGITS or else "data/digits.csv". Pixels are
 * normalised to [0, 1] (divided by 16). A missing file is DT_ERR_IO; a
 * malformed one DT_ERR_INVALID_ARG with "file:line:column: what" (column =
 * field number, from 1). */
dt_result dt_data_load_digits(dt_dataset *d, const char *path);

/* Splits src into train and test (copies) by a permutation drawn from seed:
 * round(n * test_fraction) samples go to test, test_fraction in (0, 1). */
dt_result dt_data_split(const dt_dataset *src, double test_fraction, uint64_t seed,
                        dt_dataset *train, dt_dataset *test);

/* Gathers samples idx[0..B) into x (B x features) or tokens (B x seq), and
 * y (B, or B x seq). Unused outputs may be NULL. */
dt_result dt_data_gather(const dt_dataset *d, const size_t *idx, size_t B, float *x,
                         int32_t *tokens, int32_t *y);

/* ---------------------------------------------------------------- sampler */

/* torch.utils.data.DistributedSampler: each epoch, a permutation of [0, n)
 * (drawn from seed and the epoch, or 0..n-1 without shuffle) is made a
 * multiple of ranks, by repeating its head (pad) or cutting its tail
 * (drop_last), and rank r takes every ranks-th index from r on. All ranks
 * get num_samples indices; without padding, the shards are disjoint. */
typedef struct {
    size_t n;
    int ranks, rank;
    int shuffle, drop_last;
    uint64_t seed;
    size_t num_samples; /* indices per rank per epoch */
    size_t total;       /* num_samples * ranks */
} dt_sampler;

dt_result dt_sampler_init(dt_sampler *s, size_t n, int ranks, int rank, int shuffle,
                          int drop_last, uint64_t seed);
/* Writes this rank's s->num_samples indices of `epoch` into out. */
dt_result dt_sampler_indices(const dt_sampler *s, uint64_t epoch, size_t *out);

/* Where a run is in its data: the epoch, and how many samples of it the
 * ranks together have taken. Counted over all ranks, not per rank, so
 * that the position means the same on another number of ranks (chapter
 * 14 resumes N ranks' checkpoint on M): rank r's next index into its
 * shard is consumed / ranks. {0, 0} is the start. */
typedef struct {
    uint64_t epoch;
    uint64_t consumed;
} dt_sampler_pos;

/* This rank's next B indices at *pos into out (B of them), and *pos moves
 * on by B x ranks. When fewer than B of this rank's epoch are left, the
 * epoch is over (its last partial batch dropped, as dt_train drops it)
 * and the batch is the next epoch's first. A position that the ranks
 * cannot share (consumed not a multiple of ranks) is DT_ERR_INVALID_ARG,
 * saying so. Draws the epoch's order again at each call: O(n). */
dt_result dt_sampler_next(const dt_sampler *s, dt_sampler_pos *pos, size_t B, size_t *out);

/* The sampler's place in a checkpoint (dt/ckpt.h), saved or loaded as io
 * is, under name:
 *     NAME.order     u64 [4]  n, shuffle, drop_last, seed: must match on load
 *     NAME.epoch     u64      pos->epoch
 *     NAME.consumed  u64      pos->consumed
 * The rank count is not part of it (above). */
dt_result dt_sampler_state(const dt_sampler *s, dt_sampler_pos *pos, dt_ckpt_io *io,
                           const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DT_DATA_H */
