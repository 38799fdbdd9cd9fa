/*
 * chpp-hca: refused doorbells and their DOORBELL_ERROR events.
 *
 * A doorbell write runs in the vCPU's MMIO handler.  There a refused
 * doorbell is only counted, logged and queued; its EQE (a DMA write to
 * guest memory, perhaps MSI-X) is posted later, by a bottom half, as the
 * EQEs of valid doorbells are.  The queue is bounded: the event of a
 * doorbell refused while it is full is dropped and counted.
 *
 * Order: any other event of the function first posts what is queued, so
 * EQEs appear in the order of what caused them.  The VM stopping (e.g. for
 * migration) posts them too; what a doorbell written while the VM stands
 * still queues is migrated.
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
        .type = CHPP_EVENT_DOORBELL_ERROR,
        .subtype = e->subtype,
        .event.db_error.offset = cpu_to_le32(e->offset),
        .event.db_error.value = cpu_to_le32(e->value),
        .event.db_error.uar = cpu_to_le32(e->uar),
        .event.db_error.value_hi = cpu_to_le32(e->value >> 32),
    };

    chpp_event_post_now(s, &eqe);
}

void chpp_db_err_flush(ChppHcaState *s)
{
    while (s->db_err_count) {
        ChppDbErr e = s->db_err[s->db_err_head];

        s->db_err_head = (s->db_err_head + 1) % CHPP_DB_ERR_QUEUE_DEPTH;
        s->db_err_count--;
        chpp_db_err_post(s, &e);
    }
}

static void chpp_db_err_bh(void *opaque)
{
    ChppHcaState *s = opaque;

    /* VM stopped: guest memory is not touched (resuming reschedules). */
    if (!s->engine_stopped) {
        chpp_db_err_flush(s);
    }
}

void chpp_db_err_kick(ChppHcaState *s)
{
    if (s->db_err_count && !s->engine_stopped) {
        qemu_bh_schedule(s->db_err_bh);
    }
}

void chpp_doorbell_refused(ChppHcaState *s, uint8_t subtype, uint32_t uar,
                           uint32_t offset, uint64_t val)
{
    if (s->db_err_count == CHPP_DB_ERR_QUEUE_DEPTH) {
        s->db_err_lost++;
        chpp_count(s, CHPP_CNT_EVENTS_DROPPED);
        trace_chpp_hca_db_err_lost(uar, offset, val);
        return;
    }
    s->db_err[(s->db_err_head + s->db_err_count) % CHPP_DB_ERR_QUEUE_DEPTH] =
        (ChppDbErr) {
            .value = val,
            .uar = uar,
            .offset = offset,
            .subtype = subtype,
        };
    s->db_err_count++;
    trace_chpp_hca_db_err_queued(uar, offset, val, s->db_err_count);
    chpp_db_err_kick(s);
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

static bool chpp_db_err_needed(void *opaque)
{
    ChppHcaState *s = opaque;

    return s->db_err_count > 0;
}

static int chpp_db_err_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    unsigned i;

    if (s->db_err_head >= CHPP_DB_ERR_QUEUE_DEPTH ||
        s->db_err_count > CHPP_DB_ERR_QUEUE_DEPTH) {
        return -EINVAL;
    }
    for (i = 0; i < s->db_err_count; i++) {
        uint8_t st = s->db_err[(s->db_err_head + i) %
                               CHPP_DB_ERR_QUEUE_DEPTH].subtype;

        if (st != CHPP_DB_ERR_BAD_VALUE && st != CHPP_DB_ERR_FIFO_OVERFLOW) {
            return -EINVAL;
        }
    }
    /* Posted once the VM runs (chpp_engine_vm_state kicks). */
    return 0;
}

static const VMStateDescription vmstate_chpp_db_err_entry = {
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

/*
 * Only sent when doorbells were refused while the VM stood still (stopping
 * posts the rest), so streams stay what older versions read.
 */
const VMStateDescription vmstate_chpp_db_err = {
    .name = "chpp-hca-function/db-errors",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_db_err_needed,
    .post_load = chpp_db_err_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(db_err, ChppHcaState, CHPP_DB_ERR_QUEUE_DEPTH, 1,
                             vmstate_chpp_db_err_entry, ChppDbErr),
        VMSTATE_UINT32(db_err_head, ChppHcaState),
        VMSTATE_UINT32(db_err_count, ChppHcaState),
        VMSTATE_UINT32(db_err_lost, ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};
