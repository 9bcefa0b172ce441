/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_json_none.c: `sharc-perf check` in a build without json-c: the text output only, and
 * no expected figures from sharc-topo's JSON (--expect still gives them).
 */
#include "check_job.h"
#include "../common/perf_util.h"

int perf_check_have_json(void)
{
    return 0;
}

int perf_check_topo_expect(const char *json, perf_check_expect_t *e)
{
    (void)json;
    e->gbit = -1;
    e->nports = 0;
    perf_snprintf(e->why, sizeof(e->why), "unknown (built without json-c; use --expect)");
    return -1;
}

int perf_check_write_json(const perf_check_job_t *j, const char *path)
{
    (void)j;
    fprintf(stderr, "sharc-perf check: cannot write %s: built without json-c\n", path);
    return -1;
}
