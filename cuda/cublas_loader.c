#include "cublas_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Newest first: a process that can load either should get the one that
 * matches a current driver best; the driver runs both. */
static const char *const versions[] = {"13", "12"};
static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12"};
#define N_VERSIONS (sizeof versions / sizeof versions[0])

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static sw_cublas_api api;
static int loaded;

/* What each search step saw, so a failure tells the user where to look. */
typedef struct trail {
    char text[300];
    size_t len;
} trail;

static void note(trail *t, const char *fmt, const char *a, const char *b)
{
    if (t->len >= sizeof t->text - 1)
        return;
    int n = snprintf(t->text + t->len, sizeof t->text - t->len, fmt, a, b ? b : "");
    if (n > 0)
        t->len += (size_t)n < sizeof t->text - t->len ? (size_t)n : sizeof t->text - 1 - t->len;
}

static const char *last_dlerror(void)
{
    const char *e = dlerror();
    return e ? e : "unknown dlopen error";
}

#define LOAD_SYM(field, name)                                                                      \
    do {                                                                                           \
        void *p_ = dlsym(lib, name);                                                               \
        if (!p_) {                                                                                 \
            note(t, "%s lacks %s; ", where, name);                                                 \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&out->field, &p_, sizeof p_); /* POSIX: data and code pointers agree */             \
    } while (0)

/* Fills the table from an open libcublas; -1 if it is too old or not cuBLAS. */
static int bind(void *lib, const char *where, sw_cublas_api *out, trail *t)
{
    LOAD_SYM(create, "cublasCreate_v2");
    LOAD_SYM(destroy, "cublasDestroy_v2");
    LOAD_SYM(set_stream, "cublasSetStream_v2");
    LOAD_SYM(sgemm, "cublasSgemm_v2");
    LOAD_SYM(gemm_ex, "cublasGemmEx");
    void *v = dlsym(lib, "cublasGetVersion_v2");
    memcpy(&out->get_version, &v, sizeof v);

    /* Record the file really used: dladdr names it even for a bare soname. */
    Dl_info info;
    const char *file = where;
    void *probe;
    memcpy(&probe, &out->sgemm, sizeof probe);
    if (dladdr(probe, &info) && info.dli_fname)
        file = info.dli_fname;
    snprintf(out->path, sizeof out->path, "%s", file);
    return 0;
}

/* (a) A copy torch (or anyone) already loaded: using it avoids a second
 * cuBLAS in the process and any version clash with it. */
static void *find_loaded(trail *t, const char **where)
{
    for (size_t i = 0; i < N_VERSIONS; i++) {
        const char *name = sonames[i];
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (lib) {
            *where = name;
            return lib;
        }
    }
    note(t, "no cuBLAS already loaded in the process; %s%s", "", NULL);
    return NULL;
}

/* libcublas needs libcublasLt of the same release, and pip's wheels place the
 * two side by side without always giving the loader a way to find it: loading
 * the Lt from that folder first, globally, settles which one it binds to. */
static void *open_pair(const char *dir, const char *ver, trail *t)
{
    char lt[1024], blas[1024];
    snprintf(blas, sizeof blas, "%s/libcublas.so.%s", dir, ver);
    if (access(blas, F_OK) != 0)
        return NULL;
    snprintf(lt, sizeof lt, "%s/libcublasLt.so.%s", dir, ver);
    void *lt_lib = dlopen(lt, RTLD_NOW | RTLD_GLOBAL);
    if (!lt_lib) {
        note(t, "%s: %s; ", lt, last_dlerror());
        return NULL;
    }
    void *lib = dlopen(blas, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        note(t, "%s: %s; ", blas, last_dlerror());
        dlclose(lt_lib);
        return NULL;
    }
    /* lt_lib stays open on purpose: lib depends on it for as long as it lives. */
    return lib;
}

/* (b) The folders the caller gives: the Python layer passes the
 * site-packages/nvidia/... folders where torch's pip packages put cuBLAS
 * (and SAYWHO_CUBLAS_PATH's, which it reads). */
static void *find_in_path(const char *search_path, trail *t, char *where, size_t where_len)
{
    if (!search_path || !*search_path) {
        note(t, "no cuBLAS folders given; %s%s", "", NULL);
        return NULL;
    }
    char *copy = strdup(search_path);
    if (!copy)
        return NULL;
    void *lib = NULL;
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !lib; dir = strtok_r(NULL, ":", &save)) {
        if (!*dir)
            continue;
        for (size_t i = 0; i < N_VERSIONS && !lib; i++) {
            lib = open_pair(dir, versions[i], t);
            if (lib)
                snprintf(where, where_len, "%s/libcublas.so.%s", dir, versions[i]);
        }
    }
    if (!lib)
        note(t, "folders %s: no usable libcublas.so.13/.12; %s", search_path, NULL);
    free(copy);
    return lib;
}

/* (c) The system's loader path: LD_LIBRARY_PATH, ldconfig, a CUDA toolkit. */
static void *find_system(trail *t, const char **where)
{
    for (size_t i = 0; i < N_VERSIONS; i++) {
        const char *name = sonames[i];
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *where = name;
            return lib;
        }
        note(t, "system %s: %s; ", name, last_dlerror());
    }
    return NULL;
}

static int try_bind(void *lib, const char *where, trail *t)
{
    if (!lib)
        return -1;
    sw_cublas_api candidate;
    memset(&candidate, 0, sizeof candidate);
    if (bind(lib, where, &candidate, t) != 0) {
        dlclose(lib);
        return -1;
    }
    api = candidate;
    return 0;
}

const sw_cublas_api *sw_cublas_load(const char *search_path, sw_error *err)
{
    pthread_mutex_lock(&load_lock);
    if (!loaded) {
        trail t = {{0}, 0};
        const char *where = NULL;
        char path_where[1100];
        if (try_bind(find_loaded(&t, &where), where, &t) == 0 ||
            try_bind(find_in_path(search_path, &t, path_where, sizeof path_where), path_where,
                     &t) == 0 ||
            try_bind(find_system(&t, &where), where, &t) == 0)
            loaded = 1;
        else
            sw_fail(err, SW_ERR_DEVICE,
                    "cuBLAS (libcublas.so.13 or .so.12) was not found; install a CUDA "
                    "build of torch, which brings it, or set SAYWHO_CUBLAS_PATH to the "
                    "folder holding libcublas.so.* and libcublasLt.so.*. Searched: %s",
                    t.text);
    }
    pthread_mutex_unlock(&load_lock);
    return loaded ? &api : NULL;
}
