/* test_train_optimizer.c - dt_train_optimizer, the optimizer of the
 * default update, as a checkpoint reads and writes it: a trainer that
 * takes over another's parameters and optimizer state between steps goes
 * on with the same bits; before the first update the state exists, zeroed;
 * an update that is not the default one is refused by name. */
#include "grader.h"
#include "dt/train.h"

#include <string.h>

/* Steps [first, last) of plain data: sample i of step t is row (t * 8 + i) % 64. */
static void steps(dt_trainer *t, const dt_dataset *d, int first, int last)
{
    float x[8 * 6];
    int32_t y[8];
    size_t idx[8];
    for (int s = first; s < last; s++) {
        for (size_t i = 0; i < 8; i++)
            idx[i] = ((size_t)s * 8 + i) % d->n;
        EXPECT_OK(dt_data_gather(d, idx, 8, x, NULL, y));
        dt_batch b = {x, NULL, y, 8, 1, 1};
        EXPECT_OK(dt_train_step(t, &b));
    }
}

static void trainer_for(dt_trainer *t, dt_model *m, dt_optim_config cfg)
{
    dt_trainer_config tc = {0};
    tc.optim = cfg;
    EXPECT_OK(dt_model_create_spec(m, "mlp:6,12,3", 5));
    EXPECT_OK(dt_trainer_init(t, m, NULL, &tc));
}

TEST(train_optimizer_state_resumes_bit_identical, 2)
{
    dt_dataset d;
    EXPECT_OK(dt_data_blobs(&d, 64, 6, 3, 2.0f, 4, 0));
    dt_optim_config cfgs[2] = {dt_sgd_config(0.1f, 0.9f, 0.01f), dt_adamw_config(0.01f)};
    for (int c = 0; c < 2; c++) {
        dt_model ma, mb;
        dt_trainer ta, tb;
        dt_optimizer *oa, *ob;
        trainer_for(&ta, &ma, cfgs[c]);
        trainer_for(&tb, &mb, cfgs[c]);
        steps(&ta, &d, 0, 3);
        /* b takes over a's parameters and optimizer at step 3 */
        EXPECT_OK(dt_train_optimizer(&ta, &oa));
        EXPECT_OK(dt_train_optimizer(&tb, &ob));
        EXPECT(oa->step == 3 && ob->step == 0, "%s: steps %ld and %ld, expected 3 and 0",
               c ? "adamw" : "sgd", oa->step, ob->step);
        EXPECT(ob->state && ob->slots == oa->slots && ob->count == ma.num_params,
               "%s: a fresh trainer's state: %p, %d slots of %zu (expected %d of %zu)",
               c ? "adamw" : "sgd", (void *)ob->state, ob->slots, ob->count, oa->slots,
               ma.num_params);
        size_t n = (size_t)oa->slots * oa->count;
        for (size_t i = 0; i < n; i++)
            EXPECT(ob->state[i] == 0, "%s: fresh state[%zu] = %g", c ? "adamw" : "sgd", i,
                   (double)ob->state[i]);
        memcpy(ob->state, oa->state, n * sizeof(float));
        ob->step = oa->step;
        memcpy(mb.params, ma.params, ma.num_params * sizeof(float));
        steps(&ta, &d, 3, 6);
        steps(&tb, &d, 3, 6);
        EXPECT(memcmp(ma.params, mb.params, ma.num_params * sizeof(float)) == 0,
               "%s: resumed at step 3, the parameters after step 6 differ",
               c ? "adamw" : "sgd");
        dt_trainer_free(&ta), dt_trainer_free(&tb);
        dt_model_free(&ma), dt_model_free(&mb);
    }
    dt_dataset_free(&d);
}

TEST(train_optimizer_refuses_other_updates, 1)
{
    dt_model m;
    dt_trainer t;
    dt_optimizer *o = NULL;
    trainer_for(&t, &m, dt_sgd_config(0.1f, 0, 0));
    EXPECT_ERR(dt_train_optimizer(NULL, &o), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_train_optimizer(&t, NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_train_optimizer(&t, &o));
    EXPECT(o && o->slots == 0 && o->state == NULL, "plain SGD: %d slots, state %p",
           o ? o->slots : -1, o ? (void *)o->state : NULL);
    EXPECT_OK(dt_train_use_fused_sgd(&t));
    EXPECT_ERR(dt_train_optimizer(&t, &o), DT_ERR_UNSUPPORTED);
    EXPECT(strstr(dt_last_error(), "fused_sgd") != NULL, "the message names the update: %s",
           dt_last_error());
    dt_trainer_free(&t);
    dt_model_free(&m);
}
