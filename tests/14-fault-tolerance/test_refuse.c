/* test_refuse.c - lab 14, task 3: a checkpoint that cannot be trusted is
 * refused on every rank, naming the file, and nothing is loaded: a shard
 * with a flipped byte, a truncated shard, a shard of another checkpoint
 * (whole, but not the one the manifest lists), a missing manifest, a
 * missing ROOT/latest, and a checkpoint of another configuration (DDP's
 * loaded into ZeRO-1: the fingerprint). */
#include "ft_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { RANKS = 2 };

typedef enum { FLIP, TRUNCATE, FOREIGN, NO_MANIFEST, NO_LATEST, OTHER_RUN, NUM_DAMAGES } damage;
static const char *const damage_name[NUM_DAMAGES] = {
    "a byte flipped in rank 1's shard", "rank 1's shard truncated",
    "rank 1's shard from another checkpoint", "the manifest missing", "ROOT/latest missing",
    "a DDP checkpoint loaded into ZeRO-1"};
/* what the refusal must name */
static const char *const names[NUM_DAMAGES] = {"rank-00001.dtck", "rank-00001.dtck",
                                               "rank-00001.dtck", "manifest.dtck", "latest",
                                               "manifest.dtck"};

/* A DDP checkpoint at step 6 in root; foreign: rank 1's shard of step 6
 * of another run (from other parameters): a whole file of the same step,
 * which only the manifest's entry tells apart. */
static void make_checkpoint(const char *root, const char *foreign)
{
    char p[FT_FILE], other[FT_PATH];
    snprintf(other, sizeof other, "%s/other", root);
    EXPECT(mkdir(other, 0700) == 0, "mkdir %s", other);
    ft_job j = ft_job_make(LAB_DDP, RANKS, other);
    j.model_seed = 77, j.until = 6, j.every = 6;
    EXPECT(ft_launch(&j) == DT_OK, "another run: %s", dt_last_error());
    snprintf(p, sizeof p, "%s/step-00000006/rank-00001.dtck", other);
    size_t n;
    unsigned char *b = ft_slurp(p, &n);
    ft_spit(foreign, b, n);
    free(b);
    j = ft_job_make(LAB_DDP, RANKS, root);
    j.until = 6, j.every = 3;
    EXPECT(ft_launch(&j) == DT_OK, "6 steps: %s", dt_last_error());
}

static void harm(const char *root, damage d, const char *foreign)
{
    char p[FT_FILE];
    size_t n;
    snprintf(p, sizeof p, "%s/step-00000006/rank-00001.dtck", root);
    unsigned char *b = ft_slurp(p, &n);
    if (d == FLIP)
        b[n / 2] ^= 0x10, ft_spit(p, b, n);
    if (d == TRUNCATE)
        ft_spit(p, b, n - 40);
    free(b);
    if (d == FOREIGN) {
        b = ft_slurp(foreign, &n);
        ft_spit(p, b, n);
        free(b);
    }
    if (d == NO_MANIFEST) {
        snprintf(p, sizeof p, "%s/step-00000006/manifest.dtck", root);
        EXPECT(unlink(p) == 0, "unlink %s", p);
    }
    if (d == NO_LATEST) {
        snprintf(p, sizeof p, "%s/latest", root);
        EXPECT(unlink(p) == 0, "unlink %s", p);
    }
}

TEST_T(ft_load_refuses_what_it_cannot_trust, 4, 60)
{
    dt_test_see("chapter 14, section 5");
    for (int d = 0; d < NUM_DAMAGES; d++) {
        char root[FT_PATH - 64], foreign[FT_PATH];
        ft_tmpdir(root, sizeof root);
        snprintf(foreign, sizeof foreign, "%s/foreign", root);
        make_checkpoint(root, foreign);
        harm(root, (damage)d, foreign);
        ft_job j = ft_job_make(d == OTHER_RUN ? LAB_ZERO1 : LAB_DDP, RANKS, root);
        j.start = FT_LOAD, j.model_seed = 77, j.until = 0;
        dt_result r = ft_launch(&j);
        EXPECT(r != DT_OK, "%s: loaded", damage_name[d]);
        int named = 0;
        for (int q = 0; q < RANKS; q++) {
            EXPECT(j.result[q] != DT_OK && j.result[q] != DT_ERR_NOT_IMPLEMENTED,
                   "%s: rank %d's lab_load returned %s", damage_name[d], q,
                   dt_strerror(j.result[q]));
            EXPECT(j.unchanged[q], "%s: rank %d's run changed, though the load was refused",
                   damage_name[d], q);
            named |= strstr(j.message[q], names[d]) != NULL;
        }
        EXPECT(named, "%s: no rank's refusal names %s (rank 0: '%s'; rank 1: '%s')",
               damage_name[d], names[d], j.message[0], j.message[1]);
        if (d == OTHER_RUN)
            EXPECT(strstr(j.message[0], "fingerprint") || strstr(j.message[1], "fingerprint"),
                   "%s: the refusal does not name the fingerprint ('%s')", damage_name[d],
                   j.message[0]);
        ft_rmdir(root);
    }
}
