/* topo.c - a job's network as a topology: nodes of per_node ranks, the
 * link inside a node and the link between nodes; its presets, its strings
 * ("dgx-h100,nodes=2", "nodes=2,per_node=4,intra=nvlink,inter=ib100"), and
 * the link that prices a collective on a group of ranks. */
#include "spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Each preset is a string of this same language, over the link presets of
 * link.c. Sources:
 *   DGX A100: 8 A100 GPUs joined by six NVSwitches, 600 GB/s GPU to GPU
 *     both ways (300 GB/s a way: 12 NVLink 3 links; NVIDIA's A100
 *     architecture white paper, and www.nvidia.com/data-center/nvlink);
 *     eight single-port ConnectX-6 adapters, HDR InfiniBand at 200 Gb/s,
 *     for the compute fabric, one per GPU (NVIDIA DGX A100 User Guide,
 *     DU-09821-001, 1.1.1 component specifications; NVIDIA's announcement
 *     of May 2020: eight Mellanox adapters at 200 Gb/s).
 *   DGX H100: 8 H100 GPUs, four NVSwitches, NVLink 4 at 900 GB/s both ways
 *     per GPU (www.nvidia.com/technologies/hopper-architecture; "Introducing
 *     NVIDIA HGX H100", NVIDIA developer blog, 2022); "four OSFP ports
 *     serving eight single-port NVIDIA ConnectX-7 VPI, up to 400 Gb/s
 *     InfiniBand" (docs.nvidia.com, DGX BasePOD reference architecture,
 *     core components).
 *   laptop: 8 ranks sharing one laptop's memory (link.c, "shm"); a second
 *     laptop over gigabit Ethernet ("eth1").
 * One adapter per GPU ("rail-optimized") makes a rank's inter-node link
 * one adapter's bandwidth. */
static const struct {
    const char *name, *spec;
} presets[] = {
    {"dgx-a100", "per_node=8,intra=nvlink,inter=ib200"},
    {"dgx-h100", "per_node=8,intra=nvlink4,inter=ib400"},
    {"laptop", "per_node=8,intra=shm,inter=eth1"},
};

#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))
#define MAX_COUNT (1 << 20) /* nodes and per_node: a sanity bound */

static int find_preset(const char *s, size_t len)
{
    for (int i = 0; i < NUM_PRESETS; i++)
        if (strlen(presets[i].name) == len && strncasecmp(s, presets[i].name, len) == 0)
            return i;
    return -1;
}

int dt_net_spec_is_topo(const char *s, size_t len) { return find_preset(s, len) >= 0; }

/* ---------------------------------------------------------------- parsing */

/* Whether a part belongs to a topology only: a topology preset first, or
 * one of its keys. A spec without any is a flat link, read by dt_net_link. */
static int topo_part(const char *p, size_t len, int first)
{
    static const char *const keys[] = {"nodes=", "per_node=", "intra=", "inter=", "intra.",
                                       "inter."};
    if (first && find_preset(p, len) >= 0)
        return 1;
    for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++)
        if (len >= strlen(keys[i]) && strncmp(p, keys[i], strlen(keys[i])) == 0)
            return 1;
    return 0;
}

/* What the parts of a topology said so far. */
typedef struct {
    dt_net_topo t;
    double gamma;
    int have_per_node, have_intra, have_inter;
} parse_state;

/* An integer 1 .. MAX_COUNT in s[0..len). */
static int parse_count(const char *s, size_t len, int *out)
{
    char buf[16];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    if (*end || end == buf || v < 1 || v > MAX_COUNT)
        return -1;
    *out = (int)v;
    return 0;
}

/* Whether p[0..len) is "key=value"; *val, *vlen: the value. */
static int key_is(const char *p, size_t len, const char *key, const char **val, size_t *vlen)
{
    size_t k = strlen(key);
    if (len <= k || strncmp(p, key, k) != 0 || p[k] != '=')
        return 0;
    *val = p + k + 1;
    *vlen = len - k - 1;
    return 1;
}

#define TIME_UNITS "expected a time >= 0 (s, ms, us, ns)"
#define RATE_UNITS "expected a rate > 0 (B/s, KB/s, MB/s, GB/s, TB/s, Mb/s, Gb/s)"

/* side=<preset>, side.alpha=<time>, side.bw=<rate> for side intra or
 * inter: NULL when p is one of them and applied, "" when it is none of
 * them, else why its value is wrong. */
static const char *apply_link(const char *p, size_t len, const char *side, dt_net *link,
                              int *have)
{
    const char *v;
    size_t vl;
    char alpha[16], bw[16];
    snprintf(alpha, sizeof alpha, "%s.alpha", side);
    snprintf(bw, sizeof bw, "%s.bw", side);
    if (key_is(p, len, side, &v, &vl)) {
        if (dt_net_spec_link(v, vl, link) != 0)
            return "expected a link preset (" DT_NET_LINK_PRESETS ")";
    } else if (key_is(p, len, alpha, &v, &vl)) {
        if (dt_net_spec_number(v, vl, DT_NET_TIME, &link->alpha) != 0)
            return TIME_UNITS;
    } else if (key_is(p, len, bw, &v, &vl)) {
        if (dt_net_spec_number(v, vl, DT_NET_RATE, &link->beta) != 0)
            return RATE_UNITS;
    } else {
        return "";
    }
    *have = 1;
    return NULL;
}

static const char *apply_part(parse_state *st, const char *p, size_t len, int first);

/* A topology preset: its own string, part by part (a preset that does not
 * parse is the table's fault: the test of the presets finds it). */
static const char *apply_preset(parse_state *st, int i)
{
    const char *s = presets[i].spec;
    for (int first = 1;; first = 0) {
        size_t len = strcspn(s, ",");
        const char *why = apply_part(st, s, len, first);
        if (why || !s[len])
            return why;
        s += len + 1;
    }
}

/* One part of a topology: NULL when applied, else why it is wrong. */
static const char *apply_part(parse_state *st, const char *p, size_t len, int first)
{
    const char *v;
    size_t vl;
    if (len == 0)
        return "an empty part";
    if (!memchr(p, '=', len)) {
        int i = first ? find_preset(p, len) : -1;
        if (i >= 0)
            return apply_preset(st, i);
        dt_net l;
        if (dt_net_spec_link(p, len, &l) == 0)
            return "one link for every pair, in a topology: name its links intra= and "
                   "inter= (e.g. nodes=2,per_node=4,intra=nvlink,inter=ib100)";
        return first ? "unknown preset (topologies: " DT_NET_TOPO_PRESETS ")"
                     : "a preset's name comes first";
    }
    if (key_is(p, len, "gamma", &v, &vl))
        return dt_net_spec_number(v, vl, DT_NET_TIME, &st->gamma) ? TIME_UNITS : NULL;
    if (key_is(p, len, "alpha", &v, &vl) || key_is(p, len, "bw", &v, &vl))
        return "a flat link's key, in a topology: give intra.alpha= and inter.alpha=, "
               "intra.bw= and inter.bw=";
    int *count = key_is(p, len, "nodes", &v, &vl)      ? &st->t.nodes
                 : key_is(p, len, "per_node", &v, &vl) ? &st->t.per_node
                                                       : NULL;
    if (count) {
        if (parse_count(v, vl, count) != 0)
            return "expected a whole number from 1 to 1048576";
        st->have_per_node |= count == &st->t.per_node;
        return NULL;
    }
    const char *why = apply_link(p, len, "intra", &st->t.intra, &st->have_intra);
    if (why && !*why)
        why = apply_link(p, len, "inter", &st->t.inter, &st->have_inter);
    if (why && !*why)
        return "unknown key (a topology's: nodes=, per_node=, intra=, inter=, intra.alpha=, "
               "intra.bw=, inter.alpha=, inter.bw=, gamma=)";
    return why;
}

dt_result dt_net_topo_parse(const char *spec, dt_net_topo *topo)
{
    if (!topo)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_topo_parse: topo is NULL");
    int is_topo = 0;
    for (const char *p = spec ? spec : ""; !is_topo;) {
        size_t len = strcspn(p, ",");
        is_topo = topo_part(p, len, p == spec);
        if (!p[len])
            break;
        p += len + 1;
    }
    if (!is_topo) { /* one link for every pair: dt_net_link's strings, as ever */
        dt_net l;
        dt_result r = dt_net_link(spec, &l);
        if (r == DT_OK)
            *topo = (dt_net_topo){0, 0, l, l};
        else if (!strchr(spec, '=')) /* a name: it may have meant a topology */
            dt_fail(r, "unknown network preset '%s' (links: " DT_NET_LINK_PRESETS "; "
                    "topologies: " DT_NET_TOPO_PRESETS "; or alpha=2us,bw=10GB/s, or "
                    "nodes=2,per_node=4,intra=nvlink,inter=ib100)", spec);
        return r;
    }
    parse_state st = {.t = {0, 0, {0, INFINITY, 0}, {0, INFINITY, 0}}};
    for (const char *p = spec;;) {
        size_t len = strcspn(p, ",");
        const char *why = apply_part(&st, p, len, p == spec);
        if (why)
            return dt_fail(DT_ERR_INVALID_ARG, "bad network '%s' at '%.*s': %s", spec, (int)len,
                           p, why);
        if (!p[len])
            break;
        p += len + 1; /* the comma: a part must follow */
    }
    const char *missing = !st.have_per_node ? "per_node=<ranks per node>"
                          : !st.have_intra  ? "the link inside a node (intra=<preset>, or "
                                              "intra.alpha= and intra.bw=)"
                          : !st.have_inter  ? "the link between nodes (inter=<preset>, or "
                                              "inter.alpha= and inter.bw=)"
                                            : NULL;
    if (missing)
        return dt_fail(DT_ERR_INVALID_ARG, "bad network '%s': a topology needs %s", spec,
                       missing);
    st.t.intra.gamma = st.t.inter.gamma = st.gamma;
    *topo = st.t;
    return DT_OK;
}

/* ---------------------------------------------------------------- checks */

static dt_result check_link(const dt_net *l, const char *which)
{
    if (!(isfinite(l->alpha) && l->alpha >= 0) || !(l->beta > 0) ||
        !(isfinite(l->gamma) && l->gamma >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "the %s link (alpha %g s, beta %g B/s, gamma %g "
                       "s/B) is out of range: alpha >= 0, beta > 0, gamma >= 0", which, l->alpha,
                       l->beta, l->gamma);
    return DT_OK;
}

dt_result dt_net_topo_check(const dt_net_topo *t, int nranks)
{
    if (!t)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_topo_check: topo is NULL");
    dt_result r = check_link(&t->intra, "intra-node");
    if (r == DT_OK)
        r = check_link(&t->inter, "inter-node");
    if (r != DT_OK)
        return r;
    if (t->nodes < 0 || t->per_node < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "a network of %d nodes of %d ranks: expected "
                       "counts >= 0", t->nodes, t->per_node);
    if (nranks < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_topo_check: nranks = %d", nranks);
    if (t->per_node > 0 && t->nodes > 0 && (long)nranks > (long)t->nodes * t->per_node)
        return dt_fail(DT_ERR_INVALID_ARG, "the network has %d node%s of %d ranks (%ld ranks), "
                       "the job %d ranks", t->nodes, t->nodes == 1 ? "" : "s", t->per_node,
                       (long)t->nodes * t->per_node, nranks);
    return DT_OK;
}

/* ---------------------------------------------------------------- groups */

dt_net dt_net_slowest(const dt_net *a, const dt_net *b)
{
    return (dt_net){fmax(a->alpha, b->alpha), fmin(a->beta, b->beta), fmax(a->gamma, b->gamma)};
}

dt_result dt_net_group_link(const dt_net_topo *t, const int *ranks, int k, dt_net *link)
{
    if (!t || !ranks || !link || k < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_net_group_link: %s", !t ? "topo is NULL"
                       : !ranks ? "ranks is NULL" : !link ? "link is NULL" : "k < 1");
    /* Members sorted by node: two in one node give an intra pair, two
     * nodes an inter pair. */
    int first = dt_net_topo_node(t, ranks[0]), other = 0, shared = 0;
    for (int i = 1; i < k && !(other && shared); i++) {
        int ni = dt_net_topo_node(t, ranks[i]);
        other |= ni != first;
        for (int j = 0; j < i && !shared; j++)
            shared |= dt_net_topo_node(t, ranks[j]) == ni;
    }
    if (!other)
        *link = t->intra;
    else if (!shared)
        *link = t->inter;
    else
        *link = dt_net_slowest(&t->intra, &t->inter);
    return DT_OK;
}

double dt_net_group_cost(dt_net_algo algo, const dt_net_topo *t, const int *ranks, int k,
                         double n)
{
    dt_net link;
    if (dt_net_group_link(t, ranks, k, &link) != DT_OK)
        return NAN;
    return dt_net_cost(algo, &link, n, k);
}
