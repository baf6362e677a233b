/* run.h - what the files of lab 11's program share: run.c (the options,
 * tables 1 to 5), run_ckpt.c (tables 6 and 7: checkpointing and budgets).
 * The program's files, not the lab's: none of this is linked into the
 * graded tests. */
#ifndef LAB11_RUN_H
#define LAB11_RUN_H

#include "memory.h"

/* Where the figures go (--figures). */
extern const char *out_dir;

/* Prints "run: <dt_last_error>" and returns DT_ERR_INTERNAL. */
dt_result fail(void);

/* On failure of expr: says why, and returns from the table. */
#define RUN_CHECK(expr)                                                      \
    do {                                                                     \
        if ((expr) != DT_OK)                                                 \
            return fail();                                                   \
    } while (0)

/* Tables 6 and 7 on deep MLPs of width w (wall: with the wall clock). */
dt_result ckpt_table(size_t w, int wall);
dt_result segments_table(size_t w);
dt_result budget_table(size_t w);

#endif /* LAB11_RUN_H */
