/* Centroid-linkage clustering: a hand-computed dendrogram, weights, and bad
 * input; under ASan this also proves the bookkeeping stays in bounds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ahc.h"
#include "check.h"

/* points on a line: squared distances */
static void line(const double *x, int n, float *d2)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            d2[i * n + j] = (float)((x[i] - x[j]) * (x[i] - x[j]));
}

static void test_line(void)
{
    /* 0, 1 merge at 1 (centroid 0.5); 10, 12 at 2 (centroid 11); then the two
     * centroids 0.5 and 11 at 10.5 */
    const double x[] = {0.0, 10.0, 1.0, 12.0};
    float d2[16];
    double z[12], w[] = {1, 1, 1, 1};
    line(x, 4, d2);
    sw_error err = {SW_OK, ""};
    CHECK(sw_ahc_centroid(d2, w, 4, z, &err) == SW_OK);
    CHECK(z[0] == 0 && z[1] == 2);
    CHECK_NEAR(z[2], 1.0, 1e-6);
    CHECK(z[3] == 2);
    CHECK(z[4] == 1 && z[5] == 3);
    CHECK_NEAR(z[6], 2.0, 1e-6);
    CHECK(z[8] == 4 && z[9] == 5);
    CHECK_NEAR(z[10], 10.5, 1e-5);
    CHECK(z[11] == 4);
}

static void test_weights(void)
{
    /* a point standing for 3 pulls the merged centroid: 0 (x3) and 4 merge
     * at 4 into centroid 1; 9 is then 8 away */
    const double x[] = {0.0, 4.0, 9.0};
    float d2[9];
    double z[8], w[] = {3, 1, 1};
    line(x, 3, d2);
    sw_error err = {SW_OK, ""};
    CHECK(sw_ahc_centroid(d2, w, 3, z, &err) == SW_OK);
    CHECK_NEAR(z[2], 4.0, 1e-6);
    CHECK(z[3] == 4);
    CHECK_NEAR(z[6], 8.0, 1e-5);
    CHECK(z[7] == 5);
}

static void test_bad_input(void)
{
    float d2[4] = {0, 1, 1, 0};
    double z[4], w[] = {1, 0};
    sw_error err = {SW_OK, ""};
    CHECK(sw_ahc_centroid(d2, w, 2, z, &err) == SW_ERR_ARG);
    CHECK(strlen(err.msg) > 0);
    double ok[] = {1, 1};
    err.code = SW_OK;
    d2[1] = NAN;
    CHECK(sw_ahc_centroid(d2, ok, 2, z, &err) == SW_ERR_ARG);
    err.code = SW_OK;
    CHECK(sw_ahc_centroid(d2, ok, 1, z, &err) == SW_ERR_ARG);
}

static void test_many(void)
{
    enum { N = 300 };
    float *d2 = malloc(sizeof(float) * N * N);
    double *z = malloc(sizeof(double) * 4 * (N - 1)), w[N], x[N];
    if (!d2 || !z) {
        CHECK(!"out of memory");
        free(d2);
        free(z);
        return;
    }
    for (int i = 0; i < N; i++) {
        x[i] = (double)((i * 7919) % 1000) / 10.0;
        w[i] = 1.0;
    }
    line(x, N, d2);
    sw_error err = {SW_OK, ""};
    CHECK(sw_ahc_centroid(d2, w, N, z, &err) == SW_OK);
    CHECK(z[4 * (N - 2) + 3] == N); /* the root holds everything */
    free(d2);
    free(z);
}

int main(void)
{
    test_line();
    test_weights();
    test_bad_input();
    test_many();
    return sw_check_summary("test_ahc");
}
