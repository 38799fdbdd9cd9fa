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
 * Doorbells lost to a full doorbell FIFO are reported losslessly however
 * many QPs lose one: each marks its QP in db_lost, and one FIFO_OVERFLOW
 * event at a time names a marked QP.  The next is raised only when the
 * driver answers (RING_SQ of that QP, or QUERY_DB_LOST), so these events
 * take one slot of the queue and one EQE, never more.
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
#include "qemu/cutils.h"
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
        trace_chpp_hca_err_db_event_lost(s->func, uar, offset, val);
        return;
    }
    chpp_db_err_push(s, &e);
    trace_chpp_hca_db_err_queued(s->func, uar, offset, val, s->db_err_count);
}

static bool chpp_db_lost_test(ChppHcaState *s, uint32_t qpn)
{
    return s->db_lost[qpn / 8] & (1u << (qpn % 8));
}

/* Queue the FIFO_OVERFLOW event that names @qpn. */
static void chpp_db_lost_raise(ChppHcaState *s, uint32_t qpn, uint32_t uar,
                               uint32_t offset, uint64_t val)
{
    ChppDbErr e = {
        .value = val,
        .uar = uar,
        .offset = offset,
        .subtype = CHPP_DB_ERR_FIFO_OVERFLOW,
        .type = CHPP_EVENT_DOORBELL_ERROR,
    };
    unsigned i, last_bad = s->db_err_count;

    s->db_lost_qpn = qpn;
    trace_chpp_hca_db_lost_raise(s->func, qpn, uar, offset, val);
    for (i = 0; i < s->db_err_count; i++) {
        ChppDbErr *w = chpp_db_err_at(s, i);

        if (w->type != CHPP_EVENT_DOORBELL_ERROR) {
            continue;
        }
        /* An answered one not yet posted: it tells this QP now. */
        if (w->subtype == CHPP_DB_ERR_FIFO_OVERFLOW) {
            *w = e;
            return;
        }
        last_bad = i;
    }
    /* Never dropped: it takes the place of the newest refused doorbell. */
    if (chpp_db_err_queued(s, CHPP_EVENT_DOORBELL_ERROR, -1) ==
        CHPP_DB_ERR_QUEUE_DEPTH) {
        ChppDbErr *bad = chpp_db_err_at(s, last_bad);

        s->db_err_lost++;
        chpp_count(s, CHPP_CNT_EVENTS_DROPPED);
        trace_chpp_hca_err_db_event_lost(s->func, bad->uar, bad->offset,
                                         bad->value);
        for (i = last_bad; i + 1 < s->db_err_count; i++) {
            *chpp_db_err_at(s, i) = *chpp_db_err_at(s, i + 1);
        }
        s->db_err_count--;
    }
    chpp_db_err_push(s, &e);
}

/* The event for the lowest marked QP, as if its last doorbell were lost. */
static void chpp_db_lost_next(ChppHcaState *s)
{
    uint32_t qpn;

    for (qpn = 0; qpn < s->params.num_qps; qpn++) {
        if (chpp_db_lost_test(s, qpn)) {
            ChppQp *qp = &s->qps[qpn];

            chpp_db_lost_raise(s, qpn, qp->uar, CHPP_UAR_SQ_DB,
                               qpn << CHPP_UAR_DB_QPN_SHIFT | qp->sq_pi);
            return;
        }
    }
}

void chpp_db_lost_report(ChppHcaState *s, uint32_t qpn, uint32_t uar,
                         uint32_t offset, uint64_t val)
{
    s->db_lost[qpn / 8] |= 1u << (qpn % 8);
    if (s->db_lost_qpn == CHPP_DB_LOST_NONE) {
        chpp_db_lost_raise(s, qpn, uar, offset, val);
    } else {
        trace_chpp_hca_db_lost_coalesced(s->func, qpn, s->db_lost_qpn);
    }
}

void chpp_db_lost_clear(ChppHcaState *s, uint32_t qpn)
{
    if (!chpp_db_lost_test(s, qpn)) {
        return;
    }
    s->db_lost[qpn / 8] &= ~(1u << (qpn % 8));
    if (s->db_lost_qpn == qpn) {
        s->db_lost_qpn = CHPP_DB_LOST_NONE;
        chpp_db_lost_next(s);
    }
}

uint8_t chpp_cmd_query_db_lost(ChppHcaState *s, uint64_t mailbox)
{
    g_autofree struct chpp_db_lost *out = g_new0(struct chpp_db_lost, 1);
    uint32_t qpn, count = 0;
    uint8_t status;

    for (qpn = 0; qpn < s->params.num_qps; qpn++) {
        count += chpp_db_lost_test(s, qpn);
    }
    out->count = cpu_to_le32(count);
    out->num_qps = cpu_to_le32(s->params.num_qps);
    memcpy(out->qps, s->db_lost, sizeof(out->qps));
    if (!chpp_mailbox_write(s, mailbox, out, sizeof(*out), &status)) {
        return status;
    }
    /* Reported means answered: the next lost doorbell raises an event. */
    memset(s->db_lost, 0, sizeof(s->db_lost));
    s->db_lost_qpn = CHPP_DB_LOST_NONE;
    trace_chpp_hca_query_db_lost(s->func, count);
    return CHPP_STAT_OK;
}

void chpp_vf_flr_queue(ChppHcaState *pf, uint8_t vf)
{
    ChppDbErr e = { .value = vf, .type = CHPP_EVENT_VF_FLR };

    /* The waiting event tells this FLR too: the VF was reset. */
    if (!chpp_db_err_queued(pf, CHPP_EVENT_VF_FLR, vf)) {
        chpp_db_err_push(pf, &e);
    }
}

/* Refused doorbells came first: their events go first. */
void chpp_event_post(ChppHcaState *s, struct chpp_eqe *eqe)
{
    chpp_db_err_flush(s);
    chpp_event_post_now(s, eqe);
}

void chpp_eq_post_to(ChppHcaState *s, unsigned eqn, struct chpp_eqe *eqe)
{
    chpp_db_err_flush(s);
    chpp_eq_post_to_now(s, eqn, eqe);
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
    memset(s->db_lost, 0, sizeof(s->db_lost));
    s->db_lost_qpn = CHPP_DB_LOST_NONE;
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
    /*
     * A stream from before ABI 1.4 has overflow events but no marks: mark
     * their QPs, since a later event may take the place of a waiting one
     * (chpp_db_lost_raise).  Newer streams bring their marks after this.
     */
    for (i = 0; i < s->db_err_count; i++) {
        ChppDbErr *e = chpp_db_err_at(s, i);
        uint32_t qpn = (uint32_t)e->value >> CHPP_UAR_DB_QPN_SHIFT;

        if (e->type == CHPP_EVENT_DOORBELL_ERROR &&
            e->subtype == CHPP_DB_ERR_FIFO_OVERFLOW &&
            qpn < s->params.num_qps) {
            s->db_lost[qpn / 8] |= 1u << (qpn % 8);
            if (s->db_lost_qpn == CHPP_DB_LOST_NONE) {
                s->db_lost_qpn = qpn;
            }
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

static bool chpp_db_lost_needed(void *opaque)
{
    ChppHcaState *s = opaque;

    return s->db_lost_qpn != CHPP_DB_LOST_NONE ||
           !buffer_is_zero(s->db_lost, sizeof(s->db_lost));
}

static int chpp_db_lost_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    uint32_t qpn;

    for (qpn = s->params.num_qps; qpn < CHPP_MAX_QPS; qpn++) {
        if (chpp_db_lost_test(s, qpn)) {
            return chpp_refuse(s, "lost doorbells");
        }
    }
    if (s->db_lost_qpn != CHPP_DB_LOST_NONE &&
        (s->db_lost_qpn >= s->params.num_qps ||
         !chpp_db_lost_test(s, s->db_lost_qpn))) {
        return chpp_refuse(s, "lost doorbells");
    }
    return 0;
}

/* Only sent while a QP has a lost doorbell or its event is unanswered. */
const VMStateDescription vmstate_chpp_db_lost = {
    .name = "chpp-hca-function/db-lost",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_db_lost_needed,
    .post_load = chpp_db_lost_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8_ARRAY(db_lost, ChppHcaState, CHPP_MAX_QPS / 8),
        VMSTATE_UINT32(db_lost_qpn, ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};
