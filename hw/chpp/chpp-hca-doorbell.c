/*
 * chpp-hca: UAR doorbells and the doorbell FIFO.
 *
 * Doorbell writes record the producer index and queue the QP in the
 * function's doorbell FIFO (depth 32, seed 004); the engine then serves the
 * FIFO at once, in the thread that rang (chpp_engine_doorbell()), or in
 * its bottom half or timer when a clock paces it.  Refused
 * doorbells queue their event likewise (chpp-hca-db-error.c).  RING_SQ is
 * the command that announces an SQ without the FIFO.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

void chpp_uar_doorbell_error(ChppHcaState *s, uint32_t uar, uint32_t offset,
                             uint64_t val, const char *why)
{
    chpp_count(s, CHPP_CNT_DB_ERRORS);
    chpp_guest_error(s, "UAR page %u doorbell 0x%x = 0x%" PRIx64 ": %s", uar,
                     offset, val, why);
    chpp_doorbell_refused(s, CHPP_DB_ERR_BAD_VALUE, uar, offset, val);
}

static void chpp_db_fifo_push(ChppHcaState *s, uint32_t uar, uint32_t offset,
                              uint32_t val, uint32_t qpn, uint32_t pi)
{
    if (s->db_count == CHPP_DB_FIFO_DEPTH) {
        chpp_count(s, CHPP_CNT_DB_FIFO_OVERFLOW);
        chpp_guest_error(s, "doorbell FIFO full (%u entries): doorbell of "
                         "QP %u lost", CHPP_DB_FIFO_DEPTH, qpn);
        chpp_db_lost_report(s, qpn, uar, offset, val);
        return;
    }
    s->db_fifo[(s->db_head + s->db_count) % CHPP_DB_FIFO_DEPTH] =
        qpn | pi << 16;
    s->db_count++;
    trace_chpp_hca_db_fifo_push(s->func, qpn, s->db_count);
    /* The PF's engine serves every function's FIFO (arbitration). */
    chpp_engine_doorbell(chpp_pf(s));
}

/*
 * A producer index may only move forward, and the queue may not hold more
 * than its size of WQEs counted from @oldest (the oldest WQE still owned by
 * the device).
 */
static bool chpp_pi_ok(uint32_t old_pi, uint32_t new_pi, uint32_t oldest,
                       uint32_t size)
{
    uint32_t d_old = (old_pi - oldest) & CHPP_IDX_MASK;
    uint32_t d_new = (new_pi - oldest) & CHPP_IDX_MASK;

    return d_old <= d_new && d_new <= size;
}

static void chpp_qp_doorbell(ChppHcaState *s, uint32_t uar, uint32_t offset,
                             uint32_t val)
{
    uint32_t qpn = val >> CHPP_UAR_DB_QPN_SHIFT;
    uint32_t pi = val & CHPP_UAR_DB_PI_MASK;
    bool sq = offset == CHPP_UAR_SQ_DB;
    ChppQp *qp = chpp_qp_lookup(s, qpn);

    if (!qp || qp->state == CHPP_QPS_RESET) {
        chpp_uar_doorbell_error(s, uar, offset, val, "QP does not exist or "
                                "is in RESET");
        return;
    }
    if (qp->uar != uar) {
        chpp_uar_doorbell_error(s, uar, offset, val, "QP belongs to "
                                "another UAR page");
        return;
    }
    if (sq) {
        if (!chpp_pi_ok(qp->sq_pi, pi, qp->eng.sq_comp,
                        1u << qp->log_sq_size)) {
            chpp_uar_doorbell_error(s, uar, offset, val, "SQ producer index "
                                    "moves back or overfills the queue");
            return;
        }
        trace_chpp_hca_sq_doorbell(s->func, qpn, pi);
        qp->sq_pi = pi;
    } else {
        if (qp->flags & CHPP_QP_FLAG_SRQ) {
            chpp_uar_doorbell_error(s, uar, offset, val, "QP takes its "
                                    "receive WQEs from an SRQ");
            return;
        }
        if (!chpp_pi_ok(qp->rq_pi, pi, qp->rq_ci, 1u << qp->log_rq_size)) {
            chpp_uar_doorbell_error(s, uar, offset, val, "RQ producer index "
                                    "moves back or overfills the queue");
            return;
        }
        trace_chpp_hca_rq_doorbell(s->func, qpn, pi);
        qp->rq_pi = pi;
        /* Receives need the engine only to be flushed in ERR. */
        if (qp->state != CHPP_QPS_ERR) {
            return;
        }
    }
    chpp_db_fifo_push(s, uar, offset, val, qpn, qp->sq_pi);
}

/*
 * CHPP_UAR_DB_STATUS: how many FIFO entries wait, for software flow
 * control.  An entry counts for the page its QP rings through now.  Read
 * by software that polls, it also lets the engine catch up first.
 */
uint32_t chpp_uar_db_status(ChppHcaState *s, uint32_t uar)
{
    uint32_t i, mine = 0;

    chpp_engine_poll(chpp_pf(s));

    for (i = 0; i < s->db_count; i++) {
        uint32_t e = s->db_fifo[(s->db_head + i) % CHPP_DB_FIFO_DEPTH];

        mine += s->qps[CHPP_FIFO_QPN(e)].uar == uar;
    }
    trace_chpp_hca_uar_db_status(s->func, uar, mine, s->db_count);
    return mine | s->db_count << 8 | CHPP_DB_FIFO_DEPTH << 16;
}

void chpp_uar_doorbell(ChppHcaState *s, uint32_t uar, uint32_t offset,
                       uint64_t val, unsigned size)
{
    const char *why;

    if (uar >= s->params.uar_pages) {
        chpp_uar_doorbell_error(s, uar, offset, val, "UAR page not present");
        return;
    }
    switch (offset) {
    case CHPP_UAR_SQ_DB:
    case CHPP_UAR_RQ_DB:
        if (size != 4) {
            chpp_uar_doorbell_error(s, uar, offset, val,
                                    "QP doorbells take 32-bit writes");
            return;
        }
        chpp_qp_doorbell(s, uar, offset, val);
        return;
    case CHPP_UAR_SRQ_DB:
        if (size != 4) {
            chpp_uar_doorbell_error(s, uar, offset, val,
                                    "SRQ doorbells take 32-bit writes");
            return;
        }
        why = chpp_srq_doorbell(s, uar, val);
        if (why) {
            chpp_uar_doorbell_error(s, uar, offset, val, why);
        }
        return;
    case CHPP_UAR_CQ_DB:
        if (size != 8) {
            chpp_uar_doorbell_error(s, uar, offset, val,
                                    "CQ doorbell needs a 64-bit write");
            return;
        }
        why = chpp_cq_doorbell(s, uar, val);
        if (why) {
            chpp_uar_doorbell_error(s, uar, offset, val, why);
        } else if (val & CHPP_CQ_DB_CMD_MASK) {
            /* Armed to sleep: requests held for its next poll go now. */
            chpp_link_poll_end(chpp_pf(s));
        }
        return;
    default:
        chpp_uar_doorbell_error(s, uar, offset, val, "not a doorbell");
    }
}

/*
 * RING_SQ: announce every WQE up to the SQ producer index the device
 * recorded, as a FIFO entry carrying it would, without the FIFO.  It is
 * how a driver recovers a doorbell the FIFO lost on a QP whose producer
 * index another writer (the process owning a user QP) may move meanwhile:
 * ringing the doorbell with an index read earlier could move it back.
 */
uint8_t chpp_cmd_ring_sq(ChppHcaState *s, uint32_t qpn)
{
    ChppQp *qp = chpp_qp_lookup(s, qpn);

    if (!qp) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "QP %u out of range (%u QPs)", qpn,
                             s->params.num_qps);
    }
    if (qp->state == CHPP_QPS_RESET) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE, "QP %u is in RESET",
                             qpn);
    }
    trace_chpp_hca_ring_sq(s->func, qpn, qp->sq_pi);
    qp->eng.sq_limit = qp->sq_pi;
    /* Whatever its lost doorbells announced is announced now. */
    chpp_db_lost_clear(s, qpn);
    chpp_req_run(s, qp);
    return CHPP_STAT_OK;
}
