/* test_groups.c - lab 13, task (a): every rank's three groups for several
 * layouts hold the world ranks w = (d P + p) T + t says, in order
 * (chapter 13, section 1); bad layouts are refused. */
#include "grader.h"
#include "threed.h"

#include <stdio.h>
#include <string.h>

/* Fails unless comm's members, in rank order, are world ranks want[0..n). */
static dt_result members(dt_comm *comm, const char *which, const int *want, int n, int w,
                         const int *layout)
{
    int32_t me = (int32_t)w, got[64];
    if (!comm)
        return dt_fail(DT_ERR_MISMATCH, "TP %d x PP %d: world rank %d has no %s group",
                       layout[0], layout[1], w, which);
    if (dt_comm_size(comm) != n)
        return dt_fail(DT_ERR_MISMATCH, "TP %d x PP %d: world rank %d: its %s group has %d "
                       "ranks, expected %d", layout[0], layout[1], w, which, dt_comm_size(comm),
                       n);
    DT_CHECK(dt_allgather(&me, got, 1, DT_I32, comm));
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            return dt_fail(DT_ERR_MISMATCH, "TP %d x PP %d: world rank %d: rank %d of its %s "
                           "group is world rank %d, expected %d", layout[0], layout[1], w, i,
                           which, (int)got[i], want[i]);
    return DT_OK;
}

static dt_result groups_rank(dt_comm *world, void *arg)
{
    const int *layout = arg; /* T, P, world */
    int T = layout[0], P = layout[1], n = dt_comm_size(world), w = dt_comm_rank(world);
    int D = n / (T * P), t = w % T, p = (w / T) % P, d = w / (T * P), want[64];
    lab_groups g;
    memset(&g, 0, sizeof g);
    DT_CHECK(lab_groups_create(&g, world, T, P));
    dt_result r = DT_OK;
    if (g.T != T || g.P != P || g.D != D || g.tp_rank != t || g.pp_rank != p || g.dp_rank != d)
        r = dt_fail(DT_ERR_MISMATCH, "TP %d x PP %d: world rank %d: sizes T %d P %d D %d and "
                    "ranks t %d p %d d %d, expected %d %d %d and %d %d %d", T, P, w, g.T, g.P,
                    g.D, g.tp_rank, g.pp_rank, g.dp_rank, T, P, D, t, p, d);
    for (int i = 0; i < T; i++)
        want[i] = (d * P + p) * T + i;
    if (r == DT_OK)
        r = members(g.tp, "tensor-parallel", want, T, w, layout);
    for (int i = 0; i < P; i++)
        want[i] = (d * P + i) * T + t;
    if (r == DT_OK)
        r = members(g.pp, "pipeline", want, P, w, layout);
    for (int i = 0; i < D; i++)
        want[i] = (i * P + p) * T + t;
    if (r == DT_OK)
        r = members(g.dp, "data-parallel", want, D, w, layout);
    lab_groups_free(&g);
    return r;
}

static dt_result launch(int n, dt_rank_fn fn, void *arg)
{
    dt_launch_opts o;
    DT_CHECK(dt_launch_opts_init(&o));
    o.nranks = n;
    o.backend = DT_BACKEND_THREAD;
    o.timeout_s = 20;
    return dt_launch(&o, fn, arg);
}

TEST_T(groups_of_eight_ranks, 3, 20)
{
    dt_test_see("chapter 13, section 1");
    static const int layouts[][3] = {{2, 2, 8}, {2, 1, 8}, {1, 2, 8}, {4, 2, 8},
                                     {8, 1, 8}, {2, 4, 8}, {1, 8, 8}, {1, 1, 8}};
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++)
        EXPECT_OK(launch(layouts[k][2], groups_rank, (void *)layouts[k]));
}

TEST_T(groups_of_other_worlds, 2, 20)
{
    dt_test_see("chapter 13, section 1");
    static const int layouts[][3] = {{2, 3, 6}, {3, 1, 6}, {1, 3, 6}, {2, 2, 12}, {1, 1, 1}};
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++)
        EXPECT_OK(launch(layouts[k][2], groups_rank, (void *)layouts[k]));
}

static dt_result refuse_rank(dt_comm *world, void *arg)
{
    (void)arg;
    lab_groups g;
    static const int bad[][2] = {{3, 1}, {0, 2}, {2, -1}, {4, 4}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        memset(&g, 0x5a, sizeof g);
        dt_result r = lab_groups_create(&g, world, bad[k][0], bad[k][1]);
        if (r != DT_ERR_INVALID_ARG)
            return dt_fail(DT_ERR_MISMATCH, "tp %d, pp %d on %d ranks: returned %d, expected "
                           "DT_ERR_INVALID_ARG", bad[k][0], bad[k][1], dt_comm_size(world), r);
        if (g.tp || g.pp || g.dp)
            return dt_fail(DT_ERR_MISMATCH, "tp %d, pp %d refused but the groups are not "
                           "zeroed", bad[k][0], bad[k][1]);
    }
    return DT_OK;
}

TEST_T(bad_layouts_refused, 1, 20)
{
    dt_test_see("chapter 13, section 1");
    EXPECT_OK(launch(8, refuse_rank, NULL));
}
