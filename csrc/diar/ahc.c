#include "ahc.h"

#include <math.h>
#include <stdlib.h>

typedef struct ahc {
    float *d2; /* n x n */
    int64_t n;
    char *alive;
    int64_t *nn;  /* nearest living neighbour of each living row */
    double *near; /* its squared distance */
    double *size; /* weight of each row's cluster */
    int64_t *id;  /* scipy's id of each row's cluster */
} ahc;

static void refresh(ahc *a, int64_t i)
{
    const float *row = a->d2 + i * a->n;
    int64_t best = -1;
    double best_d = INFINITY;
    for (int64_t j = 0; j < a->n; j++)
        if (j != i && a->alive[j] && row[j] < best_d) {
            best_d = row[j];
            best = j;
        }
    a->nn[i] = best;
    a->near[i] = best_d;
}

/* Lance-Williams for centroid linkage on squared distances: the new
 * centroid's distance to k from the old ones' (exact for Euclidean). */
static double merged_distance(double dik, double djk, double dij, double si, double sj)
{
    double s = si + sj;
    double v = (si * dik + sj * djk) / s - si * sj * dij / (s * s);
    return v > 0.0 ? v : 0.0; /* rounding can dip below zero */
}

sw_status sw_ahc_centroid(float *d2, const double *weights, int64_t n, double *linkage,
                          sw_error *err)
{
    if (!d2 || !weights || !linkage || n < 2)
        return sw_fail(err, SW_ERR_ARG, "clustering needs at least 2 points");
    for (int64_t i = 0; i < n; i++)
        if (!(weights[i] > 0.0) || !isfinite(weights[i]))
            return sw_fail(err, SW_ERR_ARG, "weight %lld is not a positive number", (long long)i);
    for (int64_t i = 0; i < n * n; i++)
        if (!isfinite(d2[i]) || d2[i] < 0.0f)
            return sw_fail(err, SW_ERR_ARG, "distance %lld is not a finite number >= 0",
                           (long long)i);
    ahc a = {d2,
             n,
             calloc((size_t)n, 1),
             malloc(sizeof(int64_t) * (size_t)n),
             malloc(sizeof(double) * (size_t)n),
             malloc(sizeof(double) * (size_t)n),
             malloc(sizeof(int64_t) * (size_t)n)};
    if (!a.alive || !a.nn || !a.near || !a.size || !a.id) {
        sw_fail(err, SW_ERR_NOMEM, "clustering %lld points", (long long)n);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        a.alive[i] = 1;
        a.size[i] = weights[i];
        a.id[i] = i;
    }
    for (int64_t i = 0; i < n; i++)
        refresh(&a, i);

    for (int64_t step = 0; step < n - 1; step++) {
        int64_t i = -1;
        for (int64_t k = 0; k < n; k++)
            if (a.alive[k] && (i < 0 || a.near[k] < a.near[i]))
                i = k;
        int64_t j = a.nn[i];
        double dij = a.near[i];
        double *row = linkage + 4 * step;
        row[0] = (double)(a.id[i] < a.id[j] ? a.id[i] : a.id[j]);
        row[1] = (double)(a.id[i] < a.id[j] ? a.id[j] : a.id[i]);
        row[2] = sqrt(dij);
        row[3] = a.size[i] + a.size[j];
        /* the merged cluster lives on in row i */
        a.alive[j] = 0;
        for (int64_t k = 0; k < n; k++) {
            if (!a.alive[k] || k == i)
                continue;
            double v = merged_distance(d2[i * n + k], d2[j * n + k], dij, a.size[i], a.size[j]);
            d2[i * n + k] = d2[k * n + i] = (float)v;
        }
        a.size[i] += a.size[j];
        a.id[i] = n + step;
        for (int64_t k = 0; k < n; k++) {
            if (!a.alive[k] || k == i)
                continue;
            if (a.nn[k] == i || a.nn[k] == j)
                refresh(&a, k);
            else if (d2[k * n + i] < a.near[k]) {
                a.nn[k] = i;
                a.near[k] = d2[k * n + i];
            }
        }
        refresh(&a, i);
    }
done:
    free(a.alive);
    free(a.nn);
    free(a.near);
    free(a.size);
    free(a.id);
    return err->code;
}
