/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_proto.h: the wire format of sharc's bootstrap store (a small key-value server run by
 * rank 0, like torch's TCPStore, with a server-side gather so an allgather costs each rank
 * two messages). Every message is a 20-byte header in network byte order, then the key, then
 * the value. Requests and replies share the header; a reply carries the request's kind.
 */
#ifndef SHARC_STORE_PROTO_H
#define SHARC_STORE_PROTO_H

#include <stdint.h>

#define SHARC_STORE_MAGIC    0x53485354u /* "SHST" */
#define SHARC_STORE_VERSION  2u
#define SHARC_STORE_MAX_KEY  1024u
#define SHARC_STORE_HDR_SIZE 20u

typedef enum {
    /*
     * First message of a connection. key: the job token's digest (16 hex digits).
     * value: u32 version, i32 rank, i32 size, then the communicator's namespace.
     * Reply: status only. A wrong token, a rank out of range, a size that differs from the
     * namespace's, or a rank already connected are refused and the connection closed.
     */
    SHARC_STORE_MSG_HELLO = 1,
    /* Store value under key, replacing any old one. No reply (a failure closes the link). */
    SHARC_STORE_MSG_SET = 2,
    /*
     * Wait until keys "<key>/0" .. "<key>/<n-1>" all exist, then reply with n entries of
     * (u32 length, bytes). value: u32 n, u32 readers, u32 timeout_ms. After `readers` replies
     * the keys are deleted. On timeout the reply has status TIMEOUT and lists the missing
     * indices as u32s. If a rank of the requester's communicator lost its connection without
     * BYE (it died) or was reported gone, pending and later gathers of that communicator fail
     * with PEER_LOST. A fourth u32 of flags may follow: SHARC_STORE_GATHER_PARTIAL answers a
     * timeout with status PARTIAL and every entry, those missing with length 0.
     */
    SHARC_STORE_MSG_GATHER = 3,
    /* Leaving: the server stops counting this connection as a live rank. No reply. */
    SHARC_STORE_MSG_BYE = 4,
    /*
     * From the server, unasked, to every live connection of a communicator when one of its
     * ranks is lost: status PEER_LOST, value u32 lost rank, u32 the rank that reported it
     * (the lost rank itself when its connection closed without BYE). At most once per
     * communicator; it may arrive between any two replies.
     */
    SHARC_STORE_MSG_NOTICE = 5,
    /*
     * A rank tells the store that a peer of its communicator is gone (its transport saw it
     * fail): value u32 that rank. No reply; the store sends NOTICE to every rank.
     */
    SHARC_STORE_MSG_REPORT = 6,
    /*
     * A rank's heartbeat: value u32 its interval, u32 the silence after which it may be
     * declared gone, both in ms. The server answers HEARTBEAT (no value) at once; from a
     * connection's first heartbeat on, a silence that long declares its rank gone, as if its
     * connection had closed without BYE (its communicator is told: NOTICE).
     */
    SHARC_STORE_MSG_HEARTBEAT = 7,
    /*
     * A rank's collective has waited past SHARC_STALL_WARN: value u64 its ordinal. The server
     * starts a verdict round for the communicator, unless one for that ordinal began in the
     * last SHARC_STORE_ROUND_HOLD_S seconds. No reply.
     */
    SHARC_STORE_MSG_STALL = 8,
    /*
     * From the server, unasked, to every live rank of a communicator: a verdict round.
     * value: u32 the round, u64 the ordinal that stalled. Each rank sets its head under
     * "<namespace>/v<round>/<rank>" and gathers the others' (a partial GATHER).
     */
    SHARC_STORE_MSG_VERDICT = 9,
} sharc_store_kind_t;

/* GATHER's flags (its fourth u32). */
#define SHARC_STORE_GATHER_PARTIAL 1u

/* How long after a verdict round a STALL of the same ordinal starts no new one. */
#define SHARC_STORE_ROUND_HOLD_S 30.0

/* Reply statuses (i16 in the header). */
enum {
    SHARC_STORE_ST_OK = 0,
    SHARC_STORE_ST_TIMEOUT = 1,
    SHARC_STORE_ST_BAD_TOKEN = 2,
    SHARC_STORE_ST_BAD_RANK = 3,
    SHARC_STORE_ST_DUP_RANK = 4,
    SHARC_STORE_ST_BAD_SIZE = 5,
    SHARC_STORE_ST_BAD_VERSION = 6,
    SHARC_STORE_ST_CLOSING = 7, /* the server is shutting down: try again (a new one comes) */
    /* a rank of the communicator died or was reported gone; value: its rank and who reported
     * it (u32 each; the same rank when its connection closed) */
    SHARC_STORE_ST_PEER_LOST = 8,
    SHARC_STORE_ST_TOO_BIG = 9,  /* the gathered values exceed what one reply can carry */
    SHARC_STORE_ST_PARTIAL = 10, /* a partial gather's timeout: every entry, missing ones empty */
};

typedef struct {
    uint32_t magic;
    uint8_t kind;
    uint8_t pad;
    int16_t status;
    uint32_t key_len;
    uint32_t val_len;
    uint32_t pad2;
} sharc_store_hdr_t;

#endif
