/* blas_startup.c - never run on the wrong BLAS kernels silently.
 *
 * OpenBLAS picks its kernels in its own constructor, from the CPU model and
 * OPENBLAS_CORETYPE, before any code of the program runs; nothing can change
 * them afterwards. This constructor runs next (a shared library's
 * constructors run before the program's) and compares OpenBLAS's choice
 * with what the CPU supports. When the kernels are below the CPU's level
 * (dt_blas_kernels_better), it sets
 *
 *     OPENBLAS_CORETYPE=<the CPU's kernel set>
 *     DT_BLAS_REPLACED=<OpenBLAS's own choice>
 *
 * and executes the same program again (/proc/self/exe, the same arguments,
 * the same pid): the new image loads OpenBLAS with the right kernels. The
 * two variables are inherited, so the ranks dtrun starts, the proc
 * backend's processes and any program the first one runs load the right
 * kernels at once: one restart and one line per process tree, not one per
 * rank. DT_BLAS_REPLACED is also the guard against a loop: a process that
 * finds it (with OPENBLAS_CORETYPE) never restarts.
 *
 * An OPENBLAS_CORETYPE the user set is the user's choice and stays; when
 * it holds the CPU back, one line says so (once per process tree: the
 * inherited DT_BLAS_NOTED). The lines are left out with DT_QUIET=1, under
 * the grader and in MPI ranks other than 0 (read_settings).
 *
 * Every program linked with libdt gets this check: the Makefile links this
 * file into each (-u dt_blas_startup_check), and dt_sgemm's users get it
 * through blas.c. It prints here, before main, because no caller exists
 * yet to return an error to; dt_blas_info_get reports the same facts. */
#include "blas_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DT_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* Written by the constructor alone, before main (see blas_internal.h). */
static dt_blas_startup_state state;

const dt_blas_startup_state *dt_blas_startup(void)
{
    dt_blas_note_use(); /* what the BLAS is: dt_blas_info_get's and the tools' lines */
    return &state;
}

typedef struct {
    int off;           /* DT_BLAS_KERNELS=off */
    int quiet;         /* no line on stderr */
    int test_fallback; /* DT_BLAS_TEST_FALLBACK=1 */
} settings;

/* *out = the index of getenv(name) in choices (unset or empty: 0). 0 on
 * success; -1, with state.error naming the variable and its value, when
 * the value is none of them. */
static int env_choice(const char *name, const char *const *choices, int n, int *out)
{
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v)
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(v, choices[i]) == 0)
            return *out = i, 0;
    snprintf(state.error, sizeof state.error,
             "%s='%.40s' is not %s or %s: OpenBLAS's kernels are left as they are", name, v,
             choices[0], choices[1]);
    return -1;
}

/* Some MPI launchers start every rank by itself: only rank 0 speaks. */
static int is_other_mpi_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && strcmp(v, "0") != 0)
            return 1;
    }
    return 0;
}

static int read_settings(settings *s)
{
    static const char *const kernels[] = {"auto", "off"}, *const bools[] = {"0", "1"};
    int quiet;
    if (env_choice("DT_BLAS_KERNELS", kernels, 2, &s->off) ||
        env_choice("DT_QUIET", bools, 2, &quiet) ||
        env_choice("DT_BLAS_TEST_FALLBACK", bools, 2, &s->test_fallback))
        return -1;
    /* Under the grader (it sets DT_TEST_TIMEOUT) the line would open every
     * failed test's output: the tests say nothing about speed. */
    s->quiet = quiet || getenv("DT_TEST_TIMEOUT") || is_other_mpi_rank();
    return 0;
}

#ifdef DT_HAVE_OPENBLAS
/* This process's arguments, from /proc/self/cmdline (each ended by a NUL),
 * as a NULL-terminated array in one allocation; NULL on failure. */
static char **read_argv(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    ssize_t n = 0;
    while (text && (n = read(fd, text + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (len + 1 == cap) {
            char *bigger = realloc(text, cap *= 2);
            if (!bigger)
                free(text);
            text = bigger;
        }
    }
    close(fd);
    if (!text || len == 0 || n < 0) {
        free(text);
        return NULL;
    }
    if (text[len - 1] != '\0') /* a last argument without its NUL: end it */
        text[len++] = '\0';
    size_t argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += text[i] == '\0';
    /* the pointers first, then the text, so that one free() releases both */
    char **argv = malloc((argc + 1) * sizeof *argv + len);
    if (argv) {
        char *copy = memcpy((char *)(argv + argc + 1), text, len);
        size_t a = 0;
        for (size_t i = 0; i < len; i += strlen(copy + i) + 1)
            argv[a++] = copy + i;
        argv[argc] = NULL;
    }
    free(text);
    return argv;
}

/* Executes this program again with OPENBLAS_CORETYPE=want. Returns only if
 * that failed; the variables stay set, so that children still get `want`. */
static void restart(const char *chosen, const char *want, const dt_cpu_info *cpu, int quiet)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char **argv = n > 0 ? read_argv() : NULL;
    setenv("OPENBLAS_CORETYPE", want, 1);
    setenv("DT_BLAS_REPLACED", chosen, 1);
    if (!argv) {
        if (!quiet)
            fprintf(stderr, "dtlab: OpenBLAS runs its %s kernels on this %s CPU and this "
                            "program could not be restarted with %s (its children will be)\n",
                    chosen, dt_isa_name(cpu->isa), want);
        return;
    }
    exe[n] = '\0';
    if (!quiet)
        fprintf(stderr, "dtlab: OpenBLAS chose its %s kernels (%s) on this %s CPU (%s): "
                        "restarting with OPENBLAS_CORETYPE=%s (DT_BLAS_KERNELS=off keeps "
                        "OpenBLAS's choice)\n",
                chosen, dt_isa_name((dt_isa)dt_blas_kernels_isa(chosen)), dt_isa_name(cpu->isa),
                cpu->model_name, want);
    execv(exe, argv);
    int err = errno;
    if (!quiet)
        fprintf(stderr, "dtlab: restarting %s failed (%s): this process keeps the %s kernels\n",
                exe, strerror(err), chosen);
    free(argv);
}

/* The user chose kernels below the CPU's level: say so, once per process
 * tree (DT_BLAS_NOTED is inherited), and leave them. */
static void note_user_choice(const char *kernels, const dt_cpu_info *cpu, const settings *s)
{
    const char *better = dt_blas_kernels_better(kernels, cpu);
    if (!better || s->quiet || getenv("DT_BLAS_NOTED"))
        return;
    fprintf(stderr, "dtlab: OPENBLAS_CORETYPE=%s runs kernels below this CPU's (%s, %s): "
                    "unset it to run %s (DT_BLAS_KERNELS=off silences this)\n",
            kernels, cpu->model_name, dt_isa_name(cpu->isa), better);
    setenv("DT_BLAS_NOTED", "1", 1);
}

/* Who chose the kernels in use, into state; returns the kernels. */
static const char *classify(const settings *s)
{
    const char *chosen = openblas_get_corename();
    const char *forced = getenv("OPENBLAS_CORETYPE"), *replaced = getenv("DT_BLAS_REPLACED");
    state.chosen_by = DT_BLAS_BY_BLAS;
    snprintf(state.blas_choice, sizeof state.blas_choice, "%s", chosen);
    if (forced && replaced && *replaced) { /* this process is the restart (or its child) */
        state.chosen_by = DT_BLAS_BY_LIBDT;
        snprintf(state.blas_choice, sizeof state.blas_choice, "%s", replaced);
    } else if (forced && !s->test_fallback) {
        state.chosen_by = DT_BLAS_BY_USER;
        state.blas_choice[0] = '\0';
    }
    return chosen;
}
#endif

void dt_blas_startup_check(void) __attribute__((constructor));
void dt_blas_startup_check(void)
{
    settings s = {0, 0, 0};
    int bad = read_settings(&s);
#ifdef DT_HAVE_OPENBLAS
    const char *chosen = classify(&s);
#else
    state.chosen_by = DT_BLAS_BY_BUILD;
#endif
    if (bad) {
        fprintf(stderr, "dtlab: %s\n", state.error);
        return;
    }
#ifdef DT_HAVE_OPENBLAS
    if (s.off || state.chosen_by == DT_BLAS_BY_LIBDT)
        return; /* asked not to, or this process is the restart: never twice */
    dt_cpu_info cpu;
    dt_cpu_detect(&cpu);
    if (state.chosen_by == DT_BLAS_BY_USER) {
        note_user_choice(chosen, &cpu, &s);
        return;
    }
    if (!strstr(openblas_get_config(), "DYNAMIC_ARCH"))
        return; /* one kernel set built in: nothing to pick */
    const char *want = dt_blas_kernels_better(chosen, &cpu);
    if (want)
        restart(chosen, want, &cpu, s.quiet);
#endif
}
