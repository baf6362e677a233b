/* hidden_async.c - lab 04: more of the same properties, other shapes. */
#include "ref.h"

TEST_HIDDEN(hidden_shard_range_sweep, 2)
{
    for (size_t n = 1; n <= 120; n++)
        for (int parts = 1; parts <= 12 && (size_t)parts <= n; parts++) {
            size_t next = 0, lo = n / (size_t)parts;
            for (int p = 0; p < parts; p++) {
                size_t off = 0, cnt = 0;
                EXPECT_OK(lab_shard_range(n, parts, p, &off, &cnt));
                EXPECT(off == next, "n %zu, %d parts, part %d starts at %zu, expected %zu", n,
                       parts, p, off, next);
                /* the first n % parts shards hold one more */
                size_t want = lo + ((size_t)p < n % (size_t)parts ? 1 : 0);
                EXPECT(cnt == want, "n %zu, %d parts, part %d has %zu, expected %zu", n, parts,
                       p, cnt, want);
                next = off + cnt;
            }
            EXPECT(next == n, "n %zu, %d parts cover %zu", n, parts, next);
        }
}

TEST_HIDDEN_T(hidden_ps_three_servers_bound_two, 2, 30)
{
    ref_data();
    const int G = 48, K = 4, S = 3;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.servers = S, cfg.updates = G, cfg.compute_s = 1e-3, cfg.bound = 2;
    dt_launch_opts o = ref_opts(S + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    ref_check_staleness(&res, G, 2);
    lab_ps_result_free(&res);
}

TEST_HIDDEN_T(hidden_ps_sync_one_server, 2, 20)
{
    ref_data();
    const int K = 2, rounds = 8;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.sync = 1, cfg.updates = rounds * K + 1; /* the odd one is not a round */
    float *want = ref_sync_sgd(rounds, K, cfg.batch, cfg.lr, cfg.seed);
    dt_launch_opts o = ref_opts(1 + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    EXPECT(res.applied[0] == rounds * K, "server applied %d gradients, expected %d",
           res.applied[0], rounds * K);
    double d = ref_max_diff(res.params, want, res.num_params);
    EXPECT(d <= 2e-5, "synchronous run differs from the mean-gradient SGD by %.3g", d);
    lab_ps_result_free(&res);
    free(want);
}

/* Two ranks subtract 1 from every word of one shared array, 200 times each:
 * each word ends between -400 (no update lost) and -200 (every update of
 * one rank lost), and stays an integer. */

static dt_result race_rank(dt_comm *world, void *arg)
{
    (void)arg;
    void *base = NULL;
    dt_win *win = NULL;
    DT_CHECK(dt_win_allocate(world, 256 * sizeof(float), &base, &win));
    float ones[256];
    for (int i = 0; i < 256; i++)
        ones[i] = 1;
    for (int k = 0; k < 200; k++)
        DT_CHECK(lab_hogwild_apply(base, ones, 256, 1.0f));
    DT_CHECK(dt_barrier(world));
    float out[256];
    DT_CHECK(lab_hogwild_read(out, base, 256));
    for (int i = 0; i < 256; i++)
        EXPECT(out[i] <= -200 && out[i] >= -400 && out[i] == (float)(int)out[i],
               "word %d = %g after 2 x 200 updates of -1, expected an integer in "
               "[-400, -200]", i, out[i]);
    return dt_win_free(win);
}

TEST_HIDDEN(hidden_hogwild_concurrent_apply, 2)
{
    dt_launch_opts o = ref_opts(2);
    EXPECT_OK(dt_launch(&o, race_rank, NULL));
}
