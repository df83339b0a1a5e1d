/* The FFT against a direct DFT in long double, for the sizes the front ends
 * use and a few awkward ones. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "fft.h"

static double max_error(int n)
{
    sw_error err = {SW_OK, ""};
    sw_fft *f = NULL;
    if (sw_fft_create(n, &f, &err) != SW_OK)
        return INFINITY;
    double complex *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    srand(n);
    for (int i = 0; i < n; i++)
        x[i] = (double)rand() / RAND_MAX - 0.5 + I * ((double)rand() / RAND_MAX - 0.5);
    sw_fft_forward(f, x, y);
    double worst = 0.0;
    for (int k = 0; k < n; k++) {
        long double re = 0, im = 0;
        for (int j = 0; j < n; j++) {
            long double a = -2.0L * 3.141592653589793238462643383279L * j * k / n;
            re += creall(x[j]) * cosl(a) - cimagl(x[j]) * sinl(a);
            im += creall(x[j]) * sinl(a) + cimagl(x[j]) * cosl(a);
        }
        double e = hypot((double)(re - creal(y[k])), (double)(im - cimag(y[k])));
        worst = e > worst ? e : worst;
    }
    free(x);
    free(y);
    sw_fft_destroy(f);
    return worst;
}

int main(void)
{
    int sizes[] = {1, 2, 3, 4, 5, 8, 12, 60, 400, 512, 1000, 59 * 4};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CHECK_NEAR(max_error(sizes[i]), 0.0, 1e-10 * sizes[i]);

    sw_error err = {SW_OK, ""};
    sw_fft *f = NULL;
    CHECK(sw_fft_create(67, &f, &err) == SW_ERR_ARG); /* prime above the radix limit */
    CHECK(f == NULL);
    sw_error_clear(&err);
    CHECK(sw_fft_create(0, &f, &err) == SW_ERR_ARG);

    /* power spectrum of a pure tone lands in its bin */
    sw_error_clear(&err);
    CHECK(sw_fft_create(400, &f, &err) == SW_OK);
    double in[400], power[201];
    double complex work[800];
    for (int i = 0; i < 400; i++)
        in[i] = cos(2.0 * M_PI * 25.0 * i / 400.0);
    sw_fft_power(f, in, work, power);
    CHECK_NEAR(power[25], 200.0 * 200.0, 1e-6);
    CHECK_NEAR(power[24], 0.0, 1e-12);
    sw_fft_destroy(f);
    return sw_check_summary("test_fft");
}
