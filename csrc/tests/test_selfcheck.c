/* The GPU self-check (selfcheck.h). On the CPU backend it must pass (the CPU
 * against itself); on the emulated CUDA backend (SAYWHO_TEST_CUDA_LIBRARY) it
 * must pass, and then fail, naming the op, for each kernel that the emulator
 * is told to skip (SAYWHO_CUDA_EMU_BREAK): every kernel is checked. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "selfcheck.h"

static const struct {
    const char *kernel, *op;
} kernels[] = {
    {"sgemm", "matmul"},
    {"binary_f32", "add"},
    {"scale_f32", "scale"},
    {"gelu_f32", "gelu"},
    {"softmax_rows", "softmax"},
    {"layernorm_rows", "layernorm"},
    {"leaky_f32", "leaky_relu"},
    {"log_softmax_f32", "log_softmax"},
    {"convert_kernel", "convert"},
    {"transpose_f32", "transpose"},
    {"im2col_f32", "conv1d"},
    {"fill_rows_f32", "conv1d"},
    {"gather_rows_f32", "gather_rows"},
    {"scatter_rows_f32", "scatter_rows"},
    {"attention_rows", "attention"},
    {"attention_tiles", "attention"},
    {"max_pool_f32", "max_pool1d"},
    {"instance_norm_f32", "instance_norm"},
    {"lstm_recurrence_f32", "lstm"},
    {"quantize_rows_q8", "matmul_q8"},
    {"gemm_q8", "matmul_q8"},
    {"stats_pool_f32", "stats_pool"},
    {"magnitude_f32", "magnitude"},
    {"l2_normalize_f32", "l2_normalize"},
    {"gemm_ex", "float16 matmul"},
    {"f32_to_f16", "float16 matmul"},
    {"f32_to_bf16", "bfloat16 matmul"},
    {"im2col_f16", "float16 conv1d"},
    {"im2col_bf16", "bfloat16 conv1d"},
    {"gather_rows_f16", "float16 gather_rows"},
    {"gather_rows_bf16", "bfloat16 gather_rows"},
};

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    unsetenv("SAYWHO_CUDA_EMU_BREAK");
    setenv("SAYWHO_GPU_SELF_CHECK", "0", 1); /* open first, check here */
    CHECK(sw_test_backend_open(1, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_selfcheck");
    CHECK(sw_backend_self_check(b, &err) == SW_OK);
    if (err.code != SW_OK)
        fprintf(stderr, "%s\n", err.msg);
    if (b->kind == SW_DEVICE_CUDA) {
        for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
            sw_error_clear(&err);
            setenv("SAYWHO_CUDA_EMU_BREAK", kernels[i].kernel, 1);
            CHECK(sw_backend_self_check(b, &err) == SW_ERR_DEVICE);
            char want[64];
            snprintf(want, sizeof want, "the %s kernel", kernels[i].op);
            CHECK(strstr(err.msg, want) != NULL);
            if (!strstr(err.msg, want))
                fprintf(stderr, "breaking %s: %s\n", kernels[i].kernel, err.msg);
        }
        unsetenv("SAYWHO_CUDA_EMU_BREAK");
    }
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
    return sw_check_summary("test_selfcheck");
}
