#include "device.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "selfcheck.h"

sw_device_options sw_device_default_options(void)
{
    sw_device_options o = {"auto", NULL, NULL, 0};
    return o;
}

/* The CUDA library is loaded once per process and never unloaded: CUDA's
 * runtime keeps threads and atexit handlers that must not outlive its code.
 * Every byte it allocated is returned by the backend's destroy, not dlclose.
 * Handles are kept per path: a process may hold the real library and the
 * emulated one (libsaywho_cuda_emu.so) side by side. */
#define SW_CUDA_LIBS 4
static pthread_mutex_t cuda_lib_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char path[1024];
    void *handle;
} cuda_libs[SW_CUDA_LIBS];

static void *open_cached(const char *name, const char **why)
{
    void *h = NULL;
    int i = 0;
    pthread_mutex_lock(&cuda_lib_lock);
    for (; i < SW_CUDA_LIBS && cuda_libs[i].handle; i++)
        if (strcmp(cuda_libs[i].path, name) == 0)
            break;
    if (i < SW_CUDA_LIBS && cuda_libs[i].handle) {
        h = cuda_libs[i].handle;
    } else {
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        *why = h ? NULL : dlerror();
        if (h && i < SW_CUDA_LIBS && strlen(name) < sizeof cuda_libs[i].path) {
            snprintf(cuda_libs[i].path, sizeof cuda_libs[i].path, "%s", name);
            cuda_libs[i].handle = h;
        }
    }
    pthread_mutex_unlock(&cuda_lib_lock);
    return h;
}

static sw_cuda_open_fn load_cuda_library(const char *path, sw_error *err)
{
    const char *name = path ? path : "libsaywho_cuda.so";
    const char *why = NULL;
    void *h = open_cached(name, &why);
    if (!h) {
        sw_fail(err, SW_ERR_DEVICE, "the CUDA backend library %s could not be loaded: %s", name,
                why ? why : "unknown reason");
        return NULL;
    }
    sw_cuda_open_fn fn;
    void *sym = dlsym(h, SW_CUDA_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    if (!fn)
        sw_fail(err, SW_ERR_DEVICE, "%s does not export %s: a mismatched saywho installation", name,
                SW_CUDA_ENTRY);
    return fn;
}

sw_status sw_device_parse(const char *spec, sw_device_request *kind, int *index, sw_error *err)
{
    *kind = SW_REQUEST_AUTO;
    *index = 0;
    if (!spec || strcmp(spec, "auto") == 0)
        return SW_OK;
    if (strcmp(spec, "cpu") == 0) {
        *kind = SW_REQUEST_CPU;
        return SW_OK;
    }
    if (strcmp(spec, "cuda") == 0) {
        *kind = SW_REQUEST_CUDA;
        return SW_OK;
    }
    if (strcmp(spec, "cuda-emulated") == 0) {
        *kind = SW_REQUEST_CUDA_EMULATED;
        return SW_OK;
    }
    if (strncmp(spec, "cuda:", 5) == 0) {
        /* digits only: strtol alone would take "cuda: 1" and "cuda:+1" */
        const char *digits = spec + 5;
        size_t n = strspn(digits, "0123456789");
        if (n > 0 && n <= 4 && digits[n] == '\0') {
            int i = atoi(digits);
            if (i <= SW_DEVICE_MAX_INDEX) {
                *kind = SW_REQUEST_CUDA;
                *index = i;
                return SW_OK;
            }
        }
    }
    return sw_fail(err, SW_ERR_ARG,
                   "device must be \"auto\", \"cpu\", \"cuda\", \"cuda:N\" (N from 0 to %d) or "
                   "\"cuda-emulated\", not \"%s\"",
                   SW_DEVICE_MAX_INDEX, spec ? spec : "(null)");
}

/* The self-check's verdict per library and GPU index, once per process: a
 * GPU that computed right once is trusted for the process's life. */
#define SW_CHECKED_GPUS 8
static struct {
    char library[1024];
    int index;
    sw_status status;
    char msg[SW_ERROR_MSG_LEN];
} checked[SW_CHECKED_GPUS];
static int n_checked;

/* SAYWHO_GPU_SELF_CHECK=0: for users who know their GPU better */
static int self_check_wanted(void)
{
    const char *env = getenv("SAYWHO_GPU_SELF_CHECK");
    return !(env && strcmp(env, "0") == 0);
}

static sw_status self_check_once(sw_backend *b, const char *library, int index, sw_error *err)
{
    const char *key = library ? library : "";
    pthread_mutex_lock(&cuda_lib_lock);
    for (int i = 0; i < n_checked; i++)
        if (checked[i].index == index && strcmp(checked[i].library, key) == 0) {
            sw_status st = checked[i].status;
            if (st != SW_OK)
                sw_fail(err, st, "%s", checked[i].msg);
            pthread_mutex_unlock(&cuda_lib_lock);
            return st;
        }
    /* under the lock: two threads opening the same GPU check it once */
    sw_status st = sw_backend_self_check(b, err);
    if (n_checked < SW_CHECKED_GPUS && strlen(key) < sizeof checked[0].library) {
        snprintf(checked[n_checked].library, sizeof checked[0].library, "%s", key);
        checked[n_checked].index = index;
        checked[n_checked].status = st;
        snprintf(checked[n_checked].msg, sizeof checked[0].msg, "%s", st == SW_OK ? "" : err->msg);
        n_checked++;
    }
    pthread_mutex_unlock(&cuda_lib_lock);
    return st;
}

static sw_status open_cuda(const sw_device_options *opt, int index, sw_backend **out, sw_error *err)
{
    sw_cuda_open_fn open_fn = load_cuda_library(opt->cuda_library, err);
    if (!open_fn)
        return err->code;
    sw_status st = open_fn(index, SW_BACKEND_ABI, opt->cublas_path, out, err);
    if (st == SW_OK && (*out == NULL || (*out)->abi != SW_BACKEND_ABI)) {
        if (*out)
            (*out)->destroy(*out);
        *out = NULL;
        return sw_fail(err, SW_ERR_DEVICE, "the CUDA backend library has a different ABI version");
    }
    if (st == SW_OK && self_check_wanted() &&
        self_check_once(*out, opt->cuda_library, index, err) != SW_OK) {
        (*out)->destroy(*out);
        *out = NULL;
        return err->code;
    }
    return st;
}

sw_status sw_device_open(const sw_device_options *opt, sw_backend **out, char *fallback_reason,
                         size_t reason_len, sw_error *err)
{
    sw_device_options defaults = sw_device_default_options();
    if (!opt)
        opt = &defaults;
    *out = NULL;
    if (fallback_reason && reason_len)
        fallback_reason[0] = '\0';
    sw_device_request kind;
    int index;
    if (sw_device_parse(opt->device, &kind, &index, err) != SW_OK)
        return err->code;
    /* "cuda-emulated" is the CUDA backend too: cuda_library names the emulator's build */
    int want_cuda = kind == SW_REQUEST_CUDA || kind == SW_REQUEST_CUDA_EMULATED;
    if (want_cuda || kind == SW_REQUEST_AUTO) {
        sw_error cuda_err = {SW_OK, ""};
        if (open_cuda(opt, index, out, &cuda_err) == SW_OK)
            return SW_OK;
        if (want_cuda)
            return sw_fail(err, SW_ERR_DEVICE, "device \"%s\" cannot be used: %s", opt->device,
                           cuda_err.msg);
        if (fallback_reason && reason_len)
            snprintf(fallback_reason, reason_len, "%s", cuda_err.msg);
    }
    return sw_cpu_backend_open(opt->cpu_threads, out, err);
}

sw_status sw_cuda_probe(const char *cuda_library, const char *cublas_path, sw_error *err)
{
    sw_backend *b = NULL;
    sw_device_options opt = sw_device_default_options();
    opt.cuda_library = cuda_library;
    opt.cublas_path = cublas_path;
    if (open_cuda(&opt, 0, &b, err) != SW_OK)
        return err->code;
    b->destroy(b);
    return SW_OK;
}
