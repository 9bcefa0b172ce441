/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * def_int.h: internal definitions every file may use: the hidden-visibility marker and
 * array, min/max and alignment helpers, the length of a host name in messages.
 */
#ifndef SHARC_DEF_INT_H
#define SHARC_DEF_INT_H

#define SHARC_HIDDEN           __attribute__((visibility("hidden")))
#define SHARC_ARRAY_SIZE(_a)   (sizeof(_a) / sizeof((_a)[0]))
#define SHARC_MIN(_a, _b)      ((_a) < (_b) ? (_a) : (_b))
#define SHARC_MAX(_a, _b)      ((_a) > (_b) ? (_a) : (_b))
#define SHARC_ALIGN_UP(_x, _a) (((_x) + (_a)-1) / (_a) * (_a))

/* A host name as messages name a rank's host (longer names are cut). */
#define SHARC_HOST_MAX 64

#endif
