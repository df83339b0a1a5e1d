/* Tiled attention for many query rows (the encoder's 1500 frames, a decoder
 * prompt's rows): a block takes 64 query rows of one (batch, head) and
 * streams that head's keys and values through shared memory 32 rows at a
 * time, so each key and value is read from global memory once per 64 query
 * rows instead of once per row (attention_rows in norm_softmax.cu). The
 * softmax is the online one: per query row a running maximum m and sum l;
 * when a tile raises the maximum, the sum and the output accumulated so far
 * are scaled by exp(m_old - m_new), so the scores never leave the block and
 * the output is written once. Float32 throughout.
 *
 * Threads: 256 as 16 x 16. Thread (ty, tx) owns query rows ty + 16 r
 * (r < 4), the tile's keys tx + 16 j (j < 2) and the output columns
 * tx + 16 c (c < 4), so a row's 16 threads are one half-warp and its
 * maximum and sum are half-warp shuffles. Rows padded by one float keep the
 * threads' shared-memory reads on distinct banks (or one broadcast). */
#include "cuda_internal.h"

#define TILE_Q       64 /* query rows a block */
#define TILE_K       32 /* key rows a step */
#define TILE_DH      64 /* the widest head: Whisper's, every size */
#define TILE_THREADS 256
#define ROW_LANES    16 /* threads across one query row */
#define ROWS_EACH    (TILE_Q / ROW_LANES)
#define KEYS_EACH    (TILE_K / ROW_LANES)
#define COLS_EACH    (TILE_DH / ROW_LANES)
/* shared rows one float longer than their data: see the top */
#define QK_STRIDE (TILE_DH + 1)
#define P_STRIDE  (TILE_K + 1)
/* 41,600 bytes in all: under sm_75's 48 KiB a block */
#define QS_FLOATS (TILE_Q * QK_STRIDE)
#define KS_FLOATS (TILE_K * QK_STRIDE)
#define VS_FLOATS (TILE_K * TILE_DH)
#define PS_FLOATS (TILE_Q * P_STRIDE)

/* The tiled kernel wins where a tile of query rows shares each key read:
 * from a decoder prompt's rows up to the encoder's 1500. Below 16 rows
 * (decoding: one row per beam against the cache or 1500 audio frames) most
 * of a 64-row tile would be empty, and attention_rows spreads the keys over
 * its whole block instead. The row kernel also stays where the weights are
 * asked for (word timestamps' cross-attention: it writes them row by row)
 * and for heads wider than a tile (no model here has one). The 16 is not yet
 * measured on a GPU. */
#define TILE_MIN_ROWS 16

int sw_cuda_attention_tiled_fits(int64_t tq, int64_t dh, int with_probs)
{
    return !with_probs && dh <= TILE_DH && tq >= TILE_MIN_ROWS;
}

/* The maximum (or sum) over a query row's 16 threads; every one gets it. */
__device__ static float row_max(float v)
{
    for (int o = ROW_LANES / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ static float row_sum(float v)
{
    for (int o = ROW_LANES / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(TILE_THREADS)
    attention_tiles(const float *q, const float *k, const float *v, float *out, int64_t tq,
                    int64_t d, int64_t dh, int64_t tkv, int64_t group, int64_t kv_len,
                    int64_t causal, int heads, float scale, int64_t q_tiles, int64_t items,
                    const int32_t *length)
{
    sw_cuda_device_length(length, tkv, &kv_len, &causal);
    SW_SHARED(float, qs, QS_FLOATS);
    SW_SHARED(float, ks, KS_FLOATS);
    SW_SHARED(float, vs, VS_FLOATS);
    SW_SHARED(float, ps, PS_FLOATS);
    const int tx = threadIdx.x % ROW_LANES, ty = threadIdx.x / ROW_LANES;
    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        int64_t tile = item % q_tiles, h = (item / q_tiles) % heads, b = item / (q_tiles * heads);
        int64_t i0 = tile * TILE_Q, rows = tq - i0 < TILE_Q ? tq - i0 : TILE_Q;
        const float *qb = q + (b * tq + i0) * d + h * dh;
        const float *kb = k + (b / group) * tkv * d + h * dh;
        const float *vb = v + (b / group) * tkv * d + h * dh;
        /* the keys the tile's last row sees; rows before it mask the rest */
        int64_t n_end = kv_len;
        if (causal >= 0 && causal + i0 + rows < n_end)
            n_end = causal + i0 + rows;

        __syncthreads(); /* the previous item may still read qs, ks, vs, ps */
        /* zeros beyond the rows and the head: they add nothing to a score */
        for (int e = threadIdx.x; e < TILE_Q * TILE_DH; e += blockDim.x) {
            int r = e / TILE_DH, c = e % TILE_DH;
            qs[r * QK_STRIDE + c] = r < rows && c < dh ? qb[r * d + c] : 0.0f;
        }
        float m[ROWS_EACH], l[ROWS_EACH], acc[ROWS_EACH][COLS_EACH];
        int64_t seen[ROWS_EACH];
        for (int r = 0; r < ROWS_EACH; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
            int64_t i = i0 + ty + ROW_LANES * r;
            seen[r] = causal >= 0 && causal + i + 1 < kv_len ? causal + i + 1 : kv_len;
            for (int c = 0; c < COLS_EACH; c++)
                acc[r][c] = 0.0f;
        }

        for (int64_t t0 = 0; t0 < n_end; t0 += TILE_K) {
            int keys = n_end - t0 < TILE_K ? (int)(n_end - t0) : TILE_K;
            __syncthreads(); /* the last step's products are done with ks, vs, ps */
            /* zeros past the keys: a masked key's weight is 0, and 0 times
             * what lies past kv_len (NaN, or past the tensor) must not count */
            for (int e = threadIdx.x; e < TILE_K * TILE_DH; e += blockDim.x) {
                int t = e / TILE_DH, c = e % TILE_DH;
                int in = t < keys && c < dh;
                ks[t * QK_STRIDE + c] = in ? kb[(t0 + t) * d + c] : 0.0f;
                vs[t * TILE_DH + c] = in ? vb[(t0 + t) * d + c] : 0.0f;
            }
            __syncthreads();

            float s[ROWS_EACH][KEYS_EACH];
            for (int r = 0; r < ROWS_EACH; r++)
                for (int j = 0; j < KEYS_EACH; j++)
                    s[r][j] = 0.0f;
            for (int c = 0; c < dh; c++) {
                float qc[ROWS_EACH], kc[KEYS_EACH];
                for (int r = 0; r < ROWS_EACH; r++)
                    qc[r] = qs[(ty + ROW_LANES * r) * QK_STRIDE + c];
                for (int j = 0; j < KEYS_EACH; j++)
                    kc[j] = ks[(tx + ROW_LANES * j) * QK_STRIDE + c];
                for (int r = 0; r < ROWS_EACH; r++)
                    for (int j = 0; j < KEYS_EACH; j++)
                        s[r][j] += qc[r] * kc[j];
            }

            for (int r = 0; r < ROWS_EACH; r++) {
                float top = -INFINITY;
                for (int j = 0; j < KEYS_EACH; j++) {
                    int64_t t = t0 + tx + ROW_LANES * j;
                    s[r][j] = t < seen[r] ? s[r][j] * scale : -INFINITY;
                    top = fmaxf(top, s[r][j]);
                }
                float m_new = fmaxf(m[r], row_max(top));
                /* every row sees key 0, so m_new is finite from the first
                 * step on; before it nothing was accumulated to rescale */
                float rescale = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
                float part = 0.0f;
                for (int j = 0; j < KEYS_EACH; j++) {
                    float p = s[r][j] == -INFINITY ? 0.0f : expf(s[r][j] - m_new);
                    ps[(ty + ROW_LANES * r) * P_STRIDE + tx + ROW_LANES * j] = p;
                    part += p;
                }
                /* each thread keeps its share of the sum; the shares are
                 * added once at the end, since all scale alike */
                l[r] = l[r] * rescale + part;
                m[r] = m_new;
                for (int c = 0; c < COLS_EACH; c++)
                    acc[r][c] *= rescale;
            }
            __syncthreads();

            for (int t = 0; t < keys; t++) {
                float vt[COLS_EACH];
                for (int c = 0; c < COLS_EACH; c++)
                    vt[c] = vs[t * TILE_DH + tx + ROW_LANES * c];
                for (int r = 0; r < ROWS_EACH; r++) {
                    float p = ps[(ty + ROW_LANES * r) * P_STRIDE + t];
                    for (int c = 0; c < COLS_EACH; c++)
                        acc[r][c] += p * vt[c];
                }
            }
        }

        for (int r = 0; r < ROWS_EACH; r++) {
            float sum = row_sum(l[r]);
            float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
            int64_t i = ty + ROW_LANES * r;
            if (i >= rows)
                continue;
            float *o = out + (b * tq + i0 + i) * d + h * dh;
            for (int c = 0; c < COLS_EACH; c++) {
                int col = tx + ROW_LANES * c;
                if (col < dh)
                    o[col] = acc[r][c] * inv;
            }
        }
    }
}

sw_status sw_cuda_attention_tiled(sw_cuda *c, const float *q, const float *k, const float *v,
                                  float *out, int64_t batch, int64_t tq, int64_t d, int64_t dh,
                                  int64_t tkv, int64_t group, const sw_attention_params *p,
                                  sw_error *err)
{
    int64_t q_tiles = (tq + TILE_Q - 1) / TILE_Q, items = batch * p->n_heads * q_tiles;
    unsigned grid = (unsigned)(items < c->max_grid ? items : c->max_grid);
    SW_LAUNCH(attention_tiles, grid, TILE_THREADS, 0, c->stream)
    (q, k, v, out, tq, d, dh, tkv, group, p->kv_len, p->causal_offset, p->n_heads, p->scale,
     q_tiles, items, p->length);
    return sw_cuda_check_launch(c, err, "attention_tiles");
}
