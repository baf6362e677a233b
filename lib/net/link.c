/* link.c - links: the presets and the DT_NET strings ("eth10",
 * "alpha=2us,bw=10GB/s,gamma=0.1ns"). */
#include "spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* alpha: one-way small-message latency as measured by MPI/NCCL ping-pong
 * on such links, in round figures kept from one preset to the next (NCCL's
 * own model of one hop, src/graph/tuning.cc, hwLat, LL protocol: 0.6 us
 * over NVLink, 2.7 us over the network; a ConnectX-6 adapter alone is
 * "sub-600 ns", NVIDIA's ConnectX-6 user manual); beta: usable bandwidth
 * of one direction of one rank's link; gamma: 0 (a preset says nothing of
 * the processor that reduces). */
static const struct {
    const char *name;
    double alpha, beta;
} presets[] = {
    {"none", 0.0, INFINITY},
    {"nvlink", 1e-6, 300e9},   /* NVLink 3 on A100: 12 links x 25 GB/s per direction
                                  (600 GB/s both ways, NVIDIA's NVLink page) */
    {"nvlink4", 1e-6, 450e9},  /* NVLink 4 on H100: 18 links x 25 GB/s per direction
                                  (900 GB/s both ways, NVIDIA's Hopper architecture page) */
    {"pcie4", 2e-6, 25e9},     /* PCIe 4.0 x16: 31.5 GB/s raw, about 80% usable */
    {"ib100", 1.5e-6, 12.5e9}, /* InfiniBand EDR, 100 Gb/s; ~1-2 us MPI latency */
    {"ib200", 1.5e-6, 25e9},   /* InfiniBand HDR, 200 Gb/s (ConnectX-6) */
    {"ib400", 1.5e-6, 50e9},   /* InfiniBand NDR, 400 Gb/s (ConnectX-7) */
    {"eth1", 30e-6, 125e6},    /* 1 GbE (1000BASE-T, 1 Gb/s) with TCP through the kernel */
    {"eth10", 30e-6, 1.25e9},  /* 10 GbE with TCP through the kernel: ~30 us */
    {"eth100", 10e-6, 12.5e9}, /* 100 GbE, TCP */
    /* shm: ranks of one laptop passing messages through its memory. alpha:
     * a 4-byte allreduce of 2 ranks through shared memory took 0.28 us
     * (libdt) and 0.30 us (Open MPI's vader) on the project's machine
     * (BENCHMARKS.md). beta: dual-channel DDR5-5600 peaks at 2 x 8 B x
     * 5600 MT/s = 89.6 GB/s; 8 ranks copying at once, each copy reading
     * and writing every byte, leaves each 89.6 / (8 x 2) = 5.6 GB/s. */
    {"shm", 0.3e-6, 5.6e9},
};

#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))
#define PRESET_LIST DT_NET_LINK_PRESETS

static int find_preset(const char *name, size_t len)
{
    for (int i = 0; i < NUM_PRESETS; i++)
        if (strlen(presets[i].name) == len && strncasecmp(name, presets[i].name, len) == 0)
            return i;
    return -1;
}

int dt_net_spec_link(const char *s, size_t len, dt_net *link)
{
    int i = find_preset(s, len);
    if (i < 0)
        return -1;
    link->alpha = presets[i].alpha;
    link->beta = presets[i].beta;
    return 0;
}

dt_result dt_net_preset(const char *name, double *alpha, double *beta)
{
    int i = name ? find_preset(name, strlen(name)) : -1;
    if (i < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "unknown network preset '%s' (" PRESET_LIST ", or "
                       "alpha=2us,bw=10GB/s)", name ? name : "(null)");
    if (alpha)
        *alpha = presets[i].alpha;
    if (beta)
        *beta = presets[i].beta;
    return DT_OK;
}

typedef struct {
    const char *unit;
    double scale;
} unit;

static const unit time_units[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9},
                                  {"ps", 1e-12}, {"", 1}};
static const unit rate_units[] = {{"B/s", 1},       {"KB/s", 1e3},     {"MB/s", 1e6},
                                  {"GB/s", 1e9},    {"TB/s", 1e12},    {"Gb/s", 1e9 / 8},
                                  {"Mb/s", 1e6 / 8}, {"", 1}};

/* A number >= 0 followed by one of units, in s[0..len); 0 on success. */
static int parse_number(const char *s, size_t len, const unit *units, int nunits, double *out)
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
        if (strcmp(end, units[i].unit) == 0) {
            *out = v * units[i].scale;
            return 0;
        }
    }
    return -1;
}

int dt_net_spec_number(const char *s, size_t len, dt_net_quantity q, double *out)
{
    if (q == DT_NET_TIME)
        return parse_number(s, len, time_units, 6, out);
    double v;
    if (parse_number(s, len, rate_units, 8, &v) != 0 || v <= 0)
        return -1;
    *out = v;
    return 0;
}

/* One part "key=value" of a spec, or a preset name as its first part. */
static int parse_part(const char *p, size_t len, int first, dt_net *l)
{
    if (len > 6 && strncmp(p, "alpha=", 6) == 0)
        return dt_net_spec_number(p + 6, len - 6, DT_NET_TIME, &l->alpha);
    if (len > 3 && strncmp(p, "bw=", 3) == 0)
        return dt_net_spec_number(p + 3, len - 3, DT_NET_RATE, &l->beta);
    if (len > 6 && strncmp(p, "gamma=", 6) == 0)
        return dt_net_spec_number(p + 6, len - 6, DT_NET_TIME, &l->gamma);
    return first ? dt_net_spec_link(p, len, l) : -1;
}

dt_result dt_net_link(const char *spec, dt_net *link)
{
    if (!link)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_link: link is NULL");
    if (!spec || !spec[0])
        spec = "none";
    dt_net l = {0, INFINITY, 0};
    if (dt_net_spec_is_topo(spec, strcspn(spec, ",")))
        return dt_fail(DT_ERR_INVALID_ARG, "network '%s' is a topology (a link inside a node "
                       "and one between nodes), where one link is asked for: a preset ("
                       PRESET_LIST ") or alpha=<time>,bw=<rate>", spec);
    if (!strchr(spec, '=')) { /* a name alone: say that no preset has it */
        dt_result r = dt_net_preset(spec, &l.alpha, &l.beta);
        if (r == DT_OK)
            *link = l;
        return r;
    }
    for (const char *p = spec;;) {
        size_t len = strcspn(p, ",");
        if (parse_part(p, len, p == spec, &l) != 0)
            return dt_fail(DT_ERR_INVALID_ARG, "bad network '%s' at '%.*s': expected a preset ("
                           PRESET_LIST ") and/or alpha=<time>,bw=<rate>,gamma=<time per "
                           "byte> (e.g. alpha=2us,bw=10GB/s)", spec, (int)len, p);
        p += len;
        if (*p == '\0')
            break;
        p++; /* the comma: a part must follow */
    }
    *link = l;
    return DT_OK;
}

dt_result dt_net_parse(const char *spec, double *alpha, double *beta)
{
    dt_net l;
    dt_result r = dt_net_link(spec, &l);
    if (r != DT_OK)
        return r;
    if (alpha)
        *alpha = l.alpha;
    if (beta)
        *beta = l.beta;
    return DT_OK;
}
