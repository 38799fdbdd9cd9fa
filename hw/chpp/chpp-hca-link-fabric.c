/*
 * chpp-hca: the link protocol on an Ethernet segment (docs/fabric.md):
 * discovery and the per-pair handshake (HELLO with epochs, NEW and ACK),
 * keepalive and lost peers, restarted peers, and loss (FRAME sequence
 * numbers, credit probes).  Records reach it from the Ethernet transport
 * (chpp-hca-link-eth.c); peers, credits and frames are the link
 * protocol's (chpp-hca-link.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "chpp-hca-datapath.h"
#include "chpp-hca-link-eth.h"
#include "chpp-hca-link.h"
#include "trace.h"


/*
 * A HELLO with another epoch than the one node @p is up with: a restart
 * (the old incarnation is gone, so silent) or someone else claiming the
 * node (the old one still speaks).  The new epoch wins only once the
 * known one has sent no HELLO for CHPP_LINK_EPOCH_HELLOS of our HELLO
 * periods (nodes of a segment use one link-hello-ms) or the loss timeout,
 * if shorter.
 */
static bool chpp_link_eth_epoch_live(ChppLink *l, ChppPeer *p, int64_t now)
{
    uint64_t ms = MIN((uint64_t)CHPP_LINK_EPOCH_HELLOS * l->hello_ms,
                      l->lost_ms);

    return now - p->epoch_heard < (int64_t)(ms * SCALE_MS);
}

/*
 * HELLO on a segment.  Broadcast ones announce a node (and keep it alive).
 * A node without state here gets a unicast HELLO flagged NEW carrying its
 * epoch, and nothing else: state (a slot of the peer table) is made only
 * by a HELLO that carries our epoch, the NEW of a node that heard ours
 * (answered with ACK) or the ACK to ours.  Whoever makes state starts
 * afresh (credits whole, sequence numbers 0), and a NEW from a peer that
 * is up says it did: ours goes too.  A new epoch is a restarted node: its
 * old state goes as a chardev reconnect's does, once the old epoch is
 * silent.
 */
static void chpp_link_eth_hello(ChppHcaState *s, const ChppEthSrc *src,
                                const uint8_t *b, uint32_t len)
{
    ChppLink *l = &s->link;
    struct chpp_link_hello h = {};
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    uint16_t node;
    uint32_t epoch;
    bool mine;
    ChppPeer *p;

    memcpy(&h, b, MIN(len, sizeof(h)));
    node = le16_to_cpu(h.node_id);
    epoch = le32_to_cpu(h.epoch);
    if (len >= sizeof(h) && node == s->params.node_id &&
        epoch == l->epoch) {
        return;                 /* our own broadcast, looped back */
    }
    if (len >= sizeof(h) && node != src->node) {
        chpp_count(s, CHPP_CNT_LINK_SPOOFED);
        trace_chpp_hca_err_link_bad("HELLO from another node's MAC");
        return;
    }
    if (!chpp_link_hello_ok(s, src->node, &h, len)) {
        return;
    }
    if (!epoch) {
        chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
        trace_chpp_hca_err_link_bad("HELLO without an epoch");
        return;
    }
    mine = !src->bcast && le32_to_cpu(h.peer_epoch) == l->epoch;
    p = chpp_peer_find(l, node);
    if (p && p->epoch != epoch) {
        if (chpp_link_eth_epoch_live(l, p, now)) {
            l->fab.epoch_conflicts++;
            chpp_count(s, CHPP_CNT_LINK_SPOOFED);
            trace_chpp_hca_err_link_bad("new epoch while the known one "
                                        "speaks");
            return;
        }
        chpp_link_peer_down(s, p, "restarted: new epoch");
        p = NULL;
    }
    if (p && p->up && mine && (h.flags & CHPP_LINK_HELLO_F_NEW) &&
        (p->tx_frames || p->rx_frames)) {
        /*
         * It dropped what it had of us: what we have of it goes too.  With
         * nothing exchanged yet, this is the meeting's NEW sent again before
         * our answer arrived (both sides answer each other's broadcasts):
         * our state is fresh already, so it is only acknowledged.
         */
        chpp_link_peer_down(s, p, "the peer started afresh");
        p = NULL;
    }
    if (!p) {
        if (!mine || !(h.flags & (CHPP_LINK_HELLO_F_NEW |
                                  CHPP_LINK_HELLO_F_ACK))) {
            /* Met, or our NEW was lost: (again) tell it we start afresh. */
            l->fab.unmet++;
            chpp_link_send_hello(s, node, CHPP_LINK_HELLO_F_NEW, epoch);
            return;
        }
        p = chpp_link_peer_new(s, node, epoch, &h);
        if (!p) {
            l->fab.table_full++;
            trace_chpp_hca_err_link_bad("peer table full");
            return;
        }
    }
    p->epoch_heard = now;
    p->last_seen = now;
    if (mine && (h.flags & CHPP_LINK_HELLO_F_NEW)) {
        chpp_link_send_hello(s, node, CHPP_LINK_HELLO_F_ACK, epoch);
    }
    chpp_link_peer_up(s, p);
}

/*
 * Sequence numbers per (peer, VC): frames arrive in order on a path, so a
 * gap is frames the segment lost.  Their credits were spent: they count
 * as consumed, or the grant would shrink with every loss.
 */
static bool chpp_link_eth_seq(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                              uint16_t seq)
{
    int16_t gap = seq - p->rx_seq[vc];

    if (gap < 0) {
        p->late++;
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        trace_chpp_hca_err_link_bad("late or duplicate sequence number");
        return false;
    }
    /* More than the grant lost: a peer playing games. */
    if (gap > chpp_link_grant(&s->link)) {
        chpp_count(s, CHPP_CNT_LINK_CREDIT_ERRORS);
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        trace_chpp_hca_err_link_bad("sequence gap beyond the grant");
        return false;
    }
    if (gap) {
        p->lost += gap;
        p->owed[vc] += gap;
        trace_chpp_hca_link_lost(p->node, vc, gap);
    }
    p->rx_seq[vc] = seq;
    return true;
}

static void chpp_link_eth_record(void *opaque, const ChppEthSrc *src,
                                 const struct chpp_link_rec *rec,
                                 const uint8_t *b, uint32_t len)
{
    ChppHcaState *s = opaque;
    ChppLink *l = &s->link;
    ChppPeer *p;

    if (rec->vc >= chpp_num_vcs(s)) {
        chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
        trace_chpp_hca_err_link_bad("no such virtual channel");
        return;
    }
    if (rec->type == CHPP_LINK_HELLO) {
        chpp_link_eth_hello(s, src, b, len);
        return;
    }
    p = chpp_peer_find(l, src->node);
    switch (rec->type) {
    case CHPP_LINK_REFUSE:
        if (!p) {
            chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
            trace_chpp_hca_err_link_bad("REFUSE before HELLO");
            return;
        }
        chpp_link_log_refusal(s, p->node, b, len);
        chpp_link_peer_down(s, p, "refused");
        return;
    case CHPP_LINK_CREDIT:
    case CHPP_LINK_FRAME:
    case CHPP_LINK_PROBE:
        break;
    default:
        chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
        trace_chpp_hca_err_link_bad("unknown record type");
        return;
    }
    if (!p || !p->up) {
        if (rec->type == CHPP_LINK_FRAME) {
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        }
        trace_chpp_hca_err_link_bad("record of a node not up");
        return;
    }
    p->last_seen = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    switch (rec->type) {
    case CHPP_LINK_CREDIT:
        chpp_link_credit(s, p, rec->vc, b, len);
        break;
    case CHPP_LINK_PROBE:
        /* The sender waits for credits: count its lost tail, answer. */
        chpp_link_eth_seq(s, p, rec->vc, le16_to_cpu(rec->seq));
        chpp_link_give_credits(s, p, rec->vc, true);
        break;
    case CHPP_LINK_FRAME:
        /* The MACs must say what the frame says (checked there too). */
        if (len >= CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext) &&
            (b[CHPP_WIRE_HDR_SIZE + offsetof(struct chpp_wire_ext,
                                             dst_vf)] != src->dst_fn ||
             b[CHPP_WIRE_HDR_SIZE + offsetof(struct chpp_wire_ext,
                                             src_vf)] != src->src_fn ||
             src->bcast)) {
            chpp_count(s, CHPP_CNT_LINK_SPOOFED);
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
            trace_chpp_hca_err_link_bad("frame disagrees with its MACs");
            return;
        }
        if (!chpp_link_eth_seq(s, p, rec->vc, le16_to_cpu(rec->seq))) {
            return;
        }
        p->rx_seq[rec->vc]++;
        chpp_link_frame(s, p, rec->vc, b, len);
        break;
    }
}

static void chpp_link_eth_bad(void *opaque, const char *why)
{
    ChppHcaState *s = opaque;

    chpp_count(s, CHPP_CNT_LINK_BAD_RECORDS);
    trace_chpp_hca_err_link_bad(why);
}

/* A channel's head waits for credits that do not come: probe its peer. */
static void chpp_link_eth_probe(ChppHcaState *s, int64_t now)
{
    ChppLink *l = &s->link;
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *head = g_queue_peek_head(l->backlog[vc]);
        ChppPeer *p = head ? chpp_peer_find(l, chpp_frame_dst(head)) : NULL;
        GByteArray *buf;

        if (!p || !p->up || p->credits[vc] ||
            now - p->last_credit[vc] < CHPP_LINK_PROBE_MS * SCALE_MS) {
            continue;
        }
        p->probes++;
        p->last_credit[vc] = now;
        buf = g_byte_array_sized_new(CHPP_LINK_HEADROOM);
        g_byte_array_set_size(buf, CHPP_LINK_HEADROOM);
        chpp_link_out(s, p->node, CHPP_LINK_PROBE, vc, p->tx_seq[vc], buf);
    }
}

/* HELLO every hello_ms, peers silent for lost_ms go, blocked VCs probe. */
static void chpp_link_tick(void *opaque)
{
    ChppHcaState *s = opaque;
    ChppLink *l = &s->link;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned i;

    if (now >= l->next_hello) {
        l->next_hello = now + l->hello_ms * SCALE_MS;
        chpp_link_send_hello(s, CHPP_LINK_TO_ALL, 0, 0);
    }
    for (i = 0; i < CHPP_LINK_PEERS_MAX; i++) {
        ChppPeer *p = &l->peers[i];

        if (p->used && now - p->last_seen >= l->lost_ms * SCALE_MS) {
            chpp_link_peer_down(s, p, "lost: silent too long");
        }
    }
    chpp_link_eth_probe(s, now);
    timer_mod(l->tick, now + MIN(l->hello_ms, CHPP_LINK_PROBE_MS) * SCALE_MS);
}

/* A netdev link: the device joins the segment (a VF never has one). */
void chpp_link_fabric_realize(ChppHcaState *s, Error **errp)
{
    ChppLink *l = &s->link;

    if (l->nic_conf.peers.ncs[0]) {
        if (!l->hello_ms || l->lost_ms <= l->hello_ms ||
            !l->eth_credits || l->eth_credits > 4096) {
            error_setg(errp, "chpp-hca: link-hello-ms must be non-zero and "
                       "below link-peer-timeout-ms, link-credits 1..4096");
            return;
        }
        /* Random per link start: peers tell a restarted node by it. */
        do {
            l->epoch = g_random_int();
        } while (!l->epoch);
        l->eth = chpp_link_eth_new(&l->nic_conf, DEVICE(s)->id,
                                   s->params.node_id,
                                   &DEVICE(s)->mem_reentrancy_guard,
                                   chpp_link_eth_record, chpp_link_eth_bad,
                                   s);
        l->tick = timer_new_ns(QEMU_CLOCK_REALTIME, chpp_link_tick, s);
        l->next_hello = 0;
        timer_mod(l->tick, qemu_clock_get_ns(QEMU_CLOCK_REALTIME));
    }
}

void chpp_link_fabric_unrealize(ChppHcaState *s)
{
    ChppLink *l = &s->link;

    if (l->tick) {
        timer_free(l->tick);
        l->tick = NULL;
    }
    chpp_link_eth_free(l->eth);
    l->eth = NULL;
}
