/*
 * chpp-hca: the link's byte-stream transport (docs/link.md): records over
 * a QEMU chardev to one peer.  Writes are batched into one sendmsg (or
 * chardev write) per main-loop iteration; reads go through the reader
 * thread (chpp-hca-link-io.c) for a plain socket, else through the
 * chardev.  Record headers are checked here: one that breaks the protocol
 * cuts the connection (a stream cannot resync).  What records mean is the
 * link protocol's (chpp-hca-link.c, through ChppStreamOps).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "chardev/char-fe.h"
#include "chpp-hca-datapath.h"
#include "chpp-hca-link-io.h"
#include "chpp-hca-link-stream.h"
#include "trace.h"

#define CHPP_LINK_REC_MAX (sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX)
/*
 * Records are collected and written in one go by a bottom half, or at once
 * when this many bytes wait: one write per batch, not per frame.
 */
#define CHPP_LINK_FLUSH_AT (256 * 1024)

/* ---- writing ------------------------------------------------------------ */

static gboolean chpp_link_writable(void *do_not_use, GIOCondition cond,
                                   void *opaque);
static void chpp_link_fd_writable(void *opaque);

/* Records written per system call at most. */
#define CHPP_LINK_IOV 64

/* Bytes taken, 0 if the transport is full, -1 if it failed. */
static ssize_t chpp_link_write(ChppLink *l)
{
    struct iovec iov[CHPP_LINK_IOV];
    GList *it = l->outq->head;
    GByteArray *rec = it->data;
    int n;

    if (!l->io) {
        return qemu_chr_fe_write(&l->chr,
                                 rec->data + CHPP_ETH_HDR_SIZE + l->out_off,
                                 rec->len - CHPP_ETH_HDR_SIZE - l->out_off);
    }
    for (n = 0; it && n < CHPP_LINK_IOV; it = it->next, n++) {
        size_t off = CHPP_ETH_HDR_SIZE + (n ? 0 : l->out_off);

        rec = it->data;
        if (rec == l->shm_offer && n) {
            break;              /* the offer goes alone, last on the socket */
        }
        iov[n].iov_base = rec->data + off;
        iov[n].iov_len = rec->len - off;
    }
    if (l->outq->head->data == l->shm_offer) {
        return l->out_off ? chpp_link_io_writev(l->io, iov, 1) :
                            chpp_link_io_write_offer(l->io, iov, 1);
    }
    return chpp_link_io_writev(l->io, iov, n);
}

/* Records left the device: forget them. */
static void chpp_link_written(ChppLink *l, size_t n)
{
    while (n) {
        GByteArray *rec = g_queue_peek_head(l->outq);
        size_t left = rec->len - CHPP_ETH_HDR_SIZE - l->out_off;

        if (n < left) {
            l->out_off += n;
            l->out_bytes -= n;
            return;
        }
        g_queue_pop_head(l->outq);
        if (rec == l->shm_offer) {
            /* The offer went whole: everything after it goes to memory. */
            l->shm_offer = NULL;
            chpp_link_io_shm_tx_start(l->io);
        }
        g_byte_array_unref(rec);
        l->out_off = 0;
        l->out_bytes -= left;
        n -= left;
    }
}

static void chpp_link_out_drop(ChppLink *l)
{
    GByteArray *rec;

    while ((rec = g_queue_pop_head(l->outq))) {
        g_byte_array_unref(rec);
    }
    l->shm_offer = NULL;
    l->out_off = 0;
    l->out_bytes = 0;
}

void chpp_stream_flush(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->io && chpp_link_io_held(l->io)) {
        /* Held ACKs go now: along with a request, or alone (too late). */
        if (!l->out_urgent) {
            l->acks_timed_out++;
            trace_chpp_hca_link_ack_timeout(l->out_bytes);
        }
        chpp_link_io_hold(l->io, 0);
    }
    while (!g_queue_is_empty(l->outq)) {
        uint64_t queued = l->out_bytes;
        ssize_t n = chpp_link_write(l);

        trace_chpp_hca_link_tx_write(n, queued);
        if (n < 0 && l->io) {
            /* The reader thread sees the socket fail and cuts the link. */
            chpp_link_out_drop(l);
        }
        if (n <= 0) {
            break;
        }
        chpp_link_written(l, n);
        /* Room in the write queue: what waited for it follows. */
        l->ops->room(s);
    }
    if (g_queue_is_empty(l->outq)) {
        l->out_urgent = false;
        return;
    }
    if (l->io && !l->fd_watch) {
        l->fd_watch = true;
        chpp_link_io_want_write(l->io, chpp_link_fd_writable, s);
    } else if (!l->io && !l->watch) {
        l->watch = qemu_chr_fe_add_watch(&l->chr, G_IO_OUT | G_IO_HUP,
                                         chpp_link_writable, s);
    }
}

static gboolean chpp_link_writable(void *do_not_use, GIOCondition cond,
                                   void *opaque)
{
    ChppHcaState *s = opaque;

    s->link.watch = 0;
    chpp_stream_flush(s);
    return G_SOURCE_REMOVE;
}

static void chpp_link_fd_writable(void *opaque)
{
    ChppHcaState *s = opaque;

    s->link.fd_watch = false;
    chpp_link_io_want_write(s->link.io, NULL, NULL);
    chpp_stream_flush(s);
}

static void chpp_link_tx_bh(void *opaque)
{
    ChppHcaState *s = opaque;

    s->link.tx_kicked = false;
    if (!s->link.fd_watch && !s->link.watch) {
        chpp_stream_flush(s);
    }
}

/*
 * Software busy-polls this adapter: hold what is queued for a while (up to
 * link-ack-hold-us).  Plain ACKs and credits (@requests false): software
 * that answers a message with one of its own (a ping-pong of RDMA WRITEs,
 * whose receiver polls memory, not its CQ) rings a doorbell meanwhile, and
 * its vCPU writes them together with the request; the peer, polling its CQ
 * for the ACK, reads both at once and never waits for a thread of its own
 * to wake up.  Requests a doorbell queued (@requests true): software that
 * polls rings more doorbells or polls next, and that poll writes them all
 * with one system call, which wakes the peer's reader once per batch, not
 * once per message.  Arming a CQ ends the polling (chpp_stream_poll_end()).
 * The polling vCPU and the reader thread send what is held past its time
 * (chpp_stream_hold_expired()).  Not in timing mode, whose clock decides
 * when frames go.
 */
static bool chpp_link_hold(ChppHcaState *s, bool requests)
{
    ChppLink *l = &s->link;
    int64_t now, deadline;

    if ((l->out_urgent && !requests) || !l->ack_hold_us || !l->io ||
        chpp_timing_active(s) || l->out_bytes >= CHPP_LINK_HOLD_REQ_BYTES) {
        return false;
    }
    now = get_clock();
    deadline = chpp_link_io_held(l->io);
    if (!deadline) {
        /*
         * ACKs wait only where software also rings doorbells (a
         * conversation): a receiver that only receives would stall its
         * senders' windows.
         */
        if (!chpp_link_io_polled(l->io, now) ||
            (!requests && now - l->doorbell_ns > l->poll_idle_us * SCALE_US)) {
            return false;
        }
        if (l->out_urgent) {
            l->requests_held++;
        } else {
            l->acks_held++;
        }
        trace_chpp_hca_link_ack_hold(l->out_bytes);
        chpp_link_io_hold(l->io, now + l->ack_hold_us * SCALE_US);
        return true;
    }
    return now < deadline && chpp_link_io_polled(l->io, now);
}

static bool chpp_link_hold_acks(ChppHcaState *s)
{
    return chpp_link_hold(s, false);
}

/* Held ACKs past their time (or nobody polls any more) go alone. */
static void chpp_stream_hold_expired(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->io && chpp_link_io_held(l->io) && !chpp_link_hold_acks(s) &&
        !l->fd_watch && !l->watch) {
        chpp_stream_flush(s);
    }
}

void chpp_stream_flush_later(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->out_bytes >= CHPP_LINK_FLUSH_AT) {
        chpp_stream_flush(s);
    } else if (chpp_link_hold_acks(s) || l->flush_coming) {
        return;
    } else if (!l->tx_kicked) {
        /* Scheduling wakes the main loop each time: once per batch. */
        l->tx_kicked = true;
        qemu_bh_schedule(l->tx_bh);
    }
}

/* This side ends the connection: what is left unread is not wanted. */
void chpp_stream_disconnect(ChppHcaState *s)
{
    /* Already closed: the chardev holds its write lock while it tells us. */
    if (s->link.closing) {
        return;
    }
    s->link.cutting = true;
    qemu_chr_fe_disconnect(&s->link.chr);
    s->link.cutting = false;
}

void chpp_stream_cut(ChppHcaState *s, const char *why)
{
    trace_chpp_hca_err_link_cut(why);
    s->link.rx_len = 0;
    s->link.gen++;
    chpp_stream_disconnect(s);
}

/* Bytes that break the record protocol: there is no way to resync. */
void chpp_stream_protocol_error(ChppHcaState *s, const char *why)
{
    chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
    trace_chpp_hca_err_link_bad(why);
    chpp_stream_cut(s, "protocol error");
}

/* A record header that breaks the protocol cuts the connection. */
static bool chpp_link_rec_ok(ChppHcaState *s, const struct chpp_link_rec *rec)
{
    if (le32_to_cpu(rec->magic) != CHPP_LINK_MAGIC ||
        le32_to_cpu(rec->len) > CHPP_WIRE_FRAME_MAX ||
        rec->vc >= chpp_num_vcs(s)) {
        chpp_stream_protocol_error(s, "bad record header");
        return false;
    }
    return true;
}

/* The chardev path (TLS, telnet, ...): records reassembled in l->rx. */
static int chpp_link_can_receive(void *opaque)
{
    ChppHcaState *s = opaque;

    /* With the reader thread, the chardev must not read the socket. */
    return s->link.io ? 0 : CHPP_LINK_REC_MAX - s->link.rx_len;
}

static void chpp_link_receive(void *opaque, const uint8_t *buf, int size)
{
    ChppHcaState *s = opaque;
    ChppLink *l = &s->link;
    uint32_t gen = l->gen;
    uint32_t off = 0;

    size = MIN(size, (int)(CHPP_LINK_REC_MAX - l->rx_len));
    memcpy(l->rx + l->rx_len, buf, size);
    l->rx_len += size;

    while (l->rx_len - off >= sizeof(struct chpp_link_rec)) {
        struct chpp_link_rec rec;
        uint32_t len;

        memcpy(&rec, l->rx + off, sizeof(rec));     /* may be unaligned */
        len = le32_to_cpu(rec.len);
        if (!chpp_link_rec_ok(s, &rec)) {
            return;
        }
        if (l->rx_len - off - sizeof(rec) < len) {
            break;              /* the rest arrives later */
        }
        off += sizeof(rec) + len;
        l->ops->record(s, &rec, l->rx + off - len, len);
        if (l->gen != gen) {
            return;             /* the connection was cut meanwhile */
        }
    }
    memmove(l->rx, l->rx + off, l->rx_len - off);
    l->rx_len -= off;
}

/*
 * The reader thread delivered bytes: parse every complete record in the
 * ring, in place (a record wrapping around the ring's end is copied).
 */
static void chpp_link_rx_parse(ChppHcaState *s, bool vcpu)
{
    ChppLink *l = &s->link;
    ChppLinkIo *io = l->io;
    uint32_t gen = l->gen;
    uint32_t avail, off = 0;
    bool eof;

    if (!io) {
        return;                 /* stale: the connection is gone */
    }
    /* The thread sets EOF after its last bytes: read it first. */
    eof = chpp_link_io_eof(io);
    avail = chpp_link_io_avail(io);
    trace_chpp_hca_link_rx_parse(avail, vcpu);
    while (avail - off >= sizeof(struct chpp_link_rec) ||
           (avail = chpp_link_io_avail(io)) - off >=
           sizeof(struct chpp_link_rec)) {
        struct chpp_link_rec rec;
        uint32_t len;

        memcpy(&rec, chpp_link_io_peek(io, off, sizeof(rec), l->rx),
               sizeof(rec));
        if (!chpp_link_rec_ok(s, &rec)) {
            return;
        }
        len = le32_to_cpu(rec.len);
        if (avail - off - sizeof(rec) < len) {
            break;              /* the rest arrives later */
        }
        l->ops->record(s, &rec, chpp_link_io_peek(io, off + sizeof(rec),
                                                    len, l->rx), len);
        if (l->gen != gen) {
            return;             /* the connection was cut meanwhile */
        }
        off += sizeof(rec) + len;
    }
    chpp_link_io_consume(io, off);
    if (eof && !l->closing && chpp_link_io_broken(io)) {
        chpp_stream_protocol_error(s, "the peer broke a shared ring");
    } else if (eof && !l->closing) {
        trace_chpp_hca_link_event("end of stream");
        chpp_stream_disconnect(s);
    }
}

static void chpp_link_rx_bh(void *opaque)
{
    ChppHcaState *s = opaque;
    bool direct;

    /* The engine serves what the parse queued in this run (no wake-ups). */
    direct = chpp_upcalls.rx_begin(s);
    chpp_link_rx_parse(s, false);
    if (direct) {
        chpp_upcalls.rx_end(s);
    }
    chpp_stream_hold_expired(s);
}

/*
 * The doorbell and poll paths (chpp-hca-engine.c) run in a vCPU thread:
 * write what they queued at once, and read and parse what the socket
 * holds, instead of waiting for the reader thread and the main loop's
 * bottom halves.
 */
void chpp_stream_flush_now(ChppHcaState *s, bool doorbell)
{
    ChppLink *l = &s->link;

    if (doorbell) {
        l->doorbell_ns = get_clock();
    }
    /* Held ACKs go along with the vCPU's requests, or on their own. */
    if (!g_queue_is_empty(l->outq) && !l->fd_watch && !l->watch &&
        !chpp_link_hold(s, doorbell)) {
        chpp_stream_flush(s);
    }
}

/* Any doorbell, whoever runs the engine for it (timing mode: its timer). */
void chpp_stream_doorbell(ChppHcaState *s)
{
    if (s->link.io) {
        chpp_link_io_doorbell(s->link.io);
    }
}

/* Software arms a CQ to sleep: it polls no more, what is held goes now. */
void chpp_stream_poll_end(ChppHcaState *s)
{
    if (s->link.io) {
        chpp_link_io_poll_end(s->link.io);
        chpp_stream_flush_now(s, false);
    }
}

void chpp_stream_poll(ChppHcaState *s)
{
    ChppLinkIo *io = s->link.io;

    if (!io) {
        return;
    }
    /* What the socket holds now: the reader thread may not run for a while. */
    chpp_link_io_pull(io);
    if (chpp_link_io_avail(io) >= sizeof(struct chpp_link_rec)) {
        chpp_link_rx_parse(s, true);
    }
}

/* A record the ring cannot hold whole would wait for room forever. */
QEMU_BUILD_BUG_ON(CHPP_LINK_RING_MIN <
                  2 * (sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX));

static void chpp_link_last_words_run(void *opaque)
{
    chpp_link_rx_parse(opaque, false);
}

/*
 * The peer hung up (not this side, chpp_stream_disconnect()): parse what it
 * sent before (its HELLO, its REFUSE), which the reader thread's bottom
 * half may not have reached yet.  Nothing may disconnect the chardev
 * meanwhile (it tells us holding its write lock); answers written go to the
 * closed socket and fail.
 */
static void chpp_link_last_words(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (!l->io || l->cutting) {
        return;
    }
    chpp_link_io_drain(l->io);
    l->closing = true;
    chpp_timer_call(s, chpp_link_last_words_run, s);
    l->closing = false;
}

/* The connection changed: the reader thread of the old one goes. */
static void chpp_link_io_detach(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    chpp_link_io_stop(l->io);
    l->io = NULL;
    l->fd_watch = false;
    l->gen++;
}

static void chpp_link_event(void *opaque, QEMUChrEvent event)
{
    ChppHcaState *s = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        chpp_link_io_detach(s);
        s->link.ops->reset(s, true);
        if (s->link.use_thread) {
            ChppLinkIoParams p = {
                .ring_size = s->link.ring_size,
                .idle_us = s->link.poll_idle_us,
                .spin_us = s->link.spin_us,
                .spin_guest_us = s->link.spin_guest_us,
            };

            s->link.io = chpp_link_io_start(
                qemu_chr_fe_get_driver(&s->link.chr), s->link.rx_bh, &p);
        }
        trace_chpp_hca_link_event(s->link.io ? "opened, reader thread" :
                                  "opened, chardev reads");
        s->link.ops->opened(s);
        break;
    case CHR_EVENT_CLOSED:
        trace_chpp_hca_link_event("closed");
        chpp_link_last_words(s);
        chpp_link_io_detach(s);
        s->link.ops->reset(s, false);
        break;
    default:
        break;
    }
}


/* ---- shared memory (docs/link.md, "Shared memory") ------------------ */

/* Can this side take the peer's ring (CHPP_LINK_CAP_SHM)? */
bool chpp_stream_shm_able(ChppHcaState *s)
{
    return s->link.use_shm && s->link.io;
}

uint32_t chpp_stream_shm_ring(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (!chpp_stream_shm_able(s) || l->shm_offer) {
        return 0;
    }
    return chpp_link_io_shm_offer(l->io);
}

void chpp_stream_shm_queued(ChppHcaState *s)
{
    s->link.shm_offer = g_queue_peek_tail(s->link.outq);
}

void chpp_stream_shm_attach(ChppHcaState *s, const uint8_t *body,
                            uint32_t len)
{
    struct chpp_link_shm offer = {};
    Error *err = NULL;

    if (!chpp_stream_shm_able(s)) {
        chpp_stream_protocol_error(s, "a shared ring not asked for");
        return;
    }
    memcpy(&offer, body, MIN(len, sizeof(offer)));
    if (len < sizeof(offer)) {
        error_setg(&err, "a short record");
    } else if (chpp_link_io_shm_attach(s->link.io, &offer, &err)) {
        return;
    }
    trace_chpp_hca_link_shm("refused:", error_get_pretty(err));
    error_free(err);
    chpp_stream_protocol_error(s, "a bad shared ring");
}

void chpp_stream_push(ChppHcaState *s, GByteArray *buf, bool may_wait)
{
    s->link.out_urgent |= !may_wait;
    g_queue_push_tail(s->link.outq, buf);
    s->link.out_bytes += buf->len - CHPP_ETH_HDR_SIZE;
}

void chpp_stream_drop(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    chpp_link_out_drop(l);
    l->out_urgent = false;
    if (l->io) {
        chpp_link_io_hold(l->io, 0);
    }
    if (l->watch) {
        g_source_remove(l->watch);
        l->watch = 0;
    }
    l->rx_len = 0;
}

/* ---- lifecycle ---------------------------------------------------------- */

void chpp_stream_realize(ChppHcaState *s, const ChppStreamOps *ops)
{
    ChppLink *l = &s->link;

    l->ops = ops;
    l->outq = g_queue_new();
    l->rx = g_malloc(CHPP_LINK_REC_MAX);
    l->rx_bh = qemu_bh_new_guarded(chpp_link_rx_bh, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    l->tx_bh = qemu_bh_new_guarded(chpp_link_tx_bh, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    if (qemu_chr_fe_backend_connected(&l->chr)) {
        qemu_chr_fe_set_handlers(&l->chr, chpp_link_can_receive,
                                 chpp_link_receive, chpp_link_event, NULL, s,
                                 NULL, true);
    }
}

void chpp_stream_unrealize(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    qemu_chr_fe_deinit(&l->chr, false);
    chpp_link_io_detach(s);
    chpp_stream_drop(s);
    g_queue_free(l->outq);
    g_free(l->rx);
    qemu_bh_delete(l->rx_bh);
    qemu_bh_delete(l->tx_bh);
}
