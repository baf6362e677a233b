/* test_zero.c - lab 08: ZeRO stages 1 to 3. The multi-rank tests train
 * with the lab inside dt_launch and check, inside the ranks, the
 * parameters against the library's data parallelism, the memory each rank
 * holds per tag (dt_mem_stats), and the collectives and bytes of every
 * step (dt_comm_stats); see zero_test.c. */
#include "grader.h"
#include "zero_test.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ task 1 */

TEST(shard_size_pads_to_equal_shards, 1)
{
    dt_test_see("chapter 08, section 6");
    static const size_t counts[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 1285, 1000000007};
    for (int K = 1; K <= 9; K++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            size_t c = 12345;
            EXPECT_OK(lab_zero_shard_size(counts[i], K, &c));
            EXPECT(c == zt_shard(counts[i], K), "%zu elements on %d ranks: a shard of %zu, "
                   "expected %zu (the smallest with K x shard >= count)", counts[i], K, c,
                   zt_shard(counts[i], K));
        }
    size_t c;
    EXPECT_ERR(lab_zero_shard_size(10, 0, &c), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_zero_shard_size(10, 2, NULL), DT_ERR_INVALID_ARG);
}

/* ------------------------------------------------------------ task 2 */

static dt_result setup_rank(dt_comm *w, void *arg)
{
    lab_zero_stage stage = *(const lab_zero_stage *)arg;
    dt_model m, init;
    lab_zero z;
    dt_mem_stats m0, m1;
    lab_zero_config cfg = {stage, dt_adamw_config(0.01f), 0, NULL, NULL};
    int r = dt_comm_rank(w), K = dt_comm_size(w);
    DT_CHECK(dt_model_create_spec(&init, ZT_SPEC, ZT_SEED));
    dt_mem_stats_get(&m0);
    DT_CHECK(dt_model_create_spec(&m, ZT_SPEC, ZT_SEED));
    dt_result res = lab_zero_init(&z, w, &m, &cfg);
    if (res != DT_OK) {
        dt_model_free(&m), dt_model_free(&init);
        return res;
    }
    dt_mem_stats_get(&m1);
    size_t want[3];
    static const dt_mem_tag tags[3] = {DT_MEM_PARAM, DT_MEM_GRAD, DT_MEM_OPTIM};
    zt_kept_bytes(&z, want);
    for (int i = 0; res == DT_OK && i < 3; i++) {
        size_t got = m1.current[tags[i]] - m0.current[tags[i]];
        if (got != want[i])
            res = dt_fail(DT_ERR_MISMATCH, "stage %d on %d ranks, %d units: rank %d holds %zu "
                          "bytes of %s after the setup, expected %zu", (int)stage, K, z.num_units,
                          r, got,
                          dt_mem_tag_name(tags[i]), want[i]);
    }
    for (int u = 0; res == DT_OK && u < z.num_units; u++) {
        const lab_zero_unit *un = &z.units[u];
        size_t n = un->unit.count, c = stage == LAB_ZERO_DDP ? n : zt_shard(n, K);
        size_t full = stage == LAB_ZERO_DDP ? n : c * (size_t)K, begin = (size_t)r * c;
        const float *p0 = init.params + un->unit.offset;
        int kept_params = stage <= LAB_ZERO_2, kept_grads = stage <= LAB_ZERO_1;
        if ((un->params != NULL) != kept_params || (un->param_shard != NULL) == kept_params ||
            (un->grads != NULL) != kept_grads || (un->grad_shard != NULL) == kept_grads)
            res = dt_fail(DT_ERR_MISMATCH, "stage %d on %d ranks, rank %d, unit %d after the "
                          "setup: params %s, grads %s, param_shard %s, grad_shard %s; the stage "
                          "keeps params %s, grads %s, param_shard %s, grad_shard %s (section 2)",
                          (int)stage, K, r, u, un->params ? "set" : "NULL",
                          un->grads ? "set" : "NULL",
                          un->param_shard ? "set" : "NULL", un->grad_shard ? "set" : "NULL",
                          kept_params ? "set" : "NULL", kept_grads ? "set" : "NULL",
                          kept_params ? "NULL" : "set", kept_grads ? "NULL" : "set");
        for (size_t i = 0; res == DT_OK && kept_params && i < full; i++)
            if (un->params[i] != (i < n ? p0[i] : 0))
                res = dt_fail(DT_ERR_MISMATCH, "stage %d on %d ranks, rank %d, unit %d: "
                              "params[%zu] = %g, the initial parameter (or padding 0) is %g",
                              (int)stage, K, r, u, i,
                              (double)un->params[i], (double)(i < n ? p0[i] : 0));
        for (size_t i = 0; res == DT_OK && !kept_params && i < c; i++)
            if (un->param_shard[i] != (begin + i < n ? p0[begin + i] : 0))
                res = dt_fail(DT_ERR_MISMATCH, "ZeRO-3 on %d ranks, rank %d, unit %d: "
                              "param_shard[%zu] = %g, expected element %zu of the padded unit "
                              "(%g)", K, r, u, i,
                              (double)un->param_shard[i], begin + i,
                              (double)(begin + i < n ? p0[begin + i] : 0));
        if (res == DT_OK && (un->shard != c || un->opt.count != c))
            res = dt_fail(DT_ERR_MISMATCH, "stage %d on %d ranks, rank %d, unit %d of %zu "
                          "parameters: shard %zu and an optimizer over %zu, expected %zu for "
                          "both", (int)stage, K, r, u, n, un->shard, un->opt.count, c);
    }
    if (res == DT_OK && (m.params || m.grads))
        res = dt_fail(DT_ERR_STATE, "the model still holds its buffers after lab_zero_init");
    lab_zero_free(&z);
    dt_model_free(&m), dt_model_free(&init);
    return res;
}

/* After the setup each rank holds exactly what its stage keeps (section
 * 2's table, with the padding of section 6), with the initial values. */
TEST(setup_keeps_what_each_stage_keeps, 3)
{
    dt_test_see("chapter 08, sections 2 and 6");
    for (lab_zero_stage s = LAB_ZERO_DDP; s <= LAB_ZERO_3; s++)
        for (int K = 1; K <= 4; K++) {
            dt_launch_opts o;
            dt_launch_opts_init(&o);
            o.nranks = K, o.backend = DT_BACKEND_THREAD, o.timeout_s = 5;
            EXPECT_OK(dt_launch(&o, setup_rank, &s));
        }
}

/* ------------------------------------------------------------ tasks 3 to 5 */

static void run_stage(lab_zero_stage stage, size_t bucket_bytes, int checks, int K0, int K1)
{
    zero_run run = {ZT_SPEC, stage, bucket_bytes, 6, 3, checks, 0};
    for (int K = K0; K <= K1; K++)
        EXPECT_OK(zt_launch(K, DT_BACKEND_THREAD, &run));
}

/* ZeRO-1 trains like data parallelism: the same mean gradient on every
 * shard (checked on the shard itself: AdamW's update hardly changes when
 * the gradient is K times larger), the same AdamW update of each
 * parameter. */
TEST_T(zero1_equals_ddp, 3, 20)
{
    dt_test_see("chapter 08, section 3");
    run_stage(LAB_ZERO_1, 0, ZT_PARAMS | ZT_MEAN | ZT_CALLS, 1, 4);
}

/* A shard of the optimizer state, and one reduce-scatter and one
 * allgather: the bytes of one allreduce. */
TEST_T(zero1_memory_and_bytes, 2, 20)
{
    dt_test_see("chapter 08, sections 3 and 7");
    run_stage(LAB_ZERO_1, 0, ZT_MEMORY | ZT_BYTES, 2, 4);
}

TEST_T(zero2_equals_ddp, 2, 20)
{
    dt_test_see("chapter 08, section 4");
    run_stage(LAB_ZERO_2, 0, ZT_PARAMS | ZT_MEAN | ZT_CALLS, 1, 4);
    run_stage(LAB_ZERO_2, 2000, ZT_PARAMS | ZT_MEAN | ZT_CALLS, 3, 3); /* two buckets */
}

/* The gradients of one bucket at a time, beside the shard. */
TEST_T(zero2_frees_gradients_after_each_bucket, 2, 20)
{
    dt_test_see("chapter 08, section 4");
    run_stage(LAB_ZERO_2, 0, ZT_MEMORY | ZT_BYTES, 2, 4);
}

TEST_T(zero3_equals_ddp, 2, 20)
{
    dt_test_see("chapter 08, section 5");
    run_stage(LAB_ZERO_3, 0, ZT_PARAMS | ZT_MEAN | ZT_CALLS, 1, 4);
}

/* The shard, and one layer gathered at a time: 3 psi a step. */
TEST_T(zero3_gathers_and_frees_each_layer, 2, 20)
{
    dt_test_see("chapter 08, sections 5 and 7");
    run_stage(LAB_ZERO_3, 0, ZT_MEMORY | ZT_BYTES, 2, 4);
}

/* Stage 0 holds everything: the baseline the others are measured against. */
TEST_T(ddp_stage_holds_everything, 1, 20)
{
    dt_test_see("chapter 08, section 2");
    run_stage(LAB_ZERO_DDP, 0, ZT_PARAMS | ZT_MEAN | ZT_MEMORY | ZT_BYTES | ZT_CALLS, 2, 3);
}

/* ------------------------------------------------------------ task 6 */

/* Predict, then measure: ZeRO-2 with one layer per bucket on five ranks,
 * which the chapter does not work out (its layers of 651, 544 and 90
 * parameters pad to 655, 545 and 90 on 5 ranks). */
TEST_T(predict_zero2_at_five_ranks_then_measure, 2, 20)
{
    dt_test_see("chapter 08, sections 6, 7 and 9");
    zt_expect_prediction(ZT_SPEC, LAB_ZERO_2, 0, 5, "ib100");
}
