/* test_kill.c - lab 14: a kill at each phase (dt_failure_point) of a
 * ZeRO-1 run on 3 ranks that saves every 3 steps leaves ROOT/latest
 * naming a whole checkpoint, and the run resumed from it in a NEW PROCESS
 * (nothing survives in memory) ends with the same bits as the run that
 * never stopped; on thread ranks, and on proc ranks, where the victim
 * dies by SIGKILL (a real crash: its files are as the kill left them).
 *
 *   phase            victim, step   latest after the kill
 *   mid-allreduce    rank 2, 7      step 6
 *   after-backward   rank 2, 7      step 6
 *   mid-save         rank 0, 6      step 3 (the save of step 6 never commits)
 *   before-manifest  rank 0, 6      step 3
 *   before-rename    rank 0, 6      step 3 */
#include "ft_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { RANKS = 3 };

static void kill_each_phase(const char *self, dt_backend b)
{
    char root[FT_PATH - 64], path[FT_FILE]; /* room for the phase's folder */
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_ZERO1, RANKS, root);
    j.until = 12, j.out = "straight";
    EXPECT(ft_launch(&j) == DT_OK, "12 steps: %s", dt_last_error());
    for (int p = 0; p < DT_NUM_PHASES; p++) {
        const char *phase = dt_phase_name((dt_phase)p);
        int save = p >= DT_PHASE_MID_SAVE;
        char sub[FT_PATH];
        snprintf(sub, sizeof sub, "%s/%s", root, phase);
        EXPECT(mkdir(sub, 0700) == 0, "mkdir %s", sub);
        ft_job k = ft_job_make(LAB_ZERO1, RANKS, sub);
        k.backend = b, k.until = 12, k.every = 3;
        snprintf(k.plan, sizeof k.plan, "rank=%d:step=%d:phase=%s", save ? 0 : 2, save ? 6 : 7,
                 phase);
        dt_result r = ft_launch(&k);
        EXPECT(r != DT_OK, "%s on %s ranks: the run was not killed (is dt_failure_point called "
               "at each phase of ft.h?)", k.plan, dt_backend_name(b));
        snprintf(path, sizeof path, "%s/latest", sub);
        size_t n;
        unsigned char *s = ft_slurp(path, &n);
        const char *want = save ? "step-00000003" : "step-00000006";
        EXPECT(n == 13 && !memcmp(s, want, 13), "killed at %s on %s ranks: %s holds '%.*s', "
               "expected '%s'", k.plan, dt_backend_name(b), path, (int)n, (const char *)s, want);
        free(s);
        k.plan[0] = '\0', k.start = FT_LOAD, k.model_seed = 77, k.every = 3, k.out = "resumed";
        ft_in_fresh_process(self, &k);
        /* the straight run's files, read from the phase's folder */
        for (int q = 0; q < RANKS; q++) {
            char a[FT_FILE], c[FT_FILE];
            snprintf(a, sizeof a, "%s/straight.r%d.f32", root, q);
            snprintf(c, sizeof c, "%s/straight.r%d.f32", sub, q);
            size_t na;
            unsigned char *x = ft_slurp(a, &na);
            ft_spit(c, x, na);
            free(x);
        }
        int rank;
        long i = ft_first_diff(sub, "straight", "resumed", RANKS, &rank);
        EXPECT(i < 0, "killed at %s on %s ranks, resumed in a new process: parameter %ld of "
               "rank %d differs from the run that never stopped", k.plan, dt_backend_name(b), i,
               rank);
    }
    ft_rmdir(root);
}

TEST_T(ft_kill_at_each_phase_thread_ranks, 4, 90)
{
    dt_test_see("chapter 14, sections 4 and 5");
    if (ft_child())
        return;
    kill_each_phase("ft_kill_at_each_phase_thread_ranks", DT_BACKEND_THREAD);
}

TEST_T(ft_kill_at_each_phase_proc_ranks, 3, 90)
{
    dt_test_see("chapter 14, sections 4 and 5");
    if (ft_child())
        return;
    kill_each_phase("ft_kill_at_each_phase_proc_ranks", DT_BACKEND_PROC);
}
