#include "status.h"

#include <stdarg.h>
#include <stdio.h>

sw_status sw_fail(sw_error *err, sw_status code, const char *fmt, ...)
{
    if (err == NULL || err->code != SW_OK)
        return err ? err->code : code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void sw_error_clear(sw_error *err)
{
    if (err) {
        err->code = SW_OK;
        err->msg[0] = '\0';
    }
}

const char *sw_status_name(sw_status code)
{
    switch (code) {
    case SW_OK: return "ok";
    case SW_ERR_ARG: return "invalid argument";
    case SW_ERR_NOMEM: return "out of memory";
    case SW_ERR_AUDIO: return "audio error";
    case SW_ERR_MODEL: return "model error";
    case SW_ERR_DEVICE: return "device error";
    case SW_ERR_IO: return "I/O error";
    case SW_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}
