/*
 * chpp-hca: the link's byte-stream transport over a chardev
 * (chpp-hca-link-stream.c, docs/link.md).  Main loop, BQL held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_LINK_STREAM_H
#define HW_CHPP_HCA_LINK_STREAM_H

#include "chpp-hca.h"

/* What the stream tells the link protocol (chpp-hca-link.c). */
typedef struct ChppStreamOps {
    /* A complete record, header checked: @len bytes of body at @body. */
    void (*record)(ChppHcaState *s, const struct chpp_link_rec *rec,
                   const uint8_t *body, uint32_t len);
    /* The write queue took records: frames waiting for room may follow. */
    void (*room)(ChppHcaState *s);
    /* A connection opened (@open) or closed: drop the old one's state. */
    void (*reset)(ChppHcaState *s, bool open);
    /* A new connection can take records (the HELLO). */
    void (*opened)(ChppHcaState *s);
} ChppStreamOps;

void chpp_stream_realize(ChppHcaState *s, const ChppStreamOps *ops);
void chpp_stream_unrealize(ChppHcaState *s);
/* Queue a record: @buf from offset CHPP_ETH_HDR_SIZE on (header, body). */
void chpp_stream_push(ChppHcaState *s, GByteArray *buf, bool may_wait);
/* Write what can be written now, or when the transport has room. */
void chpp_stream_flush(ChppHcaState *s);
/* Records were added: write them with the rest of this batch. */
void chpp_stream_flush_later(ChppHcaState *s);
void chpp_stream_flush_now(ChppHcaState *s, bool doorbell);
void chpp_stream_poll_end(ChppHcaState *s);
void chpp_stream_doorbell(ChppHcaState *s);
void chpp_stream_poll(ChppHcaState *s);
/*
 * Shared memory (docs/link.md, "Shared memory"): a ring for this side's
 * bytes (its size, 0: none; then queue the CHPP_LINK_SHM record and call
 * chpp_stream_shm_queued()), and the peer's record, which it came with.
 */
bool chpp_stream_shm_able(ChppHcaState *s);
uint32_t chpp_stream_shm_ring(ChppHcaState *s);
void chpp_stream_shm_queued(ChppHcaState *s);
void chpp_stream_shm_attach(ChppHcaState *s, const uint8_t *body,
                            uint32_t len);
/* Forget the records not written and the partial record read. */
void chpp_stream_drop(ChppHcaState *s);
/* This side ends the connection (the chardev disconnects). */
void chpp_stream_disconnect(ChppHcaState *s);
/* The connection is of no more use: cut it, parse nothing more of it. */
void chpp_stream_cut(ChppHcaState *s, const char *why);
/* Bytes that break the record protocol: counted, the connection cut. */
void chpp_stream_protocol_error(ChppHcaState *s, const char *why);

#endif
