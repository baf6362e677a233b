/* link.c - links: the presets and the DT_NET strings ("eth10",
 * "alpha=2us,bw=10GB/s,gamma=0.1ns"). */
#include "dt/net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* alpha: one-way small-message latency as measured by MPI/NCCL ping-pong
 * on such links; beta: usable bandwidth of one direction of one link;
 * gamma: 0 (a preset says nothing of the processor that reduces). */
static const struct {
    const char *name;
    double alpha, beta;
} presets[] = {
    {"none", 0.0, INFINITY},
    {"nvlink", 1e-6, 300e9},   /* NVLink 3 on A100: 12 links x 25 GB/s per direction */
    {"pcie4", 2e-6, 25e9},     /* PCIe 4.0 x16: 31.5 GB/s raw, about 80% usable */
    {"ib100", 1.5e-6, 12.5e9}, /* InfiniBand EDR, 100 Gb/s; ~1-2 us MPI latency */
    {"ib400", 1.5e-6, 50e9},   /* InfiniBand NDR, 400 Gb/s */
    {"eth10", 30e-6, 1.25e9},  /* 10 GbE with TCP through the kernel: ~30 us */
    {"eth100", 10e-6, 12.5e9}, /* 100 GbE, TCP */
};

#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))
#define PRESET_LIST "none, nvlink, pcie4, ib100, ib400, eth10, eth100"

static int find_preset(const char *name, size_t len)
{
    for (int i = 0; i < NUM_PRESETS; i++)
        if (strlen(presets[i].name) == len && strncasecmp(name, presets[i].name, len) == 0)
            return i;
    return -1;
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

/* One part "key=value" of a spec, or a preset name as its first part. */
static int parse_part(const char *p, size_t len, int first, dt_net *l)
{
    if (len > 6 && strncmp(p, "alpha=", 6) == 0)
        return parse_number(p + 6, len - 6, time_units, 6, &l->alpha);
    if (len > 3 && strncmp(p, "bw=", 3) == 0)
        return parse_number(p + 3, len - 3, rate_units, 8, &l->beta) || l->beta <= 0;
    if (len > 6 && strncmp(p, "gamma=", 6) == 0)
        return parse_number(p + 6, len - 6, time_units, 6, &l->gamma);
    int i = first ? find_preset(p, len) : -1;
    if (i < 0)
        return -1;
    l->alpha = presets[i].alpha;
    l->beta = presets[i].beta;
    return 0;
}

dt_result dt_net_link(const char *spec, dt_net *link)
{
    if (!link)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_link: link is NULL");
    if (!spec || !spec[0])
        spec = "none";
    dt_net l = {0, INFINITY, 0};
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
