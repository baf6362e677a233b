/* test_optim.c - SGD and AdamW against values worked out by hand, ranges
 * that compose (a sharded update equals the whole), exact state memory. */
#include "grader.h"
#include "dt/optim.h"

#include <math.h>
#include <string.h>

TEST(optim_sgd_momentum_weight_decay_by_hand, 2)
{
    /* lr 0.1, momentum 0.9, weight decay 0.1, p0 = 1:
     *   step 1, g 0.5:  g' = 0.5 + 0.1*1 = 0.6;     buf = 0.6;               p = 0.94
     *   step 2, g 0.5:  g' = 0.5 + 0.094 = 0.594;   buf = 0.54 + 0.594;      p = 0.8266
     *   step 3, g -1:   g' = -1 + 0.08266;          buf = 1.0206 - 0.91734;  p = 0.816274 */
    dt_optim_config c = dt_sgd_config(0.1f, 0.9f, 0.1f);
    float p = 1, g[3] = {0.5f, 0.5f, -1}, want[3] = {0.94f, 0.8266f, 0.816274f}, buf = 0;
    for (int t = 0; t < 3; t++) {
        EXPECT_OK(dt_sgd_update(&c, &p, &g[t], &buf, 1));
        EXPECT_NEAR(p, want[t], 1e-6);
    }
    /* plain SGD: p -= lr g, no state needed */
    dt_optim_config plain = dt_sgd_config(0.5f, 0, 0);
    float q[2] = {1, 2}, gq[2] = {2, -4};
    EXPECT_OK(dt_sgd_update(&plain, q, gq, NULL, 2));
    EXPECT(q[0] == 0 && q[1] == 4, "plain SGD %g %g", q[0], q[1]);
}

TEST(optim_adamw_by_hand, 2)
{
    /* lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, p0 = 1:
     *   t=1, g 0.5:   p = 0.999; m = 0.05; v = 2.5e-4; m^ = 0.5, v^ = 0.25
     *                 p = 0.999 - 0.1 * 0.5 / (0.5 + 1e-8)        = 0.899000002
     *   t=2, g -0.25: m = 0.02; v = 3.1225e-4; m^ = 0.02/0.19; v^ = 3.1225e-4/0.001999
     *                 p = 0.899 * 0.999 - 0.1 m^ / (sqrt v^ + eps) = 0.87146730
     *   t=3, g 0:     m = 0.018; v = 3.1193775e-4                  = 0.85000790 */
    dt_optim_config c = dt_adamw_config(0.1f);
    EXPECT(c.beta1 == 0.9f && c.beta2 == 0.999f && c.eps == 1e-8f && c.weight_decay == 0.01f,
           "PyTorch's defaults");
    float p = 1, m = 0, v = 0, g[3] = {0.5f, -0.25f, 0};
    double want[3] = {0.899000002, 0.8714672987, 0.8500079017};
    for (int t = 0; t < 3; t++) {
        EXPECT_OK(dt_adamw_update(&c, &p, &g[t], &m, &v, 1, t + 1));
        EXPECT_NEAR(p, want[t], 1e-6);
    }
    EXPECT_NEAR(m, 0.018, 1e-6);
    EXPECT_NEAR(v, 3.1193775e-4, 1e-4); /* 1 - 0.999f is 0.00100005 in float */
    EXPECT_ERR(dt_adamw_update(&c, &p, &g[0], &m, &v, 1, 0), DT_ERR_INVALID_ARG);
}

/* Updating [0, n) at once, or as the shards a ZeRO rank would own, gives
 * the same parameters. */
TEST(optim_shards_compose_to_the_whole, 2)
{
    enum { N = 103 };
    dt_optim_config cfgs[2] = {dt_sgd_config(0.05f, 0.9f, 0.01f), dt_adamw_config(0.01f)};
    for (int k = 0; k < 2; k++) {
        float whole[N], sharded[N], grads[N];
        for (int i = 0; i < N; i++) {
            whole[i] = sharded[i] = (float)(i % 13) - 6;
            grads[i] = (float)(i % 7) - 3;
        }
        dt_optimizer all, part[4];
        size_t cuts[5] = {0, 26, 52, 52, N}; /* one shard empty */
        EXPECT_OK(dt_optim_init(&all, &cfgs[k], 0, N));
        for (int s = 0; s < 4; s++)
            EXPECT_OK(dt_optim_init(&part[s], &cfgs[k], cuts[s], cuts[s + 1] - cuts[s]));
        for (int step = 0; step < 3; step++) {
            EXPECT_OK(dt_optim_step(&all, whole, grads));
            for (int s = 0; s < 4; s++) {
                if (s % 2) /* two ways of naming the same range */
                    EXPECT_OK(dt_optim_step(&part[s], sharded, grads));
                else
                    EXPECT_OK(dt_optim_step_shard(&part[s], sharded + cuts[s], grads + cuts[s]));
            }
        }
        EXPECT(memcmp(whole, sharded, sizeof whole) == 0, "%s: shards differ from the whole",
               k ? "AdamW" : "SGD");
        EXPECT(all.step == 3 && part[2].step == 3, "step counts");
        dt_optim_free(&all);
        for (int s = 0; s < 4; s++)
            dt_optim_free(&part[s]);
    }
}

TEST(optim_state_memory_is_exact, 1)
{
    dt_mem_ctx *ctx = dt_mem_ctx_create();
    dt_mem_bind(ctx);
    dt_mem_stats s;
    dt_optimizer o;
    dt_optim_config adam = dt_adamw_config(1e-3f);
    EXPECT_OK(dt_optim_init(&o, &adam, 1000, 12345));
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_OPTIM] == 2 * 4 * 12345, "AdamW: %zu bytes of state for 12345",
           s.current[DT_MEM_OPTIM]);
    EXPECT(dt_optim_state_bytes_per_param(&adam) == 8, "8 bytes per parameter");
    dt_optim_free(&o);
    dt_optim_config mom = dt_sgd_config(0.1f, 0.9f, 0), plain = dt_sgd_config(0.1f, 0, 0);
    EXPECT_OK(dt_optim_init(&o, &mom, 0, 100));
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_OPTIM] == 400, "SGD momentum: %zu bytes", s.current[DT_MEM_OPTIM]);
    dt_optim_free(&o);
    EXPECT_OK(dt_optim_init(&o, &plain, 0, 100));
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_OPTIM] == 0 && o.state == NULL, "plain SGD keeps no state");
    dt_optim_free(&o);
    EXPECT_OK(dt_optim_init(&o, &adam, 50, 0)); /* an empty shard */
    EXPECT_OK(dt_optim_step_shard(&o, NULL, NULL));
    dt_optim_free(&o);
    dt_mem_bind(NULL);
    dt_mem_ctx_release(ctx);
}

TEST(optim_rejects_bad_input, 1)
{
    dt_optimizer o;
    dt_optim_config bad = dt_sgd_config(0.1f, 1.5f, 0);
    EXPECT_ERR(dt_optim_init(&o, &bad, 0, 10), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "momentum"), "message: %s", dt_last_error());
    bad = dt_adamw_config(-1);
    EXPECT_ERR(dt_optim_init(&o, &bad, 0, 10), DT_ERR_INVALID_ARG);
    dt_optim_config ok = dt_adamw_config(0.1f);
    EXPECT_OK(dt_optim_init(&o, &ok, 0, 4));
    float p[4] = {0};
    EXPECT_ERR(dt_optim_step(&o, p, NULL), DT_ERR_INVALID_ARG);
    EXPECT(o.step == 0, "a failed step is not counted");
    dt_optim_free(&o);
    EXPECT_ERR(dt_sgd_update(NULL, p, p, NULL, 4), DT_ERR_INVALID_ARG);
}
