/*
 * chpp-hca: shared receive queues (ABI 1.5).
 *
 * An SRQ is a ring of receive WQEs (the RQ's format) in guest memory,
 * mapped by MTT entries like an RQ, that any number of QPs of the function
 * take their receive WQEs from (CHPP_QP_FLAG_SRQ at RST2INIT).  The
 * responder takes them in ring order and copies each into the receiving
 * QP's engine at the message's first packet, so a slot is free once its
 * WQE is taken, however long the message lasts and whatever order
 * messages on different QPs end in.  After each take, and each message
 * that lets a WQE go, the device writes a consumer record behind the ring:
 * every WQE before its free index may be posted again.
 * docs/shared-receive-queues.md is the specification of this file.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

#define CHPP_SRQ_IDX_MASK       CHPP_UAR_DB_PI_MASK
#define CHPP_SRQ_MAX_LOG_WQES   15

QEMU_BUILD_BUG_ON(1u << CHPP_SRQ_MAX_LOG_WQES != CHPP_MAX_SRQ_WQES);

static uint32_t chpp_srqn(ChppHcaState *s, const ChppSrq *srq)
{
    return srq - s->srqs;
}

static uint32_t chpp_srq_size(const ChppSrq *srq)
{
    return 1u << srq->log_size;
}

/* Bytes of the ring; the consumer record follows them. */
static uint64_t chpp_srq_ring_bytes(uint8_t log_size, uint8_t log_stride)
{
    return (uint64_t)1 << (log_size + log_stride);
}

ChppSrq *chpp_srq_get(ChppHcaState *s, uint32_t srqn)
{
    if (srqn >= s->params.num_srqs ||
        s->srqs[srqn].state == CHPP_RES_SW) {
        return NULL;
    }
    return &s->srqs[srqn];
}

/* The SRQ is broken: no WQE is taken from it any more (until HW2SW). */
static void chpp_srq_set_error(ChppHcaState *s, ChppSrq *srq,
                               const char *why)
{
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_SRQ_CATAS_ERROR,
        .event.srq.srqn = cpu_to_le32(chpp_srqn(s, srq)),
    };

    if (srq->state == CHPP_RES_ERROR) {
        return;
    }
    chpp_guest_error(s, "SRQ %u: %s: SRQ in error", chpp_srqn(s, srq), why);
    trace_chpp_hca_err_srq(s->func, chpp_srqn(s, srq), why);
    srq->state = CHPP_RES_ERROR;
    chpp_event_post(s, &eqe);
}

/*
 * The free index: the oldest WQE a QP attached to @srq is still filling
 * from the ring, or every WQE taken if none is.  A WQE copied into the
 * QP's engine (recv_cached, from the message's first packet on) does not
 * hold its slot.
 */
static uint32_t chpp_srq_free_index(ChppHcaState *s, ChppSrq *srq)
{
    uint32_t srqn = chpp_srqn(s, srq);
    uint32_t oldest = srq->ci, age = 0;
    uint32_t i;

    if (!srq->refs) {
        return srq->ci;
    }
    for (i = 0; i < s->params.num_qps; i++) {
        const ChppQp *qp = &s->qps[i];
        uint32_t a;

        if (qp->state == CHPP_QPS_RESET || !(qp->flags & CHPP_QP_FLAG_SRQ) ||
            qp->srqn != srqn || !qp->eng.recv_active ||
            chpp_srq_wqe_copied(qp)) {
            continue;
        }
        a = (srq->ci - qp->eng.recv_wqe_idx) & CHPP_SRQ_IDX_MASK;
        if (a > age) {
            age = a;
            oldest = qp->eng.recv_wqe_idx;
        }
    }
    return oldest;
}

bool chpp_srq_update(ChppHcaState *s, ChppSrq *srq)
{
    struct chpp_srq_record rec;

    if (srq->state != CHPP_RES_HW) {
        return srq->state != CHPP_RES_ERROR;
    }
    srq->free = chpp_srq_free_index(s, srq);
    rec = (struct chpp_srq_record) {
        .free = cpu_to_le32(srq->free),
        .ci = cpu_to_le32(srq->ci),
    };
    trace_chpp_hca_srq_record(s->func, chpp_srqn(s, srq), srq->free,
                              srq->ci);
    if (!chpp_ring_rw(s, &srq->ring,
                      chpp_srq_ring_bytes(srq->log_size, srq->log_stride),
                      &rec, sizeof(rec), DMA_DIRECTION_FROM_DEVICE)) {
        chpp_srq_set_error(s, srq, "consumer record not writable");
        return false;
    }
    return true;
}

bool chpp_srq_empty(const ChppSrq *srq)
{
    return srq->state != CHPP_RES_HW || srq->ci == srq->pi;
}

bool chpp_srq_take(ChppHcaState *s, ChppSrq *srq, uint32_t *idx)
{
    uint32_t left;

    if (chpp_srq_empty(srq)) {
        return false;
    }
    *idx = srq->ci;
    srq->ci = (srq->ci + 1) & CHPP_SRQ_IDX_MASK;
    left = (srq->pi - srq->ci) & CHPP_SRQ_IDX_MASK;
    trace_chpp_hca_srq_take(s->func, chpp_srqn(s, srq), *idx, left);
    if (srq->limit && left < srq->limit) {
        struct chpp_eqe eqe = {
            .type = CHPP_EVENT_SRQ_LIMIT,
            .event.srq.srqn = cpu_to_le32(chpp_srqn(s, srq)),
        };

        /* One-shot: ARM_SRQ arms it again. */
        srq->limit = 0;
        chpp_event_post(s, &eqe);
    }
    return true;
}

uint32_t chpp_sge_capacity(const ChppSge *sge, uint32_t num_sge)
{
    uint64_t cap = 0;
    uint32_t i;

    for (i = 0; i < num_sge; i++) {
        cap += sge[i].length;
    }
    return MIN(cap, UINT32_MAX);
}

bool chpp_rwqe_parse(const uint8_t *buf, uint32_t stride, uint64_t *wr_id,
                     ChppSge *sge, uint32_t *num_sge, uint32_t *capacity)
{
    uint32_t i, n;

    *wr_id = ldq_le_p(buf);
    n = ldl_le_p(buf + 8);
    if (n > CHPP_MAX_SGE ||
        sizeof(struct chpp_rwqe_hdr) + n * sizeof(struct chpp_wqe_sge) >
        stride) {
        return false;
    }
    for (i = 0; i < n; i++) {
        const uint8_t *p = buf + sizeof(struct chpp_rwqe_hdr) +
                           i * sizeof(struct chpp_wqe_sge);

        sge[i].length = ldl_le_p(p);
        sge[i].lkey = ldl_le_p(p + 4);
        sge[i].addr = ldq_le_p(p + 8);
    }
    *num_sge = n;
    *capacity = chpp_sge_capacity(sge, n);
    return true;
}

int chpp_srq_wqe_fetch(ChppHcaState *s, ChppSrq *srq, uint32_t idx,
                       uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                       uint32_t *capacity)
{
    uint32_t stride = 1u << srq->log_stride;
    uint64_t off = (uint64_t)(idx & (chpp_srq_size(srq) - 1))
                   << srq->log_stride;
    uint8_t buf[1 << CHPP_MAX_WQE_SHIFT];

    *wr_id = 0;
    if (srq->state == CHPP_RES_SW) {
        return -EIO;
    }
    if (!chpp_ring_rw(s, &srq->ring, off, buf, stride,
                      DMA_DIRECTION_TO_DEVICE)) {
        chpp_srq_set_error(s, srq, "WQE not readable");
        return -EIO;
    }
    if (!chpp_rwqe_parse(buf, stride, wr_id, sge, num_sge, capacity)) {
        return -EINVAL;
    }
    return 0;
}

const char *chpp_srq_doorbell(ChppHcaState *s, uint32_t uar, uint32_t val)
{
    uint32_t srqn = val >> CHPP_UAR_DB_QPN_SHIFT;
    uint32_t pi = val & CHPP_UAR_DB_PI_MASK;
    ChppSrq *srq = chpp_srq_get(s, srqn);
    uint32_t d_old, d_new;

    if (!srq) {
        return "SRQ does not exist";
    }
    if (srq->uar != uar) {
        return "SRQ belongs to another UAR page";
    }
    /* Forward only, and never past the oldest WQE in use plus the size. */
    d_old = (srq->pi - srq->free) & CHPP_SRQ_IDX_MASK;
    d_new = (pi - srq->free) & CHPP_SRQ_IDX_MASK;
    if (d_old > d_new || d_new > chpp_srq_size(srq)) {
        return "SRQ producer index moves back or overfills the queue";
    }
    trace_chpp_hca_srq_doorbell(s->func, srqn, pi);
    srq->pi = pi;
    return NULL;
}

static uint8_t chpp_srq_check_index(ChppHcaState *s, uint32_t srqn)
{
    if (srqn >= s->params.num_srqs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "SRQ %u out of range (%u SRQs)", srqn,
                             s->params.num_srqs);
    }
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_sw2hw_srq(ChppHcaState *s, uint32_t srqn, uint64_t mailbox)
{
    struct chpp_srq_context ctx;
    uint8_t status = chpp_srq_check_index(s, srqn);
    ChppSrq *srq;
    ChppRing ring;
    uint32_t pd;
    uint16_t uar;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    srq = &s->srqs[srqn];
    if (srq->state != CHPP_RES_SW) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "SRQ %u already in hardware ownership", srqn);
    }
    if (!chpp_mailbox_read(s, mailbox, &ctx, sizeof(ctx), &status)) {
        return status;
    }
    pd = le32_to_cpu(ctx.pd);
    uar = le16_to_cpu(ctx.uar);
    ring = (ChppRing) {
        .mtt_base = le32_to_cpu(ctx.mtt_base),
        .log_page_size = ctx.log_page_size,
    };
    if (pd >= s->params.num_pds) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "SRQ %u: PD %u of %u",
                             srqn, pd, s->params.num_pds);
    }
    if (ctx.log_size > CHPP_SRQ_MAX_LOG_WQES ||
        ctx.log_stride < CHPP_MIN_WQE_SHIFT ||
        ctx.log_stride > CHPP_MAX_WQE_SHIFT) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "SRQ %u: log size %u (max %u), log stride %u "
                             "(%u..%u)", srqn, ctx.log_size,
                             CHPP_SRQ_MAX_LOG_WQES, ctx.log_stride,
                             CHPP_MIN_WQE_SHIFT, CHPP_MAX_WQE_SHIFT);
    }
    if (!chpp_ring_check(s, &ring,
                         chpp_srq_ring_bytes(ctx.log_size, ctx.log_stride) +
                         sizeof(struct chpp_srq_record))) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "SRQ %u: ring and record (MTT %u, log page %u) "
                             "not mapped", srqn, ring.mtt_base,
                             ring.log_page_size);
    }
    if (uar >= s->params.uar_pages) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "SRQ %u: UAR page %u of %u", srqn, uar,
                             s->params.uar_pages);
    }
    *srq = (ChppSrq) {
        .state = CHPP_RES_HW,
        .log_size = ctx.log_size,
        .log_stride = ctx.log_stride,
        .ring = ring,
        .pd = pd,
        .uar = uar,
    };
    trace_chpp_hca_srq_create(s->func, srqn, pd, ctx.log_size,
                              ctx.log_stride, uar);
    /* The record starts at 0: nothing taken, nothing in use. */
    chpp_srq_update(s, srq);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_hw2sw_srq(ChppHcaState *s, uint32_t srqn)
{
    uint8_t status = chpp_srq_check_index(s, srqn);
    ChppSrq *srq;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    srq = &s->srqs[srqn];
    if (srq->state == CHPP_RES_SW) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "SRQ %u not in hardware ownership", srqn);
    }
    if (srq->refs) {
        return chpp_cmd_fail(s, CHPP_STAT_RESOURCE_BUSY,
                             "SRQ %u: %u QPs attached", srqn, srq->refs);
    }
    trace_chpp_hca_srq_destroy(s->func, srqn);
    memset(srq, 0, sizeof(*srq));
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_srq(ChppHcaState *s, uint32_t srqn, uint64_t mailbox)
{
    uint8_t status = chpp_srq_check_index(s, srqn);
    struct chpp_srq_context ctx = {};
    const ChppSrq *srq;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    srq = &s->srqs[srqn];
    if (srq->state != CHPP_RES_SW) {
        ctx = (struct chpp_srq_context) {
            .pd = cpu_to_le32(srq->pd),
            .mtt_base = cpu_to_le32(srq->ring.mtt_base),
            .log_size = srq->log_size,
            .log_stride = srq->log_stride,
            .log_page_size = srq->ring.log_page_size,
            .state = srq->state,
            .uar = cpu_to_le16(srq->uar),
            .limit = cpu_to_le32(srq->limit),
            .pi = cpu_to_le32(srq->pi),
            .ci = cpu_to_le32(srq->ci),
            .free = cpu_to_le32(srq->free),
            .num_qps = cpu_to_le32(srq->refs),
        };
    }
    chpp_mailbox_write(s, mailbox, &ctx, sizeof(ctx), &status);
    return status;
}

uint8_t chpp_cmd_arm_srq(ChppHcaState *s, uint32_t srqn, uint64_t limit)
{
    uint8_t status = chpp_srq_check_index(s, srqn);
    ChppSrq *srq;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    srq = &s->srqs[srqn];
    if (srq->state != CHPP_RES_HW) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "SRQ %u not in hardware ownership or in error",
                             srqn);
    }
    if (limit > chpp_srq_size(srq)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "SRQ %u: limit %" PRIu64 " beyond its %u WQEs",
                             srqn, limit, chpp_srq_size(srq));
    }
    trace_chpp_hca_srq_arm(s->func, srqn, limit);
    srq->limit = limit;
    return CHPP_STAT_OK;
}

void chpp_srq_reset(ChppHcaState *s)
{
    /* num-srqs=0: no table at all (g_new0() gave NULL). */
    if (s->srqs) {
        memset(s->srqs, 0, sizeof(ChppSrq) * s->params.num_srqs);
    }
}

/*
 * Migration: incoming state replaces the SRQs, even a stream without them
 * (the "chpp-hca-function/srq" subsection is sent only while one exists).
 */
void chpp_srq_pre_load(ChppHcaState *s)
{
    uint32_t i;

    chpp_srq_reset(s);
    for (i = 0; i < s->params.num_qps; i++) {
        s->qps[i].srqn = 0;
        /* Streams without "copied-srq-wqe": every WQE in use is read. */
        s->qps[i].eng.recv_cached = false;
        s->qps[i].eng.recv_num_sge = 0;
    }
}

/*
 * The SRQs of a stream, before the QPs that refer to them are checked
 * (chpp_qp_post_load() counts the references and checks each QP's WQE in
 * use): what SW2HW_SRQ, the doorbells and the responder could have left.
 */
int chpp_srq_post_load(ChppHcaState *s)
{
    uint32_t i;

    for (i = 0; i < s->params.num_srqs; i++) {
        ChppSrq *srq = &s->srqs[i];
        uint32_t size = 1u << MIN(srq->log_size, CHPP_SRQ_MAX_LOG_WQES);

        srq->refs = 0;
        if (srq->state == CHPP_RES_SW) {
            if (!buffer_is_zero(srq, sizeof(*srq))) {
                return chpp_refuse(s, "SRQ %u: state in software ownership "
                                   "with a context", i);
            }
            continue;
        }
        if (srq->state > CHPP_RES_ERROR) {
            return chpp_refuse(s, "SRQ %u: state %u", i, srq->state);
        }
        if (srq->pd >= s->params.num_pds || srq->uar >= s->params.uar_pages) {
            return chpp_refuse(s, "SRQ %u: pd %u or uar %u out of range", i,
                               srq->pd, srq->uar);
        }
        if (srq->log_size > CHPP_SRQ_MAX_LOG_WQES ||
            srq->log_stride < CHPP_MIN_WQE_SHIFT ||
            srq->log_stride > CHPP_MAX_WQE_SHIFT) {
            return chpp_refuse(s, "SRQ %u: log_size %u log_stride %u", i,
                               srq->log_size, srq->log_stride);
        }
        if (srq->ring.log_page_size < CHPP_MIN_PAGE_SHIFT ||
            srq->ring.log_page_size > CHPP_MAX_PAGE_SHIFT ||
            srq->ring.mtt_base >= s->params.num_mtts ||
            DIV_ROUND_UP(chpp_srq_ring_bytes(srq->log_size, srq->log_stride) +
                         sizeof(struct chpp_srq_record),
                         1ull << srq->ring.log_page_size) >
            s->params.num_mtts - srq->ring.mtt_base) {
            return chpp_refuse(s, "SRQ %u: ring (mtt_base %u, log_page_size "
                               "%u) beyond num_mtts %u", i,
                               srq->ring.mtt_base, srq->ring.log_page_size,
                               s->params.num_mtts);
        }
        if (srq->pi > CHPP_SRQ_IDX_MASK || srq->ci > CHPP_SRQ_IDX_MASK ||
            srq->free > CHPP_SRQ_IDX_MASK || srq->limit > size) {
            return chpp_refuse(s, "SRQ %u: pi 0x%x ci 0x%x free 0x%x limit %u",
                               i, srq->pi, srq->ci, srq->free, srq->limit);
        }
        /* free <= ci <= pi, at most the size from free. */
        if (((srq->pi - srq->free) & CHPP_SRQ_IDX_MASK) > size ||
            ((srq->ci - srq->free) & CHPP_SRQ_IDX_MASK) >
            ((srq->pi - srq->free) & CHPP_SRQ_IDX_MASK)) {
            return chpp_refuse(s, "SRQ %u: free 0x%x, ci 0x%x, pi 0x%x not in "
                               "order within %u WQEs", i, srq->free, srq->ci,
                               srq->pi, size);
        }
    }
    return 0;
}

/*
 * The WQE a loaded QP attached to @srq is filling: one the SRQ handed out
 * and has not freed (from free to ci).
 */
bool chpp_srq_in_use(const ChppSrq *srq, uint32_t idx)
{
    uint32_t taken = (srq->ci - srq->free) & CHPP_SRQ_IDX_MASK;

    return idx <= CHPP_SRQ_IDX_MASK &&
           ((idx - srq->free) & CHPP_SRQ_IDX_MASK) < taken;
}

/*
 * A QP's copied SRQ WQE counts only with a message in progress (a take
 * clears recv_cached; what a finished message left is never read).
 */
bool chpp_srq_wqe_copied(const ChppQp *qp)
{
    return qp->eng.recv_active && qp->eng.recv_cached;
}

static const VMStateDescription vmstate_chpp_srq = {
    .name = "chpp-hca-srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8(state, ChppSrq),
        VMSTATE_UINT8(log_size, ChppSrq),
        VMSTATE_UINT8(log_stride, ChppSrq),
        VMSTATE_UINT32(ring.mtt_base, ChppSrq),
        VMSTATE_UINT8(ring.log_page_size, ChppSrq),
        VMSTATE_UINT32(pd, ChppSrq),
        VMSTATE_UINT16(uar, ChppSrq),
        VMSTATE_UINT32(limit, ChppSrq),
        VMSTATE_UINT32(pi, ChppSrq),
        VMSTATE_UINT32(ci, ChppSrq),
        VMSTATE_UINT32(free, ChppSrq),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_chpp_sge = {
    .name = "chpp-hca-sge",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(lkey, ChppSge),
        VMSTATE_UINT32(length, ChppSge),
        VMSTATE_UINT64(addr, ChppSge),
        VMSTATE_END_OF_LIST()
    }
};

/* The SRQ WQE each QP copied for the message it is filling. */
static const VMStateDescription vmstate_chpp_qp_srq_wqe = {
    .name = "chpp-hca-qp-srq-wqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(eng.recv_cached, ChppQp),
        VMSTATE_UINT32(eng.recv_num_sge, ChppQp),
        VMSTATE_UINT64(eng.recv_wr_id, ChppQp),
        VMSTATE_STRUCT_ARRAY(eng.recv_sge, ChppQp, CHPP_MAX_SGE, 1,
                             vmstate_chpp_sge, ChppSge),
        VMSTATE_END_OF_LIST()
    }
};

static bool chpp_srq_wqes_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    uint32_t i;

    for (i = 0; i < s->params.num_qps; i++) {
        if (chpp_srq_wqe_copied(&s->qps[i])) {
            return true;
        }
    }
    return false;
}

/*
 * Only sent while a message fills a copied SRQ WQE: without it (older
 * streams) the destination reads such a WQE from the ring, whose slot the
 * source's free index still held.
 */
const VMStateDescription vmstate_chpp_srq_wqes = {
    /* Not "chpp-hca-function/srq...": that would read as its child. */
    .name = "chpp-hca-function/copied-srq-wqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_srq_wqes_needed,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(qps, ChppHcaState,
                                             params.num_qps,
                                             vmstate_chpp_qp_srq_wqe, ChppQp),
        VMSTATE_END_OF_LIST()
    }
};

/* Which SRQ each QP takes its receive WQEs from (CHPP_QP_FLAG_SRQ). */
static const VMStateDescription vmstate_chpp_qp_srqn = {
    .name = "chpp-hca-qp-srqn",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(srqn, ChppQp),
        VMSTATE_END_OF_LIST()
    }
};

static bool chpp_srqs_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    uint32_t i;

    for (i = 0; i < s->params.num_srqs; i++) {
        if (s->srqs[i].state != CHPP_RES_SW) {
            return true;
        }
    }
    return false;
}

/*
 * Only sent while an SRQ exists, so streams of devices before ABI 1.5 (and
 * of functions without SRQs) load as they are; the function's post_load
 * checks what it brought (chpp_srq_post_load(), chpp_qp_post_load()).
 */
const VMStateDescription vmstate_chpp_srqs = {
    .name = "chpp-hca-function/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_srqs_needed,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32_EQUAL(params.num_srqs, ChppHcaState, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(srqs, ChppHcaState,
                                             params.num_srqs,
                                             vmstate_chpp_srq, ChppSrq),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(qps, ChppHcaState,
                                             params.num_qps,
                                             vmstate_chpp_qp_srqn, ChppQp),
        VMSTATE_END_OF_LIST()
    }
};
