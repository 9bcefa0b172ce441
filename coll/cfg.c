/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cfg.c: the collective layer's knobs: the collective timeout, the pipelines' chunks, the
 * progress thread, how long a waiter spins, SHARC_CHECK, each collective's algorithm (its
 * values are the algorithm table's, algos.c) and the tune file.
 */
#include "config.h"

#include "../base/util.h"
#include "coll.h"

#define SHARC_COLL_ALGO_KNOB(_coll, _name, _doc)                                                   \
    {                                                                                              \
        .name = _name, .dflt = "auto", .type = SHARC_CFG_ENUM,                                     \
        .offset = offsetof(sharc_coll_cfg_t, algo[_coll]), .choice = sharc_coll_algo_choice,       \
        .arg = _coll, .doc = _doc                                                                  \
    }

static const char *const sharc_coll_wait_yield_names[] = {"auto", "yes", "no"};

static const sharc_cfg_field_t sharc_coll_cfg_fields[] = {
    {.name = "TIMEOUT",
     .dflt = "10m",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_coll_cfg_t, timeout),
     .doc = "Longest wait for a collective; past it the wait fails with a timeout naming the "
            "peer it waited for, and the communicator is failed."},
    {.name = "COLL_CHUNK",
     .dflt = "1m",
     .type = SHARC_CFG_SIZE,
     .min = 64,
     .max = 1L << 30,
     .offset = offsetof(sharc_coll_cfg_t, chunk),
     .doc = "Bytes per chunk of the pipelined ring and chain algorithms: smaller starts "
            "forwarding sooner, larger costs fewer messages."},
    {.name = "STAGE_CHUNK",
     .dflt = "4m",
     .type = SHARC_CFG_SIZE,
     .min = 4096,
     .max = 1L << 30,
     .offset = offsetof(sharc_coll_cfg_t, stage_chunk),
     .doc = "CUDA buffers of collectives that cannot run on the GPU (no NCCL, or alltoall) move "
            "through page-locked host memory in chunks of this many bytes per rank: the copy of "
            "one chunk overlaps the host collective of the one before."},
    {.name = "PROGRESS_THREAD",
     .dflt = "no",
     .type = SHARC_CFG_BOOL,
     .offset = offsetof(sharc_coll_cfg_t, progress_thread),
     .doc = "Progress collectives from a thread per communicator, so that a posted collective "
            "completes while the caller computes (costs a core while collectives are in "
            "flight)."},
    {.name = "WAIT_SPIN",
     .dflt = "300us",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_coll_cfg_t, wait_spin),
     .doc = "How long a rank waiting for a collective, send or receive (in sharc_request_wait, "
            "or its progress thread) polls without sleeping once nothing moves: a message "
            "arriving within it is taken at once. Past it the rank blocks until a peer writes "
            "to it (shm) or sleeps in growing steps (other transports), using almost no CPU. "
            "The default covers a peer's copy of one 1 MiB pipeline chunk on a busy machine; "
            "longer: fewer wake-ups on the critical path, more CPU burnt per wait."},
    {.name = "WAIT_YIELD",
     .dflt = "auto",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_coll_cfg_t, wait_yield),
     .names = sharc_coll_wait_yield_names,
     .nnames = 3,
     .doc =
         "Whether a waiting rank yields its core between polls while it spins (SHARC_WAIT_SPIN): "
         "yes lets another rank or thread on the same core run (a yield gives the core away "
         "for as long as the scheduler likes when another process wants it), no keeps the "
         "core and sees a message within a fraction of a microsecond. auto: yes where the "
         "communicator's ranks on the node, doubled with a progress thread, outnumber the "
         "node's online CPUs (Open MPI's rule), else no."},
    {.name = "CHECK",
     .dflt = "no",
     .type = SHARC_CFG_BOOL,
     .offset = offsetof(sharc_coll_cfg_t, check),
     .doc = "Before each collective, compare its kind, dtype, op, count, root and sequence "
            "number across ranks (through the bootstrap: slow, for debugging); a mismatch fails "
            "every rank with a message naming the ranks instead of hanging or corrupting data."},
    SHARC_COLL_ALGO_KNOB(SHARC_COLL_ALLGATHER, "ALLGATHER_ALGO",
                         "All-gather algorithm: auto picks one by size and rank count (the "
                         "syntax line lists the others; recursive doubling needs a power-of-two "
                         "rank count)."),
    SHARC_COLL_ALGO_KNOB(SHARC_COLL_REDUCE_SCATTER, "REDUCE_SCATTER_ALGO",
                         "Reduce-scatter algorithm: auto picks one by size and rank count "
                         "(recursive halving needs a power-of-two rank count)."),
    SHARC_COLL_ALGO_KNOB(SHARC_COLL_ALLREDUCE, "ALLREDUCE_ALGO",
                         "All-reduce algorithm: auto picks one by size and rank count (recursive "
                         "doubling needs a power-of-two rank count)."),
    SHARC_COLL_ALGO_KNOB(SHARC_COLL_BROADCAST, "BROADCAST_ALGO",
                         "Broadcast algorithm: auto picks one by size (chain: pipelined, for "
                         "large messages; binomial: for small ones)."),
    SHARC_COLL_ALGO_KNOB(SHARC_COLL_ALLTOALL, "ALLTOALL_ALGO",
                         "All-to-all algorithm: auto picks one by size (direct: every exchange "
                         "posted at once; pairwise: one peer per step, a few steps in flight, in "
                         "place through a few blocks of scratch)."),
    {.name = "TUNE_FILE",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_coll_cfg_t, tune_file),
     .doc = "A per-size algorithm table written by `sharc-perf tune` (format in the README, "
            "\"Tune file\"); its rules take precedence over the built-in table, "
            "SHARC_<COLL>_ALGO over both. Empty: none. Every rank must read the same rules."},
    {.name = "FLIGHT_RECORDER",
     .dflt = "2048",
     .type = SHARC_CFG_INT,
     .min = 0,
     .max = 1 << 20,
     .offset = offsetof(sharc_coll_cfg_t, flight_recorder),
     .doc = "Collectives each communicator's flight recorder keeps (the last ones: sequence "
            "number, op, dtype, count, lane, algorithm, state, times; for a running one the "
            "peers whose data has not arrived), for the dumps of SHARC_FLIGHT_DIR and the "
            "stall verdict; 0 turns it off."},
    {.name = "FLIGHT_DIR",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_coll_cfg_t, flight_dir),
     .doc = "Directory the flight recorders are dumped to as JSON, one file per rank and "
            "communicator (sharc-flight.<comm>.r<rank>.json): when a communicator fails or "
            "times out, when the ranks agree on a stall verdict, on SIGUSR1 with "
            "SHARC_FLIGHT_SIGNAL, and on sharc_comm_dump. `sharc-perf why DIR` merges them. "
            "Empty: no dumps but sharc_comm_dump's to a directory it names."},
    {.name = "FLIGHT_SIGNAL",
     .dflt = "no",
     .type = SHARC_CFG_BOOL,
     .offset = offsetof(sharc_coll_cfg_t, flight_signal),
     .doc = "Dump every communicator's flight recorder to SHARC_FLIGHT_DIR on SIGUSR1 (a "
            "scheduler's warning before it kills a job: Slurm's --signal=USR1@60). sharc "
            "installs the handler with the first communicator; no leaves SIGUSR1 to the "
            "application."},
    {.name = "STALL_WARN",
     .dflt = "60s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_coll_cfg_t, stall_warn),
     .doc = "When a collective has waited this long, the ranks compare their flight recorders "
            "through the store and every rank logs the same verdict: which ranks have not "
            "posted it and what they last did, or which posted another collective, or whose "
            "data is not arriving. Well before SHARC_TIMEOUT, whose error then carries the "
            "verdict."},
    {.name = "SEQ_START",
     .dflt = "0",
     .type = SHARC_CFG_SIZE,
     .max = (1L << 39) - 1,
     .offset = offsetof(sharc_coll_cfg_t, seq_start),
     .doc = "For tests: the sequence number a communicator's first collective takes. The "
            "collectives' messages are tagged with it, modulo 2^39; set it a little below "
            "549755813888 to run across the wrap. Every rank must set the same."},
    {.name = "METRICS_PORT",
     .dflt = "0",
     .type = SHARC_CFG_INT,
     .min = 0,
     .max = 65535,
     .offset = offsetof(sharc_coll_cfg_t, metrics_port),
     .doc = "Serve the metrics (collectives by kind and size class: counts, bytes, time "
            "histograms; in flight, stalls, lost peers) in Prometheus' text format at "
            "http://<SHARC_METRICS_ADDR>:<this plus the local rank>/metrics, from the first "
            "communicator on. A port already taken fails that communicator's creation. 0: no "
            "endpoint. With SHARC_METRICS_FILE unset too, metrics are off and cost nothing."},
    {.name = "METRICS_ADDR",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_coll_cfg_t, metrics_addr),
     .doc = "The address the metrics endpoint (SHARC_METRICS_PORT) listens on: a numeric "
            "address or a host name. Empty: every IPv4 address of the node."},
    {.name = "METRICS_FILE",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_coll_cfg_t, metrics_file),
     .doc = "A file the metrics are written to in Prometheus' text format every "
            "SHARC_METRICS_INTERVAL and when a communicator ends, replaced whole (for "
            "node_exporter's textfile collector: name it *.prom in its directory). %r stands "
            "for the rank, %l for the local rank: each rank needs a file of its own. Empty: "
            "none."},
    {.name = "METRICS_INTERVAL",
     .dflt = "15s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_coll_cfg_t, metrics_interval),
     .doc = "How often SHARC_METRICS_FILE is rewritten (at least every 100 ms)."},
};

const sharc_cfg_table_t sharc_coll_cfg_table =
    SHARC_CFG_TABLE("collectives (coll)", sharc_coll_cfg_fields, sharc_coll_cfg_t);
