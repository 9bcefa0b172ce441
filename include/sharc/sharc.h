/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/sharc.h: the whole public C API of sharc. Include this one header.
 */
#ifndef SHARC_SHARC_H
#define SHARC_SHARC_H

#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/types.h>
#include <sharc/version.h>
#include <sharc/log.h>
#include <sharc/config.h>
#include <sharc/context.h>
#include <sharc/mem.h>
#include <sharc/comm.h>
#include <sharc/launch.h>
#include <sharc/coll.h>
#include <sharc/p2p.h>
#include <sharc/shard.h>

#endif
