/*
 * chpp-hca: the link to a peer adapter over a QEMU chardev (docs/link.md).
 *
 * The byte stream carries records: HELLO (version, node id, credits),
 * FRAME (one wire frame), CREDIT (frames the receiver consumed) and REFUSE.
 * Each virtual channel has its own credits, so GET requests waiting for
 * credits never hold up the responses that would free them.  The peer is
 * untrusted: a record that breaks the protocol cuts the connection, a bad
 * frame inside a valid record is dropped and counted by the decoder.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qom/object.h"
#include "chardev/char-fe.h"
#include "chpp-hca-datapath.h"
#include "chpp-hca-link-io.h"
#include "trace.h"

#define CHPP_LINK_REC_MAX (sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX)
/*
 * Records are collected and written in one go by a bottom half, or at once
 * when this many bytes wait: one write per batch, not per frame.
 */
#define CHPP_LINK_FLUSH_AT (256 * 1024)

typedef struct ChppDelayed {
    int64_t when;
    uint8_t vc;
    GByteArray *frame;
} ChppDelayed;

/* The PF owns the link; its VFs use it. */
bool chpp_link_attached(ChppHcaState *s)
{
    return qemu_chr_fe_backend_connected(&chpp_pf(s)->link.chr);
}

uint32_t chpp_link_status(ChppHcaState *s)
{
    ChppLink *l = &chpp_pf(s)->link;

    if (!chpp_link_attached(s)) {
        return 0;
    }
    return CHPP_LINK_ATTACHED | (l->up ? CHPP_LINK_UP : 0) |
           (l->up ? (uint32_t)l->peer_node << CHPP_LINK_PEER_SHIFT : 0);
}

/* ---- writing ------------------------------------------------------------ */

static gboolean chpp_link_writable(void *do_not_use, GIOCondition cond,
                                   void *opaque);
static void chpp_link_fd_writable(void *opaque);
static void chpp_link_move(ChppHcaState *s);

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
        return qemu_chr_fe_write(&l->chr, rec->data + l->out_off,
                                 rec->len - l->out_off);
    }
    for (n = 0; it && n < CHPP_LINK_IOV; it = it->next, n++) {
        rec = it->data;
        iov[n].iov_base = rec->data + (n ? 0 : l->out_off);
        iov[n].iov_len = rec->len - (n ? 0 : l->out_off);
    }
    return chpp_link_io_writev(l->io, iov, n);
}

/* Records left the device: forget them. */
static void chpp_link_written(ChppLink *l, size_t n)
{
    while (n) {
        GByteArray *rec = g_queue_peek_head(l->outq);
        size_t left = rec->len - l->out_off;

        if (n < left) {
            l->out_off += n;
            l->out_bytes -= n;
            return;
        }
        g_queue_pop_head(l->outq);
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
    l->out_off = 0;
    l->out_bytes = 0;
}

static void chpp_link_flush(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    while (!g_queue_is_empty(l->outq)) {
        ssize_t n = chpp_link_write(l);

        if (n < 0 && l->io) {
            /* The reader thread sees the socket fail and cuts the link. */
            chpp_link_out_drop(l);
        }
        if (n <= 0) {
            break;
        }
        chpp_link_written(l, n);
        /* Room in the write queue: what waited for it follows. */
        chpp_link_move(s);
    }
    if (g_queue_is_empty(l->outq)) {
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
    chpp_link_flush(s);
    return G_SOURCE_REMOVE;
}

static void chpp_link_fd_writable(void *opaque)
{
    ChppHcaState *s = opaque;

    s->link.fd_watch = false;
    chpp_link_io_want_write(s->link.io, NULL, NULL);
    chpp_link_flush(s);
}

static void chpp_link_tx_bh(void *opaque)
{
    ChppHcaState *s = opaque;

    s->link.tx_kicked = false;
    if (!s->link.fd_watch && !s->link.watch) {
        chpp_link_flush(s);
    }
}

/* Records were added: write them with the rest of this batch. */
static void chpp_link_flush_later(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->out_bytes >= CHPP_LINK_FLUSH_AT) {
        chpp_link_flush(s);
    } else if (!l->tx_kicked) {
        /* Scheduling wakes the main loop each time: once per batch. */
        l->tx_kicked = true;
        qemu_bh_schedule(l->tx_bh);
    }
}

void chpp_link_flush_now(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->tx_kicked && !l->fd_watch && !l->watch) {
        chpp_link_flush(s);
    }
}

/* Queue a record: @buf holds its header's room, then @len bytes of body. */
static void chpp_link_out(ChppHcaState *s, uint8_t type, uint8_t vc,
                          GByteArray *buf)
{
    ChppLink *l = &s->link;
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC),
        .type = type,
        .vc = vc,
        .len = cpu_to_le32(buf->len - sizeof(rec)),
    };

    memcpy(buf->data, &rec, sizeof(rec));
    g_queue_push_tail(l->outq, buf);
    l->out_bytes += buf->len;
}

static void chpp_link_put(ChppHcaState *s, uint8_t type, uint8_t vc,
                          const void *data, uint32_t len)
{
    GByteArray *buf = g_byte_array_sized_new(CHPP_LINK_HEADROOM + len);

    g_byte_array_set_size(buf, CHPP_LINK_HEADROOM);
    g_byte_array_append(buf, data, len);
    chpp_link_out(s, type, vc, buf);
}

/* Frames waiting to be sent: the backlog, and those fault-delayed. */
static uint32_t chpp_link_waiting(ChppLink *l)
{
    return g_queue_get_length(l->backlog[0]) +
           g_queue_get_length(l->backlog[1]) + g_queue_get_length(l->delayed);
}

bool chpp_link_rx_ready(ChppHcaState *s)
{
    return !chpp_pf(s)->link.rx_paused;
}

/* The backlog went down by half: functions take the peer's frames again. */
static void chpp_link_rx_resume(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    unsigned fn;

    if (!l->rx_paused || chpp_link_waiting(l) > CHPP_LINK_BACKLOG_MAX / 2) {
        return;
    }
    l->rx_paused = false;
    trace_chpp_hca_link_rx_pause(false, chpp_link_waiting(l));
    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(s, fn);

        if (f && (!g_queue_is_empty(f->link_rx[0]) ||
                  !g_queue_is_empty(f->link_rx[1]))) {
            chpp_engine_kick(f);
        }
    }
}

/* Return the credits owed, unless the write queue has no room for it. */
static void chpp_link_give_credits(ChppHcaState *s, uint8_t vc)
{
    ChppLink *l = &s->link;
    struct chpp_link_credit c = { .count = cpu_to_le32(l->owed[vc]) };

    /* In batches, to keep CREDIT records rare. */
    if (l->owed[vc] < CHPP_LINK_CREDITS / 4 ||
        l->out_bytes >= CHPP_LINK_OUTQ_MAX) {
        return;
    }
    l->owed[vc] = 0;
    chpp_link_put(s, CHPP_LINK_CREDIT, vc, &c, sizeof(c));
}

/*
 * Move frames whose channel has credits from the backlog to the write
 * queue, while it holds less than CHPP_LINK_OUTQ_MAX: a peer that does not
 * read leaves them in the backlog, where they count against the senders'
 * bound.  Frames carry room for their record header: they are written as
 * they are.
 */
static void chpp_link_move(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *frame;

        chpp_link_give_credits(s, vc);
        while (l->credits[vc] && !g_queue_is_empty(l->backlog[vc])) {
            if (l->out_bytes >= CHPP_LINK_OUTQ_MAX) {
                if (!l->outq_full) {
                    l->outq_full = true;
                    chpp_count(s, CHPP_CNT_LINK_OUTQ_FULL);
                    trace_chpp_hca_link_outq_full(l->out_bytes);
                }
                break;
            }
            frame = g_queue_pop_head(l->backlog[vc]);
            chpp_tx_dequeued(s);
            l->credits[vc]--;
            chpp_link_out(s, CHPP_LINK_FRAME, vc, frame);
            chpp_count(s, CHPP_CNT_LINK_TX_FRAMES);
        }
    }
    if (l->out_bytes < CHPP_LINK_OUTQ_MAX) {
        l->outq_full = false;
    }
    chpp_link_rx_resume(s);
}

static void chpp_link_pump(ChppHcaState *s)
{
    chpp_link_move(s);
    chpp_link_flush_later(s);
}

/*
 * Requests wait for room below CHPP_TX_QUEUE_MAX frames (chpp_tx_room),
 * but answers (ACK, NAK, atomic ACK) are sent for every request received:
 * a peer that grants no credits and repeats requests would grow the
 * backlog without end.  At CHPP_LINK_BACKLOG_MAX frames waiting, functions
 * stop taking the peer's frames, which then wait within the grant.
 */
static void chpp_link_queue(ChppHcaState *s, uint8_t vc, GByteArray *frame)
{
    ChppLink *l = &s->link;

    g_queue_push_tail(l->backlog[vc], frame);
    s->tx_queued++;
    if (!l->rx_paused && chpp_link_waiting(l) >= CHPP_LINK_BACKLOG_MAX) {
        l->rx_paused = true;
        chpp_count(s, CHPP_CNT_LINK_RX_PAUSES);
        trace_chpp_hca_link_rx_pause(true, chpp_link_waiting(l));
    }
    chpp_link_pump(s);
}

/* ---- fault injection ------------------------------------------------- */

static uint32_t chpp_link_rand(ChppLink *l)
{
    /* xorshift64*: reproducible from fault-seed */
    l->rand_state ^= l->rand_state >> 12;
    l->rand_state ^= l->rand_state << 25;
    l->rand_state ^= l->rand_state >> 27;
    return (l->rand_state * 0x2545f4914f6cdd1dull) >> 32;
}

/* Flip a bit of the PSN: the receiver sees a sequence gap. */
static void chpp_link_corrupt(GByteArray *frame)
{
    uint8_t *psn = frame->data + CHPP_LINK_HEADROOM + CHPP_WIRE_HDR_SIZE +
                   offsetof(struct chpp_wire_ext, psn);

    stl_le_p(psn, ldl_le_p(psn) ^ 0x400000);
}

static void chpp_link_delay_cb(void *opaque)
{
    ChppHcaState *s = opaque;
    ChppLink *l = &s->link;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    ChppDelayed *d;

    while ((d = g_queue_peek_head(l->delayed)) && d->when <= now) {
        g_queue_pop_head(l->delayed);
        if (l->up) {
            chpp_link_queue(s, d->vc, d->frame);
        } else {
            g_byte_array_unref(d->frame);
        }
        g_free(d);
    }
    if (d) {
        timer_mod(l->delay_timer, d->when);
    }
}

/* Returns true if the fault injector consumed the frame. */
static bool chpp_link_fault(ChppHcaState *s, uint8_t vc, GByteArray *frame)
{
    ChppLink *l = &s->link;
    bool drop = false;

    l->frame_seq++;
    if (l->drop_next) {
        l->drop_next--;
        drop = true;
    } else if (l->drop_every && l->frame_seq % l->drop_every == 0) {
        drop = true;
    } else if (l->drop_percent && chpp_link_rand(l) % 100 < l->drop_percent) {
        drop = true;
    }
    if (drop) {
        chpp_count(s, CHPP_CNT_FAULT_DROPS);
        trace_chpp_hca_link_fault("drop", l->frame_seq);
        g_byte_array_unref(frame);
        return true;
    }
    if (l->corrupt_next) {
        l->corrupt_next--;
        chpp_count(s, CHPP_CNT_FAULT_CORRUPTS);
        trace_chpp_hca_link_fault("corrupt", l->frame_seq);
        chpp_link_corrupt(frame);
    }
    if (l->dup_next) {
        l->dup_next--;
        chpp_count(s, CHPP_CNT_FAULT_DUPS);
        trace_chpp_hca_link_fault("duplicate", l->frame_seq);
        chpp_link_queue(s, vc, g_byte_array_ref(frame));
    }
    if (l->delay_ns) {
        ChppDelayed *d = g_new(ChppDelayed, 1);

        d->when = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + l->delay_ns;
        d->vc = vc;
        d->frame = frame;
        chpp_count(s, CHPP_CNT_FAULT_DELAYS);
        g_queue_push_tail(l->delayed, d);
        if (!timer_pending(l->delay_timer)) {
            timer_mod(l->delay_timer, d->when);
        }
        return true;
    }
    return false;
}

bool chpp_link_send(ChppHcaState *s, uint16_t node, uint8_t vc,
                    GByteArray *frame)
{
    ChppLink *l = &s->link;

    if (!chpp_link_attached(s)) {
        g_byte_array_unref(frame);
        return false;
    }
    /* A missing or unreachable peer loses the frame; RC retries notice. */
    if (!l->up || node != l->peer_node) {
        chpp_count(s, CHPP_CNT_LINK_DOWN_DROPS);
        trace_chpp_hca_err_link_drop(node, l->up);
        g_byte_array_unref(frame);
        return true;
    }
    if (!chpp_link_fault(s, vc, frame)) {
        chpp_link_queue(s, vc, frame);
    }
    return true;
}

/* ---- reading ------------------------------------------------------------ */

static void chpp_link_send_hello(ChppHcaState *s)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR),
        .node_id = cpu_to_le16(s->params.node_id),
        .caps = cpu_to_le32(CHPP_LINK_CAP_GET_VC),
        .credits = { cpu_to_le32(CHPP_LINK_CREDITS),
                     cpu_to_le32(CHPP_LINK_CREDITS) },
    };

    chpp_link_put(s, CHPP_LINK_HELLO, 0, &h, sizeof(h));
    chpp_link_flush(s);
}

/* The connection is of no more use: cut it, parse nothing more of it. */
static void chpp_link_cut_now(ChppHcaState *s, const char *why)
{
    trace_chpp_hca_err_link_cut(why);
    s->link.rx_len = 0;
    s->link.gen++;
    qemu_chr_fe_disconnect(&s->link.chr);
}

/* Bytes that break the record protocol: there is no way to resync. */
static void chpp_link_protocol_error(ChppHcaState *s, const char *why)
{
    chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
    trace_chpp_hca_err_link_bad(why);
    chpp_link_cut_now(s, "protocol error");
}

/*
 * A refused handshake is logged, but a peer reconnecting to refuse (or to
 * be refused) again and again must not flood the log: the first
 * CHPP_LINK_REFUSE_LOG_FIRST are logged, then the 8th, 16th, 32nd...
 */
static bool chpp_link_refusal_logged(ChppHcaState *s)
{
    uint32_t n = ++s->link.refusals;

    chpp_count(s, CHPP_CNT_LINK_REFUSED);
    return n <= CHPP_LINK_REFUSE_LOG_FIRST || is_power_of_2(n);
}

static const char *chpp_link_refusal_note(ChppHcaState *s, char *buf,
                                          size_t size)
{
    if (s->link.refusals <= CHPP_LINK_REFUSE_LOG_FIRST) {
        return "";
    }
    snprintf(buf, size, " (refusal %u; only some are logged)",
             s->link.refusals);
    return buf;
}

static void chpp_link_refuse(ChppHcaState *s, uint32_t reason,
                             const char *text)
{
    struct chpp_link_refuse r = { .reason = cpu_to_le32(reason) };
    char note[64];

    pstrcpy(r.text, sizeof(r.text), text);
    if (chpp_link_refusal_logged(s)) {
        error_report("chpp-hca node %u: link refused: %s%s",
                     s->params.node_id, text,
                     chpp_link_refusal_note(s, note, sizeof(note)));
    }
    chpp_link_put(s, CHPP_LINK_REFUSE, 0, &r, sizeof(r));
    chpp_link_flush(s);
    chpp_link_cut_now(s, "handshake refused");
}

/*
 * The peer refused our HELLO.  Its reason is its own text: only printable
 * ASCII of it reaches the log, at most the record's 59 characters, so it
 * can neither end the line nor send escape sequences.  A peer that
 * refuses is done with the connection: it is cut, and nothing after the
 * REFUSE is parsed.  A legitimate peer sends its HELLO first; a REFUSE
 * before it breaks the protocol.
 */
static void chpp_link_refused(ChppHcaState *s, const uint8_t *p,
                              uint32_t len)
{
    struct chpp_link_refuse r = {};
    char text[sizeof(r.text)];
    char note[64];
    size_t i;

    if (!s->link.up) {
        chpp_link_protocol_error(s, "REFUSE before HELLO");
        return;
    }
    memcpy(&r, p, MIN(len, sizeof(r)));
    for (i = 0; i < sizeof(text) - 1 && r.text[i]; i++) {
        text[i] = r.text[i] >= 0x20 && r.text[i] < 0x7f ? r.text[i] : '?';
    }
    text[i] = 0;
    if (chpp_link_refusal_logged(s)) {
        error_report("chpp-hca node %u: the peer refused the link "
                     "(reason %u): %s%s", s->params.node_id,
                     le32_to_cpu(r.reason), text,
                     chpp_link_refusal_note(s, note, sizeof(note)));
    }
    chpp_link_cut_now(s, "the peer refused the link");
}

static void chpp_link_set_up(ChppHcaState *s, bool up)
{
    ChppLink *l = &s->link;
    unsigned fn;

    if (l->up == up) {
        return;
    }
    l->up = up;
    chpp_count(s, up ? CHPP_CNT_LINK_UPS : CHPP_CNT_LINK_DOWNS);
    trace_chpp_hca_link_state(up, l->peer_node);
    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(s, fn);

        if (f) {
            chpp_upcalls.link_changed(f);
        }
    }
    chpp_engine_kick(s);
}

static void chpp_link_hello(ChppHcaState *s, const uint8_t *p, uint32_t len)
{
    ChppLink *l = &s->link;
    struct chpp_link_hello h = {};
    g_autofree char *why = NULL;
    unsigned vc;

    /* One per connection: the peer's node id is what frames are held to. */
    if (l->up) {
        chpp_link_protocol_error(s, "HELLO after the handshake");
        return;
    }
    memcpy(&h, p, MIN(len, sizeof(h)));
    if (len < sizeof(h) ||
        le16_to_cpu(h.version_major) != CHPP_LINK_VERSION_MAJOR) {
        why = g_strdup_printf("peer speaks link protocol %u.%u, this "
                              "device %u.%u", le16_to_cpu(h.version_major),
                              le16_to_cpu(h.version_minor),
                              CHPP_LINK_VERSION_MAJOR,
                              CHPP_LINK_VERSION_MINOR);
        chpp_link_refuse(s, CHPP_LINK_REFUSE_VERSION, why);
        return;
    }
    if (le16_to_cpu(h.node_id) == s->params.node_id) {
        why = g_strdup_printf("peer has the same node id %u",
                              s->params.node_id);
        chpp_link_refuse(s, CHPP_LINK_REFUSE_SAME_NODE, why);
        return;
    }
    l->peer_node = le16_to_cpu(h.node_id);
    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        l->credits[vc] = MIN(le32_to_cpu(h.credits[vc]), 4096);
    }
    chpp_link_set_up(s, true);
    chpp_link_pump(s);
}

static void chpp_link_credit(ChppHcaState *s, uint8_t vc, const uint8_t *p,
                             uint32_t len)
{
    ChppLink *l = &s->link;

    if (len >= 4) {
        l->credits[vc] = MIN((uint64_t)l->credits[vc] + ldl_le_p(p), 4096);
        chpp_link_pump(s);
    }
}

/* A frame within the credits, dropped: its credit goes back all the same. */
static void chpp_link_frame_drop(ChppHcaState *s, uint8_t vc, const char *why)
{
    chpp_count(s, CHPP_CNT_PKTS_DROPPED);
    trace_chpp_hca_err_link_bad(why);
    s->link.queued[vc]++;
    chpp_link_consumed(s, vc);
}

static void chpp_link_frame(ChppHcaState *s, uint8_t vc, const uint8_t *p,
                            uint32_t len)
{
    ChppLink *l = &s->link;
    const uint8_t *ext = p + CHPP_WIRE_HDR_SIZE;
    ChppHcaState *to = s;
    ChppPkt *pkt;

    /* Frames beyond the credits we granted: a misbehaving peer. */
    if (l->queued[vc] + l->owed[vc] >= CHPP_LINK_CREDITS) {
        chpp_count(s, CHPP_CNT_LINK_CREDIT_ERRORS);
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        trace_chpp_hca_err_link_bad("frame beyond granted credits");
        return;
    }
    chpp_count(s, CHPP_CNT_LINK_RX_FRAMES);
    /* DST-VF picks the function; a short frame goes to the PF's decoder. */
    if (len >= CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext)) {
        /*
         * The wire carries only the peer's traffic for this node: a frame
         * claiming another source could reach this node's own (loopback)
         * connections.  The decoder checks the header agrees.
         */
        if (lduw_le_p(ext + offsetof(struct chpp_wire_ext, src_node)) !=
            l->peer_node ||
            lduw_le_p(ext + offsetof(struct chpp_wire_ext, dst_node)) !=
            s->params.node_id) {
            chpp_count(s, CHPP_CNT_LINK_SPOOFED);
            chpp_link_frame_drop(s, vc, "frame not from the peer's node "
                                 "or not for this node");
            return;
        }
        to = chpp_function(s, ext[offsetof(struct chpp_wire_ext, dst_vf)]);
        if (!to) {
            chpp_link_frame_drop(s, vc, "frame for a missing function");
            return;
        }
    }
    /* Decoded now, from the reader's ring: one copy of the payload. */
    l->queued[vc]++;
    chpp_count(to, CHPP_CNT_PKTS_RX);
    pkt = chpp_wire_decode(to, p, len);
    if (!pkt) {
        chpp_link_consumed(s, vc);      /* dropped and counted */
        return;
    }
    pkt->from_link = true;
    g_queue_push_tail(to->link_rx[vc], pkt);
    chpp_engine_kick(to);
}

/*
 * A stale peer QP retransmitting to a QP created again repeats one wrong
 * magic; a peer guessing magics (8 bits) tries new ones.  So a miss counts
 * as a guess only if its function, QP or magic differs from the last
 * miss, and CHPP_LINK_MAGIC_GUESS_MAX guesses within one window cut the
 * connection.  The window outlives connections: reconnecting buys no more
 * guesses.
 */
void chpp_link_magic_miss(ChppHcaState *s, uint32_t qpn, uint8_t magic)
{
    ChppHcaState *pf = chpp_pf(s);
    ChppLink *l = &pf->link;
    uint64_t key = (uint64_t)s->func << 40 | (uint64_t)qpn << 8 | magic;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!l->up || key == l->magic_last) {
        return;
    }
    l->magic_last = key;
    if (now - l->magic_window >= CHPP_LINK_MAGIC_WINDOW_MS * SCALE_MS) {
        l->magic_window = now;
        l->magic_guesses = 0;
    }
    if (++l->magic_guesses < CHPP_LINK_MAGIC_GUESS_MAX) {
        return;
    }
    l->magic_guesses = 0;
    chpp_count(pf, CHPP_CNT_LINK_MAGIC_CUTS);
    chpp_link_cut_now(pf, "the peer guesses QP magics");
}

void chpp_link_consumed(ChppHcaState *s, uint8_t vc)
{
    ChppLink *l = &s->link;

    if (l->queued[vc]) {
        l->queued[vc]--;
    }
    if (!l->up) {
        return;
    }
    l->owed[vc]++;
    if (l->owed[vc] >= CHPP_LINK_CREDITS / 4) {
        chpp_link_give_credits(s, vc);
        chpp_link_flush_later(s);
    }
}

/* A record header that breaks the protocol cuts the connection. */
static bool chpp_link_rec_ok(ChppHcaState *s, const struct chpp_link_rec *rec)
{
    if (le32_to_cpu(rec->magic) != CHPP_LINK_MAGIC ||
        le32_to_cpu(rec->len) > CHPP_WIRE_FRAME_MAX ||
        rec->vc >= CHPP_NUM_VCS) {
        chpp_link_protocol_error(s, "bad record header");
        return false;
    }
    return true;
}

/* One complete record, @len bytes at @p after its checked header. */
static void chpp_link_record(ChppHcaState *s, const struct chpp_link_rec *rec,
                             const uint8_t *p, uint32_t len)
{
    ChppLink *l = &s->link;

    switch (rec->type) {
    case CHPP_LINK_HELLO:
        chpp_link_hello(s, p, len);
        break;
    case CHPP_LINK_REFUSE:
        chpp_link_refused(s, p, len);
        break;
    case CHPP_LINK_CREDIT:
        if (l->up) {
            chpp_link_credit(s, rec->vc, p, len);
        }
        break;
    case CHPP_LINK_FRAME:
        if (!l->up) {
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
            trace_chpp_hca_err_link_bad("frame before HELLO");
            break;
        }
        chpp_link_frame(s, rec->vc, p, len);
        break;
    default:
        chpp_link_protocol_error(s, "unknown record type");
    }
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
        chpp_link_record(s, &rec, l->rx + off - len, len);
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
static void chpp_link_rx_bh(void *opaque)
{
    ChppHcaState *s = opaque;
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
    while (avail - off >= sizeof(struct chpp_link_rec)) {
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
        chpp_link_record(s, &rec, chpp_link_io_peek(io, off + sizeof(rec),
                                                    len, l->rx), len);
        if (l->gen != gen) {
            return;             /* the connection was cut meanwhile */
        }
        off += sizeof(rec) + len;
    }
    chpp_link_io_consume(io, off);
    if (eof) {
        trace_chpp_hca_link_event("end of stream");
        qemu_chr_fe_disconnect(&l->chr);
    }
}

void chpp_link_poll(ChppHcaState *s)
{
    if (s->link.io && chpp_link_io_avail(s->link.io) >=
                      sizeof(struct chpp_link_rec)) {
        chpp_link_rx_bh(s);
    }
}

/*
 * Frames of the old connection that no function has processed yet: the
 * PF decoded them into the queue of the function each was for (DST-VF),
 * so every function's queue goes, each drop counted where it was received.
 */
static void chpp_link_drop_received(ChppHcaState *pf, uint8_t vc)
{
    unsigned fn;

    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(pf, fn);
        ChppPkt *pkt;

        while (f && (pkt = g_queue_pop_head(f->link_rx[vc]))) {
            chpp_count(f, CHPP_CNT_PKTS_DROPPED);
            trace_chpp_hca_err_link_rx_dropped(fn, vc);
            chpp_pkt_free(pkt);
        }
    }
}

static void chpp_link_drop_queues(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    ChppDelayed *d;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *ba;

        while ((ba = g_queue_pop_head(l->backlog[vc]))) {
            chpp_count(s, CHPP_CNT_LINK_DOWN_DROPS);
            trace_chpp_hca_err_link_backlog_drop(vc);
            g_byte_array_unref(ba);
            chpp_tx_dequeued(s);
        }
        chpp_link_drop_received(s, vc);
        l->credits[vc] = 0;
        l->owed[vc] = 0;
        l->queued[vc] = 0;
    }
    while ((d = g_queue_pop_head(l->delayed))) {
        g_byte_array_unref(d->frame);
        g_free(d);
    }
    timer_del(l->delay_timer);
    chpp_link_out_drop(l);
    l->rx_paused = false;
    l->outq_full = false;
    if (l->watch) {
        g_source_remove(l->watch);
        l->watch = 0;
    }
    l->rx_len = 0;
}

/* A record the ring cannot hold whole would wait for room forever. */
QEMU_BUILD_BUG_ON(CHPP_LINK_RING_MIN <
                  2 * (sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX));

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
        chpp_link_drop_queues(s);
        if (s->link.use_thread) {
            s->link.io = chpp_link_io_start(
                qemu_chr_fe_get_driver(&s->link.chr), s->link.rx_bh,
                s->link.ring_size);
        }
        trace_chpp_hca_link_event(s->link.io ? "opened, reader thread" :
                                  "opened, chardev reads");
        chpp_link_send_hello(s);
        break;
    case CHR_EVENT_CLOSED:
        trace_chpp_hca_link_event("closed");
        chpp_link_io_detach(s);
        chpp_link_drop_queues(s);
        chpp_link_set_up(s, false);
        break;
    default:
        break;
    }
}

/* ---- lifecycle and properties ---------------------------------------- */

void chpp_link_realize(ChppHcaState *s, Error **errp)
{
    ChppLink *l = &s->link;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        l->backlog[vc] = g_queue_new();
        s->link_rx[vc] = g_queue_new();
    }
    l->delayed = g_queue_new();
    l->outq = g_queue_new();
    l->rx = g_malloc(CHPP_LINK_REC_MAX);
    l->delay_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, chpp_link_delay_cb, s);
    l->rx_bh = qemu_bh_new_guarded(chpp_link_rx_bh, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    l->tx_bh = qemu_bh_new_guarded(chpp_link_tx_bh, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    if (!l->rand_state) {
        l->rand_state = 0x9e3779b97f4a7c15ull;
    }
    if (qemu_chr_fe_backend_connected(&l->chr)) {
        qemu_chr_fe_set_handlers(&l->chr, chpp_link_can_receive,
                                 chpp_link_receive, chpp_link_event, NULL, s,
                                 NULL, true);
    }
}

/*
 * Frames @f received and will never process: the PF counts them against
 * the credits it granted, so it gets them back.  Freed without this, they
 * would leak the grant until the PF dropped every frame of the peer.
 */
static void chpp_link_rx_discard(ChppHcaState *f)
{
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        ChppPkt *pkt;

        while ((pkt = g_queue_pop_head(f->link_rx[vc]))) {
            chpp_pkt_free(pkt);
            chpp_link_consumed(chpp_pf(f), vc);
        }
    }
}

void chpp_link_unrealize(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    unsigned vc;

    /* A VF goes (VF Enable cleared, PF reset): its PF's link stays. */
    if (s->func) {
        chpp_link_rx_discard(s);
    }
    qemu_chr_fe_deinit(&l->chr, false);
    chpp_link_io_detach(s);
    chpp_link_drop_queues(s);
    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        g_queue_free(l->backlog[vc]);
        g_queue_free(s->link_rx[vc]);
    }
    g_queue_free(l->delayed);
    g_queue_free(l->outq);
    g_free(l->rx);
    timer_free(l->delay_timer);
    qemu_bh_delete(l->rx_bh);
    qemu_bh_delete(l->tx_bh);
}

/*
 * A device reset forgets queued traffic.  The connection stays, and so do
 * the fault-injection settings: they belong to the host, not the guest.
 */
void chpp_link_reset(ChppHcaState *s)
{
    chpp_link_rx_discard(s);
}

static void chpp_link_cut(Object *obj, bool value, Error **errp)
{
    ChppHcaState *s = CHPP_HCA(obj);

    if (value && chpp_link_attached(s)) {
        trace_chpp_hca_link_fault("cut", s->link.frame_seq);
        qemu_chr_fe_disconnect(&s->link.chr);
    }
}

static bool chpp_link_get_false(Object *obj, Error **errp)
{
    return false;
}

static void chpp_link_get_up(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    bool up = CHPP_HCA(obj)->link.up;

    visit_type_bool(v, name, &up, errp);
}

void chpp_link_add_properties(Object *obj)
{
    ChppHcaState *s = CHPP_HCA(obj);
    ChppLink *l = &s->link;

    object_property_add_uint32_ptr(obj, "fault-drop-next", &l->drop_next,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "fault-drop-every", &l->drop_every,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "fault-drop-percent",
                                   &l->drop_percent, OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "fault-corrupt-next",
                                   &l->corrupt_next, OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint32_ptr(obj, "fault-duplicate-next", &l->dup_next,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint64_ptr(obj, "fault-delay-ns", &l->delay_ns,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_uint64_ptr(obj, "fault-seed", &l->rand_state,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add_bool(obj, "fault-cut", chpp_link_get_false,
                             chpp_link_cut);
    object_property_add(obj, "link-up", "bool", chpp_link_get_up, NULL, NULL,
                        NULL);
}
