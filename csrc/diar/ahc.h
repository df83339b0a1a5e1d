/* Agglomerative clustering with centroid linkage, the way scipy's
 * linkage(method="centroid") builds its dendrogram (pyannote 3.1 clusters
 * speaker embeddings with it).
 *
 * The caller gives the squared Euclidean distances between the n starting
 * points (n x n, symmetric, row-major; overwritten) and each point's weight
 * (how many embeddings it already stands for: 1 for plain embeddings). Two
 * clusters merge at the Euclidean distance between their weighted centroids;
 * the Lance-Williams update keeps that exact without the points themselves.
 * Each row's nearest neighbour is cached, so a merge costs O(n) unless it
 * invalidates rows (centroid linkage is not monotone, so it can); typical
 * runs are O(n^2) time, and the memory is the matrix plus O(n). */
#ifndef SW_AHC_H
#define SW_AHC_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* linkage: (n - 1) rows of (a, b, height, size) as scipy writes them: a < b
 * are cluster ids (0..n-1 the points, n + i the cluster row i made), height
 * the distance at which they merged, size their total weight. */
sw_status sw_ahc_centroid(float *d2, const double *weights, int64_t n, double *linkage,
                          sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
