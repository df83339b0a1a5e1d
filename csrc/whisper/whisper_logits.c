#include "whisper_logits.h"

#include <math.h>

#include "elementwise_math.h"
#include "cpu_dispatch.h"

/* The largest of x[0..n) (-inf for none), in eight running maxima so that
 * the loop vectorises: a maximum is exact in any order, and one compare
 * chain costs a compare's latency per value (per vocabulary entry, beam and
 * step in the timestamp rules). */
SW_ALWAYS_INLINE float max_f32(const float *x, int64_t n)
{
    float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                   -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            m8[l] = x[i + l] > m8[l] ? x[i + l] : m8[l];
    float mx = -INFINITY;
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int l = 0; l < 8; l++)
        mx = m8[l] > mx ? m8[l] : mx;
    return mx;
}

/* Eight double partial sums, so the loop vectorises without the compiler
 * having to reassociate; the exp is the vectorisable polynomial (within
 * 1e-7 of exp), whose error is below a float32 ulp of the sum. */
SW_ALWAYS_INLINE void sw_log_softmax_rows_body(const float *x, int64_t rows, int64_t n, float *out)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *o = out + r * n;
        float mx = max_f32(xr, n);
        double acc[8] = {0.0};
        int64_t i = 0;
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

float sw_softmax_at(const float *x, int n, int i)
{
    float mx = max_f32(x, n);
    double sum = 0.0;
    for (int j = 0; j < n; j++)
        sum += (double)expf(x[j] - mx);
    return expf(x[i] - mx) * (1.0f / (float)sum);
}

void sw_softmax_row(const float *x, int n, float *out)
{
    float mx = max_f32(x, n);
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        out[j] = expf(x[j] - mx);
        sum += (double)out[j];
    }
    float inv = 1.0f / (float)sum;
    for (int j = 0; j < n; j++)
        out[j] *= inv;
}

static void disable_range(float *logits, int start, int stop)
{
    for (int i = start < 0 ? 0 : start; i < stop; i++)
        logits[i] = SW_LOGIT_DISABLED;
}

/* log(sum(exp(x - max))) + max in float32, the exponentials in double
 * (CT2's reduce_logsumexp rounds the same way up to the last bit). */
static float logsumexp_f32(const float *x, int n)
{
    float mx = max_f32(x, n);
    double sum = exp((double)(x[0] - mx));
    for (int j = 1; j < n; j++)
        sum += exp((double)(x[j] - mx));
    return (float)log((double)(float)sum) + mx;
}

static void repetition_penalty(const sw_logits_rules *r, int step, float *logits,
                               const int32_t *seq, float *scratch)
{
    /* every read before any write: a repeated id is penalised once */
    for (int t = 0; t < step; t++)
        scratch[t] = logits[seq[t]];
    float p = r->repetition_penalty;
    for (int t = 0; t < step; t++)
        logits[seq[t]] = scratch[t] < 0 ? scratch[t] * p : scratch[t] / p;
}

/* Every earlier occurrence of the last n - 1 tokens bans the token that
 * followed it (n == 1 bans every token seen). */
static void no_repeat_ngram(const sw_logits_rules *r, int step, float *logits, const int32_t *seq)
{
    int n = r->no_repeat_ngram_size;
    if (step < n)
        return;
    const int32_t *tail = seq + step - n + 1;
    for (int start = 0; start + n <= step; start++) {
        int match = 1;
        for (int j = 0; j < n - 1 && match; j++)
            match = seq[start + j] == tail[j];
        if (match)
            logits[seq[start + n - 1]] = SW_LOGIT_DISABLED;
    }
}

static void plan_range(sw_timestamp_plan *pl, int from, int to)
{
    pl->from[pl->n] = from;
    pl->to[pl->n] = to;
    pl->n++;
}

/* Whisper's timestamp grammar in CT2's form (docs/whisper_decoding.md): the
 * ranges a row's tokens so far disable, and whether the check follows. */
void sw_timestamp_plan_of(const sw_logits_rules *r, int step, const int32_t *seq,
                          sw_timestamp_plan *pl)
{
    int ts_begin = r->timestamp_begin, ts_end = r->timestamp_end, begin = r->sample_begin;
    pl->n = 0;
    pl->check = 0;
    if (step == begin && step == 0) {
        plan_range(pl, 0, ts_begin);
        plan_range(pl, r->max_initial_timestamp + 1, ts_end + 1);
    } else if (step > begin) {
        int last = seq[step - 1];
        if (last >= ts_begin) {
            int penultimate = step - 1 > begin ? seq[step - 2] : last;
            if (penultimate >= ts_begin) {
                plan_range(pl, ts_begin, ts_end + 1);
            } else {
                plan_range(pl, 0, r->eot);
                plan_range(pl, ts_begin, last);
                pl->check = 1;
            }
        } else {
            pl->check = 1;
            for (int t = step - 1; t >= begin; t--)
                if (seq[t] >= ts_begin) {
                    plan_range(pl, ts_begin, seq[t] + 1);
                    break;
                }
        }
    }
}

static void timestamp_rules(const sw_logits_rules *r, int step, float *logits, const int32_t *seq,
                            float *scratch)
{
    int ts_begin = r->timestamp_begin, ts_end = r->timestamp_end;
    sw_timestamp_plan pl;
    sw_timestamp_plan_of(r, step, seq, &pl);
    logits[r->no_timestamps] = SW_LOGIT_DISABLED;
    for (int i = 0; i < pl.n; i++)
        disable_range(logits, pl.from[i], pl.to[i]);
    if (!pl.check)
        return;
    /* the timestamps' summed probability beats every single other token:
     * only a timestamp may come */
    sw_log_softmax_rows(logits, 1, r->n_vocab, scratch);
    float max_text = max_f32(scratch, ts_begin);
    if (logsumexp_f32(scratch + ts_begin, ts_end + 1 - ts_begin) > max_text)
        disable_range(logits, 0, ts_begin);
}

void sw_logits_rules_apply(const sw_logits_rules *r, int step, float *logits, const int32_t *seq,
                           float *scratch)
{
    if (r->repetition_penalty != 1.0f)
        repetition_penalty(r, step, logits, seq, scratch);
    if (r->no_repeat_ngram_size > 0)
        no_repeat_ngram(r, step, logits, seq);
    for (int i = 0; i < r->n_suppress; i++)
        logits[r->suppress[i]] = SW_LOGIT_DISABLED;
    if (step == r->sample_begin)
        for (int i = 0; i < r->n_suppress_begin; i++)
            logits[r->suppress_begin[i]] = SW_LOGIT_DISABLED;
    if (r->timestamps)
        timestamp_rules(r, step, logits, seq, scratch);
}
