/*
 * chpp-hca: QP contexts and the modify-QP state machine.
 *
 * Every QP (QPN = index, 0 .. num-qps - 1) always exists; in RESET it has no
 * queues and no CQs.  RST2INIT gives it its type, PD, CQs and rings; the
 * other modify commands move it along the InfiniBand state machine with the
 * transitions and attribute masks of Linux's ib_modify_qp_is_ok().  Every
 * check runs before anything changes, so a failing command leaves the QP as
 * it was.  After each change the engine is told (chpp_upcalls.qp_transition)
 * and sets up, drains, flushes or frees its part of the QP.
 * docs/queue-pairs.md is the specification of this file.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

/* WQE indexes (producer, consumer) are 16-bit counters: the doorbell's PI. */
#define CHPP_QP_IDX_MASK        CHPP_UAR_DB_PI_MASK
#define CHPP_QP_MAX_LOG_WQES    15      /* 2^15 = CHPP_MAX_QP_WQES */
#define CHPP_QP_NUM_TYPES       (CHPP_QPT_UD + 1)

/* The rules (masks, SQE) of a type: the special QPs follow UD's. */
static uint8_t chpp_qp_rules(uint8_t type)
{
    return chpp_qpt_special(type) ? CHPP_QPT_UD : type;
}
#define CHPP_QP_MAX_TIMEOUT     31
#define CHPP_QP_MAX_RNR_TIMER   31
#define CHPP_QP_MAX_DEST_VF     7
#define CHPP_QP_MIN_MTU         1       /* 256 bytes */

QEMU_BUILD_BUG_ON(1u << CHPP_QP_MAX_LOG_WQES != CHPP_MAX_QP_WQES);

/* LOCAL_WRITE is accepted (Linux passes it) but grants nothing to a QP. */
#define CHPP_ACCESS_ALL \
    (CHPP_ACCESS_LOCAL_WRITE | CHPP_ACCESS_REMOTE_WRITE | \
     CHPP_ACCESS_REMOTE_READ | CHPP_ACCESS_REMOTE_ATOMIC)

/* Creation flags RST2INIT accepts. */
#define CHPP_QP_FLAGS_ALL       (CHPP_QP_FLAG_SQ_SIG_ALL | CHPP_QP_FLAG_SRQ)

/* Attributes the device never supports, whatever the transition. */
#define CHPP_QP_ATTR_UNSUPPORTED (CHPP_QP_ATTR_ALT_PATH | CHPP_QP_ATTR_CAP)

/* Shorter names for the mask table. */
#define A_CUR       CHPP_QP_ATTR_CUR_STATE
#define A_SQD_NTF   CHPP_QP_ATTR_EN_SQD_ASYNC_NOTIFY
#define A_ACCESS    CHPP_QP_ATTR_ACCESS_FLAGS
#define A_PKEY      CHPP_QP_ATTR_PKEY_INDEX
#define A_PORT      CHPP_QP_ATTR_PORT
#define A_QKEY      CHPP_QP_ATTR_QKEY
#define A_AV        CHPP_QP_ATTR_AV
#define A_MTU       CHPP_QP_ATTR_PATH_MTU
#define A_TIMEOUT   CHPP_QP_ATTR_TIMEOUT
#define A_RETRY     CHPP_QP_ATTR_RETRY_CNT
#define A_RNR_RETRY CHPP_QP_ATTR_RNR_RETRY
#define A_RQ_PSN    CHPP_QP_ATTR_RQ_PSN
#define A_RD_ATOM   CHPP_QP_ATTR_MAX_QP_RD_ATOMIC
#define A_ALT       CHPP_QP_ATTR_ALT_PATH
#define A_RNR_TMR   CHPP_QP_ATTR_MIN_RNR_TIMER
#define A_SQ_PSN    CHPP_QP_ATTR_SQ_PSN
#define A_DEST_RD   CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC
#define A_MIG       CHPP_QP_ATTR_PATH_MIG_STATE
#define A_DEST_QPN  CHPP_QP_ATTR_DEST_QPN

#define S(st)       (1u << CHPP_QPS_##st)
#define S_ANY       (S(RESET) | S(INIT) | S(RTR) | S(RTS) | S(SQD) | S(SQE) | \
                     S(ERR))

typedef enum ChppQpTransId {
    CHPP_QPT_RST2INIT,
    CHPP_QPT_INIT2INIT,
    CHPP_QPT_INIT2RTR,
    CHPP_QPT_RTR2RTS,
    CHPP_QPT_RTS2RTS,
    CHPP_QPT_RTS2SQD,
    CHPP_QPT_SQD2SQD,
    CHPP_QPT_SQD2RTS,
    CHPP_QPT_SQE2RTS,
    CHPP_QPT_2ERR,
    CHPP_QPT_2RST,
    CHPP_QPT_NUM
} ChppQpTransId;

typedef struct ChppQpMasks {
    bool valid;             /* the transition exists for this QP type */
    uint32_t req;           /* attributes that must be in the mask */
    uint32_t opt;           /* attributes that may be in the mask */
} ChppQpMasks;

typedef struct ChppQpTrans {
    uint16_t opcode;
    const char *name;
    uint8_t from;           /* S() bits of the allowed current states */
    uint8_t to;
    bool mailbox;           /* reads struct chpp_qp_modify */
    ChppQpMasks type[CHPP_QP_NUM_TYPES];
} ChppQpTrans;

#define M(r, o)     { .valid = true, .req = (r), .opt = (o) }
#define M_ALL(r, o) { M(r, o), M(r, o), M(r, o) }

/* The rules, indexed by transition and QP type (RC, UC, UD). */
static const ChppQpTrans chpp_qp_trans[CHPP_QPT_NUM] = {
    [CHPP_QPT_RST2INIT] = {
        CHPP_CMD_RST2INIT_QP, "RST2INIT", S(RESET), CHPP_QPS_INIT, true, {
            [CHPP_QPT_RC] = M(A_PKEY | A_PORT | A_ACCESS, 0),
            [CHPP_QPT_UC] = M(A_PKEY | A_PORT | A_ACCESS, 0),
            [CHPP_QPT_UD] = M(A_PKEY | A_PORT | A_QKEY, 0),
        } },
    [CHPP_QPT_INIT2INIT] = {
        CHPP_CMD_INIT2INIT_QP, "INIT2INIT", S(INIT), CHPP_QPS_INIT, true, {
            [CHPP_QPT_RC] = M(0, A_PKEY | A_PORT | A_ACCESS),
            [CHPP_QPT_UC] = M(0, A_PKEY | A_PORT | A_ACCESS),
            [CHPP_QPT_UD] = M(0, A_PKEY | A_PORT | A_QKEY),
        } },
    [CHPP_QPT_INIT2RTR] = {
        CHPP_CMD_INIT2RTR_QP, "INIT2RTR", S(INIT), CHPP_QPS_RTR, true, {
            [CHPP_QPT_RC] = M(A_AV | A_MTU | A_DEST_QPN | A_RQ_PSN |
                              A_DEST_RD | A_RNR_TMR,
                              A_ALT | A_ACCESS | A_PKEY),
            [CHPP_QPT_UC] = M(A_AV | A_MTU | A_DEST_QPN | A_RQ_PSN,
                              A_ALT | A_ACCESS | A_PKEY),
            [CHPP_QPT_UD] = M(0, A_PKEY | A_QKEY),
        } },
    [CHPP_QPT_RTR2RTS] = {
        CHPP_CMD_RTR2RTS_QP, "RTR2RTS", S(RTR), CHPP_QPS_RTS, true, {
            [CHPP_QPT_RC] = M(A_TIMEOUT | A_RETRY | A_RNR_RETRY | A_SQ_PSN |
                              A_RD_ATOM,
                              A_CUR | A_ALT | A_ACCESS | A_RNR_TMR | A_MIG),
            [CHPP_QPT_UC] = M(A_SQ_PSN, A_CUR | A_ALT | A_ACCESS | A_MIG),
            [CHPP_QPT_UD] = M(A_SQ_PSN, A_CUR | A_QKEY),
        } },
    [CHPP_QPT_RTS2RTS] = {
        CHPP_CMD_RTS2RTS_QP, "RTS2RTS", S(RTS), CHPP_QPS_RTS, true, {
            [CHPP_QPT_RC] = M(0, A_CUR | A_ACCESS | A_ALT | A_MIG |
                              A_RNR_TMR),
            [CHPP_QPT_UC] = M(0, A_CUR | A_ACCESS | A_ALT | A_MIG),
            [CHPP_QPT_UD] = M(0, A_CUR | A_QKEY),
        } },
    [CHPP_QPT_RTS2SQD] = {
        CHPP_CMD_RTS2SQD_QP, "RTS2SQD", S(RTS), CHPP_QPS_SQD, true,
        M_ALL(0, A_SQD_NTF) },
    [CHPP_QPT_SQD2SQD] = {
        CHPP_CMD_SQD2SQD_QP, "SQD2SQD", S(SQD), CHPP_QPS_SQD, true, {
            [CHPP_QPT_RC] = M(0, A_PORT | A_AV | A_TIMEOUT | A_RETRY |
                              A_RNR_RETRY | A_RD_ATOM | A_DEST_RD | A_ALT |
                              A_ACCESS | A_PKEY | A_RNR_TMR | A_MIG),
            [CHPP_QPT_UC] = M(0, A_AV | A_ALT | A_ACCESS | A_PKEY | A_MIG),
            [CHPP_QPT_UD] = M(0, A_PKEY | A_QKEY),
        } },
    [CHPP_QPT_SQD2RTS] = {
        CHPP_CMD_SQD2RTS_QP, "SQD2RTS", S(SQD), CHPP_QPS_RTS, true, {
            [CHPP_QPT_RC] = M(0, A_CUR | A_ALT | A_ACCESS | A_RNR_TMR |
                              A_MIG),
            [CHPP_QPT_UC] = M(0, A_CUR | A_ALT | A_ACCESS | A_MIG),
            [CHPP_QPT_UD] = M(0, A_CUR | A_QKEY),
        } },
    [CHPP_QPT_SQE2RTS] = {
        CHPP_CMD_SQERR2RTS_QP, "SQERR2RTS", S(SQE), CHPP_QPS_RTS, true, {
            /* RC has no SQE state. */
            [CHPP_QPT_UC] = M(0, A_CUR | A_ACCESS),
            [CHPP_QPT_UD] = M(0, A_CUR | A_QKEY),
        } },
    [CHPP_QPT_2ERR] = {
        CHPP_CMD_2ERR_QP, "2ERR", S_ANY & ~S(RESET), CHPP_QPS_ERR, false,
        M_ALL(0, 0) },
    [CHPP_QPT_2RST] = {
        CHPP_CMD_2RST_QP, "2RST", S_ANY, CHPP_QPS_RESET, false,
        M_ALL(0, 0) },
};

static const char *chpp_qp_state_str(uint8_t state)
{
    return chpp_qp_state_name(state) ?: "?";
}

static const ChppQpTrans *chpp_qp_trans_find(uint16_t opcode)
{
    unsigned i;

    for (i = 0; i < CHPP_QPT_NUM; i++) {
        if (chpp_qp_trans[i].opcode == opcode) {
            return &chpp_qp_trans[i];
        }
    }
    return NULL;
}

/* Bytes of a work queue of 2^log_size WQEs of 2^log_stride bytes. */
static uint64_t chpp_qp_wq_bytes(uint8_t log_size, uint8_t log_stride)
{
    return (uint64_t)1 << (log_size + log_stride);
}

/* The MTT entries of a ring of @size bytes lie inside the MTT. */
static bool chpp_qp_ring_in_mtt(ChppHcaState *s, const ChppRing *ring,
                                uint64_t size)
{
    uint64_t pages;

    if (ring->log_page_size < CHPP_MIN_PAGE_SHIFT ||
        ring->log_page_size > CHPP_MAX_PAGE_SHIFT) {
        return false;
    }
    pages = DIV_ROUND_UP(size, (uint64_t)1 << ring->log_page_size);
    return ring->mtt_base < s->params.num_mtts &&
           pages <= s->params.num_mtts - ring->mtt_base;
}

/* Values of the attributes named in @mask. */
static uint8_t chpp_qp_check_attrs(ChppHcaState *s, uint32_t qpn,
                                   uint32_t mask,
                                   const struct chpp_qp_context *ctx)
{
    if ((mask & A_PORT) && ctx->port != 1) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: port %u", qpn,
                             ctx->port);
    }
    if ((mask & A_PKEY) && le16_to_cpu(ctx->pkey_index) != 0) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: P_Key index %u (table of 1)", qpn,
                             le16_to_cpu(ctx->pkey_index));
    }
    if ((mask & A_ACCESS) &&
        (le32_to_cpu(ctx->access_flags) & ~CHPP_ACCESS_ALL)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: unknown access flags 0x%x", qpn,
                             le32_to_cpu(ctx->access_flags));
    }
    if ((mask & A_MTU) &&
        (ctx->path_mtu < CHPP_QP_MIN_MTU || ctx->path_mtu > CHPP_MTU_4096)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: path MTU %u",
                             qpn, ctx->path_mtu);
    }
    if ((mask & A_TIMEOUT) && ctx->timeout > CHPP_QP_MAX_TIMEOUT) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: timeout %u",
                             qpn, ctx->timeout);
    }
    if ((mask & A_RETRY) && ctx->retry_cnt > CHPP_QP_MAX_RETRY) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: retry count %u",
                             qpn, ctx->retry_cnt);
    }
    if ((mask & A_RNR_RETRY) && ctx->rnr_retry > CHPP_QP_MAX_RETRY) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: RNR retry %u",
                             qpn, ctx->rnr_retry);
    }
    if ((mask & A_RNR_TMR) && ctx->min_rnr_timer > CHPP_QP_MAX_RNR_TIMER) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: min RNR timer %u", qpn,
                             ctx->min_rnr_timer);
    }
    if ((mask & A_RD_ATOM) && ctx->max_rd_atomic > CHPP_MAX_RD_ATOMIC) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: max_rd_atomic %u (max %u)", qpn,
                             ctx->max_rd_atomic, CHPP_MAX_RD_ATOMIC);
    }
    if ((mask & A_DEST_RD) && ctx->max_dest_rd_atomic > CHPP_MAX_RD_ATOMIC) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: max_dest_rd_atomic %u (max %u)", qpn,
                             ctx->max_dest_rd_atomic, CHPP_MAX_RD_ATOMIC);
    }
    if ((mask & A_SQ_PSN) && le32_to_cpu(ctx->sq_psn) > CHPP_PSN_MASK) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: SQ PSN 0x%x",
                             qpn, le32_to_cpu(ctx->sq_psn));
    }
    if ((mask & A_RQ_PSN) && le32_to_cpu(ctx->rq_psn) > CHPP_PSN_MASK) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: RQ PSN 0x%x",
                             qpn, le32_to_cpu(ctx->rq_psn));
    }
    if ((mask & A_DEST_QPN) &&
        le32_to_cpu(ctx->dest_qpn) > CHPP_PSN_MASK) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: destination QPN 0x%x", qpn,
                             le32_to_cpu(ctx->dest_qpn));
    }
    if ((mask & A_AV) && ctx->dest_vf > CHPP_QP_MAX_DEST_VF) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: destination function %u", qpn,
                             ctx->dest_vf);
    }
    return CHPP_STAT_OK;
}

static void chpp_qp_apply_attrs(ChppQp *qp, uint32_t mask,
                                const struct chpp_qp_context *ctx)
{
    if (mask & A_PORT) {
        qp->port = ctx->port;
    }
    if (mask & A_PKEY) {
        qp->pkey_index = le16_to_cpu(ctx->pkey_index);
    }
    if (mask & A_ACCESS) {
        qp->access_flags = le32_to_cpu(ctx->access_flags);
    }
    if (mask & A_QKEY) {
        qp->qkey = le32_to_cpu(ctx->qkey);
    }
    if (mask & A_AV) {
        qp->dest_node = le32_to_cpu(ctx->dest_node);
        qp->dest_vf = ctx->dest_vf;
        qp->dest_magic = ctx->dest_magic;
    }
    if (mask & A_MTU) {
        qp->path_mtu = ctx->path_mtu;
    }
    if (mask & A_TIMEOUT) {
        qp->timeout = ctx->timeout;
    }
    if (mask & A_RETRY) {
        qp->retry_cnt = ctx->retry_cnt;
    }
    if (mask & A_RNR_RETRY) {
        qp->rnr_retry = ctx->rnr_retry;
    }
    if (mask & A_RQ_PSN) {
        qp->rq_psn = le32_to_cpu(ctx->rq_psn);
    }
    if (mask & A_RD_ATOM) {
        qp->max_rd_atomic = ctx->max_rd_atomic;
    }
    if (mask & A_RNR_TMR) {
        qp->min_rnr_timer = ctx->min_rnr_timer;
    }
    if (mask & A_SQ_PSN) {
        qp->sq_psn = le32_to_cpu(ctx->sq_psn);
    }
    if (mask & A_DEST_RD) {
        qp->max_dest_rd_atomic = ctx->max_dest_rd_atomic;
    }
    if (mask & A_DEST_QPN) {
        qp->dest_qpn = le32_to_cpu(ctx->dest_qpn);
    }
    /* A_MIG: accepted and ignored (no alternate path); A_CUR: checked. */
}

/* RST2INIT: the creation fields, read whatever the mask says. */
static uint8_t chpp_qp_check_create(ChppHcaState *s, uint32_t qpn,
                                    const struct chpp_qp_context *ctx)
{
    uint32_t pd = le32_to_cpu(ctx->pd);
    uint32_t send_cqn = le32_to_cpu(ctx->send_cqn);
    uint32_t recv_cqn = le32_to_cpu(ctx->recv_cqn);
    uint16_t uar = le16_to_cpu(ctx->uar);
    ChppRing sq = {
        .mtt_base = le32_to_cpu(ctx->sq_mtt_base),
        .log_page_size = ctx->sq_log_page_size,
    };
    ChppRing rq = {
        .mtt_base = le32_to_cpu(ctx->rq_mtt_base),
        .log_page_size = ctx->rq_log_page_size,
    };
    bool srq = ctx->flags & CHPP_QP_FLAG_SRQ;
    uint8_t rq_log_size = ctx->log_rq_size;
    uint8_t rq_log_stride = ctx->log_rq_stride;
    uint64_t sq_bytes, rq_bytes;

    /* The type was checked first: the attribute masks depend on it. */
    if (pd >= s->params.num_pds) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: PD %u of %u",
                             qpn, pd, s->params.num_pds);
    }
    if (!chpp_cq_get(s, send_cqn)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RESOURCE,
                             "QP %u: send CQ %u not in hardware ownership",
                             qpn, send_cqn);
    }
    if (!chpp_cq_get(s, recv_cqn)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RESOURCE,
                             "QP %u: receive CQ %u not in hardware ownership",
                             qpn, recv_cqn);
    }
    /* With an SRQ the RQ fields are ignored: the QP has no RQ. */
    if (srq) {
        rq_log_size = 0;
        rq_log_stride = CHPP_MIN_WQE_SHIFT;
    }
    if (ctx->log_sq_size > CHPP_QP_MAX_LOG_WQES ||
        rq_log_size > CHPP_QP_MAX_LOG_WQES) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "QP %u: log SQ size %u, log RQ size %u "
                             "(max %u)", qpn, ctx->log_sq_size,
                             rq_log_size, CHPP_QP_MAX_LOG_WQES);
    }
    if (ctx->log_sq_stride < CHPP_MIN_WQE_SHIFT ||
        ctx->log_sq_stride > CHPP_MAX_WQE_SHIFT ||
        rq_log_stride < CHPP_MIN_WQE_SHIFT ||
        rq_log_stride > CHPP_MAX_WQE_SHIFT) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "QP %u: log SQ stride %u, log RQ stride %u "
                             "(%u..%u)", qpn, ctx->log_sq_stride,
                             rq_log_stride, CHPP_MIN_WQE_SHIFT,
                             CHPP_MAX_WQE_SHIFT);
    }
    sq_bytes = chpp_qp_wq_bytes(ctx->log_sq_size, ctx->log_sq_stride);
    rq_bytes = chpp_qp_wq_bytes(rq_log_size, rq_log_stride);
    if (!chpp_qp_ring_in_mtt(s, &sq, sq_bytes) ||
        !chpp_ring_check(s, &sq, sq_bytes)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: SQ ring (MTT %u, log page %u) not "
                             "mapped", qpn, sq.mtt_base, sq.log_page_size);
    }
    if (!srq && (!chpp_qp_ring_in_mtt(s, &rq, rq_bytes) ||
                 !chpp_ring_check(s, &rq, rq_bytes))) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: RQ ring (MTT %u, log page %u) not "
                             "mapped", qpn, rq.mtt_base, rq.log_page_size);
    }
    if (uar >= s->params.uar_pages) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: UAR page %u of %u", qpn, uar,
                             s->params.uar_pages);
    }
    if (ctx->flags & ~CHPP_QP_FLAGS_ALL) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: unknown flags 0x%x", qpn, ctx->flags);
    }
    if (srq) {
        ChppSrq *q = chpp_srq_get(s, le32_to_cpu(ctx->srqn));

        if (!q || q->state != CHPP_RES_HW) {
            return chpp_cmd_fail(s, CHPP_STAT_BAD_RESOURCE,
                                 "QP %u: SRQ %u not in hardware ownership",
                                 qpn, le32_to_cpu(ctx->srqn));
        }
    }
    return CHPP_STAT_OK;
}

static void chpp_qp_apply_create(ChppHcaState *s, ChppQp *qp,
                                 const struct chpp_qp_context *ctx)
{
    qp->type = ctx->type;
    qp->pd = le32_to_cpu(ctx->pd);
    qp->send_cqn = le32_to_cpu(ctx->send_cqn);
    qp->recv_cqn = le32_to_cpu(ctx->recv_cqn);
    qp->sq.mtt_base = le32_to_cpu(ctx->sq_mtt_base);
    qp->sq.log_page_size = ctx->sq_log_page_size;
    qp->rq.mtt_base = le32_to_cpu(ctx->rq_mtt_base);
    qp->rq.log_page_size = ctx->rq_log_page_size;
    qp->log_sq_size = ctx->log_sq_size;
    qp->log_sq_stride = ctx->log_sq_stride;
    qp->log_rq_size = ctx->log_rq_size;
    qp->log_rq_stride = ctx->log_rq_stride;
    qp->uar = le16_to_cpu(ctx->uar);
    qp->magic = ctx->magic;
    qp->flags = ctx->flags;
    if (qp->flags & CHPP_QP_FLAG_SRQ) {
        /* No RQ: its fields are ignored and read 0. */
        qp->rq = (ChppRing) {};
        qp->log_rq_size = 0;
        qp->log_rq_stride = 0;
        qp->srqn = le32_to_cpu(ctx->srqn);
        s->srqs[qp->srqn].refs++;
    }
    /* UD has no path: its messages are limited by the port MTU. */
    if (chpp_qpt_ud(qp->type)) {
        qp->path_mtu = CHPP_MTU_4096;
    }
    /* The special QPs belong to the port (the function's only one). */
    if (chpp_qpt_special(qp->type)) {
        qp->port = 1;
    }
    s->cqs[qp->send_cqn].refs++;
    s->cqs[qp->recv_cqn].refs++;
}

static void chpp_qp_unref_cq(ChppHcaState *s, uint32_t cqn)
{
    if (cqn < s->params.num_cqs && s->cqs[cqn].refs) {
        s->cqs[cqn].refs--;
    }
}

/* To RESET: the engine lets go of the QP, then everything is cleared. */
static void chpp_qp_to_reset(ChppHcaState *s, ChppQp *qp)
{
    uint8_t old = qp->state;

    if (old == CHPP_QPS_RESET) {
        return;
    }
    qp->state = CHPP_QPS_RESET;
    chpp_upcalls.qp_transition(s, qp, old);
    chpp_mcg_detach_qp(s, chpp_qpn(s, qp));
    chpp_qp_unref_cq(s, qp->send_cqn);
    chpp_qp_unref_cq(s, qp->recv_cqn);
    if (qp->flags & CHPP_QP_FLAG_SRQ) {
        ChppSrq *srq = chpp_srq_get(s, qp->srqn);

        /* A WQE it was filling is abandoned: the record frees it. */
        qp->flags = 0;
        if (srq) {
            srq->refs--;
            chpp_srq_update(s, srq);
        }
    }
    memset(qp, 0, sizeof(*qp));
}

uint8_t chpp_cmd_modify_qp(ChppHcaState *s, uint16_t opcode, uint32_t qpn,
                           uint64_t mailbox)
{
    const ChppQpTrans *t = chpp_qp_trans_find(opcode);
    struct chpp_qp_modify m = {};
    const struct chpp_qp_context *ctx = &m.ctx;
    const ChppQpMasks *masks;
    ChppQpMasks special;
    uint8_t status = CHPP_STAT_OK;
    uint8_t type, old;
    uint32_t mask = 0;
    ChppQp *qp;

    if (!t) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_OP, "not a modify-QP opcode");
    }
    if (qpn >= s->params.num_qps) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "QP %u out of range (%u QPs)", qpn,
                             s->params.num_qps);
    }
    qp = &s->qps[qpn];
    old = qp->state;
    if (!(t->from & (1u << old)) ||
        (old != CHPP_QPS_RESET && !t->type[chpp_qp_rules(qp->type)].valid)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_QP_STATE,
                             "QP %u: %s not allowed in state %s", qpn,
                             t->name, chpp_qp_state_str(old));
    }

    if (t->mailbox) {
        if (!chpp_mailbox_read(s, mailbox, &m, sizeof(m), &status)) {
            return status;
        }
        mask = le32_to_cpu(m.attr_mask);
    }
    type = old == CHPP_QPS_RESET ? ctx->type : qp->type;
    if (chpp_qp_rules(type) >= CHPP_QP_NUM_TYPES) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: type %u", qpn,
                             type);
    }
    /* The special QPs have their own numbers (ABI 1.6). */
    if ((type == CHPP_QPT_SMI && qpn != 0) ||
        (type == CHPP_QPT_GSI && qpn != 1)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "QP %u: type %s is for "
                             "QP %u only", qpn, chpp_qp_type_name(type),
                             type == CHPP_QPT_SMI ? 0 : 1);
    }
    masks = &t->type[chpp_qp_rules(type)];
    if (chpp_qpt_special(type)) {
        /* ib_modify_qp_is_ok(): a special QP has no PORT attribute. */
        special = *masks;
        special.req &= ~A_PORT;
        special.opt &= ~A_PORT;
        masks = &special;
    }

    if (mask & CHPP_QP_ATTR_STATE) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: %s: the STATE attribute is implied",
                             qpn, t->name);
    }
    if (mask & CHPP_QP_ATTR_UNSUPPORTED) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: %s: attributes 0x%x not supported", qpn,
                             t->name, mask & CHPP_QP_ATTR_UNSUPPORTED);
    }
    if (mask & ~(masks->req | masks->opt)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: %s: attributes 0x%x not allowed", qpn,
                             t->name, mask & ~(masks->req | masks->opt));
    }
    if ((mask & masks->req) != masks->req) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "QP %u: %s: required attributes 0x%x missing",
                             qpn, t->name, masks->req & ~mask);
    }
    if ((mask & A_CUR) && ctx->state != old) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_QP_STATE,
                             "QP %u: %s: current state %s, not %s", qpn,
                             t->name, chpp_qp_state_str(old),
                             chpp_qp_state_str(ctx->state));
    }
    if (opcode == CHPP_CMD_RST2INIT_QP) {
        status = chpp_qp_check_create(s, qpn, ctx);
        if (status != CHPP_STAT_OK) {
            return status;
        }
    }
    status = chpp_qp_check_attrs(s, qpn, mask, ctx);
    if (status != CHPP_STAT_OK) {
        return status;
    }

    /* Everything checked: apply. */
    trace_chpp_hca_qp_modify(s->func, qpn, t->name, old, t->to, mask);
    if (t->to == CHPP_QPS_RESET) {
        chpp_qp_to_reset(s, qp);
        return CHPP_STAT_OK;
    }
    if (opcode == CHPP_CMD_RST2INIT_QP) {
        chpp_qp_apply_create(s, qp, ctx);
        trace_chpp_hca_qp_create(s->func, qpn, qp->type, qp->pd, qp->send_cqn,
                                 qp->recv_cqn, qp->log_sq_size,
                                 qp->log_rq_size);
    }
    chpp_qp_apply_attrs(qp, mask, ctx);
    if (opcode == CHPP_CMD_RTS2SQD_QP) {
        qp->eng.sqd_notify = (mask & A_SQD_NTF) && ctx->en_sqd_async_notify;
    }
    qp->state = t->to;
    chpp_upcalls.qp_transition(s, qp, old);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_qp(ChppHcaState *s, uint32_t qpn, uint64_t mailbox)
{
    struct chpp_qp_context ctx = {};
    uint8_t status = CHPP_STAT_OK;
    const ChppQp *qp;

    if (qpn >= s->params.num_qps) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "QP %u out of range (%u QPs)", qpn,
                             s->params.num_qps);
    }
    qp = &s->qps[qpn];
    ctx.state = qp->state;
    ctx.type = qp->type;
    ctx.port = qp->port;
    ctx.path_mtu = qp->path_mtu;
    ctx.pd = cpu_to_le32(qp->pd);
    ctx.send_cqn = cpu_to_le32(qp->send_cqn);
    ctx.recv_cqn = cpu_to_le32(qp->recv_cqn);
    ctx.sq_mtt_base = cpu_to_le32(qp->sq.mtt_base);
    ctx.rq_mtt_base = cpu_to_le32(qp->rq.mtt_base);
    ctx.log_sq_size = qp->log_sq_size;
    ctx.log_sq_stride = qp->log_sq_stride;
    ctx.log_rq_size = qp->log_rq_size;
    ctx.log_rq_stride = qp->log_rq_stride;
    ctx.sq_log_page_size = qp->sq.log_page_size;
    ctx.rq_log_page_size = qp->rq.log_page_size;
    ctx.uar = cpu_to_le16(qp->uar);
    ctx.access_flags = cpu_to_le32(qp->access_flags);
    ctx.qkey = cpu_to_le32(qp->qkey);
    ctx.dest_node = cpu_to_le32(qp->dest_node);
    ctx.dest_qpn = cpu_to_le32(qp->dest_qpn);
    ctx.sq_psn = cpu_to_le32(qp->sq_psn);
    ctx.rq_psn = cpu_to_le32(qp->rq_psn);
    ctx.timeout = qp->timeout;
    ctx.retry_cnt = qp->retry_cnt;
    ctx.rnr_retry = qp->rnr_retry;
    ctx.min_rnr_timer = qp->min_rnr_timer;
    ctx.max_rd_atomic = qp->max_rd_atomic;
    ctx.max_dest_rd_atomic = qp->max_dest_rd_atomic;
    ctx.magic = qp->magic;
    ctx.dest_magic = qp->dest_magic;
    ctx.pkey_index = cpu_to_le16(qp->pkey_index);
    ctx.dest_vf = qp->dest_vf;
    ctx.flags = qp->flags;
    ctx.sq_pi = cpu_to_le32(qp->sq_pi);
    ctx.sq_ci = cpu_to_le32(qp->sq_ci);
    ctx.rq_pi = cpu_to_le32(qp->rq_pi);
    ctx.rq_ci = cpu_to_le32(qp->rq_ci);
    ctx.sq_inflight = cpu_to_le32(qp->eng.infl_count);
    ctx.sq_draining = qp->state == CHPP_QPS_SQD && qp->eng.infl_count != 0;
    ctx.en_sqd_async_notify = qp->eng.sqd_notify;
    ctx.srqn = cpu_to_le32(qp->srqn);
    chpp_mailbox_write(s, mailbox, &ctx, sizeof(ctx), &status);
    return status;
}

/* InfiniBand encodings of the local ACK timeout and the RNR timer. */
int64_t chpp_local_ack_timeout_ns(uint8_t timeout)
{
    return timeout ? 4096ll << MIN(timeout, 31) : 0;
}

int64_t chpp_rnr_timer_ns(uint8_t code)
{
    static const uint32_t us[32] = {
        655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
        1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
        40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
    };

    return us[code & 31] * 1000ll;
}

/* The engine's QP timer callback runs the transport (chpp-hca-engine.c). */
void chpp_qp_timer_arm(ChppHcaState *s, ChppQp *qp, uint8_t kind,
                       int64_t delay_ns)
{
    qp->eng.timer_kind = kind;
    qp->eng.timer_deadline = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + delay_ns;
    if (s->gone) {
        return;
    }
    timer_mod(s->qp_timers[chpp_qpn(s, qp)], qp->eng.timer_deadline);
}

void chpp_qp_timer_stop(ChppHcaState *s, ChppQp *qp)
{
    qp->eng.timer_kind = CHPP_TIMER_NONE;
    timer_del(s->qp_timers[chpp_qpn(s, qp)]);
}

void chpp_qp_async_event(ChppHcaState *s, ChppQp *qp, uint8_t type)
{
    struct chpp_eqe eqe = {
        .type = type,
        .event.qp.qpn = cpu_to_le32(chpp_qpn(s, qp)),
    };

    chpp_event_post(s, &eqe);
}

void chpp_qp_fail(ChppHcaState *s, ChppQp *qp, uint8_t new_state,
                  uint8_t event_type)
{
    if (event_type) {
        chpp_qp_async_event(s, qp, event_type);
    }
    chpp_qp_set_error(s, qp, new_state);
}

/* SQD: post SQ_DRAINED once nothing is in flight, if it was asked for. */
void chpp_qp_check_drained(ChppHcaState *s, ChppQp *qp)
{
    if (qp->state == CHPP_QPS_SQD && qp->eng.infl_count == 0 &&
        qp->eng.sqd_notify) {
        qp->eng.sqd_notify = false;
        chpp_qp_async_event(s, qp, CHPP_EVENT_SQ_DRAINED);
    }
}

void chpp_qp_set_error(ChppHcaState *s, ChppQp *qp, uint8_t new_state)
{
    uint8_t old = qp->state;

    /* ERR is final (until 2RST); SQE only for UC/UD from RTS or SQD. */
    if (old == CHPP_QPS_RESET || old == CHPP_QPS_ERR || old == new_state) {
        return;
    }
    if (new_state != CHPP_QPS_SQE || qp->type == CHPP_QPT_RC ||
        (old != CHPP_QPS_RTS && old != CHPP_QPS_SQD)) {
        new_state = CHPP_QPS_ERR;
    }
    trace_chpp_hca_err_qp(s->func, chpp_qpn(s, qp), old, new_state);
    qp->state = new_state;
    chpp_upcalls.qp_transition(s, qp, old);
}

void chpp_qp_reset(ChppHcaState *s)
{
    memset(s->qps, 0, sizeof(ChppQp) * s->params.num_qps);
}

/* A loaded QP out of RESET: what the modify commands could have made. */
static int chpp_qp_check(ChppHcaState *s, uint32_t qpn, const ChppQp *qp)
{
    bool srq = qp->flags & CHPP_QP_FLAG_SRQ;
    uint64_t sq_bytes, rq_bytes;

    if (qp->state > CHPP_QPS_ERR ||
        chpp_qp_rules(qp->type) >= CHPP_QP_NUM_TYPES ||
        (qp->type == CHPP_QPT_SMI && qpn != 0) ||
        (qp->type == CHPP_QPT_GSI && qpn != 1) ||
        (qp->state == CHPP_QPS_SQE && qp->type == CHPP_QPT_RC)) {
        return chpp_refuse(s, "QP %u: state %u type %u", qpn, qp->state,
                           qp->type);
    }
    if (qp->pd >= s->params.num_pds) {
        return chpp_refuse(s, "QP %u: pd %u of %u", qpn, qp->pd,
                           s->params.num_pds);
    }
    if (qp->uar >= s->params.uar_pages) {
        return chpp_refuse(s, "QP %u: uar %u of %u", qpn, qp->uar,
                           s->params.uar_pages);
    }
    if (!chpp_cq_get(s, qp->send_cqn) || !chpp_cq_get(s, qp->recv_cqn)) {
        return chpp_refuse(s, "QP %u: send_cqn %u or recv_cqn %u not a CQ in "
                           "hardware ownership", qpn, qp->send_cqn,
                           qp->recv_cqn);
    }
    if (qp->flags & ~CHPP_QP_FLAGS_ALL) {
        return chpp_refuse(s, "QP %u: flags 0x%x", qpn, qp->flags);
    }
    if (qp->flags & CHPP_QP_FLAG_SRQ) {
        if (!chpp_srq_get(s, qp->srqn)) {
            return chpp_refuse(s, "QP %u: srqn %u not an SRQ in hardware "
                               "ownership", qpn, qp->srqn);
        }
        if (qp->rq.mtt_base || qp->rq.log_page_size || qp->log_rq_size ||
            qp->log_rq_stride || qp->rq_pi || qp->rq_ci) {
            return chpp_refuse(s, "QP %u: an RQ (mtt_base %u, log_rq_size "
                               "%u, rq_pi 0x%x, rq_ci 0x%x) with an SRQ", qpn,
                               qp->rq.mtt_base, qp->log_rq_size, qp->rq_pi,
                               qp->rq_ci);
        }
        /* A copied WQE: at most 32 segments (lkeys are checked per packet). */
        if (chpp_srq_wqe_copied(qp) && qp->eng.recv_num_sge > CHPP_MAX_SGE) {
            return chpp_refuse(s, "QP %u: eng.recv_num_sge %u (max %u)", qpn,
                               qp->eng.recv_num_sge, CHPP_MAX_SGE);
        }
        if (qp->eng.recv_active && !chpp_srq_wqe_copied(qp) &&
            !chpp_srq_in_use(&s->srqs[qp->srqn], qp->eng.recv_wqe_idx)) {
            return chpp_refuse(s, "QP %u: eng.recv_wqe_idx 0x%x not a WQE "
                               "SRQ %u handed out", qpn,
                               qp->eng.recv_wqe_idx, qp->srqn);
        }
    } else if (qp->srqn || chpp_srq_wqe_copied(qp)) {
        return chpp_refuse(s, "QP %u: srqn %u without an SRQ (copied WQE "
                           "%u)", qpn, qp->srqn, chpp_srq_wqe_copied(qp));
    }
    if (qp->log_sq_size > CHPP_QP_MAX_LOG_WQES ||
        qp->log_rq_size > CHPP_QP_MAX_LOG_WQES ||
        qp->log_sq_stride < CHPP_MIN_WQE_SHIFT ||
        qp->log_sq_stride > CHPP_MAX_WQE_SHIFT ||
        (!srq && (qp->log_rq_stride < CHPP_MIN_WQE_SHIFT ||
                  qp->log_rq_stride > CHPP_MAX_WQE_SHIFT))) {
        return chpp_refuse(s, "QP %u: log_sq_size %u log_sq_stride %u "
                           "log_rq_size %u log_rq_stride %u", qpn,
                           qp->log_sq_size, qp->log_sq_stride,
                           qp->log_rq_size, qp->log_rq_stride);
    }
    sq_bytes = chpp_qp_wq_bytes(qp->log_sq_size, qp->log_sq_stride);
    rq_bytes = chpp_qp_wq_bytes(qp->log_rq_size, qp->log_rq_stride);
    if (!chpp_qp_ring_in_mtt(s, &qp->sq, sq_bytes) ||
        (!srq && !chpp_qp_ring_in_mtt(s, &qp->rq, rq_bytes))) {
        return chpp_refuse(s, "QP %u: sq or rq ring (mtt_base, "
                           "log_page_size) beyond num_mtts %u", qpn,
                           s->params.num_mtts);
    }
    /* Attributes: 0 until set, otherwise as a modify would accept them. */
    if ((qp->port != 0 && qp->port != 1) || qp->pkey_index != 0 ||
        (qp->access_flags & ~CHPP_ACCESS_ALL) ||
        qp->path_mtu > CHPP_MTU_4096 || qp->timeout > CHPP_QP_MAX_TIMEOUT ||
        qp->retry_cnt > CHPP_QP_MAX_RETRY ||
        qp->rnr_retry > CHPP_QP_MAX_RETRY ||
        qp->min_rnr_timer > CHPP_QP_MAX_RNR_TIMER ||
        qp->max_rd_atomic > CHPP_MAX_RD_ATOMIC ||
        qp->max_dest_rd_atomic > CHPP_MAX_RD_ATOMIC ||
        qp->dest_vf > CHPP_QP_MAX_DEST_VF) {
        return chpp_refuse(s, "QP %u: an attribute out of range (port, "
                           "pkey_index, access_flags, path_mtu, timeout, "
                           "retries, min_rnr_timer, rd_atomic depths, "
                           "dest_vf)", qpn);
    }
    if (qp->sq_psn > CHPP_PSN_MASK || qp->rq_psn > CHPP_PSN_MASK ||
        qp->dest_qpn > CHPP_PSN_MASK) {
        return chpp_refuse(s, "QP %u: sq_psn 0x%x, rq_psn 0x%x or dest_qpn "
                           "0x%x beyond 24 bits", qpn, qp->sq_psn, qp->rq_psn,
                           qp->dest_qpn);
    }
    return 0;
}

/*
 * The ring indices of a loaded QP, 16-bit counters like the doorbells':
 * the SQ from its oldest WQE the device owns (eng.sq_comp) through the
 * next to start (sq_ci) and the end the doorbells announced
 * (eng.sq_limit) to the producer (sq_pi), at most the SQ's size; the RQ
 * at most its size from rq_ci to rq_pi.  Loops run from one index to
 * another, so an index off the ring could hang the main loop.
 */
static int chpp_qp_check_indices(ChppHcaState *s, uint32_t qpn,
                                 const ChppQp *qp)
{
    const ChppQpEngine *eng = &qp->eng;
    const struct {
        const char *name;
        uint32_t val;
    } idx[] = {
        { "sq_pi", qp->sq_pi }, { "sq_ci", qp->sq_ci },
        { "rq_pi", qp->rq_pi }, { "rq_ci", qp->rq_ci },
        { "eng.sq_comp", eng->sq_comp }, { "eng.sq_limit", eng->sq_limit },
        { "eng.recv_wqe_idx", eng->recv_wqe_idx },
    };
    uint32_t sq_size = 1u << qp->log_sq_size;
    uint32_t rq_size = 1u << qp->log_rq_size;
    uint32_t pi, ci, limit;
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(idx); i++) {
        if (idx[i].val > CHPP_QP_IDX_MASK) {
            return chpp_refuse(s, "QP %u: %s 0x%x beyond 16 bits", qpn,
                               idx[i].name, idx[i].val);
        }
    }
    pi = (qp->sq_pi - eng->sq_comp) & CHPP_QP_IDX_MASK;
    ci = (qp->sq_ci - eng->sq_comp) & CHPP_QP_IDX_MASK;
    limit = (eng->sq_limit - eng->sq_comp) & CHPP_QP_IDX_MASK;
    if (pi > sq_size) {
        return chpp_refuse(s, "QP %u: sq_pi 0x%x is %u WQEs past eng.sq_comp "
                           "0x%x (SQ of %u)", qpn, qp->sq_pi, pi,
                           eng->sq_comp, sq_size);
    }
    if (ci > pi) {
        return chpp_refuse(s, "QP %u: sq_ci 0x%x not from eng.sq_comp 0x%x "
                           "to sq_pi 0x%x", qpn, qp->sq_ci, eng->sq_comp,
                           qp->sq_pi);
    }
    if (limit < ci || limit > pi) {
        return chpp_refuse(s, "QP %u: eng.sq_limit 0x%x not from sq_ci 0x%x "
                           "to sq_pi 0x%x", qpn, eng->sq_limit, qp->sq_ci,
                           qp->sq_pi);
    }
    if (((qp->rq_pi - qp->rq_ci) & CHPP_QP_IDX_MASK) > rq_size) {
        return chpp_refuse(s, "QP %u: rq_pi 0x%x is more than the RQ's %u "
                           "WQEs past rq_ci 0x%x", qpn, qp->rq_pi, rq_size,
                           qp->rq_ci);
    }
    return 0;
}

/*
 * A QP in RESET has no rings and no work: 2RST clears everything, and
 * RST2INIT keeps the indices, so none may come with it.  The rest of its
 * context means nothing and is cleared as 2RST does.
 */
static int chpp_qp_load_reset(ChppHcaState *s, uint32_t qpn, ChppQp *qp)
{
    const ChppQpEngine *eng = &qp->eng;
    const struct {
        const char *name;
        uint32_t val;
    } idle[] = {
        { "sq_pi", qp->sq_pi }, { "sq_ci", qp->sq_ci },
        { "rq_pi", qp->rq_pi }, { "rq_ci", qp->rq_ci },
        { "eng.sq_comp", eng->sq_comp }, { "eng.sq_limit", eng->sq_limit },
        { "eng.infl_head", eng->infl_head },
        { "eng.infl_count", eng->infl_count },
        { "eng.rd_atomic", eng->rd_atomic },
        { "eng.rd_head", eng->rd_head }, { "eng.rd_count", eng->rd_count },
        { "eng.recv_active", eng->recv_active },
        { "eng.recv_cached", eng->recv_cached },
        { "eng.recv_num_sge", eng->recv_num_sge },
        { "eng.timer_kind", eng->timer_kind },
        { "eng.tx_pending", eng->tx_pending },
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(idle); i++) {
        if (idle[i].val) {
            return chpp_refuse(s, "QP %u: %s 0x%x in RESET", qpn, idle[i].name,
                               idle[i].val);
        }
    }
    memset(qp, 0, sizeof(*qp));
    return 0;
}

/*
 * Migration streams are input too: refuse QPs the device cannot hold,
 * naming the field, and rebuild the CQ reference counts (runs after the
 * CQs are loaded).
 */
int chpp_qp_post_load(ChppHcaState *s)
{
    uint32_t i;
    int ret;

    for (i = 0; i < s->params.num_cqs; i++) {
        s->cqs[i].refs = 0;
    }
    for (i = 0; i < s->params.num_qps; i++) {
        ChppQp *qp = &s->qps[i];

        if (qp->state == CHPP_QPS_RESET) {
            ret = chpp_qp_load_reset(s, i, qp);
            if (ret) {
                return ret;
            }
            continue;
        }
        ret = chpp_qp_check(s, i, qp);
        if (!ret) {
            ret = chpp_qp_check_indices(s, i, qp);
        }
        if (ret) {
            return ret;
        }
        s->cqs[qp->send_cqn].refs++;
        s->cqs[qp->recv_cqn].refs++;
        if (qp->flags & CHPP_QP_FLAG_SRQ) {
            s->srqs[qp->srqn].refs++;
        }
    }
    return 0;
}

const VMStateDescription vmstate_chpp_qp = {
    .name = "chpp-hca-qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8(state, ChppQp),
        VMSTATE_UINT8(type, ChppQp),
        VMSTATE_UINT8(port, ChppQp),
        VMSTATE_UINT8(path_mtu, ChppQp),
        VMSTATE_UINT32(pd, ChppQp),
        VMSTATE_UINT32(send_cqn, ChppQp),
        VMSTATE_UINT32(recv_cqn, ChppQp),
        VMSTATE_UINT32(sq.mtt_base, ChppQp),
        VMSTATE_UINT8(sq.log_page_size, ChppQp),
        VMSTATE_UINT32(rq.mtt_base, ChppQp),
        VMSTATE_UINT8(rq.log_page_size, ChppQp),
        VMSTATE_UINT8(log_sq_size, ChppQp),
        VMSTATE_UINT8(log_sq_stride, ChppQp),
        VMSTATE_UINT8(log_rq_size, ChppQp),
        VMSTATE_UINT8(log_rq_stride, ChppQp),
        VMSTATE_UINT16(uar, ChppQp),
        VMSTATE_UINT32(access_flags, ChppQp),
        VMSTATE_UINT32(qkey, ChppQp),
        VMSTATE_UINT32(dest_node, ChppQp),
        VMSTATE_UINT32(dest_qpn, ChppQp),
        VMSTATE_UINT8(dest_vf, ChppQp),
        VMSTATE_UINT8(dest_magic, ChppQp),
        VMSTATE_UINT8(magic, ChppQp),
        VMSTATE_UINT8(flags, ChppQp),
        VMSTATE_UINT32(sq_psn, ChppQp),
        VMSTATE_UINT32(rq_psn, ChppQp),
        VMSTATE_UINT8(timeout, ChppQp),
        VMSTATE_UINT8(retry_cnt, ChppQp),
        VMSTATE_UINT8(rnr_retry, ChppQp),
        VMSTATE_UINT8(min_rnr_timer, ChppQp),
        VMSTATE_UINT8(max_rd_atomic, ChppQp),
        VMSTATE_UINT8(max_dest_rd_atomic, ChppQp),
        VMSTATE_UINT16(pkey_index, ChppQp),
        VMSTATE_UINT32(sq_pi, ChppQp),
        VMSTATE_UINT32(sq_ci, ChppQp),
        VMSTATE_UINT32(rq_pi, ChppQp),
        VMSTATE_UINT32(rq_ci, ChppQp),
        VMSTATE_STRUCT(eng, ChppQp, 1, vmstate_chpp_qp_engine, ChppQpEngine),
        VMSTATE_END_OF_LIST()
    }
};
