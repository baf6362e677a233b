/* parallel.c - dttrain with data parallelism (chapter 03): --ranks,
 * --backend, --net, and the runs of --showcase.
 *
 * Every rank holds the model; rank 0's initial parameters are broadcast;
 * each rank takes its shard of every global batch from the distributed
 * sampler; the loop's sync averages the gradients (one allreduce of the
 * flat buffer, or with --shard-optimizer ZeRO-1's reduce-scatter and
 * allgather) before the update. K ranks with batch B thus train like one
 * rank with batch K*B. */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* FNV-1a of n bytes: a fingerprint to compare two runs' parameters. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* The flat buffers the collectives work on, moved into the job's shared
 * memory (dt_alloc_shared): in the proc backend the ranks then read and
 * write each other's directly instead of through cross-memory copies.
 * The model's own buffers are freed meanwhile (*shared = 1), and made
 * again by unshare_buffers, so that the model can be freed as usual. */
static dt_result share_buffers(dt_comm *w, dt_model *m, int *shared)
{
    size_t bytes = m->num_params * sizeof(float);
    float *p = NULL, *g = NULL;
    DT_CHECK(dt_alloc_shared(w, bytes, (void **)&p));
    dt_result r = dt_alloc_shared(w, bytes, (void **)&g);
    if (r != DT_OK) {
        dt_free_shared(w, p);
        return r;
    }
    memcpy(p, m->params, bytes);
    dt_mem_free(m->params), dt_mem_free(m->grads);
    m->params = p, m->grads = g, *shared = 1;
    return DT_OK;
}

static void unshare_buffers(dt_comm *w, dt_model *m, int shared)
{
    if (!shared)
        return;
    size_t bytes = m->num_params * sizeof(float);
    float *p = dt_mem_alloc(DT_MEM_PARAM, bytes), *g = dt_mem_alloc(DT_MEM_GRAD, bytes);
    if (p) /* the final parameters, for whoever looks at the model next */
        memcpy(p, m->params, bytes);
    dt_free_shared(w, m->params);
    dt_free_shared(w, m->grads);
    m->params = p, m->grads = g;
}

/* Rank 0's result into the shared block. shared: the flat parameters and
 * gradients live in the job's shared memory, which the accounting does
 * not charge: their bytes are added to the model states. */
static void report_result(const dp_job *j, dt_comm *w, const dt_trainer *t,
                          const dt_train_result *tr, const dt_mem_stats *trained, int shared)
{
    dp_result *res = j->res;
    const dt_mem_stats ms = *trained;
    struct rusage ru;
    res->run = *tr;
    res->mem_peak = ms.peak_total;
    res->states_peak = ms.peak[DT_MEM_PARAM] + ms.peak[DT_MEM_GRAD] + ms.peak[DT_MEM_OPTIM] +
                       (shared ? 2 * t->model->num_params * sizeof(float) : 0);
    res->rss_peak_kb = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
    res->params_hash = fnv1a(t->model->params, t->model->num_params * sizeof(float));
    snprintf(res->update, sizeof res->update, "%s", dttrain_update_name(t));
    snprintf(res->sync, sizeof res->sync, "%s", t->sync.name);
    snprintf(res->layout, sizeof res->layout, "%s", dttrain_layout_name(t));
    res->done = 1;
    (void)w;
}

/* FSDP gave up the model's buffers: the parameters gathered back into
 * them, and rank 0's test accuracy. Collective. */
static dt_result fsdp_evaluate(dt_trainer *t, dt_model *m, const dt_dataset *test,
                               dt_train_result *tr)
{
    if (!(m->params = dt_mem_alloc(DT_MEM_PARAM, m->num_params * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "--fsdp: the gathered parameters");
    DT_CHECK(dt_train_fsdp_params(t, m->params));
    return t->rank == 0 ? dt_evaluate(m, test, 256, &tr->accuracy, NULL) : DT_OK;
}

static dt_result dp_rank(dt_comm *w, void *arg)
{
    const dp_job *j = arg;
    const options *o = j->o;
    int rank = dt_comm_rank(w), K = dt_comm_size(w);
    dt_dataset train = {0}, test = {0};
    dt_model m;
    dt_trainer t;
    dt_train_result tr;
    int shared = 0, have_trainer = 0;
    /* another seed on each rank: only the broadcast makes them one model */
    DT_CHECK(dt_model_create_spec(&m, o->model, o->seed + (uint64_t)rank));
    dt_result r = dttrain_data(o, &m, &train, &test);
    /* without room in the job's shared memory, each rank keeps its own (and
     * FSDP keeps shards of its own, freeing the model's buffers) */
    if (r == DT_OK && K > 1 && !o->fsdp && share_buffers(w, &m, &shared) != DT_OK &&
        rank == 0 && !o->json)
        printf("[%s] shared memory too small for the gradients: private buffers (%s)\n", j->tag,
               dt_last_error());
    if (r == DT_OK)
        r = dt_broadcast(m.params, m.params, m.num_params, DT_F32, 0, w);
    if (r == DT_OK && (r = dttrain_trainer(o, &t, &m, w, j->compute_per_sample)) == DT_OK)
        have_trainer = 1;
    dt_mem_reset_peak(); /* the peaks of the training, not of the set-up before it */
    if (r == DT_OK) {
        dttrain_progress lines = {j->tag, 0};
        /* FSDP holds no whole model to evaluate during the run: at its end */
        dt_train_config c = dttrain_run_config(o, o->fsdp ? NULL : &test, j->epochs, &lines);
        r = dt_train(&t, &train, &c, &tr);
    }
    dt_mem_stats trained; /* before FSDP's evaluation gathers the whole model */
    dt_mem_stats_get(&trained);
    if (r == DT_OK && o->fsdp)
        r = fsdp_evaluate(&t, &m, &test, &tr);
    if (r == DT_OK && rank == 0)
        report_result(j, w, &t, &tr, &trained, shared);
    if (have_trainer)
        dt_trainer_free(&t);
    unshare_buffers(w, &m, shared);
    dt_model_free(&m);
    dt_dataset_free(&train);
    dt_dataset_free(&test);
    return r;
}

dt_result dp_run(const options *o, dp_job *j)
{
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = j->ranks;
    if (o->backend)
        DT_CHECK(dt_backend_parse(o->backend, &lo.backend));
    lo.net = o->net ? o->net : "none";
    lo.timeout_s = 120;
    memset(j->res, 0, sizeof *j->res);
    fflush(stdout); /* forked ranks must not inherit unwritten output */
    DT_CHECK(dt_launch(&lo, dp_rank, j));
    /* on mpi, rank 0's result is in its process: the others say nothing */
    if (lo.backend == DT_BACKEND_MPI && dt_mpi_world_rank() > 0)
        return DT_OK;
    if (!j->res->done)
        return dt_fail(DT_ERR_INTERNAL, "--ranks: rank 0 reported no result");
    return DT_OK;
}

dp_result *dp_alloc(void)
{
    void *p = mmap(NULL, sizeof(dp_result), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void dp_release(dp_result *r)
{
    if (r)
        munmap(r, sizeof *r);
}

static void print_json(const options *o, const dp_job *j, size_t params)
{
    const dp_result *r = j->res;
    const dt_train_result *t = &r->run;
    printf("{\"model\": \"%s\", \"data\": \"%s\", \"params\": %zu, \"ranks\": %d, "
           "\"backend\": \"%s\", \"net\": \"%s\", \"batch_per_rank\": %ld, \"micro_batches\": "
           "%ld, \"steps\": %ld, \"update\": \"%s\", \"sync\": \"%s\", \"layout\": \"%s\", "
           "\"shard_optimizer\": %s, \"fsdp\": %s, \"prefetch\": %s, \"reshard\": %s, ",
           o->model, o->data, params, j->ranks, o->backend ? o->backend : "thread",
           o->net ? o->net : "none", o->batch, o->micro_batches, t->steps, r->update, r->sync,
           r->layout, o->shard_optimizer ? "true" : "false", o->fsdp ? "true" : "false",
           o->fsdp && !o->no_prefetch ? "true" : "false",
           o->fsdp && !o->no_reshard ? "true" : "false");
    dttrain_json_machine(stdout, o);
    printf(", \"step_ms_median\": %.4f, \"step_cpu_ms_median\": %.4f, \"sync_ms_median\": "
           "%.4f, \"samples_per_s\": %.1f, \"bytes_per_step\": %.0f, \"modeled_s\": %.6f, "
           "\"final_loss\": %.6f, \"accuracy\": %.6f, \"mem_peak_bytes\": %zu, "
           "\"states_peak_bytes\": %zu, \"rss_peak_kb\": %ld, "
           "\"params_hash\": \"%016llx\", \"seconds\": %.3f}\n",
           t->step_ms_median, t->step_cpu_ms_median, t->sync_ms_median, t->samples_per_s,
           t->bytes_per_step, t->modeled_s, (double)t->final_loss, (double)t->accuracy,
           r->mem_peak, r->states_peak, r->rss_peak_kb, (unsigned long long)r->params_hash,
           t->seconds);
}

int dttrain_parallel(const options *o)
{
    dt_model m;
    dt_result r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return dttrain_fail(r);
    size_t params = m.num_params;
    dt_model_free(&m);
    dp_result *res = dp_alloc();
    char tag[32];
    snprintf(tag, sizeof tag, "%ld rank%s", o->ranks, o->ranks > 1 ? "s" : "");
    dp_job j = {o, (int)o->ranks, o->epochs, 0, tag, res};
    r = res ? dp_run(o, &j) : dt_fail(DT_ERR_NOMEM, "--ranks: result block");
    const dt_train_result *t = res ? &res->run : NULL;
    if (r == DT_OK && !res->done)
        ; /* an mpi process other than rank 0's */
    else if (r == DT_OK && o->json)
        print_json(o, &j, params);
    else if (r == DT_OK)
        printf("done: %d ranks (%s), %ld steps, %.3f ms/step (median), %.0f samples/s, "
               "%.0f bytes sent/step/rank, modeled %.3f s on %s, final loss %.4f, "
               "test accuracy %.4f (sync %s, update %s)\n", j.ranks,
               o->backend ? o->backend : "thread", t->steps, t->step_ms_median, t->samples_per_s,
               t->bytes_per_step, t->modeled_s, o->net ? o->net : "none",
               (double)t->final_loss, (double)t->accuracy, res->sync, res->update);
    dp_release(res);
    return r == DT_OK ? 0 : dttrain_fail(r);
}
