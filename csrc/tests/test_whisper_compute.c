/* Whisper's compute types (whisper_compute.h): the one list, the names a
 * user may write, and the rule on a backend's capabilities with its one
 * message. */
#include <string.h>

#include "check.h"
#include "whisper_compute.h"

static void names(void)
{
    CHECK(sw_whisper_compute_count() == 5);
    CHECK(strcmp(sw_whisper_compute_name(SW_WHISPER_FLOAT32), "float32") == 0);
    CHECK(strcmp(sw_whisper_compute_name(SW_WHISPER_INT8_FLOAT16), "int8_float16") == 0);
    CHECK(sw_whisper_compute_name(5) == NULL && sw_whisper_compute_name(-1) == NULL);
    sw_error err = {SW_OK, ""};
    sw_whisper_compute c = SW_WHISPER_FLOAT32;
    CHECK(sw_whisper_compute_parse("auto", &c, &err) == SW_OK && c == SW_WHISPER_INT8);
    CHECK(sw_whisper_compute_parse("int8_float32", &c, &err) == SW_OK && c == SW_WHISPER_INT8);
    CHECK(sw_whisper_compute_parse("default", &c, &err) == SW_OK && c == SW_WHISPER_FLOAT32);
    sw_error_clear(&err); /* sw_fail keeps the first error */
    CHECK(sw_whisper_compute_parse("int16", &c, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "'int16' is not built") != NULL);
    sw_error_clear(&err);
    CHECK(sw_whisper_compute_parse("Float16", &c, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "unknown compute_type 'Float16'") != NULL);
    CHECK(strstr(err.msg, "'default'") != NULL && strstr(err.msg, "'int8_float16'") != NULL);
    CHECK(strstr(err.msg, "'int16'") == NULL); /* not offered: it is not built */
    /* every name written resolves to a compute, or is one of the not built */
    int compute, n = 0;
    for (const char *s; (s = sw_whisper_compute_spelling(n, &compute)); n++)
        CHECK(compute >= -1 && compute < sw_whisper_compute_count());
    CHECK(n == 10);
}

static void rule(void)
{
    sw_error err = {SW_OK, ""};
    const unsigned cpu_like = SW_WHISPER_OFFERS_INT8 | SW_WHISPER_OFFERS_BF16_LINEAR;
    const unsigned all = cpu_like | SW_WHISPER_OFFERS_HALF;
    for (int c = 0; c < sw_whisper_compute_count(); c++)
        CHECK(sw_whisper_compute_check(c, all, "cuda", &err) == SW_OK);
    CHECK(sw_whisper_compute_check(SW_WHISPER_BFLOAT16, cpu_like, "cpu", &err) == SW_OK);
    sw_error_clear(&err);
    CHECK(sw_whisper_compute_check(SW_WHISPER_FLOAT16, cpu_like, "cpu", &err) == SW_ERR_ARG);
    CHECK(strcmp(err.msg, "compute_type 'float16' needs a GPU: the cpu backend computes "
                          "'float32', 'int8' and 'bfloat16'; use one of those, or "
                          "device='cuda'") == 0);
    sw_error_clear(&err);
    CHECK(sw_whisper_compute_check(SW_WHISPER_INT8, 0, "bare", &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "'int8' needs int8 products: the bare backend computes 'float32';") !=
          NULL);
    CHECK(strstr(err.msg, "device='cuda'") == NULL);
    sw_error_clear(&err);
    CHECK(sw_whisper_compute_check(7, all, "cuda", &err) == SW_ERR_ARG);

    /* what the CPU backend offers: int8 and bfloat16 linear products, no
     * half weights in every op */
    sw_backend *be = NULL;
    CHECK(sw_cpu_backend_open(1, &be, &err) == SW_OK);
    if (be) {
        CHECK(sw_whisper_compute_offered(be) == cpu_like);
        be->destroy(be);
    }
}

int main(void)
{
    names();
    rule();
    return sw_check_summary("test_whisper_compute");
}
