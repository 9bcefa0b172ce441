/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_lib.c: NCCL opened at run time (dlopen), not linked: libsharc loads where NCCL is
 * absent (a CPU-only install of a build made with CUDA), and finds the NCCL already in the
 * process (torch's nvidia-nccl wheel) or the system's. Opened once, at the backend's first
 * query; where it cannot be, the backend is unavailable and CUDA buffers are staged.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <dlfcn.h>
#include <pthread.h>

#include "../../base/log.h"
#include "nccl.h"

sharc_tp_nccl_lib_t sharc_tp_nccl_lib;

static pthread_once_t sharc_tp_nccl_once = PTHREAD_ONCE_INIT;
static sharc_status_t sharc_tp_nccl_loaded = SHARC_ERR_UNSUPPORTED;

/* The loader's search first (an NCCL already loaded, LD_LIBRARY_PATH, the system's), then
 * the directory configure found NCCL in. */
static void *sharc_tp_nccl_dlopen(void)
{
    static const char *const names[] = {"libnccl.so.2", SHARC_NCCL_LIBDIR "/libnccl.so.2"};
    void *handle = NULL;

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(names) && handle == NULL; i++) {
        handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            sharc_debug("nccl: dlopen(%s): %s", names[i], dlerror());
        }
    }
    return handle;
}

static void sharc_tp_nccl_open(void)
{
    void *handle = sharc_tp_nccl_dlopen();
    const char *missing = NULL;

    if (handle == NULL) {
        sharc_info("nccl: libnccl.so.2 cannot be loaded; CUDA buffers are staged through host "
                   "memory");
        return;
    }
#define SHARC_TP_NCCL_SYM(fn)                                                                      \
    if ((sharc_tp_nccl_lib.fn = (__typeof__(fn) *)dlsym(handle, #fn)) == NULL && !missing) {       \
        missing = #fn;                                                                             \
    }
    SHARC_TP_NCCL_FNS(SHARC_TP_NCCL_SYM)
#undef SHARC_TP_NCCL_SYM
    if (missing != NULL) {
        sharc_info("nccl: the libnccl.so.2 found has no %s (NCCL 2.19 or later is needed); "
                   "CUDA buffers are staged through host memory",
                   missing);
        dlclose(handle);
        return;
    }
    sharc_tp_nccl_loaded = SHARC_OK; /* the handle stays open for the process */
}

sharc_status_t sharc_tp_nccl_load(void)
{
    pthread_once(&sharc_tp_nccl_once, sharc_tp_nccl_open);
    return sharc_tp_nccl_loaded;
}
