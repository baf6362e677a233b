/* names.c - names of the enums, the network presets and the parser of the
 * DT_NET strings. */
#include "dt/comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const algo_names[DT_NUM_ALGOS] = {"auto", "ring", "tree", "direct"};
static const char *const backend_names[DT_NUM_BACKENDS] = {"thread", "proc", "mpi", "nccl"};
static const char *const redop_names[DT_NUM_REDOPS] = {"sum", "prod", "max", "min", "avg"};
static const char *const coll_names[DT_NUM_COLLS] = {
    "allreduce", "broadcast", "reduce", "allgather", "reduce_scatter",
    "alltoall", "barrier", "send", "recv", "sendrecv"};

const char *dt_algo_name(dt_algo a)
{
    return ((int)a >= 0 && a < DT_NUM_ALGOS) ? algo_names[a] : "?";
}

const char *dt_backend_name(dt_backend b)
{
    return ((int)b >= 0 && b < DT_NUM_BACKENDS) ? backend_names[b] : "?";
}

const char *dt_redop_name(dt_redop op)
{
    return ((int)op >= 0 && op < DT_NUM_REDOPS) ? redop_names[op] : "?";
}

const char *dt_coll_name(dt_coll_kind k)
{
    return ((int)k >= 0 && k < DT_NUM_COLLS) ? coll_names[k] : "?";
}

static int find_name(const char *name, const char *const *names, int n)
{
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

dt_result dt_algo_parse(const char *name, dt_algo *out)
{
    int i = find_name(name, algo_names, DT_NUM_ALGOS);
    if (!out || i < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "unknown algorithm '%s' (auto, ring, tree, direct)",
                       name ? name : "(null)");
    *out = (dt_algo)i;
    return DT_OK;
}

dt_result dt_backend_parse(const char *name, dt_backend *out)
{
    int i = find_name(name, backend_names, DT_NUM_BACKENDS);
    if (!out || i < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "unknown backend '%s' (thread, proc)",
                       name ? name : "(null)");
    *out = (dt_backend)i;
    return DT_OK;
}

/* ---------------------------------------------------------------- network */

/* alpha: one-way small-message latency as measured by MPI/NCCL ping-pong
 * on such links; beta: usable bandwidth of one direction of one link. */
static const struct {
    const char *name;
    double alpha, beta;
} presets[] = {
    {"none", 0.0, INFINITY},
    {"nvlink", 1e-6, 300e9},  /* NVLink 3 on A100: 12 links x 25 GB/s per direction */
    {"pcie4", 2e-6, 25e9},    /* PCIe 4.0 x16: 31.5 GB/s raw, about 80% usable */
    {"ib100", 1.5e-6, 12.5e9}, /* InfiniBand EDR, 100 Gb/s; ~1-2 us MPI latency */
    {"ib400", 1.5e-6, 50e9},  /* InfiniBand NDR, 400 Gb/s */
    {"eth10", 30e-6, 1.25e9}, /* 10 GbE with TCP through the kernel: ~30 us */
    {"eth100", 10e-6, 12.5e9}, /* 100 GbE, TCP */
};

dt_result dt_net_preset(const char *name, double *alpha, double *beta)
{
    for (size_t i = 0; name && i < sizeof presets / sizeof presets[0]; i++) {
        if (strcasecmp(name, presets[i].name) == 0) {
            if (alpha)
                *alpha = presets[i].alpha;
            if (beta)
                *beta = presets[i].beta;
            return DT_OK;
        }
    }
    return dt_fail(DT_ERR_INVALID_ARG,
                   "unknown network preset '%s' (none, nvlink, pcie4, ib100, ib400, eth10, "
                   "eth100, or alpha=2us,bw=10GB/s)", name ? name : "(null)");
}

/* A number followed by a unit from table; returns 0 on success. */
static int parse_unit(const char *s, size_t len, const char *const *units, const double *scale,
                      int nunits, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || !(v >= 0) || isinf(v))
        return -1;
    for (int i = 0; i < nunits; i++) {
        if (strcmp(end, units[i]) == 0) {
            *out = v * scale[i];
            return 0;
        }
    }
    return -1;
}

dt_result dt_net_parse(const char *spec, double *alpha, double *beta)
{
    if (!spec || !spec[0])
        spec = "none";
    if (!strchr(spec, '='))
        return dt_net_preset(spec, alpha, beta);
    static const char *const tunits[] = {"s", "ms", "us", "ns", ""};
    static const double tscale[] = {1, 1e-3, 1e-6, 1e-9, 1};
    static const char *const bunits[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s",
                                         "Gb/s", "Mb/s", ""};
    static const double bscale[] = {1, 1e3, 1e6, 1e9, 1e12, 1e9 / 8, 1e6 / 8, 1};
    double a = 0, b = INFINITY;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        int bad = 1;
        if (len > 6 && strncmp(p, "alpha=", 6) == 0)
            bad = parse_unit(p + 6, len - 6, tunits, tscale, 5, &a);
        else if (len > 3 && strncmp(p, "bw=", 3) == 0)
            bad = parse_unit(p + 3, len - 3, bunits, bscale, 8, &b) || b <= 0;
        if (bad)
            return dt_fail(DT_ERR_INVALID_ARG,
                           "bad network '%s': expected alpha=<time>,bw=<rate> "
                           "(e.g. alpha=2us,bw=10GB/s)", spec);
        p += len;
        if (*p == ',')
            p++;
    }
    if (alpha)
        *alpha = a;
    if (beta)
        *beta = b;
    return DT_OK;
}
