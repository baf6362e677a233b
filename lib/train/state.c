/* state.c - a trainer's state for checkpoints (dt_train_state): the step,
 * the parameters, and what each hook keeps from one step to the next.
 *
 * The trainer cannot know what a hook keeps: a hook says so by being given
 * a state (dt_train_set_state: a function that visits its records, and
 * the optimizers it steps). A state belongs to the hook it was given for:
 * replacing the hook in its slot (dt_train_set_hook) leaves the entry with
 * another run or self, and it no longer counts. A hook with a self and no
 * state is refused by dt_train_state: a checkpoint that silently drops a
 * hook's state (error feedback's residuals, chapter 10 section 7) resumes
 * another run. */
#include "train_internal.h"

#include <string.h>

static const char *const slot_name[DT_TRAIN_SLOTS] = {"forward", "backward", "sync", "update",
                                                      "weight"};

static dt_hook *slot_at(dt_trainer *t, int i)
{
    dt_hook *slots[DT_TRAIN_SLOTS] = {&t->forward, &t->backward, &t->sync, &t->update,
                                      &t->weight};
    return slots[i];
}

static int slot_index(dt_trainer *t, const dt_hook *slot)
{
    for (int i = 0; i < DT_TRAIN_SLOTS; i++)
        if (slot_at(t, i) == slot)
            return i;
    return -1;
}

dt_result dt_train_set_state(dt_trainer *t, const dt_hook *slot, const dt_hook_state *s)
{
    int i = t && slot ? slot_index(t, slot) : -1;
    if (i < 0 || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_set_state: %s", !t ? "NULL trainer" :
                       !s ? "NULL state" : "slot is not one of the trainer's hooks");
    if (!slot->run)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_set_state: the %s hook \"%s\" runs "
                       "nothing", slot_name[i], slot->name ? slot->name : "?");
    t->states[i].run = slot->run;
    t->states[i].self = slot->self;
    t->states[i].state = *s;
    return DT_OK;
}

/* The state given for the hook now in slot i; NULL when none holds. */
static const dt_hook_state *state_of(dt_trainer *t, int i)
{
    const dt_hook *h = slot_at(t, i);
    if (h->run && t->states[i].run == h->run && t->states[i].self == h->self)
        return &t->states[i].state;
    return NULL;
}

const dt_hook_state *train_state_given(dt_trainer *t, const dt_hook *slot)
{
    int i = t && slot ? slot_index(t, slot) : -1;
    return i < 0 ? NULL : state_of(t, i);
}

/* The slot whose state covers slot i's self: i itself, another slot with
 * the same self and a state (ZeRO-1's sync shares the update's), or -1. */
static int covering(dt_trainer *t, int i)
{
    if (state_of(t, i))
        return i;
    for (int j = 0; j < DT_TRAIN_SLOTS; j++)
        if (j != i && slot_at(t, j)->self == slot_at(t, i)->self && state_of(t, j))
            return j;
    return -1;
}

static dt_result no_state(dt_trainer *t, int i, const char *who)
{
    const dt_hook *h = slot_at(t, i);
    return dt_fail(DT_ERR_UNSUPPORTED, "%s: the %s hook \"%s\" keeps state the trainer cannot "
                   "see (give it one with dt_train_set_state)", who, slot_name[i],
                   h->name ? h->name : "?");
}

dt_result dt_train_state(dt_trainer *t, dt_ckpt_io *io)
{
    if (!t || !t->model || !io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_state: NULL %s", io ? "trainer" : "io");
    if (t->batch)
        return dt_fail(DT_ERR_STATE, "dt_train_state: in the middle of a step");
    for (int i = 0; i < DT_TRAIN_SLOTS; i++) /* refuse before writing anything */
        if (slot_at(t, i)->self && covering(t, i) < 0)
            return no_state(t, i, "dt_train_state");
    dt_model *m = t->model;
    DT_CHECK(dt_ckpt_io_long(io, "trainer.step", &t->step));
    if (m->params)
        DT_CHECK(dt_ckpt_io_f32(io, "model.params", m->params, m->num_params));
    for (int i = 0; i < DT_TRAIN_SLOTS; i++) {
        const dt_hook_state *s = state_of(t, i);
        if (!s)
            continue;
        dt_hook *h = slot_at(t, i);
        DT_CHECK(dt_ckpt_io_push(io, slot_name[i]));
        DT_CHECK(dt_ckpt_io_expect_str(io, "hook", h->name ? h->name : ""));
        if (s->visit)
            DT_CHECK(s->visit(t, h->self, io));
        dt_ckpt_io_pop(io);
    }
    return DT_OK;
}

dt_result dt_train_optimizers(dt_trainer *t, dt_optimizer **o, int max, int *n)
{
    if (!t || !n || max < 0 || (max && !o))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_optimizers: %s", !t ? "NULL trainer" :
                       !n ? "NULL n" : "no room");
    enum { UPDATE = 3 };
    int j = covering(t, UPDATE);
    *n = 0;
    if (!t->update.self)
        return DT_OK;
    if (j < 0)
        return no_state(t, UPDATE, "dt_train_optimizers");
    const dt_hook_state *s = state_of(t, j);
    return s->optimizers ? s->optimizers(t, slot_at(t, j)->self, o, max, n) : DT_OK;
}
