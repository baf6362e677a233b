/* predict.c - lab 07, task 7: predict, then measure (chapter 07, sections
 * 6 and 7): the bytes a rank sends in a training step, from the formulas
 * alone. */
#include "tp.h"

dt_result lab_tp_predict_step_bytes(const dt_gpt_config *cfg, size_t B, size_t T, int t, int sp,
                                    uint64_t *bytes)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (tp.h): *bytes = what each rank sends in one training
     * step, counted collective by collective from sections 2 to 7 (nothing
     * runs). */
    (void)cfg, (void)B, (void)T, (void)t, (void)sp, (void)bytes;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
