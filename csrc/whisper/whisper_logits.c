#include "whisper_logits.h"

#include <math.h>

#include "elementwise_math.h"
#include "cpu_dispatch.h"

/* Eight double partial sums, so the loop vectorises without the compiler
 * having to reassociate; the exp is the vectorisable polynomial (within
 * 1e-7 of exp), whose error is below a float32 ulp of the sum. */
SW_ALWAYS_INLINE void sw_log_softmax_rows_body(const float *x, int64_t rows, int64_t n, float *out)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *o = out + r * n;
        float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                       -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++)
                m8[l] = xr[i + l] > m8[l] ? xr[i + l] : m8[l];
        float mx = -INFINITY;
        for (; i < n; i++)
            mx = xr[i] > mx ? xr[i] : mx;
        for (int l = 0; l < 8; l++)
            mx = m8[l] > mx ? m8[l] : mx;
        double acc[8] = {0.0};
        i = 0;
        for (; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; l++)
                acc[l] += (double)sw_expf_nonpositive(xr[i + l] - mx);
        double sum = 0.0;
        for (; i < n; i++)
            sum += (double)sw_expf_nonpositive(xr[i] - mx);
        for (int l = 0; l < 8; l++)
            sum += acc[l];
        float c = -mx - logf((float)sum);
        for (i = 0; i < n; i++)
            o[i] = xr[i] + c;
    }
}

SW_VOID_MULTIVERSION(, sw_log_softmax_rows, (const float *x, int64_t rows, int64_t n, float *out),
                     (x, rows, n, out))
