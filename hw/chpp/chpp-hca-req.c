/*
 * chpp-hca: the requester: send WQEs -> packets (NAP, PUT, GET, atomics).
 *
 * WQEs are copied out of the ring and validated before anything acts on
 * them; data is gathered through the memory-region checks of
 * chpp-hca-mr.c.  RC WQEs stay in flight until the completer matches their
 * ACK or response; UC and UD complete once their packets are sent.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

static uint32_t chpp_req_mtu(ChppQp *qp)
{
    return chpp_qpt_ud(qp->type) ? CHPP_WIRE_MAX_PAYLOAD
                                   : chpp_mtu_bytes(qp->path_mtu);
}

/* PSNs a WQE uses: one per packet; a GET one per response packet. */
static uint32_t chpp_wqe_npkts(ChppQp *qp, uint8_t opcode, uint32_t length)
{
    if (opcode == CHPP_WQE_ATOMIC_CS || opcode == CHPP_WQE_ATOMIC_FA) {
        return 1;
    }
    return MAX(1, DIV_ROUND_UP(length, chpp_req_mtu(qp)));
}

static void chpp_req_pkt_init(ChppHcaState *s, ChppQp *qp, const ChppWqe *w,
                              ChppPkt *pkt)
{
    *pkt = (ChppPkt) {
        .src_qpn = chpp_qpn(s, qp),
        .src_node = s->params.node_id,
        .msg_len = w->length,
        .imm = w->ctrl.imm,
    };
    if (chpp_qpt_ud(qp->type)) {
        pkt->dst_node = w->ud.dest_node;
        pkt->dst_qpn = w->ud.dest_qpn;
        pkt->dst_vf = w->ud.dest_vf;
        pkt->magic = w->ud.dest_magic;
        pkt->qkey = w->ud.qkey;
        if (w->ud.flags & CHPP_WQE_UD_PEER) {
            /*
             * The permissive LID: the PF at the other end of the link.
             * Without one, a node id no node has: the datagram is lost.
             */
            uint32_t link = chpp_link_status(s);

            pkt->dst_node = link & CHPP_LINK_UP ?
                            link >> CHPP_LINK_PEER_SHIFT : UINT16_MAX;
            pkt->dst_vf = 0;
        }
        if (w->ud.flags & CHPP_WQE_UD_MCAST) {
            /* chpp_route_send() gives a copy to every member's node. */
            pkt->mlid = w->ud.dest_node;
            pkt->dst_node = s->params.node_id;
            pkt->dst_vf = s->func;
            pkt->dst_qpn = CHPP_MCAST_QPN;
            pkt->magic = 0;
        }
    } else {
        pkt->dst_node = qp->dest_node;
        pkt->dst_qpn = qp->dest_qpn;
        pkt->dst_vf = qp->dest_vf;
        pkt->magic = qp->dest_magic;
    }
}

/* Request packets of a WQE: one per MTU, one for a GET or an atomic. */
static uint32_t chpp_req_npkts(ChppQp *qp, uint8_t opcode, uint32_t length)
{
    return chpp_wqe_is_rd_atomic(opcode) ? 1
                                         : chpp_wqe_npkts(qp, opcode, length);
}

/* Bytes of the descriptor the prototype reads for @w (timing mode). */
static uint32_t chpp_req_wqe_bytes(ChppQp *qp, const ChppWqe *w)
{
    uint32_t n = sizeof(struct chpp_wqe_ctrl);

    if (qp->type == CHPP_QPT_UD) {
        n += sizeof(struct chpp_wqe_ud);
    }
    if (w->ctrl.opcode >= CHPP_WQE_PUT) {
        n += sizeof(struct chpp_wqe_raddr);
    }
    if (w->ctrl.opcode == CHPP_WQE_ATOMIC_CS ||
        w->ctrl.opcode == CHPP_WQE_ATOMIC_FA) {
        n += sizeof(struct chpp_wqe_atomic);
    }
    if (w->ctrl.flags & CHPP_WQE_INLINE) {
        return n + sizeof(struct chpp_wqe_inline) + w->inline_len;
    }
    return n + w->num_sge * sizeof(struct chpp_wqe_sge);
}

/*
 * Send the packets of WQE @w (in flight as @e) that were not sent yet,
 * while the frame queue has room.  Returns 1 when all are sent, 0 when the
 * QP must wait for room (it is resumed), -1 with a completion status.
 */
static int chpp_req_send_more(ChppHcaState *s, ChppQp *qp, const ChppWqe *w,
                              ChppInflight *e, uint8_t *status,
                              uint8_t *verr)
{
    uint32_t mtu = chpp_req_mtu(qp);
    uint32_t total = chpp_req_npkts(qp, w->ctrl.opcode, w->length);
    uint8_t op = w->ctrl.opcode;
    ChppPkt pkt;

    chpp_req_pkt_init(s, qp, w, &pkt);
    pkt.rkey = w->raddr.rkey;
    if (chpp_wqe_is_rd_atomic(op)) {
        bool get = op == CHPP_WQE_GET;

        pkt.op = get ? CHPP_OP_READ_REQ :
                 op == CHPP_WQE_ATOMIC_CS ? CHPP_OP_ATOMIC_CS :
                 CHPP_OP_ATOMIC_FA;
        pkt.pkt_type = get ? CHPP_PKT_GET : CHPP_PKT_ATOMIC;
        pkt.vc = get ? CHPP_VC_GET : CHPP_VC_DATA;
        pkt.va = w->raddr.raddr;
        pkt.atomic0 = w->atomic.swap_add;
        pkt.atomic1 = w->atomic.compare;
    } else {
        pkt.op = op == CHPP_WQE_SEND || op == CHPP_WQE_SEND_INV ?
                 CHPP_OP_SEND :
                 op == CHPP_WQE_SEND_IMM ? CHPP_OP_SEND_IMM :
                 op == CHPP_WQE_NAP ? CHPP_OP_NAP :
                 op == CHPP_WQE_PUT ? CHPP_OP_WRITE : CHPP_OP_WRITE_IMM;
        pkt.pkt_type = op >= CHPP_WQE_PUT ? CHPP_PKT_PUT : CHPP_PKT_NAP;
        pkt.vc = CHPP_VC_DATA;
    }
    /* Timing mode: the model's schedule, from the first packet (again). */
    if (chpp_timing_active(s) && !e->tm.t_data) {
        chpp_timing_send(s, &e->tm, op, w->ctrl.flags & CHPP_WQE_INLINE,
                         chpp_req_wqe_bytes(qp, w), w->length);
    }

    while (e->sent < total) {
        uint32_t i = e->sent;
        uint32_t off = i * mtu;
        uint32_t len = chpp_wqe_is_rd_atomic(op) ? 0
                                                 : MIN(mtu, w->length - off);
        bool last = i == total - 1;
        uint8_t *data;

        if (!chpp_tx_room(s, qp)) {
            return 0;
        }
        /* The payload goes straight into the frame. */
        data = chpp_wire_payload(s, &pkt, len);
        if (w->inline_len) {
            memcpy(data, w->inline_data + off, len);
        } else if (len && !chpp_sge_rw(s, qp, w->sge, w->num_sge, off, data,
                                       len, DMA_DIRECTION_TO_DEVICE, verr)) {
            g_free(pkt.frame);
            *status = CHPP_WC_LOC_PROT_ERR;
            return -1;
        }
        pkt.flags = (i == 0 ? CHPP_WIRE_F_FIRST : 0) |
                    (last ? CHPP_WIRE_F_LAST : 0);
        if (last) {
            if (qp->type == CHPP_QPT_RC) {
                pkt.flags |= CHPP_WIRE_F_ACK_REQ;
            }
            if (w->ctrl.flags & CHPP_WQE_SOLICITED) {
                pkt.flags |= CHPP_WIRE_F_SOLICITED;
            }
            if (op == CHPP_WQE_SEND_IMM || op == CHPP_WQE_PUT_IMM) {
                pkt.flags |= CHPP_WIRE_F_IMM;
            }
            if (op == CHPP_WQE_SEND_INV) {
                /* The responder frees the region of this key. */
                pkt.flags |= CHPP_WIRE_F_INV;
                pkt.rkey = w->ctrl.imm;
            }
        }
        pkt.psn = chpp_psn_add(e->first_psn, i);
        pkt.due = e->tm.t_data ? chpp_timing_due(s, &e->tm, off + len) : 0;
        if (!chpp_wqe_is_rd_atomic(op)) {
            pkt.offset = off;
            pkt.va = op >= CHPP_WQE_PUT ? w->raddr.raddr + off : 0;
        }
        if (!chpp_route_send(s, &pkt)) {
            /* Nobody answers on a missing route: RC fails as after retries. */
            if (qp->type == CHPP_QPT_RC) {
                *status = CHPP_WC_RETRY_EXC_ERR;
                *verr = CHPP_VERR_NO_ROUTE;
                return -1;
            }
            chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        }
        e->sent++;
    }
    return 1;
}

/* Complete the WQE being started now (UC/UD, or an RC error at once). */
static void chpp_req_complete_now(ChppHcaState *s, ChppQp *qp,
                                  const ChppWqe *w, uint8_t status,
                                  uint8_t verr)
{
    bool signaled = (w->ctrl.flags & CHPP_WQE_SIGNALED) ||
                    (qp->flags & CHPP_QP_FLAG_SQ_SIG_ALL);

    if (status || signaled) {
        chpp_send_cqe(s, qp, w->ctrl.wr_id,
                      chpp_cqe_send_opcode(w->ctrl.opcode), status, verr,
                      status ? 0 : w->length);
    }
    qp->eng.sq_comp = (qp->eng.sq_comp + 1) & CHPP_IDX_MASK;
}

/* A WQE failed before it was sent: complete it in order, then fail. */
static void chpp_req_wqe_error(ChppHcaState *s, ChppQp *qp, ChppWqe *w,
                               uint8_t status, uint8_t verr)
{
    chpp_guest_error(s, "QP %u: send WQE %u failed (status %u, reason %u)",
                     chpp_qpn(s, qp), w->idx, status, verr);
    qp->sq_ci = (qp->sq_ci + 1) & CHPP_IDX_MASK;
    if (qp->type == CHPP_QPT_RC && qp->eng.infl_count) {
        /* Earlier WQEs are still in flight: queue the error behind them. */
        ChppInflight *e = chpp_sq_infl(qp, qp->eng.infl_count++);

        *e = (ChppInflight) {
            .wr_id = w->ctrl.wr_id,
            .wqe_idx = w->idx,
            .first_psn = qp->sq_psn,
            .last_psn = chpp_psn_add(qp->sq_psn, CHPP_PSN_MASK),
            .opcode = w->ctrl.opcode,
            .flags = w->ctrl.flags,
            .status = status,
            .vendor_err = verr,
        };
        return;
    }
    chpp_req_complete_now(s, qp, w, status, verr);
    chpp_qp_fail(s, qp, qp->type == CHPP_QPT_RC ? CHPP_QPS_ERR
                                                : CHPP_QPS_SQE, 0);
}

static bool chpp_req_blocked(ChppQp *qp)
{
    if (qp->eng.timer_kind == CHPP_TIMER_RNR ||
        qp->eng.infl_count == CHPP_MAX_INFLIGHT) {
        return true;
    }
    /* A queued local error must complete before anything else starts. */
    return qp->eng.infl_count &&
           chpp_sq_infl(qp, qp->eng.infl_count - 1)->status;
}

/*
 * UC and UD WQEs complete, in order, once all their packets are sent; in
 * timing mode, once the model says they are (the QP timer waits).
 */
static void chpp_req_complete_sent(ChppHcaState *s, ChppQp *qp)
{
    while (qp->type != CHPP_QPT_RC && qp->eng.infl_count) {
        ChppInflight *e = chpp_sq_infl(qp, 0);
        bool signaled = (e->flags & CHPP_WQE_SIGNALED) ||
                        (qp->flags & CHPP_QP_FLAG_SQ_SIG_ALL);
        int64_t now;

        if (e->status ||
            e->sent < chpp_req_npkts(qp, e->opcode, e->length)) {
            return;
        }
        now = chpp_timing_now();
        if (e->tm.t_data && e->tm.t_last > now && chpp_timing_active(s)) {
            if (qp->eng.timer_kind != CHPP_TIMER_SENT ||
                qp->eng.timer_deadline != e->tm.t_last) {
                chpp_qp_timer_arm(s, qp, CHPP_TIMER_SENT,
                                  e->tm.t_last - now);
            }
            return;
        }
        if (signaled) {
            chpp_send_cqe(s, qp, e->wr_id, chpp_cqe_send_opcode(e->opcode),
                          0, 0, e->length);
        }
        chpp_sq_pop(qp);
    }
}

/* UC/UD: complete what is sent; a failed WQE at the head fails the QP. */
static void chpp_req_uc_progress(ChppHcaState *s, ChppQp *qp)
{
    ChppInflight *e;

    chpp_req_complete_sent(s, qp);
    e = chpp_sq_head(qp);
    if (e && e->status) {
        chpp_send_cqe(s, qp, e->wr_id, chpp_cqe_send_opcode(e->opcode),
                      e->status, e->vendor_err, 0);
        chpp_sq_pop(qp);
        chpp_qp_fail(s, qp, CHPP_QPS_SQE, 0);
    }
}

/* Sending @e failed: it completes in error once it is the oldest. */
static void chpp_req_entry_failed(ChppHcaState *s, ChppQp *qp,
                                  ChppInflight *e, uint8_t status,
                                  uint8_t verr)
{
    e->status = status;
    e->vendor_err = verr;
    chpp_guest_error(s, "QP %u: send WQE %u failed (status %u, reason %u)",
                     chpp_qpn(s, qp), e->wqe_idx, status, verr);
    if (qp->type == CHPP_QPT_RC) {
        chpp_sq_complete(s, qp, 0, false);
        return;
    }
    chpp_req_uc_progress(s, qp);
}

void chpp_req_sent(ChppHcaState *s, ChppQp *qp)
{
    if (qp->type == CHPP_QPT_RC ||
        (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD)) {
        return;
    }
    chpp_req_uc_progress(s, qp);
    if (qp->state == CHPP_QPS_SQD) {
        chpp_qp_check_drained(s, qp);
    }
    chpp_req_run(s, qp);
}

/*
 * The local ACK timeout counts from the last packet of what is in flight
 * (timing mode: the model sends it later than now).
 */
int64_t chpp_req_ack_wait(ChppHcaState *s, ChppQp *qp)
{
    int64_t wait = chpp_local_ack_timeout_ns(qp->timeout);
    int64_t now;
    uint32_t i;

    /* Only timing mode times packets (tm.t_data): no clock read without. */
    if (!chpp_pf(s)->params.timing.on) {
        return wait;
    }
    now = chpp_timing_now();
    for (i = 0; i < qp->eng.infl_count; i++) {
        const ChppInflight *e = chpp_sq_infl(qp, i);

        if (e->tm.t_data && e->tm.t_last > now) {
            wait = MAX(wait, e->tm.t_last - now +
                       chpp_local_ack_timeout_ns(qp->timeout));
        }
    }
    return wait;
}

/* Continue the WQEs in flight whose packets are not all sent yet. */
static bool chpp_req_continue(ChppHcaState *s, ChppQp *qp, ChppWqe *w)
{
    uint32_t i;

    for (i = 0; i < qp->eng.infl_count; i++) {
        ChppInflight *e = chpp_sq_infl(qp, i);
        uint8_t status = 0, verr = 0;
        int r;

        if (e->status) {
            return false;
        }
        if (e->sent == chpp_req_npkts(qp, e->opcode, e->length)) {
            continue;
        }
        /* The WQE still belongs to the device: read it again. */
        if (!chpp_wqe_fetch(s, qp, e->wqe_idx, w, &status, &verr)) {
            chpp_req_entry_failed(s, qp, e, status, verr);
            return false;
        }
        r = chpp_req_send_more(s, qp, w, e, &status, &verr);
        if (r <= 0) {
            if (r < 0) {
                chpp_req_entry_failed(s, qp, e, status, verr);
            }
            return false;
        }
    }
    chpp_req_complete_sent(s, qp);
    return true;
}

void chpp_req_run(ChppHcaState *s, ChppQp *qp)
{
    /*
     * On the stack (about 3 KiB): a heap block this size took malloc's
     * slow path for every doorbell.
     */
    ChppWqe wqe, *w = &wqe;

    if (qp->state == CHPP_QPS_ERR) {
        chpp_req_flush(s, qp);
        chpp_resp_flush(s, qp);
        return;
    }
    if (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD) {
        return;
    }
    if (!chpp_req_continue(s, qp, w)) {
        return;
    }
    while (qp->state == CHPP_QPS_RTS && qp->sq_ci != qp->eng.sq_limit &&
           !chpp_req_blocked(qp)) {
        uint8_t status = 0, verr = 0;
        uint32_t npkts, psn = qp->sq_psn;
        ChppInflight *e;
        int r;

        if (!chpp_wqe_fetch(s, qp, qp->sq_ci, w, &status, &verr)) {
            chpp_req_wqe_error(s, qp, w, status, verr);
            continue;
        }
        if (chpp_wqe_is_local(w->ctrl.opcode)) {
            /*
             * REG_MR and LOCAL_INV act on this adapter, once every WQE
             * before them completed: their completion stays in order, and
             * what follows them sees their effect.
             */
            if (qp->eng.infl_count) {
                return;
            }
            status = w->ctrl.opcode == CHPP_WQE_REG_MR ?
                     chpp_mr_fast_reg(s, qp->pd, &w->reg, &verr) :
                     chpp_mr_invalidate(s, qp->pd, w->ctrl.imm, &verr);
            if (status) {
                chpp_req_wqe_error(s, qp, w, status, verr);
                continue;
            }
            chpp_count(s, CHPP_CNT_WQES);
            qp->sq_ci = (qp->sq_ci + 1) & CHPP_IDX_MASK;
            w->length = 0;
            chpp_req_complete_now(s, qp, w, 0, 0);
            continue;
        }
        if (chpp_wqe_is_rd_atomic(w->ctrl.opcode) &&
            qp->eng.rd_atomic >= MAX(qp->max_rd_atomic, 1)) {
            return;             /* initiator depth reached */
        }
        if ((w->ctrl.flags & CHPP_WQE_FENCE) && qp->eng.rd_atomic) {
            return;             /* fence: earlier GET/atomics first */
        }
        npkts = chpp_wqe_npkts(qp, w->ctrl.opcode, w->length);
        e = chpp_sq_infl(qp, qp->eng.infl_count++);
        *e = (ChppInflight) {
            .wr_id = w->ctrl.wr_id,
            .wqe_idx = w->idx,
            .first_psn = psn,
            .last_psn = chpp_psn_add(psn, npkts - 1),
            .length = w->length,
            .opcode = w->ctrl.opcode,
            .flags = w->ctrl.flags,
        };
        chpp_count(s, CHPP_CNT_WQES);
        qp->sq_ci = (qp->sq_ci + 1) & CHPP_IDX_MASK;
        if (!chpp_qpt_ud(qp->type)) {
            qp->sq_psn = chpp_psn_add(psn, npkts);
        }
        if (chpp_wqe_is_rd_atomic(w->ctrl.opcode)) {
            qp->eng.rd_atomic++;
        }
        if (qp->type == CHPP_QPT_RC &&
            qp->eng.timer_kind == CHPP_TIMER_NONE && qp->timeout) {
            chpp_qp_timer_arm(s, qp, CHPP_TIMER_RETRANSMIT,
                              chpp_local_ack_timeout_ns(qp->timeout));
        }
        r = chpp_req_send_more(s, qp, w, e, &status, &verr);
        if (r < 0) {
            chpp_req_entry_failed(s, qp, e, status, verr);
            return;
        }
        if (e->tm.t_data && qp->eng.timer_kind == CHPP_TIMER_RETRANSMIT) {
            chpp_qp_timer_arm(s, qp, CHPP_TIMER_RETRANSMIT,
                              chpp_req_ack_wait(s, qp));
        }
        chpp_req_complete_sent(s, qp);
        if (r == 0) {
            return;             /* resumed when the queues drain */
        }
    }
}

/*
 * The WQEs a loaded QP has in flight: the next ones from eng.sq_comp, in
 * order, each no further sent or placed than it has packets and bytes,
 * and one chpp_req_run() could have started (or an error queued behind
 * others, which needs only a completion status).
 */
int chpp_req_check_load(ChppHcaState *s, ChppQp *qp)
{
    uint32_t qpn = chpp_qpn(s, qp);
    uint32_t i;

    for (i = 0; i < qp->eng.infl_count; i++) {
        uint32_t slot = (qp->eng.infl_head + i) % CHPP_MAX_INFLIGHT;
        const ChppInflight *e = &qp->eng.inflight[slot];
        uint32_t npkts = chpp_req_npkts(qp, e->opcode, e->length);

        if (e->wqe_idx != ((qp->eng.sq_comp + i) & CHPP_IDX_MASK)) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].wqe_idx 0x%x, not "
                               "WQE 0x%x", qpn, slot, e->wqe_idx,
                               (qp->eng.sq_comp + i) & CHPP_IDX_MASK);
        }
        if (e->first_psn > CHPP_PSN_MASK || e->last_psn > CHPP_PSN_MASK) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].first_psn 0x%x or "
                               "last_psn 0x%x beyond 24 bits", qpn, slot,
                               e->first_psn, e->last_psn);
        }
        if (e->length > CHPP_MAX_MSG_SIZE) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].length %u", qpn,
                               slot, e->length);
        }
        if (e->sent > npkts) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].sent %u of %u "
                               "packets", qpn, slot, e->sent, npkts);
        }
        if (e->done > e->length) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].done %u of %u "
                               "bytes", qpn, slot, e->done, e->length);
        }
        if (e->status) {
            /* CHPP_WC_GENERAL_ERR is the last completion status. */
            if (e->status > CHPP_WC_GENERAL_ERR) {
                return chpp_refuse(s, "QP %u: eng.inflight[%u].status %u",
                                   qpn, slot, e->status);
            }
            continue;
        }
        if (!chpp_wqe_opcode_ok(qp->type, e->opcode)) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].opcode %u", qpn,
                               slot, e->opcode);
        }
        if (e->flags & ~(CHPP_WQE_SIGNALED | CHPP_WQE_SOLICITED |
                         CHPP_WQE_FENCE | CHPP_WQE_INLINE)) {
            return chpp_refuse(s, "QP %u: eng.inflight[%u].flags 0x%x", qpn,
                               slot, e->flags);
        }
    }
    return 0;
}

/* Go back N: every WQE in flight is sent again, from the oldest. */
void chpp_req_retransmit(ChppHcaState *s, ChppQp *qp)
{
    uint32_t i;

    if (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD) {
        return;
    }
    for (i = 0; i < qp->eng.infl_count; i++) {
        ChppInflight *e = chpp_sq_infl(qp, i);

        if (e->status) {
            break;
        }
        chpp_count(s, CHPP_CNT_RETRANSMITS);
        e->sent = 0;
        e->done = 0;
        memset(&e->tm, 0, sizeof(e->tm));
    }
    if (qp->eng.infl_count && qp->timeout) {
        chpp_qp_timer_arm(s, qp, CHPP_TIMER_RETRANSMIT,
                          chpp_local_ack_timeout_ns(qp->timeout));
    }
    chpp_req_run(s, qp);
    if (qp->eng.infl_count && qp->timeout &&
        qp->eng.timer_kind == CHPP_TIMER_RETRANSMIT) {
        chpp_qp_timer_arm(s, qp, CHPP_TIMER_RETRANSMIT,
                          chpp_req_ack_wait(s, qp));
    }
}

/* Flush every send WQE the device owns, oldest first. */
void chpp_req_flush(ChppHcaState *s, ChppQp *qp)
{
    while (qp->eng.infl_count) {
        ChppInflight *e = chpp_sq_infl(qp, 0);

        chpp_send_cqe(s, qp, e->wr_id, chpp_cqe_send_opcode(e->opcode),
                      e->status ? e->status : CHPP_WC_WR_FLUSH_ERR,
                      e->status ? e->vendor_err : CHPP_VERR_FLUSH, 0);
        chpp_sq_pop(qp);
    }
    qp->eng.rd_atomic = 0;
    while (qp->sq_ci != qp->sq_pi) {
        struct chpp_wqe_ctrl ctrl = {};
        uint64_t off = (uint64_t)(qp->sq_ci & ((1u << qp->log_sq_size) - 1))
                       << qp->log_sq_stride;

        chpp_ring_rw(s, &qp->sq, off, &ctrl, sizeof(ctrl),
                     DMA_DIRECTION_TO_DEVICE);
        chpp_send_cqe(s, qp, le64_to_cpu(ctrl.wr_id),
                      chpp_cqe_send_opcode(ctrl.opcode), CHPP_WC_WR_FLUSH_ERR,
                      CHPP_VERR_FLUSH, 0);
        qp->sq_ci = (qp->sq_ci + 1) & CHPP_IDX_MASK;
        qp->eng.sq_comp = qp->sq_ci;
    }
    qp->eng.sq_comp = qp->sq_ci;
    qp->eng.sq_limit = qp->sq_ci;
}
