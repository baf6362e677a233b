/* run.h - what the files of lab 07's program share: run.c (the options,
 * tables 1 to 3), run_wall.c (table 4, the wall clock). The program's
 * files, not the lab's: none of this is linked into the graded tests. */
#ifndef LAB07_RUN_H
#define LAB07_RUN_H

#include "tp.h"

/* What a rank builds for a run: the group, the shard of the whole model
 * (made from seed 1 on every rank, then freed), activations. */
typedef struct {
    lab_tp tp;
    lab_tp_model m;
    lab_tp_acts a;
} rank_model;

/* dt_launch of fn on t ranks (a 60 s timeout). */
dt_result launch(int t, dt_backend b, const char *net, dt_rank_fn fn, void *arg);

/* The rank's group, its shard of the whole model cfg (made from seed 1 on
 * every rank, then freed) and activations for batches of B sequences;
 * param_bytes (NULL: not wanted): the shard's parameter bytes. */
dt_result open_model(rank_model *r, dt_comm *c, const dt_gpt_config *cfg, size_t B, int sp,
                     size_t *param_bytes);
void close_model(rank_model *r);

/* Table 4: the wall clock of one training step (section 11). */
int wall_table(void);

#endif /* LAB07_RUN_H */
