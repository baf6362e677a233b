/* dttrain - train a model and report how fast and how well.
 *
 *   dttrain --model mlp:64,128,10 --data digits --steps 600
 *   dttrain --model mlp:784,1024,1024,10 --data synthetic --batch 64 --lr 0.01 --json
 *   dttrain --ranks 4 --backend proc --net ib100     data parallel (chapter 03)
 *   dttrain --ranks 4 --shard-optimizer              ZeRO stage 1 (chapter 08)
 *   dttrain --model gpt:64,16,4,4,64 --data synthetic --ranks 8 --tp 2 --pp 2
 *                                                    DP x TP x PP (chapter 13)
 *   dttrain --showcase                               what `make run` shows
 *
 * The loop is the library's (dt/train.h); dttrain chooses its hooks,
 * builds the data and prints. With --json it prints one JSON object and
 * nothing else on stdout. Exit status: 0, 1 when the run fails, 2 for a
 * bad option (its message names the option and the value). */
#include "dttrain.h"

int main(int argc, char **argv)
{
    options o;
    int rc = dttrain_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    dt_blas_info blas; /* a bad DT_BLAS_KERNELS or DT_QUIET is a bad option too */
    if (dt_blas_info_get(&blas) != DT_OK) {
        fprintf(stderr, "dttrain: %s\n", dt_last_error());
        return 2;
    }
    dt_result r = dt_blas_set_threads((int)o.threads);
    if (r != DT_OK)
        return dttrain_fail(r);
    if (o.showcase)
        return dttrain_showcase(&o);
    if (o.tp > 1 || o.pp > 1)
        return dttrain_hybrid(&o);
    if (o.distributed)
        return dttrain_parallel(&o);
    return dttrain_single(&o);
}
