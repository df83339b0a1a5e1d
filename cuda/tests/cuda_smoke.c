/* Runs every op of libsaywho_cuda.so once against a CPU reference, on a real
 * GPU. It dlopens the library the way the core does, so it also checks the
 * export and the ABI. Exits 77 (ctest's "skipped") when no GPU can be opened,
 * so it is harmless on CI machines without one.
 *   cuda_smoke path/to/libsaywho_cuda.so [device] */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "elementwise_math.h"

static sw_backend *be;
static int failures;

static sw_tensor dev(sw_dtype dt, int ndim, const int64_t *shape, size_t elem)
{
    sw_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        t.shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    sw_error err = {SW_OK, {0}};
    t.data = be->alloc(be, n * elem, &err);
    t.backend = be;
    if (!t.data) {
        fprintf(stderr, "alloc: %s\n", err.msg);
        exit(1);
    }
    return t;
}

static void put(sw_tensor *t, const void *host, size_t bytes)
{
    sw_error err = {SW_OK, {0}};
    if (be->upload(be, t->data, host, bytes, &err) != SW_OK) {
        fprintf(stderr, "upload: %s\n", err.msg);
        exit(1);
    }
}

static void get(void *host, const sw_tensor *t, size_t bytes)
{
    sw_error err = {SW_OK, {0}};
    if (be->download(be, host, t->data, bytes, &err) != SW_OK) {
        fprintf(stderr, "download: %s\n", err.msg);
        exit(1);
    }
}

static void check(const char *what, sw_status st, const sw_error *err, const float *got,
                  const float *want, size_t n, float tol)
{
    float worst = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(got[i] - want[i]) / (1.0f + fabsf(want[i]));
        if (!(d <= worst))
            worst = d; /* also catches NaN */
    }
    int ok = st == SW_OK && worst <= tol;
    printf("%-26s %s (max rel err %.3g)%s%s\n", what, ok ? "ok  " : "FAIL", worst,
           st == SW_OK ? "" : ": ", st == SW_OK ? "" : err->msg);
    failures += !ok;
}

#define ROWS 37
#define COLS 300
#define K    70

/* A graph (backend.h ABI 8): add, scale and a cuBLAS product captured once
 * and replayed with new inputs uploaded between the replays, as a decoder
 * step would be; each replay is one graph launch and no kernel launch, and
 * matches the same ops run eagerly. Then what a capture must refuse: an
 * upload (the device refuses it, the capture ends without a graph) and an
 * allocation (refused by the backend before the device sees it). */
static void graphs(sw_tensor *a, sw_tensor *b, sw_tensor *o, sw_tensor *wd, sw_tensor *cd,
                   const float *x, const float *y, const float *c0, const float *cw)
{
    const size_t n = ROWS * COLS;
    sw_error err = {SW_OK, {0}};
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got), cg[ROWS * K];
    sw_backend_counters seen;
    be->counters(be, NULL, 1);
    sw_graph *graph = NULL;
    sw_status st = be->capture_begin(be, &err);
    if (st == SW_OK)
        st = be->add(be, a, b, o, &err);
    if (st == SW_OK)
        st = be->scale(be, o, 0.25f, o, &err);
    if (st == SW_OK)
        st = be->matmul(be, a, wd, cd, 0, 0.5f, 2.0f, &err);
    sw_status end = be->capture_end(be, &graph, &err);
    if (st == SW_OK)
        st = end;
    be->counters(be, &seen, 1);
    printf("graph capture              %s (%llu launches while capturing)%s%s\n",
           st == SW_OK && graph && seen.launches == 0 ? "ok  " : "FAIL",
           (unsigned long long)seen.launches, st == SW_OK ? "" : ": ", st == SW_OK ? "" : err.msg);
    failures += st != SW_OK || !graph || seen.launches != 0;
    for (int replay = 0; replay < 2 && graph; replay++) {
        const float *second = replay ? x : y; /* b is y, then x */
        put(b, second, n * 4);
        put(cd, c0, ROWS * K * 4);
        for (size_t i = 0; i < n; i++)
            want[i] = (x[i] + second[i]) * 0.25f;
        st = be->graph_launch(be, graph, &err);
        get(got, o, n * 4);
        check(replay ? "graph replay, new input" : "graph replay", st, &err, got, want, n, 0.0f);
        get(cg, cd, sizeof cg);
        check("graph replay matmul", st, &err, cg, cw, ROWS * K, 1e-4f);
    }
    be->counters(be, &seen, 1);
    int counted = seen.graph_launches == 2 && seen.launches == 0;
    printf("graph counters             %s (%llu graph launches, %llu launches)\n",
           counted ? "ok  " : "FAIL", (unsigned long long)seen.graph_launches,
           (unsigned long long)seen.launches);
    failures += !counted;
    be->graph_free(be, graph);
    put(b, y, n * 4);

    /* an upload inside a capture: refused, no graph, the stream usable after */
    graph = NULL;
    st = be->capture_begin(be, &err);
    sw_status inside = st == SW_OK ? be->upload(be, b->data, y, n * 4, &err) : st;
    sw_error end_err = {SW_OK, {0}};
    end = be->capture_end(be, &graph, &end_err);
    int refused = st == SW_OK && inside != SW_OK && end != SW_OK && !graph;
    printf("graph refuses an upload    %s (%s / %s)\n", refused ? "ok  " : "FAIL", err.msg,
           end_err.msg);
    failures += !refused;
    /* an allocation inside a capture */
    err = (sw_error){SW_OK, {0}};
    end_err = (sw_error){SW_OK, {0}};
    st = be->capture_begin(be, &err);
    void *p = st == SW_OK ? be->alloc(be, 1024, &err) : NULL;
    end = be->capture_end(be, &graph, &end_err);
    refused = st == SW_OK && !p && strstr(err.msg, "capture") && end == SW_OK && graph;
    printf("graph refuses an alloc     %s (%s)\n", refused ? "ok  " : "FAIL", err.msg);
    failures += !refused;
    be->graph_free(be, graph);
    if (p)
        be->free(be, p);
    for (size_t i = 0; i < n; i++)
        want[i] = x[i] + y[i];
    err = (sw_error){SW_OK, {0}};
    st = be->add(be, a, b, o, &err);
    get(got, o, n * 4);
    check("add after the captures", st, &err, got, want, n, 0.0f);
    free(want);
    free(got);
}

/* The half and int8 products inside a graph (issue 37): their scratch comes
 * from the backend's workspace, which a capture cannot allocate. The first
 * capture finds none and fails with SW_ERR_NOMEM, leaving the size for the
 * next capture_begin; a later one succeeds. The replays give the eager
 * products' bits; while the graph lives an eager product uses the workspace
 * too (no pool allocation), and freeing the graph returns the memory. */
static void graph_products(sw_tensor *a, const sw_tensor *w16, const sw_tensor *w8,
                           const sw_tensor *w8_scale, const sw_tensor *w8_sum, sw_tensor *c16,
                           sw_tensor *c8)
{
    const size_t n16 = (size_t)(c16->shape[0] * c16->shape[1]);
    const size_t n8 = (size_t)(c8->shape[0] * c8->shape[1]);
    float *want16 = malloc(n16 * 4), *want8 = malloc(n8 * 4), *got = malloc((n16 + n8) * 4);
    float *zero = calloc(n16 + n8, 4);
    sw_error err = {SW_OK, {0}};
    sw_status st = be->matmul(be, a, w16, c16, 1, 1.0f, 0.0f, &err);
    if (st == SW_OK)
        st = be->matmul_q8(be, a, w8, w8_scale, w8_sum, c8, 0.0f, &err);
    get(want16, c16, n16 * 4);
    get(want8, c8, n8 * 4);
    sw_pool_stats before = be->memory(be);

    sw_graph *graph = NULL;
    int tries = 0, short_first = 0;
    while (st == SW_OK && !graph && tries < 4) {
        sw_error op_err = {SW_OK, {0}}, end_err = {SW_OK, {0}};
        tries++;
        st = be->capture_begin(be, &err);
        if (st != SW_OK)
            break;
        sw_status op = be->matmul(be, a, w16, c16, 1, 1.0f, 0.0f, &op_err);
        if (op == SW_OK)
            op = be->matmul_q8(be, a, w8, w8_scale, w8_sum, c8, 0.0f, &op_err);
        st = be->capture_end(be, &graph, &end_err);
        if (tries == 1)
            short_first = op == SW_ERR_NOMEM && strstr(op_err.msg, "workspace");
        if (op != SW_OK) {
            be->graph_free(be, graph);
            graph = NULL;
            st = op == SW_ERR_NOMEM ? SW_OK : op;
            err = op_err;
        } else if (st != SW_OK) {
            err = end_err;
        }
    }
    sw_pool_stats held = be->memory(be);
    int ok = st == SW_OK && graph && short_first && held.allocated > before.allocated;
    printf("graph of half, int8        %s (%d captures, workspace %zu bytes)%s%s\n",
           ok ? "ok  " : "FAIL", tries, held.allocated - before.allocated, st == SW_OK ? "" : ": ",
           st == SW_OK ? "" : err.msg);
    failures += !ok;
    if (graph) {
        put(c16, zero, n16 * 4);
        put(c8, zero, n8 * 4);
        st = be->graph_launch(be, graph, &err);
        get(got, c16, n16 * 4);
        get(got + n16, c8, n8 * 4);
        check("graph replay half product", st, &err, got, want16, n16, 0.0f);
        check("graph replay int8 product", st, &err, got + n16, want8, n8, 0.0f);
        /* eager while the graph lives: the workspace, no pool block */
        st = be->matmul(be, a, w16, c16, 1, 1.0f, 0.0f, &err);
        if (st == SW_OK)
            st = be->matmul_q8(be, a, w8, w8_scale, w8_sum, c8, 0.0f, &err);
        sw_pool_stats eager = be->memory(be);
        get(got, c16, n16 * 4);
        check("eager half, workspace", st, &err, got, want16, n16, 0.0f);
        int none = eager.total_allocs == held.total_allocs;
        printf("eager uses the workspace   %s (%zu pool allocations)\n", none ? "ok  " : "FAIL",
               eager.total_allocs - held.total_allocs);
        failures += !none;
    }
    be->graph_free(be, graph);
    sw_pool_stats after = be->memory(be);
    int back = after.allocated == before.allocated;
    printf("graph_free returns it      %s (%zu bytes left over)\n", back ? "ok  " : "FAIL",
           after.allocated - before.allocated);
    failures += !back;
    free(want16);
    free(want8);
    free(got);
    free(zero);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_smoke libsaywho_cuda.so [device]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    sw_cuda_open_fn open_fn = (sw_cuda_open_fn)dlsym(lib, SW_CUDA_ENTRY);
    if (!open_fn) {
        fprintf(stderr, "no %s in %s\n", SW_CUDA_ENTRY, argv[1]);
        return 1;
    }
    sw_error err = {SW_OK, {0}};
    /* the program's edge: a pip cuBLAS is found through SAYWHO_CUBLAS_PATH */
    sw_status st = open_fn(argc > 2 ? atoi(argv[2]) : 0, SW_BACKEND_ABI,
                           getenv("SAYWHO_CUBLAS_PATH"), &be, &err);
    if (st != SW_OK) {
        printf("skipped: %s: %s\n", sw_status_name(st), err.msg);
        return st == SW_ERR_DEVICE ? 77 : 1;
    }
    sw_device_info info;
    if (be->device_info(be, &info, &err) == SW_OK)
        printf("%s, sm_%d%d, %zu of %zu MiB free\n", info.name, info.compute_major,
               info.compute_minor, info.free_bytes >> 20, info.total_bytes >> 20);

    const size_t n = ROWS * COLS;
    const int64_t shape[2] = {ROWS, COLS}, row[1] = {COLS};
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = malloc(n * sizeof *want),
          *got = malloc(n * sizeof *got), g[COLS], bvec[COLS];
    srand(1);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)rand() / RAND_MAX * 8.0f - 4.0f;
        y[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
    }
    for (int j = 0; j < COLS; j++) {
        g[j] = 0.5f + (float)j / COLS;
        bvec[j] = (float)j / COLS - 0.5f;
    }
    sw_tensor a = dev(SW_F32, 2, shape, 4), b = dev(SW_F32, 2, shape, 4),
              o = dev(SW_F32, 2, shape, 4), gv = dev(SW_F32, 1, row, 4),
              bv = dev(SW_F32, 1, row, 4);
    put(&a, x, n * 4);
    put(&b, y, n * 4);
    put(&gv, g, sizeof g);
    put(&bv, bvec, sizeof bvec);

    get(got, &a, n * 4);
    check("upload/download", SW_OK, &err, got, x, n, 0.0f);

    for (size_t i = 0; i < n; i++)
        want[i] = x[i] + y[i];
    st = be->add(be, &a, &b, &o, &err);
    get(got, &o, n * 4);
    check("add", st, &err, got, want, n, 0.0f);

    for (size_t i = 0; i < n; i++)
        want[i] = x[i] * g[i % COLS];
    st = be->mul(be, &a, &gv, &o, &err);
    get(got, &o, n * 4);
    check("mul (row broadcast)", st, &err, got, want, n, 0.0f);

    for (size_t i = 0; i < n; i++)
        want[i] = x[i] * 0.125f;
    st = be->scale(be, &a, 0.125f, &o, &err);
    get(got, &o, n * 4);
    check("scale", st, &err, got, want, n, 0.0f);

    for (size_t i = 0; i < n; i++)
        want[i] = sw_gelu_f(x[i]);
    st = be->gelu(be, &a, &o, &err);
    get(got, &o, n * 4);
    check("gelu", st, &err, got, want, n, 1e-6f);

    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + r * COLS;
        float m = -INFINITY, s = 0.0f;
        for (int j = 0; j < COLS; j++)
            m = fmaxf(m, xr[j]);
        for (int j = 0; j < COLS; j++)
            s += expf(xr[j] - m);
        for (int j = 0; j < COLS; j++)
            want[r * COLS + j] = expf(xr[j] - m) / s;
    }
    st = be->softmax(be, &a, &o, &err);
    get(got, &o, n * 4);
    check("softmax", st, &err, got, want, n, 1e-5f);

    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + r * COLS;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < COLS; j++)
            mean += xr[j];
        mean /= COLS;
        for (int j = 0; j < COLS; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= COLS;
        for (int j = 0; j < COLS; j++)
            want[r * COLS + j] = (float)((xr[j] - mean) / sqrt(var + 1e-5)) * g[j] + bvec[j];
    }
    st = be->layernorm(be, &a, &gv, &bv, 1e-5f, &o, &err);
    get(got, &o, n * 4);
    check("layernorm", st, &err, got, want, n, 1e-5f);

    sw_tensor h = dev(SW_F16, 2, shape, 2), bf = dev(SW_BF16, 2, shape, 2);
    for (size_t i = 0; i < n; i++)
        want[i] = sw_f16_to_f32(sw_f32_to_f16(x[i]));
    st = be->convert(be, &a, &h, &err);
    if (st == SW_OK)
        st = be->convert(be, &h, &o, &err);
    get(got, &o, n * 4);
    check("convert f32>f16>f32", st, &err, got, want, n, 0.0f);
    for (size_t i = 0; i < n; i++)
        want[i] = sw_bf16_to_f32(sw_f32_to_bf16(sw_f16_to_f32(sw_f32_to_f16(x[i]))));
    st = be->convert(be, &h, &bf, &err);
    if (st == SW_OK)
        st = be->convert(be, &bf, &o, &err);
    get(got, &o, n * 4);
    check("convert f16>bf16>f32", st, &err, got, want, n, 0.0f);

    /* matmul: a[ROWS,COLS] @ w, with w [COLS,K] and its transpose [K,COLS] */
    const int64_t wshape[2] = {COLS, K}, wtshape[2] = {K, COLS}, cshape[2] = {ROWS, K};
    float *w = malloc(COLS * K * sizeof *w), *wt = malloc(COLS * K * sizeof *wt);
    float c0[ROWS * K], cw[ROWS * K], cg[ROWS * K];
    for (int i = 0; i < COLS; i++)
        for (int j = 0; j < K; j++) {
            w[i * K + j] = (float)rand() / RAND_MAX - 0.5f;
            wt[j * COLS + i] = w[i * K + j];
        }
    for (int i = 0; i < ROWS * K; i++)
        c0[i] = (float)i / (ROWS * K);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < K; j++) {
            double s = 0.0;
            for (int i = 0; i < COLS; i++)
                s += (double)x[r * COLS + i] * w[i * K + j];
            cw[r * K + j] = (float)(0.5 * s + 2.0 * c0[r * K + j]);
        }
    sw_tensor wd = dev(SW_F32, 2, wshape, 4), wtd = dev(SW_F32, 2, wtshape, 4),
              cd = dev(SW_F32, 2, cshape, 4);
    put(&wd, w, COLS * K * 4);
    put(&wtd, wt, COLS * K * 4);
    for (int trans = 0; trans < 2; trans++) {
        put(&cd, c0, sizeof c0);
        /* TF32 is off by default in cuBLAS sgemm, so 1e-4 is plenty */
        st = be->matmul(be, &a, trans ? &wtd : &wd, &cd, trans, 0.5f, 2.0f, &err);
        get(cg, &cd, sizeof cg);
        check(trans ? "matmul trans_b" : "matmul", st, &err, cg, cw, ROWS * K, 1e-4f);
    }

    graphs(&a, &b, &o, &wd, &cd, x, y, c0, cw);

    /* the same weight as float16 [K, COLS] and as int8 rows with scales */
    const int64_t kshape[1] = {K};
    sw_tensor w16 = dev(SW_F16, 2, wtshape, 2), w8 = dev(SW_I8, 2, wtshape, 1),
              w8_scale = dev(SW_F32, 1, kshape, 4), w8_sum = dev(SW_I32, 1, kshape, 4),
              c8 = dev(SW_F32, 2, cshape, 4);
    st = be->convert(be, &wtd, &w16, &err);
    failures += st != SW_OK;
    signed char *q = malloc(COLS * K);
    float qs[K];
    int32_t qsum[K];
    for (int j = 0; j < K; j++) {
        qs[j] = 127.0f / 0.5f; /* the weights lie in [-0.5, 0.5] */
        qsum[j] = 0;
        for (int i = 0; i < COLS; i++) {
            q[j * COLS + i] = (signed char)lrintf(wt[j * COLS + i] * qs[j]);
            qsum[j] += q[j * COLS + i];
        }
    }
    put(&w8, q, COLS * K);
    put(&w8_scale, qs, sizeof qs);
    put(&w8_sum, qsum, sizeof qsum);
    graph_products(&a, &w16, &w8, &w8_scale, &w8_sum, &cd, &c8);
    free(q);

    st = be->synchronize(be, &err);
    failures += st != SW_OK;
    sw_tensor all[] = {a, b, o, gv, bv, h, bf, wd, wtd, cd, w16, w8, w8_scale, w8_sum, c8};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        be->free(be, all[i].data);
    sw_pool_stats s = be->memory(be);
    printf("after free: allocated %zu, reserved %zu, peak %zu bytes\n", s.allocated, s.reserved,
           s.peak_allocated);
    failures += s.allocated != 0 || s.live_blocks != 0;
    be->trim(be);
    s = be->memory(be);
    failures += s.reserved != 0;
    be->destroy(be);
    free(x);
    free(y);
    free(want);
    free(got);
    free(w);
    free(wt);
    printf("%s\n", failures ? "FAILED" : "all ok");
    return failures ? 1 : 0;
}
