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
};

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
            free(f);
            return sw_fail(err, SW_ERR_ARG, "FFT size %d has a prime factor above %d", n,
                           SW_FFT_MAX_RADIX);
        }
        f->factors[f->n_factors++] = p;
        rest /= p;
    }
    f->twiddles = malloc(sizeof *f->twiddles * (size_t)n);
    if (!f->twiddles) {
        free(f);
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
    if (fft) {
        free(fft->twiddles);
        free(fft);
    }
}

int sw_fft_size(const sw_fft *fft)
{
    return fft->n;
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
    int tw_step = f->n / n; /* twiddle of this sub-size: W_n^j = W_N^(j * N / n) */
    double complex t[SW_FFT_MAX_RADIX];
    for (int k = 0; k < m; k++) {
        for (int q = 0; q < p; q++)
            t[q] = out[q * m + k] * f->twiddles[(long)q * k * tw_step % f->n];
        for (int u = 0; u < p; u++) {
            double complex acc = t[0];
            /* W_p^(q u) through the big table: index q * u * m * tw_step */
            for (int q = 1; q < p; q++)
                acc += t[q] * f->twiddles[(long)q * u * m * tw_step % f->n];
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
