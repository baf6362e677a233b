/* mp.h - lab 05: model parallelism, a network cut along its depth. Read
 * chapters/05-model-parallel.md first.
 *
 * Every rank builds the same model (a dt_model: the same seed gives the same
 * initial parameters) but runs only the layers a PLACEMENT gives it:
 * owner[l] is the rank that runs layer l. On a rank, a maximal run of
 * consecutive layers it owns is one SEGMENT; a contiguous placement gives
 * each rank one segment, round-robin one per layer it owns. A step sends
 * each segment's output forward to the owner of the next layer, and the
 * gradient of each segment's input back to the owner of the layer before.
 *
 * A step is the library's training loop (dt/train.h) with this lab's hooks:
 * the loop zeroes the gradients, calls lab_mp_forward and lab_mp_backward
 * (yours), then updates this rank's layers only (dt_train_use_own_layers).
 *
 * The tasks, in order (the chapter's section 6 names the section that
 * derives each):
 *   1. lab_mp_partition     the balanced contiguous split
 *   2. lab_mp_bytes_sent    what a placement sends per step
 *   3. lab_mp_forward       the segments forward, activations across cuts
 *   4. lab_mp_backward      the segments backward, gradients across cuts
 *   5. lab_mp_predict_step  predict, then measure: the modeled step of a
 *                           placement, from the formulas of sections 3, 4
 * The code outside the fences of mp.c is given: placements, set-up, the
 * step, and the two functions that run a segment and charge its modeled
 * compute time. */
#ifndef LAB_MP_H
#define LAB_MP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/net.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

#define LAB_MP_MAX_LAYERS 64

/* A segment of this rank: layers [first, last), all owned by it, with the
 * owner of layer first-1 and of layer last (if any) another rank. */
typedef struct {
    int first, last;
    dt_acts *acts;   /* its activations for a batch, kept from forward to backward */
    float *in;       /* rows x in_width of layer first: where its input is received */
    float *dout;     /* rows x out_width of layer last-1: where its output's gradient is received */
    float *dinp;     /* rows x in_width of layer first: the gradient of its input (first > 0) */
} lab_segment;

/* Modeled compute time of one batch per layer, charged to the rank's
 * modeled clock when a segment runs, so that the modeled step time does
 * not depend on this machine. */
typedef struct {
    const double *forward_s;  /* num_layers entries; NULL: 0 */
    const double *backward_s; /* num_layers entries; NULL: 0 */
} lab_mp_cost;

typedef struct {
    dt_comm *comm;
    dt_model *model;          /* not owned: the whole model, on every rank */
    int rank, ranks;
    int owner[LAB_MP_MAX_LAYERS]; /* the placement */
    int num_segments;
    lab_segment *seg;         /* this rank's segments, in layer order */
    size_t B;                 /* samples of a step's batch */
    lab_mp_cost cost;
    dt_trainer trainer;       /* the loop: your forward and backward, this rank's update */
    /* the step in progress, for lab_mp_forward */
    const float *x;           /* B rows of the model's input */
    const int32_t *labels;    /* B labels */
    float loss;               /* the rank that runs the last layer: the step's loss */
} lab_mp;

/* ------------------------------------------------------------ given code */

/* The contiguous placement of a partition: layers [first[k], first[k+1])
 * on rank k, for k < K (first[0] = 0, first[K] = L). */
void lab_mp_contiguous(const int *first, int K, int *owner);
/* Round-robin: layer l on rank l mod K (the seed text's "layer l on device
 * l mod D"). */
void lab_mp_round_robin(int L, int K, int *owner);

/* Sets up mp for model m on comm: every owner[l] must be a rank of comm
 * (num_layers entries, copied). Builds this rank's segments with their
 * activations for batches of B samples, and the loop with an optimizer of
 * cfg on this rank's layers. cost may be NULL (no modeled time). mp must
 * stay where it is until lab_mp_free (the loop keeps a pointer to it). On
 * failure mp is left freed. Not collective. */
dt_result lab_mp_init(lab_mp *mp, dt_comm *comm, dt_model *m, const int *owner, size_t B,
                      const dt_optim_config *cfg, const lab_mp_cost *cost);
void lab_mp_free(lab_mp *mp);

/* One training step on a batch of B samples (every rank passes the same
 * x and labels; only the rank of layer 0 reads x, only the rank of the
 * last layer the labels). *loss (may be NULL) gets the step's loss on the
 * rank that runs the last layer, 0 elsewhere. Collective. */
dt_result lab_mp_step(lab_mp *mp, const float *x, const int32_t *labels, float *loss);

/* Runs segment s's layers forward on in (rows x in_width of layer
 * s->first), keeping the activations in s->acts, and computes the loss
 * into mp->loss when s holds the last layer. Charges the segment's modeled
 * forward time. */
dt_result lab_mp_segment_forward(lab_mp *mp, lab_segment *s, const float *in);

/* Runs segment s's layers backward from dout, the gradient of its output
 * (NULL: the loss's, when s holds the last layer), accumulating its
 * layers' parameter gradients into model->grads and writing the gradient
 * of its input into s->dinp (not computed when s holds layer 0). Charges
 * the segment's modeled backward time. */
dt_result lab_mp_segment_backward(lab_mp *mp, lab_segment *s, const float *dout);

/* ------------------------------------------------------------ task 1 */

/* The balanced contiguous partition (section 5): writes first[0..K] with
 * 0 = first[0] < first[1] < ... < first[K] = L, so that stage k is layers
 * [first[k], first[k+1]), such that the largest stage cost
 *     max_k  sum_{l in stage k} cost[l]
 * is as small as any split of the L layers into K non-empty contiguous
 * stages can make it (any such split is accepted). cost[l] >= 0.
 * DT_ERR_INVALID_ARG unless 1 <= K <= L <= LAB_MP_MAX_LAYERS. */
dt_result lab_mp_partition(const double *cost, int L, int K, int *first);

/* ------------------------------------------------------------ task 2 */

/* The bytes rank `rank` sends in one step under the placement owner of
 * m's layers, for a batch of B samples in fp32 (section 3): the output of
 * each of its layers whose next layer another rank runs, and the gradient
 * of the input of each of its layers whose previous layer another rank
 * runs. This is what lab_mp_step sends, as dt_comm_stats counts it. */
dt_result lab_mp_bytes_sent(const dt_model *m, const int *owner, int rank, size_t B,
                            uint64_t *bytes);

/* ------------------------------------------------------------ task 3 */

/* The forward of one step (section 2), on every rank: runs this rank's
 * segments in layer order, each on its input (mp->x for layer 0, else the
 * output of layer first-1 received from its owner), and sends each
 * segment's output to the owner of its next layer. Postconditions: every
 * segment's activations are in its acts; the rank of the last layer has
 * the loss in mp->loss. Sends only what section 3 counts (the tests read
 * dt_comm_stats). Collective over the ranks of the placement. */
dt_result lab_mp_forward(lab_mp *mp);

/* ------------------------------------------------------------ task 4 */

/* The backward of the same step (section 2): runs this rank's segments
 * backward, each from the gradient of its output (the loss's for the last
 * layer, else received from the owner of layer last), and sends the
 * gradient of each segment's input to the owner of layer first-1.
 * Postcondition: model->grads holds, for this rank's layers, the gradient
 * one rank would compute with the whole model on the same batch. */
dt_result lab_mp_backward(lab_mp *mp);

/* ------------------------------------------------------------ task 5 */

/* Your prediction, from sections 3 and 4, of the modeled time of one
 * lab_mp_step under the placement owner of m's layers on ranks joined by
 * link, for a batch of B samples in fp32 and the compute in cost (layer
 * l's forward and backward; a NULL array is 0): every layer's work, one
 * rank busy at a time, and every message the cuts cause, each taking
 * alpha + n / beta for its n bytes (chapter 00). The tests compare *step_s
 * with the formulas and with the modeled clock of a run of your forward
 * and backward, on placements and models the chapter does not work out.
 * DT_ERR_INVALID_ARG (*step_s untouched) for a NULL argument, B = 0 or a
 * model of more than LAB_MP_MAX_LAYERS layers. */
dt_result lab_mp_predict_step(const dt_model *m, const int *owner, size_t B,
                              const lab_mp_cost *cost, const dt_net *link, double *step_s);

#endif /* LAB_MP_H */
