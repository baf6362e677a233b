/* dtbench - collective benchmark in the manner of nccl-tests.
 *
 *   dtbench COLL [-b MIN] [-e MAX] [-f FACTOR] [-n|--ranks RANKS] [--backend thread|proc|mpi]
 *                [--iters N] [--warmup N] [-d DTYPE] [-o OP] [--algo A] [--net NET]
 *                [--check 0|1] [--csv] [--shared]
 *
 * COLL: allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall,
 * sendrecv (a ring shift), barrier, or launch (the time of dt_launch of an
 * empty function). Sizes are every tool's (dt_parse_bytes: -b 8M is 8 MiB,
 * as in nccl-tests; 8Mi the same; 1e6 decimal) and are, as in nccl-tests,
 * the bytes of one rank's full buffer: the allreduce vector, the allgather
 * output, the reduce-scatter input.
 *
 * Per size it prints time (the slowest rank's mean over --iters, after
 * --warmup untimed calls), algbw = size / time and busbw = algbw x the
 * collective's factor (2(N-1)/N for allreduce; (N-1)/N for allgather,
 * reduce-scatter, alltoall; 1 for broadcast, reduce, sendrecv), and #wrong:
 * the elements that differ from the exact answer in a separate checked
 * call (integer-valued data). Exit status 1 when any element is wrong or a
 * call fails. --shared takes the buffers from dt_alloc_shared (the job's
 * shared memory, which the proc backend's ranks address directly; see
 * bench/ddp.sh). Ranks are bound to cores (DT_BIND=1) unless DT_BIND says
 * otherwise, as mpirun binds its ranks. With --backend mpi, run it as
 * `mpirun -np RANKS dtbench ... --backend mpi -n RANKS`: MPI rank 0 prints. */
#include "dt/cli.h"
#include "dt/comm.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
enum { COLL_NONE = -2, COLL_LAUNCH = -1 }; /* besides the dt_coll_kind values */

typedef struct {
    int coll; /* dt_coll_kind, or COLL_LAUNCH */
    size_t min, max;
    double factor;
    int iters, warmup, check, csv, shared;
    dt_dtype dtype;
    dt_redop op;
} bench;

/* Elements of sendbuf and recvbuf for a size in bytes. */
static void buffer_counts(const bench *b, size_t bytes, int n, size_t *count, size_t *scount,
                          size_t *rcount)
{
    size_t es = dt_dtype_size(b->dtype), total = bytes / es;
    int split = b->coll == DT_COLL_ALLGATHER || b->coll == DT_COLL_REDUCE_SCATTER ||
                b->coll == DT_COLL_ALLTOALL;
    *count = split ? total / (size_t)n : total; /* the call's count argument */
    *scount = *rcount = split ? *count * (size_t)n : total;
    if (b->coll == DT_COLL_ALLGATHER)
        *scount = *count;
    if (b->coll == DT_COLL_REDUCE_SCATTER)
        *rcount = *count;
}

static dt_result run_coll(const bench *b, dt_comm *c, const void *s, void *r, size_t count)
{
    int n = dt_comm_size(c), me = dt_comm_rank(c);
    switch (b->coll) {
    case DT_COLL_ALLREDUCE: return dt_allreduce(s, r, count, b->dtype, b->op, c);
    case DT_COLL_BROADCAST: return dt_broadcast(s, r, count, b->dtype, 0, c);
    case DT_COLL_REDUCE: return dt_reduce(s, r, count, b->dtype, b->op, 0, c);
    case DT_COLL_ALLGATHER: return dt_allgather(s, r, count, b->dtype, c);
    case DT_COLL_REDUCE_SCATTER: return dt_reduce_scatter(s, r, count, b->dtype, b->op, c);
    case DT_COLL_ALLTOALL: return dt_alltoall(s, r, count, b->dtype, c);
    case DT_COLL_BARRIER: return dt_barrier(c);
    default:
        return dt_sendrecv(s, count, (me + 1) % n, r, count, (me - 1 + n) % n, b->dtype, c);
    }
}

/* Value of element i of rank r's input: small integers, exact in every
 * dtype after a sum over up to 64 ranks. */
static float input(int r, size_t i) { return (float)((r + (int)(i % 7)) % 4); }

static void put(void *buf, dt_dtype t, size_t i, float v)
{
    switch (t) {
    case DT_F32: ((float *)buf)[i] = v; break;
    case DT_F16: ((uint16_t *)buf)[i] = dt_f32_to_f16(v); break;
    case DT_BF16: ((uint16_t *)buf)[i] = dt_f32_to_bf16(v); break;
    case DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DT_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    default: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    }
}

static float get(const void *buf, dt_dtype t, size_t i)
{
    switch (t) {
    case DT_F32: return ((const float *)buf)[i];
    case DT_F16: return dt_f16_to_f32(((const uint16_t *)buf)[i]);
    case DT_BF16: return dt_bf16_to_f32(((const uint16_t *)buf)[i]);
    case DT_I32: return (float)((const int32_t *)buf)[i];
    case DT_I8: return (float)((const int8_t *)buf)[i];
    default: return (float)((const uint8_t *)buf)[i];
    }
}

/* The exact value of element i of this rank's output (sum op). */
static float expected(const bench *b, int n, int me, size_t i, size_t count)
{
    float s = 0;
    switch (b->coll) {
    case DT_COLL_ALLREDUCE:
    case DT_COLL_REDUCE:
        for (int r = 0; r < n; r++)
            s += input(r, i);
        return s;
    case DT_COLL_REDUCE_SCATTER:
        for (int r = 0; r < n; r++)
            s += input(r, (size_t)me * count + i);
        return s;
    case DT_COLL_BROADCAST: return input(0, i);
    case DT_COLL_ALLGATHER: return input((int)(i / count), i % count);
    case DT_COLL_ALLTOALL: return input((int)(i / count), (size_t)me * count + i % count);
    default: return input((me - 1 + n) % n, i);
    }
}

/* Fills the input, runs the collective once, counts wrong elements. */
static long check_once(const bench *b, dt_comm *c, void *s, void *r, size_t count,
                       size_t scount, size_t rcount)
{
    int n = dt_comm_size(c), me = dt_comm_rank(c);
    for (size_t i = 0; i < scount; i++)
        put(s, b->dtype, i, input(me, i));
    if (b->coll == DT_COLL_ALLGATHER) /* rank me's block of the output */
        for (size_t i = 0; i < scount; i++)
            put(s, b->dtype, i, input(me, i));
    memset(r, 0, rcount * dt_dtype_size(b->dtype));
    if (run_coll(b, c, s, r, count) != DT_OK)
        return -1;
    if (b->coll == DT_COLL_BARRIER || (b->coll == DT_COLL_REDUCE && me != 0))
        return 0;
    long wrong = 0;
    for (size_t i = 0; i < rcount; i++)
        wrong += get(r, b->dtype, i) != expected(b, n, me, i, count);
    return wrong;
}

static dt_result bench_rank(dt_comm *c, void *arg)
{
    const bench *b = arg;
    int n = dt_comm_size(c), me = dt_comm_rank(c);
    size_t es = dt_dtype_size(b->dtype);
    size_t top = b->max < es * (size_t)n ? es * (size_t)n : b->max;
    char *s = NULL, *r = NULL;
    if (b->shared) {
        DT_CHECK(dt_alloc_shared(c, top + 64, (void **)&s));
        if (dt_alloc_shared(c, top + 64, (void **)&r) != DT_OK) {
            dt_free_shared(c, s);
            return DT_ERR_NOMEM;
        }
    } else {
        s = malloc(top + 64), r = malloc(top + 64);
    }
    if (!s || !r)
        return dt_fail(DT_ERR_NOMEM, "no memory for %zu bytes", top);
    memset(s, 0, top);
    memset(r, 0, top);
    long total_wrong = 0;
    if (me == 0 && !b->csv)
        printf("#%11s %12s %6s %11s %12s %12s %7s\n", "size(B)", "count", "type", "time(us)",
               "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    if (me == 0 && b->csv)
        printf("size,count,type,time_us,algbw_GBs,busbw_GBs,wrong\n");
    for (size_t bytes = b->min; bytes <= b->max; bytes = (size_t)ceil((double)bytes * b->factor)) {
        size_t count, scount, rcount;
        buffer_counts(b, bytes, n, &count, &scount, &rcount);
        for (int i = 0; i < b->warmup; i++)
            DT_CHECK(run_coll(b, c, s, r, count));
        DT_CHECK(dt_barrier(c));
        double t0 = dt_now();
        for (int i = 0; i < b->iters; i++)
            DT_CHECK(run_coll(b, c, s, r, count));
        float mine = (float)((dt_now() - t0) / b->iters), slowest;
        DT_CHECK(dt_allreduce(&mine, &slowest, 1, DT_F32, DT_MAX, c));
        int32_t wrong = 0, all_wrong;
        if (b->check) {
            long w = check_once(b, c, s, r, count, scount, rcount);
            wrong = w < 0 ? 1 : (int32_t)w;
        }
        DT_CHECK(dt_allreduce(&wrong, &all_wrong, 1, DT_I32, DT_SUM, c));
        total_wrong += all_wrong;
        double algbw = (double)bytes / slowest / 1e9;
        if (me == 0) {
            const char *fmt = b->csv ? "%zu,%zu,%s,%.3f,%.4f,%.4f,%d\n"
                                     : "%12zu %12zu %6s %11.2f %12.3f %12.3f %7d\n";
            printf(fmt, bytes, count, dt_dtype_name(b->dtype), slowest * 1e6, algbw,
                   algbw * dt_net_busbw_factor((dt_coll_kind)b->coll, n), all_wrong);
            fflush(stdout);
        }
        if (bytes == 0 || b->factor <= 1)
            break;
    }
    if (b->shared) {
        dt_free_shared(c, s);
        dt_free_shared(c, r);
    } else {
        free(s);
        free(r);
    }
    if (total_wrong)
        return dt_fail(DT_ERR_INTERNAL, "%ld wrong elements", total_wrong);
    return DT_OK;
}

static dt_result empty_rank(dt_comm *c, void *arg)
{
    (void)c;
    (void)arg;
    return DT_OK;
}

/* The median time of dt_launch of an empty function. */
static int bench_launch(const dt_launch_opts *o, const bench *b)
{
    int reps = b->iters > 0 ? b->iters : 20;
    double *t = malloc(sizeof *t * (size_t)reps);
    for (int i = 0; i < reps; i++) {
        double t0 = dt_now();
        if (dt_launch(o, empty_rank, NULL) != DT_OK) {
            fprintf(stderr, "dtbench: %s\n", dt_last_error());
            return 1;
        }
        t[i] = dt_now() - t0;
    }
    printf(b->csv ? "ranks,backend,median_ms\n%d,%s,%.3f\n" : "# launch: %d ranks (%s): "
           "median %.3f ms\n", o->nranks, dt_backend_name(o->backend),
           dt_median(t, (size_t)reps) * 1e3);
    free(t);
    return 0;
}

/* "dtbench: <message>" on stderr; the exit status of a bad option. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'dtbench --help' for the options.\n");
    va_end(ap);
    return EXIT_USAGE;
}

#define MAX_BYTES ((size_t)1 << 38) /* a rank's buffer: above 256 GiB, surely a typo */
#define MAX_ITERS 1000000000

static int parse_coll(const char *name, bench *b)
{
    static const char *const names[] = {"allreduce", "broadcast", "reduce", "allgather",
                                        "reduce_scatter", "alltoall", "barrier", "send",
                                        "recv", "sendrecv"};
    _Static_assert(sizeof names / sizeof names[0] == DT_NUM_COLLS, "one name per kind");
    for (int k = 0; k < DT_NUM_COLLS; k++)
        if (strcmp(name, names[k]) == 0 && k != DT_COLL_SEND && k != DT_COLL_RECV)
            b->coll = k;
    if (strcmp(name, "launch") == 0)
        b->coll = COLL_LAUNCH;
    if (b->coll == COLL_NONE)
        return bad("unknown collective '%s' (allreduce broadcast reduce allgather "
                   "reduce_scatter alltoall sendrecv barrier launch)", name);
    return 0;
}

/* The whole command line: DT_CLI_GO, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, bench *b, dt_launch_opts *o)
{
    static const char *dtypes[DT_NUM_DTYPES + 1], *ops[DT_NUM_REDOPS + 1];
    for (int t = 0; t < DT_NUM_DTYPES; t++)
        dtypes[t] = dt_dtype_name((dt_dtype)t);
    for (int k = 0; k < DT_NUM_REDOPS; k++)
        ops[k] = dt_redop_name((dt_redop)k);
    int dtype = (int)b->dtype, op = (int)b->op;
    const dt_opt opts[] = {
        {"-b", DT_OPT_BYTES, &b->min, .help = "smallest size: bytes of one rank's full buffer "
         "(the allreduce vector, the allgather output, the reduce-scatter input)",
         .hi = (double)MAX_BYTES},
        {"-e", DT_OPT_BYTES, &b->max, .help = "largest size", .hi = (double)MAX_BYTES},
        {"-f", DT_OPT_REAL, &b->factor, .help = "each size is the previous one times FACTOR",
         .lo = 1, .hi = 1e6, .flags = DT_OPT_OPEN_LO, .arg = "FACTOR"},
        {"-n|--ranks", DT_OPT_INT, &o->nranks, .help = "ranks", .lo = 1, .hi = DT_MAX_RANKS},
        {"--backend", DT_OPT_BACKEND, &o->backend, .help = "thread, proc, or mpi (under mpirun "
         "-np RANKS dtbench ... --backend mpi -n RANKS: MPI rank 0 prints)"},
        {"--iters", DT_OPT_INT, &b->iters, .help = "timed calls per size", .lo = 1,
         .hi = MAX_ITERS},
        {"--warmup", DT_OPT_INT, &b->warmup, .help = "untimed calls before them", .lo = 0,
         .hi = MAX_ITERS},
        {"-d", DT_OPT_CHOICE, &dtype, .help = "element type", .choices = dtypes},
        {"-o", DT_OPT_CHOICE, &op, .help = "reduction", .choices = ops},
        {"--algo", DT_OPT_ALGO, &o->algo, .help = "the collectives' algorithm"},
        {"--net", DT_OPT_TOPO, &o->net, .help = "modeled network (default DT_NET's, else none)"},
        {"--check", DT_OPT_INT, &b->check, .help = "1: count the wrong elements of a separate "
         "call with exact integer data (sums only)", .lo = 0, .hi = 1},
        {"--csv", DT_OPT_FLAG, &b->csv, .help = "CSV instead of the table"},
        {"--shared", DT_OPT_FLAG, &b->shared, .help = "buffers from dt_alloc_shared (the job's "
         "shared memory, which the proc backend's ranks address directly)"},
    };
    dt_cli cli = {.prog = "dtbench", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .max_args = 1, .synopsis = "COLL [options]",
                  .about = "COLL: allreduce broadcast reduce allgather reduce_scatter alltoall "
                           "sendrecv\n      barrier launch (the time of dt_launch of an empty "
                           "function)\nPrints, per size, the time (slowest rank, mean of "
                           "--iters), algbw, busbw and\n#wrong, as nccl-tests (-b -e -f as "
                           "there)."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (cli.nargs == 0) {
        dt_cli_usage(&cli, stderr);
        return EXIT_USAGE;
    }
    if (parse_coll(cli.arg[0], b) != 0)
        return EXIT_USAGE;
    b->dtype = (dt_dtype)dtype;
    b->op = (dt_redop)op;
    if (b->min > b->max)
        return dt_cli_fail(&cli, "-b %zu is larger than -e %zu", b->min, b->max);
    return DT_CLI_GO;
}

int main(int argc, char **argv)
{
    bench b = {.coll = COLL_NONE, .min = 8, .max = 64 << 20, .factor = 4, .iters = 20,
               .warmup = 5, .check = 1, .dtype = DT_F32, .op = DT_SUM};
    setenv("DT_BIND", "1", 0); /* one core per rank, as mpirun binds */
    dt_launch_opts o;
    if (dt_launch_opts_init(&o) != DT_OK)
        return bad("%s", dt_last_error());
    o.nranks = 2;
    int st = parse_args(argc, argv, &b, &o);
    if (st != DT_CLI_GO)
        return st;
    if (b.op != DT_SUM)
        b.check = 0; /* the exact answers below are for sums */
    if (b.coll == COLL_LAUNCH)
        return bench_launch(&o, &b);
    if (b.coll == DT_COLL_BARRIER)
        b.min = b.max = 0;
    /* under mpirun (--backend mpi) every process runs this: rank 0 speaks */
    if (!b.csv && dt_mpi_world_rank() <= 0)
        printf("# dtbench %s: %d ranks, %s backend, %s %s, algo %s, %d iters, %d warmup\n",
               argv[1], o.nranks, dt_backend_name(o.backend), dt_dtype_name(b.dtype),
               dt_redop_name(b.op), dt_algo_name(o.algo), b.iters, b.warmup);
    fflush(stdout);
    dt_result r = dt_launch(&o, bench_rank, &b);
    if (r != DT_OK) {
        fprintf(stderr, "dtbench: %s (%s)\n", dt_last_error(), dt_strerror(r));
        return 1;
    }
    return 0;
}
