/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/def.h: export and C++ linkage macros shared by every public header.
 * Nothing here is a function; include <sharc/sharc.h> instead of this file.
 */
#ifndef SHARC_DEF_H
#define SHARC_DEF_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define SHARC_API                 __attribute__((visibility("default")))
#define SHARC_PRINTF(_fmt, _args) __attribute__((format(printf, _fmt, _args)))
#else
#define SHARC_API
#define SHARC_PRINTF(_fmt, _args)
#endif

#ifdef __cplusplus
#define SHARC_BEGIN_DECLS extern "C" {
#define SHARC_END_DECLS   }
#else
#define SHARC_BEGIN_DECLS
#define SHARC_END_DECLS
#endif

#endif
