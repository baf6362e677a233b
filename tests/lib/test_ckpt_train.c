/* test_ckpt_train.c - a trainer's state through dt/ckpt.h, across
 * processes: for each strategy of the library (one rank, DDP, ZeRO-1,
 * FSDP, own layers, fused SGD, and DP x TP x PP: tensor-parallel shards
 * of a GPT in an interleaved pipeline, replicated), 12 steps straight
 * against 7 steps, a checkpoint (a file per rank and a manifest), and the
 * 5 last steps in a NEW PROCESS (a fresh exec of this binary) from a model
 * made from another seed: every rank's parameters must be the same bits. Each step's batch
 * comes from the distributed sampler's position and is perturbed by an
 * RNG stream, both saved beside the trainer's state, so that every piece
 * of state changes the result: a resume that drops any one of them
 * (sampler, RNG, optimizer) differs, and a checkpoint of another
 * strategy is refused by name. The resumed run reads only the files: no
 * state survives in memory. */
#include "grader.h"
#include "ckpt_util.h"
#include "test_par_util.h"
#include "dt/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC "mlp:6,10,8,3" /* 185 parameters: not a multiple of 2 or 3 ranks (uneven blocks) */
enum { STEPS = 12, SAVED_AT = 7, BATCH = 4, DATA = 40, MAX_RANKS = 8 };
/* DP x TP x PP: 2 x 2 x 2 ranks, interleaved 1F1B of 2 chunks a rank (2
 * runs of layers each), M micro-batches of B3D sequences of T_SEQ tokens */
enum { D3 = 2, T3 = 2, P3 = 2, V3 = 2, M3 = 2, B3D = 2, T_SEQ = 8 };

typedef enum {
    ONE_SGD, DDP_ADAMW, ZERO1_ADAMW, FSDP_ADAMW, OWN_LAYERS, FUSED_SGD, PARALLEL_3D, NUM_CONFIGS
} config;
static const char *const config_name[NUM_CONFIGS] = {
    "one rank, SGD with momentum", "DDP on 2 ranks, AdamW", "ZeRO-1 on 3 ranks, AdamW",
    "FSDP on 2 ranks, AdamW", "own layers 0 and 2, SGD with momentum", "fused SGD",
    "DP x TP x PP = 2 x 2 x 2, interleaved 1F1B, AdamW"};
static const int config_ranks[NUM_CONFIGS] = {1, 2, 3, 2, 1, 1, D3 * T3 * P3};

/* What a launch does: train straight, train and save, or load and train on
 * (dropping one piece of the loaded state, for the controls). */
typedef enum { STRAIGHT, FIRST, RESUME, DROP_SAMPLER, DROP_RNG, DROP_OPTIMIZER, MISMATCH } phase;
static const char *const phase_name[] = {"straight", "first", "resume", "drop-sampler",
                                         "drop-rng", "drop-optimizer", "mismatch"};

typedef struct {
    config c;
    phase p;
    char dir[CK_PATH];
} job;

typedef struct {
    dt_model m;
    dt_trainer t;
    dt_parallel x;           /* PARALLEL_3D: its shard of the GPT and its trainer */
    dt_schedule *sched;
    int have_x;
    dt_model *model;         /* &m or &x.model */
    dt_trainer *tr;          /* &t or &x.trainer */
    dt_dataset d;
    dt_sampler sampler;
    dt_sampler_pos pos;
    dt_rng augment;          /* noise on each batch's inputs */
} run;

/* The GPT on the 3D layout: the ranks of a replica see the same batches
 * (the sampler and the noise are the replica's). */
static dt_result setup_3d(run *s, dt_comm *w, const dt_trainer_config *tc, uint64_t model_seed)
{
    dt_gpt_config cfg = par_gpt_config(2);
    dt_model whole;
    int replica = dt_comm_rank(w) / (T3 * P3); /* dt_groups_create: DP outermost */
    dt_rng_init(&s->augment, 11, (uint64_t)replica);
    DT_CHECK(dt_data_sequences(&s->d, DATA, T_SEQ, cfg.vocab, 9, 0));
    DT_CHECK(dt_sampler_init(&s->sampler, DATA, D3, replica, 1, 1, 9));
    DT_CHECK(dt_sched_named(&s->sched, "interleaved", P3, V3, M3));
    DT_CHECK(dt_gpt_create(&whole, &cfg, model_seed));
    dt_result r = dt_parallel_init(&s->x, w, &whole, T3, P3, s->sched, tc);
    dt_model_free(&whole);
    DT_CHECK(r);
    s->have_x = 1;
    s->model = &s->x.model, s->tr = &s->x.trainer;
    return DT_OK;
}

static dt_result setup(run *s, dt_comm *w, config c, uint64_t model_seed)
{
    int rank = dt_comm_rank(w), ranks = dt_comm_size(w);
    dt_trainer_config tc = {0};
    tc.optim = c == ONE_SGD || c == OWN_LAYERS ? dt_sgd_config(0.05f, 0.9f, 0.01f)
             : c == FUSED_SGD                  ? dt_sgd_config(0.05f, 0, 0)
                                               : dt_adamw_config(0.01f);
    memset(s, 0, sizeof *s);
    s->model = &s->m, s->tr = &s->t;
    if (c == PARALLEL_3D)
        return setup_3d(s, w, &tc, model_seed);
    dt_rng_init(&s->augment, 11, (uint64_t)rank);
    DT_CHECK(dt_data_blobs(&s->d, DATA, 6, 3, 2.0f, 8, 0));
    DT_CHECK(dt_sampler_init(&s->sampler, DATA, ranks, rank, 1, 1, 9));
    DT_CHECK(dt_model_create_spec(&s->m, SPEC, model_seed));
    DT_CHECK(dt_trainer_init(&s->t, &s->m, w, &tc));
    if (c == ZERO1_ADAMW)
        DT_CHECK(dt_train_use_zero1(&s->t));
    if (c == FSDP_ADAMW) {
        dt_fsdp_config fc = {60, 1, 1, NULL, NULL}; /* units of >= 60 parameters: 3 of them */
        DT_CHECK(dt_train_use_fsdp(&s->t, &fc));
    }
    if (c == OWN_LAYERS) {
        unsigned char own[3] = {1, 0, 1};
        DT_CHECK(dt_train_use_own_layers(&s->t, own));
    }
    if (c == FUSED_SGD)
        DT_CHECK(dt_train_use_fused_sgd(&s->t));
    return DT_OK;
}

static void teardown(run *s)
{
    if (s->have_x) {
        dt_parallel_free(&s->x);
    } else {
        dt_trainer_free(&s->t);
        dt_model_free(&s->m);
    }
    dt_sched_free(s->sched);
    dt_dataset_free(&s->d);
}

/* A step of the 3D layout: the replica's M3 micro-batches, a token in four
 * replaced by the noise stream's. */
static dt_result step_3d(run *s)
{
    enum { N = M3 * B3D };
    size_t idx[N];
    int32_t tok[N * T_SEQ], y[N * T_SEQ];
    DT_CHECK(dt_sampler_next(&s->sampler, &s->pos, N, idx));
    DT_CHECK(dt_data_gather(&s->d, idx, N, NULL, tok, y));
    for (size_t i = 0; i < N * T_SEQ; i++)
        if (dt_rng_below(&s->augment, 4) == 0)
            tok[i] = (int32_t)dt_rng_below(&s->augment, 32); /* par_gpt_config's vocabulary */
    dt_batch b = {NULL, tok, y, B3D, T_SEQ, M3};
    return dt_train_step(s->tr, &b);
}

static dt_result steps_until(run *s, long last)
{
    size_t idx[BATCH];
    float x[BATCH * 6];
    int32_t y[BATCH];
    while (s->have_x && s->tr->step < last)
        DT_CHECK(step_3d(s));
    while (!s->have_x && s->t.step < last) {
        DT_CHECK(dt_sampler_next(&s->sampler, &s->pos, BATCH, idx));
        DT_CHECK(dt_data_gather(&s->d, idx, BATCH, x, NULL, y));
        for (size_t i = 0; i < BATCH * 6; i++)
            x[i] += 0.25f * dt_rng_normal(&s->augment);
        dt_batch b = {x, NULL, y, BATCH, 1, 1};
        DT_CHECK(dt_train_step(&s->t, &b));
    }
    return DT_OK;
}

/* Everything the next steps depend on, one function both ways. */
static dt_result state(run *s, dt_ckpt_io *io)
{
    DT_CHECK(dt_train_state(s->tr, io));
    DT_CHECK(dt_sampler_state(&s->sampler, &s->pos, io, "sampler"));
    return dt_ckpt_io_rng(io, "augment", &s->augment);
}

/* Each rank its shard, then rank 0 the manifest of every rank's file. */
static dt_result save(run *s, dt_comm *w, const char *dir)
{
    char path[CK_FILE];
    int rank = dt_comm_rank(w), ranks = dt_comm_size(w);
    dt_ckpt_io *io;
    dt_ckpt_file_info mine, all[MAX_RANKS];
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, rank));
    DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, rank, ranks));
    DT_CHECK(dt_ckpt_io_end(io, state(s, io), &mine));
    uint64_t entry[2] = {mine.bytes, mine.checksum}, table[2 * MAX_RANKS];
    DT_CHECK(dt_allgather(entry, table, sizeof entry, DT_U8, w));
    if (rank != 0)
        return DT_OK;
    for (int k = 0; k < ranks; k++)
        all[k] = (dt_ckpt_file_info){table[2 * k], (uint32_t)table[2 * k + 1]};
    DT_CHECK(dt_ckpt_io_save_manifest(&io, dir, ranks, all));
    return dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &s->tr->step), NULL);
}

/* The manifest first (this rank's entry in it), then the shard, checked
 * against the entry, then the state. */
static dt_result load(run *s, dt_comm *w, const char *dir)
{
    char path[CK_FILE];
    int rank = dt_comm_rank(w), ranks = dt_comm_size(w);
    long step;
    dt_ckpt_io *io;
    dt_ckpt_file_info entry;
    DT_CHECK(dt_ckpt_io_load_manifest(&io, dir, ranks));
    dt_result r = dt_ckpt_manifest_shard(dt_ckpt_io_reader(io), rank, &entry);
    DT_CHECK(dt_ckpt_io_end(io, r == DT_OK ? dt_ckpt_io_long(io, "step", &step) : r, NULL));
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, dir, rank));
    DT_CHECK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, rank, ranks));
    r = dt_ckpt_verify(dt_ckpt_io_reader(io), &entry);
    DT_CHECK(dt_ckpt_io_end(io, r == DT_OK ? state(s, io) : r, NULL));
    if (s->tr->step != step)
        return dt_fail(DT_ERR_MISMATCH, "the manifest says step %ld, the shard %ld", step,
                       s->tr->step);
    return DT_OK;
}

/* Each rank writes its model's parameters to DIR/PHASE.rR.f32 (under FSDP
 * the whole model's, gathered; under TP its shard's). */
static dt_result write_params(run *s, dt_comm *w, const job *j)
{
    size_t P = s->model->num_params;
    float *p = s->model->params, *all = NULL;
    if (!p) { /* FSDP holds shards: gather them (collective) */
        all = malloc(P * sizeof *all);
        DT_CHECK(dt_train_fsdp_params(s->tr, all));
        p = all;
    }
    char path[CK_FILE];
    snprintf(path, sizeof path, "%s/%s.r%d.f32", j->dir, phase_name[j->p], dt_comm_rank(w));
    ck_spit(path, p, P * sizeof *p);
    free(all);
    return DT_OK;
}

/* After a good load, one piece of state put back as a fresh run has it. */
static dt_result drop(run *s, dt_comm *w, phase p)
{
    if (p == DROP_SAMPLER)
        s->pos = (dt_sampler_pos){0, 0};
    if (p == DROP_RNG)
        dt_rng_init(&s->augment, 11, (uint64_t)dt_comm_rank(w));
    if (p == DROP_OPTIMIZER) {
        dt_optimizer *o[8];
        int n;
        DT_CHECK(dt_train_optimizers(s->tr, o, 8, &n));
        for (int i = 0; i < n && i < 8; i++) {
            if (o[i]->state)
                memset(o[i]->state, 0, (size_t)o[i]->slots * o[i]->count * sizeof(float));
            o[i]->step = 0;
        }
    }
    return DT_OK;
}

static dt_result job_rank(dt_comm *w, void *arg)
{
    const job *j = arg;
    run s;
    /* a resumed run starts from other parameters: only the file can make them right */
    dt_result r = setup(&s, w, j->c, j->p >= RESUME ? 77 : 5);
    if (r == DT_OK && j->p >= RESUME)
        r = load(&s, w, j->dir);
    if (r == DT_OK)
        r = drop(&s, w, j->p);
    if (r == DT_OK)
        r = steps_until(&s, j->p == FIRST ? SAVED_AT : STEPS);
    if (r == DT_OK && j->p == FIRST)
        r = save(&s, w, j->dir);
    if (r == DT_OK && j->p != FIRST)
        r = write_params(&s, w, j);
    teardown(&s);
    return r;
}

static dt_result launch(const job *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = config_ranks[j->c];
    return dt_launch(&o, job_rank, (void *)j);
}

/* In the fresh process: DT_CKPT_TEST_CHILD="PHASE CONFIG DIR". 1 when this
 * process is one (it has run its launch). */
static int child(void)
{
    const char *v = getenv("DT_CKPT_TEST_CHILD");
    if (!v)
        return 0;
    job j;
    int p, c;
    EXPECT(sscanf(v, "%d %d %4095s", &p, &c, j.dir) == 3 && p >= RESUME && p < MISMATCH &&
           c >= 0 && c < NUM_CONFIGS, "DT_CKPT_TEST_CHILD='%s'", v);
    j.p = (phase)p, j.c = (config)c;
    dt_result r = launch(&j);
    EXPECT(r == DT_OK, "%s, %s in a fresh process: %s", config_name[c], phase_name[p],
           dt_last_error());
    return 1;
}

/* Runs phase p of config c in a fresh exec of this binary's test `test`. */
static void in_fresh_process(const char *test, config c, phase p, const char *dir)
{
    char var[CK_FILE + 64];
    snprintf(var, sizeof var, "DT_CKPT_TEST_CHILD=%d %d %s", (int)p, (int)c, dir);
    const char *set[] = {var, NULL};
    dt_result r = dt_test_run_fresh(test, set, 60);
    EXPECT(r == DT_OK, "%s, %s: %s", config_name[c], phase_name[p], dt_last_error());
}

/* -1 when phases a and b left the same bits on every rank of config c,
 * else the first float that differs, on rank *rank. */
static long first_diff(const char *dir, config c, phase a, phase b, int *rank)
{
    for (*rank = 0; *rank < config_ranks[c]; ++*rank) {
        char pa[CK_FILE], pb[CK_FILE];
        size_t na, nb;
        snprintf(pa, sizeof pa, "%s/%s.r%d.f32", dir, phase_name[a], *rank);
        snprintf(pb, sizeof pb, "%s/%s.r%d.f32", dir, phase_name[b], *rank);
        unsigned char *x = ck_slurp(pa, &na), *y = ck_slurp(pb, &nb);
        EXPECT(na == nb && na > 0, "%s and %s: %zu and %zu bytes", pa, pb, na, nb);
        long i = 0;
        while ((size_t)(i + 1) * 4 <= na && !memcmp(x + 4 * i, y + 4 * i, 4))
            i++;
        free(x), free(y);
        if ((size_t)i * 4 != na)
            return i;
    }
    return -1;
}

static void straight_and_first(job *j)
{
    j->p = STRAIGHT;
    EXPECT(launch(j) == DT_OK, "%s, 12 steps: %s", config_name[j->c], dt_last_error());
    j->p = FIRST;
    EXPECT(launch(j) == DT_OK, "%s, 7 steps and a checkpoint: %s", config_name[j->c],
           dt_last_error());
}

TEST_T(ckpt_train_resumes_bit_identical_in_a_new_process, 4, 120)
{
    dt_test_see("lib/include/dt/train.h, checkpoints");
    if (child())
        return;
    for (int c = 0; c < PARALLEL_3D; c++) {
        job j = {(config)c, STRAIGHT, ""};
        ck_tmpdir(j.dir, sizeof j.dir);
        straight_and_first(&j);
        in_fresh_process("ckpt_train_resumes_bit_identical_in_a_new_process", j.c, RESUME,
                         j.dir);
        int rank;
        long i = first_diff(j.dir, j.c, STRAIGHT, RESUME, &rank);
        EXPECT(i < 0, "%s: resumed in a new process after %d of %d steps, parameter %ld of "
               "rank %d differs from the run that never stopped", config_name[c], SAVED_AT,
               STEPS, i, rank);
        ck_rmdir(j.dir);
    }
}

/* The pipeline runner takes own_layers' update over, with its state: a
 * trainer of tensor-parallel stages in a replicated pipeline saves and
 * loads the optimizers of each rank's two runs of layers (and a resume
 * that zeroes them differs, so the test sees them). */
TEST_T(ckpt_train_dp_tp_pp_resumes_bit_identical_in_a_new_process, 2, 120)
{
    dt_test_see("lib/include/dt/train.h, checkpoints");
    if (child())
        return;
    job j = {PARALLEL_3D, STRAIGHT, ""};
    ck_tmpdir(j.dir, sizeof j.dir);
    straight_and_first(&j);
    const char *self = "ckpt_train_dp_tp_pp_resumes_bit_identical_in_a_new_process";
    in_fresh_process(self, j.c, RESUME, j.dir);
    int rank;
    long i = first_diff(j.dir, j.c, STRAIGHT, RESUME, &rank);
    EXPECT(i < 0, "%s: resumed in a new process after %d of %d steps, parameter %ld of rank %d "
           "differs from the run that never stopped", config_name[j.c], SAVED_AT, STEPS, i, rank);
    in_fresh_process(self, j.c, DROP_OPTIMIZER, j.dir);
    EXPECT(first_diff(j.dir, j.c, STRAIGHT, DROP_OPTIMIZER, &rank) >= 0, "%s: a resume that "
           "drops the optimizers equals the run that never stopped: the test could not see "
           "them", config_name[j.c]);
    ck_rmdir(j.dir);
}

/* Loading config c's checkpoint into a trainer of config `into`. */
static dt_result mismatch_rank(dt_comm *w, void *arg)
{
    const job *j = arg;
    run s;
    dt_result r = setup(&s, w, j->c, 77);
    float before = r == DT_OK ? s.m.params[0] : 0;
    if (r == DT_OK) {
        r = load(&s, w, j->dir);
        if (r == DT_OK)
            r = dt_fail(DT_ERR_INTERNAL, "loaded a checkpoint of another strategy");
        else if (s.m.params[0] != before || s.t.step != 0)
            r = dt_fail(DT_ERR_INTERNAL, "a refused load changed the trainer");
    }
    teardown(&s);
    return r;
}

TEST_T(ckpt_train_every_piece_of_state_matters, 2, 120)
{
    dt_test_see("lib/include/dt/train.h, checkpoints");
    if (child())
        return;
    job j = {ZERO1_ADAMW, STRAIGHT, ""};
    ck_tmpdir(j.dir, sizeof j.dir);
    straight_and_first(&j);
    phase drops[3] = {DROP_SAMPLER, DROP_RNG, DROP_OPTIMIZER};
    for (int i = 0; i < 3; i++) {
        in_fresh_process("ckpt_train_every_piece_of_state_matters", j.c, drops[i], j.dir);
        int rank;
        EXPECT(first_diff(j.dir, j.c, STRAIGHT, drops[i], &rank) >= 0, "%s: a resume that drops %s "
               "equals the run that never stopped: the test could not see it", config_name[j.c],
               phase_name[drops[i]] + 5);
    }
    /* the checkpoint of ZeRO-1 on 3 ranks is no DDP state on 3 ranks */
    j.c = DDP_ADAMW;
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 3;
    dt_result r = dt_launch(&o, mismatch_rank, &j);
    EXPECT(r == DT_ERR_INVALID_ARG && strstr(dt_last_error(), "update.hook") &&
           strstr(dt_last_error(), "zero1") && strstr(dt_last_error(), "rank-0000"),
           "loading ZeRO-1's checkpoint into DDP: %s: %s (expected DT_ERR_INVALID_ARG naming "
           "the file and the update hook)", dt_strerror(r), dt_last_error());
    ck_rmdir(j.dir);
}

/* A hook that keeps state the trainer was not told about. */
static dt_result counting_sync(dt_trainer *t, void *self)
{
    (void)t;
    (*(long *)self)++;
    return DT_OK;
}

static dt_result counter_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    (void)t;
    return dt_ckpt_io_long(io, "count", self);
}

static dt_result optimizers_rank(dt_comm *w, void *arg)
{
    const job *j = arg;
    run s;
    dt_optimizer *o[8];
    int n = -1;
    dt_result r = setup(&s, w, j->c, 5);
    if (r == DT_OK)
        r = dt_train_optimizers(s.tr, o, 8, &n);
    /* FSDP: 3 units; own layers: 2 runs; the 3D layout: 2 chunks of layers a rank */
    int want[NUM_CONFIGS] = {1, 1, 1, 3, 2, 0, V3};
    if (r == DT_OK && n != want[j->c])
        r = dt_fail(DT_ERR_MISMATCH, "%s: %d optimizers, expected %d", config_name[j->c], n,
                    want[j->c]);
    for (int i = 0; r == DT_OK && i < n; i++)
        if (!o[i] || o[i]->step != 0)
            r = dt_fail(DT_ERR_MISMATCH, "%s: optimizer %d", config_name[j->c], i);
    teardown(&s);
    return r;
}

TEST(ckpt_train_refuses_a_hook_whose_state_it_cannot_see, 1)
{
    dt_test_see("lib/include/dt/train.h, checkpoints");
    char dir[CK_PATH], path[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/rank-00000.dtck", dir);
    dt_model m;
    dt_trainer t;
    long count = 0, loaded = 0;
    EXPECT_OK(dt_model_create_spec(&m, SPEC, 5));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, NULL));
    dt_train_set_hook(&t.sync, (dt_hook){"counting", counting_sync, NULL, NULL, &count});
    dt_ckpt_io *io;
    EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_ERR(dt_ckpt_io_end(io, dt_train_state(&t, io), NULL), DT_ERR_UNSUPPORTED);
    EXPECT(strstr(dt_last_error(), "sync hook \"counting\""), "names the hook: %s",
           dt_last_error());
    EXPECT(!ck_exists(path), "a refused state left a file");
    dt_optimizer *o;
    int n;
    EXPECT_OK(dt_train_optimizers(&t, &o, 1, &n)); /* the update is still the default */
    EXPECT(n == 1, "%d optimizers", n);
    EXPECT_OK(dt_train_set_state(&t, &t.sync, &(dt_hook_state){counter_state, NULL}));
    count = 42;
    EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, dt_train_state(&t, io), NULL));
    dt_train_set_hook(&t.sync, (dt_hook){"counting", counting_sync, NULL, NULL, &loaded});
    EXPECT_ERR(dt_train_state(&t, (dt_ckpt_io *)1), DT_ERR_UNSUPPORTED); /* another self */
    EXPECT_OK(dt_train_set_state(&t, &t.sync, &(dt_hook_state){counter_state, NULL}));
    EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, dt_train_state(&t, io), NULL));
    EXPECT(loaded == 42, "the hook's state came back as %ld", loaded);
    EXPECT_ERR(dt_train_set_state(&t, (dt_hook *)&count, &(dt_hook_state){NULL, NULL}),
               DT_ERR_INVALID_ARG);
    dt_trainer_free(&t);
    dt_model_free(&m);
    for (int c = 0; c < NUM_CONFIGS; c++) {
        job j = {(config)c, STRAIGHT, ""};
        dt_launch_opts lo;
        dt_launch_opts_init(&lo);
        lo.nranks = config_ranks[c];
        EXPECT(dt_launch(&lo, optimizers_rank, &j) == DT_OK, "%s", dt_last_error());
    }
    ck_rmdir(dir);
}
