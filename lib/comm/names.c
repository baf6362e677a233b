/* names.c - names of the communicator's enums, and their parsers. */
#include "dt/comm.h"

#include <string.h>
#include <strings.h>

static const char *const algo_names[DT_NUM_ALGOS] = {"auto", "ring", "tree", "direct",
                                                      "binomial"};
static const char *const backend_names[DT_NUM_BACKENDS] = {"thread", "proc", "mpi", "nccl"};
static const char *const redop_names[DT_NUM_REDOPS] = {"sum", "prod", "max", "min", "avg"};

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
        return dt_fail(DT_ERR_INVALID_ARG, "unknown algorithm '%s' (auto, ring, tree, direct, "
                       "binomial)",
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
