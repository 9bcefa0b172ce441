/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_http_none.c: the metrics endpoint in a build without libmicrohttpd: asking for it
 * (SHARC_METRICS_PORT) is refused plainly; SHARC_METRICS_FILE still works.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include "../../base/log.h"
#include "metrics.h"

sharc_status_t sharc_coll_http_start(sharc_coll_exporter_t *ex, const char *addr, int port,
                                     sharc_coll_http_t **http_p)
{
    (void)ex;
    (void)addr;
    (void)http_p;
    sharc_error("metrics: SHARC_METRICS_PORT=%d asks for HTTP, but this sharc was built "
                "without libmicrohttpd; install it and rebuild, or use SHARC_METRICS_FILE",
                port);
    return SHARC_ERR_UNSUPPORTED;
}

void sharc_coll_http_stop(sharc_coll_http_t *http)
{
    (void)http;
}
