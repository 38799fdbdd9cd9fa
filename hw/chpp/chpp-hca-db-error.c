/*
 * chpp-hca: events raised in the vCPU's MMIO and config space writes.
 *
 * A doorbell write runs in the vCPU's MMIO handler, an FLR in its config
 * space write.  There a refused doorbell is only counted, logged and
 * queued, and a VF's FLR only queued on the PF; their EQEs (a DMA write
 * to guest memory, perhaps MSI-X) are posted later, by a bottom half, as
 * the EQEs of valid doorbells are.  The queue is bounded: the event of a
 * doorbell refused while CHPP_DB_ERR_QUEUE_DEPTH wait is dropped and
 * counted; an FLR of a VF whose VF_FLR still waits is told by that event,
 * so VF_FLR events always have room.
 *
 * Order: any other event of the function first posts what is queued, so
 * EQEs appear in the order of what caused them.  The VM stopping (e.g. for
 * migration) posts them too; what is queued while the VM stands still is
 * migrated.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

static void chpp_db_err_post(ChppHcaState *s, const ChppDbErr *e)
{
    struct chpp_eqe eqe = {
        .type = e->type,
        .subtype = e->subtype,
    };

    if (e->type == CHPP_EVENT_VF_FLR) {
        eqe.event.vf.vf = cpu_to_le32(e->value);
    } else {
        eqe.event.db_error.offset = cpu_to_le32(e->offset);
        eqe.event.db_error.value = cpu_to_le32(e->value);
        eqe.event.db_error.uar = cpu_to_le32(e->uar);
        eqe.event.db_error.value_hi = cpu_to_le32(e->value >> 32);
    }
    chpp_event_post_now(s, &eqe);
}

static ChppDbErr *chpp_db_err_at(ChppHcaState *s, unsigned i)
{
    return &s->db_err[(s->db_err_head + i) % CHPP_DEFERRED_DEPTH];
}

/* Queued events of @type (and, for VF_FLR, of VF @vf; else any). */
static unsigned chpp_db_err_queued(ChppHcaState *s, uint8_t type, int vf)
{
    unsigned i, n = 0;

    for (i = 0; i < s->db_err_count; i++) {
        ChppDbErr *e = chpp_db_err_at(s, i);

        n += e->type == type && (vf < 0 || e->value == vf);
    }
    return n;
}

static void chpp_db_err_push(ChppHcaState *s, const ChppDbErr *e)
{
    *chpp_db_err_at(s, s->db_err_count) = *e;
    s->db_err_count++;
    chpp_db_err_kick(s);
}

void chpp_db_err_flush(ChppHcaState *s)
{
    while (s->db_err_count) {
        ChppDbErr e = s->db_err[s->db_err_head];

        s->db_err_head = (s->db_err_head + 1) % CHPP_DEFERRED_DEPTH;
        s->db_err_count--;
        chpp_db_err_post(s, &e);
    }
}

static void chpp_db_err_bh(void *opaque)
{
    ChppHcaState *s = opaque;

    /* VM stopped: guest memory is not touched (resuming reschedules). */
    if (!s->engine_stopped && !s->gone) {
        chpp_hold(s);
        chpp_db_err_flush(s);
        chpp_release(s);
    }
}

void chpp_db_err_kick(ChppHcaState *s)
{
    if (s->db_err_count && !s->engine_stopped && !s->gone) {
        qemu_bh_schedule(s->db_err_bh);
    }
}

void chpp_doorbell_refused(ChppHcaState *s, uint8_t subtype, uint32_t uar,
                           uint32_t offset, uint64_t val)
{
    ChppDbErr e = {
        .value = val,
        .uar = uar,
        .offset = offset,
        .subtype = subtype,
        .type = CHPP_EVENT_DOORBELL_ERROR,
    };

    if (chpp_db_err_queued(s, CHPP_EVENT_DOORBELL_ERROR, -1) ==
        CHPP_DB_ERR_QUEUE_DEPTH) {
        s->db_err_lost++;
        chpp_count(s, CHPP_CNT_EVENTS_DROPPED);
        trace_chpp_hca_db_err_lost(uar, offset, val);
        return;
    }
    chpp_db_err_push(s, &e);
    trace_chpp_hca_db_err_queued(uar, offset, val, s->db_err_count);
}

void chpp_vf_flr_queue(ChppHcaState *pf, uint8_t vf)
{
    ChppDbErr e = { .value = vf, .type = CHPP_EVENT_VF_FLR };

    /* The waiting event tells this FLR too: the VF was reset. */
    if (!chpp_db_err_queued(pf, CHPP_EVENT_VF_FLR, vf)) {
        chpp_db_err_push(pf, &e);
    }
}

void chpp_db_err_init(ChppHcaState *s)
{
    s->db_err_bh = qemu_bh_new_guarded(chpp_db_err_bh, s,
                                       &DEVICE(s)->mem_reentrancy_guard);
}

void chpp_db_err_fini(ChppHcaState *s)
{
    qemu_bh_delete(s->db_err_bh);
}

void chpp_db_err_reset(ChppHcaState *s)
{
    qemu_bh_cancel(s->db_err_bh);
    s->db_err_head = 0;
    s->db_err_count = 0;
    s->db_err_lost = 0;
}

/*
 * The subsection is only in streams whose source had events waiting or
 * lost: what this side queued (MMIO written while stopped) must not
 * outlive the load.
 */
void chpp_db_err_pre_load(ChppHcaState *s)
{
    chpp_db_err_reset(s);
}

static bool chpp_db_err_needed(void *opaque)
{
    ChppHcaState *s = opaque;

    return s->db_err_count > 0 || s->db_err_lost > 0;
}

static bool chpp_db_err_entry_ok(ChppHcaState *s, const ChppDbErr *e)
{
    switch (e->type) {
    case CHPP_EVENT_DOORBELL_ERROR:
        return e->subtype == CHPP_DB_ERR_BAD_VALUE ||
               e->subtype == CHPP_DB_ERR_FIFO_OVERFLOW;
    case CHPP_EVENT_VF_FLR:
        return !s->func && e->value >= 1 && e->value <= CHPP_MAX_VFS &&
               !e->subtype && chpp_db_err_queued(s, e->type, e->value) == 1;
    default:
        return false;
    }
}

/* Version 1: doorbell errors only, in a ring of CHPP_DB_ERR_QUEUE_DEPTH. */
static bool chpp_db_err_v1_load(ChppHcaState *s)
{
    ChppDbErr ring[CHPP_DB_ERR_QUEUE_DEPTH];
    unsigned i;

    if (s->db_err_head >= CHPP_DB_ERR_QUEUE_DEPTH ||
        s->db_err_count > CHPP_DB_ERR_QUEUE_DEPTH) {
        return false;
    }
    memcpy(ring, s->db_err, sizeof(ring));
    for (i = 0; i < s->db_err_count; i++) {
        s->db_err[i] = ring[(s->db_err_head + i) % CHPP_DB_ERR_QUEUE_DEPTH];
        s->db_err[i].type = CHPP_EVENT_DOORBELL_ERROR;
    }
    s->db_err_head = 0;
    return true;
}

static int chpp_db_err_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    unsigned i;

    if (version_id == 1 && !chpp_db_err_v1_load(s)) {
        return chpp_refuse(s, "deferred events: db_err_head %u or "
                           "db_err_count %u (version 1)", s->db_err_head,
                           s->db_err_count);
    }
    if (s->db_err_head >= CHPP_DEFERRED_DEPTH ||
        s->db_err_count > CHPP_DEFERRED_DEPTH ||
        chpp_db_err_queued(s, CHPP_EVENT_DOORBELL_ERROR, -1) >
        CHPP_DB_ERR_QUEUE_DEPTH) {
        return chpp_refuse(s, "deferred events: db_err_head %u or "
                           "db_err_count %u", s->db_err_head,
                           s->db_err_count);
    }
    for (i = 0; i < s->db_err_count; i++) {
        const ChppDbErr *e = chpp_db_err_at(s, i);

        if (!chpp_db_err_entry_ok(s, e)) {
            return chpp_refuse(s, "deferred events: db_err[%u] type %u "
                               "subtype %u value 0x%" PRIx64,
                               (s->db_err_head + i) % CHPP_DEFERRED_DEPTH,
                               e->type, e->subtype, e->value);
        }
    }
    /* Posted once the VM runs (chpp_engine_vm_state kicks). */
    return 0;
}

static const VMStateDescription vmstate_chpp_db_err_entry_v1 = {
    .name = "chpp-hca-db-error-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(value, ChppDbErr),
        VMSTATE_UINT32(uar, ChppDbErr),
        VMSTATE_UINT32(offset, ChppDbErr),
        VMSTATE_UINT8(subtype, ChppDbErr),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_chpp_db_err_entry = {
    .name = "chpp-hca-deferred-event",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(value, ChppDbErr),
        VMSTATE_UINT32(uar, ChppDbErr),
        VMSTATE_UINT32(offset, ChppDbErr),
        VMSTATE_UINT8(subtype, ChppDbErr),
        VMSTATE_UINT8(type, ChppDbErr),
        VMSTATE_END_OF_LIST()
    }
};

static bool chpp_db_err_is_v1(void *opaque, int version_id)
{
    return version_id == 1;
}

/*
 * Only sent when events were queued while the VM stood still (stopping
 * posts the rest) or some were lost, so streams stay what older versions
 * read.  Version 2
 * added VF_FLR events (the type of each entry, CHPP_DEFERRED_DEPTH of
 * them); version 1 streams still load.
 */
const VMStateDescription vmstate_chpp_db_err = {
    .name = "chpp-hca-function/db-errors",
    .version_id = 2,
    .minimum_version_id = 1,
    .needed = chpp_db_err_needed,
    .post_load = chpp_db_err_post_load,
    .fields = (VMStateField[]) {
        {
            .name = "db_err",
            .num = CHPP_DB_ERR_QUEUE_DEPTH,
            .field_exists = chpp_db_err_is_v1,
            .vmsd = &vmstate_chpp_db_err_entry_v1,
            .size = sizeof(ChppDbErr),
            .flags = VMS_STRUCT | VMS_ARRAY,
            .offset = offsetof(ChppHcaState, db_err),
        },
        VMSTATE_STRUCT_ARRAY(db_err, ChppHcaState, CHPP_DEFERRED_DEPTH, 2,
                             vmstate_chpp_db_err_entry, ChppDbErr),
        VMSTATE_UINT32(db_err_head, ChppHcaState),
        VMSTATE_UINT32(db_err_count, ChppHcaState),
        VMSTATE_UINT32(db_err_lost, ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};
