/*
 * chpp-hca: the responder: request packets -> receive WQEs, memory
 * writes, GET responses, atomics, ACKs and NAKs.
 *
 * A GET is executed here as a PUT back to the requester (seed 004): the
 * responses travel on the data virtual channel while GET requests have
 * their own, so GETs in both directions cannot deadlock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

static void chpp_resp_drop(ChppHcaState *s, ChppPkt *pkt, const char *why)
{
    chpp_count(s, CHPP_CNT_PKTS_DROPPED);
    trace_chpp_hca_err_pkt_dropped(s->func, pkt->dst_qpn, why);
}

static void chpp_resp_ack_send(ChppHcaState *s, ChppQp *qp);

/* Answer @req (ACK, NAK or atomic ACK) from @qp. */
static void chpp_resp_reply(ChppHcaState *s, ChppQp *qp, ChppPkt *req,
                            uint8_t op, uint32_t psn, uint8_t syndrome,
                            uint64_t atomic)
{
    ChppPkt pkt = {
        .vc = CHPP_VC_DATA,
        .pkt_type = CHPP_PKT_ACK,
        .op = op,
        .syndrome = syndrome,
        .magic = qp->dest_magic,
        .src_qpn = chpp_qpn(s, qp),
        .dst_node = req->src_node,
        .dst_qpn = req->src_qpn,
        .dst_vf = req->src_vf,
        .psn = psn,
        .rnr_timer = qp->min_rnr_timer,
        .atomic0 = atomic,
    };

    if (chpp_timing_active(s)) {
        pkt.due = op == CHPP_OP_ATOMIC_ACK ? chpp_timing_atomic_due(s)
                                           : chpp_timing_ack_due(s);
    }

    /* An ACK owed for earlier requests goes first: answers stay in order. */
    if (qp->eng.ack_owed) {
        chpp_resp_ack_send(s, qp);
    }
    trace_chpp_hca_resp_reply(s->func, chpp_qpn(s, qp), op, psn, syndrome);
    chpp_route_send(s, &pkt);
}

/* The ACK @qp owes, to its connected QP (only RC requests are ACKed). */
static void chpp_resp_ack_send(ChppHcaState *s, ChppQp *qp)
{
    ChppPkt req = {
        .src_node = qp->dest_node,
        .src_qpn = qp->dest_qpn,
        .src_vf = qp->dest_vf,
    };

    qp->eng.ack_owed = false;
    chpp_resp_reply(s, qp, &req, CHPP_OP_ACK, qp->eng.ack_psn, 0, 0);
}

/*
 * ACK request @pkt of @qp.  An ACK is cumulative (the requester completes
 * every WQE it covers): the requests of one engine run get one ACK per
 * QP, for the last of them, at the end of the run (chpp_resp_acks_send())
 * or before any other answer of the QP.  In timing mode each goes at its
 * own time.
 */
static void chpp_resp_ack(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    /*
     * A QP is listed once per run, however often its ACK is sent before
     * the end (a peer alternating new and duplicate requests).
     */
    if (chpp_timing_active(s) || !s->engine_running ||
        (!qp->eng.ack_listed && s->n_acks_owed == s->params.num_qps)) {
        chpp_resp_reply(s, qp, pkt, CHPP_OP_ACK, pkt->psn, 0, 0);
        return;
    }
    if (!qp->eng.ack_listed) {
        qp->eng.ack_listed = true;
        s->acks_owed[s->n_acks_owed++] = chpp_qpn(s, qp);
    }
    qp->eng.ack_owed = true;
    qp->eng.ack_psn = pkt->psn;
}

void chpp_resp_acks_send(ChppHcaState *s)
{
    uint32_t i;

    for (i = 0; i < s->n_acks_owed; i++) {
        ChppQp *qp = &s->qps[s->acks_owed[i]];

        /* A QP that left the states that answer since owes nothing. */
        if (qp->eng.ack_owed && chpp_qp_receives(qp)) {
            chpp_resp_ack_send(s, qp);
        }
        qp->eng.ack_owed = false;
        qp->eng.ack_listed = false;
    }
    s->n_acks_owed = 0;
}

static void chpp_resp_nak(ChppHcaState *s, ChppQp *qp, ChppPkt *req,
                          uint8_t syndrome)
{
    chpp_resp_reply(s, qp, req, CHPP_OP_NAK, req->psn, syndrome, 0);
}

/* Copy receive WQE @idx out of the RQ and validate its segment list. */
bool chpp_rwqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx,
                     uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                     uint32_t *capacity)
{
    uint32_t stride = 1u << qp->log_rq_stride;
    uint64_t off = (uint64_t)(idx & ((1u << qp->log_rq_size) - 1))
                   << qp->log_rq_stride;
    uint8_t buf[1 << CHPP_MAX_WQE_SHIFT];

    *wr_id = 0;
    if (!chpp_ring_rw(s, &qp->rq, off, buf, stride,
                      DMA_DIRECTION_TO_DEVICE)) {
        return false;
    }
    return chpp_rwqe_parse(buf, stride, wr_id, sge, num_sge, capacity);
}

/*
 * Where @qp's receive WQEs come from: its RQ, or (CHPP_QP_FLAG_SRQ) the
 * SRQ it is attached to, which exists while the QP is out of RESET
 * (HW2SW_SRQ is refused while QPs are attached).
 */
static ChppSrq *chpp_qp_srq(ChppHcaState *s, ChppQp *qp)
{
    return (qp->flags & CHPP_QP_FLAG_SRQ) ? chpp_srq_get(s, qp->srqn) : NULL;
}

static bool chpp_recv_empty(ChppHcaState *s, ChppQp *qp)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);

    return srq ? chpp_srq_empty(srq) : qp->rq_ci == qp->rq_pi;
}

/* Take @qp's next receive WQE: 0, -EAGAIN (none), -EIO (SRQ in error). */
static int chpp_recv_take(ChppHcaState *s, ChppQp *qp, uint32_t *idx)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);

    if (srq) {
        if (srq->state == CHPP_RES_ERROR) {
            return -EIO;
        }
        return chpp_srq_take(s, srq, idx) ? 0 : -EAGAIN;
    }
    if (qp->rq_ci == qp->rq_pi) {
        return -EAGAIN;
    }
    *idx = qp->rq_ci;
    qp->rq_ci = (qp->rq_ci + 1) & CHPP_IDX_MASK;
    return 0;
}

/*
 * Read receive WQE @idx of @qp: 0, -EINVAL (a bad WQE; for an RQ also one
 * that cannot be read), -EIO (the SRQ's ring cannot be read: the SRQ is in
 * error).
 */
static int chpp_recv_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx,
                           uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                           uint32_t *capacity)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);

    if (srq) {
        return chpp_srq_wqe_fetch(s, srq, idx, wr_id, sge, num_sge,
                                  capacity);
    }
    return chpp_rwqe_fetch(s, qp, idx, wr_id, sge, num_sge, capacity) ?
           0 : -EINVAL;
}

/*
 * The receive WQE of the message @qp is filling (eng->recv_wqe_idx), as
 * chpp_recv_fetch().  An SRQ's WQE is read once, at the first packet, and
 * kept in the engine: its slot may be posted again while the message goes
 * on, so the free index need not wait for the message's last packet.
 */
static int chpp_recv_msg_fetch(ChppHcaState *s, ChppQp *qp, uint64_t *wr_id,
                               ChppSge *sge, uint32_t *num_sge,
                               uint32_t *capacity)
{
    ChppQpEngine *eng = &qp->eng;
    int ret;

    if (chpp_srq_wqe_copied(qp)) {
        *wr_id = eng->recv_wr_id;
        *num_sge = eng->recv_num_sge;
        memcpy(sge, eng->recv_sge, sizeof(ChppSge) * eng->recv_num_sge);
        *capacity = chpp_sge_capacity(sge, *num_sge);
        return 0;
    }
    ret = chpp_recv_fetch(s, qp, eng->recv_wqe_idx, wr_id, sge, num_sge,
                          capacity);
    if (!ret && chpp_qp_srq(s, qp)) {
        eng->recv_cached = true;
        eng->recv_wr_id = *wr_id;
        eng->recv_num_sge = *num_sge;
        memcpy(eng->recv_sge, sge, sizeof(ChppSge) * *num_sge);
    }
    return ret;
}

/* The PD the receive WQEs' lkeys belong to: the SRQ's, or the QP's. */
static uint32_t chpp_recv_pd(ChppHcaState *s, ChppQp *qp)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);

    return srq ? srq->pd : qp->pd;
}

/*
 * The SRQ @srqn is in error: every QP attached to it that can still
 * receive goes to ERR (flushing the WQE it had taken, LAST_WQE_REACHED).
 */
static void chpp_resp_srq_broken(ChppHcaState *s, uint32_t srqn)
{
    uint32_t i;

    for (i = 0; i < s->params.num_qps; i++) {
        ChppQp *qp = &s->qps[i];

        if (qp->state != CHPP_QPS_RESET && qp->state != CHPP_QPS_ERR &&
            (qp->flags & CHPP_QP_FLAG_SRQ) && qp->srqn == srqn) {
            chpp_qp_set_error(s, qp, CHPP_QPS_ERR);
        }
    }
}

/*
 * A message for @qp found its SRQ in error, or broke it: RC NAKs it (the
 * sender completes with REM_OP_ERR); the QPs of the SRQ go to ERR.
 */
static void chpp_resp_srq_lost(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    chpp_guest_note(s, "QP %u: request PSN %u from %u/%u refused: SRQ %u is "
                    "in error", chpp_qpn(s, qp), pkt->psn, pkt->src_node,
                    pkt->src_qpn, qp->srqn);
    qp->eng.recv_active = false;
    if (qp->type == CHPP_QPT_RC) {
        chpp_resp_nak(s, qp, pkt, CHPP_NAK_REM_OP);
    }
    chpp_resp_srq_broken(s, qp->srqn);
}

/*
 * @qp took a receive WQE or let one go: an SRQ's consumer record says so;
 * a record that cannot be written breaks the SRQ.
 */
static void chpp_recv_done(ChppHcaState *s, ChppQp *qp)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);

    if (srq && !chpp_srq_update(s, srq)) {
        chpp_resp_srq_broken(s, qp->srqn);
    }
}

static void chpp_recv_cqe(ChppHcaState *s, ChppQp *qp, uint64_t wr_id,
                          uint8_t opcode, uint8_t status, uint8_t verr,
                          uint32_t byte_len, ChppPkt *pkt)
{
    bool sol = pkt && (pkt->flags & CHPP_WIRE_F_SOLICITED);
    struct chpp_cqe cqe = {
        .wr_id = cpu_to_le64(wr_id),
        .byte_len = cpu_to_le32(byte_len),
        .qpn = cpu_to_le32(chpp_qpn(s, qp)),
        .vendor_err = verr,
        .opcode = opcode,
        .status = status,
    };

    if (pkt && !status) {
        cqe.src_qp = cpu_to_le32(pkt->src_qpn);
        cqe.src_node = cpu_to_le16(pkt->src_node);
        cqe.src_vf = pkt->src_vf;
        if (pkt->flags & CHPP_WIRE_F_IMM) {
            cqe.imm = cpu_to_le32(pkt->imm);
            cqe.flags |= CHPP_CQE_FLAG_IMM;
        }
        if (pkt->flags & CHPP_WIRE_F_INV) {
            cqe.imm = cpu_to_le32(pkt->rkey);
            cqe.flags |= CHPP_CQE_FLAG_INV;
        }
        if (sol) {
            cqe.flags |= CHPP_CQE_FLAG_SOLICITED;
        }
    }
    trace_chpp_hca_recv_cqe(s->func, chpp_qpn(s, qp), wr_id, opcode, status,
                            byte_len);
    chpp_cq_post(s, qp->recv_cqn, &cqe, sol);
}

/* A responder error: complete the receive (if any), NAK, leave RTS. */
static void chpp_resp_fail(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt,
                           uint8_t syndrome, uint8_t event, bool has_wqe,
                           uint64_t wr_id, uint8_t status, uint8_t verr)
{
    chpp_guest_error(s, "QP %u: request PSN %u from %u/%u refused "
                     "(NAK %u, reason %u)", chpp_qpn(s, qp), pkt->psn,
                     pkt->src_node, pkt->src_qpn, syndrome, verr);
    if (has_wqe) {
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, status, verr, 0, NULL);
        qp->eng.recv_active = false;
    }
    if (qp->type == CHPP_QPT_RC) {
        chpp_resp_nak(s, qp, pkt, syndrome);
    }
    chpp_qp_fail(s, qp, CHPP_QPS_ERR, event);
}

static void chpp_resp_rnr(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    trace_chpp_hca_resp_rnr(s->func, chpp_qpn(s, qp), pkt->psn);
    if (qp->type == CHPP_QPT_RC) {
        chpp_resp_reply(s, qp, pkt, CHPP_OP_NAK, pkt->psn, CHPP_NAK_RNR, 0);
    } else {
        chpp_resp_drop(s, pkt, "no receive WQE");
    }
}

/* Place a packet of the message in receive WQE eng->recv_wqe_idx. */
static bool chpp_resp_send_place(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    ChppQpEngine *eng = &qp->eng;
    ChppSge sge[CHPP_MAX_SGE];
    uint32_t num_sge, cap;
    uint64_t wr_id;
    uint8_t verr = 0;
    int ret;

    ret = chpp_recv_msg_fetch(s, qp, &wr_id, sge, &num_sge, &cap);
    if (ret == -EIO) {
        chpp_resp_srq_lost(s, qp, pkt);
        return false;
    }
    if (ret) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_OP, CHPP_EVENT_WQ_CATAS_ERROR,
                       true, wr_id, CHPP_WC_LOC_QP_OP_ERR,
                       CHPP_VERR_BAD_SGE_COUNT);
        return false;
    }
    if (pkt->msg_len > cap || (uint64_t)pkt->offset + pkt->len > cap) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_INV_REQ, 0, true, wr_id,
                       CHPP_WC_LOC_LEN_ERR, CHPP_VERR_RECV_TOO_SMALL);
        return false;
    }
    if (pkt->len && !chpp_sge_rw_pd(s, chpp_recv_pd(s, qp), sge, num_sge,
                                    pkt->offset, pkt->payload, pkt->len,
                                    DMA_DIRECTION_FROM_DEVICE, &verr)) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_OP,
                       CHPP_EVENT_WQ_ACCESS_ERROR, true, wr_id,
                       CHPP_WC_LOC_PROT_ERR, verr);
        return false;
    }
    eng->recv_len += pkt->len;
    if (pkt->flags & CHPP_WIRE_F_LAST) {
        /* SEND_INV (ABI 1.6): the region of rkey is free from now on. */
        if ((pkt->flags & CHPP_WIRE_F_INV) &&
            chpp_mr_invalidate(s, qp->pd, pkt->rkey, &verr)) {
            chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_OP,
                           CHPP_EVENT_WQ_ACCESS_ERROR, true, wr_id,
                           CHPP_WC_REM_INV_REQ_ERR, CHPP_VERR_RKEY);
            return false;
        }
        eng->recv_active = false;
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, 0, 0, eng->recv_len,
                      pkt);
    }
    return true;
}

/* SEND, SEND_IMM and NAP: consume a receive WQE, scatter the payload. */
static bool chpp_resp_send(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    ChppQpEngine *eng = &qp->eng;
    bool first = pkt->flags & CHPP_WIRE_F_FIRST;
    uint32_t idx = 0;
    bool ok;
    int ret;

    if (first) {
        if (eng->recv_active) {
            chpp_resp_fail(s, qp, pkt, CHPP_NAK_INV_REQ,
                           CHPP_EVENT_WQ_INVAL_REQ, false, 0, 0,
                           CHPP_VERR_REMOTE_INVALID);
            return false;
        }
        ret = chpp_recv_take(s, qp, &idx);
        if (ret == -EIO) {
            chpp_resp_srq_lost(s, qp, pkt);
            return false;
        }
        if (ret) {
            chpp_resp_rnr(s, qp, pkt);
            return false;
        }
        eng->recv_active = true;
        eng->recv_wqe_idx = idx;
        eng->recv_len = 0;
        eng->recv_cached = false;
    } else if (!eng->recv_active || pkt->offset != eng->recv_len) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_INV_REQ, CHPP_EVENT_WQ_INVAL_REQ,
                       false, 0, 0, CHPP_VERR_REMOTE_INVALID);
        return false;
    }
    ok = chpp_resp_send_place(s, qp, pkt);
    /* A WQE taken or let go: the SRQ's record says so. */
    if (first || !eng->recv_active) {
        chpp_recv_done(s, qp);
    }
    return ok;
}

/* PUT and PUT with notification. */
static bool chpp_resp_write(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    const ChppMpt *mr;
    uint8_t verr = 0;

    if (pkt->op == CHPP_OP_WRITE_IMM && (pkt->flags & CHPP_WIRE_F_FIRST) &&
        chpp_recv_empty(s, qp)) {
        chpp_resp_rnr(s, qp, pkt);
        return false;
    }
    /*
     * As in InfiniBand, a PUT of zero bytes accesses no memory: its rkey
     * and address are not checked (UCX's flush posts one with rkey 0).
     * The QP must still allow remote writes.
     */
    mr = (qp->access_flags & CHPP_ACCESS_REMOTE_WRITE) && pkt->msg_len ?
         chpp_mr_lookup(s, pkt->rkey, qp->pd, pkt->va, pkt->len,
                        CHPP_MPT_REMOTE_WRITE, &verr) : NULL;
    if (!(qp->access_flags & CHPP_ACCESS_REMOTE_WRITE) ||
        (pkt->msg_len && !mr)) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_ACCESS,
                       CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0, CHPP_VERR_RKEY);
        return false;
    }
    if (pkt->len && !chpp_mr_rw(s, mr, pkt->va, pkt->payload, pkt->len,
                                DMA_DIRECTION_FROM_DEVICE)) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_OP,
                       CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0,
                       CHPP_VERR_DMA);
        return false;
    }
    if (pkt->op == CHPP_OP_WRITE_IMM && (pkt->flags & CHPP_WIRE_F_LAST)) {
        uint64_t wr_id;
        ChppSge sge[CHPP_MAX_SGE];
        uint32_t num_sge, cap, idx = 0;
        int ret = chpp_recv_take(s, qp, &idx);

        if (ret == -EAGAIN) {
            chpp_resp_rnr(s, qp, pkt);
            return false;
        }
        /* Only the wr_id is needed: the data went to the region. */
        if (ret || chpp_recv_fetch(s, qp, idx, &wr_id, sge, &num_sge,
                                   &cap) == -EIO) {
            chpp_resp_srq_lost(s, qp, pkt);
            return false;
        }
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV_RDMA_IMM, 0, 0,
                      pkt->msg_len, pkt);
        chpp_recv_done(s, qp);
    }
    return true;
}

static ChppReadResp *chpp_rd(ChppQp *qp, uint32_t i)
{
    return &qp->eng.rd[(qp->eng.rd_head + i) % CHPP_MAX_RD_ATOMIC];
}

/*
 * Send the GET responses waiting on @qp, packet by packet while the frame
 * queue has room (the rest follows when it drains): a GET answered by a
 * PUT back to the requester (seed 004).
 */
void chpp_resp_pump(ChppHcaState *s, ChppQp *qp)
{
    uint32_t mtu = chpp_mtu_bytes(qp->path_mtu);

    while (qp->eng.rd_count && chpp_qp_receives(qp)) {
        ChppReadResp *r = chpp_rd(qp, 0);
        uint32_t npkts = MAX(1, DIV_ROUND_UP(r->len, mtu));
        uint32_t i = r->sent, off = i * mtu;
        uint32_t len = MIN(mtu, r->len - off);
        uint8_t *data;
        const ChppMpt *mr;
        uint8_t verr = 0;
        ChppPkt pkt = {
            .vc = CHPP_VC_DATA,
            .pkt_type = CHPP_PKT_PUT,
            .op = CHPP_OP_READ_RESP,
            .flags = (i == 0 ? CHPP_WIRE_F_FIRST : 0) |
                     (i == npkts - 1 ? CHPP_WIRE_F_LAST : 0),
            .magic = qp->dest_magic,
            .src_qpn = chpp_qpn(s, qp),
            .dst_node = qp->dest_node,
            .dst_qpn = qp->dest_qpn,
            .dst_vf = qp->dest_vf,
            .psn = chpp_psn_add(r->psn, i),
            .va = r->va + off,
            .msg_len = r->len,
            .offset = off,
        };

        if (!chpp_tx_room(s, qp)) {
            return;
        }
        /* Timing mode: the prototype runs the GET as a local PUT. */
        if (chpp_timing_active(s) && !r->tm.t_data) {
            chpp_timing_get_resp(s, &r->tm, r->len);
        }
        pkt.due = r->tm.t_data ? chpp_timing_due(s, &r->tm, off + len) : 0;
        /* The payload goes straight into the frame. */
        data = chpp_wire_payload(s, &pkt, len);
        /* The region may be gone or changed since the request came in. */
        mr = chpp_mr_lookup(s, r->rkey, qp->pd, r->va + off, len,
                            CHPP_MPT_REMOTE_READ, &verr);
        if (!mr || (len && !chpp_mr_rw(s, mr, r->va + off, data, len,
                                       DMA_DIRECTION_TO_DEVICE))) {
            ChppPkt req = {
                .psn = r->psn, .src_node = qp->dest_node,
                .src_qpn = qp->dest_qpn, .src_vf = qp->dest_vf,
            };

            g_free(pkt.frame);
            qp->eng.rd_count = 0;
            chpp_resp_fail(s, qp, &req, CHPP_NAK_REM_OP,
                           CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0,
                           CHPP_VERR_DMA);
            return;
        }
        chpp_route_send(s, &pkt);
        if (++r->sent == npkts) {
            qp->eng.rd_head = (qp->eng.rd_head + 1) % CHPP_MAX_RD_ATOMIC;
            qp->eng.rd_count--;
        }
    }
}

/*
 * The GET responses a loaded QP still sends: each with a packet left to
 * send (chpp_resp_pump() sends until its counter meets the packets).
 */
int chpp_resp_check_load(ChppHcaState *s, ChppQp *qp)
{
    uint32_t mtu = chpp_mtu_bytes(qp->path_mtu);
    uint32_t i;

    for (i = 0; i < qp->eng.rd_count; i++) {
        uint32_t slot = (qp->eng.rd_head + i) % CHPP_MAX_RD_ATOMIC;
        const ChppReadResp *r = &qp->eng.rd[slot];
        uint32_t npkts = MAX(1, DIV_ROUND_UP(r->len, mtu));

        if (r->sent >= npkts) {
            return chpp_refuse(s, "QP %u: eng.rd[%u].sent %u of %u packets",
                               chpp_qpn(s, qp), slot, r->sent, npkts);
        }
        if (r->psn > CHPP_PSN_MASK) {
            return chpp_refuse(s, "QP %u: eng.rd[%u].psn 0x%x beyond 24 bits",
                               chpp_qpn(s, qp), slot, r->psn);
        }
    }
    return 0;
}

/* GET: check the request, then queue its responses. */
static void chpp_resp_read(ChppHcaState *s, ChppQp *qp, ChppPkt *req)
{
    const ChppMpt *mr;
    uint8_t verr = 0;

    mr = (qp->access_flags & CHPP_ACCESS_REMOTE_READ) ?
         chpp_mr_lookup(s, req->rkey, qp->pd, req->va, req->msg_len,
                        CHPP_MPT_REMOTE_READ, &verr) : NULL;
    if (!mr) {
        chpp_resp_fail(s, qp, req, CHPP_NAK_REM_ACCESS,
                       CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0, CHPP_VERR_RKEY);
        return;
    }
    if (qp->eng.rd_count == CHPP_MAX_RD_ATOMIC) {
        /* More GETs than responder resources: the requester retries. */
        chpp_resp_drop(s, req, "too many GETs in progress");
        return;
    }
    *chpp_rd(qp, qp->eng.rd_count++) = (ChppReadResp) {
        .va = req->va,
        .rkey = req->rkey,
        .psn = req->psn,
        .len = req->msg_len,
    };
    chpp_resp_pump(s, qp);
}

static bool chpp_resp_atomic(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    const ChppMpt *mr;
    uint8_t verr = 0;
    uint64_t orig, val;

    if (pkt->va & 7) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_INV_REQ, CHPP_EVENT_WQ_INVAL_REQ,
                       false, 0, 0, CHPP_VERR_ATOMIC_ALIGN);
        return false;
    }
    mr = (qp->access_flags & CHPP_ACCESS_REMOTE_ATOMIC) ?
         chpp_mr_lookup(s, pkt->rkey, qp->pd, pkt->va, 8,
                        CHPP_MPT_REMOTE_ATOMIC, &verr) : NULL;
    if (!mr || !chpp_mr_rw(s, mr, pkt->va, &orig, 8,
                           DMA_DIRECTION_TO_DEVICE)) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_ACCESS,
                       CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0, CHPP_VERR_RKEY);
        return false;
    }
    orig = le64_to_cpu(orig);
    if (pkt->op == CHPP_OP_ATOMIC_FA) {
        val = orig + pkt->atomic0;
    } else {
        val = orig == pkt->atomic1 ? pkt->atomic0 : orig;
    }
    val = cpu_to_le64(val);
    if (!chpp_mr_rw(s, mr, pkt->va, &val, 8, DMA_DIRECTION_FROM_DEVICE)) {
        chpp_resp_fail(s, qp, pkt, CHPP_NAK_REM_OP,
                       CHPP_EVENT_WQ_ACCESS_ERROR, false, 0, 0,
                       CHPP_VERR_DMA);
        return false;
    }
    qp->eng.atomic_valid = true;
    qp->eng.atomic_psn = pkt->psn;
    qp->eng.atomic_orig = orig;
    chpp_resp_reply(s, qp, pkt, CHPP_OP_ATOMIC_ACK, pkt->psn, 0, orig);
    return true;
}

/* A request we already executed: answer again, do not execute twice. */
static void chpp_resp_duplicate(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    if (pkt->op == CHPP_OP_READ_REQ) {
        chpp_resp_read(s, qp, pkt);
    } else if (pkt->op == CHPP_OP_ATOMIC_CS || pkt->op == CHPP_OP_ATOMIC_FA) {
        if (qp->eng.atomic_valid && qp->eng.atomic_psn == pkt->psn) {
            chpp_resp_reply(s, qp, pkt, CHPP_OP_ATOMIC_ACK, pkt->psn, 0,
                            qp->eng.atomic_orig);
        }
    } else if (pkt->flags & CHPP_WIRE_F_ACK_REQ) {
        chpp_resp_reply(s, qp, pkt, CHPP_OP_ACK,
                        chpp_psn_add(qp->rq_psn, CHPP_PSN_MASK), 0, 0);
    }
}

/* A datagram into receive WQE @idx of @qp. */
static void chpp_resp_ud_place(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt,
                               uint32_t idx)
{
    static const uint8_t grh[CHPP_UD_GRH_SIZE];
    uint32_t pd = chpp_recv_pd(s, qp);
    ChppSge sge[CHPP_MAX_SGE];
    uint32_t num_sge, cap;
    uint64_t wr_id;
    uint8_t verr = 0;
    int ret;

    ret = chpp_recv_fetch(s, qp, idx, &wr_id, sge, &num_sge, &cap);
    if (ret == -EIO) {
        chpp_resp_drop(s, pkt, "SRQ ring not readable");
        chpp_resp_srq_broken(s, qp->srqn);
        return;
    }
    if (ret) {
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, CHPP_WC_LOC_QP_OP_ERR,
                      CHPP_VERR_BAD_SGE_COUNT, 0, NULL);
        return;
    }
    if ((uint64_t)pkt->len + CHPP_UD_GRH_SIZE > cap) {
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, CHPP_WC_LOC_LEN_ERR,
                      CHPP_VERR_RECV_TOO_SMALL, 0, NULL);
        return;
    }
    if (!chpp_sge_rw_pd(s, pd, sge, num_sge, 0, (void *)grh, sizeof(grh),
                        DMA_DIRECTION_FROM_DEVICE, &verr) ||
        (pkt->len && !chpp_sge_rw_pd(s, pd, sge, num_sge, CHPP_UD_GRH_SIZE,
                                     pkt->payload, pkt->len,
                                     DMA_DIRECTION_FROM_DEVICE, &verr))) {
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, CHPP_WC_LOC_PROT_ERR,
                      verr, 0, NULL);
        return;
    }
    chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, 0, 0,
                  pkt->len + CHPP_UD_GRH_SIZE, pkt);
}

static void chpp_resp_ud(ChppHcaState *s, ChppQp *qp, ChppPkt *pkt)
{
    uint32_t idx = 0;
    int ret;

    /*
     * Q_Keys: an SMI QP takes any, a GSI QP only the well-known one, a
     * UD QP its own.  The special QPs take MADs only.
     */
    if (qp->type == CHPP_QPT_GSI ? pkt->qkey != CHPP_QP1_QKEY :
        qp->type != CHPP_QPT_SMI && pkt->qkey != qp->qkey) {
        chpp_resp_drop(s, pkt, "Q_Key mismatch");
        return;
    }
    if (chpp_qpt_special(qp->type) && pkt->len != CHPP_MAD_SIZE) {
        chpp_resp_drop(s, pkt, "not a MAD (256 bytes)");
        return;
    }
    ret = chpp_recv_take(s, qp, &idx);
    if (ret == -EIO) {
        chpp_resp_drop(s, pkt, "SRQ in error");
        chpp_resp_srq_broken(s, qp->srqn);
        return;
    }
    if (ret) {
        chpp_resp_drop(s, pkt, "no receive WQE");
        return;
    }
    chpp_resp_ud_place(s, qp, pkt, idx);
    chpp_recv_done(s, qp);
}

static bool chpp_resp_op_ok(uint8_t type, uint8_t op)
{
    if (chpp_qpt_special(type)) {
        return op == CHPP_OP_SEND;      /* MADs */
    }
    switch (op) {
    case CHPP_OP_SEND:
    case CHPP_OP_SEND_IMM:
    case CHPP_OP_NAP:
        return true;
    case CHPP_OP_WRITE:
    case CHPP_OP_WRITE_IMM:
        return !chpp_qpt_ud(type);
    case CHPP_OP_READ_REQ:
    case CHPP_OP_ATOMIC_CS:
    case CHPP_OP_ATOMIC_FA:
        return type == CHPP_QPT_RC;
    default:
        return false;
    }
}

/*
 * A multicast datagram: every UD QP of this function attached to its MLID
 * that can receive gets it, each in a receive WQE of its own.  A PF gives
 * its VFs their copies of one that came over the link.
 */
static void chpp_resp_mcast(ChppHcaState *s, ChppPkt *pkt)
{
    uint32_t qpn[CHPP_MAX_MCGS * CHPP_MCG_MAX_QPS];
    unsigned i, n, got = 0;

    if (pkt->from_link && !s->func) {
        chpp_route_fan_out(s, pkt);
    }
    if (!chpp_resp_op_ok(CHPP_QPT_UD, pkt->op) ||
        !(pkt->flags & CHPP_WIRE_F_FIRST) || !(pkt->flags & CHPP_WIRE_F_LAST)) {
        chpp_resp_drop(s, pkt, "multicast: not a datagram");
        return;
    }
    n = chpp_mcg_qps(s, pkt->mlid, qpn, ARRAY_SIZE(qpn));
    for (i = 0; i < n; i++) {
        ChppQp *qp = chpp_qp_lookup(s, qpn[i]);

        if (qp && chpp_qp_receives(qp)) {
            chpp_resp_ud(s, qp, pkt);
            got++;
        }
    }
    if (!got) {
        chpp_resp_drop(s, pkt, "multicast: no QP of the group receives");
    }
}

void chpp_resp_packet(ChppHcaState *s, ChppPkt *pkt)
{
    ChppQp *qp;
    bool ok = false;
    int32_t d;

    if (pkt->dst_qpn == CHPP_MCAST_QPN) {
        chpp_resp_mcast(s, pkt);
        return;
    }
    qp = chpp_qp_lookup(s, pkt->dst_qpn);

    if (!qp || !chpp_qp_receives(qp)) {
        chpp_resp_drop(s, pkt, "QP cannot receive");
        return;
    }
    if (pkt->magic != qp->magic) {
        chpp_count(s, CHPP_CNT_MAGIC_DROPS);
        chpp_resp_drop(s, pkt, "QP magic mismatch");
        if (pkt->from_link) {
            chpp_link_magic_miss(s, pkt->src_node, pkt->dst_qpn,
                                 pkt->magic);
        }
        return;
    }
    if (!chpp_resp_op_ok(qp->type, pkt->op)) {
        chpp_resp_drop(s, pkt, "operation not valid for the QP type");
        return;
    }
    if (!chpp_qpt_ud(qp->type) &&
        (pkt->src_node != qp->dest_node || pkt->src_qpn != qp->dest_qpn ||
         pkt->src_vf != qp->dest_vf)) {
        chpp_resp_drop(s, pkt, "not from the connected QP");
        return;
    }
    if (qp->state == CHPP_QPS_RTR && !qp->eng.comm_est) {
        qp->eng.comm_est = true;
        chpp_qp_async_event(s, qp, CHPP_EVENT_COMM_EST);
    }
    if (chpp_qpt_ud(qp->type)) {
        chpp_resp_ud(s, qp, pkt);
        return;
    }

    d = chpp_psn_diff(pkt->psn, qp->rq_psn);
    if (qp->type == CHPP_QPT_UC) {
        if (d && !(pkt->flags & CHPP_WIRE_F_FIRST)) {
            qp->eng.recv_active = false;
            chpp_resp_drop(s, pkt, "UC packet out of sequence");
            return;
        }
        qp->rq_psn = pkt->psn;
        qp->eng.recv_active = qp->eng.recv_active &&
                              !(pkt->flags & CHPP_WIRE_F_FIRST);
    } else if (d < 0) {
        chpp_resp_duplicate(s, qp, pkt);
        return;
    } else if (d > 0) {
        if (!qp->eng.nak_sent) {
            qp->eng.nak_sent = true;
            chpp_resp_reply(s, qp, pkt, CHPP_OP_NAK, qp->rq_psn,
                            CHPP_NAK_PSN_SEQ, 0);
        }
        chpp_resp_drop(s, pkt, "PSN out of sequence");
        return;
    }
    qp->eng.nak_sent = false;

    switch (pkt->op) {
    case CHPP_OP_SEND:
    case CHPP_OP_SEND_IMM:
    case CHPP_OP_NAP:
        ok = chpp_resp_send(s, qp, pkt);
        break;
    case CHPP_OP_WRITE:
    case CHPP_OP_WRITE_IMM:
        ok = chpp_resp_write(s, qp, pkt);
        break;
    case CHPP_OP_READ_REQ:
        if (qp->state == CHPP_QPS_ERR) {
            return;
        }
        chpp_resp_read(s, qp, pkt);
        if (qp->state != CHPP_QPS_ERR) {
            qp->rq_psn = chpp_psn_add(qp->rq_psn,
                                      MAX(1, DIV_ROUND_UP(pkt->msg_len,
                                          chpp_mtu_bytes(qp->path_mtu))));
        }
        return;
    case CHPP_OP_ATOMIC_CS:
    case CHPP_OP_ATOMIC_FA:
        ok = chpp_resp_atomic(s, qp, pkt);
        break;
    }
    if (!ok) {
        return;
    }
    qp->rq_psn = chpp_psn_add(qp->rq_psn, 1);
    if (qp->type == CHPP_QPT_RC && (pkt->flags & CHPP_WIRE_F_ACK_REQ) &&
        pkt->op != CHPP_OP_ATOMIC_CS && pkt->op != CHPP_OP_ATOMIC_FA) {
        chpp_resp_ack(s, qp, pkt);
    }
}

/*
 * Flush every receive WQE the device owns: of an SRQ only the one @qp had
 * taken (the others belong to the SRQ, for its other QPs).
 */
void chpp_resp_flush(ChppHcaState *s, ChppQp *qp)
{
    ChppSrq *srq = chpp_qp_srq(s, qp);
    ChppSge sge[CHPP_MAX_SGE];
    uint32_t num_sge, cap;
    uint64_t wr_id;

    qp->eng.rd_count = 0;
    if (qp->eng.recv_active) {
        chpp_recv_msg_fetch(s, qp, &wr_id, sge, &num_sge, &cap);
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, CHPP_WC_WR_FLUSH_ERR,
                      CHPP_VERR_FLUSH, 0, NULL);
        qp->eng.recv_active = false;
        if (srq) {
            chpp_srq_update(s, srq);
        }
    }
    while (!srq && qp->rq_ci != qp->rq_pi) {
        chpp_rwqe_fetch(s, qp, qp->rq_ci, &wr_id, sge, &num_sge, &cap);
        chpp_recv_cqe(s, qp, wr_id, CHPP_CQE_OP_RECV, CHPP_WC_WR_FLUSH_ERR,
                      CHPP_VERR_FLUSH, 0, NULL);
        qp->rq_ci = (qp->rq_ci + 1) & CHPP_IDX_MASK;
    }
}
