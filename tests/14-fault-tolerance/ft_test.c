/* ft_test.c - lab 14's shared test code (ft_test.h). */
#include "ft_test.h"
#include "grader.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

ft_job ft_job_make(lab_strategy s, int ranks, const char *root)
{
    ft_job j;
    memset(&j, 0, sizeof j);
    j.strategy = s, j.ranks = ranks, j.backend = DT_BACKEND_THREAD, j.model_seed = 5;
    snprintf(j.root, sizeof j.root, "%s", root);
    return j;
}

static dt_result write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? DT_OK : dt_fail(DT_ERR_IO, "%s: cannot write", path);
}

/* ROOT/OUT.rR.f32: the parameters; ROOT/OUT.rR.opt: each optimizer's state
 * floats and its step (as a float count of updates). */
static dt_result write_out(lab_run *r, const ft_job *j)
{
    char path[FT_FILE];
    snprintf(path, sizeof path, "%s/%s.r%d.f32", j->root, j->out, r->rank);
    DT_CHECK(write_file(path, r->model.params, r->model.num_params * sizeof(float)));
    dt_optimizer *o;
    int n;
    DT_CHECK(dt_train_optimizers(&r->trainer, &o, 1, &n));
    size_t count = n == 1 && o->state ? (size_t)o->slots * o->count : 0;
    float *buf = malloc((count + 1) * sizeof *buf);
    if (!buf)
        return dt_fail(DT_ERR_NOMEM, "write_out");
    if (count)
        memcpy(buf, o->state, count * sizeof *buf);
    buf[count] = n == 1 ? (float)o->step : -1;
    snprintf(path, sizeof path, "%s/%s.r%d.opt", j->root, j->out, r->rank);
    dt_result res = write_file(path, buf, (count + 1) * sizeof *buf);
    free(buf);
    return res;
}

/* A snapshot of what a load may change, to see that a refused one did not. */
typedef struct {
    float *params, *state;
    size_t count;
    long step, opt_step;
    dt_sampler_pos pos;
    dt_rng augment;
} snapshot;

static dt_result take(lab_run *r, snapshot *s)
{
    dt_optimizer *o;
    int n;
    memset(s, 0, sizeof *s);
    DT_CHECK(dt_train_optimizers(&r->trainer, &o, 1, &n));
    s->count = n == 1 && o->state ? (size_t)o->slots * o->count : 0;
    s->params = malloc(r->model.num_params * sizeof(float));
    s->state = malloc((s->count + 1) * sizeof(float));
    if (!s->params || !s->state)
        return dt_fail(DT_ERR_NOMEM, "snapshot");
    memcpy(s->params, r->model.params, r->model.num_params * sizeof(float));
    if (s->count)
        memcpy(s->state, o->state, s->count * sizeof(float));
    s->step = r->trainer.step, s->opt_step = n == 1 ? o->step : -1;
    s->pos = r->pos, s->augment = r->augment;
    return DT_OK;
}

static int same(lab_run *r, const snapshot *s)
{
    dt_optimizer *o;
    int n;
    if (dt_train_optimizers(&r->trainer, &o, 1, &n) != DT_OK)
        return 0;
    return !memcmp(s->params, r->model.params, r->model.num_params * sizeof(float)) &&
           (!s->count || !memcmp(s->state, o->state, s->count * sizeof(float))) &&
           s->step == r->trainer.step && (n != 1 || s->opt_step == o->step) &&
           !memcmp(&s->pos, &r->pos, sizeof s->pos) &&
           !memcmp(&s->augment, &r->augment, sizeof s->augment);
}

static dt_result job_rank(dt_comm *w, void *arg)
{
    ft_job *j = arg;
    lab_run r;
    dt_failure plan;
    int me = dt_comm_rank(w);
    DT_CHECK(dt_failure_parse(j->plan, &plan));
    dt_result res = lab_run_init(&r, w, j->strategy, j->model_seed, &plan);
    snapshot before = {0};
    if (res == DT_OK && j->start != FT_FRESH) {
        res = take(&r, &before);
        if (res == DT_OK)
            res = j->start == FT_LOAD ? lab_load(&r, j->root) : lab_reshard_load(&r, j->root);
        if (j->backend == DT_BACKEND_THREAD && me < FT_MAX_RANKS) {
            j->result[me] = res;
            snprintf(j->message[me], sizeof j->message[me], "%s", dt_last_error());
            j->unchanged[me] = same(&r, &before);
        }
    }
    if (res == DT_OK)
        res = lab_train(&r, j->root, j->until, j->every);
    if (res == DT_OK && j->out)
        res = write_out(&r, j);
    free(before.params), free(before.state);
    lab_run_free(&r);
    return res;
}

dt_result ft_launch(ft_job *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = j->ranks;
    o.backend = j->backend;
    o.timeout_s = 20;
    return dt_launch(&o, job_rank, j);
}

void ft_in_fresh_process(const char *test, const ft_job *j)
{
    char var[FT_FILE + 256];
    snprintf(var, sizeof var, "FT_CHILD=%d %d %d %d %llu %ld %ld %s %s %s", (int)j->strategy,
             j->ranks, (int)j->backend, (int)j->start, (unsigned long long)j->model_seed,
             j->until, j->every, j->plan[0] ? j->plan : "-", j->out ? j->out : "-", j->root);
    const char *set[] = {var, NULL};
    dt_result r = dt_test_run_fresh(test, set, 60);
    EXPECT(r == DT_OK, "the run in a fresh process: %s", dt_last_error());
}

int ft_child(void)
{
    static char out[64];
    const char *v = getenv("FT_CHILD");
    if (!v)
        return 0;
    ft_job j;
    memset(&j, 0, sizeof j);
    int s, b, st;
    unsigned long long seed;
    EXPECT(sscanf(v, "%d %d %d %d %llu %ld %ld %95s %63s %4095s", &s, &j.ranks, &b, &st, &seed,
                  &j.until, &j.every, j.plan, out, j.root) == 10, "FT_CHILD='%s'", v);
    j.strategy = (lab_strategy)s, j.backend = (dt_backend)b, j.start = (ft_start)st;
    j.model_seed = seed;
    if (!strcmp(j.plan, "-"))
        j.plan[0] = '\0';
    j.out = strcmp(out, "-") ? out : NULL;
    dt_result r = ft_launch(&j);
    EXPECT(r == DT_OK, "%s ranks, resumed in a fresh process: %s", dt_backend_name(j.backend),
           dt_last_error());
    return 1;
}

void ft_tmpdir(char *dir, size_t cap)
{
    int n = snprintf(dir, cap, "%s/dtlab-ft-XXXXXX", dt_test_tmpdir());
    EXPECT(n > 0 && (size_t)n < cap, "temporary folder name too long");
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void ft_rmdir(const char *dir) { nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

unsigned char *ft_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "%s: %s", path, strerror(errno));
    if (!f) {
        *n = 0;
        return calloc(1, 1);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    EXPECT(buf && len >= 0 && fread(buf, 1, (size_t)len, f) == (size_t)len, "%s: read", path);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

void ft_spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    EXPECT(f != NULL, "%s: %s", path, strerror(errno));
    if (f)
        EXPECT(fwrite(data, 1, n, f) == n && fclose(f) == 0, "%s: write", path);
}

int ft_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

long ft_first_diff(const char *root, const char *a, const char *b, int ranks, int *rank)
{
    for (*rank = 0; *rank < ranks; ++*rank) {
        char pa[FT_FILE], pb[FT_FILE];
        size_t na, nb;
        snprintf(pa, sizeof pa, "%s/%s.r%d.f32", root, a, *rank);
        snprintf(pb, sizeof pb, "%s/%s.r%d.f32", root, b, *rank);
        unsigned char *x = ft_slurp(pa, &na), *y = ft_slurp(pb, &nb);
        long i = 0;
        if (na != nb || na == 0) {
            free(x), free(y);
            return 0;
        }
        while ((size_t)(i + 1) * 4 <= na && !memcmp(x + 4 * i, y + 4 * i, 4))
            i++;
        free(x), free(y);
        if ((size_t)i * 4 != na)
            return i;
    }
    return -1;
}
