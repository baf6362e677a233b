/* ft_test.h - what lab 14's tests share: temporary folders and raw files,
 * and one rank function that sets a run up, resumes it (lab_load or
 * lab_reshard_load) if asked, trains with saves, and writes its
 * parameters and optimizer state where the test reads them. */
#ifndef FT_TEST_H
#define FT_TEST_H

#include "ft.h"

#include <stddef.h>

enum { FT_PATH = LAB_PATH, FT_FILE = LAB_PATH + 64, FT_MAX_RANKS = 8 };

typedef enum { FT_FRESH = 0, FT_LOAD, FT_RESHARD } ft_start;

typedef struct {
    lab_strategy strategy;
    int ranks;
    dt_backend backend;
    ft_start start;
    uint64_t model_seed;    /* 5 for a run from scratch; a resume starts from 77's */
    long until, every;      /* lab_train's */
    char plan[96];          /* the failure plan ("" none) */
    char root[FT_PATH];
    const char *out;        /* NULL, or the prefix of ROOT/OUT.rR.f32 (parameters) and
                               ROOT/OUT.rR.opt (the optimizer's state, then its step) */
    /* thread ranks only: each rank's result and message, and whether a
     * refused load left the run as it was */
    dt_result result[FT_MAX_RANKS];
    char message[FT_MAX_RANKS][400];
    int unchanged[FT_MAX_RANKS];
} ft_job;

/* A job on ranks with defaults: DDP, thread ranks, from scratch, seed 5. */
ft_job ft_job_make(lab_strategy s, int ranks, const char *root);
dt_result ft_launch(ft_job *j);

/* In a fresh process (dt_test_run_fresh of test `test`): the job j runs
 * there; the variable FT_CHILD carries it. ft_child returns 1 in that
 * process after running it (its failures fail the test there). */
void ft_in_fresh_process(const char *test, const ft_job *j);
int ft_child(void);

void ft_tmpdir(char *dir, size_t cap);
void ft_rmdir(const char *dir);
unsigned char *ft_slurp(const char *path, size_t *n);
void ft_spit(const char *path, const void *data, size_t n);
int ft_exists(const char *path);

/* -1 when ROOT/A.rR.f32 and ROOT/B.rR.f32 hold the same bits on every
 * rank of ranks, else the first float that differs (on rank *rank). */
long ft_first_diff(const char *root, const char *a, const char *b, int ranks, int *rank);

#endif /* FT_TEST_H */
