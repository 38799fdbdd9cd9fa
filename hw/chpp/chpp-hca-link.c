/*
 * chpp-hca: the link to peer adapters (docs/link.md, docs/fabric.md), over
 * a QEMU chardev to one peer, or over a QEMU netdev (chpp-hca-link-eth.c)
 * to every node of an Ethernet segment.
 *
 * Records: HELLO (version, node id, credits), FRAME (one wire frame),
 * CREDIT (frames the receiver consumed), REFUSE and, on Ethernet, PROBE.
 * Each (peer, virtual channel) has its own credits, so GET requests
 * waiting for credits never hold up the responses that would free them;
 * each channel's send queue is one FIFO across destinations.  Peers are
 * untrusted: a record that breaks the protocol cuts the connection (a
 * byte stream) or is dropped (Ethernet), a bad frame inside a valid
 * record is dropped and counted by the decoder.
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
#include "chpp-hca-capture.h"
#include "chpp-hca-link-eth.h"
#include "chpp-hca-link-stream.h"
#include "chpp-hca-link.h"
#include "trace.h"


typedef struct ChppDelayed {
    int64_t when;
    uint8_t vc;
    GByteArray *frame;
} ChppDelayed;


/* The PF owns the link; its VFs use it. */
bool chpp_link_attached(ChppHcaState *s)
{
    ChppLink *l = &chpp_pf(s)->link;

    return l->eth || qemu_chr_fe_backend_connected(&l->chr);
}

unsigned chpp_link_nodes_up(ChppHcaState *s, uint16_t *nodes, unsigned max)
{
    ChppLink *l = &chpp_pf(s)->link;
    unsigned i, j, n = 0;

    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        if (!l->peers[i].up) {
            continue;
        }
        /* Insertion sort: lowest node first. */
        for (j = MIN(n, max); j > 0 && nodes[j - 1] > l->peers[i].node; j--) {
            if (j < max) {
                nodes[j] = nodes[j - 1];
            }
        }
        if (j < max) {
            nodes[j] = l->peers[i].node;
        }
        n++;
    }
    return n;
}

/* On a fabric: UP while a peer is up; the peer field is the lowest one. */
uint32_t chpp_link_status(ChppHcaState *s)
{
    ChppLink *l = &chpp_pf(s)->link;
    uint16_t lowest;

    if (!chpp_link_attached(s)) {
        return 0;
    }
    if (!chpp_link_nodes_up(s, &lowest, 1)) {
        return CHPP_LINK_ATTACHED;
    }
    return CHPP_LINK_ATTACHED | (l->up ? CHPP_LINK_UP : 0) |
           (uint32_t)lowest << CHPP_LINK_PEER_SHIFT;
}

ChppPeer *chpp_peer_find(ChppLink *l, uint16_t node)
{
    unsigned i;

    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        if (l->peers[i].used && l->peers[i].node == node) {
            return &l->peers[i];
        }
    }
    return NULL;
}

/*
 * Send a record: @buf holds room for the Ethernet and record headers, then
 * the body.  A byte stream queues it (without the Ethernet header); on
 * Ethernet it goes at once, to node @to or to all (CHPP_LINK_TO_ALL).
 */
void chpp_link_out(ChppHcaState *s, uint32_t to, uint8_t type,
                          uint8_t vc, uint16_t seq, GByteArray *buf)
{
    ChppLink *l = &s->link;
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC),
        .type = type,
        .vc = vc,
        .seq = cpu_to_le16(seq),
        .len = cpu_to_le32(buf->len - CHPP_LINK_HEADROOM),
    };

    memcpy(buf->data + CHPP_ETH_HDR_SIZE, &rec, sizeof(rec));
    if (l->eth) {
        bool frame = type == CHPP_LINK_FRAME;
        uint8_t dst_fn = frame ?
            chpp_frame_u8(buf, offsetof(struct chpp_wire_ext, dst_vf)) : 0;
        uint8_t src_fn = frame ?
            chpp_frame_u8(buf, offsetof(struct chpp_wire_ext, src_vf)) : 0;

        chpp_link_eth_send(l->eth, to, dst_fn, src_fn,
                           to == CHPP_LINK_TO_ALL, buf->data, buf->len);
        g_byte_array_unref(buf);
        return;
    }
    chpp_capture_record(l->cap, &rec, buf->data + CHPP_LINK_HEADROOM,
                        buf->len - CHPP_LINK_HEADROOM, s->params.node_id,
                        l->peers[0].node);
    /* Plain ACKs and credits may wait for the next request (link.md). */
    chpp_stream_push(s, buf, type == CHPP_LINK_CREDIT ||
                     (type == CHPP_LINK_FRAME &&
                      chpp_frame_u8(buf, offsetof(struct chpp_wire_ext, op)) ==
                      CHPP_OP_ACK));
}

static void chpp_link_put(ChppHcaState *s, uint32_t to, uint8_t type,
                          uint8_t vc, const void *data, uint32_t len)
{
    GByteArray *buf = g_byte_array_sized_new(CHPP_LINK_HEADROOM + len);

    g_byte_array_set_size(buf, CHPP_LINK_HEADROOM);
    g_byte_array_append(buf, data, len);
    chpp_link_out(s, to, type, vc, 0, buf);
}

/* Frames waiting to be sent: the backlog, and those fault-delayed. */
static uint32_t chpp_link_waiting(ChppLink *l)
{
    uint32_t n = g_queue_get_length(l->delayed);
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        n += g_queue_get_length(l->backlog[vc]);
    }
    return n;
}

bool chpp_link_rx_ready(ChppHcaState *s)
{
    return !chpp_pf(s)->link.rx_paused;
}

/* On Ethernet records leave at once and arrive through the main loop. */
void chpp_link_flush_now(ChppHcaState *s, bool doorbell)
{
    if (!s->link.eth) {
        chpp_stream_flush_now(s, doorbell);
    }
}

void chpp_link_doorbell(ChppHcaState *s)
{
    if (!s->link.eth) {
        chpp_stream_doorbell(s);
    }
}

void chpp_link_poll_end(ChppHcaState *s)
{
    if (!s->link.eth) {
        chpp_stream_poll_end(s);
    }
}

void chpp_link_poll(ChppHcaState *s)
{
    if (!s->link.eth) {
        chpp_stream_poll(s);
    }
}

/* The backlog went down by half: functions take the peer's frames again. */
static void chpp_link_rx_resume(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    unsigned fn, vc;

    if (!l->rx_paused || chpp_link_waiting(l) > CHPP_LINK_BACKLOG_MAX / 2) {
        return;
    }
    l->rx_paused = false;
    trace_chpp_hca_link_rx_pause(false, chpp_link_waiting(l));
    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(s, fn);

        for (vc = 0; f && vc < CHPP_NUM_VCS; vc++) {
            if (!g_queue_is_empty(f->link_rx[vc])) {
                chpp_engine_kick(f);
                break;
            }
        }
    }
}

/*
 * Return the credits owed to @p, unless the write queue has no room for
 * it.  In batches of a quarter of the grant, to keep CREDIT records rare;
 * @now (Ethernet: a PROBE asks) sends whatever is owed, even nothing: the
 * running total tells the sender what it missed.
 */
void chpp_link_give_credits(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                                   bool now)
{
    ChppLink *l = &s->link;
    struct chpp_link_credit c;

    if (!p->up || (!now && (p->owed[vc] < MAX(chpp_link_grant(l) / 4, 1) ||
                            l->out_bytes >= CHPP_LINK_OUTQ_MAX))) {
        return;
    }
    p->credited[vc] += p->owed[vc];
    c.count = cpu_to_le32(p->owed[vc]);
    c.total = cpu_to_le32(p->credited[vc]);
    p->owed[vc] = 0;
    /* The running total is Ethernet's: a stream loses no record. */
    chpp_link_put(s, p->node, CHPP_LINK_CREDIT, vc, &c,
                  l->eth ? sizeof(c) : sizeof(c.count));
}

static void chpp_link_vc_unblock(ChppLink *l, uint8_t vc)
{
    ChppVcStats *st = &l->vcs[vc];

    if (st->blocked_since) {
        st->blocked_ns += qemu_clock_get_ns(QEMU_CLOCK_REALTIME) -
                          st->blocked_since;
        st->blocked_since = 0;
    }
}

/*
 * The head of @vc's queue waits for credits of its destination: the whole
 * channel waits.  A head-of-line stall if frames for others wait behind.
 */
static void chpp_link_vc_hol(ChppLink *l, uint8_t vc, uint16_t node,
                             GByteArray *behind)
{
    ChppVcStats *st = &l->vcs[vc];

    if (st->blocked_since && !st->hol && chpp_frame_dst(behind) != node) {
        st->hol = true;
        st->hol_stalls++;
    }
}

static void chpp_link_vc_block(ChppLink *l, uint8_t vc, uint16_t node)
{
    ChppVcStats *st = &l->vcs[vc];
    GList *it;

    if (st->blocked_since) {
        return;
    }
    st->blocked_since = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    st->hol = false;
    st->credit_stalls++;
    for (it = l->backlog[vc]->head; it; it = it->next) {
        chpp_link_vc_hol(l, vc, node, it->data);
    }
}

static bool chpp_link_wire_drop(ChppHcaState *s);

/*
 * Move frames whose destination has credits on their channel from the
 * backlog to the write queue (or, on Ethernet, the wire), while it holds
 * less than CHPP_LINK_OUTQ_MAX: a peer that does not read leaves them in
 * the backlog, where they count against the senders' bound.  Each
 * channel's backlog is one FIFO for every destination: a head waiting for
 * its peer's credits holds up the channel.  Frames carry room for their
 * headers: they are sent as they are.
 */
static void chpp_link_move(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    /* A byte stream has one peer: this runs for every frame sent. */
    unsigned npeers = l->eth ? CHPP_LINK_PEERS_MAX : 1;
    unsigned vc, i;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *frame;

        for (i = 0; i < npeers; i++) {
            chpp_link_give_credits(s, &l->peers[i], vc, false);
        }
        while ((frame = g_queue_peek_head(l->backlog[vc]))) {
            uint16_t node = chpp_frame_dst(frame);
            ChppPeer *p = chpp_peer_find(l, node);
            uint16_t seq = 0;

            if (!p || !p->up) {
                /* The peer went since the frame was queued. */
                g_queue_pop_head(l->backlog[vc]);
                chpp_count(s, CHPP_CNT_LINK_DOWN_DROPS);
                trace_chpp_hca_err_link_backlog_drop(vc);
                g_byte_array_unref(frame);
                chpp_tx_dequeued(s);
                continue;
            }
            if (!p->credits[vc]) {
                chpp_link_vc_block(l, vc, node);
                break;
            }
            if (l->out_bytes >= CHPP_LINK_OUTQ_MAX) {
                if (!l->outq_full) {
                    l->outq_full = true;
                    chpp_count(s, CHPP_CNT_LINK_OUTQ_FULL);
                    trace_chpp_hca_link_outq_full(l->out_bytes);
                }
                break;
            }
            chpp_link_vc_unblock(l, vc);
            g_queue_pop_head(l->backlog[vc]);
            chpp_tx_dequeued(s);
            p->credits[vc]--;
            p->tx_frames++;
            l->vcs[vc].tx_frames++;
            l->vcs[vc].tx_bytes += frame->len - CHPP_LINK_HEADROOM;
            chpp_count(s, CHPP_CNT_LINK_TX_FRAMES);
            if (l->eth) {
                seq = p->tx_seq[vc]++;
                /* Fault injection on Ethernet loses frames on the wire. */
                if (chpp_link_wire_drop(s)) {
                    g_byte_array_unref(frame);
                    continue;
                }
            }
            chpp_link_out(s, node, CHPP_LINK_FRAME, vc, seq, frame);
        }
    }
    if (l->out_bytes < CHPP_LINK_OUTQ_MAX) {
        l->outq_full = false;
    }
    chpp_link_rx_resume(s);
}

/* Records were queued: a stream writes them with the rest of the batch. */
static void chpp_link_flush_later(ChppHcaState *s)
{
    if (!s->link.eth) {
        chpp_stream_flush_later(s);
    }
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
    uint32_t len;

    g_queue_push_tail(l->backlog[vc], frame);
    /* Queued behind a head that waits for another node's credits? */
    chpp_link_vc_hol(l, vc, chpp_frame_dst(g_queue_peek_head(l->backlog[vc])),
                     frame);
    len = g_queue_get_length(l->backlog[vc]);
    l->vcs[vc].backlog_max = MAX(l->vcs[vc].backlog_max, len);
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
        ChppPeer *p = chpp_peer_find(l, chpp_frame_dst(d->frame));

        g_queue_pop_head(l->delayed);
        if (p && p->up) {
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

/* Should the frame now sent be lost (fault-drop-*)? */
static bool chpp_link_drop_now(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    bool drop = false;

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
    }
    return drop;
}

/*
 * Ethernet: a frame leaves with its credit and sequence number taken, so
 * a drop is a loss on the wire that the receiver's seq tracking and the
 * credit probes must recover (docs/fabric.md, "Loss").
 */
static bool chpp_link_wire_drop(ChppHcaState *s)
{
    s->link.frame_seq++;
    return chpp_link_drop_now(s);
}

/* Returns true if the fault injector consumed the frame. */
static bool chpp_link_fault(ChppHcaState *s, uint8_t vc, GByteArray *frame)
{
    ChppLink *l = &s->link;

    /* A byte stream loses nothing: frames are dropped before the link. */
    if (!l->eth) {
        l->frame_seq++;
        if (chpp_link_drop_now(s)) {
            g_byte_array_unref(frame);
            return true;
        }
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
    ChppPeer *p;

    if (!chpp_link_attached(s)) {
        g_byte_array_unref(frame);
        return false;
    }
    /* A missing or unreachable peer loses the frame; RC retries notice. */
    p = chpp_peer_find(l, node);
    if (!p || !p->up) {
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

/* ---- peers -------------------------------------------------------------- */

/*
 * The link is up while one peer is: the port follows (PORT_CHANGE), and
 * CHPP_LINK_UPS/_DOWNS count these transitions, not each peer's.
 */
static void chpp_link_update_up(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    uint16_t lowest = 0;
    bool up = chpp_link_nodes_up(s, &lowest, 1) > 0;
    unsigned fn;

    if (l->up == up) {
        return;
    }
    l->up = up;
    chpp_count(s, up ? CHPP_CNT_LINK_UPS : CHPP_CNT_LINK_DOWNS);
    trace_chpp_hca_link_state(up, lowest);
    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(s, fn);

        if (f) {
            chpp_upcalls.link_changed(f);
        }
    }
    chpp_engine_kick(s);
}

/*
 * Frames of @node (every node if @all) received and not processed by any
 * function yet: the PF decoded them into the queue of the function each
 * was for (DST-VF), so every function's queue is searched, each drop
 * counted where it was received.
 */
static void chpp_link_drop_received(ChppHcaState *pf, uint16_t node, bool all)
{
    unsigned fn, vc;

    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        ChppHcaState *f = chpp_function(pf, fn);

        for (vc = 0; f && vc < CHPP_NUM_VCS; vc++) {
            GList *it = f->link_rx[vc]->head;

            while (it) {
                GList *next = it->next;
                ChppPkt *pkt = it->data;

                if (all || pkt->src_node == node) {
                    g_queue_delete_link(f->link_rx[vc], it);
                    chpp_count(f, CHPP_CNT_PKTS_DROPPED);
                    trace_chpp_hca_err_link_rx_dropped(fn, vc);
                    chpp_pkt_free(pkt);
                }
                it = next;
            }
        }
    }
}

/* Frames waiting for credits of @node go: it is down. */
static void chpp_link_drop_backlog(ChppHcaState *s, uint16_t node, bool all)
{
    ChppLink *l = &s->link;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GList *it = l->backlog[vc]->head;

        while (it) {
            GList *next = it->next;
            GByteArray *ba = it->data;

            if (all || chpp_frame_dst(ba) == node) {
                g_queue_delete_link(l->backlog[vc], it);
                chpp_count(s, CHPP_CNT_LINK_DOWN_DROPS);
                trace_chpp_hca_err_link_backlog_drop(vc);
                g_byte_array_unref(ba);
                chpp_tx_dequeued(s);
            }
            it = next;
        }
        chpp_link_vc_unblock(l, vc);
    }
}

/*
 * Everything of @p goes, as when a chardev connection closes: its frames
 * not yet processed (not one of them runs after this), those waiting for
 * its credits; the slot is free again.
 */
void chpp_link_peer_down(ChppHcaState *s, ChppPeer *p, const char *why)
{
    uint16_t node = p->node;

    trace_chpp_hca_link_peer(node, p->epoch, why);
    p->up = false;
    p->used = false;
    chpp_link_drop_received(s, node, false);
    chpp_link_drop_backlog(s, node, false);
    memset(p, 0, sizeof(*p));
    chpp_link_update_up(s);
    /* The channels' heads may have been this peer's. */
    chpp_link_pump(s);
}

ChppPeer *chpp_link_peer_new(ChppHcaState *s, uint16_t node,
                                    uint32_t epoch,
                                    const struct chpp_link_hello *h)
{
    ChppLink *l = &s->link;
    unsigned i, vc;

    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        ChppPeer *p = &l->peers[i];

        if (p->used) {
            continue;
        }
        memset(p, 0, sizeof(*p));
        p->used = true;
        p->node = node;
        p->epoch = epoch;
        p->last_seen = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        /* credits[0] for each data VC, credits[1] for the GET VC */
        for (vc = 0; vc < chpp_num_vcs(s); vc++) {
            p->credits[vc] = MIN(le32_to_cpu(
                h->credits[vc < s->params.data_vcs ? 0 : 1]), 4096);
            p->last_credit[vc] = p->last_seen;
        }
        trace_chpp_hca_link_peer(node, epoch, "met");
        return p;
    }
    return NULL;
}

void chpp_link_peer_up(ChppHcaState *s, ChppPeer *p)
{
    if (p->up) {
        return;
    }
    p->up = true;
    trace_chpp_hca_link_peer(p->node, p->epoch, "up");
    chpp_link_update_up(s);
    chpp_link_pump(s);
}

/* ---- reading ------------------------------------------------------------ */

void chpp_link_send_hello(ChppHcaState *s, uint32_t to, uint8_t flags,
                                 uint32_t peer_epoch)
{
    ChppLink *l = &s->link;
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR),
        .node_id = cpu_to_le16(s->params.node_id),
        .data_vcs = s->params.data_vcs,
        .flags = flags,
        .caps = cpu_to_le32(CHPP_LINK_CAP_GET_VC |
                            (!l->eth && chpp_stream_shm_able(s) ?
                             CHPP_LINK_CAP_SHM : 0)),
        .credits = { cpu_to_le32(chpp_link_grant(l)),
                     cpu_to_le32(chpp_link_grant(l)) },
        .epoch = cpu_to_le32(l->epoch),
        .peer_epoch = cpu_to_le32(peer_epoch),
    };

    chpp_link_put(s, to, CHPP_LINK_HELLO, 0, &h, sizeof(h));
    chpp_stream_flush(s);
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

/* Refuse node @to's HELLO; a byte stream is cut. */
static void chpp_link_refuse(ChppHcaState *s, uint32_t to, uint32_t reason,
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
    if (!s->link.eth) {
        chpp_link_put(s, to, CHPP_LINK_REFUSE, 0, &r, sizeof(r));
        chpp_stream_flush(s);
        chpp_stream_cut(s, "handshake refused");
    } else if (to != s->params.node_id) {
        /* On a segment, a REFUSE to our own id would reach us alone. */
        chpp_link_put(s, to, CHPP_LINK_REFUSE, 0, &r, sizeof(r));
    }
}

/* The peer's words, made safe for the log (docs/link.md). */
void chpp_link_log_refusal(ChppHcaState *s, uint16_t node,
                                  const uint8_t *p, uint32_t len)
{
    struct chpp_link_refuse r = {};
    char text[sizeof(r.text)];
    char note[64];
    size_t i;

    memcpy(&r, p, MIN(len, sizeof(r)));
    for (i = 0; i < sizeof(text) - 1 && r.text[i]; i++) {
        text[i] = r.text[i] >= 0x20 && r.text[i] < 0x7f ? r.text[i] : '?';
    }
    text[i] = 0;
    if (chpp_link_refusal_logged(s)) {
        error_report("chpp-hca node %u: the peer refused the link "
                     "(node %u, reason %u): %s%s", s->params.node_id, node,
                     le32_to_cpu(r.reason), text,
                     chpp_link_refusal_note(s, note, sizeof(note)));
    }
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
    ChppPeer *peer = &s->link.peers[0];

    if (!peer->up) {
        chpp_stream_protocol_error(s, "REFUSE before HELLO");
        return;
    }
    chpp_link_log_refusal(s, peer->node, p, len);
    chpp_stream_cut(s, "the peer refused the link");
}

/*
 * Can we talk to the sender of HELLO @h at all?  Refuses it (and returns
 * false) if not.
 */
bool chpp_link_hello_ok(ChppHcaState *s, uint32_t to,
                               const struct chpp_link_hello *h, uint32_t len)
{
    g_autofree char *why = NULL;

    if (len < sizeof(*h) ||
        le16_to_cpu(h->version_major) != CHPP_LINK_VERSION_MAJOR) {
        why = g_strdup_printf("peer speaks link protocol %u.%u, this "
                              "device %u.%u", le16_to_cpu(h->version_major),
                              le16_to_cpu(h->version_minor),
                              CHPP_LINK_VERSION_MAJOR,
                              CHPP_LINK_VERSION_MINOR);
        chpp_link_refuse(s, to, CHPP_LINK_REFUSE_VERSION, why);
        return false;
    }
    if (le16_to_cpu(h->node_id) == s->params.node_id) {
        why = g_strdup_printf("peer has the same node id %u",
                              s->params.node_id);
        chpp_link_refuse(s, to, CHPP_LINK_REFUSE_SAME_NODE, why);
        return false;
    }
    if (MAX(h->data_vcs, 1) != s->params.data_vcs) {
        why = g_strdup_printf("peer has %u data VCs, this device %u",
                              MAX(h->data_vcs, 1), s->params.data_vcs);
        chpp_link_refuse(s, to, CHPP_LINK_REFUSE_VCS, why);
        return false;
    }
    return true;
}

/*
 * The peer takes a shared ring: from this record on, this side's bytes go
 * to memory (docs/link.md, "Shared memory").
 */
static void chpp_link_shm_offer(ChppHcaState *s)
{
    uint32_t size = chpp_stream_shm_ring(s);
    struct chpp_link_shm m = {
        .ring_size = cpu_to_le32(size),
        .data_off = cpu_to_le32(CHPP_LINK_SHM_DATA_OFF),
    };

    if (size) {
        chpp_link_put(s, 0, CHPP_LINK_SHM, 0, &m, sizeof(m));
        chpp_stream_shm_queued(s);
        chpp_stream_flush(s);
    }
}

/* A byte stream: one HELLO per connection, the peer is up at once. */
static void chpp_link_hello(ChppHcaState *s, const uint8_t *p, uint32_t len)
{
    ChppLink *l = &s->link;
    struct chpp_link_hello h = {};
    ChppPeer *peer;

    /* One per connection: the peer's node id is what frames are held to. */
    if (l->peers[0].used) {
        chpp_stream_protocol_error(s, "HELLO after the handshake");
        return;
    }
    memcpy(&h, p, MIN(len, sizeof(h)));
    if (!chpp_link_hello_ok(s, 0, &h, len)) {
        return;
    }
    peer = chpp_link_peer_new(s, le16_to_cpu(h.node_id), 0, &h);
    chpp_link_peer_up(s, peer);
    if (le32_to_cpu(h.caps) & CHPP_LINK_CAP_SHM) {
        chpp_link_shm_offer(s);
    }
}

void chpp_link_credit(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                             const uint8_t *b, uint32_t len)
{
    uint32_t count;

    if (s->link.eth) {
        /* The running total: a lost CREDIT is made good by the next. */
        if (len < sizeof(struct chpp_link_credit)) {
            return;
        }
        count = ldl_le_p(b + 4) - p->credit_seen[vc];
        p->credit_seen[vc] = ldl_le_p(b + 4);
        p->last_credit[vc] = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    } else if (len >= 4) {
        count = ldl_le_p(b);
    } else {
        return;
    }
    p->credits[vc] = MIN((uint64_t)p->credits[vc] + count, 4096);
    chpp_link_pump(s);
}

/* A frame within the credits, dropped: its credit goes back all the same. */
static void chpp_link_frame_drop(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                                 const char *why)
{
    chpp_count(s, CHPP_CNT_PKTS_DROPPED);
    trace_chpp_hca_err_link_bad(why);
    p->queued[vc]++;
    chpp_link_consumed(s, p->node, vc);
}

void chpp_link_frame(ChppHcaState *s, ChppPeer *peer, uint8_t vc,
                            const uint8_t *p, uint32_t len)
{
    ChppLink *l = &s->link;
    const uint8_t *ext = p + CHPP_WIRE_HDR_SIZE;
    ChppHcaState *to = s;
    ChppPkt *pkt;

    /* Frames beyond the credits we granted: a misbehaving peer. */
    if (peer->queued[vc] + peer->owed[vc] >= chpp_link_grant(l)) {
        chpp_count(s, CHPP_CNT_LINK_CREDIT_ERRORS);
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        trace_chpp_hca_err_link_bad("frame beyond granted credits");
        return;
    }
    chpp_count(s, CHPP_CNT_LINK_RX_FRAMES);
    peer->rx_frames++;
    /* DST-VF picks the function; a short frame goes to the PF's decoder. */
    if (len >= CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext)) {
        /*
         * The wire carries only the peer's traffic for this node: a frame
         * claiming another source could reach this node's own (loopback)
         * connections.  The decoder checks the header agrees.
         */
        if (lduw_le_p(ext + offsetof(struct chpp_wire_ext, src_node)) !=
            peer->node ||
            lduw_le_p(ext + offsetof(struct chpp_wire_ext, dst_node)) !=
            s->params.node_id) {
            chpp_count(s, CHPP_CNT_LINK_SPOOFED);
            chpp_link_frame_drop(s, peer, vc, "frame not from the peer's "
                                 "node or not for this node");
            return;
        }
        to = chpp_function(s, ext[offsetof(struct chpp_wire_ext, dst_vf)]);
        if (!to) {
            chpp_link_frame_drop(s, peer, vc, "frame for a missing function");
            return;
        }
    }
    /* Decoded now, from the reader's ring: one copy of the payload. */
    peer->queued[vc]++;
    chpp_count(to, CHPP_CNT_PKTS_RX);
    pkt = chpp_wire_decode(to, p, len);
    if (!pkt) {
        chpp_link_consumed(s, peer->node, vc);      /* dropped and counted */
        return;
    }
    pkt->from_link = true;
    pkt->rx_seq = to->link_rx_seq++;
    g_queue_push_tail(to->link_rx[vc], pkt);
    chpp_engine_kick(to);
}

/*
 * A stale peer QP retransmitting to a QP created again repeats one wrong
 * magic; a peer guessing magics (8 bits) tries new ones.  So a miss counts
 * as a guess only if its function, QP or magic differs from the last
 * miss, and CHPP_LINK_MAGIC_GUESS_MAX guesses within one window cut the
 * connection (on Ethernet: drop the state of the peer @from, which has to
 * join again).  The window outlives connections: reconnecting buys no
 * more guesses.
 */
void chpp_link_magic_miss(ChppHcaState *s, uint16_t from, uint32_t qpn,
                          uint8_t magic)
{
    ChppHcaState *pf = chpp_pf(s);
    ChppLink *l = &pf->link;
    uint64_t key = (uint64_t)s->func << 40 | (uint64_t)qpn << 8 | magic;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    ChppPeer *p = chpp_peer_find(l, from);

    if (!p || !p->up || key == l->magic_last) {
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
    if (l->eth) {
        chpp_link_peer_down(pf, p, "the peer guesses QP magics");
    } else {
        chpp_stream_cut(pf, "the peer guesses QP magics");
    }
}

void chpp_link_consumed(ChppHcaState *s, uint16_t from, uint8_t vc)
{
    ChppLink *l = &s->link;
    ChppPeer *p = chpp_peer_find(l, from);

    if (!p || !p->up) {
        return;
    }
    if (p->queued[vc]) {
        p->queued[vc]--;
    }
    p->owed[vc]++;
    if (p->owed[vc] >= MAX(chpp_link_grant(l) / 4, 1)) {
        chpp_link_give_credits(s, p, vc, false);
        chpp_link_flush_later(s);
    }
}

/* One complete record, @len bytes at @p after its checked header. */
static void chpp_link_record(ChppHcaState *s, const struct chpp_link_rec *rec,
                             const uint8_t *p, uint32_t len)
{
    ChppPeer *peer = &s->link.peers[0];

    chpp_capture_record(s->link.cap, rec, p, len, peer->node,
                        s->params.node_id);
    switch (rec->type) {
    case CHPP_LINK_HELLO:
        chpp_link_hello(s, p, len);
        break;
    case CHPP_LINK_REFUSE:
        chpp_link_refused(s, p, len);
        break;
    case CHPP_LINK_CREDIT:
        if (peer->up) {
            chpp_link_credit(s, peer, rec->vc, p, len);
        }
        break;
    case CHPP_LINK_FRAME:
        if (!peer->up) {
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
            trace_chpp_hca_err_link_bad("frame before HELLO");
            break;
        }
        chpp_link_frame(s, peer, rec->vc, p, len);
        break;
    case CHPP_LINK_SHM:
        if (!peer->up) {
            chpp_stream_protocol_error(s, "shared ring before HELLO");
            break;
        }
        chpp_stream_shm_attach(s, p, len);
        break;
    default:
        chpp_stream_protocol_error(s, "unknown record type");
    }
}

/* Everything of the connection goes (a chardev connects or closes). */
static void chpp_link_drop_queues(ChppHcaState *s)
{
    ChppLink *l = &s->link;
    ChppDelayed *d;

    chpp_link_drop_backlog(s, 0, true);
    chpp_link_drop_received(s, 0, true);
    memset(l->peers, 0, sizeof(l->peers));
    while ((d = g_queue_pop_head(l->delayed))) {
        g_byte_array_unref(d->frame);
        g_free(d);
    }
    timer_del(l->delay_timer);
    chpp_stream_drop(s);
    l->rx_paused = false;
    l->outq_full = false;
}

/* ---- the stream's events ------------------------------------------------ */

static void chpp_link_stream_room(ChppHcaState *s)
{
    chpp_link_move(s);
}

/* A connection opened or closed: nothing of the old one stays. */
static void chpp_link_stream_reset(ChppHcaState *s, bool open)
{
    chpp_link_drop_queues(s);
    if (!open) {
        chpp_link_update_up(s);
    }
}

static void chpp_link_stream_opened(ChppHcaState *s)
{
    chpp_link_update_up(s);
    chpp_link_send_hello(s, 0, 0, 0);
}

static const ChppStreamOps chpp_link_stream_ops = {
    .record = chpp_link_record,
    .room = chpp_link_stream_room,
    .reset = chpp_link_stream_reset,
    .opened = chpp_link_stream_opened,
};

/* ---- lifecycle and properties ---------------------------------------- */

/* Property capture (docs/capture.md): the records of a chardev link. */
bool chpp_link_capture_open(ChppHcaState *s, Error **errp)
{
    ChppLink *l = &s->link;

    if (!l->capture_path) {
        return true;
    }
    if (l->nic_conf.peers.ncs[0]) {
        error_setg(errp, "chpp-hca: capture is for a chardev link; capture "
                   "a netdev link with -object filter-dump");
        return false;
    }
    if (!qemu_chr_fe_backend_connected(&l->chr)) {
        error_setg(errp, "chpp-hca: capture needs a link (chardev)");
        return false;
    }
    l->cap = chpp_capture_open(l->capture_path, l->capture_max, errp);
    return l->cap != NULL;
}

void chpp_link_capture_close(ChppHcaState *s)
{
    chpp_capture_close(s->link.cap);
    s->link.cap = NULL;
}

bool chpp_link_realize(ChppHcaState *s, Error **errp)
{
    ChppLink *l = &s->link;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        l->backlog[vc] = g_queue_new();
        s->link_rx[vc] = g_queue_new();
    }
    l->delayed = g_queue_new();
    l->delay_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, chpp_link_delay_cb, s);
    if (!l->rand_state) {
        l->rand_state = 0x9e3779b97f4a7c15ull;
    }
    if (qemu_chr_fe_backend_connected(&l->chr) && l->nic_conf.peers.ncs[0]) {
        error_setg(errp, "chpp-hca: chardev and netdev are exclusive: "
                   "a link is a byte stream or an Ethernet segment");
        return false;
    }
    chpp_stream_realize(s, &chpp_link_stream_ops);
    return true;
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
            uint16_t from = pkt->src_node;

            chpp_pkt_free(pkt);
            chpp_link_consumed(chpp_pf(f), from, vc);
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
    /* Synchronous: no chardev event runs before the stream goes too. */
    chpp_link_drop_queues(s);
    chpp_link_capture_close(s);
    chpp_stream_unrealize(s);
    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        g_queue_free(l->backlog[vc]);
        g_queue_free(s->link_rx[vc]);
    }
    g_queue_free(l->delayed);
    timer_free(l->delay_timer);
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

    unsigned i;

    if (!value || !chpp_link_attached(s)) {
        return;
    }
    trace_chpp_hca_link_fault("cut", s->link.frame_seq);
    if (!s->link.eth) {
        chpp_stream_disconnect(s);
        return;
    }
    /* A segment has no connection: every peer's state goes; they rejoin. */
    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        if (s->link.peers[i].used) {
            chpp_link_peer_down(s, &s->link.peers[i], "fault-cut");
        }
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
