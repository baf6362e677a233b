/* spec.h - what link.c and topo.c share to read network strings: numbers
 * with units and the link presets. Not a public header. */
#ifndef DT_NET_SPEC_H
#define DT_NET_SPEC_H

#include "dt/net.h"

#include <stddef.h>

#define DT_NET_LINK_PRESETS "none, nvlink, nvlink4, pcie4, ib100, ib200, ib400, eth1, eth10, " \
                            "eth100, shm"
#define DT_NET_TOPO_PRESETS "dgx-a100, dgx-h100, laptop"

typedef enum { DT_NET_TIME = 0, DT_NET_RATE } dt_net_quantity;

/* A number >= 0 with a unit of q in s[0..len) (a rate must be > 0): 0 and
 * *out in seconds or bytes per second, else -1. */
int dt_net_spec_number(const char *s, size_t len, dt_net_quantity q, double *out);

/* The link preset named s[0..len) (any case): 0 and its alpha and beta in
 * *link (gamma untouched), else -1. */
int dt_net_spec_link(const char *s, size_t len, dt_net *link);

/* Whether s[0..len) names a topology preset (topo.c). */
int dt_net_spec_is_topo(const char *s, size_t len);

#endif /* DT_NET_SPEC_H */
