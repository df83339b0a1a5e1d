#include "whisper_dtw.h"

#include <math.h>
#include <stdlib.h>

enum { DIAGONAL = 0, VERTICAL = 1, HORIZONTAL = 2 };

sw_status sw_negative_dtw(const float *matrix, int64_t n, int64_t m, int32_t *text_idx,
                          int32_t *time_idx, int64_t *length, sw_error *err)
{
    *length = 0;
    if (n < 1 || m < 1)
        return sw_fail(err, SW_ERR_ARG, "dtw: the matrix is empty (%lld x %lld)", (long long)n,
                       (long long)m);
    int64_t w = m + 1;
    float *cost = malloc(sizeof *cost * (size_t)((n + 1) * w));
    unsigned char *trace = malloc((size_t)((n + 1) * w));
    if (!cost || !trace) {
        free(cost);
        free(trace);
        return sw_fail(err, SW_ERR_NOMEM, "dtw: no memory for a %lld x %lld table", (long long)n,
                       (long long)m);
    }
    for (int64_t k = 0; k < (n + 1) * w; k++)
        cost[k] = INFINITY;
    cost[0] = 0.0f;
    /* column by column, as the reference does (the order does not change the
     * result, only which cells are ready) */
    for (int64_t j = 1; j <= m; j++)
        for (int64_t i = 1; i <= n; i++) {
            float c0 = cost[(i - 1) * w + j - 1], c1 = cost[(i - 1) * w + j],
                  c2 = cost[i * w + j - 1];
            float c;
            unsigned char t;
            if (c0 < c1 && c0 < c2) {
                c = c0;
                t = DIAGONAL;
            } else if (c1 < c0 && c1 < c2) {
                c = c1;
                t = VERTICAL;
            } else {
                c = c2;
                t = HORIZONTAL;
            }
            cost[i * w + j] = -matrix[(i - 1) * m + j - 1] + c;
            trace[i * w + j] = t;
        }
    for (int64_t j = 0; j <= m; j++)
        trace[j] = HORIZONTAL;
    for (int64_t i = 0; i <= n; i++)
        trace[i * w] = VERTICAL;
    /* back from the end; the path is written reversed, then turned round */
    int64_t i = n, j = m, len = 0;
    while (i > 0 || j > 0) {
        text_idx[len] = (int32_t)(i - 1);
        time_idx[len] = (int32_t)(j - 1);
        len++;
        unsigned char t = trace[i * w + j];
        if (t == DIAGONAL) {
            i--;
            j--;
        } else if (t == VERTICAL) {
            i--;
        } else {
            j--;
        }
    }
    for (int64_t a = 0, b = len - 1; a < b; a++, b--) {
        int32_t ti = text_idx[a], tj = time_idx[a];
        text_idx[a] = text_idx[b];
        time_idx[a] = time_idx[b];
        text_idx[b] = ti;
        time_idx[b] = tj;
    }
    *length = len;
    free(cost);
    free(trace);
    return SW_OK;
}
