/* async.h - lab 04: asynchronous training. Read chapters/04-async.md first.
 *
 * Two ways of training without waiting for the slowest worker:
 *
 *  - a PARAMETER SERVER. Ranks 0 .. S-1 are servers: server s holds shard s
 *    of the flat parameter vector. The other ranks are workers. A worker
 *    pulls every shard, computes a gradient on its own batch, pushes each
 *    shard of the gradient back to the server that owns it, and starts
 *    again. A server applies each gradient as it arrives (asynchronous SGD)
 *    or, as the baseline, waits for one gradient from every worker and
 *    applies their mean (synchronous SGD). It may bound the staleness of
 *    what it applies.
 *  - HOGWILD!: every rank is a worker, and all of them update one shared
 *    parameter vector without any lock (a window of one machine's shared
 *    memory: threads, processes or MPI ranks of one machine).
 *
 * The tasks, in order (each one a section of the chapter):
 *   1. lab_shard_range                    which part of the vector a server owns
 *   2. lab_ps_worker                      the worker's loop: pull, compute, push
 *   3. lab_ps_server, lab_ps_apply        the server's loop; asynchronous and
 *                                         synchronous updates, staleness records
 *   4. lab_ps_admit                       when a server may answer a pull
 *                                         (synchronous rounds, bounded staleness)
 *   5. lab_hogwild_read, lab_hogwild_apply, lab_hogwild_worker
 *   6. lab_ps_predict_sync                predict, then measure: the modeled
 *                                         time of a synchronous run (9.1)
 *
 * The code outside the fences (common.c, launch.c and the parts of ps.c
 * and hogwild.c around them) is given: data, model, gradients, launching,
 * and the records the tests read. */
#ifndef LAB_ASYNC_H
#define LAB_ASYNC_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/data.h"
#include "dt/net.h"
#include "dt/nn.h"

#include <stdatomic.h>

/* The lab's model: an MLP 64 -> 32 -> 10 on the 8x8 digits. */
#define LAB_IN 64
#define LAB_HIDDEN 32
#define LAB_CLASSES 10

#define LAB_MAX_SERVERS 8
#define LAB_MAX_WORKERS 32
#define LAB_MAX_RANKS (LAB_MAX_SERVERS + LAB_MAX_WORKERS)

/* ================================================================ messages
 *
 * Every message from a worker to a server starts with a header of LAB_HDR
 * int32 (dt_recv_any needs one fixed count for "any message"):
 *
 *   {LAB_OP_PULL, 0, 0, 0}        "send me your shard". The server answers,
 *                                 when lab_ps_admit allows it, with a reply
 *                                 header {version, stop, 0, 0}; unless stop
 *                                 is 1 the shard's parameters follow
 *                                 (count floats, count from lab_shard_range).
 *   {LAB_OP_PUSH, version, 0, 0}  a gradient follows (count floats), computed
 *                                 on the shard of that version. No answer.
 *   {LAB_OP_BYE, 0, 0, 0}         the worker has stopped (sent to servers
 *                                 1 .. S-1 when server 0 said stop).
 *
 * Only server 0 ever says stop: it counts the run's budget. A worker pulls
 * from the servers in order 0, 1, ..., S-1, each pull answered before the
 * next is sent (this order keeps bounded staleness free of deadlock, see
 * the chapter); it pushes to every server. */
#define LAB_HDR 4
enum { LAB_OP_PULL = 1, LAB_OP_PUSH = 2, LAB_OP_BYE = 3 };

/* ================================================================ configuration */

typedef struct {
    int servers;        /* S >= 1: ranks 0 .. S-1; ranks S .. N-1 are workers */
    int updates;        /* G: gradients applied in all (asynchronous); the
                           synchronous run makes G / K rounds of K gradients */
    int sync;           /* 1: synchronous baseline; 0: asynchronous */
    int bound;          /* staleness bound s >= 0 (asynchronous only); -1: none */
    int batch;          /* samples per gradient */
    float lr;           /* SGD step size */
    double compute_s;   /* modeled seconds of one gradient (0: none); the worker
                           also sleeps, keeping wall time in step with its
                           modeled clock, so that messages reach the servers
                           in about the order of the modeled clocks */
    int slow_worker;    /* this worker is a straggler (-1: none) ... */
    double slow_compute_s; /* ... whose gradients cost this much instead */
    uint64_t seed;      /* initial parameters and batches */
    const dt_dataset *train;
} lab_ps_config;

/* A config of the tests' defaults: 1 server, 300 updates, asynchronous, no
 * bound, batch 16, lr 0.1, no modeled compute, no straggler, seed 1. */
lab_ps_config lab_ps_defaults(const dt_dataset *train);

/* What a run leaves behind. Inside the run each rank writes its own fields
 * of a result of its own (the res that lab_ps_server and lab_ps_worker
 * get); lab_ps_launch gathers them into the caller's, whatever the backend
 * (launch.c). lab_ps_launch allocates the arrays; lab_ps_result_free frees
 * them. */
typedef struct {
    int servers, workers;
    size_t num_params;
    float *params;                 /* the final parameters: each server writes its shard */
    int *staleness;                /* servers x updates: row s lists, in the order
                                      server s applied them, the staleness of
                                      its gradients (lab_ps_record) */
    int applied[LAB_MAX_SERVERS];  /* gradients applied by each server */
    int pushed[LAB_MAX_WORKERS];   /* gradients pushed by each worker */
    double clock[LAB_MAX_RANKS];   /* each rank's modeled clock when it finished */
    /* Optional trace of server 0 (S = 1 only): about every trace_every
     * versions (when it answers a pull) and at the end, the version, the
     * modeled clock and a copy of the parameters (for the chapter's figure).
     * Set trace_every before lab_ps_launch; 0: no trace. */
    int trace_every, trace_len;
    int *trace_version;
    double *trace_clock;
    float *trace_params;           /* trace_len x num_params */
} lab_ps_result;

void lab_ps_result_free(lab_ps_result *res);

/* Starts opts->nranks ranks on opts->backend (thread, proc or mpi; its
 * out and out_bytes are the launcher's own): ranks < cfg->servers run
 * lab_ps_server, the others lab_ps_worker. Fills res, also when a rank
 * failed (with what the ranks had recorded). */
dt_result lab_ps_launch(const dt_launch_opts *opts, const lab_ps_config *cfg,
                        lab_ps_result *res);

/* ================================================================ given helpers */

/* The data: the digits set split 80/20 into train and test (seed 7). */
dt_result lab_load_digits(dt_dataset *train, dt_dataset *test);

/* A worker's model and batch buffers. */
typedef struct {
    dt_model model;          /* params: what the worker computes on; grads: its gradient */
    dt_acts *acts;
    const dt_dataset *train;
    int batch;
    uint64_t seed;
    double compute_s;        /* modeled seconds of one gradient (0: not modeled) */
    size_t *idx;
    float *x;
    int32_t *y;
    int paced;               /* wall time is kept in step with the modeled clock */
    double wall0, clock0;    /* from this wall time and clock on */
} lab_trainer;

dt_result lab_trainer_init(lab_trainer *t, const dt_dataset *train, int batch, uint64_t seed,
                           double compute_s);
void lab_trainer_free(lab_trainer *t);

/* The gradient of the mean loss of batch (worker, step) at t->model.params,
 * into t->model.grads (overwritten). The batch is a pure function of (seed,
 * worker, step): samples dt_hash64(seed, worker << 32 | step, k) mod n. When
 * comm is not NULL and t->compute_s > 0, charges t->compute_s to the
 * modeled clock and sleeps until the wall time since the first gradient matches
 * the modeled time since then. */
dt_result lab_trainer_gradient(lab_trainer *t, int worker, int step, dt_comm *comm,
                               float *loss);

/* Accuracy on d of the lab's MLP with the given parameters. */
dt_result lab_accuracy(const float *params, size_t num_params, const dt_dataset *d,
                       float *accuracy);

/* The number of parameters of the lab's MLP (64*32 + 32 + 32*10 + 10). */
size_t lab_num_params(void);

/* ================================================================ task 1 */

/* Splits n parameters into `parts` contiguous shards, as even as possible:
 * shard p has n / parts elements, plus one for the first n % parts shards,
 * and starts where shard p-1 ends. n >= parts >= 1, 0 <= part < parts, else
 * DT_ERR_INVALID_ARG. */
dt_result lab_shard_range(size_t n, int parts, int part, size_t *offset, size_t *count);

/* ================================================================ tasks 2-4: the server */

/* A server's state. lab_ps_server sets it up (given code) and then runs its
 * loop (your code). */
typedef struct {
    dt_comm *comm;
    const lab_ps_config *cfg;
    lab_ps_result *res;
    int server;                  /* s = this rank */
    int workers;                 /* K; worker w is rank S + w */
    size_t offset, count;        /* the shard: params[offset .. offset + count) */
    float *params;               /* count floats: the shard's parameters */
    float *grad;                 /* count floats: where a pushed gradient is received */
    float *sum;                  /* count floats: synchronous rounds add gradients here */
    int version;                 /* V: updates applied to the shard (a synchronous
                                    round is one update) */
    int granted;                 /* pulls answered without stop */
    int in_round;                /* synchronous: gradients in sum */
    int in_flight[LAB_MAX_WORKERS];      /* 1 between a worker's answered pull
                                            and its push */
    int pulled_version[LAB_MAX_WORKERS]; /* the version its last pull got */
    int pushes[LAB_MAX_WORKERS];         /* gradients received from it */
    int waiting[LAB_MAX_WORKERS];        /* pulls not answered yet, oldest first */
    int num_waiting;
    int open;                    /* workers still running (server 0: not told
                                    stop yet; others: no BYE yet) */
} lab_server;

/* Given: the part of lab_ps_server before its loop (the shard's initial
 * parameters, buffers, state) and after it (the final shard is written to
 * res->params when the loop returned DT_OK; buffers freed). */
dt_result lab_server_setup(lab_server *s, dt_comm *comm, const lab_ps_config *cfg,
                           lab_ps_result *res);
void lab_server_teardown(lab_server *s, dt_result loop_result);

/* Given: records one applied gradient of staleness tau (appends it to the
 * server's row of res->staleness and counts it in res->applied). Call
 * it once for every gradient lab_ps_apply takes in. */
dt_result lab_ps_record(lab_server *s, int tau);

/* Given: sends the reply to a pull of worker w ({version, stop, 0, 0}, then
 * the shard unless stop). It changes no state (it may take a trace point). */
dt_result lab_ps_reply(lab_server *s, int w, int stop);

/* Task 4: may the server answer worker w's pull now (*admit = 1) or must
 * the pull wait (*admit = 0)? With V = s->version:
 *   synchronous:  1 when w's gradient of the current round is not in yet,
 *                 that is V == pushes[w] (else w has pushed this round
 *                 already and must wait for the round's update).
 *   asynchronous, no bound (cfg->bound < 0): always 1.
 *   asynchronous, bound b >= 0: let F be the number of workers in flight
 *                 and v0 the oldest version one of them pulled (V if F = 0).
 *                 1 when (V - v0) + F <= b: the rule of chapter 04,
 *                 section 7, which derives why it keeps every applied
 *                 gradient's tau <= b. */
dt_result lab_ps_admit(const lab_server *s, int w, int *admit);

/* Task 3: takes in the gradient s->grad that worker w pushed, computed on
 * version `version` of the shard. Its staleness is tau = V - version
 * (DT_ERR_STATE if w was not in flight, or version is not in [0, V]);
 * record it with lab_ps_record. Then
 *   asynchronous: the shard takes one SGD step (lr) with this gradient,
 *                 and V grows by one;
 *   synchronous:  the gradient joins the current round (s->sum); when the
 *                 round holds all K gradients, the shard takes one SGD
 *                 step with their mean, the next round starts empty, and
 *                 V grows by one (section 4, task 3).
 * w is no longer in flight, and its push count grows by one. */
dt_result lab_ps_apply(lab_server *s, int w, int version);

/* Task 3: the server's loop, until no worker is open. Receives headers with
 * dt_recv_any: a PULL joins the waiting list; a PUSH is followed by its
 * gradient from the same rank, which lab_ps_apply takes in; a BYE closes
 * the worker. After each message, answers every waiting pull it can, oldest
 * first:
 *   - server 0, when the budget is spent, replies stop (and the worker is
 *     closed): asynchronous, when cfg->updates pulls were granted;
 *     synchronous, when the worker has pushed cfg->updates / K gradients;
 *   - else, when lab_ps_admit allows it, replies with the shard: the
 *     worker is in flight from now on, having pulled version V.
 * The shard, the state and the records are set up and written back by the
 * given code around it. */
dt_result lab_ps_server(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res);

/* Task 2: a worker's loop (worker w = rank - S). Each step: pull the shards
 * from servers 0 .. S-1 in order into t.model.params (server 0 may say
 * stop: then send BYE to servers 1 .. S-1 and return); compute the
 * gradient of batch (w, step) with lab_trainer_gradient; push each shard
 * of t.model.grads, with the version it was computed on, to its server;
 * count it in res->pushed[w]. */
dt_result lab_ps_worker(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res);

/* ================================================================ predict, then measure */

/* Your prediction, from section 9.1, of the modeled time of a synchronous
 * run of cfg (cfg->sync = 1, one server: cfg->servers = 1) on `workers`
 * workers joined to the server by `link`: every one of the run's rounds
 * (cfg->updates / workers of them) with its messages through the server's
 * ports, each gradient of lab_num_params() floats costing cfg->compute_s,
 * and the run's opening pull and closing stop. A straggler
 * (cfg->slow_worker in [0, workers), costing cfg->slow_compute_s) is
 * predicted on a free network only (alpha = 0, beta infinite): on a link,
 * when its reply comes decides, which section 9.1 does not model. The
 * 16-byte headers are left out, as section 9.1 leaves them out.
 * The tests compare *seconds with the formula and with the modeled clock
 * of a run of your server and workers (within 0.5% on a link, for the
 * headers). DT_ERR_INVALID_ARG (*seconds untouched) for a NULL argument,
 * workers outside 1..LAB_MAX_WORKERS, cfg->updates < workers, or a run
 * that is not synchronous on one server; a straggler on a link too. */
dt_result lab_ps_predict_sync(const lab_ps_config *cfg, int workers, const dt_net *link,
                              double *seconds);

/* ================================================================ task 5: Hogwild! */

typedef struct {
    int updates;        /* gradients in all, claimed one at a time by the workers */
    int batch;
    float lr;
    double compute_s;   /* as in lab_ps_config */
    int slow_worker;    /* as in lab_ps_config */
    double slow_compute_s;
    uint64_t seed;
    const dt_dataset *train;
} lab_hogwild_config;

typedef struct {
    int workers;
    size_t num_params;
    float *params;                  /* the final shared parameters (rank 0 copies them) */
    int steps[LAB_MAX_RANKS];       /* gradients applied by each worker */
    uint64_t messages[LAB_MAX_RANKS]; /* point-to-point and collective calls other than
                                         barriers made by each rank (expected 0) */
    double clock[LAB_MAX_RANKS];
} lab_hogwild_result;

void lab_hogwild_result_free(lab_hogwild_result *res);

/* Starts opts->nranks ranks on opts->backend, each running
 * lab_hogwild_worker on a result of its own; gathers them into res as
 * lab_ps_launch does. The ranks must share one machine's memory (the
 * window): the thread and proc backends, or mpi on one machine. */
dt_result lab_hogwild_launch(const dt_launch_opts *opts, const lab_hogwild_config *cfg,
                             lab_hogwild_result *res);

/* dst[i] = src[i] for i < n, each word read with a relaxed atomic load.
 * Other workers may be writing: the copy may mix old and new words. */
dt_result lab_hogwild_read(float *dst, const _Atomic float *src, size_t n);

/* params[i] = params[i] - lr * grad[i] for i < n, each word read and
 * written with relaxed atomic loads and stores, WITHOUT a lock and without
 * a read-modify-write instruction: an update of another worker that lands
 * between the load and the store of a word is lost (Hogwild! accepts it). */
dt_result lab_hogwild_apply(_Atomic float *params, const float *grad, size_t n, float lr);

/* The shared window of Hogwild!: a counter of claimed gradients, then the
 * parameters (LAB_HOGWILD_PARAMS bytes in, so that they start on their own
 * cache line). */
#define LAB_HOGWILD_PARAMS 64
typedef struct {
    _Atomic int claimed;
} lab_hogwild_header;

/* Every rank is a worker (w = rank). The workers share one window of
 * one machine's memory, which they allocate together (dt_win_allocate)
 * with the layout above: the header, then the parameters
 * LAB_HOGWILD_PARAMS bytes in, starting from lab_trainer_init's initial
 * parameters before any worker reads them. Postcondition (section 8):
 * exactly cfg->updates gradients were applied to the shared parameters in
 * all (lab_hogwild_apply), each claimed once through the header's counter,
 * so that a fast worker claims more; worker w's k-th gradient (k from 0)
 * is that of batch (w, k), computed on what it read of the shared
 * parameters (lab_hogwild_read), and res->steps[w] counts them; rank 0's
 * res->params holds the shared parameters once every worker has finished;
 * the window is freed. Barriers are the only communication besides the
 * window. */
dt_result lab_hogwild_worker(dt_comm *comm, const lab_hogwild_config *cfg,
                             lab_hogwild_result *res);

#endif /* LAB_ASYNC_H */
