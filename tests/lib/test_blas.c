/* test_blas.c - the CPU and BLAS-kernel checks of lib/tensor (cpu.c,
 * blas.c, blas_startup.c): cpuid decoding and the choice of kernels as pure
 * functions over tables, then the start-up restart itself, run in child
 * processes of this test binary with the environment each case needs. */
#include "grader.h"
#include "dt/tensor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- cpuid tables */

#define AVX512_EBX ((1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31))
#define AVX2_EBX (1u << 5)
#define L1_ECX_AVX ((1u << 0) | (1u << 12) | (1u << 27) | (1u << 28)) /* sse3 fma osxsave avx */
#define L1_EDX_SSE2 (1u << 26)

typedef struct {
    const char *what, *vendor, *brand;
    uint32_t max_leaf, sig, l1_ecx, l7_ebx, l7_1_eax;
    uint64_t xcr0;
    /* expected */
    int family, model;
    const char *model_name;
    dt_isa isa;
} cpu_case;

static void raw_of(const cpu_case *c, dt_cpuid_raw *r)
{
    memset(r, 0, sizeof *r);
    r->leaf0[0] = c->max_leaf;
    memcpy(&r->leaf0[1], c->vendor, 4); /* EBX, EDX, ECX hold the vendor string */
    memcpy(&r->leaf0[3], c->vendor + 4, 4);
    memcpy(&r->leaf0[2], c->vendor + 8, 4);
    r->leaf1[0] = c->sig;
    r->leaf1[2] = c->l1_ecx;
    r->leaf1[3] = L1_EDX_SSE2;
    r->leaf7[1] = c->l7_ebx;
    r->leaf7_1[0] = c->l7_1_eax;
    r->ext0[0] = 0x80000004u;
    char brand[48] = {0};
    memcpy(brand, c->brand, strlen(c->brand));
    memcpy(r->brand, brand, sizeof brand);
    r->xcr0 = c->xcr0;
}

TEST(blas_cpuid_decoding, 1)
{
    static const cpu_case cases[] = {
        /* this project's machine: family 0xF + extended 0xB = 26 */
        {"Zen 5 EPYC", "AuthenticAMD", "AMD EPYC", 0x1c, 0x00b00f21, 0xfffa3203, 0xf1bf07ab,
         0x30, 0xe7, 26, 2, "AMD EPYC", DT_ISA_AVX512_BF16},
        {"Zen 5, OS without ZMM state", "AuthenticAMD", "AMD EPYC", 0x1c, 0x00b00f21,
         0xfffa3203, 0xf1bf07ab, 0x30, 0x07, 26, 2, "AMD EPYC", DT_ISA_AVX2},
        {"Zen 5, no OSXSAVE", "AuthenticAMD", "AMD EPYC", 0x1c, 0x00b00f21,
         0xfffa3203 & ~(1u << 27), 0xf1bf07ab, 0x30, 0xe7, 26, 2, "AMD EPYC", DT_ISA_BASE},
        {"Zen 4", "AuthenticAMD", "AMD Ryzen 9 7950X 16-Core Processor            ", 0x10,
         0x00a60f12, L1_ECX_AVX, AVX2_EBX | AVX512_EBX, 1u << 5, 0xe7, 25, 0x61,
         "AMD Ryzen 9 7950X 16-Core Processor", DT_ISA_AVX512_BF16},
        /* family 6: the extended model is the high nibble, 0x8F */
        {"Xeon, AVX-512 without BF16", "GenuineIntel", "       Intel(R) Xeon(R) Gold 6354",
         0x1b, 0x000806f8, L1_ECX_AVX, AVX2_EBX | AVX512_EBX, 0, 0xe7, 6, 0x8f,
         "Intel(R) Xeon(R) Gold 6354", DT_ISA_AVX512},
        {"AVX-512F without BW", "GenuineIntel", "Xeon Phi", 0xd, 0x00050671, L1_ECX_AVX,
         AVX2_EBX | (1u << 16) | (1u << 28), 0, 0xe7, 6, 0x57, "Xeon Phi", DT_ISA_AVX2},
        {"Haswell", "GenuineIntel", "Intel(R) Core(TM) i7-4770", 0xd, 0x000306c3, L1_ECX_AVX,
         AVX2_EBX, 0, 0x07, 6, 0x3c, "Intel(R) Core(TM) i7-4770", DT_ISA_AVX2},
        {"Sandy Bridge", "GenuineIntel", "", 0xd, 0x000206a7, L1_ECX_AVX & ~(1u << 12), 0, 0,
         0x07, 6, 0x2a, "unknown", DT_ISA_AVX},
        /* leaf 7 beyond the highest leaf: its registers are not to be read */
        {"old CPU, max leaf 5", "GenuineIntel", "Core 2", 5, 0x000006f6, (1u << 0),
         AVX2_EBX | AVX512_EBX, 0, 0, 6, 0xf, "Core 2", DT_ISA_BASE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cpu_case *c = &cases[i];
        dt_cpuid_raw raw;
        dt_cpu_info cpu;
        raw_of(c, &raw);
        dt_cpu_decode(&raw, &cpu);
        EXPECT(strcmp(cpu.vendor, c->vendor) == 0, "%s: vendor '%s'", c->what, cpu.vendor);
        EXPECT(cpu.family == c->family && cpu.model == c->model,
               "%s: family %d model %#x, expected %d %#x", c->what, cpu.family, cpu.model,
               c->family, c->model);
        EXPECT(strcmp(cpu.model_name, c->model_name) == 0, "%s: model name '%s', expected '%s'",
               c->what, cpu.model_name, c->model_name);
        EXPECT(cpu.isa == c->isa, "%s: level %s, expected %s", c->what, dt_isa_name(cpu.isa),
               dt_isa_name(c->isa));
    }
    char names[200];
    dt_cpu_features_str(DT_CPU_AVX2 | DT_CPU_AVX512_BF16, names, sizeof names);
    EXPECT(strcmp(names, "avx2 avx512_bf16") == 0, "feature names '%s'", names);
}

TEST(blas_kernel_choice, 1)
{
    static const struct {
        const char *kernels;
        dt_isa cpu;
        const char *want; /* NULL: leave OpenBLAS's choice */
    } cases[] = {
        {"Prescott", DT_ISA_AVX512, "SkylakeX"}, /* the Xeon of issue 14 */
        {"Prescott", DT_ISA_AVX512_BF16, "Cooperlake"},
        {"Haswell", DT_ISA_AVX512_BF16, "Cooperlake"},
        {"Haswell", DT_ISA_AVX512, "SkylakeX"},
        {"Nehalem", DT_ISA_AVX2, "Haswell"},
        {"Sandybridge", DT_ISA_AVX2, "Haswell"},
        {"Core2", DT_ISA_AVX, "Sandybridge"},
        {"Haswell", DT_ISA_AVX2, NULL},
        {"Zen", DT_ISA_AVX2, NULL},
        {"Excavator", DT_ISA_AVX2, NULL},
        {"SkylakeX", DT_ISA_AVX512, NULL},
        {"Cooperlake", DT_ISA_AVX512, NULL}, /* above the CPU: not libdt's business */
        {"SapphireRapids", DT_ISA_AVX512_BF16, NULL},
        {"Prescott", DT_ISA_BASE, NULL},
        {"prescott", DT_ISA_AVX512, NULL}, /* names are OpenBLAS's, exactly */
        {"Unknown", DT_ISA_AVX512, NULL},
        {NULL, DT_ISA_AVX512, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_cpu_info cpu = {.isa = cases[i].cpu};
        const char *got = dt_blas_kernels_better(cases[i].kernels, &cpu);
        const char *want = cases[i].want;
        EXPECT(want ? got && strcmp(got, want) == 0 : got == NULL,
               "kernels %s on a %s CPU: libdt asks for %s, expected %s",
               cases[i].kernels ? cases[i].kernels : "(null)", dt_isa_name(cases[i].cpu),
               got ? got : "nothing", want ? want : "nothing");
    }
    EXPECT(dt_blas_kernels_isa("Zen") == DT_ISA_AVX2 && dt_blas_kernels_isa("Atom") == 0 &&
               dt_blas_kernels_isa("Z14") == -1,
           "levels of Zen, Atom, Z14: %d %d %d", dt_blas_kernels_isa("Zen"),
           dt_blas_kernels_isa("Atom"), dt_blas_kernels_isa("Z14"));
}

TEST(blas_info_as_json_and_line, 1)
{
    dt_blas_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.library, sizeof info.library, "OpenBLAS 0.3.21");
    snprintf(info.kernels, sizeof info.kernels, "Cooperlake");
    snprintf(info.blas_choice, sizeof info.blas_choice, "Haswell");
    snprintf(info.cpu.model_name, sizeof info.cpu.model_name, "A \"quoted\" \\ CPU");
    info.chosen_by = DT_BLAS_BY_LIBDT;
    info.cpu.isa = DT_ISA_AVX512_BF16;
    char buf[512], small[40];
    const char *want = "\"blas\": \"OpenBLAS 0.3.21\", \"blas_kernels\": \"Cooperlake\", "
                       "\"blas_kernels_by\": \"libdt\", \"blas_own_choice\": \"Haswell\", "
                       "\"cpu\": \"A \\\"quoted\\\" \\\\ CPU\", \"cpu_isa\": \"avx512_bf16\"";
    dt_blas_info_json(&info, buf, sizeof buf);
    EXPECT(strcmp(buf, want) == 0, "got  %s\nwant %s", buf, want);
    dt_blas_info_json(&info, small, sizeof small); /* cut, terminated, not overrun */
    EXPECT(strlen(small) == sizeof small - 1 && strncmp(small, want, sizeof small - 1) == 0,
           "cut to %zu bytes: '%s'", sizeof small, small);
    const char *line = "OpenBLAS 0.3.21, Cooperlake kernels (chosen by libdt; OpenBLAS chose "
                       "Haswell); CPU A \"quoted\" \\ CPU (avx512_bf16)";
    dt_blas_info_str(&info, buf, sizeof buf);
    EXPECT(strcmp(buf, line) == 0, "one line: '%s'", buf);
}

/* ---------------------------------------------------------------- this process */

/* What every process of this binary runs with. Printed for the restart
 * tests below, which run it in children; on its own (make test runs it
 * under the grader) it checks that this very test binary does not run on
 * fallback kernels that libdt should have replaced. */
TEST(blas_kernels_match_cpu, 1)
{
    dt_blas_info info;
    dt_result r = dt_blas_info_get(&info);
    printf("blas: kernels=%s by=%s own=%s\n", info.kernels,
           dt_blas_chooser_name(info.chosen_by), info.blas_choice);
    fflush(stdout);
    EXPECT_OK(r);
    if (!dt_blas_available()) {
        EXPECT(info.chosen_by == DT_BLAS_BY_BUILD, "no OpenBLAS, kernels chosen by %s",
               dt_blas_chooser_name(info.chosen_by));
        return;
    }
    const char *off = getenv("DT_BLAS_KERNELS");
    if (info.chosen_by == DT_BLAS_BY_BLAS && info.dynamic && !(off && !strcmp(off, "off")))
        EXPECT(dt_blas_kernels_better(info.kernels, &info.cpu) == NULL,
               "OpenBLAS runs %s kernels on this %s CPU and libdt left them", info.kernels,
               dt_isa_name(info.cpu.isa));
    if (info.chosen_by == DT_BLAS_BY_LIBDT)
        EXPECT(strcmp(info.kernels, getenv("OPENBLAS_CORETYPE")) == 0,
               "libdt asked for %s, OpenBLAS runs %s", getenv("OPENBLAS_CORETYPE"), info.kernels);
}

/* ---------------------------------------------------------------- children */

typedef struct {
    int status; /* exit status, or -1 */
    char out[2048], err[2048];
} child;

static void read_into(int fd, char *buf, size_t cap, size_t *len, int *open_fd)
{
    ssize_t n = read(fd, buf + *len, cap - 1 - *len);
    if (n > 0)
        *len += (size_t)n;
    else if (n == 0 || errno != EINTR)
        *open_fd = 0;
    buf[*len] = '\0';
}

/* Runs this binary's blas_kernels_match_cpu in a child whose environment is
 * ours without any variable the check reads, plus `set` (NAME=VALUE, NULL
 * ended). Waits at most 20 s. */
static void run_child(const char *const *set, child *c)
{
    static const char *const cleared[] = {"OPENBLAS_CORETYPE", "DT_BLAS_KERNELS", "DT_QUIET",
                                          "DT_BLAS_TEST_FALLBACK", "DT_BLAS_REPLACED",
                                          "DT_BLAS_NOTED", "DT_TEST_TIMEOUT", NULL};
    int po[2], pe[2];
    memset(c, 0, sizeof *c);
    c->status = -1;
    EXPECT(pipe(po) == 0 && pipe(pe) == 0, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        for (int i = 0; cleared[i]; i++)
            unsetenv(cleared[i]);
        for (int i = 0; set[i]; i++)
            putenv((char *)set[i]);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        char *argv[] = {"grade", "--run", "blas_kernels_match_cpu", NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    size_t lo = 0, le = 0;
    int open_o = 1, open_e = 1;
    double deadline = dt_now() + 20;
    while ((open_o || open_e) && dt_now() < deadline) {
        struct pollfd p[2] = {{open_o ? po[0] : -1, POLLIN, 0}, {open_e ? pe[0] : -1, POLLIN, 0}};
        if (poll(p, 2, 100) <= 0)
            continue;
        if (p[0].revents)
            read_into(po[0], c->out, sizeof c->out, &lo, &open_o);
        if (p[1].revents)
            read_into(pe[0], c->err, sizeof c->err, &le, &open_e);
    }
    close(po[0]);
    close(pe[0]);
    int st = 0;
    if (open_o || open_e)
        kill(pid, SIGKILL);
    EXPECT(waitpid(pid, &st, 0) == pid && !open_o && !open_e,
           "the child did not finish within 20 s (stderr: %s)", c->err);
    c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, prefix)); p++)
        n += p == text || p[-1] == '\n';
    return n;
}

/* The kernels libdt must pick over a fallback to Prescott here, or NULL when
 * this build or machine gives it nothing to pick (no OpenBLAS, a CPU without
 * AVX, an OpenBLAS with one kernel set). */
static const char *expected_fix(void)
{
    dt_blas_info info;
    dt_blas_info_get(&info);
    if (!dt_blas_available() || !info.dynamic)
        return NULL;
    return dt_blas_kernels_better("Prescott", &info.cpu);
}

TEST_T(blas_restart_replaces_fallback, 1, 30)
{
    const char *want = expected_fix();
    const char *env[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_TEST_FALLBACK=1", NULL};
    child c;
    run_child(env, &c);
    EXPECT(c.status == 0, "child failed (status %d): %s%s", c.status, c.out, c.err);
    char line[160];
    if (!want) {
        EXPECT(count_lines(c.err, "dtlab:") == 0, "nothing to replace, yet: %s", c.err);
        return;
    }
    snprintf(line, sizeof line, "blas: kernels=%s by=libdt own=Prescott\n", want);
    EXPECT(strstr(c.out, line), "expected '%.*s', the child says: %s", (int)strlen(line) - 1,
           line, c.out);
    EXPECT(count_lines(c.err, "dtlab:") == 1 && strstr(c.err, "Prescott") &&
               strstr(c.err, want),
           "expected one line on stderr naming Prescott and %s, got: %s", want, c.err);
}

TEST_T(blas_restart_quiet_off_user, 1, 30)
{
    const char *want = expected_fix();
    child c;
    const char *quiet[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_TEST_FALLBACK=1", "DT_QUIET=1",
                           NULL};
    run_child(quiet, &c);
    EXPECT(c.status == 0 && count_lines(c.err, "dtlab:") == 0,
           "DT_QUIET=1: status %d, stderr: %s", c.status, c.err);
    EXPECT(!want || strstr(c.out, want), "DT_QUIET=1 must not keep Prescott: %s", c.out);

    const char *off[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_TEST_FALLBACK=1",
                         "DT_BLAS_KERNELS=off", NULL};
    run_child(off, &c);
    EXPECT(c.status == 0 && count_lines(c.err, "dtlab:") == 0 &&
               (!dt_blas_available() || strstr(c.out, "kernels=Prescott by=openblas")),
           "DT_BLAS_KERNELS=off: status %d, out: %s, err: %s", c.status, c.out, c.err);

    /* the user's own OPENBLAS_CORETYPE stays; a slow one is named once */
    const char *user[] = {"OPENBLAS_CORETYPE=Prescott", NULL};
    run_child(user, &c);
    EXPECT(c.status == 0 && (!dt_blas_available() ||
                             strstr(c.out, "kernels=Prescott by=OPENBLAS_CORETYPE")),
           "the user's Prescott: status %d, out: %s", c.status, c.out);
    EXPECT(count_lines(c.err, "dtlab:") == (want ? 1 : 0) &&
               (!want || strstr(c.err, "OPENBLAS_CORETYPE=Prescott")),
           "the user's Prescott: stderr: %s", c.err);
    const char *noted[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_NOTED=1", NULL};
    run_child(noted, &c);
    EXPECT(c.status == 0 && count_lines(c.err, "dtlab:") == 0,
           "said once per process tree: a child of a process that said it says: %s", c.err);
}

/* A process that is the restart, or a child of it, never restarts. */
TEST_T(blas_restart_never_twice, 1, 30)
{
    const char *env[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_TEST_FALLBACK=1",
                         "DT_BLAS_REPLACED=Prescott", NULL};
    child c;
    run_child(env, &c);
    EXPECT(c.status == 0 && count_lines(c.err, "dtlab:") == 0,
           "status %d, stderr: %s", c.status, c.err);
    EXPECT(!dt_blas_available() || strstr(c.out, "kernels=Prescott by=libdt own=Prescott"),
           "expected to keep Prescott, reported as libdt's: %s", c.out);
}

TEST_T(blas_bad_settings_named, 1, 30)
{
    static const char *const bad[][2] = {{"DT_BLAS_KERNELS=fast", "DT_BLAS_KERNELS='fast'"},
                                         {"DT_QUIET=yes", "DT_QUIET='yes'"},
                                         {"DT_BLAS_TEST_FALLBACK=2", "DT_BLAS_TEST_FALLBACK='2'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *env[] = {"OPENBLAS_CORETYPE=Prescott", "DT_BLAS_TEST_FALLBACK=1", bad[i][0],
                             NULL};
        if (i == 2)
            env[1] = "DT_QUIET=0";
        child c;
        run_child(env, &c);
        /* the line at start-up, then dt_blas_info_get's error in the test */
        EXPECT(c.status == 1 && count_lines(c.err, "dtlab:") == 1 && strstr(c.err, bad[i][1]) &&
                   strstr(c.err, "DT_ERR_INVALID_ARG"),
               "%s: expected status 1 and the variable named, got %d: %s", bad[i][0], c.status,
               c.err);
        EXPECT(!dt_blas_available() || strstr(c.out, "kernels=Prescott"),
               "%s: kernels changed all the same: %s", bad[i][0], c.out);
    }
}
