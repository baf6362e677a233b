/* blas.c - the BLAS behind dt_sgemm: its threads, which kernels it runs
 * and how they compare with what the CPU supports.
 *
 * OpenBLAS names its kernel sets after the CPU generation they were written
 * for (openblas_get_corename). The table below gives each the level of
 * vector instructions it uses, so that a choice below the CPU's level (a
 * fallback on a CPU model OpenBLAS does not know) can be recognised, and
 * names the set libdt asks for at each level: the one OpenBLAS itself picks
 * for the CPUs it knows at that level. */
#include "blas_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DT_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* ---------------------------------------------------------------- use */

/* DT_BLAS_MARK, when set, names a file that is created the first time the
 * process uses the BLAS: an sgemm, its threads, what it is. A test that
 * never does computes the same bits under every kernel set and without
 * OpenBLAS (no other file of libdt depends on it), so make test-kernels
 * grades again under the other sets only the tests that left the mark. */
void dt_blas_note_use(void)
{
    static atomic_int noted;
    if (atomic_load_explicit(&noted, memory_order_relaxed) || atomic_exchange(&noted, 1))
        return;
    const char *path = getenv("DT_BLAS_MARK");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

/* ---------------------------------------------------------------- threads */

/* OpenBLAS's thread count is process-wide, set once before the first use. */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static atomic_int blas_threads_now = 1; /* ranks may ask from several threads */
static char blas_env_error[200];        /* a bad DT_BLAS_THREADS; written once */

static void blas_init(void)
{
    long n = 1;
    if (dt_env_long("DT_BLAS_THREADS", 1, 1, 1024, &n) != DT_OK)
        snprintf(blas_env_error, sizeof blas_env_error, "%s", dt_last_error());
    blas_threads_now = (int)n;
#ifdef DT_HAVE_OPENBLAS
    openblas_set_num_threads(blas_threads_now);
#endif
}

dt_result dt_blas_init_once(void)
{
    dt_blas_note_use();
    pthread_once(&blas_once, blas_init);
    if (blas_env_error[0])
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sgemm: %s", blas_env_error);
    return DT_OK;
}

dt_result dt_blas_set_threads(int n)
{
    if (n < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_blas_set_threads: %d threads (need >= 1)", n);
    dt_blas_init_once();
    blas_threads_now = n;
#ifdef DT_HAVE_OPENBLAS
    openblas_set_num_threads(n);
#endif
    return DT_OK;
}

int dt_blas_threads(void)
{
    dt_blas_init_once();
    return blas_threads_now;
}

int dt_blas_available(void)
{
    dt_blas_note_use();
#ifdef DT_HAVE_OPENBLAS
    return 1;
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- kernels */

/* OpenBLAS's x86-64 kernel sets (its DYNAMIC_ARCH list) by the level of
 * vector instructions they use. Excavator and Zen are AVX2 sets tuned for
 * those AMD cores: at the CPU's level, so left alone there. */
static const struct {
    const char *name;
    dt_isa isa;
} kernel_sets[] = {
    {"Katmai", DT_ISA_BASE},       {"Coppermine", DT_ISA_BASE},  {"Northwood", DT_ISA_BASE},
    {"Prescott", DT_ISA_BASE},     {"Banias", DT_ISA_BASE},      {"Atom", DT_ISA_BASE},
    {"Core2", DT_ISA_BASE},        {"Penryn", DT_ISA_BASE},      {"Dunnington", DT_ISA_BASE},
    {"Nehalem", DT_ISA_BASE},      {"Athlon", DT_ISA_BASE},      {"Opteron", DT_ISA_BASE},
    {"Opteron_SSE3", DT_ISA_BASE}, {"Barcelona", DT_ISA_BASE},   {"Nano", DT_ISA_BASE},
    {"Bobcat", DT_ISA_BASE},       {"Sandybridge", DT_ISA_AVX},  {"Bulldozer", DT_ISA_AVX},
    {"Piledriver", DT_ISA_AVX},    {"Steamroller", DT_ISA_AVX},  {"Haswell", DT_ISA_AVX2},
    {"Excavator", DT_ISA_AVX2},    {"Zen", DT_ISA_AVX2},         {"SkylakeX", DT_ISA_AVX512},
    {"Cooperlake", DT_ISA_AVX512_BF16}, {"SapphireRapids", DT_ISA_AVX512_BF16},
};

/* The set libdt asks for at each level of the CPU. On a Zen 5 (AVX-512 with
 * BF16), OpenBLAS 0.3.21's own choice, Haswell, ran sgemm at about half the
 * speed of Cooperlake's or SkylakeX's (BENCHMARKS.md, "BLAS kernels"). */
static const char *const kernels_for_isa[DT_NUM_ISAS] = {
    [DT_ISA_BASE] = NULL, /* nothing better to ask for */
    [DT_ISA_AVX] = "Sandybridge",
    [DT_ISA_AVX2] = "Haswell",
    [DT_ISA_AVX512] = "SkylakeX",
    [DT_ISA_AVX512_BF16] = "Cooperlake",
};

int dt_blas_kernels_isa(const char *kernels)
{
    for (size_t i = 0; kernels && i < sizeof kernel_sets / sizeof kernel_sets[0]; i++)
        if (strcmp(kernels, kernel_sets[i].name) == 0)
            return (int)kernel_sets[i].isa;
    return -1;
}

const char *dt_blas_kernels_better(const char *kernels, const dt_cpu_info *cpu)
{
    int level = dt_blas_kernels_isa(kernels);
    if (level < 0 || !cpu || (int)cpu->isa <= level || cpu->isa >= DT_NUM_ISAS)
        return NULL;
    return kernels_for_isa[cpu->isa];
}

/* ---------------------------------------------------------------- report */

const char *dt_blas_chooser_name(dt_blas_chooser c)
{
    switch (c) {
    case DT_BLAS_BY_BLAS: return "openblas";
    case DT_BLAS_BY_LIBDT: return "libdt";
    case DT_BLAS_BY_USER: return "OPENBLAS_CORETYPE";
    case DT_BLAS_BY_BUILD: return "build";
    }
    return "unknown";
}

#ifdef DT_HAVE_OPENBLAS
/* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21" */
static void library_of(const char *config, char *out, size_t len)
{
    const char *space = strchr(config, ' ');
    if (space)
        space = strchr(space + 1, ' ');
    size_t n = space ? (size_t)(space - config) : strlen(config);
    snprintf(out, len, "%.*s", (int)n, config);
}
#endif

dt_result dt_blas_info_get(dt_blas_info *out)
{
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_blas_info_get: NULL output");
    memset(out, 0, sizeof *out);
    const dt_blas_startup_state *s = dt_blas_startup();
    dt_cpu_detect(&out->cpu);
    out->chosen_by = s->chosen_by;
    snprintf(out->blas_choice, sizeof out->blas_choice, "%s", s->blas_choice);
#ifdef DT_HAVE_OPENBLAS
    snprintf(out->config, sizeof out->config, "%s", openblas_get_config());
    library_of(out->config, out->library, sizeof out->library);
    snprintf(out->kernels, sizeof out->kernels, "%s", openblas_get_corename());
    out->dynamic = strstr(out->config, "DYNAMIC_ARCH") != NULL;
#else
    snprintf(out->library, sizeof out->library, "built-in");
    snprintf(out->kernels, sizeof out->kernels, "built-in");
#endif
    if (s->error[0])
        return dt_fail(DT_ERR_INVALID_ARG, "%s", s->error);
    return DT_OK;
}

char *dt_blas_info_str(const dt_blas_info *info, char *buf, size_t len)
{
    char who[80];
    if (info->chosen_by == DT_BLAS_BY_LIBDT)
        snprintf(who, sizeof who, "chosen by libdt; OpenBLAS chose %s", info->blas_choice);
    else
        snprintf(who, sizeof who, "chosen by %s", dt_blas_chooser_name(info->chosen_by));
    snprintf(buf, len, "%s, %s kernels (%s); CPU %s (%s)", info->library, info->kernels, who,
             info->cpu.model_name, dt_isa_name(info->cpu.isa));
    return buf;
}

/* Text appended to a buffer that is cut, never overrun, when full. */
typedef struct {
    char *buf;
    size_t len, at;
} text_out;

static void put(text_out *o, const char *s, int json_escape)
{
    for (; *s; s++) {
        if (json_escape && (unsigned char)*s < 0x20)
            continue; /* control characters: none in the names reported */
        if (json_escape && (*s == '"' || *s == '\\') && o->at + 2 < o->len)
            o->buf[o->at++] = '\\';
        if (o->at + 1 < o->len)
            o->buf[o->at++] = *s;
    }
    if (o->len)
        o->buf[o->at] = '\0';
}

char *dt_blas_info_json(const dt_blas_info *info, char *buf, size_t len)
{
    const char *keys[] = {"blas", "blas_kernels", "blas_kernels_by", "blas_own_choice", "cpu",
                          "cpu_isa"};
    const char *values[] = {info->library, info->kernels, dt_blas_chooser_name(info->chosen_by),
                            info->blas_choice, info->cpu.model_name, dt_isa_name(info->cpu.isa)};
    text_out o = {buf, len, 0};
    put(&o, "", 0);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        put(&o, i ? ", \"" : "\"", 0);
        put(&o, keys[i], 0);
        put(&o, "\": \"", 0);
        put(&o, values[i], 1);
        put(&o, "\"", 0);
    }
    return buf;
}
