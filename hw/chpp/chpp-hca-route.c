/*
 * chpp-hca: where frames go.  A packet for this node's own functions is
 * queued for them as an encoded frame (loopback), one for another node
 * goes to the link; each function's engine takes received frames here,
 * loopback and link, VC0 first.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

/*
 * Timing mode: a loopback frame arrives when the model says its data is
 * in the target's memory (pkt->due).  The requests a QP sends arrive in
 * the order it sent them, as on a wire, and so do its responses (ACKs,
 * NAKs, GET and atomic responses): never before the previous one.
 */
static void chpp_route_timed(ChppHcaState *s, ChppHcaState *to, ChppPkt *pkt,
                             GByteArray *frame)
{
    ChppQp *qp = chpp_qp_lookup(s, pkt->src_qpn);
    int64_t due = MAX(pkt->due, chpp_timing_now());
    bool resp = pkt->op == CHPP_OP_ACK || pkt->op == CHPP_OP_NAK ||
                pkt->op == CHPP_OP_ATOMIC_ACK ||
                pkt->op == CHPP_OP_READ_RESP;

    if (qp) {
        due = MAX(due, qp->eng.tx_due[resp]);
        qp->eng.tx_due[resp] = due;
    }
    chpp_timing_rx_push(to, pkt->vc, frame, due);
    chpp_engine_kick_at(to, due);
}

/*
 * A node reaches itself by loopback and its peers over the link.  The
 * packet's source is set by the caller.
 */
static bool chpp_route_frame(ChppHcaState *s, ChppPkt *pkt)
{
    size_t room = chpp_wire_headroom(s, pkt);
    size_t len = room + chpp_wire_len(pkt);
    uint8_t *frame = pkt->frame ? pkt->frame : g_malloc(len);

    /* The frame belongs to the queues now. */
    pkt->frame = NULL;
    chpp_wire_encode_to(pkt, frame + room);
    if (!room) {
        /* Loopback, to any function of this adapter (DST-VF). */
        ChppHcaState *to = chpp_function(chpp_pf(s), pkt->dst_vf);

        if (!to) {
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
            trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn,
                                           "no such function");
            g_free(frame);
            return true;
        }
        chpp_pf(s)->tx_queued++;
        if (chpp_timing_active(s)) {
            chpp_route_timed(s, to, pkt, g_byte_array_new_take(frame, len));
        } else {
            g_queue_push_tail(to->wire_rx[pkt->vc],
                              g_byte_array_new_take(frame, len));
            chpp_engine_kick(to);
        }
    } else if (!chpp_link_send(chpp_pf(s), pkt->dst_node,
                               pkt->vc,
                               g_byte_array_new_take(frame, len))) {
        /* Frames for the link carry room for the record header. */
        trace_chpp_hca_err_pkt_no_route(s->func, pkt->dst_node);
        return false;
    }
    chpp_count(s, CHPP_CNT_PKTS_TX);
    trace_chpp_hca_pkt_tx(s->func, pkt->vc, pkt->op, pkt->src_qpn,
                          pkt->dst_qpn, pkt->psn, pkt->len);
    return true;
}

/*
 * The channel of a packet of class @cls (CHPP_VC_DATA or CHPP_VC_GET) for
 * node @dst: Dest-Mod over the data VCs, GETs on the GET VC after them.
 */
static uint8_t chpp_route_vc(ChppHcaState *s, uint8_t cls, uint16_t dst)
{
    unsigned data = chpp_num_vcs(s) - 1;

    return cls == CHPP_VC_GET ? data : dst % data;
}

/*
 * @pkt->vc holds its class; it leaves on its channel.  Senders reuse a
 * packet for the next one: the class stays.
 */
static bool chpp_route_one(ChppHcaState *s, ChppPkt *pkt)
{
    uint8_t cls = pkt->vc;
    bool sent;

    pkt->vc = chpp_route_vc(s, cls, pkt->dst_node);
    pkt->src_node = s->params.node_id;
    pkt->src_vf = s->func;
    sent = chpp_route_frame(s, pkt);
    pkt->vc = cls;
    return sent;
}

/*
 * A multicast datagram (dst_qpn CHPP_MCAST_QPN): one copy to every
 * function of this node, each delivering it to its QPs attached to the
 * MLID, and one to each peer's PF that is up, which gives its VFs theirs
 * (chpp_route_fan_out()).  The payload is encoded into each copy.
 */
static bool chpp_route_mcast(ChppHcaState *s, ChppPkt *pkt)
{
    ChppHcaState *pf = chpp_pf(s);
    uint16_t nodes[CHPP_LINK_PEERS_MAX];
    unsigned fn, i, n = chpp_link_nodes_up(s, nodes, ARRAY_SIZE(nodes));
    uint8_t *frame = pkt->frame;

    for (fn = 0; fn <= CHPP_MAX_VFS; fn++) {
        if (chpp_function(pf, fn)) {
            pkt->frame = NULL;
            pkt->dst_node = s->params.node_id;
            pkt->dst_vf = fn;
            chpp_route_one(s, pkt);
        }
    }
    for (i = 0; i < MIN(n, ARRAY_SIZE(nodes)); i++) {
        pkt->frame = NULL;
        pkt->dst_node = nodes[i];
        pkt->dst_vf = 0;
        chpp_route_one(s, pkt);
    }
    g_free(frame);
    pkt->frame = NULL;
    return true;
}

bool chpp_route_send(ChppHcaState *s, ChppPkt *pkt)
{
    if (pkt->dst_qpn == CHPP_MCAST_QPN) {
        return chpp_route_mcast(s, pkt);
    }
    return chpp_route_one(s, pkt);
}

void chpp_route_fan_out(ChppHcaState *s, ChppPkt *pkt)
{
    unsigned fn;

    for (fn = 1; fn <= CHPP_MAX_VFS; fn++) {
        if (chpp_function(s, fn)) {
            ChppPkt copy = *pkt;

            /* A loopback frame that keeps its sender on the peer. */
            copy.frame = NULL;
            copy.keep = NULL;
            copy.dst_node = s->params.node_id;
            copy.dst_vf = fn;
            chpp_route_frame(s, &copy);
        }
    }
}

/*
 * Loopback frames first, VC by VC (decoded here); then the link's, which
 * were decoded on arrival, in the order they came.
 */
ChppPkt *chpp_route_next(ChppHcaState *s)
{
    GByteArray *due;
    uint8_t dvc;
    unsigned vc;

    /*
     * Timing mode: frames whose time has come join the queues (all of
     * them once the model is off: the VM stops).
     */
    if (s->timed_rx->length) {
        int64_t now = chpp_timing_active(s) ? chpp_timing_now() : INT64_MAX;

        while ((due = chpp_timing_rx_pop(s, now, &dvc))) {
            g_queue_push_tail(s->wire_rx[dvc], due);
        }
    }

    /* Loopback frames, VC by VC. */
    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *ba;
        ChppPkt *pkt = NULL;

        while (s->wire_rx[vc]->length && !pkt &&
               (ba = g_queue_pop_head(s->wire_rx[vc]))) {
            chpp_tx_dequeued(s);
            chpp_count(s, CHPP_CNT_PKTS_RX);
            /* Loopback: the payload stays in the frame, no second copy. */
            pkt = chpp_wire_decode_keep(s, ba->data, ba->len, ba);
            if (!pkt) {
                g_byte_array_unref(ba);
            }
        }
        if (pkt) {
            trace_chpp_hca_pkt_rx(s->func, pkt->vc, pkt->op, pkt->src_qpn,
                                  pkt->dst_qpn, pkt->psn, pkt->len);
            return pkt;
        }
    }
    /*
     * The link's frames in the order they came, whatever their VC: a QP's
     * requests travel on two (GETs on the last), and its responder must
     * see them in PSN order.
     */
    if (chpp_link_rx_ready(s)) {
        ChppPkt *first = NULL;
        unsigned fvc = 0;

        for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
            ChppPkt *head = s->link_rx[vc]->length ?
                            g_queue_peek_head(s->link_rx[vc]) : NULL;

            if (head && (!first || head->rx_seq < first->rx_seq)) {
                first = head;
                fvc = vc;
            }
        }
        if (first) {
            g_queue_pop_head(s->link_rx[fvc]);
            chpp_link_consumed(chpp_pf(s), first->src_node, fvc);
            trace_chpp_hca_pkt_rx(s->func, first->vc, first->op,
                                  first->src_qpn, first->dst_qpn, first->psn,
                                  first->len);
            return first;
        }
    }
    return NULL;
}

void chpp_route_reset(ChppHcaState *s)
{
    GByteArray *due;
    uint8_t dvc;
    unsigned vc;

    while ((due = chpp_timing_rx_pop(s, INT64_MAX, &dvc))) {
        g_byte_array_unref(due);
        chpp_tx_dequeued(s);
    }

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        GByteArray *ba;

        while ((ba = g_queue_pop_head(s->wire_rx[vc]))) {
            g_byte_array_unref(ba);
            chpp_tx_dequeued(s);
        }
    }
}
