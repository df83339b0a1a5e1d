#include "cpu_attention.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu_dispatch.h"
#include "vec_types.h"
#include "elementwise_math.h"
#include "prefetch.h"

typedef struct attn_job {
    const float *q, *k, *v;
    float *out;
    float *scores; /* [B, H, T_q, kv_len]: probs or scratch */
    int64_t tq, d, dh, tkv, group, kv_len, causal;
    int64_t kv_ld;   /* floats from one key (or value) row of a head to the next */
    int64_t kv_head; /* floats from one head's first key row to the next head's */
    int heads;
    float scale;
} attn_job;

/* Keys query row i may see. */
static int64_t attn_visible(const attn_job *j, int64_t i)
{
    if (j->causal < 0)
        return j->kv_len;
    int64_t n = j->causal + i + 1;
    return n < j->kv_len ? n : j->kv_len;
}

/* Four query rows against one key row at once, four independent chains.
 * Each row's sum: eight lane sums over the full blocks of eight, then the
 * tail, then the lanes in order; the same whatever the rows around it. GCC's
 * vector type keeps the eight lanes in registers (plain arrays made it
 * gather the queries element by element): sw_v8 (vec_types.h). */

static inline __attribute__((always_inline)) void dot4_f32(const float *const *q, const float *k,
                                                           int64_t n, float *out)
{
    sw_v8 acc[4] = {{0.0f}, {0.0f}, {0.0f}, {0.0f}};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        sw_v8 kv = LOAD_V8(k + i);
        for (int r = 0; r < 4; r++)
            acc[r] += LOAD_V8(q[r] + i) * kv;
    }
    for (int r = 0; r < 4; r++) {
        float s = 0.0f;
        for (int64_t t = i; t < n; t++)
            s += q[r][t] * k[t];
        for (int l = 0; l < 8; l++)
            s += acc[r][l];
        out[r] = s;
    }
}

/* Softmax of s[0..n) in place; s[n..len) become 0 (masked keys). Eight
 * partial maxima and sums so that the loops vectorise. */
SW_ALWAYS_INLINE void masked_softmax(float *s, int64_t n, int64_t len)
{
    float m8[8], s8[8];
    for (int l = 0; l < 8; l++) {
        m8[l] = -INFINITY;
        s8[l] = 0.0f;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            m8[l] = s[i + l] > m8[l] ? s[i + l] : m8[l];
    float mx = -INFINITY;
    for (; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    for (int l = 0; l < 8; l++)
        mx = m8[l] > mx ? m8[l] : mx;
    if (mx == -INFINITY) {
        for (i = 0; i < len; i++)
            s[i] = 0.0f;
        return;
    }
    for (i = 0; i < n; i++)
        s[i] = sw_expf_nonpositive(s[i] - mx);
    for (i = 0; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s8[l] += s[i + l];
    float sum = 0.0f;
    for (; i < n; i++)
        sum += s[i];
    for (int l = 0; l < 8; l++)
        sum += s8[l];
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (i = 0; i < n; i++)
        s[i] *= inv;
    for (i = n; i < len; i++)
        s[i] = 0.0f;
}

/* Eight keys against one query row at once: the fast form of dot4_f32's
 * sums when dh is a multiple of eight. Lane l of acc[j] sums the terms i
 * with i % 8 == l of key j, as dot4_f32's lanes do; the lanes are then added
 * in order 0..7 onto 0, eight keys side by side after a transpose, so each
 * score has dot4_f32's bits, but the eight reductions cost eight vector adds
 * instead of 64 scalar ones and no query row is padded. */
typedef int sw_v8i __attribute__((vector_size(32)));

SW_ALWAYS_INLINE void lanes_in_order(const sw_v8 *acc, sw_v8 *sum)
{
    /* t[l][j] = acc[j][l] in three rounds of pairwise interleaving */
    sw_v8 u[8], w[8];
    for (int j = 0; j < 8; j += 2) {
        u[j] = __builtin_shuffle(acc[j], acc[j + 1], (sw_v8i){0, 8, 1, 9, 4, 12, 5, 13});
        u[j + 1] = __builtin_shuffle(acc[j], acc[j + 1], (sw_v8i){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int j = 0; j < 8; j += 4)
        for (int h = 0; h < 2; h++) {
            w[j + h] =
                __builtin_shuffle(u[j + h], u[j + h + 2], (sw_v8i){0, 1, 8, 9, 4, 5, 12, 13});
            w[j + h + 2] =
                __builtin_shuffle(u[j + h], u[j + h + 2], (sw_v8i){2, 3, 10, 11, 6, 7, 14, 15});
        }
    /* w[0] holds lane 0 of keys 0,1,2,3 | 4 of keys 0..3; w[4] the same of
     * keys 4..7; w[2] lane 1, w[1] lane 2, w[3] lane 3 (and 5, 6, 7 in the
     * upper halves) */
    static const int lane_of[4] = {0, 2, 1, 3};
    sw_v8 t[8];
    for (int x = 0; x < 4; x++) {
        int l = lane_of[x];
        t[l] = __builtin_shuffle(w[x], w[x + 4], (sw_v8i){0, 1, 2, 3, 8, 9, 10, 11});
        t[l + 4] = __builtin_shuffle(w[x], w[x + 4], (sw_v8i){4, 5, 6, 7, 12, 13, 14, 15});
    }
    sw_v8 s = {0.0f};
    for (int l = 0; l < 8; l++)
        s += t[l];
    *sum = s;
}

/* Scores of one query row against keys t0..t0+8 (key j at k + j * ld). */
SW_ALWAYS_INLINE void dot8_keys(const float *q, const float *k, int64_t ld, int64_t dh, sw_v8 *dots)
{
    sw_v8 acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = (sw_v8){0.0f};
    for (int64_t i = 0; i < dh; i += 8) {
        sw_v8 qv = LOAD_V8(q + i);
        for (int j = 0; j < 8; j++)
            acc[j] += qv * LOAD_V8(k + j * ld + i);
    }
    lanes_in_order(acc, dots);
}

/* Key rows ahead that the scores and values passes ask for: a head's slice
 * of a key row is 256 bytes in every 1536 (tiny's d = 384), a stride the
 * hardware prefetcher followed too late, and the decoder's attention over
 * the 1500 audio frames ran at a third of memory's speed. Prefetching past
 * the end of the rows is harmless (it never faults). */
#define ATTN_PREFETCH 16

SW_ALWAYS_INLINE void prefetch_rows(const float *p, int64_t ld, int rows, int64_t floats)
{
    for (int r = 0; r < rows; r++)
        sw_prefetch_span(p + r * ld, (long)floats * (long)sizeof(float), NULL);
}

/* Keys per chunk: a chunk of keys (or values) stays in L1 while every query
 * row of the block passes over it. */
#define ATTN_KEY_CHUNK 64

/* The block's scores, sc[r][t] = dot(q_r, k_t) * scale for t < n[r], in
 * chunks of keys; dh a multiple of eight. */
SW_ALWAYS_INLINE void scores_tiled(const attn_job *j, const float *kb, const float *const *q,
                                   float *const *sc, const int64_t *n, int nr, int64_t n_max)
{
    for (int64_t t0 = 0; t0 < n_max; t0 += ATTN_KEY_CHUNK) {
        int64_t t1 = t0 + ATTN_KEY_CHUNK < n_max ? t0 + ATTN_KEY_CHUNK : n_max;
        for (int r = 0; r < nr; r++) {
            int64_t end = t1 < n[r] ? t1 : n[r], t = t0;
            for (; t + 8 <= end; t += 8) {
                sw_v8 s;
                if (r == 0)
                    prefetch_rows(kb + (t + ATTN_PREFETCH) * j->kv_ld, j->kv_ld, 8, j->dh);
                dot8_keys(q[r], kb + t * j->kv_ld, j->kv_ld, j->dh, &s);
                s *= j->scale;
                memcpy(sc[r] + t, &s, sizeof s);
            }
            for (; t < end; t++) {
                const float *one[4] = {q[r], q[r], q[r], q[r]};
                float d4[4];
                dot4_f32(one, kb + t * j->kv_ld, j->dh, d4);
                sc[r][t] = d4[0] * j->scale;
            }
        }
    }
}

/* values_tiled's step for a slice of 64 columns: with the count a constant
 * the eight sums live in registers (a variable count left them on the stack,
 * a load and a store per multiply-add). The same operations in the same
 * order. */
SW_ALWAYS_INLINE void values_chunk64_v8(const float *vb, int64_t ld, const float *p_row, int64_t t0,
                                        int64_t end, float *out)
{
    sw_v8 a0, a1, a2, a3, a4, a5, a6, a7;
    if (t0 > 0) {
        a0 = LOAD_V8(out), a1 = LOAD_V8(out + 8), a2 = LOAD_V8(out + 16), a3 = LOAD_V8(out + 24);
        a4 = LOAD_V8(out + 32), a5 = LOAD_V8(out + 40), a6 = LOAD_V8(out + 48);
        a7 = LOAD_V8(out + 56);
    } else {
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = (sw_v8){0.0f};
    }
    for (int64_t t = t0; t < end; t++) {
        const float *vt = vb + t * ld;
        float pr = p_row[t];
        prefetch_rows(vt + ATTN_PREFETCH * ld, ld, 1, 64);
        sw_v8 p = {pr, pr, pr, pr, pr, pr, pr, pr};
        a0 += p * LOAD_V8(vt);
        a1 += p * LOAD_V8(vt + 8);
        a2 += p * LOAD_V8(vt + 16);
        a3 += p * LOAD_V8(vt + 24);
        a4 += p * LOAD_V8(vt + 32);
        a5 += p * LOAD_V8(vt + 40);
        a6 += p * LOAD_V8(vt + 48);
        a7 += p * LOAD_V8(vt + 56);
    }
    memcpy(out, &a0, sizeof a0);
    memcpy(out + 8, &a1, sizeof a1);
    memcpy(out + 16, &a2, sizeof a2);
    memcpy(out + 24, &a3, sizeof a3);
    memcpy(out + 32, &a4, sizeof a4);
    memcpy(out + 40, &a5, sizeof a5);
    memcpy(out + 48, &a6, sizeof a6);
    memcpy(out + 56, &a7, sizeof a7);
}

/* The same in sixteen-lane sums, one AVX-512 register each: only for the
 * v4 build (GCC splits 64-byte vectors badly for AVX2, through the stack). */
SW_ALWAYS_INLINE void values_chunk64_v16(const float *vb, int64_t ld, const float *p_row,
                                         int64_t t0, int64_t end, float *out)
{
    sw_v16 a0, a1, a2, a3;
    if (t0 > 0) {
        a0 = LOAD_V16(out), a1 = LOAD_V16(out + 16), a2 = LOAD_V16(out + 32);
        a3 = LOAD_V16(out + 48);
    } else {
        a0 = a1 = a2 = a3 = (sw_v16){0.0f};
    }
    for (int64_t t = t0; t < end; t++) {
        const float *vt = vb + t * ld;
        float pr = p_row[t];
        prefetch_rows(vt + ATTN_PREFETCH * ld, ld, 1, 64);
        sw_v16 p = {pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr, pr};
        a0 += p * LOAD_V16(vt);
        a1 += p * LOAD_V16(vt + 16);
        a2 += p * LOAD_V16(vt + 32);
        a3 += p * LOAD_V16(vt + 48);
    }
    memcpy(out, &a0, sizeof a0);
    memcpy(out + 16, &a1, sizeof a1);
    memcpy(out + 32, &a2, sizeof a2);
    memcpy(out + 48, &a3, sizeof a3);
}

/* o_r = sum over t < n[r] of p_r[t] * v_t, added in order of t onto 0 as
 * the loop it replaces did, with each row's 64-wide slice of o held in
 * registers across a chunk of values; dh a multiple of eight. */
SW_ALWAYS_INLINE void values_tiled(const attn_job *j, const float *vb, float *const *sc,
                                   float *const *o, const int64_t *n, int nr, int64_t n_max)
{
    int wide = sw_cpu_level_get() >= SW_CPU_V4;
    /* t0 == 0 runs even with no keys: it writes the zeros */
    for (int64_t t0 = 0; t0 == 0 || t0 < n_max; t0 += ATTN_KEY_CHUNK) {
        int64_t t1 = t0 + ATTN_KEY_CHUNK < n_max ? t0 + ATTN_KEY_CHUNK : n_max;
        for (int r = 0; r < nr; r++) {
            int64_t end = t1 < n[r] ? t1 : n[r];
            for (int64_t c0 = 0; c0 < j->dh; c0 += 64) {
                int nv = (int)((j->dh - c0 < 64 ? j->dh - c0 : 64) / 8);
                float *out = o[r] + c0;
                if (nv == 8) { /* 64 columns (Whisper's heads): the sums stay in registers */
                    if (wide)
                        values_chunk64_v16(vb + c0, j->kv_ld, sc[r], t0, end, out);
                    else
                        values_chunk64_v8(vb + c0, j->kv_ld, sc[r], t0, end, out);
                    continue;
                }
                sw_v8 acc[8];
                for (int c = 0; c < nv; c++)
                    acc[c] = (sw_v8){0.0f};
                if (t0 > 0)
                    for (int c = 0; c < nv; c++)
                        acc[c] = LOAD_V8(out + 8 * c);
                for (int64_t t = t0; t < end; t++) {
                    const float *vt = vb + t * j->kv_ld + c0;
                    float pr = sc[r][t];
                    sw_v8 p = {pr, pr, pr, pr, pr, pr, pr, pr};
                    for (int c = 0; c < nv; c++)
                        acc[c] += p * LOAD_V8(vt + 8 * c);
                }
                for (int c = 0; c < nv; c++)
                    memcpy(out + 8 * c, &acc[c], sizeof acc[c]);
            }
        }
    }
}

/* Few queries (decoding): one item per (key batch, head), fused. The query
 * rows that read the same keys (the beams of one audio, times T_q) go
 * together, so each key and value row is loaded once for all of them: the
 * cross-attention's keys are 1500 rows that would otherwise stream from
 * memory once per beam. Each row's sums run in the same order as alone. */
/* vectorised for AVX2 where the CPU has it: the decoder's attention over the
 * 1500 audio frames is a large part of every decoding step */
#define ATTN_ROW_BLOCK 16

SW_ALWAYS_INLINE void attn_rows_range_body(void *ctx, size_t begin, size_t end)
{
    const attn_job *j = ctx;
    int64_t rows = j->group * j->tq; /* query rows per key batch */
    for (size_t item = begin; item < end; item++) {
        int64_t h = (int64_t)item % j->heads, bk = (int64_t)item / j->heads;
        const float *kb = j->k + bk * j->tkv * j->d + h * j->kv_head;
        const float *vb = j->v + bk * j->tkv * j->d + h * j->kv_head;
        for (int64_t r0 = 0; r0 < rows; r0 += ATTN_ROW_BLOCK) {
            int nr = (int)(rows - r0 < ATTN_ROW_BLOCK ? rows - r0 : ATTN_ROW_BLOCK);
            const float *q[ATTN_ROW_BLOCK + 3];
            float *sc[ATTN_ROW_BLOCK], *o[ATTN_ROW_BLOCK];
            int64_t n[ATTN_ROW_BLOCK] = {0}, n_max = 0;
            for (int r = 0; r < nr; r++) {
                int64_t b = bk * j->group + (r0 + r) / j->tq, i = (r0 + r) % j->tq;
                q[r] = j->q + (b * j->tq + i) * j->d + h * j->dh;
                sc[r] = j->scores + ((b * j->heads + h) * j->tq + i) * j->kv_len;
                o[r] = j->out + (b * j->tq + i) * j->d + h * j->dh;
                n[r] = attn_visible(j, i);
                n_max = n[r] > n_max ? n[r] : n_max;
            }
            if (j->dh % 8 == 0) {
                scores_tiled(j, kb, q, sc, n, nr, n_max);
                for (int r = 0; r < nr; r++)
                    masked_softmax(sc[r], n[r], j->kv_len);
                values_tiled(j, vb, sc, o, n, nr, n_max);
                continue;
            }
            /* a last block of one to three rows repeats its last row: four
             * chains cost about what one does, so a fifth beam is not alone */
            for (int r = nr; r < ATTN_ROW_BLOCK + 3; r++)
                q[r] = q[nr - 1];
            for (int64_t t = 0; t < n_max; t++) {
                const float *kt = kb + t * j->kv_ld;
                for (int r = 0; r < nr; r += 4) {
                    float d4[4];
                    dot4_f32(q + r, kt, j->dh, d4);
                    for (int u = 0; u < 4 && r + u < nr; u++)
                        if (t < n[r + u])
                            sc[r + u][t] = d4[u] * j->scale;
                }
            }
            for (int r = 0; r < nr; r++) {
                masked_softmax(sc[r], n[r], j->kv_len);
                for (int64_t c = 0; c < j->dh; c++)
                    o[r][c] = 0.0f;
            }
            for (int64_t t = 0; t < n_max; t++) {
                const float *vt = vb + t * j->kv_ld;
                for (int r = 0; r < nr; r++) {
                    if (t >= n[r])
                        continue;
                    float p = sc[r][t], *out = o[r];
                    for (int64_t c = 0; c < j->dh; c++)
                        out[c] += p * vt[c];
                }
            }
        }
    }
}

SW_VOID_MULTIVERSION(static, attn_rows_range, (void *ctx, size_t begin, size_t end),
                     (ctx, begin, end))

/* The softmax of every query row of one head's scores: built for each CPU
 * level (the encoder's 1500 x 1500 scores a head were a tenth of its time
 * at the baseline's four lanes), the same bits at every level. */
SW_ALWAYS_INLINE void softmax_head_body(const attn_job *j, float *s, int64_t i0, int64_t i1)
{
    for (int64_t i = i0; i < i1; i++)
        masked_softmax(s + (i - i0) * j->kv_len, attn_visible(j, i), j->kv_len);
}

SW_VOID_MULTIVERSION(static, softmax_head, (const attn_job *j, float *s, int64_t i0, int64_t i1),
                     (j, s, i0, i1))

/* Many queries (the encoder, a long prompt): each part of the pool takes whole
 * (batch, head) pairs: q k^T by sgemm into its own scores block, the masked
 * softmax row by row, then p v by sgemm. */
typedef struct heads_job {
    const attn_job *a;
    int64_t pairs, parts;
    float *scratch; /* [parts, T_q, kv_len] when probs is not kept */
    int keep;       /* scores is probs [B, H, T_q, kv_len] */
} heads_job;

/* Query rows per pair of products when the probabilities are not kept: a
 * 512 x 1500 block of scores (3 MB) stays in the caches between the three
 * passes over it, where a head's whole 1500 x 1500 (9 MB, two heads at a
 * time) went out to memory and back: the encoder 3-5% faster on a Zen 5.
 * Each score and output row has the bits it has in one call (the products'
 * sums run over k in the same order whatever the rows). */
#define ATTN_QUERY_BLOCK 512

static void attn_heads_range(void *ctx, size_t begin, size_t end)
{
    const heads_job *hj = ctx;
    const attn_job *j = hj->a;
    for (size_t part = begin; part < end; part++)
        for (int64_t pair = (int64_t)part; pair < hj->pairs; pair += hj->parts) {
            int64_t bi = pair / j->heads, h = pair % j->heads;
            float *s = hj->keep ? j->scores + pair * j->tq * j->kv_len
                                : hj->scratch + (int64_t)part * j->tq * j->kv_len;
            const float *qp = j->q + bi * j->tq * j->d + h * j->dh;
            const float *kp = j->k + (bi / j->group) * j->tkv * j->d + h * j->kv_head;
            const float *vp = j->v + (bi / j->group) * j->tkv * j->d + h * j->kv_head;
            float *op = j->out + bi * j->tq * j->d + h * j->dh;
            int64_t block = hj->keep ? j->tq : ATTN_QUERY_BLOCK;
            for (int64_t i0 = 0; i0 < j->tq; i0 += block) {
                int64_t rows = j->tq - i0 < block ? j->tq - i0 : block;
                float *sb = s + (hj->keep ? i0 * j->kv_len : 0);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->kv_len,
                            (int)j->dh, j->scale, qp + i0 * j->d, (int)j->d, kp, (int)j->kv_ld,
                            0.0f, sb, (int)j->kv_len);
                softmax_head(j, sb, i0, i0 + rows);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)j->dh,
                            (int)j->kv_len, 1.0f, sb, (int)j->kv_len, vp, (int)j->kv_ld, 0.0f,
                            op + i0 * j->d, (int)j->d);
            }
        }
}

/* Below this many queries the fused loop wins over two sgemm calls per head. */
#define SW_ATTN_GEMM_MIN_TQ 16

size_t sw_cpu_attention_scratch(sw_threadpool *tp, const sw_tensor *q, const sw_attention_params *p)
{
    int64_t b = q->shape[0], tq = q->shape[1];
    int64_t pairs = b * p->n_heads;
    int64_t parts = sw_threadpool_size(tp) < pairs ? sw_threadpool_size(tp) : pairs;
    /* the fused path keeps every row's scores, the sgemm path a head per part */
    int64_t rows = tq < SW_ATTN_GEMM_MIN_TQ ? pairs * tq : parts * tq;
    return (size_t)(rows * p->kv_len);
}

void sw_cpu_attention(sw_threadpool *tp, const sw_tensor *q, const sw_tensor *k, const sw_tensor *v,
                      const sw_attention_params *p, sw_tensor *out, float *scores, int keep)
{
    int64_t b = q->shape[0], tq = q->shape[1], d = q->shape[2], dh = d / p->n_heads;
    /* keys [B_kv, T_kv, D], or head by head [B_kv, H, T_kv, D/H] */
    int head_major = k->ndim == 4;
    int64_t tkv = head_major ? k->shape[2] : k->shape[1];
    attn_job j = {q->data,
                  k->data,
                  v->data,
                  out->data,
                  scores,
                  tq,
                  d,
                  dh,
                  tkv,
                  b / k->shape[0],
                  p->kv_len,
                  p->causal_offset,
                  head_major ? dh : d,
                  head_major ? tkv * dh : dh,
                  p->n_heads,
                  p->scale};
    if (b * p->n_heads * tq == 0)
        return;
    int64_t pairs = b * p->n_heads;
    int64_t parts = sw_threadpool_size(tp) < pairs ? sw_threadpool_size(tp) : pairs;
    if (tq < SW_ATTN_GEMM_MIN_TQ) {
        sw_parallel_for(tp, (size_t)(k->shape[0] * p->n_heads), 1, attn_rows_range, &j);
    } else {
        heads_job hj = {&j, pairs, parts, scores, keep};
        sw_parallel_for(tp, (size_t)parts, 1, attn_heads_range, &hj);
    }
}
