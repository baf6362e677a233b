/* mpi_allreduce.c - OpenMPI's side of the benchmarks (bench/comm.sh,
 * bench/mpi.sh, bench/table.sh, bench/netns.sh): the same measurement as
 * dtbench (the slowest rank's mean time over --iters calls after --warmup
 * untimed ones; sizes in bytes of one rank's f32 buffer, out of place),
 * printed as dtbench's --csv rows.
 *
 *   mpirun -np N mpi_allreduce [allreduce|barrier|exchange] -b MIN -e MAX -f F --iters N
 *                              --warmup W [--algo mpi|ring|tree] [--thread-multiple]
 *                              [--frames]
 *
 * --algo mpi (the default) calls MPI_Allreduce: OpenMPI's own choice of
 * algorithm. ring and tree are the algorithms libdt's AUTO picks on the mpi
 * backend (lib/comm/algo_coll.c: recursive doubling up to 32 KiB, the ring
 * above), written here with plain MPI_Sendrecv and the same chunks: what
 * libdt's algorithm costs over MPI without libdt around it.
 * --thread-multiple starts MPI with MPI_THREAD_MULTIPLE, as libdt's mpi
 * backend must (its progress thread calls MPI too): the price of MPI's
 * own locks, apart. --frames sends ring's and tree's messages in libdt's
 * frames (below): the price of the wire protocol that the mpi backend needs
 * for its modeled clock and its match check, apart.
 *
 * exchange: ranks 2k and 2k+1 swap SIZE bytes with one MPI_Sendrecv, the
 * wire's bandwidth each way under traffic both ways, as a ring's steps on
 * 2 ranks load it (bench/netns.sh); its busbw column is SIZE / time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALGO_MPI, ALGO_RING, ALGO_TREE };
enum { OP_ALLREDUCE, OP_BARRIER, OP_EXCHANGE };

static int bad(const char *what, const char *v)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) /* every process parses the same options: one says what is wrong */
        fprintf(stderr, "mpi_allreduce: %s '%s'\n", what, v);
    return 0;
}

/* A whole number (or, for -f, any number) of at least min, for option opt. */
static double parse_num(const char *opt, const char *s, double min, int *ok)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < min || v > 1e9 || (strcmp(opt, "-f") && v != (int)v)) {
        char what[64];
        snprintf(what, sizeof what, "%s: a number >= %g, not", opt, min);
        *ok = bad(what, s);
    }
    return v;
}

static size_t parse_size(const char *s, int *ok)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K') v *= 1024, end++;
    else if (*end == 'M') v *= 1024 * 1024, end++;
    else if (*end == 'G') v *= 1024.0 * 1024 * 1024, end++;
    if (end == s || *end || v < 0 || v / 4 > 0x7fffffff) /* MPI counts are ints */
        *ok = bad("a size is a number of bytes below 8G (K, M, G suffixes), not", s);
    return (size_t)v;
}

/* The options (parse). */
typedef struct {
    size_t min, max;
    double factor;
    int iters, warmup, op, algo, frames;
} opts;

/* libdt's frames (lib/comm/mpi/mpi_port.c): every message is one MPI message,
 * a 32-byte header (the modeled departure, size, signature, count) then
 * the data: up to 16 KiB (DT_NET_EAGER_MAX) from a copy, above it the
 * header and the user's buffer as two blocks of one MPI datatype, with a
 * 32-byte ack from the receiver (the time it posted). The receiver takes a
 * message once MPI_Improbe says its size: straight into header and buffer
 * above 16 KiB, into a buffer of its own below. */
#define FRAME 32
#define EAGER_MAX 16384

static void pair_type(void *hdr, const void *buf, int bytes, MPI_Datatype *t)
{
    int len[2] = {FRAME, bytes};
    MPI_Aint disp[2];
    MPI_Get_address(hdr, &disp[0]);
    MPI_Get_address(buf, &disp[1]);
    MPI_Type_create_hindexed(2, len, disp, MPI_BYTE, t);
    MPI_Type_commit(t);
}

static void framed_sendrecv(const void *sb, int sbytes, int dest, void *rb, int rbytes, int src,
                            int tag)
{
    char shdr[FRAME] = {0}, rhdr[FRAME], sack[FRAME] = {0}, rack[FRAME];
    char *sst = NULL, *rst = NULL;
    MPI_Request q[4];
    MPI_Datatype t;
    int k = 0;
    if (rbytes > EAGER_MAX)
        MPI_Isend(sack, FRAME, MPI_BYTE, src, tag + 1, MPI_COMM_WORLD, &q[k++]);
    if (sbytes <= EAGER_MAX) {
        sst = malloc(FRAME + (size_t)sbytes);
        memcpy(sst, shdr, FRAME);
        memcpy(sst + FRAME, sb, (size_t)sbytes);
        MPI_Isend(sst, FRAME + sbytes, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &q[k++]);
    } else {
        MPI_Irecv(rack, FRAME, MPI_BYTE, dest, tag + 1, MPI_COMM_WORLD, &q[k++]);
        pair_type(shdr, sb, sbytes, &t);
        MPI_Isend(MPI_BOTTOM, 1, t, dest, tag, MPI_COMM_WORLD, &q[k++]);
        MPI_Type_free(&t);
    }
    int flag = 0;
    MPI_Message m;
    MPI_Status st;
    while (!flag)
        MPI_Improbe(src, tag, MPI_COMM_WORLD, &flag, &m, &st);
    if (rbytes > EAGER_MAX) {
        pair_type(rhdr, rb, rbytes, &t);
        MPI_Imrecv(MPI_BOTTOM, 1, t, &m, &q[k++]);
        MPI_Type_free(&t);
    } else {
        rst = malloc(FRAME + (size_t)rbytes);
        MPI_Imrecv(rst, FRAME + rbytes, MPI_BYTE, &m, &q[k++]);
    }
    MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
    if (rst)
        memcpy(rb, rst + FRAME, (size_t)rbytes);
    free(rst);
    free(sst);
}

/* One step of an algorithm: floats both ways, plain or in libdt's frames. */
static void sendrecv(const opts *o, const float *sb, int sn, int dest, float *rb, int rn, int src,
                     int tag)
{
    if (o->frames)
        framed_sendrecv(sb, sn * 4, dest, rb, rn * 4, src, 2 * tag);
    else
        MPI_Sendrecv(sb, sn, MPI_FLOAT, dest, tag, rb, rn, MPI_FLOAT, src, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
}

/* The chunks of libdt's ring (algo_blocks.c): the first count % n one longer. */
static int chunk_len(int count, int n, int i) { return count / n + (i < count % n); }
static int chunk_off(int count, int n, int i)
{
    return i * (count / n) + (i < count % n ? i : count % n);
}

static void add(float *dst, const float *a, const float *b, int n)
{
    for (int i = 0; i < n; i++)
        dst[i] = a[i] + b[i];
}

/* libdt's ring: reduce-scatter (N - 1 steps, the partial from the left
 * plus this rank's part), then allgather (N - 1 steps). tmp: 2 chunks. */
static void ring(const opts *o, const float *s, float *r, int count, float *tmp, int rank, int n)
{
    int left = (rank - 1 + n) % n, right = (rank + 1) % n, maxc = chunk_len(count, n, 0);
    float *half[2] = {tmp, tmp + maxc};
    for (int k = 0; k < n - 1; k++) {
        int sc = (rank - k - 1 + 2 * n) % n, rc = (rank - k - 2 + 2 * n) % n;
        const float *sp = k == 0 ? s + chunk_off(count, n, sc) : half[(k - 1) & 1];
        sendrecv(o, sp, chunk_len(count, n, sc), right, half[k & 1], chunk_len(count, n, rc),
                 left, k);
        float *dst = k < n - 2 ? half[k & 1] : r + chunk_off(count, n, rc);
        add(dst, half[k & 1], s + chunk_off(count, n, rc), chunk_len(count, n, rc));
    }
    for (int k = 0; k < n - 1; k++) {
        int sc = (rank - k + n) % n, rc = (rank - k - 1 + 2 * n) % n;
        sendrecv(o, r + chunk_off(count, n, sc), chunk_len(count, n, sc), right,
                 r + chunk_off(count, n, rc), chunk_len(count, n, rc), left, n + k);
    }
}

/* libdt's recursive doubling, for N a power of two (the only N benchmarked). */
static void tree(const opts *o, const float *s, float *r, int count, float *tmp, int rank, int n)
{
    memcpy(r, s, (size_t)count * sizeof *r);
    for (int mask = 1; mask < n; mask <<= 1) {
        int peer = rank ^ mask;
        sendrecv(o, r, count, peer, tmp, count, peer, mask);
        add(r, peer < rank ? r : tmp, peer < rank ? tmp : r, count);
    }
}

/* One call of the benchmarked operation. */
static void once(const opts *o, const float *s, float *r, int count, float *tmp, int rank, int n)
{
    if (o->op == OP_BARRIER)
        MPI_Barrier(MPI_COMM_WORLD);
    else if (o->op == OP_EXCHANGE)
        MPI_Sendrecv(s, count, MPI_FLOAT, rank ^ 1, 0, r, count, MPI_FLOAT, rank ^ 1, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (o->algo == ALGO_RING)
        ring(o, s, r, count, tmp, rank, n);
    else if (o->algo == ALGO_TREE)
        tree(o, s, r, count, tmp, rank, n);
    else
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* The elements of r that differ from what the operation must leave there. */
static int wrong(const opts *o, const float *r, int count, int rank, int n)
{
    int bad = 0;
    for (int i = 0; i < count; i++) {
        float want = 0;
        if (o->op == OP_EXCHANGE)
            want = (float)(((rank ^ 1) + i % 7) % 4);
        else
            for (int k = 0; k < n; k++)
                want += (float)((k + i % 7) % 4);
        bad += r[i] != want;
    }
    return bad;
}

/* The options into *o; 0 (after saying why) on a bad one. */
static int parse(int argc, char **argv, opts *o)
{
    int ok = 1;
    for (int i = 1; i < argc && ok; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "allreduce") || !strcmp(a, "barrier") || !strcmp(a, "exchange")) {
            o->op = a[0] == 'a' ? OP_ALLREDUCE : a[0] == 'b' ? OP_BARRIER : OP_EXCHANGE;
            continue;
        }
        if (!strcmp(a, "--thread-multiple")) /* main's business */
            continue;
        if (!strcmp(a, "--frames")) {
            o->frames = 1;
            continue;
        }
        i++;
        if (!strcmp(a, "-b")) o->min = parse_size(v, &ok);
        else if (!strcmp(a, "-e")) o->max = parse_size(v, &ok);
        else if (!strcmp(a, "-f")) o->factor = parse_num(a, v, 1, &ok);
        else if (!strcmp(a, "--iters")) o->iters = (int)parse_num(a, v, 1, &ok);
        else if (!strcmp(a, "--warmup")) o->warmup = (int)parse_num(a, v, 0, &ok);
        else if (!strcmp(a, "--algo")) {
            o->algo = !strcmp(v, "ring") ? ALGO_RING : !strcmp(v, "tree") ? ALGO_TREE : ALGO_MPI;
            ok = o->algo != ALGO_MPI || !strcmp(v, "mpi") || bad("--algo (mpi, ring or tree):", v);
        } else
            ok = bad("unknown option", a);
    }
    return ok;
}

int main(int argc, char **argv)
{
    int level = MPI_THREAD_SINGLE, provided;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--thread-multiple"))
            level = MPI_THREAD_MULTIPLE;
    MPI_Init_thread(&argc, &argv, level, &provided);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    opts o = {8, 64 << 20, 4, 20, 5, OP_ALLREDUCE, ALGO_MPI, 0};
    if (!parse(argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    if ((o.algo == ALGO_TREE && (n & (n - 1))) || (o.op == OP_EXCHANGE && n % 2)) {
        if (rank == 0)
            fprintf(stderr, "mpi_allreduce: %s needs %s ranks, not %d\n",
                    o.op == OP_EXCHANGE ? "exchange" : "--algo tree",
                    o.op == OP_EXCHANGE ? "an even number of" : "a power of two", n);
        MPI_Finalize();
        return 2;
    }
    if (o.op == OP_BARRIER)
        o.min = o.max = 0;
    float *s = malloc(o.max + 64), *r = malloc(o.max + 64), *tmp = malloc(o.max + 64);
    memset(s, 0, o.max + 64);
    memset(r, 0, o.max + 64);
    memset(tmp, 0, o.max + 64);
    if (rank == 0)
        printf("size,count,type,time_us,algbw_GBs,busbw_GBs,wrong\n");
    for (size_t bytes = o.min; bytes <= o.max; bytes = (size_t)(bytes * o.factor)) {
        int count = (int)(bytes / 4);
        for (size_t i = 0; i < (size_t)count; i++)
            s[i] = (float)((rank + (int)(i % 7)) % 4);
        for (int i = 0; i < o.warmup; i++)
            once(&o, s, r, count, tmp, rank, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < o.iters; i++)
            once(&o, s, r, count, tmp, rank, n);
        double mine = (MPI_Wtime() - t0) / o.iters, slowest;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int mine_wrong = wrong(&o, r, count, rank, n), all_wrong;
        MPI_Allreduce(&mine_wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double algbw = (double)bytes / slowest / 1e9;
        double busbw = o.op == OP_EXCHANGE ? algbw : algbw * 2.0 * (n - 1) / n;
        if (rank == 0)
            printf("%zu,%d,f32,%.3f,%.4f,%.4f,%d\n", bytes, count, slowest * 1e6, algbw, busbw,
                   all_wrong);
        if (bytes == 0 || o.factor <= 1)
            break;
    }
    free(s);
    free(r);
    free(tmp);
    MPI_Finalize();
    return 0;
}
