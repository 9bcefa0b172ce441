/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parse.c: the value parsers of the knobs (integers, byte counts, times, booleans), also used
 * where the bootstrap and the tune file read numbers. Each rejects what a typo would give:
 * empty text, blanks, signs where none belong, trailing characters, overflow.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_int.h"
#include "util.h"

int sharc_cfg_parse_long(const char *s, long min, long max, long *out_p)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) {
        return -1;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) {
        return -1;
    }
    *out_p = v;
    return 0;
}

int sharc_cfg_parse_size(const char *s, size_t *out_p)
{
    static const char suffixes[] = "kmgt";
    unsigned long long v, mult = 1;
    char *end;

    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1; /* also rejects "-1", which strtoull would wrap */
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    if (*end != '\0') {
        const char *p = strchr(suffixes, tolower((unsigned char)*end));

        if (p == NULL) {
            return -1;
        }
        mult = 1ull << (10 * (p - suffixes + 1));
        end++;
        /* optional "b" or "ib": 64k, 64kb, 64KiB */
        if (strcasecmp(end, "b") == 0 || strcasecmp(end, "ib") == 0) {
            end += strlen(end);
        }
        if (*end != '\0') {
            return -1;
        }
    }
    if (v > SIZE_MAX / mult) {
        return -1;
    }
    *out_p = (size_t)(v * mult);
    return 0;
}

int sharc_cfg_parse_time(const char *s, double *out_p)
{
    char *end;
    double v, mult;

    if (s == NULL || !(isdigit((unsigned char)*s) || *s == '.')) {
        return -1; /* no sign, no "inf", no "nan", no leading blanks */
    }
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || !isfinite(v)) {
        return -1;
    }
    if (*end == '\0' || strcmp(end, "s") == 0) {
        mult = 1.0;
    } else if (strcmp(end, "ms") == 0) {
        mult = 1e-3;
    } else if (strcmp(end, "us") == 0) {
        mult = 1e-6;
    } else if (strcmp(end, "m") == 0) {
        mult = 60.0;
    } else if (strcmp(end, "h") == 0) {
        mult = 3600.0;
    } else {
        return -1;
    }
    v *= mult;
    /* A timeout of zero would fail everything at once; a year is surely a typo. */
    if (v <= 0.0 || v > 365.0 * 86400.0) {
        return -1;
    }
    *out_p = v;
    return 0;
}

int sharc_cfg_parse_bool(const char *s, int *out_p)
{
    static const char *const yes[] = {"y", "yes", "1", "on", "true"};
    static const char *const no[] = {"n", "no", "0", "off", "false"};

    if (sharc_name_index(yes, SHARC_ARRAY_SIZE(yes), s) >= 0) {
        *out_p = 1;
    } else if (sharc_name_index(no, SHARC_ARRAY_SIZE(no), s) >= 0) {
        *out_p = 0;
    } else {
        return -1;
    }
    return 0;
}
