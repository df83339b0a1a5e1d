/* Generation: the prompt, the no-speech probability, and the step loop that
 * runs every window's search in lockstep over one decoder state
 * (CTranslate2's WhisperReplica::generate; docs/whisper_decoding.md). */
#include "whisper_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fused_ops.h"
#include "whisper_internal.h"
#include "whisper_search.h"

static const int32_t default_suppress[1] = {-1};

sw_whisper_generate_params sw_whisper_generate_default_params(void)
{
    sw_whisper_generate_params p;
    memset(&p, 0, sizeof p);
    p.eot = p.sot = p.no_timestamps = p.no_speech = -1;
    p.beam_size = 5;
    p.patience = 1.0f;
    p.length_penalty = 1.0f;
    p.repetition_penalty = 1.0f;
    p.max_length = 448;
    p.sampling_topk = 1;
    p.sampling_temperature = 1.0f;
    p.num_hypotheses = 1;
    p.max_initial_timestamp_index = 50;
    p.suppress_blank = 1;
    p.suppress_tokens = default_suppress;
    p.n_suppress_tokens = 1;
    return p;
}

void sw_whisper_generation_free(sw_whisper_generation *out, int n_windows)
{
    if (!out)
        return;
    for (int w = 0; w < n_windows; w++) {
        for (int i = 0; i < out[w].n_hyp; i++)
            free(out[w].hyp[i].tokens);
        free(out[w].hyp);
        out[w].hyp = NULL;
        out[w].n_hyp = 0;
    }
}

/* ---- the prompt ---- */

/* sot's index and the prompt length (the index past the run of task ids
 * sot .. no_timestamps that starts at sot); -1 without sot. */
static int prompt_layout(const int32_t *prompt, int len, const sw_whisper_generate_params *p,
                         int *sot_index)
{
    int i = 0;
    while (i < len && prompt[i] != p->sot)
        i++;
    if (i == len)
        return -1;
    *sot_index = i;
    while (i < len && prompt[i] >= p->sot && prompt[i] <= p->no_timestamps)
        i++;
    return i;
}

static sw_status check_params(const sw_whisper_generate_params *p, int n_vocab, sw_error *err)
{
    if (p->beam_size < 1 || !(p->patience > 0) || p->num_hypotheses < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper generate: beam_size, patience and num_hypotheses must be positive");
    int max_cand = (int)floor((double)((float)p->beam_size * p->patience) + 0.5);
    if (p->num_hypotheses > max_cand && !(p->beam_size == 1 && p->sampling_topk != 1))
        return sw_fail(err, SW_ERR_ARG,
                       "The number of hypotheses cannot be greater than beam_size * patience");
    if (p->sampling_topk < 0 || p->sampling_topk > n_vocab)
        return sw_fail(err, SW_ERR_ARG,
                       "sampling_topk %d: it must be 0 (all) up to the vocabulary size %d",
                       p->sampling_topk, n_vocab);
    int ids[4] = {p->eot, p->sot, p->no_timestamps, p->no_speech};
    for (int i = 0; i < 4; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return sw_fail(err, SW_ERR_ARG, "whisper generate: special token %d is outside 0..%d",
                           ids[i], n_vocab - 1);
    if (p->no_timestamps + 1 >= n_vocab)
        return sw_fail(err, SW_ERR_ARG, "whisper generate: no timestamp tokens in the vocabulary");
    const int32_t *lists[3] = {p->suppress_tokens, p->suppress_ids, p->suppress_ids_begin};
    int counts[3] = {p->n_suppress_tokens, p->n_suppress_ids, p->n_suppress_ids_begin};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++)
            if (lists[l][i] >= n_vocab || (l > 0 && lists[l][i] < 0))
                return sw_fail(err, SW_ERR_ARG,
                               "whisper generate: suppressed token %d is outside the vocabulary",
                               (int)lists[l][i]);
    return SW_OK;
}

/* suppress_tokens with -1 expanded to the config's suppress_ids (other
 * negatives ignored, as CT2 does). */
static int32_t *resolve_suppress(const sw_whisper_generate_params *p, int *n_out)
{
    int n = 0;
    int32_t *out =
        malloc(((size_t)p->n_suppress_tokens * (size_t)(p->n_suppress_ids + 1) + 1) * sizeof *out);
    if (!out)
        return NULL;
    for (int i = 0; i < p->n_suppress_tokens; i++) {
        int32_t t = p->suppress_tokens[i];
        if (t >= 0)
            out[n++] = t;
        else if (t == -1)
            for (int j = 0; j < p->n_suppress_ids; j++)
                out[n++] = p->suppress_ids[j];
    }
    *n_out = n;
    return out;
}

/* ---- the step loop ---- */

typedef struct gen_call {
    const sw_whisper_decoder *dec;
    const sw_whisper_generate_params *p;
    int n_win, rows, len, vocab;
    const int32_t *prompts;
    void *state, *prompt_state;
    int32_t *tokens;
    int *index;
    float *logits;
    sw_window *win;
    int n_slots;   /* windows still in the batch */
    int *slot_win; /* the window at each position of the batch */
    /* the search on the device (decode_search), or k == 0 */
    int k;               /* best tokens per row that come back */
    int8_t *mask;        /* [vocab] bit 1: suppressed, bit 2: suppressed at the first step */
    sw_search_row *plan; /* [rows] */
    int32_t *ids;        /* [rows, k] */
    float *scores;       /* [rows, k] */
    float *no_speech;    /* [rows] */
} gen_call;

/* What the rules disable in row r of window `win` at `step` beyond the
 * mask (whisper_logits.c's order: suppressed tokens, then the timestamp
 * rules), for the device's search step; no_speech: the token whose
 * probability the row also brings down, or -1. */
static void plan_row(const sw_window *win, const sw_search_cfg *c, int step, int r, int no_speech,
                     sw_search_row *row)
{
    const sw_logits_rules *rules = &win->rules;
    int beam = c->p->beam_size > 1;
    const int32_t *seq = (beam ? win->seq : win->history) + (size_t)r * c->max_length;
    memset(row, 0, sizeof *row);
    row->mask_bits = 1 | (step == rules->sample_begin ? 2 : 0);
    row->no_speech = no_speech;
    row->cum = beam && win->cum ? win->cum[r] : 0.0f;
    if (!rules->timestamps)
        return;
    sw_timestamp_plan pl;
    sw_timestamp_plan_of(rules, step, seq, &pl);
    for (int i = 0; i < pl.n; i++) {
        row->from[i] = pl.from[i];
        row->to[i] = pl.to[i];
    }
    row->from[2] = rules->no_timestamps;
    row->to[2] = rules->no_timestamps + 1;
    row->check = pl.check;
}

/* Feeds prompt columns [from, to) of every window; the no-speech
 * probability is read from the logits when `no_speech` is set. */
static sw_status feed_prompt(gen_call *g, void *state, int rows_per_window, int from, int to,
                             sw_whisper_generation *out, int no_speech, sw_error *err)
{
    int n_rows = g->n_win * rows_per_window, k = to - from;
    for (int w = 0; w < g->n_win; w++)
        for (int r = 0; r < rows_per_window; r++)
            memcpy(g->tokens + ((size_t)w * rows_per_window + r) * k,
                   g->prompts + (size_t)w * g->len + from, (size_t)k * sizeof *g->tokens);
    if (g->k && no_speech) {
        /* on the device: a search step that disables nothing brings the
         * no-speech probability down (its one best token is not used) */
        memset(g->plan, 0, (size_t)n_rows * sizeof *g->plan);
        for (int r = 0; r < n_rows; r++)
            g->plan[r].no_speech = g->p->no_speech;
        sw_search_params sp = {1, 0, g->p->no_timestamps + 1, 0.0f};
        if (g->dec->decode_search(g->dec->ctx, state, g->tokens, n_rows, k, g->mask, &sp, g->plan,
                                  g->ids, g->scores, g->no_speech, err))
            return err->code;
        for (int w = 0; w < g->n_win; w++)
            out[w].no_speech_prob = g->no_speech[(size_t)w * rows_per_window];
        return SW_OK;
    }
    /* on the device path the logits stay there */
    if (g->dec->decode(g->dec->ctx, state, g->tokens, n_rows, k, g->k ? NULL : g->logits, err))
        return err->code;
    if (no_speech)
        for (int w = 0; w < g->n_win; w++)
            out[w].no_speech_prob = sw_softmax_at(
                g->logits + (size_t)w * rows_per_window * g->vocab, g->vocab, g->p->no_speech);
    return SW_OK;
}

static sw_status run(gen_call *g, sw_search_cfg *c, int fed, int sot_index, int sot_is_start,
                     uint64_t seed, sw_whisper_generation *out, sw_error *err)
{
    const sw_whisper_decoder *d = g->dec;
    const sw_whisper_generate_params *p = g->p;
    int n_rows = g->n_win * g->rows, beam = p->beam_size > 1;
    if (d->state_new(d->ctx, n_rows, &g->state, err))
        return err->code;
    if (fed > 0) {
        /* the prompt is the same on a window's rows: feed it once per window
         * and copy it to the rows where states can be copied */
        int once = g->rows > 1 && d->copy_other;
        void *st = g->state;
        int per = g->rows;
        if (once) {
            if (d->state_new(d->ctx, g->n_win, &g->prompt_state, err))
                return err->code;
            st = g->prompt_state;
            per = 1;
        }
        if (p->return_no_speech_prob && !sot_is_start) {
            if (feed_prompt(g, st, per, 0, sot_index + 1, out, 1, err))
                return err->code;
            if (fed > sot_index + 1 && feed_prompt(g, st, per, sot_index + 1, fed, out, 0, err))
                return err->code;
        } else if (feed_prompt(g, st, per, 0, fed, out, 0, err)) {
            return err->code;
        }
        if (once) {
            for (int i = 0; i < n_rows; i++)
                g->index[i] = i / g->rows;
            if (d->copy(d->ctx, g->state, g->prompt_state, g->index, n_rows, err))
                return err->code;
            d->state_free(d->ctx, g->prompt_state);
            g->prompt_state = NULL;
        }
    }
    for (int w = 0; w < g->n_win; w++) {
        const int32_t *pr = g->prompts + (size_t)w * g->len;
        /* every window draws from its own generator */
        if (sw_window_init(&g->win[w], c, pr[fed], pr + fed + 1, seed + (uint64_t)w, err))
            return err->code;
    }

    g->n_slots = g->n_win;
    for (int w = 0; w < g->n_win; w++)
        g->slot_win[w] = w;
    int steps = 0;
    for (int step = 0; step < c->max_length; step++) {
        steps = step + 1;
        int reorder = 0;
        for (int s = 0; s < g->n_slots; s++)
            reorder |= g->win[g->slot_win[s]].has_reorder;
        int slot_rows = g->n_slots * g->rows;
        if (reorder) {
            for (int s = 0; s < g->n_slots; s++) {
                const sw_window *win = &g->win[g->slot_win[s]];
                for (int r = 0; r < g->rows; r++)
                    g->index[s * g->rows + r] =
                        s * g->rows + (win->has_reorder ? win->reorder[r] : r);
            }
            if (d->copy(d->ctx, g->state, g->state, g->index, slot_rows, err))
                return err->code;
            for (int s = 0; s < g->n_slots; s++)
                g->win[g->slot_win[s]].has_reorder = 0;
        }
        /* a finished window still in the batch is fed its end token */
        for (int s = 0; s < g->n_slots; s++) {
            const sw_window *win = &g->win[g->slot_win[s]];
            for (int r = 0; r < g->rows; r++)
                g->tokens[s * g->rows + r] = win->done ? p->eot : win->feed[r];
        }
        int no_speech = step == 0 && p->return_no_speech_prob && sot_is_start;
        if (g->k) {
            for (int s = 0; s < g->n_slots; s++)
                for (int r = 0; r < g->rows; r++) {
                    sw_window *win = &g->win[g->slot_win[s]];
                    sw_search_row *row = &g->plan[s * g->rows + r];
                    plan_row(win, c, step, r, no_speech ? p->no_speech : -1, row);
                    /* the uniform the CPU's draw would take, from the same
                     * generator, for the same rows (the live ones) */
                    if (c->random && !win->done && win->alive[r]) {
                        uint64_t m = sw_rng_next53(&win->rng);
                        row->uniform[0] = (uint32_t)m;
                        row->uniform[1] = (uint32_t)(m >> 32);
                    }
                }
            sw_search_params sp = {g->k, beam || p->return_scores || p->num_hypotheses > 1,
                                   c->rules.timestamp_begin,
                                   c->random ? p->sampling_temperature : 0.0f};
            if (d->decode_search(d->ctx, g->state, g->tokens, slot_rows, 1, g->mask, &sp, g->plan,
                                 g->ids, g->scores, g->no_speech, err))
                return err->code;
        } else if (d->decode(d->ctx, g->state, g->tokens, slot_rows, 1, g->logits, err)) {
            return err->code;
        }
        int live = 0;
        for (int s = 0; s < g->n_slots; s++) {
            sw_window *win = &g->win[g->slot_win[s]];
            if (win->done)
                continue;
            size_t first = (size_t)s * g->rows;
            if (g->k) {
                if (no_speech)
                    out[g->slot_win[s]].no_speech_prob = g->no_speech[first];
                if (beam)
                    sw_beam_step_chosen(win, c, step, g->ids + first * g->k,
                                        g->scores + first * g->k);
                else
                    sw_greedy_step_chosen(win, c, step, g->ids + first, g->scores + first);
            } else {
                const float *lg = g->logits + first * g->vocab;
                if (no_speech)
                    out[g->slot_win[s]].no_speech_prob = sw_softmax_at(lg, g->vocab, p->no_speech);
                if (beam)
                    sw_beam_step(win, c, step, lg);
                else
                    sw_greedy_step(win, c, step, lg);
            }
            if (win->failed)
                return sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
            live += !win->done;
        }
        if (!live)
            break;
        if (d->narrow && live < g->n_slots) {
            /* positions of the live windows, ascending, into index's front */
            int n_keep = 0;
            for (int s = 0; s < g->n_slots; s++)
                if (!g->win[g->slot_win[s]].done) {
                    g->index[n_keep] = s;
                    g->slot_win[n_keep] = g->slot_win[s];
                    n_keep++;
                }
            if (d->narrow(d->ctx, &g->state, g->index, n_keep, g->rows, err))
                return err->code;
            g->n_slots = n_keep;
        }
    }
    for (int w = 0; w < g->n_win; w++) {
        sw_window *win = &g->win[w];
        out[w].steps = steps;
        if (!beam)
            for (int r = 0; r < g->rows; r++)
                if (sw_hyps_add(&win->hyps, win->hyp_tok + (size_t)r * c->max_length,
                                win->hyp_len[r], win->score[r]) != 0)
                    return sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
        sw_hyps_finish(&win->hyps, p->length_penalty, p->num_hypotheses, &out[w]);
        if (!p->return_scores)
            for (int i = 0; i < out[w].n_hyp; i++)
                out[w].hyp[i].score = 0.0f;
    }
    return SW_OK;
}

sw_status sw_whisper_generate_with(const sw_whisper_decoder *dec, const int32_t *prompts,
                                   int n_windows, int prompt_len,
                                   const sw_whisper_generate_params *p, sw_whisper_generation *out,
                                   sw_error *err)
{
    if (!dec || !prompts || !p || !out || n_windows < 1 || prompt_len < 1)
        return sw_fail(err, SW_ERR_ARG, "whisper generate: windows, prompts and params needed");
    memset(out, 0, (size_t)n_windows * sizeof *out);
    int vocab = dec->n_vocab;
    if (check_params(p, vocab, err))
        return err->code;
    int sot_index = 0;
    int plen = prompt_layout(prompts, prompt_len, p, &sot_index);
    if (plen < 0)
        return sw_fail(err, SW_ERR_ARG, "<|startoftranscript|> token was not found in the prompt");
    for (int w = 1; w < n_windows; w++) {
        int si = 0;
        if (prompt_layout(prompts + (size_t)w * prompt_len, prompt_len, p, &si) != plen ||
            si != sot_index)
            return sw_fail(err, SW_ERR_ARG,
                           "whisper generate: window %d's prompt has another layout than the "
                           "first's (sot or task tokens elsewhere)",
                           w);
    }
    for (int i = 0; i < n_windows * prompt_len; i++)
        if (prompts[i] < 0 || prompts[i] >= vocab)
            return sw_fail(err, SW_ERR_ARG, "whisper generate: prompt token %d is outside 0..%d",
                           (int)prompts[i], vocab - 1);
    int fed = plen == 1 ? 0 : plen - 1;
    int total = p->max_length;
    int max_length = total / 2 < total - fed ? total / 2 : total - fed;
    if (max_length <= 0)
        return sw_fail(err, SW_ERR_ARG,
                       "The maximum decoding length must be > 0 (the prompt is too long)");
    int beam = p->beam_size > 1;
    int rows = beam ? p->beam_size : p->num_hypotheses;

    sw_search_cfg c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.n_vocab = vocab;
    c.rows = rows;
    c.max_length = max_length;
    c.random = !beam && p->sampling_topk != 1 && p->sampling_temperature != 0.0f;
    sw_logits_rules *r = &c.rules;
    r->n_vocab = vocab;
    r->repetition_penalty = p->repetition_penalty;
    r->no_repeat_ngram_size = p->no_repeat_ngram_size;
    int32_t *suppress = resolve_suppress(p, &r->n_suppress);
    r->suppress = suppress;
    if (p->suppress_blank) {
        r->suppress_begin = p->suppress_ids_begin;
        r->n_suppress_begin = p->n_suppress_ids_begin;
    }
    r->eot = p->eot;
    r->no_timestamps = p->no_timestamps;
    r->timestamp_begin = p->no_timestamps + 1;
    r->timestamp_end = vocab - 1;
    r->max_initial_timestamp = r->timestamp_begin + p->max_initial_timestamp_index;
    r->sample_begin = prompt_len - fed - 1; /* the forced prefix after the start token */

    int n_rows = n_windows * rows;
    int widest = fed > 1 ? fed : 1;
    gen_call g;
    memset(&g, 0, sizeof g);
    g.dec = dec;
    g.p = p;
    g.n_win = n_windows;
    g.rows = rows;
    g.len = prompt_len;
    g.vocab = vocab;
    g.prompts = prompts;
    /* the device searches where the decoder can, for the rules it has: the
     * repetition rules and a draw among the top k read whole rows, so they
     * stay here; a draw over the whole vocabulary goes where it can */
    int k = beam ? 2 * p->beam_size : 1;
    int topk_draw = p->sampling_topk > 0 && p->sampling_topk < vocab;
    int on_device =
        dec->decode_search &&
        (!c.random || (dec->sample_on_device && !topk_draw && p->sampling_temperature > 0.0f)) &&
        r->repetition_penalty == 1.0f && r->no_repeat_ngram_size == 0 && k <= SW_SEARCH_MAX_K;
    if (on_device) {
        g.k = k;
        g.mask = calloc((size_t)vocab, 1);
        g.plan = malloc((size_t)n_rows * sizeof *g.plan);
        g.ids = malloc((size_t)n_rows * (size_t)k * sizeof *g.ids);
        g.scores = malloc((size_t)n_rows * (size_t)k * sizeof *g.scores);
        g.no_speech = malloc((size_t)n_rows * sizeof *g.no_speech);
        for (int i = 0; g.mask && i < r->n_suppress; i++)
            g.mask[r->suppress[i]] |= 1;
        for (int i = 0; g.mask && i < r->n_suppress_begin; i++)
            g.mask[r->suppress_begin[i]] |= 2;
    }
    g.tokens = malloc((size_t)n_rows * (size_t)widest * sizeof *g.tokens);
    g.index = malloc((size_t)n_rows * sizeof *g.index);
    g.logits = malloc((size_t)n_rows * (size_t)vocab * sizeof *g.logits);
    g.win = calloc((size_t)n_windows, sizeof *g.win);
    g.slot_win = malloc((size_t)n_windows * sizeof *g.slot_win);
    int device_ok = !on_device || (g.mask && g.plan && g.ids && g.scores && g.no_speech);
    if (!suppress || !g.tokens || !g.index || !g.logits || !g.win || !g.slot_win || !device_ok)
        sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
    else
        run(&g, &c, fed, sot_index, sot_index == plen - 1, p->seed, out, err);
    if (g.prompt_state)
        dec->state_free(dec->ctx, g.prompt_state);
    if (g.state)
        dec->state_free(dec->ctx, g.state);
    for (int w = 0; g.win && w < n_windows; w++)
        sw_window_free(&g.win[w]);
    free(g.win);
    free(g.slot_win);
    free(g.logits);
    free(g.mask);
    free(g.plan);
    free(g.ids);
    free(g.scores);
    free(g.no_speech);
    free(g.index);
    free(g.tokens);
    free(suppress);
    if (err->code != SW_OK)
        sw_whisper_generation_free(out, n_windows);
    return err->code;
}

/* ---- over the C model ---- */

/* The batch narrows by exchanging audio items in place, so that the windows
 * still decoding are items 0..n-1 of the encoding and a view of that prefix
 * serves the cross-attention; every exchange is logged and undone when
 * generation ends, so the caller gets its encoding back as it was (word
 * timestamps read it after). */
typedef struct model_ctx {
    sw_whisper *model;
    const sw_whisper_audio *audio;
    sw_whisper_audio *view; /* the prefix being decoded, once narrowed */
    int *swaps, n_swaps;    /* pairs exchanged, in order */
    sw_tensor mask;         /* decode_search's, uploaded at its first step; it outlives the
                               states, whose graphs keep its pointer */
} model_ctx;

static const sw_whisper_audio *model_audio(const model_ctx *m)
{
    return m->view ? m->view : m->audio;
}

static sw_status model_state_new(void *ctx, int n_rows, void **state, sw_error *err)
{
    model_ctx *m = ctx;
    return sw_whisper_state_new(m->model, model_audio(m), n_rows, (sw_whisper_state **)state, err);
}

static void model_state_free(void *ctx, void *state)
{
    (void)ctx;
    sw_whisper_state_free(state);
}

/* logits NULL (a prompt on the device path): they stay on the device */
static sw_status model_decode(void *ctx, void *state, const int32_t *tokens, int n_rows,
                              int n_tokens, float *logits, sw_error *err)
{
    (void)ctx;
    const sw_tensor *kept;
    if (!logits)
        return sw_wh_decode_device(state, tokens, n_rows, n_tokens, &kept, err);
    return sw_whisper_decode(state, tokens, n_rows, n_tokens, logits, err);
}

static sw_status model_decode_search(void *ctx, void *state, const int32_t *tokens, int n_rows,
                                     int n_tokens, const int8_t *mask, const sw_search_params *p,
                                     const sw_search_row *rows, int32_t *ids, float *scores,
                                     float *no_speech_prob, sw_error *err)
{
    model_ctx *m = ctx;
    sw_backend *be = m->model->obj.be;
    if (!m->mask.data) { /* once per call: the suppressed tokens */
        int64_t n = sw_whisper_get_dims(m->model)->n_vocab;
        if (sw_tensor_new(be, SW_I8, 1, &n, &m->mask, err) ||
            be->upload(be, m->mask.data, mask, (size_t)n, err))
            return err->code;
    }
    /* the state keeps the search's work with its step buffers, and a
     * one-token step runs the search inside its graph */
    sw_wh_search search = {&m->mask, p, rows, ids, scores, no_speech_prob};
    return sw_wh_decode_search(state, tokens, n_rows, n_tokens, &search, err);
}

static sw_status model_copy(void *ctx, void *dst, void *src, const int *index, int n, sw_error *err)
{
    (void)ctx;
    return sw_whisper_state_copy(dst, src, index, n, err);
}

static sw_status model_narrow(void *ctx, void **state, const int *keep, int n_keep, int rows,
                              sw_error *err)
{
    model_ctx *m = ctx;
    sw_whisper_state *old = *state;
    int *index = malloc((size_t)(n_keep * rows) * sizeof *index);
    if (!index)
        return sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
    /* keep is ascending, so position keep[i] is untouched until step i
     * (earlier steps exchange positions j < i and keep[j] != keep[i]): one
     * exchange brings its window forward */
    for (int i = 0; i < n_keep && err->code == SW_OK; i++) {
        if (keep[i] == i)
            continue;
        if (sw_wh_audio_swap(m->audio, i, keep[i], err))
            break;
        m->swaps[2 * m->n_swaps] = i;
        m->swaps[2 * m->n_swaps + 1] = keep[i];
        m->n_swaps++;
    }
    for (int i = 0; i < n_keep; i++)
        for (int r = 0; r < rows; r++)
            index[i * rows + r] = keep[i] * rows + r;
    sw_whisper_audio *view = NULL;
    sw_whisper_state *narrow = NULL;
    if (err->code == SW_OK && sw_wh_audio_items(m->audio, 0, n_keep, &view, err) == SW_OK &&
        sw_wh_state_narrow(old, view, index, n_keep * rows, &narrow, err) == SW_OK) {
        sw_whisper_state_free(old);
        *state = narrow;
        sw_whisper_audio_free(m->view);
        m->view = view;
    } else {
        sw_whisper_audio_free(view);
    }
    free(index);
    return err->code;
}

/* Undoes the exchanges, last first; an error here keeps the first one. */
static void model_restore(model_ctx *m, sw_error *err)
{
    sw_error undo = {0};
    for (int s = m->n_swaps - 1; s >= 0; s--)
        if (sw_wh_audio_swap(m->audio, m->swaps[2 * s], m->swaps[2 * s + 1], &undo))
            break;
    if (undo.code != SW_OK && err->code == SW_OK)
        *err = undo;
    m->n_swaps = 0;
}

sw_status sw_whisper_generate(sw_whisper *model, const sw_whisper_audio *audio,
                              const int32_t *prompts, int n_windows, int prompt_len,
                              const sw_whisper_generate_params *params, sw_whisper_generation *out,
                              sw_error *err)
{
    if (!model || !audio)
        return sw_fail(err, SW_ERR_ARG, "whisper generate: a model and its encoded audio needed");
    if (sw_whisper_audio_batch(audio) != n_windows)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper generate: %d prompts for an encoding of %d windows", n_windows,
                       sw_whisper_audio_batch(audio));
    /* at most n - 1 exchanges each time the batch narrows, at most n - 1 times */
    int *swaps = malloc((size_t)(2 * n_windows * n_windows) * sizeof *swaps);
    if (!swaps)
        return sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
    model_ctx ctx = {model, audio, NULL, swaps, 0, {0}};
    int k = params->beam_size > 1 ? 2 * params->beam_size : 1;
    int search_here = sw_supports(model->obj.be, SW_CAP_SEARCH_STEP, k, 0);
    int draw_here = search_here && sw_supports(model->obj.be, SW_CAP_SEARCH_SAMPLE, 0, 0);
    sw_whisper_decoder dec = {&ctx,
                              sw_whisper_get_dims(model)->n_vocab,
                              model_state_new,
                              model_state_free,
                              model_decode,
                              model_copy,
                              1,
                              n_windows > 1 ? model_narrow : NULL,
                              search_here ? model_decode_search : NULL,
                              draw_here};
    sw_whisper_generate_with(&dec, prompts, n_windows, prompt_len, params, out, err);
    sw_tensor_free(&ctx.mask);
    model_restore(&ctx, err);
    if (err->code != SW_OK)
        sw_whisper_generation_free(out, n_windows);
    sw_whisper_audio_free(ctx.view);
    free(swaps);
    return err->code;
}
