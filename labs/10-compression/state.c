/* state.c - lab 10, task 6: a checkpoint of one rank's training state
 * (chapter 10, section 7), in the library's checkpoint format (dt/ckpt.h).
 * compress.h lists the records the file holds. */
#include "compress.h"

/* ================================================================ task 6 */

/* BEGIN STUDENT CODE */
/* Your helpers for lab_cdp_save and lab_cdp_load, if you want any. */
/* END STUDENT CODE */

dt_result lab_cdp_save(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    /* What: this rank's checkpoint file at path, in dt/ckpt.h's format.
     * Postcondition: path holds exactly compress.h's records of this
     * configuration: everything the next steps of this rank depend on
     * (section 7: ask, for each buffer of lab_cdp and of the trainer,
     * whether it survives from one step to the next), committed
     * atomically. */
    (void)c, (void)path;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_cdp_load(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    /* What: this rank's state read back from the file lab_cdp_save wrote.
     * Postcondition: c's training state is the file's, every record
     * checked before any is used; on any failure (section 7) c is as it
     * was. */
    (void)c, (void)path;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
