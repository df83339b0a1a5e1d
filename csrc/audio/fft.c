#include "fft.h"

#include <math.h>
#include <stdlib.h>

#define SW_FFT_MAX_RADIX   61
#define SW_FFT_MAX_FACTORS 40

struct sw_fft {
    int n;
    int n_factors;
    int factors[SW_FFT_MAX_FACTORS];
    double complex *twiddles; /* exp(-2 pi i k / n), k < n */
    /* per level, the p x p table W_p^(q u): the inner DFT of the butterfly
     * without a modulo in the hot loop */
    double complex *radix_tables[SW_FFT_MAX_FACTORS];
};

static void fft_free(sw_fft *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_factors; i++)
        free(f->radix_tables[i]);
    free(f->twiddles);
    free(f);
}

sw_status sw_fft_create(int n, sw_fft **out, sw_error *err)
{
    *out = NULL;
    if (n < 1 || n > (1 << 24))
        return sw_fail(err, SW_ERR_ARG, "FFT size %d out of range", n);
    sw_fft *f = calloc(1, sizeof *f);
    if (!f)
        return sw_fail(err, SW_ERR_NOMEM, "FFT plan");
    f->n = n;
    /* radix 4 first: fewer passes for the power-of-two sizes */
    int rest = n;
    while (rest > 1) {
        int p = rest % 4 == 0 ? 4 : 2;
        if (rest % p != 0) {
            p = 3;
            while (p <= SW_FFT_MAX_RADIX && rest % p != 0)
                p += 2;
        }
        if (p > SW_FFT_MAX_RADIX || f->n_factors == SW_FFT_MAX_FACTORS) {
            fft_free(f);
            return sw_fail(err, SW_ERR_ARG, "FFT size %d has a prime factor above %d", n,
                           SW_FFT_MAX_RADIX);
        }
        f->factors[f->n_factors++] = p;
        rest /= p;
    }
    f->twiddles = malloc(sizeof *f->twiddles * (size_t)n);
    int ok = f->twiddles != NULL;
    for (int l = 0; ok && l < f->n_factors; l++) {
        int p = f->factors[l];
        f->radix_tables[l] = malloc(sizeof(double complex) * (size_t)(p * p));
        ok = f->radix_tables[l] != NULL;
        for (int q = 0; ok && q < p; q++)
            for (int u = 0; u < p; u++) {
                double a = -2.0 * M_PI * (double)((q * u) % p) / (double)p;
                f->radix_tables[l][q * p + u] = cos(a) + I * sin(a);
            }
    }
    if (!ok) {
        fft_free(f);
        return sw_fail(err, SW_ERR_NOMEM, "FFT twiddles");
    }
    for (int k = 0; k < n; k++) {
        double a = -2.0 * M_PI * (double)k / (double)n;
        f->twiddles[k] = cos(a) + I * sin(a);
    }
    *out = f;
    return SW_OK;
}

void sw_fft_destroy(sw_fft *fft)
{
    fft_free(fft);
}

/* Decimation in time: split into p interleaved sub-sequences of length m,
 * transform each, then combine with the twiddles. */
static void fft_rec(const sw_fft *f, const double complex *in, int stride, double complex *out,
                    int n, int level)
{
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int p = f->factors[level];
    int m = n / p;
    for (int q = 0; q < p; q++)
        fft_rec(f, in + (long)q * stride, stride * p, out + (long)q * m, m, level + 1);
    /* W_n^j = W_N^(j N / n); q k < p m = n, so the index stays below N */
    int tw_step = f->n / n;
    if (p == 2) {
        for (int k = 0; k < m; k++) {
            double complex a = out[k], b = out[m + k] * f->twiddles[k * tw_step];
            out[k] = a + b;
            out[m + k] = a - b;
        }
        return;
    }
    if (p == 4) {
        for (int k = 0; k < m; k++) {
            double complex a = out[k];
            double complex b = out[m + k] * f->twiddles[k * tw_step];
            double complex c = out[2 * m + k] * f->twiddles[2 * k * tw_step];
            double complex d = out[3 * m + k] * f->twiddles[3 * k * tw_step];
            double complex s0 = a + c, s1 = a - c, s2 = b + d, s3 = (b - d) * -I;
            out[k] = s0 + s2;
            out[m + k] = s1 + s3;
            out[2 * m + k] = s0 - s2;
            out[3 * m + k] = s1 - s3;
        }
        return;
    }
    const double complex *wp = f->radix_tables[level];
    double complex t[SW_FFT_MAX_RADIX];
    for (int k = 0; k < m; k++) {
        for (int q = 0; q < p; q++)
            t[q] = out[q * m + k] * f->twiddles[q * k * tw_step];
        for (int u = 0; u < p; u++) {
            double complex acc = t[0];
            for (int q = 1; q < p; q++)
                acc += t[q] * wp[q * p + u];
            out[u * m + k] = acc;
        }
    }
}

void sw_fft_forward(const sw_fft *fft, const double complex *in, double complex *out)
{
    fft_rec(fft, in, 1, out, fft->n, 0);
}

void sw_fft_power(const sw_fft *fft, const double *in, double complex *work, double *power)
{
    int n = fft->n;
    double complex *x = work, *spectrum = work + n;
    for (int j = 0; j < n; j++)
        x[j] = in[j];
    sw_fft_forward(fft, x, spectrum);
    for (int k = 0; k <= n / 2; k++) {
        double re = creal(spectrum[k]), im = cimag(spectrum[k]);
        power[k] = re * re + im * im;
    }
}

void sw_filter_ranges(const float *filters, int rows, int cols, int *begin, int *end)
{
    for (int r = 0; r < rows; r++) {
        const float *f = filters + (size_t)r * cols;
        int b = 0, e = cols;
        while (b < cols && f[b] == 0.0f)
            b++;
        while (e > b && f[e - 1] == 0.0f)
            e--;
        begin[r] = b;
        end[r] = e;
    }
}

void sw_apply_filters(const float *filters, int rows, int cols, const int *begin, const int *end,
                      const double *power, double *out)
{
    for (int r = 0; r < rows; r++) {
        const float *f = filters + (size_t)r * cols;
        double acc = 0.0;
        for (int k = begin[r]; k < end[r]; k++)
            acc += (double)f[k] * power[k];
        out[r] = acc;
    }
}
