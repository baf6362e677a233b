/* cpu.c - what the CPU can run: vendor, model name and the vector
 * instruction sets that matter to a BLAS, read with the cpuid instruction.
 *
 * Decoding is a pure function of the raw registers (dt_cpu_decode), so that
 * tests can feed it the registers of CPUs they do not run on; dt_cpu_detect
 * only reads this machine's registers and decodes them.
 *
 * An instruction set counts only when the CPU has it AND the operating
 * system saves its registers on a context switch, which XGETBV(0) (the XCR0
 * register) tells: bits 1-2 for the SSE and AVX (YMM) state, bits 5-7 for
 * AVX-512's opmask and ZMM state. A hypervisor or kernel may leave AVX-512
 * off on a CPU that has it; OpenBLAS checks the same bits. */
#include "dt/tensor.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Register indices in dt_cpuid_raw's arrays. */
enum { EAX, EBX, ECX, EDX };

/* XCR0 bits: which register state the OS saves (Intel SDM vol. 1, 13.3). */
#define XCR0_AVX_STATE 0x06ull    /* SSE (bit 1) and YMM upper halves (bit 2) */
#define XCR0_AVX512_STATE 0xe0ull /* opmask (5), ZMM0-15 upper (6), ZMM16-31 (7) */

static int bit(uint32_t reg, int n) { return (reg >> n) & 1u; }

static const char *const isa_names[DT_NUM_ISAS] = {
    [DT_ISA_BASE] = "base",
    [DT_ISA_AVX] = "avx",
    [DT_ISA_AVX2] = "avx2",
    [DT_ISA_AVX512] = "avx512",
    [DT_ISA_AVX512_BF16] = "avx512_bf16",
};

const char *dt_isa_name(dt_isa isa)
{
    return (int)isa >= 0 && isa < DT_NUM_ISAS ? isa_names[isa] : "unknown";
}

/* family and model as the vendors' manuals define them: the extended
 * family is added only when the base family is 0xF, and the extended model
 * is the high nibble when the base family is 6 (Intel) or 0xF. */
static void decode_signature(uint32_t eax, dt_cpu_info *out)
{
    int base_family = (int)(eax >> 8) & 0xf, base_model = (int)(eax >> 4) & 0xf;
    int ext_family = (int)(eax >> 20) & 0xff, ext_model = (int)(eax >> 16) & 0xf;
    out->family = base_family == 0xf ? base_family + ext_family : base_family;
    out->model = base_family == 0x6 || base_family == 0xf ? (ext_model << 4) | base_model
                                                           : base_model;
    out->stepping = (int)eax & 0xf;
}

/* The brand string: 48 bytes in 12 registers, padded with spaces or NULs. */
static void decode_brand(const dt_cpuid_raw *raw, dt_cpu_info *out)
{
    char s[49] = {0};
    if (raw->ext0[EAX] >= 0x80000004u)
        memcpy(s, raw->brand, 48);
    const char *p = s;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n == 0) {
        snprintf(out->model_name, sizeof out->model_name, "unknown");
        return;
    }
    memcpy(out->model_name, p, n);
    out->model_name[n] = '\0';
}

/* The features, each only where the OS saves its registers. */
static unsigned decode_features(const dt_cpuid_raw *raw)
{
    unsigned f = 0;
    uint32_t max_leaf = raw->leaf0[EAX];
    const uint32_t *l1 = raw->leaf1, *l7 = raw->leaf7;
    if (bit(l1[EDX], 26))
        f |= DT_CPU_SSE2;
    if (bit(l1[ECX], 0))
        f |= DT_CPU_SSE3;
    int os_avx = bit(l1[ECX], 27) /* OSXSAVE: XGETBV works */ &&
                 (raw->xcr0 & XCR0_AVX_STATE) == XCR0_AVX_STATE;
    int os_avx512 = os_avx && (raw->xcr0 & XCR0_AVX512_STATE) == XCR0_AVX512_STATE;
    if (!os_avx)
        return f;
    if (bit(l1[ECX], 28))
        f |= DT_CPU_AVX;
    if (bit(l1[ECX], 12))
        f |= DT_CPU_FMA;
    if (max_leaf < 7)
        return f;
    if (bit(l7[EBX], 5))
        f |= DT_CPU_AVX2;
    if (!os_avx512)
        return f;
    static const struct {
        int reg_bit;
        unsigned feature;
    } avx512[] = {{16, DT_CPU_AVX512F}, {17, DT_CPU_AVX512DQ}, {28, DT_CPU_AVX512CD},
                  {30, DT_CPU_AVX512BW}, {31, DT_CPU_AVX512VL}};
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (bit(l7[EBX], avx512[i].reg_bit))
            f |= avx512[i].feature;
    if ((f & DT_CPU_AVX512F) && bit(raw->leaf7_1[EAX], 5)) /* leaf 7, subleaf 1 */
        f |= DT_CPU_AVX512_BF16;
    return f;
}

/* The highest level whose every feature is there: each includes the ones
 * below it, as OpenBLAS's kernels for that level assume. */
static dt_isa isa_of(unsigned f)
{
    const unsigned avx2 = DT_CPU_AVX | DT_CPU_FMA | DT_CPU_AVX2;
    const unsigned avx512 = avx2 | DT_CPU_AVX512F | DT_CPU_AVX512DQ | DT_CPU_AVX512CD |
                            DT_CPU_AVX512BW | DT_CPU_AVX512VL;
    if ((f & (avx512 | DT_CPU_AVX512_BF16)) == (avx512 | DT_CPU_AVX512_BF16))
        return DT_ISA_AVX512_BF16;
    if ((f & avx512) == avx512)
        return DT_ISA_AVX512;
    if ((f & avx2) == avx2)
        return DT_ISA_AVX2;
    if (f & DT_CPU_AVX)
        return DT_ISA_AVX;
    return DT_ISA_BASE;
}

void dt_cpu_decode(const dt_cpuid_raw *raw, dt_cpu_info *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->vendor + 0, &raw->leaf0[EBX], 4); /* "Genu" "ineI" "ntel": EBX, EDX, ECX */
    memcpy(out->vendor + 4, &raw->leaf0[EDX], 4);
    memcpy(out->vendor + 8, &raw->leaf0[ECX], 4);
    if (raw->leaf0[EAX] >= 1)
        decode_signature(raw->leaf1[EAX], out);
    decode_brand(raw, out);
    out->features = raw->leaf0[EAX] >= 1 ? decode_features(raw) : 0;
    out->isa = isa_of(out->features);
}

int dt_cpu_features_str(unsigned features, char *buf, size_t len)
{
    static const char *const names[] = {"sse2", "sse3", "avx", "fma", "avx2", "avx512f",
                                        "avx512dq", "avx512cd", "avx512bw", "avx512vl",
                                        "avx512_bf16"};
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(features & (1u << i)))
            continue;
        int n = snprintf(buf + used, used < len ? len - used : 0, "%s%s", used ? " " : "",
                         names[i]);
        used += (size_t)n;
    }
    return (int)used;
}

#if defined(__x86_64__) || defined(__i386__)
static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __cpuid_count(leaf, sub, r[EAX], r[EBX], r[ECX], r[EDX]);
}

void dt_cpu_detect(dt_cpu_info *out)
{
    dt_cpuid_raw raw;
    memset(&raw, 0, sizeof raw);
    cpuid(0, 0, raw.leaf0);
    if (raw.leaf0[EAX] >= 1)
        cpuid(1, 0, raw.leaf1);
    if (raw.leaf0[EAX] >= 7) {
        cpuid(7, 0, raw.leaf7);
        if (raw.leaf7[EAX] >= 1) /* leaf 7's EAX: the highest subleaf */
            cpuid(7, 1, raw.leaf7_1);
    }
    cpuid(0x80000000u, 0, raw.ext0);
    for (uint32_t i = 0; i < 3 && raw.ext0[EAX] >= 0x80000004u; i++)
        cpuid(0x80000002u + i, 0, raw.brand[i]);
    if (bit(raw.leaf1[ECX], 27)) { /* OSXSAVE: XGETBV may be executed */
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        raw.xcr0 = ((uint64_t)hi << 32) | lo;
    }
    dt_cpu_decode(&raw, out);
}
#else
/* Not x86: no cpuid. The BLAS's own choice is left alone. */
void dt_cpu_detect(dt_cpu_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->model_name, sizeof out->model_name, "unknown (not x86)");
    out->isa = DT_ISA_BASE;
}
#endif
