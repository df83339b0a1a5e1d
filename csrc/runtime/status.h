/* Errors are values: every core call returns a status and fills an sw_error
 * that the caller owns, so no global state is touched from worker threads and
 * the Python edge can turn the message into an exception naming the file. */
#ifndef SW_STATUS_H
#define SW_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sw_status {
    SW_OK = 0,
    SW_ERR_ARG,     /* an option or argument out of range */
    SW_ERR_NOMEM,   /* host or device allocation failed */
    SW_ERR_AUDIO,   /* unreadable, empty or corrupt audio */
    SW_ERR_MODEL,   /* missing or mismatched weights */
    SW_ERR_DEVICE,  /* no usable GPU, driver or library problem */
    SW_ERR_IO,      /* file system */
    SW_ERR_INTERNAL /* a bug in saywho */
} sw_status;

#define SW_ERROR_MSG_LEN 512

typedef struct sw_error {
    sw_status code;
    char msg[SW_ERROR_MSG_LEN];
} sw_error;

/* Records the first failure only: later calls keep the original cause. */
sw_status sw_fail(sw_error *err, sw_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void sw_error_clear(sw_error *err);

const char *sw_status_name(sw_status code);

#ifdef __cplusplus
}
#endif
#endif
