/* Greedy search and random sampling (CT2's GreedySearch with its best and
 * random samplers), and top-k in CT2's CPU order. Every row of a window is
 * an independent search: num_hypotheses rows drawn at a temperature give
 * faster-whisper's best_of. */
#include <math.h>
#include <string.h>

#include "whisper_search.h"

/* ---- top-k: libstdc++'s heap select and sort heap, step for step ---- */

/* __adjust_heap followed by __push_heap, comp(a, b) = v[a] > v[b]: the
 * root holds the worst of the kept candidates. */
static void adjust_heap(int32_t *heap, const float *v, int hole, int len, int32_t value)
{
    int top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (v[heap[child]] > v[heap[child - 1]])
            child--;
        heap[hole] = heap[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        heap[hole] = heap[child - 1];
        hole = child - 1;
    }
    int parent = (hole - 1) / 2;
    while (hole > top && v[heap[parent]] > v[value]) {
        heap[hole] = heap[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    heap[hole] = value;
}

void sw_topk_ct2(const float *v, int n, int k, int32_t *heap)
{
    if (k == 1) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (v[i] > v[best])
                best = i;
        heap[0] = best;
        return;
    }
    for (int i = 0; i < k; i++)
        heap[i] = i;
    for (int parent = (k - 2) / 2; parent >= 0; parent--)
        adjust_heap(heap, v, parent, k, heap[parent]);
    for (int i = k; i < n; i++)
        if (v[i] > v[heap[0]])
            adjust_heap(heap, v, 0, k, i);
    for (int last = k - 1; last > 0; last--) {
        int32_t value = heap[last];
        heap[last] = heap[0];
        adjust_heap(heap, v, 0, last, value);
    }
}

/* ---- random sampling ---- */

/* One token from softmax(scores / temperature) over the whole vocabulary or
 * its best sampling_topk; returns its id (the score stays the unscaled
 * input's, as in CT2). */
static int32_t draw(sw_window *w, const sw_search_cfg *c, const float *scores)
{
    int n = c->n_vocab, topk = c->p->sampling_topk, depth = n;
    int32_t *cand = NULL;
    if (topk > 0 && topk < n) {
        cand = w->cand_id;
        sw_topk_ct2(scores, n, topk, cand);
        depth = topk;
    }
    float t = c->p->sampling_temperature, inv = 1.0f / t;
    for (int j = 0; j < depth; j++) {
        float s = scores[cand ? cand[j] : j];
        w->scaled[j] = t != 1.0f ? s * inv : s; /* lowest * 1/T may be -inf: fine */
    }
    sw_softmax_row(w->scaled, depth, w->scaled);
    /* integer units (backend.h SW_DRAW_UNITS): the running sums are exact,
     * whole numbers below 2^53, so the device's parallel sum
     * (cuda/search_draw.h) reaches the same token for the same uniform */
    double total = 0.0;
    for (int j = 0; j < depth; j++)
        w->cdf[j] = total += floor((double)w->scaled[j] * SW_DRAW_UNITS);
    double u = sw_rng_uniform(&w->rng) * w->cdf[depth - 1];
    int lo = 0, hi = depth; /* the first entry above u */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (w->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    int pick = lo < depth ? lo : depth - 1;
    return cand ? cand[pick] : pick;
}

/* ---- greedy search ---- */

/* Row r chose `id` with score `s` (the forced prefix overrides it). */
static int take(sw_window *w, const sw_search_cfg *c, int step, int r, int32_t id, float s)
{
    const sw_whisper_generate_params *p = c->p;
    int ml = c->max_length, prefix_len = w->rules.sample_begin;
    if (step < prefix_len) {
        id = w->prefix[step];
        s = 0.0f;
    }
    w->history[(size_t)r * ml + step] = id;
    int is_end = id == p->eot;
    if (!is_end)
        w->hyp_tok[(size_t)r * ml + w->hyp_len[r]++] = id;
    if (p->return_scores || p->num_hypotheses > 1)
        w->score[r] += s;
    if ((is_end && step >= prefix_len) || step + 1 == ml) {
        w->alive[r] = 0;
        return 0;
    }
    w->feed[r] = id;
    return 1;
}

void sw_greedy_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits)
{
    const sw_whisper_generate_params *p = c->p;
    int n = c->n_vocab, ml = c->max_length;
    int scores = p->return_scores || p->num_hypotheses > 1;
    int alive = 0;
    for (int r = 0; r < c->rows; r++) {
        if (!w->alive[r])
            continue;
        float *x = w->work + (size_t)r * n;
        memcpy(x, logits + (size_t)r * n, (size_t)n * sizeof *x);
        sw_logits_rules_apply(&w->rules, step, x, w->history + (size_t)r * ml, w->scaled);
        if (scores)
            sw_log_softmax_rows(x, 1, n, x);
        int32_t id;
        if (c->random) {
            id = draw(w, c, x);
        } else {
            sw_topk_ct2(x, n, 1, &id);
        }
        alive += take(w, c, step, r, id, x[id]);
    }
    if (!alive)
        w->done = 1;
}

void sw_greedy_step_chosen(sw_window *w, const sw_search_cfg *c, int step, const int32_t *ids,
                           const float *scores)
{
    int alive = 0;
    for (int r = 0; r < c->rows; r++)
        if (w->alive[r])
            alive += take(w, c, step, r, ids[r], scores[r]);
    if (!alive)
        w->done = 1;
}
