/*
 * chpp-hca: the link's socket reader thread and writer
 * (chpp-hca-link-io.c).  Every function but the thread itself runs with
 * the BQL held (main loop, or a vCPU's MMIO access).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_LINK_IO_H
#define HW_CHPP_HCA_LINK_IO_H

#include "chardev/char.h"
#include "qemu/main-loop.h"
#include "hw/chpp/chpp-wire.h"

typedef struct ChppLinkIo ChppLinkIo;

/*
 * Ring sizes (property x-link-ring-size): the default bounds memory and is
 * the largest read; the minimum holds two records of the largest frame, so
 * a record never waits for room that only its own parsing would free.
 */
#define CHPP_LINK_RING_DEFAULT  (1u << 20)
#define CHPP_LINK_RING_MIN      (16u << 10)
#define CHPP_LINK_RING_MAX      (64u << 20)

/*
 * A vCPU busy-polls the adapter (chpp_link_io_polled()) after this many
 * polls, each within the idle time of the one before; a provider that
 * polls once before it sleeps on its completion channel does not.
 */
#define CHPP_LINK_POLL_STREAK   16
#define CHPP_LINK_POLL_IDLE_US  500     /* property x-link-poll-idle-us */

/*
 * A read smaller than this (and than a quarter of the ring), with nobody
 * polling, hands the socket to the main loop (a quiet link: one wake-up
 * per message, not two); a larger one hands it back to the thread, which
 * reads while the main loop parses.
 */
#define CHPP_LINK_IO_QUIET_BYTES (16u << 10)

/*
 * Spinning before the reader sleeps (property link-spin-us, default and
 * maximum; chpp_link_io_spin()), only while the guest rang no doorbell and
 * polled nothing for CHPP_LINK_SPIN_GUEST_US (property
 * x-link-spin-guest-us, for tests).
 */
#define CHPP_LINK_SPIN_US       100
#define CHPP_LINK_SPIN_MAX_US   10000
#define CHPP_LINK_SPIN_GUEST_US 1000

/* The reader thread's settings, from the device's properties. */
typedef struct ChppLinkIoParams {
    uint32_t ring_size;         /* x-link-ring-size */
    uint32_t idle_us;           /* x-link-poll-idle-us */
    uint32_t spin_us;           /* link-spin-us */
    uint32_t spin_guest_us;     /* x-link-spin-guest-us */
} ChppLinkIoParams;

/*
 * For a connected plain socket chardev: duplicate its socket and start the
 * reader thread, which schedules @bh whenever bytes (or the end of the
 * stream) arrive.  NULL if @chr is anything else: use the chardev's path.
 * The thread reads ahead of the parser into a ring of @p->ring_size bytes
 * (a power of two, at least CHPP_LINK_RING_MIN), and waits when it is full.
 */
ChppLinkIo *chpp_link_io_start(Chardev *chr, QEMUBH *bh,
                               const ChppLinkIoParams *p);
/* Stop and join the thread, close the duplicate.  @io may be NULL. */
void chpp_link_io_stop(ChppLinkIo *io);
void chpp_link_io_drain(ChppLinkIo *io);

/* Bytes received and not yet consumed. */
uint32_t chpp_link_io_avail(ChppLinkIo *io);
/* The reader's counters, for the state property (docs/observability.md). */
typedef struct ChppLinkIoStats {
    uint32_t ring_waits;        /* the thread found the ring full */
    uint32_t pulls;             /* reads by polling vCPUs that got bytes */
    uint32_t reads;             /* the thread's */
    uint32_t loop_reads;        /* the main loop's, on a quiet link */
    uint32_t stalls;            /* bytes waited for the thread to return */
    uint32_t early;             /* it returned to polls going on */
    uint32_t away_us;           /* its time away after the last poll */
    bool shm_rx;                /* the peer's bytes come from memory */
    bool shm_tx;                /* this side's go to memory */
    uint32_t stray_fds;         /* descriptors received and closed */
    uint32_t spin_hits;         /* bytes came while the reader spun */
    uint32_t spin_misses;       /* spins that ended without bytes */
} ChppLinkIoStats;

void chpp_link_io_stats(ChppLinkIo *io, ChppLinkIoStats *st);
/*
 * Read what the socket holds now into the ring, in the caller's thread (a
 * polling vCPU, BQL held), unless the reader thread is reading: bytes read.
 */
uint32_t chpp_link_io_pull(ChppLinkIo *io);
/* Software busy-polls: CHPP_LINK_POLL_STREAK pulls, each within idle_us. */
bool chpp_link_io_polled(ChppLinkIo *io, int64_t now);
/*
 * Software stopped polling (it armed a CQ): not polled until a new streak;
 * the thread takes the socket back at once.
 */
void chpp_link_io_poll_end(ChppLinkIo *io);
/* The guest wrote a doorbell (any UAR write; BQL held): no spinning. */
void chpp_link_io_doorbell(ChppLinkIo *io);
void chpp_link_io_hold(ChppLinkIo *io, int64_t deadline);
int64_t chpp_link_io_held(ChppLinkIo *io);
/* The stream ended (peer closed or error) after the bytes available. */
bool chpp_link_io_eof(ChppLinkIo *io);
/*
 * @len bytes at @off from the oldest unconsumed byte, in place, or copied
 * into @bounce (@len bytes) if they wrap around the ring.
 */
const uint8_t *chpp_link_io_peek(ChppLinkIo *io, uint32_t off, uint32_t len,
                                 uint8_t *bounce);
/* Give @n bytes back to the reader. */
void chpp_link_io_consume(ChppLinkIo *io, uint32_t n);

/* Non-blocking write: bytes written, 0 if the socket is full, -1 on error. */
ssize_t chpp_link_io_writev(ChppLinkIo *io, const struct iovec *iov,
                            int iovcnt);
/* Call @cb once the socket is writable (NULL: no longer). */
void chpp_link_io_want_write(ChppLinkIo *io, IOHandler *cb, void *opaque);

/*
 * Shared memory (docs/link.md, "Shared memory").  The sender: make a ring
 * to offer (its size; 0 if this socket cannot pass descriptors or no ring
 * could be made), write the CHPP_LINK_SHM record with its descriptors
 * (as chpp_link_io_writev()), and once the record went whole, write
 * everything else into the ring.
 */
uint32_t chpp_link_io_shm_offer(ChppLinkIo *io);
ssize_t chpp_link_io_write_offer(ChppLinkIo *io, const struct iovec *iov,
                                 int iovcnt);
void chpp_link_io_shm_tx_start(ChppLinkIo *io);
/*
 * The receiver, parsing the peer's CHPP_LINK_SHM record: map the ring
 * whose descriptors came with it, and read from it from now on.
 */
bool chpp_link_io_shm_attach(ChppLinkIo *io, const struct chpp_link_shm *offer,
                             Error **errp);
/* The peer broke a ring (or wrote to the socket after its record). */
bool chpp_link_io_broken(ChppLinkIo *io);

#endif
