/* One step of Whisper's token search on the device (backend.h search_step):
 * the logits rules, log-softmax, the cumulative score and each row's k best
 * tokens, so that only those come down, not beams x vocabulary floats
 * (issue 37). The arithmetic is whisper_logits.c's, step for step: a float32
 * maximum, exponentials summed in double and rounded once, one float32
 * constant added to every entry; only the order of the double sums differs,
 * which rounding to float32 almost always hides. With a temperature the
 * row's token is drawn instead (search_draw.h). */
#include <float.h>

#include "cuda_internal.h"
#include "elementwise_math.h"
#include "search_block.h"
#include "search_draw.h"

#define DISABLED (-FLT_MAX) /* SW_LOGIT_DISABLED */

/* sw_log_softmax_rows' constant: -max - logf(sum of exp(y - max)). */
static __device__ float log_softmax_shift(const float *y, int64_t n, float *shf, double *shd)
{
    float mx = row_max(y, 0, n, shf);
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += SEARCH_THREADS)
        s += (double)sw_expf_nonpositive(y[j] - mx);
    s = block_sum_d(s, shd);
    return -mx - logf((float)s);
}

static __device__ int better(float a, int32_t ia, float b, int32_t ib)
{
    return a > b || (a == b && ia < ib);
}

/* One block a row. The rows' plans are read from device memory (not taken
 * as arguments), so that a graph replaying this launch reads each step's. */
__global__ void search_step_rows(const float *logits, const int8_t *mask, float *work, int64_t n,
                                 sw_search_params p, const sw_search_row *rows, int32_t *ids,
                                 float *scores, float *no_speech)
{
    SW_SHARED(float, shf, SEARCH_THREADS);
    SW_SHARED(double, shd, SEARCH_THREADS);
    SW_SHARED(float, cand_s, SEARCH_THREADS *SW_SEARCH_MAX_K);
    SW_SHARED(int32_t, cand_i, SEARCH_THREADS * SW_SEARCH_MAX_K);
    SW_SHARED(int32_t, head, SEARCH_THREADS);
    SW_SHARED(unsigned long long, units, SEARCH_THREADS + 1);
    const sw_search_row *row = &rows[blockIdx.x];
    const float *x = logits + (int64_t)blockIdx.x * n;
    float *y = work + (int64_t)blockIdx.x * n;
    int t = threadIdx.x, k = p.k;

    /* the no-speech probability reads the raw row (sw_softmax_at) */
    if (row->no_speech >= 0) {
        float mx = row_max(x, 0, n, shf);
        double s = 0.0;
        for (int64_t j = t; j < n; j += SEARCH_THREADS)
            s += (double)expf(x[j] - mx);
        s = block_sum_d(s, shd);
        if (t == 0)
            no_speech[blockIdx.x] = expf(x[row->no_speech] - mx) * (1.0f / (float)s);
    }

    /* the rules that disable tokens whatever the scores */
    for (int64_t j = t; j < n; j += SEARCH_THREADS) {
        int off = (mask[j] & row->mask_bits) != 0;
        for (int r = 0; r < 3; r++)
            off |= j >= row->from[r] && j < row->to[r];
        y[j] = off ? DISABLED : x[j];
    }
    __syncthreads();

    /* the timestamp check: the timestamps' summed probability beats every
     * single text token's, so only a timestamp may come */
    if (row->check) {
        int64_t tsb = p.timestamp_begin;
        float c = log_softmax_shift(y, n, shf, shd);
        float max_text = row_max(y, 0, tsb, shf) + c;
        float mx = row_max(y, tsb, n, shf) + c;
        double s = 0.0;
        for (int64_t j = tsb + t; j < n; j += SEARCH_THREADS)
            s += exp((double)((y[j] + c) - mx));
        s = block_sum_d(s, shd);
        float lse = (float)log((double)(float)s) + mx;
        if (lse > max_text)
            for (int64_t j = t; j < tsb; j += SEARCH_THREADS)
                y[j] = DISABLED;
        __syncthreads();
    }

    float c = p.log_softmax ? log_softmax_shift(y, n, shf, shd) : 0.0f;

    /* random sampling (search_draw.h): one token, its score as the best's */
    if (p.temperature > 0.0f) {
        int32_t id = draw_row(y, n, c, p.log_softmax, p.temperature, row, shf, shd, units, head);
        if (t == 0) {
            ids[blockIdx.x] = id;
            scores[blockIdx.x] = p.log_softmax ? (y[id] + c) + row->cum : y[id];
        }
        return;
    }

    /* each thread's k best of its entries, in order, then thread 0 merges */
    float best_s[SW_SEARCH_MAX_K];
    int32_t best_i[SW_SEARCH_MAX_K];
    for (int i = 0; i < k; i++) {
        best_s[i] = -INFINITY;
        best_i[i] = INT32_MAX;
    }
    for (int64_t j = t; j < n; j += SEARCH_THREADS) {
        float v = p.log_softmax ? (y[j] + c) + row->cum : y[j];
        if (!better(v, (int32_t)j, best_s[k - 1], best_i[k - 1]))
            continue;
        int i = k - 1;
        for (; i > 0 && better(v, (int32_t)j, best_s[i - 1], best_i[i - 1]); i--) {
            best_s[i] = best_s[i - 1];
            best_i[i] = best_i[i - 1];
        }
        best_s[i] = v;
        best_i[i] = (int32_t)j;
    }
    for (int i = 0; i < k; i++) {
        cand_s[t * SW_SEARCH_MAX_K + i] = best_s[i];
        cand_i[t * SW_SEARCH_MAX_K + i] = best_i[i];
    }
    head[t] = 0;
    __syncthreads();
    if (t == 0)
        for (int i = 0; i < k; i++) {
            int w = 0;
            for (int u = 1; u < SEARCH_THREADS; u++) {
                int hu = u * SW_SEARCH_MAX_K + head[u], hw = w * SW_SEARCH_MAX_K + head[w];
                if (head[u] < k &&
                    (head[w] >= k || better(cand_s[hu], cand_i[hu], cand_s[hw], cand_i[hw])))
                    w = u;
            }
            int hw = w * SW_SEARCH_MAX_K + head[w];
            ids[(int64_t)blockIdx.x * k + i] = cand_i[hw];
            scores[(int64_t)blockIdx.x * k + i] = cand_s[hw];
            head[w]++;
        }
}

sw_status sw_cuda_search_step(sw_backend *be, const sw_tensor *logits, const sw_tensor *mask,
                              const sw_tensor *rows_plan, sw_tensor *work_t,
                              const sw_search_params *p, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n_rows = logits->shape[0], n = logits->shape[1], k = p->k;
    if (p->temperature > 0.0f && k != 1)
        return sw_fail(err, SW_ERR_ARG, "search_step: a draw brings one token a row, not %d",
                       (int)k);
    sw_status st;
    if (!sw_cuda_enter_work(c, n_rows, &st, err))
        return st;
    /* the masked rows, then ids, scores and the no-speech probabilities
     * side by side (SW_SEARCH_FOUND_AT), all in the caller's work: nothing
     * allocated, nothing copied, so a capture can record it */
    float *work = (float *)work_t->data;
    float *found = work + SW_SEARCH_FOUND_AT(n_rows, n);
    SW_LAUNCH(search_step_rows, (unsigned)n_rows, SEARCH_THREADS, 0, c->stream)
    ((const float *)logits->data, (const int8_t *)mask->data, work, n, *p,
     (const sw_search_row *)rows_plan->data, (int32_t *)found, found + n_rows * k,
     found + 2 * n_rows * k);
    return sw_cuda_check_launch(c, err, "search_step_rows");
}
