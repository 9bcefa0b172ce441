/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/status.h: status codes returned by every sharc call, and their names.
 * The rules (UCX's): an error is logged once, where it is first detected; output
 * parameters are set only on success; foreign codes are translated at the backend boundary.
 */
#ifndef SHARC_STATUS_H
#define SHARC_STATUS_H

#include <sharc/def.h>

SHARC_BEGIN_DECLS

typedef enum {
    SHARC_OK = 0,
    SHARC_INPROGRESS = 1,       /**< a nonblocking operation has not completed yet */
    SHARC_ERR_INVALID = -1,     /**< bad argument or input: the log says which */
    SHARC_ERR_NOMEM = -2,       /**< out of host or device memory */
    SHARC_ERR_UNSUPPORTED = -3, /**< not built in or not possible here: the caller may fall back */
    SHARC_ERR_IO = -4,          /**< a system call on a file or socket failed */
    SHARC_ERR_TIMEOUT = -5,     /**< a wait ran past its configured timeout */
    SHARC_ERR_BACKEND = -6,     /**< NCCL, UCX, verbs, MPI or CUDA failed: detail logged */
    SHARC_ERR_REMOTE = -7,      /**< a peer failed, went away or disagrees */
} sharc_status_t;

/**
 * Short, constant, human-readable text for a status ("invalid argument", ...).
 * Thread safe. Unknown values give "unknown status".
 */
SHARC_API const char *sharc_status_string(sharc_status_t status);

SHARC_END_DECLS

#endif
