/* train.c - dttrain's runs on one rank, and what every run shares: the
 * data, the trainer's hooks chosen from the options, the progress lines
 * and the JSON. */
#include "dttrain.h"

#include <stdlib.h>
#include <string.h>

int dttrain_fail(dt_result r)
{
    fprintf(stderr, "dttrain: %s: %s\n", dt_strerror(r), dt_last_error());
    return 1;
}

dt_result dttrain_data(const options *o, const dt_model *m, dt_dataset *train, dt_dataset *test)
{
    uint64_t seed = o->seed;
    if (!strcmp(o->data, "digits")) {
        dt_dataset all;
        DT_CHECK(dt_data_load_digits(&all, NULL));
        dt_result r = dt_data_split(&all, 0.2, seed, train, test);
        dt_dataset_free(&all);
        return r;
    }
    size_t n = 4096 > 4 * (size_t)o->batch ? 4096 : 4 * (size_t)o->batch;
    if (!strcmp(o->data, "synthetic") && m->kind == DT_MODEL_GPT) {
        DT_CHECK(dt_data_sequences(train, n, m->max_seq, m->num_classes, seed, 0));
        return dt_data_sequences(test, 512, m->max_seq, m->num_classes, seed, 1 << 20);
    }
    if (!strcmp(o->data, "synthetic")) { /* centres 2 apart per feature: learnable, not trivial */
        DT_CHECK(dt_data_blobs(train, n, m->in_width, m->num_classes, 0.5f, seed, 0));
        return dt_data_blobs(test, 1024, m->in_width, m->num_classes, 0.5f, seed, 1 << 20);
    }
    /* spirals (options.c admits nothing else) */
    DT_CHECK(dt_data_spirals(train, n, m->num_classes, 0.02f, seed, 0));
    return dt_data_spirals(test, 1024, m->num_classes, 0.02f, seed, 1 << 20);
}

dt_trainer_config dttrain_trainer_config(const options *o, double compute_per_sample)
{
    dt_trainer_config tc = {0};
    int adamw = !strcmp(o->optim, "adamw");
    tc.optim = adamw ? dt_adamw_config((float)o->lr)
                     : dt_sgd_config((float)o->lr, (float)o->momentum, 0);
    if (o->weight_decay >= 0)
        tc.optim.weight_decay = (float)o->weight_decay;
    tc.path = o->reference ? DT_NN_REFERENCE : DT_NN_FAST;
    tc.clock = compute_per_sample > 0 ? DT_CLOCK_MODELED : DT_CLOCK_MEASURED;
    tc.forward_s = compute_per_sample * (double)(o->batch / o->micro_batches);
    return tc;
}

dt_result dttrain_trainer(const options *o, dt_trainer *t, dt_model *m, dt_comm *w,
                          double compute_per_sample)
{
    dt_trainer_config tc = dttrain_trainer_config(o, compute_per_sample);
    DT_CHECK(dt_trainer_init(t, m, w, &tc));
    dt_result r = DT_OK;
    dt_fsdp_config fc = {0, !o->no_prefetch, !o->no_reshard, NULL, NULL};
    if (o->fsdp && w)
        r = dt_train_use_fsdp(t, &fc);
    else if (o->shard_optimizer && w)
        r = dt_train_use_zero1(t);
    /* the fastest correct path is the default: fused SGD wherever it applies */
    else if (!o->no_fuse && !o->reference && o->micro_batches == 1 &&
             dt_train_fused_sgd_applies(t) == DT_OK)
        r = dt_train_use_fused_sgd(t);
    if (r != DT_OK)
        dt_trainer_free(t);
    return r;
}

const char *dttrain_update_name(const dt_trainer *t) { return t->update.name; }

const char *dttrain_layout_name(const dt_trainer *t)
{
    return t->num_acts > 0 && t->acts[0]->fm ? "feature_major" : "batch_major";
}

static void progress(void *arg, const dt_train_progress *p)
{
    const dttrain_progress *c = arg;
    if (!c->tag)
        printf("step %6ld  epoch %3ld  loss %.4f  test accuracy %s%.4f  %.0f samples/s\n",
               p->step, p->epoch, (double)p->loss, p->accuracy < 0 ? "-" : "",
               (double)p->accuracy, p->samples_per_s);
    else if (c->epochs)
        printf("[%s] epoch %2ld  loss %.4f  accuracy %.4f  %8.0f samples/s  %8.1f KB "
               "sent/step/rank\n", c->tag, p->epoch, (double)p->loss, (double)p->accuracy,
               p->samples_per_s, p->bytes_per_step / 1e3);
    else
        printf("[%s] step %6ld  loss %.4f  accuracy %.4f  %8.0f samples/s  %8.1f KB "
               "sent/step/rank\n", c->tag, p->step, (double)p->loss, (double)p->accuracy,
               p->samples_per_s, p->bytes_per_step / 1e3);
    fflush(stdout);
}

dt_train_config dttrain_run_config(const options *o, const dt_dataset *test, long epochs,
                                   dttrain_progress *lines)
{
    dt_train_config c = dt_train_defaults();
    c.batch = (size_t)o->batch;
    c.micro_steps = (int)o->micro_batches;
    c.steps = o->steps;
    c.epochs = epochs;
    c.seed = o->seed;
    c.time_budget_s = o->time_budget;
    c.report_every = epochs > 0 ? DT_TRAIN_EVERY_EPOCH : o->eval_every;
    c.test = test;
    if (!o->json) {
        lines->epochs = epochs > 0;
        c.progress = progress, c.progress_arg = lines;
    }
    return c;
}

void dttrain_json_machine(FILE *f, const options *o)
{
    /* The machine's side of the figures: BLAS threads, the BLAS, its
     * kernels and who chose them, the CPU (main has checked the settings) */
    dt_blas_info info;
    char members[512];
    dt_blas_info_get(&info);
    fprintf(f, "\"threads\": %ld, %s", o->threads,
            dt_blas_info_json(&info, members, sizeof members));
}

static void print_json(const options *o, const dt_model *m, const dt_trainer *t,
                       const dt_train_result *r)
{
    printf("{\"model\": \"%s\", \"data\": \"%s\", \"params\": %zu, \"batch\": %ld, "
           "\"micro_batches\": %ld, \"steps\": %ld, \"optim\": \"%s\", \"lr\": %g, "
           "\"update\": \"%s\", \"layout\": \"%s\", ", o->model, o->data, m->num_params,
           o->batch, o->micro_batches, r->steps, o->optim, o->lr, dttrain_update_name(t),
           dttrain_layout_name(t));
    dttrain_json_machine(stdout, o);
    printf(", \"step_ms_median\": %.4f, \"step_cpu_ms_median\": %.4f, \"forward_ms_median\": "
           "%.4f, \"backward_ms_median\": %.4f, \"update_ms_median\": %.4f, \"samples_per_s\": "
           "%.1f, \"final_loss\": %.6f, \"accuracy\": ", r->step_ms_median,
           r->step_cpu_ms_median, r->forward_ms_median, r->backward_ms_median,
           r->update_ms_median, r->samples_per_s, (double)r->final_loss);
    if (r->accuracy < 0)
        printf("null");
    else
        printf("%.6f", (double)r->accuracy);
    printf(", \"seconds\": %.3f}\n", r->seconds);
}

int dttrain_single(const options *o)
{
    dt_model m;
    dt_dataset train = {0}, test = {0};
    dt_trainer t;
    dt_train_result res;
    dt_result r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return dttrain_fail(r);
    r = dttrain_data(o, &m, &train, &test);
    if (r == DT_OK && o->dump)
        r = dttrain_dump(o, &m, &train);
    else if (r == DT_OK && (r = dttrain_trainer(o, &t, &m, NULL, 0)) == DT_OK) {
        dttrain_progress lines = {NULL, 0};
        dt_train_config c = dttrain_run_config(o, &test, o->epochs, &lines);
        r = dt_train(&t, &train, &c, &res);
        if (r == DT_OK && o->json)
            print_json(o, &m, &t, &res);
        else if (r == DT_OK)
            printf("done: %ld steps, %.3f ms/step (median), %.0f samples/s, final loss %.4f, "
                   "test accuracy %.4f (update %s, %s)\n", res.steps, res.step_ms_median,
                   res.samples_per_s, (double)res.final_loss, (double)res.accuracy,
                   dttrain_update_name(&t), dttrain_layout_name(&t));
        dt_trainer_free(&t);
    }
    dt_model_free(&m);
    dt_dataset_free(&train);
    dt_dataset_free(&test);
    return r == DT_OK ? 0 : dttrain_fail(r);
}
