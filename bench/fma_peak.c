/* The float32 FMA peak of one core: twelve independent chains of fused
 * multiply-adds on registers only (no loads), 256-bit (AVX2 + FMA) and
 * 512-bit (AVX-512) where the CPU has them. The ceiling against which
 * docs/diarization.md and bench/diarization_work.py put saywho's rates
 * (sgemm on large matrices reaches 85-95% of it).
 *
 *   gcc -O3 -o /tmp/fma_peak bench/fma_peak.c && /tmp/fma_peak
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CHAINS 12
#define STEPS  200000000L

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((target("avx2,fma"))) static double peak256(void)
{
    __m256 acc[CHAINS], x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.999999f);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm256_set1_ps((float)i);
    double t = now();
    for (long k = 0; k < STEPS; k++)
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    t = now() - t;
    float sink = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        sink += acc[i][0];
    if (sink == 1234.5f) /* keeps the sums alive */
        puts("");
    return (double)CHAINS * STEPS * 16 / t / 1e9; /* 8 lanes, 2 flops each */
}

__attribute__((target("avx512f"))) static double peak512(void)
{
    __m512 acc[CHAINS], x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.999999f);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_set1_ps((float)i);
    double t = now();
    for (long k = 0; k < STEPS; k++)
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    t = now() - t;
    float sink = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        sink += acc[i][0];
    if (sink == 1234.5f)
        puts("");
    return (double)CHAINS * STEPS * 32 / t / 1e9;
}

/* The CPU's model name, as every bench prints it. */
static void print_cpu(void)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *name = strchr(line, ':');
            printf("CPU:%s", name ? name + 1 : line);
            break;
        }
    if (f)
        fclose(f);
}

int main(void)
{
    print_cpu();
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        puts("no AVX2 with FMA: nothing to measure");
        return 0;
    }
    double best256 = 0.0, best512 = 0.0;
    int has512 = __builtin_cpu_supports("avx512f");
    for (int r = 0; r < 3; r++) {
        double a = peak256(), b = has512 ? peak512() : 0.0;
        best256 = a > best256 ? a : best256;
        best512 = b > best512 ? b : best512;
    }
    printf("one core, float32 FMA: AVX2 %.1f GFLOP/s", best256);
    if (has512)
        printf(", AVX-512 %.1f GFLOP/s", best512);
    puts("");
    return 0;
}
