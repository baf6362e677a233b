/* hybrid.c - dttrain with tensor and pipeline parallelism inside data
 * parallelism (--tp, --pp; chapters 07, 06 and 13): --ranks = DP x TP x PP.
 *
 * Every rank builds the whole model from the same seed, keeps its
 * tensor-parallel shard (dt_parallel_init: the groups TP innermost, PP
 * next, DP outermost), and trains it with the library's loop: the
 * pipeline's schedule with the layers' collectives inside it, then each
 * shard's gradients averaged over its data-parallel group. The D replicas
 * take their shards of every global batch from the sampler, so the run
 * trains like one rank with a batch of D x --batch. */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const options *o;
    dp_result *res;  /* a shared block (dp_alloc): proc ranks write it too */
} hybrid_job;

static uint64_t sent(dt_comm *c)
{
    dt_stats s;
    return c && dt_comm_stats(c, &s) == DT_OK ? s.bytes_sent : 0;
}

/* A report's line: the loss of the global batch (the replicas' mean) and
 * the speed; the bytes of each group and the test accuracy come at the
 * end (the trainer counts only the data-parallel group's). */
static void progress(void *arg, const dt_train_progress *p)
{
    printf("[%s] step %6ld  loss %.4f  %8.0f samples/s\n", (const char *)arg, p->step,
           (double)p->loss, p->samples_per_s);
    fflush(stdout);
}

static dt_result hybrid_rank(dt_comm *w, void *arg)
{
    const hybrid_job *j = arg;
    const options *o = j->o;
    int rank = dt_comm_rank(w);
    dt_dataset train = {0}, test = {0};
    dt_model whole;
    dt_parallel x;
    dt_schedule *s = NULL;
    dt_train_result tr;
    memset(&x, 0, sizeof x);
    DT_CHECK(dt_model_create_spec(&whole, o->model, o->seed)); /* the same on every rank */
    dt_result r = dttrain_data(o, &whole, &train, &test);
    if (r == DT_OK && o->pp > 1)
        r = dt_sched_named(&s, o->schedule, (int)o->pp, o->vpp ? (int)o->vpp : 1,
                           (int)o->micro_batches);
    dt_trainer_config tc = dttrain_trainer_config(o, 0);
    if (r == DT_OK)
        r = dt_parallel_init(&x, w, &whole, (int)o->tp, (int)o->pp, s, &tc);
    dt_model_free(&whole); /* each rank keeps its shard */
    if (r == DT_OK && o->shard_optimizer)
        r = dt_train_use_zero1(&x.trainer);
    dt_mem_reset_peak();
    if (r == DT_OK) {
        char tag[64];
        snprintf(tag, sizeof tag, "%d ranks: %d x %d x %d", dt_comm_size(w), x.groups.D,
                 x.groups.T, x.groups.P);
        dttrain_progress lines = {tag, 0}; /* (its own progress line below) */
        /* one line per report, from rank 0; the test set after the run,
         * so that the bytes counted are the training's */
        dt_train_config c = dttrain_run_config(o, NULL, o->epochs, &lines);
        c.progress = rank == 0 && !o->json ? progress : NULL, c.progress_arg = tag;
        r = dt_train(&x.trainer, &train, &c, &tr);
    }
    uint64_t sent_in[3] = {sent(x.groups.tp), sent(x.groups.pp), sent(x.groups.dp)};
    /* a pipeline rank holds only its stages' trained parameters: no test
     * accuracy; a tensor-parallel shard evaluates with its group */
    if (r == DT_OK && o->pp == 1)
        r = dt_evaluate(&x.model, &test, 256, &tr.accuracy, NULL);
    /* the replicas' mean, the global batch's loss */
    if (r == DT_OK)
        r = dt_allreduce(&tr.final_loss, &tr.final_loss, 1, DT_F32, DT_AVG, x.groups.dp);
    if (r == DT_OK && rank == 0) {
        dt_mem_stats ms;
        dt_mem_stats_get(&ms);
        dp_result *res = j->res;
        res->run = tr;
        res->mem_peak = ms.peak_total;
        res->states_peak = ms.peak[DT_MEM_PARAM] + ms.peak[DT_MEM_GRAD] + ms.peak[DT_MEM_OPTIM];
        snprintf(res->update, sizeof res->update, "%s", x.trainer.update.name);
        snprintf(res->sync, sizeof res->sync, "%s", x.trainer.sync.name);
        snprintf(res->layout, sizeof res->layout, "%s", dttrain_layout_name(&x.trainer));
        memcpy(res->group_sent, sent_in, sizeof sent_in);
        res->done = 1;
    }
    dt_parallel_free(&x);
    dt_sched_free(s);
    dt_dataset_free(&train);
    dt_dataset_free(&test);
    return r;
}

static void print_result(const options *o, const dp_result *res, size_t params)
{
    const dt_train_result *t = &res->run;
    long D = o->ranks / (o->tp * o->pp), steps = t->steps > 0 ? t->steps : 1;
    double per[3];
    for (int k = 0; k < 3; k++) /* since the groups were made: the run's */
        per[k] = (double)res->group_sent[k] / (double)steps;
    const char *sched = o->pp > 1 ? o->schedule : "none";
    if (o->json) {
        printf("{\"model\": \"%s\", \"data\": \"%s\", \"params\": %zu, \"ranks\": %ld, \"dp\": "
               "%ld, \"tp\": %ld, \"pp\": %ld, \"vpp\": %ld, \"schedule\": \"%s\", "
               "\"backend\": \"%s\", \"net\": \"%s\", \"batch_per_replica\": %ld, "
               "\"micro_batches\": %ld, \"steps\": %ld, \"update\": \"%s\", \"sync\": \"%s\", ",
               o->model, o->data, params, o->ranks, D, o->tp, o->pp, o->vpp ? o->vpp : 1, sched,
               o->backend ? o->backend : "thread", o->net ? o->net : "none", o->batch,
               o->micro_batches, t->steps, res->update, res->sync);
        dttrain_json_machine(stdout, o);
        printf(", \"step_ms_median\": %.4f, \"samples_per_s\": %.1f, \"tp_bytes_per_step\": "
               "%.0f, \"pp_bytes_per_step\": %.0f, \"dp_bytes_per_step\": %.0f, \"modeled_s\": "
               "%.6f, \"final_loss\": %.6f, \"accuracy\": %.6f, \"mem_peak_bytes\": %zu, "
               "\"states_peak_bytes\": %zu, \"seconds\": %.3f}\n", t->step_ms_median,
               t->samples_per_s, per[0], per[1], per[2], t->modeled_s, (double)t->final_loss,
               (double)t->accuracy, res->mem_peak, res->states_peak, t->seconds);
        return;
    }
    printf("done: %ld ranks (%s) = DP %ld x TP %ld x PP %ld, schedule %s", o->ranks,
           o->backend ? o->backend : "thread", D, o->tp, o->pp, sched);
    if (o->vpp > 1)
        printf(" (%ld stages per rank)", o->vpp);
    printf(", %ld micro-batches; %ld steps, %.3f ms/step (median), %.0f samples/s; rank 0 sent "
           "%.0f / %.0f / %.0f bytes/step in its TP / PP / DP groups; modeled %.3f s on %s; "
           "final loss %.4f", o->micro_batches, t->steps, t->step_ms_median, t->samples_per_s,
           per[0], per[1], per[2], t->modeled_s, o->net ? o->net : "none",
           (double)t->final_loss);
    if (t->accuracy >= 0)
        printf(", test accuracy %.4f", (double)t->accuracy);
    printf(" (sync %s, update %s)\n", res->sync, res->update);
}

int dttrain_hybrid(const options *o)
{
    dt_model m;
    dt_result r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return dttrain_fail(r);
    size_t params = m.num_params;
    dt_model_free(&m);
    dp_result *res = dp_alloc();
    hybrid_job j = {o, res};
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = (int)o->ranks;
    if (o->backend)
        r = dt_backend_parse(o->backend, &lo.backend);
    lo.net = o->net ? o->net : "none";
    lo.timeout_s = 120;
    if (!res)
        r = dt_fail(DT_ERR_NOMEM, "--tp, --pp: result block");
    if (r == DT_OK) {
        memset(res, 0, sizeof *res);
        fflush(stdout); /* forked ranks must not inherit unwritten output */
        r = dt_launch(&lo, hybrid_rank, &j);
    }
    /* on mpi, rank 0's result is in its process: the others say nothing */
    int other = lo.backend == DT_BACKEND_MPI && dt_mpi_world_rank() > 0;
    if (r == DT_OK && !other && !res->done)
        r = dt_fail(DT_ERR_INTERNAL, "--tp, --pp: rank 0 reported no result");
    if (r == DT_OK && !other)
        print_result(o, res, params);
    dp_release(res);
    return r == DT_OK ? 0 : dttrain_fail(r);
}
