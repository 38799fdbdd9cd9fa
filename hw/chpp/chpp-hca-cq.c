/*
 * chpp-hca: completion queues.
 *
 * A CQ ring lives in guest memory, mapped by MTT entries like any ring; the
 * device keeps each CQ's context.  Producer (device) and consumer (driver,
 * through the UAR CQ doorbell) indexes are 24-bit counters, so full/empty is
 * their difference.  An armed CQ posts one completion event (COMP EQE) to
 * its EQ for the next CQE that matches the arm, then disarms.  A CQ that
 * overruns, or whose ring cannot be written, stops: it drops every CQE
 * until it is destroyed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "migration/vmstate.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca.h"
#include "trace.h"

#define CHPP_CQ_IDX_MASK    CHPP_CQ_DB_CI_MASK
#define CHPP_CQ_DB_RSVD     (0xf0000000ull | 0xff00000000000000ull)

static bool chpp_cq_size_ok(uint32_t nent)
{
    return nent >= CHPP_CQ_MIN_ENTRIES && nent <= CHPP_MAX_CQ_ENTRIES &&
           is_power_of_2(nent);
}

static uint8_t chpp_cq_state(const ChppCq *cq)
{
    if (!cq->hw) {
        return CHPP_RES_SW;
    }
    return cq->error ? CHPP_RES_ERROR : CHPP_RES_HW;
}

static uint8_t chpp_cq_check(ChppHcaState *s, uint32_t cqn, bool want_hw)
{
    if (cqn >= s->params.num_cqs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "CQ %u out of range (%u CQs)", cqn,
                             s->params.num_cqs);
    }
    if (s->cqs[cqn].hw != want_hw) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE, "CQ %u is %s", cqn,
                             want_hw ? "not in hardware ownership" :
                             "already in hardware ownership");
    }
    return CHPP_STAT_OK;
}

/* Checks shared by SW2HW_CQ and RESIZE_CQ. */
static uint8_t chpp_cq_check_size(ChppHcaState *s, uint32_t cqn,
                                  uint32_t nent)
{
    if (!chpp_cq_size_ok(nent)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "CQ %u: %u entries (power of two in %u..%u)",
                             cqn, nent, CHPP_CQ_MIN_ENTRIES,
                             CHPP_MAX_CQ_ENTRIES);
    }
    return CHPP_STAT_OK;
}

static uint8_t chpp_cq_check_mtt(ChppHcaState *s, uint32_t cqn,
                                 uint32_t nent, const ChppRing *ring)
{
    if (!chpp_ring_check(s, ring, (uint64_t)nent * CHPP_CQE_SIZE)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "CQ %u: ring of %u entries at MTT %u, pages of "
                             "2^%u: page size out of range, MTT range beyond "
                             "num-mtts, or an entry invalid or misaligned",
                             cqn, nent, ring->mtt_base, ring->log_page_size);
    }
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_sw2hw_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    struct chpp_cq_context ctx;
    uint8_t status = chpp_cq_check(s, cqn, false);
    ChppRing ring;
    uint32_t nent, eqn;
    uint16_t uar;

    if (status != CHPP_STAT_OK ||
        !chpp_mailbox_read(s, mailbox, &ctx, sizeof(ctx), &status)) {
        return status;
    }
    ring = (ChppRing) {
        .mtt_base = le32_to_cpu(ctx.mtt_base),
        .log_page_size = ctx.log_page_size,
    };
    nent = le32_to_cpu(ctx.num_entries);
    eqn = le32_to_cpu(ctx.eqn);
    uar = le16_to_cpu(ctx.uar);

    status = chpp_cq_check_size(s, cqn, nent);
    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (eqn >= s->params.num_eqs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "CQ %u: EQ %u out of range (%u EQs)", cqn, eqn,
                             s->params.num_eqs);
    }
    if (uar >= s->params.uar_pages) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "CQ %u: UAR page %u out of range (%u pages)",
                             cqn, uar, s->params.uar_pages);
    }
    status = chpp_cq_check_mtt(s, cqn, nent, &ring);
    if (status != CHPP_STAT_OK) {
        return status;
    }

    s->cqs[cqn] = (ChppCq) {
        .hw = true,
        .ring = ring,
        .nent = nent,
        .eqn = eqn,
        .uar = uar,
    };
    trace_chpp_hca_cq_create(s->func, cqn, nent, eqn, uar, ring.mtt_base,
                             ring.log_page_size);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_hw2sw_cq(ChppHcaState *s, uint32_t cqn)
{
    uint8_t status = chpp_cq_check(s, cqn, true);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (s->cqs[cqn].refs) {
        return chpp_cmd_fail(s, CHPP_STAT_RESOURCE_BUSY,
                             "CQ %u: %u QPs still use it", cqn,
                             s->cqs[cqn].refs);
    }
    memset(&s->cqs[cqn], 0, sizeof(s->cqs[cqn]));
    trace_chpp_hca_cq_destroy(s->func, cqn);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    struct chpp_cq_context ctx = {};
    uint8_t status = CHPP_STAT_OK;
    const ChppCq *cq;

    if (cqn >= s->params.num_cqs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "CQ %u out of range (%u CQs)", cqn,
                             s->params.num_cqs);
    }
    /* A CQ in software ownership reads as all zero, state SW. */
    cq = &s->cqs[cqn];
    ctx.mtt_base = cpu_to_le32(cq->ring.mtt_base);
    ctx.log_page_size = cq->ring.log_page_size;
    ctx.state = chpp_cq_state(cq);
    ctx.arm = cq->arm;
    ctx.num_entries = cpu_to_le32(cq->nent);
    ctx.eqn = cpu_to_le32(cq->eqn);
    ctx.producer_index = cpu_to_le32(cq->pi);
    ctx.consumer_index = cpu_to_le32(cq->ci);
    ctx.uar = cpu_to_le16(cq->uar);
    ctx.dropped = cpu_to_le32(cq->dropped);
    chpp_mailbox_write(s, mailbox, &ctx, sizeof(ctx), &status);
    return status;
}

uint8_t chpp_cmd_resize_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    struct chpp_cq_context ctx;
    uint8_t status = chpp_cq_check(s, cqn, true);
    ChppRing ring;
    uint32_t nent, used;
    ChppCq *cq;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    cq = &s->cqs[cqn];
    if (cq->error) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "CQ %u is stopped (overrun or DMA error)", cqn);
    }
    if (!chpp_mailbox_read(s, mailbox, &ctx, sizeof(ctx), &status)) {
        return status;
    }
    ring = (ChppRing) {
        .mtt_base = le32_to_cpu(ctx.mtt_base),
        .log_page_size = ctx.log_page_size,
    };
    nent = le32_to_cpu(ctx.num_entries);
    status = chpp_cq_check_size(s, cqn, nent);
    if (status != CHPP_STAT_OK) {
        return status;
    }
    used = (cq->pi - cq->ci) & CHPP_CQ_IDX_MASK;
    if (used > nent) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "CQ %u: %u entries cannot hold the %u "
                             "unconsumed CQEs", cqn, nent, used);
    }
    status = chpp_cq_check_mtt(s, cqn, nent, &ring);
    if (status != CHPP_STAT_OK) {
        return status;
    }

    /* Indexes, arm and counters stay; the next CQE goes to the new ring. */
    cq->ring = ring;
    cq->nent = nent;
    trace_chpp_hca_cq_resize(s->func, cqn, nent, ring.mtt_base,
                             ring.log_page_size, cq->pi, cq->ci);
    return CHPP_STAT_OK;
}

ChppCq *chpp_cq_get(ChppHcaState *s, uint32_t cqn)
{
    if (cqn >= s->params.num_cqs || !s->cqs[cqn].hw) {
        return NULL;
    }
    return &s->cqs[cqn];
}

static void chpp_cq_drop(ChppHcaState *s, uint32_t cqn, ChppCq *cq)
{
    if (cq) {
        cq->dropped++;
    }
    chpp_count(s, CHPP_CNT_CQES_DROPPED);
    trace_chpp_hca_err_cqe_dropped(s->func, cqn);
}

/* Stop @cq after an overrun or a failed ring write. */
static void chpp_cq_stop(ChppHcaState *s, uint32_t cqn, ChppCq *cq)
{
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_CQ_ERROR,
        .event.cq.cqn = cpu_to_le32(cqn),
    };

    cq->error = true;
    cq->arm = 0;
    chpp_event_post(s, &eqe);
}

bool chpp_cq_post(ChppHcaState *s, uint32_t cqn, struct chpp_cqe *cqe,
                  bool solicited)
{
    ChppCq *cq = chpp_cq_get(s, cqn);
    uint32_t used, slot;
    uint64_t off;
    bool fire;

    if (!cq) {
        /* The QP module keeps its CQs alive (refs): not expected. */
        chpp_cq_drop(s, cqn, NULL);
        return false;
    }
    if (cq->error) {
        chpp_cq_drop(s, cqn, cq);
        return false;
    }
    used = (cq->pi - cq->ci) & CHPP_CQ_IDX_MASK;
    if (used >= cq->nent) {
        chpp_cq_drop(s, cqn, cq);
        chpp_guest_error(s, "CQ %u overrun (pi %u ci %u): CQ stopped", cqn,
                         cq->pi, cq->ci);
        chpp_cq_stop(s, cqn, cq);
        return false;
    }

    slot = cq->pi & (cq->nent - 1);
    off = (uint64_t)slot * CHPP_CQE_SIZE;
    cqe->owner = ((cq->pi >> ctz32(cq->nent)) & 1) ? 0 : CHPP_CQE_OWNER;
    if (!chpp_ring_rw(s, &cq->ring, off, cqe,
                      offsetof(struct chpp_cqe, owner),
                      DMA_DIRECTION_FROM_DEVICE)) {
        goto dma_error;
    }
    /* Order the body before the owner byte for a concurrent vCPU. */
    smp_wmb();
    if (!chpp_ring_rw(s, &cq->ring, off + offsetof(struct chpp_cqe, owner),
                      &cqe->owner, sizeof(cqe->owner),
                      DMA_DIRECTION_FROM_DEVICE)) {
        goto dma_error;
    }
    trace_chpp_hca_cqe(s->func, cqn, cq->pi, le32_to_cpu(cqe->qpn), cqe->opcode,
                       cqe->status);
    cq->pi = (cq->pi + 1) & CHPP_CQ_IDX_MASK;
    chpp_count(s, CHPP_CNT_CQES);

    fire = cq->arm == CHPP_CQ_DB_ARM_NEXT ||
           (cq->arm == CHPP_CQ_DB_ARM_SOL && (solicited || cqe->status));
    if (fire) {
        struct chpp_eqe eqe = {
            .type = CHPP_EVENT_COMP,
            .event.cq.cqn = cpu_to_le32(cqn),
        };

        cq->arm = 0;
        trace_chpp_hca_cq_event(s->func, cqn, cq->eqn);
        chpp_eq_post_to(s, cq->eqn, &eqe);
    }
    return true;

dma_error:
    chpp_cq_drop(s, cqn, cq);
    chpp_guest_error(s, "CQ %u: CQE %u could not be written: CQ stopped",
                     cqn, cq->pi);
    chpp_cq_stop(s, cqn, cq);
    return false;
}

const char *chpp_cq_doorbell(ChppHcaState *s, uint32_t uar, uint64_t val)
{
    uint32_t cqn = val & CHPP_CQ_DB_CQN_MASK;
    uint32_t cmd = (val & CHPP_CQ_DB_CMD_MASK) >> CHPP_CQ_DB_CMD_SHIFT;
    uint32_t new_ci = (val >> CHPP_CQ_DB_CI_SHIFT) & CHPP_CQ_DB_CI_MASK;
    ChppCq *cq;

    if (val & CHPP_CQ_DB_RSVD) {
        return "CQ doorbell: reserved bits set";
    }
    cq = chpp_cq_get(s, cqn);
    if (!cq) {
        return "CQ doorbell: CQ not in hardware ownership";
    }
    if (cq->uar != uar) {
        return "CQ doorbell: CQ belongs to another UAR page";
    }
    if (cmd > CHPP_CQ_DB_ARM_SOL) {
        return "CQ doorbell: unknown command";
    }
    /* The consumer may only move forward, and not past the producer. */
    if (((new_ci - cq->ci) & CHPP_CQ_IDX_MASK) >
        ((cq->pi - cq->ci) & CHPP_CQ_IDX_MASK)) {
        return "CQ doorbell: consumer index outside [ci, pi]";
    }
    trace_chpp_hca_cq_doorbell(s->func, cqn, cmd, new_ci);
    cq->ci = new_ci;
    if (cq->error) {
        /* A stopped CQ takes CI updates but cannot be armed. */
        return NULL;
    }
    /* ARM_NEXT covers ARM_SOL: a pending ARM_NEXT is never narrowed. */
    if (cmd == CHPP_CQ_DB_ARM_NEXT) {
        cq->arm = CHPP_CQ_DB_ARM_NEXT;
    } else if (cmd == CHPP_CQ_DB_ARM_SOL && cq->arm != CHPP_CQ_DB_ARM_NEXT) {
        cq->arm = CHPP_CQ_DB_ARM_SOL;
    }
    return NULL;
}

void chpp_cq_reset(ChppHcaState *s)
{
    memset(s->cqs, 0, sizeof(ChppCq) * s->params.num_cqs);
}

/*
 * Migration streams are input too: refuse CQs the device cannot hold,
 * naming the field.
 */
int chpp_cq_post_load(ChppHcaState *s)
{
    uint32_t i;

    for (i = 0; i < s->params.num_cqs; i++) {
        ChppCq *cq = &s->cqs[i];
        uint64_t npages;

        /* Rebuilt by chpp_qp_post_load(), which runs after this. */
        cq->refs = 0;
        if (!cq->hw) {
            continue;
        }
        if (!chpp_cq_size_ok(cq->nent)) {
            return chpp_refuse(s, "CQ %u: nent %u", i, cq->nent);
        }
        if (cq->eqn >= s->params.num_eqs) {
            return chpp_refuse(s, "CQ %u: eqn %u of %u", i, cq->eqn,
                               s->params.num_eqs);
        }
        if (cq->uar >= s->params.uar_pages) {
            return chpp_refuse(s, "CQ %u: uar %u of %u", i, cq->uar,
                               s->params.uar_pages);
        }
        if (cq->pi > CHPP_CQ_IDX_MASK || cq->ci > CHPP_CQ_IDX_MASK) {
            return chpp_refuse(s, "CQ %u: pi 0x%x or ci 0x%x beyond 24 bits",
                               i, cq->pi, cq->ci);
        }
        if (((cq->pi - cq->ci) & CHPP_CQ_IDX_MASK) > cq->nent) {
            return chpp_refuse(s, "CQ %u: ci 0x%x: pi 0x%x is more than nent "
                               "%u ahead", i, cq->ci, cq->pi, cq->nent);
        }
        if (cq->arm > CHPP_CQ_DB_ARM_SOL) {
            return chpp_refuse(s, "CQ %u: arm %u", i, cq->arm);
        }
        if (cq->ring.log_page_size < CHPP_MIN_PAGE_SHIFT ||
            cq->ring.log_page_size > CHPP_MAX_PAGE_SHIFT) {
            return chpp_refuse(s, "CQ %u: ring.log_page_size %u", i,
                               cq->ring.log_page_size);
        }
        npages = DIV_ROUND_UP((uint64_t)cq->nent * CHPP_CQE_SIZE,
                              1ull << cq->ring.log_page_size);
        if (cq->ring.mtt_base > s->params.num_mtts ||
            npages > s->params.num_mtts - cq->ring.mtt_base) {
            return chpp_refuse(s, "CQ %u: ring.mtt_base %u: %" PRIu64
                               " entries beyond num_mtts %u", i,
                               cq->ring.mtt_base, npages, s->params.num_mtts);
        }
    }
    return 0;
}

const VMStateDescription vmstate_chpp_cq = {
    .name = "chpp-hca-cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(hw, ChppCq),
        VMSTATE_BOOL(error, ChppCq),
        VMSTATE_UINT8(arm, ChppCq),
        VMSTATE_UINT32(ring.mtt_base, ChppCq),
        VMSTATE_UINT8(ring.log_page_size, ChppCq),
        VMSTATE_UINT32(nent, ChppCq),
        VMSTATE_UINT32(eqn, ChppCq),
        VMSTATE_UINT32(pi, ChppCq),
        VMSTATE_UINT32(ci, ChppCq),
        VMSTATE_UINT16(uar, ChppCq),
        VMSTATE_UINT32(dropped, ChppCq),
        VMSTATE_END_OF_LIST()
    }
};
