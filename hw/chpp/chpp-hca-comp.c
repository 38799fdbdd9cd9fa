/*
 * chpp-hca: the completer: ACKs, NAKs, GET and atomic responses, and the
 * retransmission timeout.
 *
 * Each tells which in-flight WQEs are done; chpp-hca-sq.c completes them
 * in posting order.  The completer restarts the requester when progress
 * frees room, and has it retransmit after a NAK or a timeout.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

static void chpp_comp_progress(ChppHcaState *s, ChppQp *qp)
{
    if (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD) {
        return;
    }
    /* A queued local error may have reached the head. */
    if (chpp_sq_head(qp) && chpp_sq_head(qp)->status) {
        chpp_sq_complete(s, qp, 0, false);
        return;
    }
    /* Both retry counts are per WQE (IB): progress restores them. */
    qp->eng.retry_left = qp->retry_cnt;
    qp->eng.rnr_left = qp->rnr_retry;
    if (!qp->eng.infl_count) {
        if (qp->eng.timer_kind == CHPP_TIMER_RETRANSMIT) {
            chpp_qp_timer_stop(s, qp);
        }
    } else if (qp->timeout && qp->eng.timer_kind != CHPP_TIMER_RNR) {
        chpp_qp_timer_arm(s, qp, CHPP_TIMER_RETRANSMIT,
                          chpp_req_ack_wait(s, qp));
    }
    chpp_qp_check_drained(s, qp);
    chpp_req_run(s, qp);
}

/* Place a GET response in the WQE's scatter list. */
static void chpp_comp_read_resp(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    ChppWqe wqe, *w = &wqe;     /* on the stack, as in chpp_req_run() */
    ChppInflight *e;
    uint8_t status = 0, verr = 0;
    uint32_t mtu;
    uint64_t off;

    /* Earlier sends and PUTs are acknowledged implicitly. */
    while ((e = chpp_sq_head(qp)) && !chpp_wqe_is_rd_atomic(e->opcode) &&
           !e->status && chpp_psn_diff(e->last_psn, pkt->psn) < 0) {
        chpp_sq_success(s, qp);
    }
    e = chpp_sq_head(qp);
    if (!e || e->status) {
        chpp_sq_complete(s, qp, 0, false);
        return;
    }
    if (e->opcode != CHPP_WQE_GET || pkt->offset != e->done ||
        chpp_psn_diff(pkt->psn, e->first_psn) < 0 ||
        chpp_psn_diff(pkt->psn, e->last_psn) > 0 ||
        (uint64_t)pkt->offset + pkt->len > e->length) {
        /* Not the response we wait for: go-back-N will ask again. */
        trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn,
                                       "unexpected GET response");
        return;
    }
    /*
     * Both ends must share the path MTU (IB): a response cut by another
     * MTU would leave the two ends' PSNs apart without a word.
     */
    mtu = chpp_mtu_bytes(qp->path_mtu);
    off = (uint64_t)chpp_psn_diff(pkt->psn, e->first_psn) * mtu;
    if (pkt->offset != off || pkt->len != MIN(mtu, e->length - off)) {
        chpp_sq_fail_head(s, qp, CHPP_WC_BAD_RESP_ERR,
                            CHPP_VERR_BAD_RESPONSE);
        return;
    }
    if (!chpp_wqe_fetch(s, qp, e->wqe_idx, w, &status, &verr)) {
        chpp_sq_fail_head(s, qp, status, verr);
        return;
    }
    if (pkt->len && !chpp_sge_rw(s, qp, w->sge, w->num_sge, pkt->offset,
                                 pkt->payload, pkt->len,
                                 DMA_DIRECTION_FROM_DEVICE, &verr)) {
        chpp_sq_fail_head(s, qp, CHPP_WC_LOC_PROT_ERR, verr);
        return;
    }
    e->done += pkt->len;
    if (e->done == e->length) {
        chpp_sq_success(s, qp);
    }
    chpp_comp_progress(s, qp);
}

static void chpp_comp_atomic_ack(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    ChppWqe wqe, *w = &wqe;     /* on the stack, as in chpp_req_run() */
    ChppInflight *e;
    uint8_t status = 0, verr = 0;
    uint64_t orig = cpu_to_le64(pkt->atomic0);

    chpp_sq_complete(s, qp, chpp_psn_add(pkt->psn, CHPP_PSN_MASK), true);
    e = chpp_sq_head(qp);
    if (!e || e->first_psn != pkt->psn ||
        (e->opcode != CHPP_WQE_ATOMIC_CS && e->opcode != CHPP_WQE_ATOMIC_FA)) {
        trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn,
                                       "unexpected atomic response");
        return;
    }
    if (!chpp_wqe_fetch(s, qp, e->wqe_idx, w, &status, &verr)) {
        chpp_sq_fail_head(s, qp, status, verr);
        return;
    }
    if (!chpp_sge_rw(s, qp, w->sge, w->num_sge, 0, &orig, sizeof(orig),
                     DMA_DIRECTION_FROM_DEVICE, &verr)) {
        chpp_sq_fail_head(s, qp, CHPP_WC_LOC_PROT_ERR, verr);
        return;
    }
    chpp_sq_success(s, qp);
    chpp_comp_progress(s, qp);
}

static uint8_t chpp_nak_status(uint8_t syndrome)
{
    switch (syndrome) {
    case CHPP_NAK_INV_REQ:
        return CHPP_WC_REM_INV_REQ_ERR;
    case CHPP_NAK_REM_ACCESS:
        return CHPP_WC_REM_ACCESS_ERR;
    default:
        return CHPP_WC_REM_OP_ERR;
    }
}

static void chpp_comp_nak(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    ChppInflight *e;

    /* A NAK acknowledges everything before its PSN. */
    chpp_sq_complete(s, qp, pkt->psn, false);
    e = chpp_sq_head(qp);
    if (!e || qp->state == CHPP_QPS_ERR ||
        chpp_psn_diff(pkt->psn, e->first_psn) < 0) {
        return;
    }
    switch (pkt->syndrome) {
    case CHPP_NAK_PSN_SEQ:
        if (qp->eng.timer_kind == CHPP_TIMER_RNR) {
            return;     /* the rest of an RNR-refused message: wait */
        }
        if (!qp->eng.retry_left) {
            chpp_sq_fail_head(s, qp, CHPP_WC_RETRY_EXC_ERR,
                                CHPP_VERR_TIMEOUT);
            return;
        }
        qp->eng.retry_left--;
        chpp_req_retransmit(s, qp);
        return;
    case CHPP_NAK_RNR:
        chpp_count(s, CHPP_CNT_RNR_NAKS);
        if (qp->rnr_retry != 7 && !qp->eng.rnr_left) {
            chpp_sq_fail_head(s, qp, CHPP_WC_RNR_RETRY_EXC_ERR,
                                CHPP_VERR_RNR);
            return;
        }
        if (qp->rnr_retry != 7) {
            qp->eng.rnr_left--;
        }
        chpp_qp_timer_arm(s, qp, CHPP_TIMER_RNR,
                          chpp_rnr_timer_ns(pkt->rnr_timer));
        return;
    default:
        chpp_sq_fail_head(s, qp, chpp_nak_status(pkt->syndrome),
                            pkt->syndrome == CHPP_NAK_REM_ACCESS ?
                            CHPP_VERR_RKEY : CHPP_VERR_REMOTE_INVALID);
    }
}

void chpp_comp_packet(ChppHcaState *s, ChppPkt *pkt)
{
    ChppQp *qp = chpp_qp_lookup(s, pkt->dst_qpn);

    if (!qp || qp->type != CHPP_QPT_RC ||
        (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD) ||
        pkt->src_node != qp->dest_node || pkt->src_qpn != qp->dest_qpn ||
        pkt->src_vf != qp->dest_vf) {
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn,
                                       "response for no connection");
        return;
    }
    if (pkt->magic != qp->magic) {
        chpp_count(s, CHPP_CNT_PKTS_DROPPED);
        chpp_count(s, CHPP_CNT_MAGIC_DROPS);
        trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn,
                                       "QP magic mismatch");
        if (pkt->from_link) {
            chpp_link_magic_miss(s, pkt->src_node, pkt->dst_qpn,
                                 pkt->magic);
        }
        return;
    }
    switch (pkt->op) {
    case CHPP_OP_ACK:
        chpp_sq_complete(s, qp, pkt->psn, true);
        chpp_comp_progress(s, qp);
        break;
    case CHPP_OP_NAK:
        chpp_comp_nak(s, qp, pkt);
        break;
    case CHPP_OP_READ_RESP:
        chpp_comp_read_resp(s, qp, pkt);
        break;
    case CHPP_OP_ATOMIC_ACK:
        chpp_comp_atomic_ack(s, qp, pkt);
        break;
    }
}

/* No response within the local ACK timeout. */
void chpp_comp_timeout(ChppHcaState *s, ChppQp *qp)
{
    if (!qp->eng.infl_count ||
        (qp->state != CHPP_QPS_RTS && qp->state != CHPP_QPS_SQD)) {
        return;
    }
    if (!qp->eng.retry_left) {
        chpp_sq_fail_head(s, qp, CHPP_WC_RETRY_EXC_ERR, CHPP_VERR_TIMEOUT);
        return;
    }
    qp->eng.retry_left--;
    chpp_req_retransmit(s, qp);
}
