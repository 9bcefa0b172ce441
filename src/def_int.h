/*
 * def_int.h: internal definitions every file may use: the hidden-visibility marker and
 * array/minmax helpers.
 */
#ifndef SHARC_DEF_INT_H
#define SHARC_DEF_INT_H

#define SHARC_HIDDEN         __attribute__((visibility("hidden")))
#define SHARC_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))
#define SHARC_MIN(_a, _b)    ((_a) < (_b) ? (_a) : (_b))
#define SHARC_MAX(_a, _b)    ((_a) > (_b) ? (_a) : (_b))

#endif
