/*
 * chpp-hca: event queues, event routing and MSI-X.
 *
 * EQ rings live in guest memory; the device keeps each EQ's context.  An
 * event goes to the EQ its type is mapped to (MAP_EQ); an EQ that is armed
 * raises its MSI-X vector on the next EQE and disarms.  The producer and
 * consumer indexes are 24-bit counters, so full/empty is their difference.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca.h"
#include "trace.h"

#define CHPP_EQ_IDX_MASK CHPP_EQ_DB_CI_MASK

static uint8_t chpp_eq_state(const ChppEq *eq)
{
    if (!eq->hw) {
        return CHPP_EQ_STATE_SW;
    }
    if (eq->error) {
        return CHPP_EQ_STATE_ERROR;
    }
    if (eq->overrun) {
        return CHPP_EQ_STATE_OVERRUN;
    }
    return eq->armed ? CHPP_EQ_STATE_ARMED : CHPP_EQ_STATE_FIRED;
}

static void chpp_eq_fire(ChppHcaState *s, unsigned eqn)
{
    ChppEq *eq = &s->eqs[eqn];

    eq->armed = false;
    chpp_irq(s, eq->vector);
}

static void chpp_eq_drop(ChppHcaState *s, unsigned eqn, uint8_t type)
{
    if (eqn != CHPP_EQN_NONE) {
        s->eqs[eqn].dropped++;
    }
    chpp_count(s, CHPP_CNT_EVENTS_DROPPED);
    trace_chpp_hca_err_event_dropped(s->func, eqn, type);
}

static void chpp_eq_write(ChppHcaState *s, unsigned eqn, struct chpp_eqe *eqe)
{
    ChppEq *eq = &s->eqs[eqn];
    uint32_t used = (eq->pi - eq->ci) & CHPP_EQ_IDX_MASK;
    uint32_t slot = eq->pi & (eq->nent - 1);
    dma_addr_t addr = eq->base + (dma_addr_t)slot * CHPP_EQE_SIZE;
    bool phase;
    bool ok;

    if (!eq->hw || eq->overrun || eq->error) {
        chpp_eq_drop(s, eqn, eqe->type);
        return;
    }
    if (used >= eq->nent) {
        struct chpp_eqe ovf = {
            .type = CHPP_EVENT_EQ_OVERFLOW,
            .event.eq_overflow.eqn = cpu_to_le32(eqn),
        };
        unsigned ovf_eqn = s->event_eq[CHPP_EVENT_EQ_OVERFLOW];

        eq->overrun = true;
        chpp_eq_drop(s, eqn, eqe->type);
        chpp_guest_error(s, "EQ %u overrun (pi %u ci %u): events dropped "
                         "until it is recreated", eqn, eq->pi, eq->ci);
        if (ovf_eqn != CHPP_EQN_NONE && ovf_eqn != eqn) {
            chpp_eq_write(s, ovf_eqn, &ovf);
        }
        return;
    }

    /* nent is 0 unless the EQ is in hardware: only now is the shift valid. */
    phase = !((eq->pi >> ctz32(eq->nent)) & 1);
    /* Body first, then the owner word, so software never sees half. */
    eqe->owner = cpu_to_le32(phase ? CHPP_EQE_OWNER : 0);
    ok = chpp_dma_write(s, addr, eqe, offsetof(struct chpp_eqe, owner));
    if (ok) {
        /* Order the body before the owner word for a concurrent vCPU. */
        smp_wmb();
        ok = chpp_dma_write(s, addr + offsetof(struct chpp_eqe, owner),
                            &eqe->owner, sizeof(eqe->owner));
    }
    if (!ok) {
        eq->error = true;
        chpp_eq_drop(s, eqn, eqe->type);
        chpp_guest_error(s, "EQ %u: EQE write at 0x%" PRIx64 " failed, "
                         "EQ stopped", eqn, addr);
        return;
    }
    trace_chpp_hca_eqe(s->func, eqn, eq->pi, eqe->type, addr);
    eq->pi = (eq->pi + 1) & CHPP_EQ_IDX_MASK;
    chpp_count(s, CHPP_CNT_EVENTS);
    if (eq->armed) {
        chpp_eq_fire(s, eqn);
    }
}

void chpp_eq_post_to_now(ChppHcaState *s, unsigned eqn,
                         struct chpp_eqe *eqe)
{
    if (eqn >= s->params.num_eqs) {
        chpp_eq_drop(s, CHPP_EQN_NONE, eqe->type);
        return;
    }
    chpp_eq_write(s, eqn, eqe);
}

void chpp_event_post_now(ChppHcaState *s, struct chpp_eqe *eqe)
{
    unsigned eqn = s->event_eq[eqe->type % CHPP_EVENT_NUM_TYPES];

    if (eqn == CHPP_EQN_NONE) {
        chpp_eq_drop(s, eqn, eqe->type);
        return;
    }
    chpp_eq_write(s, eqn, eqe);
}

const char *chpp_eq_doorbell(ChppHcaState *s, unsigned eqn, uint32_t val)
{
    uint32_t new_ci = val & CHPP_EQ_DB_CI_MASK;
    ChppEq *eq;

    if (eqn >= s->params.num_eqs || !s->eqs[eqn].hw) {
        return "EQ not in hardware ownership";
    }
    eq = &s->eqs[eqn];
    if (val & ~(CHPP_EQ_DB_CI_MASK | CHPP_EQ_DB_ARM)) {
        return "reserved bits set";
    }
    /* The consumer may only move forward, and not past the producer. */
    if (((new_ci - eq->ci) & CHPP_EQ_IDX_MASK) >
        ((eq->pi - eq->ci) & CHPP_EQ_IDX_MASK)) {
        return "consumer index beyond producer";
    }
    trace_chpp_hca_eq_doorbell(s->func, eqn, new_ci, !!(val & CHPP_EQ_DB_ARM));
    eq->ci = new_ci;
    if ((val & CHPP_EQ_DB_ARM) && !eq->overrun && !eq->error) {
        eq->armed = true;
        /* Arming over unconsumed EQEs fires at once: nothing is missed. */
        if (eq->pi != eq->ci) {
            chpp_eq_fire(s, eqn);
        }
    }
    return NULL;
}

uint32_t chpp_eq_doorbell_read(ChppHcaState *s, unsigned eqn)
{
    ChppEq *eq;

    if (eqn >= s->params.num_eqs || !s->eqs[eqn].hw) {
        return 0;
    }
    eq = &s->eqs[eqn];
    return eq->ci | (eq->armed ? CHPP_EQ_DB_ARM : 0);
}

static uint8_t chpp_eq_lookup(ChppHcaState *s, uint32_t eqn, bool want_hw)
{
    if (eqn >= s->params.num_eqs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX,
                             "EQ %u out of range (%u EQs)", eqn,
                             s->params.num_eqs);
    }
    if (s->eqs[eqn].hw != want_hw) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE, "EQ %u is %s", eqn,
                             want_hw ? "not in hardware ownership" :
                             "already in hardware ownership");
    }
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_sw2hw_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox)
{
    struct chpp_eq_context ctx;
    uint8_t status = chpp_eq_lookup(s, eqn, false);
    uint64_t base;
    uint32_t nent;
    uint16_t vector;
    ChppEq *eq;

    if (status != CHPP_STAT_OK ||
        !chpp_mailbox_read(s, mailbox, &ctx, sizeof(ctx), &status)) {
        return status;
    }
    base = le64_to_cpu(ctx.base_addr);
    nent = le32_to_cpu(ctx.num_entries);
    vector = le16_to_cpu(ctx.msix_vector);

    if (nent < CHPP_EQ_MIN_ENTRIES || nent > CHPP_MAX_EQ_ENTRIES ||
        !is_power_of_2(nent)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SIZE,
                             "EQ %u: %u entries (power of two in %u..%u)",
                             eqn, nent, CHPP_EQ_MIN_ENTRIES,
                             CHPP_MAX_EQ_ENTRIES);
    }
    if (base & (CHPP_EQ_BASE_ALIGN - 1) ||
        base + (uint64_t)nent * CHPP_EQE_SIZE < base) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "EQ %u: bad ring address 0x%" PRIx64, eqn, base);
    }
    if (vector >= s->params.msix_vectors) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "EQ %u: MSI-X vector %u of %u", eqn, vector,
                             s->params.msix_vectors);
    }
    if (ctx.flags & ~CHPP_EQ_FLAG_ARMED) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "EQ %u: unknown flags 0x%x", eqn, ctx.flags);
    }

    eq = &s->eqs[eqn];
    *eq = (ChppEq) {
        .hw = true,
        .armed = ctx.flags & CHPP_EQ_FLAG_ARMED,
        .base = base,
        .nent = nent,
        .vector = vector,
    };
    trace_chpp_hca_eq_create(s->func, eqn, base, nent, vector);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_hw2sw_eq(ChppHcaState *s, uint32_t eqn)
{
    uint8_t status = chpp_eq_lookup(s, eqn, true);
    unsigned t;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    for (t = 0; t < CHPP_EVENT_NUM_TYPES; t++) {
        if (s->event_eq[t] == eqn) {
            s->event_eq[t] = CHPP_EQN_NONE;
        }
    }
    memset(&s->eqs[eqn], 0, sizeof(s->eqs[eqn]));
    trace_chpp_hca_eq_destroy(s->func, eqn);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox)
{
    uint8_t status = chpp_eq_lookup(s, eqn, true);
    struct chpp_eq_context ctx = {};
    ChppEq *eq;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    eq = &s->eqs[eqn];
    ctx.base_addr = cpu_to_le64(eq->base);
    ctx.num_entries = cpu_to_le32(eq->nent);
    ctx.msix_vector = cpu_to_le16(eq->vector);
    ctx.state = chpp_eq_state(eq);
    ctx.producer_index = cpu_to_le32(eq->pi);
    ctx.consumer_index = cpu_to_le32(eq->ci);
    ctx.dropped = cpu_to_le32(eq->dropped);
    chpp_mailbox_write(s, mailbox, &ctx, sizeof(ctx), &status);
    return status;
}

uint8_t chpp_cmd_map_eq(ChppHcaState *s, uint32_t modifier, uint64_t mask)
{
    uint32_t eqn = modifier & CHPP_MAP_EQ_EQN_MASK;
    bool unmap = modifier & CHPP_MAP_EQ_UNMAP;
    uint8_t status;
    unsigned t;

    if (modifier & ~(CHPP_MAP_EQ_UNMAP | CHPP_MAP_EQ_EQN_MASK)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "reserved modifier bits 0x%08x", modifier);
    }
    if (mask & ~CHPP_EVENT_MAPPABLE_MASK) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "event types 0x%016" PRIx64 " cannot be mapped",
                             (uint64_t)(mask & ~CHPP_EVENT_MAPPABLE_MASK));
    }
    status = chpp_eq_lookup(s, eqn, true);
    if (status != CHPP_STAT_OK) {
        return status;
    }
    for (t = 0; t < CHPP_EVENT_NUM_TYPES; t++) {
        if (!(mask & (1ull << t))) {
            continue;
        }
        if (!unmap) {
            s->event_eq[t] = eqn;
        } else if (s->event_eq[t] == eqn) {
            s->event_eq[t] = CHPP_EQN_NONE;
        }
    }
    trace_chpp_hca_map_eq(s->func, eqn, mask, unmap);
    return CHPP_STAT_OK;
}

void chpp_eq_reset(ChppHcaState *s)
{
    memset(s->eqs, 0, sizeof(s->eqs));
    memset(s->event_eq, CHPP_EQN_NONE, sizeof(s->event_eq));
}

/*
 * Migration streams are input too: refuse state the device cannot hold,
 * naming the field.  The producer runs at most nent EQEs ahead of the
 * consumer (one more is an overrun).
 */
int chpp_eq_post_load(ChppHcaState *s)
{
    unsigned i;

    for (i = 0; i < CHPP_MAX_EQS; i++) {
        ChppEq *eq = &s->eqs[i];

        if (!eq->hw) {
            continue;
        }
        if (i >= s->params.num_eqs) {
            return chpp_refuse(s, "EQ %u: in hardware ownership, %u EQs", i,
                               s->params.num_eqs);
        }
        if (!is_power_of_2(eq->nent) || eq->nent < CHPP_EQ_MIN_ENTRIES ||
            eq->nent > CHPP_MAX_EQ_ENTRIES) {
            return chpp_refuse(s, "EQ %u: nent %u", i, eq->nent);
        }
        if (eq->vector >= s->params.msix_vectors) {
            return chpp_refuse(s, "EQ %u: vector %u of %u", i, eq->vector,
                               s->params.msix_vectors);
        }
        if (eq->pi > CHPP_EQ_IDX_MASK || eq->ci > CHPP_EQ_IDX_MASK) {
            return chpp_refuse(s, "EQ %u: pi 0x%x or ci 0x%x beyond 24 bits",
                               i, eq->pi, eq->ci);
        }
        if (((eq->pi - eq->ci) & CHPP_EQ_IDX_MASK) > eq->nent) {
            return chpp_refuse(s, "EQ %u: ci 0x%x: pi 0x%x is more than nent "
                               "%u ahead", i, eq->ci, eq->pi, eq->nent);
        }
    }
    for (i = 0; i < CHPP_EVENT_NUM_TYPES; i++) {
        uint8_t eqn = s->event_eq[i];

        if (eqn != CHPP_EQN_NONE &&
            (eqn >= s->params.num_eqs || !s->eqs[eqn].hw)) {
            return chpp_refuse(s, "event_eq[%u]: EQ %u not in hardware "
                               "ownership", i, eqn);
        }
    }
    return 0;
}

const VMStateDescription vmstate_chpp_eq = {
    .name = "chpp-hca-eq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(hw, ChppEq),
        VMSTATE_BOOL(armed, ChppEq),
        VMSTATE_BOOL(overrun, ChppEq),
        VMSTATE_BOOL(error, ChppEq),
        VMSTATE_UINT64(base, ChppEq),
        VMSTATE_UINT32(nent, ChppEq),
        VMSTATE_UINT32(pi, ChppEq),
        VMSTATE_UINT32(ci, ChppEq),
        VMSTATE_UINT16(vector, ChppEq),
        VMSTATE_UINT32(dropped, ChppEq),
        VMSTATE_END_OF_LIST()
    }
};
