/* Whisper generation (csrc/whisper/whisper_generate.h) over a fake network
 * whose logits are a pure function of each row's token history and its
 * window: windows decoded together equal each decoded alone, whatever the
 * search; beam 1 is greedy; the prompt fed once and copied equals the
 * prompt fed to every row; top-k comes out best first. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "whisper_generate.h"
#include "whisper_search.h"

/* text 0..199, eot 200, sot 201, en 202, de 203, transcribe 204,
 * no_speech 205, no_timestamps 206, timestamps 207..306 */
enum { EOT = 200, SOT = 201, EN = 202, DE = 203, TRANSCRIBE = 204, NO_SPEECH = 205, NO_TS = 206 };
#define VOCAB 307
#define CTX   448

typedef struct fake_net {
    float table[97][VOCAB];
    int states; /* alive: every state is freed */
} fake_net;

typedef struct fake_state {
    int rows, len;
    int32_t *hist; /* [rows, CTX] */
} fake_state;

static sw_status st_new(void *ctx, int rows, void **out, sw_error *err)
{
    fake_net *net = ctx;
    fake_state *s = calloc(1, sizeof *s);
    if (!s || !(s->hist = calloc((size_t)rows * CTX, sizeof *s->hist))) {
        free(s);
        return sw_fail(err, SW_ERR_NOMEM, "fake");
    }
    s->rows = rows;
    net->states++;
    *out = s;
    return SW_OK;
}

static void st_free(void *ctx, void *p)
{
    fake_net *net = ctx;
    fake_state *s = p;
    net->states--;
    free(s->hist);
    free(s);
}

static sw_status st_decode(void *ctx, void *p, const int32_t *tok, int rows, int n, float *logits,
                           sw_error *err)
{
    fake_net *net = ctx;
    fake_state *s = p;
    if (rows != s->rows || s->len + n > CTX)
        return sw_fail(err, SW_ERR_ARG, "fake decode: %d rows, %d tokens", rows, n);
    for (int r = 0; r < rows; r++) {
        int32_t *h = s->hist + (size_t)r * CTX;
        memcpy(h + s->len, tok + (size_t)r * n, (size_t)n * sizeof *h);
        uint32_t acc = 7;
        for (int t = 0; t < s->len + n; t++)
            acc = acc * 1000003u + (uint32_t)h[t] + 1u;
        float *out = logits + (size_t)r * VOCAB;
        for (int v = 0; v < VOCAB; v++)
            out[v] = net->table[acc % 97][v] + 0.3f * (float)((v * 7 + (int)(acc % 5)) % 11);
        out[EOT] += 0.25f * (float)(s->len + n);
    }
    s->len += n;
    return SW_OK;
}

static sw_status st_copy(void *ctx, void *dp, void *sp, const int *index, int n, sw_error *err)
{
    (void)ctx;
    fake_state *d = dp, *s = sp;
    int32_t *tmp = malloc((size_t)n * CTX * sizeof *tmp);
    if (!tmp || n != d->rows)
        return free(tmp), sw_fail(err, SW_ERR_ARG, "fake copy");
    for (int r = 0; r < n; r++)
        memcpy(tmp + (size_t)r * CTX, s->hist + (size_t)index[r] * CTX, CTX * sizeof *tmp);
    memcpy(d->hist, tmp, (size_t)n * CTX * sizeof *tmp);
    d->len = s->len;
    free(tmp);
    return SW_OK;
}

static fake_net net;

static sw_whisper_decoder decoder(int copy_other)
{
    sw_whisper_decoder d = {&net,    VOCAB,      st_new, st_free, st_decode,
                            st_copy, copy_other, NULL,   NULL,    0};
    return d;
}

static sw_whisper_generate_params params(int beam, int n_hyp, float temperature)
{
    sw_whisper_generate_params p = sw_whisper_generate_default_params();
    p.eot = EOT;
    p.sot = SOT;
    p.no_timestamps = NO_TS;
    p.no_speech = NO_SPEECH;
    p.beam_size = beam;
    p.num_hypotheses = n_hyp;
    p.return_scores = 1;
    p.return_no_speech_prob = 1;
    p.max_length = 120;
    if (temperature > 0) {
        p.sampling_topk = 0;
        p.sampling_temperature = temperature;
        p.seed = 42;
    }
    return p;
}

static int same(const sw_whisper_generation *a, const sw_whisper_generation *b)
{
    if (a->n_hyp != b->n_hyp || a->no_speech_prob != b->no_speech_prob)
        return 0;
    for (int i = 0; i < a->n_hyp; i++)
        if (a->hyp[i].n_tokens != b->hyp[i].n_tokens || a->hyp[i].score != b->hyp[i].score ||
            memcmp(a->hyp[i].tokens, b->hyp[i].tokens,
                   (size_t)a->hyp[i].n_tokens * sizeof(int32_t)) != 0)
            return 0;
    return 1;
}

/* Three windows (their language token differs) together, then each
 * alone: the same hypotheses, scores and no-speech probabilities. */
static void batch_equals_alone(const sw_whisper_generate_params *p, int copy_other)
{
    enum { N = 3, LEN = 3 };
    int32_t prompts[N * LEN] = {SOT, EN, TRANSCRIBE, SOT, DE, TRANSCRIBE, SOT, EN, TRANSCRIBE};
    prompts[8] = NO_TS; /* the third without timestamps: other rules, same layout */
    prompts[7] = DE;
    sw_whisper_generation together[N];
    sw_error err = {SW_OK, ""};
    sw_whisper_decoder d = decoder(copy_other);
    CHECK(sw_whisper_generate_with(&d, prompts, N, LEN, p, together, &err) == SW_OK);
    CHECK(net.states == 0);
    for (int w = 0; w < N && err.code == SW_OK; w++) {
        sw_whisper_generation alone;
        sw_whisper_decoder d1 = decoder(!copy_other); /* and the prompt fed the other way */
        sw_whisper_generate_params p1 = *p;
        p1.seed = p->seed + (uint64_t)w; /* window w of a call draws from seed + w */
        CHECK(sw_whisper_generate_with(&d1, prompts + w * LEN, 1, LEN, &p1, &alone, &err) == SW_OK);
        CHECK(together[w].n_hyp == (p->num_hypotheses) && together[w].hyp[0].n_tokens > 0);
        CHECK(same(&together[w], &alone));
        if (!same(&together[w], &alone))
            fprintf(stderr, "  beam %d, hypotheses %d, window %d: %d vs %d tokens, %g vs %g\n",
                    p->beam_size, p->num_hypotheses, w, together[w].hyp[0].n_tokens,
                    alone.hyp[0].n_tokens, together[w].hyp[0].score, alone.hyp[0].score);
        sw_whisper_generation_free(&alone, 1);
    }
    if (err.code != SW_OK)
        fprintf(stderr, "%s\n", err.msg);
    sw_whisper_generation_free(together, N);
}

/* Top-k: best first, ties in libstdc++'s heap order; on distinct values it
 * is a descending sort; k = 1 is the first maximum. */
static void topk(void)
{
    float v[50];
    int32_t ids[10];
    for (int i = 0; i < 50; i++)
        v[i] = (float)((i * 37) % 50);
    sw_topk_ct2(v, 50, 10, ids);
    for (int i = 0; i < 10; i++)
        CHECK(v[ids[i]] == (float)(49 - i));
    float t[4] = {1, 3, 3, 2};
    sw_topk_ct2(t, 4, 1, ids);
    CHECK(ids[0] == 1);
}

/* A prompt that leaves no room to decode is an error, not a crash. */
static void prompt_too_long(void)
{
    int32_t prompt[8] = {1, 2, 3, 4, 5, SOT, EN, NO_TS};
    sw_whisper_generate_params p = params(1, 1, 0);
    p.max_length = 6;
    sw_whisper_generation out;
    sw_error err = {SW_OK, ""};
    sw_whisper_decoder d = decoder(1);
    CHECK(sw_whisper_generate_with(&d, prompt, 1, 8, &p, &out, &err) == SW_ERR_ARG);
    CHECK(net.states == 0);
}

int main(void)
{
    srand(3);
    for (int i = 0; i < 97; i++)
        for (int v = 0; v < VOCAB; v++)
            net.table[i][v] = 4.0f * ((float)rand() / (float)RAND_MAX - 0.5f);
    sw_whisper_generate_params searches[4] = {params(4, 1, 0), params(1, 1, 0), params(1, 3, 0.7f),
                                              params(3, 3, 0)};
    searches[3].patience = 1.5f;
    for (int i = 0; i < 4; i++)
        for (int copy_other = 0; copy_other < 2; copy_other++)
            batch_equals_alone(&searches[i], copy_other);
    topk();
    prompt_too_long();
    return sw_check_summary("test_generate");
}
