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
    /* What: this rank's shard (ft.h's records), saved or loaded as io is.
     * Postcondition: everything of this rank's trainer that its next steps
     * depend on (section 4) is visited, once. */
    (void)r, (void)io;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_global_state(lab_run *r, long *step, dt_sampler_pos *pos, dt_rng *augment,
                           dt_ckpt_io *io)
{
    /* BEGIN STUDENT CODE */
    /* What: the manifest's records from "step" on (ft.h), saved or loaded
     * as io is, at the addresses given.
     * Postcondition: what every rank shares and a resume needs besides the
     * shards (section 4) is visited, and a checkpoint of another
     * configuration (lab_fingerprint) is refused by its record. */
    (void)r, (void)step, (void)pos, (void)augment, (void)io;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

/* BEGIN STUDENT CODE */
/* Your helpers for lab_save, if you want any. */
/* END STUDENT CODE */

dt_result lab_save(lab_run *r, const char *root)
{
    /* BEGIN STUDENT CODE */
    /* What: the checkpoint of r's step, committed (ft.h's contract).
     * Postcondition: at every moment, ROOT/latest names a checkpoint whose
     * every file is whole and on disk (section 5); the failure points are
     * called where ft.h says; the checkpoint named before is gone once the
     * new one is latest. */
    (void)r, (void)root;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

/* BEGIN STUDENT CODE */
/* Your helpers for lab_load, if you want any. */
/* END STUDENT CODE */

dt_result lab_load(lab_run *r, const char *root)
{
    /* BEGIN STUDENT CODE */
    /* What: r's state from the checkpoint ROOT/latest names.
     * Postcondition: r on every rank is the saved run at its step, so that
     * its next steps are the bits the saved run would have computed; or
     * every rank refuses, the file named, and r is unchanged (section 5). */
    (void)r, (void)root;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
