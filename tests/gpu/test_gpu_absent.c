/* test_gpu_absent.c - on a machine WITHOUT a GPU (CI, a laptop with the
 * toolkit), the GPU path fails cleanly: the nccl backend's launch returns
 * DT_ERR_UNSUPPORTED from every rank, naming CUDA's reason, within its
 * deadline (no crash, no hang), and the GPU MLP refuses to start. Skipped
 * where a GPU is present (the other tests run there). */
#include "gpu_test.h"

#include "dt/comm.h"
#include "dt/nn.h"

#include <string.h>

static dt_result never_runs(dt_comm *w, void *arg)
{
    (void)w, (void)arg;
    return dt_fail(DT_ERR_INTERNAL, "the rank's function ran without a GPU");
}

TEST_T(gpu_absent_nccl_launch_refused, 1, 60, .own_backend = 1)
{
    char why[300];
    if (gpu_count(why, sizeof why) > 0)
        dt_test_skip("a GPU is here: this test checks machines without one");
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2;
    o.backend = DT_BACKEND_NCCL;
    o.timeout_s = 20;
    dt_result r = dt_launch(&o, never_runs, NULL);
    const char *msg = dt_last_error();
    EXPECT(r == DT_ERR_UNSUPPORTED, "dt_launch on nccl without a GPU gave %s (%s), expected "
           "DT_ERR_UNSUPPORTED", dt_strerror(r), msg);
    EXPECT(strstr(msg, "nccl") && strstr(msg, "CUDA"), "the refusal names neither the nccl "
           "backend nor CUDA's reason: '%s'", msg);
}

TEST(gpu_absent_mlp_refused, 1)
{
    char why[300];
    if (gpu_count(why, sizeof why) > 0)
        dt_test_skip("a GPU is here: this test checks machines without one");
    size_t widths[] = {4, 3};
    dt_model m;
    EXPECT_OK(dt_mlp_create(&m, widths, 2, 1));
    dt_gpu_mlp g;
    dt_result r = dt_gpu_mlp_create(&g, &m, 2);
    EXPECT(r == DT_ERR_UNSUPPORTED, "dt_gpu_mlp_create without a GPU gave %s (%s)",
           dt_strerror(r), dt_last_error());
    dt_model_free(&m);
}
