/*
 * chpp-hca: the send queue's WQEs and their completions.
 *
 * A send WQE is copied out of the ring and checked (chpp_wqe_fetch) before
 * the requester acts on it; once started it is an in-flight entry until it
 * completes.  Send completions are written in posting order: the requester
 * completes what needs no answer, the completer what its ACKs and responses
 * acknowledge, both through the in-flight list kept here.  An error
 * completes the WQE it belongs to only after every earlier WQE completed,
 * then the QP leaves RTS.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

uint8_t chpp_cqe_send_opcode(uint8_t wqe_opcode)
{
    switch (wqe_opcode) {
    case CHPP_WQE_PUT:
    case CHPP_WQE_PUT_IMM:
        return CHPP_CQE_OP_RDMA_WRITE;
    case CHPP_WQE_GET:
        return CHPP_CQE_OP_RDMA_READ;
    case CHPP_WQE_ATOMIC_CS:
        return CHPP_CQE_OP_COMP_SWAP;
    case CHPP_WQE_ATOMIC_FA:
        return CHPP_CQE_OP_FETCH_ADD;
    default:
        return CHPP_CQE_OP_SEND;
    }
}

bool chpp_wqe_opcode_ok(uint8_t type, uint8_t op)
{
    switch (op) {
    case CHPP_WQE_SEND:
    case CHPP_WQE_SEND_IMM:
    case CHPP_WQE_NAP:
        return true;
    case CHPP_WQE_PUT:
    case CHPP_WQE_PUT_IMM:
        return type != CHPP_QPT_UD;
    case CHPP_WQE_GET:
    case CHPP_WQE_ATOMIC_CS:
    case CHPP_WQE_ATOMIC_FA:
        return type == CHPP_QPT_RC;
    default:
        return false;
    }
}

static bool chpp_wqe_bad(uint8_t *status, uint8_t *verr, uint8_t st,
                         uint8_t ve)
{
    *status = st;
    *verr = ve;
    return false;
}

/*
 * Copy WQE @idx out of the SQ and validate it.  On failure *status and
 * *verr say why (w->ctrl.wr_id is valid whenever the ring was readable).
 */
bool chpp_wqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx, ChppWqe *w,
                    uint8_t *status, uint8_t *verr)
{
    uint32_t stride = 1u << qp->log_sq_stride;
    uint64_t off = (uint64_t)(idx & ((1u << qp->log_sq_size) - 1))
                   << qp->log_sq_stride;
    uint8_t buf[1 << CHPP_MAX_WQE_SHIFT];
    uint32_t pos = sizeof(struct chpp_wqe_ctrl);
    uint64_t total = 0;
    bool writes_local;
    uint32_t i;

    memset(&w->ctrl, 0, sizeof(w->ctrl));
    w->idx = idx;
    w->num_sge = 0;
    w->inline_len = 0;
    if (!chpp_ring_rw(s, &qp->sq, off, buf, stride,
                      DMA_DIRECTION_TO_DEVICE)) {
        return chpp_wqe_bad(status, verr, CHPP_WC_LOC_QP_OP_ERR,
                            CHPP_VERR_DMA);
    }
    memcpy(&w->ctrl, buf, sizeof(w->ctrl));
    w->ctrl.imm = le32_to_cpu(w->ctrl.imm);
    w->ctrl.wr_id = le64_to_cpu(w->ctrl.wr_id);
    trace_chpp_hca_wqe(s->func, chpp_qpn(s, qp), idx, w->ctrl.opcode,
                       w->ctrl.flags, w->ctrl.num_sge);

    if (!chpp_wqe_opcode_ok(qp->type, w->ctrl.opcode) ||
        w->ctrl.flags & ~(CHPP_WQE_SIGNALED | CHPP_WQE_SOLICITED |
                          CHPP_WQE_FENCE | CHPP_WQE_INLINE)) {
        return chpp_wqe_bad(status, verr, CHPP_WC_LOC_QP_OP_ERR,
                            CHPP_VERR_BAD_OPCODE);
    }
    if (qp->type == CHPP_QPT_UD) {
        memcpy(&w->ud, buf + pos, sizeof(w->ud));
        w->ud.dest_node = le32_to_cpu(w->ud.dest_node);
        w->ud.dest_qpn = le32_to_cpu(w->ud.dest_qpn);
        w->ud.qkey = le32_to_cpu(w->ud.qkey);
        pos += sizeof(w->ud);
    }
    if (w->ctrl.opcode >= CHPP_WQE_PUT) {
        memcpy(&w->raddr, buf + pos, sizeof(w->raddr));
        w->raddr.raddr = le64_to_cpu(w->raddr.raddr);
        w->raddr.rkey = le32_to_cpu(w->raddr.rkey);
        pos += sizeof(w->raddr);
    }
    if (w->ctrl.opcode == CHPP_WQE_ATOMIC_CS ||
        w->ctrl.opcode == CHPP_WQE_ATOMIC_FA) {
        memcpy(&w->atomic, buf + pos, sizeof(w->atomic));
        w->atomic.swap_add = le64_to_cpu(w->atomic.swap_add);
        w->atomic.compare = le64_to_cpu(w->atomic.compare);
        pos += sizeof(w->atomic);
    }
    if (pos > stride) {
        return chpp_wqe_bad(status, verr, CHPP_WC_LOC_QP_OP_ERR,
                            CHPP_VERR_BAD_SGE_COUNT);
    }

    if (w->ctrl.flags & CHPP_WQE_INLINE) {
        uint32_t room = stride - pos;

        if (chpp_wqe_is_rd_atomic(w->ctrl.opcode) ||
            room < sizeof(struct chpp_wqe_inline)) {
            return chpp_wqe_bad(status, verr, CHPP_WC_LOC_QP_OP_ERR,
                                CHPP_VERR_BAD_OPCODE);
        }
        w->inline_len = ldl_le_p(buf + pos);
        room -= sizeof(struct chpp_wqe_inline);
        if (w->inline_len > room) {
            return chpp_wqe_bad(status, verr, CHPP_WC_LOC_LEN_ERR,
                                CHPP_VERR_INLINE_TOO_LONG);
        }
        memcpy(w->inline_data, buf + pos + sizeof(struct chpp_wqe_inline),
               w->inline_len);
        total = w->inline_len;
    } else {
        w->num_sge = w->ctrl.num_sge;
        if (w->num_sge > CHPP_MAX_SGE ||
            pos + w->num_sge * sizeof(struct chpp_wqe_sge) > stride) {
            return chpp_wqe_bad(status, verr, CHPP_WC_LOC_QP_OP_ERR,
                                CHPP_VERR_BAD_SGE_COUNT);
        }
        for (i = 0; i < w->num_sge; i++) {
            const uint8_t *p = buf + pos + i * sizeof(struct chpp_wqe_sge);

            w->sge[i].length = ldl_le_p(p);
            w->sge[i].lkey = ldl_le_p(p + 4);
            w->sge[i].addr = ldq_le_p(p + 8);
            total += w->sge[i].length;
        }
    }
    if (total > CHPP_MAX_MSG_SIZE) {
        return chpp_wqe_bad(status, verr, CHPP_WC_LOC_LEN_ERR,
                            CHPP_VERR_LENGTH_OVERFLOW);
    }
    w->length = total;

    switch (w->ctrl.opcode) {
    case CHPP_WQE_NAP:
        if (w->length > CHPP_NAP_MAX_PAYLOAD) {
            return chpp_wqe_bad(status, verr, CHPP_WC_LOC_LEN_ERR,
                                CHPP_VERR_NAP_TOO_LONG);
        }
        break;
    case CHPP_WQE_ATOMIC_CS:
    case CHPP_WQE_ATOMIC_FA:
        if (w->num_sge != 1 || w->length != 8) {
            return chpp_wqe_bad(status, verr, CHPP_WC_LOC_LEN_ERR,
                                CHPP_VERR_LENGTH_OVERFLOW);
        }
        break;
    }
    if (qp->type == CHPP_QPT_UD && w->length > CHPP_WIRE_MAX_PAYLOAD) {
        return chpp_wqe_bad(status, verr, CHPP_WC_LOC_LEN_ERR,
                            CHPP_VERR_LENGTH_OVERFLOW);
    }

    /* Every segment must be a region of this PD with the needed rights. */
    writes_local = chpp_wqe_is_rd_atomic(w->ctrl.opcode);
    for (i = 0; i < w->num_sge; i++) {
        w->sge_mr[i] = chpp_mr_lookup(s, w->sge[i].lkey, qp->pd,
                                      w->sge[i].addr, w->sge[i].length,
                                      writes_local ? CHPP_MPT_LOCAL_WRITE : 0,
                                      verr);
        if (!w->sge_mr[i]) {
            *status = CHPP_WC_LOC_PROT_ERR;
            return false;
        }
    }
    return true;
}

bool chpp_send_cqe(ChppHcaState *s, ChppQp *qp, uint64_t wr_id,
                   uint8_t opcode, uint8_t status, uint8_t verr,
                   uint32_t byte_len)
{
    struct chpp_cqe cqe = {
        .wr_id = cpu_to_le64(wr_id),
        .byte_len = cpu_to_le32(byte_len),
        .qpn = cpu_to_le32(chpp_qpn(s, qp)),
        /* Send completions are in order: this is WQE sq_comp. */
        .src_qp = cpu_to_le32(qp->eng.sq_comp),
        .vendor_err = verr,
        .opcode = opcode,
        .status = status,
        .flags = CHPP_CQE_FLAG_SEND,
    };

    trace_chpp_hca_send_cqe(s->func, chpp_qpn(s, qp), wr_id, opcode, status,
                            verr);
    return chpp_cq_post(s, qp->send_cqn, &cqe, false);
}

ChppInflight *chpp_sq_infl(ChppQp *qp, uint32_t i)
{
    return &qp->eng.inflight[(qp->eng.infl_head + i) % CHPP_MAX_INFLIGHT];
}

ChppInflight *chpp_sq_head(ChppQp *qp)
{
    return qp->eng.infl_count ? chpp_sq_infl(qp, 0) : NULL;
}

void chpp_sq_pop(ChppQp *qp)
{
    qp->eng.infl_head = (qp->eng.infl_head + 1) % CHPP_MAX_INFLIGHT;
    qp->eng.infl_count--;
    qp->eng.sq_comp = (qp->eng.sq_comp + 1) & CHPP_IDX_MASK;
}

void chpp_sq_success(ChppHcaState *s, ChppQp *qp)
{
    ChppInflight *e = chpp_sq_head(qp);

    if ((e->flags & CHPP_WQE_SIGNALED) ||
        (qp->flags & CHPP_QP_FLAG_SQ_SIG_ALL)) {
        chpp_send_cqe(s, qp, e->wr_id, chpp_cqe_send_opcode(e->opcode), 0, 0,
                      e->length);
    }
    if (chpp_wqe_is_rd_atomic(e->opcode)) {
        qp->eng.rd_atomic--;
    }
    chpp_sq_pop(qp);
}

/* Complete the head WQE with an error and take the QP out of RTS. */
void chpp_sq_fail_head(ChppHcaState *s, ChppQp *qp, uint8_t status,
                       uint8_t verr)
{
    ChppInflight *e = chpp_sq_head(qp);

    chpp_guest_error(s, "QP %u: WQE %u completes with status %u (reason %u)",
                     chpp_qpn(s, qp), e->wqe_idx, status, verr);
    chpp_send_cqe(s, qp, e->wr_id, chpp_cqe_send_opcode(e->opcode), status,
                  verr, 0);
    chpp_sq_pop(qp);
    chpp_qp_timer_stop(s, qp);
    chpp_qp_fail(s, qp, CHPP_QPS_ERR, 0);
}

/*
 * Complete in-flight WQEs acknowledged by @psn: those whose last PSN is
 * before it (or at it, if @inclusive).  GET and atomics need their
 * response, so an acknowledgement never completes them.
 */
void chpp_sq_complete(ChppHcaState *s, ChppQp *qp, uint32_t psn,
                      bool inclusive)
{
    ChppInflight *e;

    while ((e = chpp_sq_head(qp))) {
        int32_t d = chpp_psn_diff(e->last_psn, psn);

        if (e->status) {
            /* Everything before the failed WQE is done: now it fails. */
            chpp_sq_fail_head(s, qp, e->status, e->vendor_err);
            return;
        }
        if (d > 0 || (d == 0 && !inclusive) ||
            chpp_wqe_is_rd_atomic(e->opcode)) {
            return;
        }
        chpp_sq_success(s, qp);
    }
}
