/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * why_none.c: sharc_flight_why in a library built without json-c, which reads the dumps.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <sharc/comm.h>

#include "../../base/log.h"

sharc_status_t sharc_flight_why(const char *dir, char *buf, size_t size)
{
    (void)dir;
    (void)buf;
    (void)size;
    sharc_error("sharc_flight_why: this sharc was built without json-c, which reads the flight "
                "dumps");
    return SHARC_ERR_UNSUPPORTED;
}
