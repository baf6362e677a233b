/* test_residual.c - lab 14, task 1: a resume needs every hook's state,
 * the error-feedback residuals included (chapter 14, section 4; chapter
 * 10, section 7). A DDP run on 2 ranks whose sync sends 1-bit compressed
 * gradients with error feedback (LAB_DDP_EF) saves at steps 3 and 6; each
 * shard holds its rank's residual (sync.residual), not zero; and the run
 * resumed from step 6 from other parameters ends with the bits of the run
 * that never stopped. A checkpoint that keeps only the weights and the
 * optimizer (as DeepSpeed's does of 1-bit Adam's error) resumes with the
 * residuals zeroed: the next step sends another gradient. */
#include "ft_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANKS = 2 };

/* The largest |e_i| of ROOT/step-00000006's shard of rank k (-1: none). */
static float saved_residual(const char *root, int k, size_t n)
{
    char path[FT_FILE];
    dt_ckpt_reader *rd;
    snprintf(path, sizeof path, "%s/step-00000006/rank-%05d.dtck", root, k);
    if (dt_ckpt_open(&rd, path) != DT_OK) {
        EXPECT(0, "%s: %s", path, dt_last_error());
        return -1;
    }
    float *e = calloc(n, sizeof *e), top = -1;
    dt_result r = e ? dt_ckpt_get(rd, "sync.residual", DT_CKPT_F32, 1, &n, e) : DT_ERR_NOMEM;
    EXPECT(r == DT_OK, "%s: no record sync.residual (f32 [%zu]): the sync hook's state, the "
           "error-feedback residual, is not in the shard (dt_train_state saves every hook's)",
           path, n);
    for (size_t i = 0; r == DT_OK && i < n; i++)
        top = e[i] > top ? e[i] : -e[i] > top ? -e[i] : top;
    free(e);
    dt_ckpt_close(rd);
    return top;
}

TEST_T(ft_resume_keeps_error_feedback_residuals, 2, 60)
{
    dt_test_see("chapter 14, section 4");
    char root[FT_PATH];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_DDP_EF, RANKS, root);
    j.until = 12, j.out = "straight";
    EXPECT(ft_launch(&j) == DT_OK, "DDP with error feedback, 12 steps: %s", dt_last_error());
    j.until = 7, j.every = 3, j.out = NULL;
    EXPECT(ft_launch(&j) == DT_OK, "7 steps, saves at 3 and 6: %s", dt_last_error());
    for (int k = 0; k < RANKS; k++) {
        float top = saved_residual(root, k, 185);
        EXPECT(top != 0, "rank %d's saved residual is all zero at step 6: the test would not "
               "see it dropped", k);
    }
    j.start = FT_LOAD, j.model_seed = 77, j.until = 12, j.every = 0, j.out = "resumed";
    EXPECT(ft_launch(&j) == DT_OK, "resumed from step 6: %s", dt_last_error());
    int rank;
    long i = ft_first_diff(root, "straight", "resumed", RANKS, &rank);
    EXPECT(i < 0, "DDP with error feedback resumed from step 6: parameter %ld of rank %d "
           "differs from the run that never stopped (are the residuals saved and loaded?)", i,
           rank);
    ft_rmdir(root);
}
