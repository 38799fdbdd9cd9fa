/*
 * chpp-hca: the engine: the bottom half that serves the doorbell FIFOs
 * (arbitration between functions) and received frames by running the
 * requester/responder/completer, the QP timers' callbacks, the reaction to
 * QP state changes and the VM stop drain.  Doorbells themselves are
 * decoded in chpp-hca-doorbell.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "migration/vmstate.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

/* Work done per bottom-half run before yielding to the main loop. */
#define CHPP_ENGINE_BUDGET 256

static void chpp_engine_dispatch(ChppHcaState *s, ChppPkt *pkt)
{
    switch (pkt->op) {
    case CHPP_OP_ACK:
    case CHPP_OP_NAK:
    case CHPP_OP_ATOMIC_ACK:
    case CHPP_OP_READ_RESP:
        chpp_comp_packet(s, pkt);
        break;
    default:
        chpp_resp_packet(s, pkt);
    }
    chpp_pkt_free(pkt);
}

static bool chpp_engine_rx(ChppHcaState *s)
{
    ChppPkt *pkt = chpp_route_next(s);

    if (pkt) {
        chpp_engine_dispatch(s, pkt);
        return true;
    }
    return false;
}

/* PF: has any function a doorbell FIFO entry waiting? */
static bool chpp_engine_fifo_busy(ChppHcaState *pf)
{
    unsigned fn, nfn = pf->func ? 0 : chpp_num_functions(pf);

    for (fn = 0; fn < nfn; fn++) {
        ChppHcaState *f = chpp_function(pf, fn);

        if (f && f->db_count) {
            return true;
        }
    }
    return false;
}

/*
 * Timing mode: when the PF may take its next FIFO entry (the descriptor
 * fetch has room, docs/timing-model.md); INT64_MAX: nothing waits.
 */
static int64_t chpp_engine_intake(ChppHcaState *s)
{
    if (s->func) {
        return INT64_MAX;
    }
    return chpp_timing_intake(s, chpp_engine_fifo_busy(s));
}

/* PF only: one doorbell FIFO entry of the function the arbiter picks. */
static bool chpp_engine_serve_fifo(ChppHcaState *s)
{
    ChppHcaState *f;
    uint32_t e, pi;
    ChppQp *qp;

    if (!s->func && chpp_timing_active(s) &&
        chpp_engine_intake(s) > chpp_timing_now()) {
        return false;
    }
    f = s->func ? NULL : chpp_arb_pick(s);
    if (!f) {
        return false;
    }
    if (chpp_timing_active(s)) {
        chpp_timing_intake_taken(s);
    }
    e = f->db_fifo[f->db_head];
    f->db_head = (f->db_head + 1) % CHPP_DB_FIFO_DEPTH;
    f->db_count--;
    qp = &f->qps[CHPP_FIFO_QPN(e)];
    pi = CHPP_FIFO_PI(e);
    /* The entry announces WQEs up to its PI (a stale one announces none). */
    if (((pi - qp->eng.sq_comp) & CHPP_IDX_MASK) <=
        ((qp->sq_pi - qp->eng.sq_comp) & CHPP_IDX_MASK) &&
        ((pi - qp->eng.sq_comp) & CHPP_IDX_MASK) >
        ((qp->eng.sq_limit - qp->eng.sq_comp) & CHPP_IDX_MASK)) {
        qp->eng.sq_limit = pi;
    }
    chpp_hold(f);
    chpp_req_run(f, qp);
    chpp_release(f);
    return true;
}

/* PF: senders that paused for room continue, every function's. */
static void chpp_engine_resume(ChppHcaState *pf)
{
    unsigned fn, i;

    if (!pf->tx_blocked || pf->tx_queued >= CHPP_TX_QUEUE_MAX / 2) {
        return;
    }
    pf->tx_blocked = false;
    for (fn = 0; fn < chpp_num_functions(pf); fn++) {
        ChppHcaState *f = chpp_function(pf, fn);

        if (!f) {
            continue;
        }
        chpp_hold(f);
        for (i = 0; !f->gone && i < f->params.num_qps; i++) {
            ChppQp *qp = &f->qps[i];

            if (qp->eng.tx_pending) {
                qp->eng.tx_pending = false;
                chpp_req_run(f, qp);
                chpp_resp_pump(f, qp);
            }
        }
        chpp_release(f);
    }
}

static bool chpp_engine_step(ChppHcaState *s)
{
    if (!s->func) {
        chpp_engine_resume(s);
    }
    return chpp_engine_rx(s) || chpp_engine_serve_fifo(s);
}

static bool chpp_engine_pending(ChppHcaState *s)
{
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        if (s->wire_rx[vc]->length ||
            (s->link_rx[vc]->length && chpp_link_rx_ready(s))) {
            return true;
        }
    }
    return chpp_engine_fifo_busy(s) ||
           (!s->func && s->tx_blocked && s->tx_queued < CHPP_TX_QUEUE_MAX / 2);
}

/*
 * Timing mode: the engine sleeps until the next thing it has to do, on
 * the virtual clock: a frame falls due, the FIFO may be served.
 */
static void chpp_engine_rearm(ChppHcaState *s)
{
    int64_t next = chpp_timing_rx_next(s);
    unsigned vc;

    for (vc = 0; vc < CHPP_NUM_VCS; vc++) {
        if (!g_queue_is_empty(s->wire_rx[vc]) ||
            (!g_queue_is_empty(s->link_rx[vc]) && chpp_link_rx_ready(s))) {
            next = chpp_timing_now();
        }
    }
    if (!s->func && s->tx_blocked && s->tx_queued < CHPP_TX_QUEUE_MAX / 2) {
        next = chpp_timing_now();
    }
    next = MIN(next, chpp_engine_intake(s));
    if (next != INT64_MAX) {
        timer_mod(s->engine_timer, MAX(next, chpp_timing_now()));
    } else {
        timer_del(s->engine_timer);
    }
}

/*
 * With engine-delay-ns the engine serves one doorbell FIFO entry per
 * period (a service-rate model that makes arbitration measurable);
 * otherwise it works through a budget per bottom half.
 */
static void chpp_engine_run(void *opaque)
{
    ChppHcaState *s = opaque;
    int budget = CHPP_ENGINE_BUDGET;
    bool timed = chpp_timing_active(s);
    int fifo_budget = s->params.engine_delay_ns && !timed ? 1
                                                          : CHPP_ENGINE_BUDGET;

    s->engine_kicked = false;
    if (s->engine_stopped || s->gone || s->engine_running) {
        return;
    }
    chpp_hold(s);
    s->engine_running = true;
    while (!s->gone && budget-- > 0) {
        if (!s->func) {
            chpp_engine_resume(s);
        }
        if (chpp_engine_rx(s)) {
            continue;
        }
        if (fifo_budget > 0 && chpp_engine_serve_fifo(s)) {
            fifo_budget--;
            continue;
        }
        break;
    }
    if (!s->gone) {
        chpp_resp_acks_send(s);
    }
    s->engine_running = false;
    if (!s->gone && timed) {
        chpp_engine_rearm(s);
    } else if (!s->gone && chpp_engine_pending(s)) {
        chpp_engine_kick(s);
    }
    chpp_release(s);
}

/*
 * The engine may run in the caller's thread: not in timing mode or with
 * engine-delay-ns (a clock paces it), not stopped, not already running.
 */
static bool chpp_engine_direct(ChppHcaState *pf)
{
    return !chpp_timing_active(pf) && !pf->params.engine_delay_ns &&
           !pf->engine_stopped && !pf->gone && !pf->engine_running;
}

/*
 * Run @fn in this thread, guarded; what it queues for the link is written
 * at its end (the link's bottom half is not woken for it: each wake-up of
 * the main loop costs more than the write, and a vCPU then waits for the
 * BQL).
 */
static void chpp_engine_call(ChppHcaState *pf, void (*fn)(void *),
                             bool doorbell)
{
    pf->link.flush_coming = true;
    chpp_timer_call(pf, fn, pf);
    pf->link.flush_coming = false;
    if (!pf->gone) {
        chpp_link_flush_now(pf, doorbell);
    }
}

/*
 * A doorbell was queued: serve it now, in the thread that rang it (a
 * vCPU's MMIO write), as an adapter starts at once.  The bottom half would
 * wait for the main loop, which on a busy host waits behind the vCPUs that
 * spin on their completion queues.  The run is guarded as the bottom half
 * is (our own MMIO is refused meanwhile), and what it queued for the link
 * is written before the vCPU returns to the guest (or, while software
 * busy-polls, at its next poll).  In timing mode and with engine-delay-ns
 * a clock paces the engine: it runs from its timer.
 */
void chpp_engine_doorbell(ChppHcaState *pf)
{
    if (!chpp_engine_direct(pf)) {
        chpp_engine_kick(pf);
        return;
    }
    chpp_engine_call(pf, chpp_engine_run, true);
}

static void chpp_engine_poll_run(void *opaque)
{
    ChppHcaState *pf = opaque;

    /* The run below serves what the parse queues: no bottom half. */
    pf->engine_kicked = true;
    chpp_link_poll(pf);
    if (!pf->gone) {
        chpp_engine_run(pf);
    }
}

bool chpp_engine_rx_begin(ChppHcaState *pf)
{
    if (!chpp_engine_direct(pf)) {
        return false;
    }
    pf->engine_kicked = true;
    pf->link.flush_coming = true;
    return true;
}

void chpp_engine_rx_end(ChppHcaState *pf)
{
    chpp_engine_call(pf, chpp_engine_run, false);
}

/*
 * A process polls its completions (it reads CHPP_UAR_DB_STATUS when its
 * CQ is empty): take what the link's reader thread received and run the
 * engine now, in the polling vCPU, instead of waiting for the main loop
 * thread, which on a busy host waits behind that very vCPU.  Guarded as
 * the bottom halves are; not in timing mode or with engine-delay-ns.
 */
void chpp_engine_poll(ChppHcaState *pf)
{
    if (chpp_engine_direct(pf)) {
        chpp_engine_call(pf, chpp_engine_poll_run, false);
    }
}

static void chpp_engine_timer(void *opaque)
{
    chpp_timer_call(opaque, chpp_engine_run, opaque);
}

/*
 * The VM is stopping (e.g. for migration): finish in-flight packets now.
 * Packets cross between functions, so the PF drains them all until none
 * of them has anything left.
 */
static void chpp_engine_vm_state(void *opaque, bool running, RunState state)
{
    ChppHcaState *s = opaque;
    bool busy;
    unsigned fn;

    if (running) {
        if (!s->func) {
            /* Everything finished when the VM stopped: the model idles. */
            chpp_timing_set_bypass(s, false);
            chpp_timing_reset(s);
        }
        s->engine_stopped = false;
        chpp_port_vm_running(s);
        chpp_engine_kick(s);
        chpp_db_err_kick(s);
        return;
    }
    /* In-flight work finishes now, whatever the timing model says. */
    chpp_timing_set_bypass(chpp_pf(s), true);
    do {
        busy = false;
        for (fn = 0; fn <= (s->func ? 0 : CHPP_MAX_VFS); fn++) {
            ChppHcaState *f = s->func ? s : chpp_function(s, fn);

            if (!f) {
                continue;
            }
            chpp_hold(f);
            chpp_db_err_flush(f);
            while (!f->gone && chpp_engine_step(f)) {
                busy = true;
            }
            chpp_release(f);
        }
    } while (busy && !s->gone);
    s->engine_stopped = true;
}

typedef struct ChppQpTimerCtx {
    ChppHcaState *s;
    uint32_t qpn;
} ChppQpTimerCtx;

static void chpp_qp_timer_run(void *opaque)
{
    ChppQpTimerCtx *ctx = opaque;
    ChppHcaState *s = ctx->s;
    ChppQp *qp = &s->qps[ctx->qpn];
    uint8_t kind = qp->eng.timer_kind;

    qp->eng.timer_kind = CHPP_TIMER_NONE;
    trace_chpp_hca_qp_timer(s->func, ctx->qpn, kind);
    if (kind == CHPP_TIMER_RETRANSMIT) {
        chpp_comp_timeout(s, qp);
    } else if (kind == CHPP_TIMER_RNR) {
        chpp_req_retransmit(s, qp);
    } else if (kind == CHPP_TIMER_SENT) {
        chpp_req_sent(s, qp);
    }
}

static void chpp_qp_timer_cb(void *opaque)
{
    ChppQpTimerCtx *ctx = opaque;

    chpp_timer_call(ctx->s, chpp_qp_timer_run, ctx);
}

void chpp_engine_qp_transition(ChppHcaState *s, ChppQp *qp,
                               uint8_t old_state)
{
    ChppQpEngine *eng = &qp->eng;

    trace_chpp_hca_qp_transition(s->func, chpp_qpn(s, qp), old_state,
                                 qp->state);
    switch (qp->state) {
    case CHPP_QPS_RESET:
        chpp_qp_timer_stop(s, qp);
        memset(eng, 0, sizeof(*eng));
        chpp_db_lost_clear(s, chpp_qpn(s, qp));
        break;
    case CHPP_QPS_INIT:
        if (old_state == CHPP_QPS_RESET) {
            memset(eng, 0, sizeof(*eng));
        }
        break;
    case CHPP_QPS_RTS:
        if (old_state == CHPP_QPS_RTR) {
            eng->retry_left = qp->retry_cnt;
            eng->rnr_left = qp->rnr_retry;
        }
        chpp_req_run(s, qp);
        break;
    case CHPP_QPS_SQD:
        chpp_qp_check_drained(s, qp);
        break;
    case CHPP_QPS_SQE:
        chpp_qp_timer_stop(s, qp);
        chpp_req_flush(s, qp);
        break;
    case CHPP_QPS_ERR:
        chpp_qp_timer_stop(s, qp);
        chpp_req_flush(s, qp);
        chpp_resp_flush(s, qp);
        /* An SRQ's QP has used its last WQE (the one it had is flushed). */
        if ((qp->flags & CHPP_QP_FLAG_SRQ) && old_state != CHPP_QPS_ERR) {
            chpp_qp_async_event(s, qp, CHPP_EVENT_LAST_WQE_REACHED);
        }
        break;
    default:
        break;
    }
}

void chpp_engine_init(ChppHcaState *s)
{
    unsigned i;

    s->engine_bh = qemu_bh_new_guarded(chpp_engine_run, s,
                                       &DEVICE(s)->mem_reentrancy_guard);
    chpp_db_err_init(s);
    s->engine_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, chpp_engine_timer, s);
    s->qp_timers = g_new0(QEMUTimer *, s->params.num_qps);
    s->acks_owed = g_new0(uint32_t, s->params.num_qps);
    for (i = 0; i < s->params.num_qps; i++) {
        ChppQpTimerCtx *ctx = g_new(ChppQpTimerCtx, 1);

        ctx->s = s;
        ctx->qpn = i;
        s->qp_timers[i] = timer_new_ns(QEMU_CLOCK_VIRTUAL, chpp_qp_timer_cb,
                                       ctx);
    }
    for (i = 0; i < CHPP_NUM_VCS; i++) {
        s->wire_rx[i] = g_queue_new();
    }
    s->timed_rx = g_queue_new();
    s->vmstate_change = qemu_add_vm_change_state_handler(chpp_engine_vm_state,
                                                         s);
    /*
     * Nothing runs before the VM does: a migration destination must not
     * act on frames from the link before its state is loaded.
     */
    s->engine_stopped = !runstate_is_running();
}

void chpp_engine_stop(ChppHcaState *s)
{
    unsigned i;

    qemu_del_vm_change_state_handler(s->vmstate_change);
    s->vmstate_change = NULL;
    s->engine_stopped = true;
    qemu_bh_cancel(s->engine_bh);
    qemu_bh_cancel(s->db_err_bh);
    timer_del(s->engine_timer);
    for (i = 0; i < s->params.num_qps; i++) {
        timer_del(s->qp_timers[i]);
    }
    /* Queued frames go now, while the PF whose credits they hold is here. */
    chpp_route_reset(s);
}

void chpp_engine_fini(ChppHcaState *s)
{
    unsigned i;

    if (s->vmstate_change) {
        qemu_del_vm_change_state_handler(s->vmstate_change);
        chpp_route_reset(s);
    }
    for (i = 0; i < CHPP_NUM_VCS; i++) {
        g_queue_free(s->wire_rx[i]);
    }
    g_queue_free(s->timed_rx);
    for (i = 0; i < s->params.num_qps; i++) {
        g_free(s->qp_timers[i]->opaque);
        timer_free(s->qp_timers[i]);
    }
    g_free(s->qp_timers);
    g_free(s->acks_owed);
    timer_free(s->engine_timer);
    qemu_bh_delete(s->engine_bh);
    chpp_db_err_fini(s);
}

void chpp_engine_reset(ChppHcaState *s)
{
    unsigned i;

    qemu_bh_cancel(s->engine_bh);
    s->engine_kicked = false;
    timer_del(s->engine_timer);
    for (i = 0; i < s->params.num_qps; i++) {
        timer_del(s->qp_timers[i]);
        memset(&s->qps[i].eng, 0, sizeof(s->qps[i].eng));
    }
    s->n_acks_owed = 0;
    chpp_route_reset(s);
    s->tx_blocked = false;
    if (!s->func) {
        chpp_timing_reset(s);
    }
    memset(s->db_fifo, 0, sizeof(s->db_fifo));
    s->db_head = 0;
    s->db_count = 0;
    chpp_db_err_reset(s);
}

/*
 * Migration streams are untrusted input too: the doorbell FIFO and each
 * QP's engine state must be what the engine could have left.  Runs after
 * chpp_qp_post_load(), which checked the ring indices and cleared QPs in
 * RESET.
 */
int chpp_engine_check_load(ChppHcaState *s)
{
    unsigned i;
    int ret;

    if (s->db_head >= CHPP_DB_FIFO_DEPTH || s->db_count > CHPP_DB_FIFO_DEPTH) {
        return chpp_refuse(s, "db_head %u or db_count %u: the doorbell FIFO "
                           "has %u entries", s->db_head, s->db_count,
                           CHPP_DB_FIFO_DEPTH);
    }
    for (i = 0; i < s->db_count; i++) {
        uint32_t slot = (s->db_head + i) % CHPP_DB_FIFO_DEPTH;

        if (CHPP_FIFO_QPN(s->db_fifo[slot]) >= s->params.num_qps) {
            return chpp_refuse(s, "db_fifo[%u]: QP %u of %u", slot,
                               CHPP_FIFO_QPN(s->db_fifo[slot]),
                               s->params.num_qps);
        }
    }
    for (i = 0; i < s->params.num_qps; i++) {
        ChppQp *qp = &s->qps[i];
        ChppQpEngine *eng = &qp->eng;

        if (eng->infl_head >= CHPP_MAX_INFLIGHT ||
            eng->infl_count > CHPP_MAX_INFLIGHT) {
            return chpp_refuse(s, "QP %u: eng.infl_head %u or eng.infl_count "
                               "%u: %u WQEs in flight at most", i,
                               eng->infl_head, eng->infl_count,
                               CHPP_MAX_INFLIGHT);
        }
        if (eng->rd_head >= CHPP_MAX_RD_ATOMIC ||
            eng->rd_count > CHPP_MAX_RD_ATOMIC) {
            return chpp_refuse(s, "QP %u: eng.rd_head %u or eng.rd_count %u: "
                               "%u GET responses at most", i, eng->rd_head,
                               eng->rd_count, CHPP_MAX_RD_ATOMIC);
        }
        /* CHPP_TIMER_SENT: timing mode, a UC/UD WQE not sent yet. */
        if (eng->timer_kind > CHPP_TIMER_SENT ||
            (eng->timer_kind == CHPP_TIMER_SENT &&
             (qp->type == CHPP_QPT_RC || !eng->infl_count))) {
            return chpp_refuse(s, "QP %u: eng.timer_kind %u", i,
                               eng->timer_kind);
        }
        /* Every WQE from sq_comp to sq_ci is in flight, and only those. */
        if (eng->infl_count !=
            ((qp->sq_ci - eng->sq_comp) & CHPP_IDX_MASK)) {
            return chpp_refuse(s, "QP %u: eng.sq_comp 0x%x: sq_ci 0x%x, but "
                               "eng.infl_count %u", i, eng->sq_comp,
                               qp->sq_ci, eng->infl_count);
        }
        /* The requester runs in RTS and SQD; other states flush it. */
        if (eng->infl_count && qp->state != CHPP_QPS_RTS &&
            qp->state != CHPP_QPS_SQD) {
            return chpp_refuse(s, "QP %u: eng.infl_count %u in state %u", i,
                               eng->infl_count, qp->state);
        }
        if (eng->rd_count && !chpp_qp_receives(qp)) {
            return chpp_refuse(s, "QP %u: eng.rd_count %u in state %u", i,
                               eng->rd_count, qp->state);
        }
        if (eng->rd_atomic > eng->infl_count) {
            return chpp_refuse(s, "QP %u: eng.rd_atomic %u of eng.infl_count "
                               "%u", i, eng->rd_atomic, eng->infl_count);
        }
        if (eng->retry_left > CHPP_QP_MAX_RETRY ||
            eng->rnr_left > CHPP_QP_MAX_RETRY) {
            return chpp_refuse(s, "QP %u: eng.retry_left %u or eng.rnr_left "
                               "%u beyond %u", i, eng->retry_left,
                               eng->rnr_left, CHPP_QP_MAX_RETRY);
        }
        if (eng->atomic_psn > CHPP_PSN_MASK) {
            return chpp_refuse(s, "QP %u: eng.atomic_psn 0x%x beyond 24 bits",
                               i, eng->atomic_psn);
        }
        ret = chpp_req_check_load(s, qp);
        if (!ret) {
            ret = chpp_resp_check_load(s, qp);
        }
        if (ret) {
            return ret;
        }
    }
    return 0;
}

void chpp_engine_post_load(ChppHcaState *s)
{
    unsigned i;

    for (i = 0; i < s->params.num_qps; i++) {
        ChppQpEngine *eng = &s->qps[i].eng;

        if (eng->timer_kind != CHPP_TIMER_NONE) {
            timer_mod(s->qp_timers[i], eng->timer_deadline);
        }
        if (eng->tx_pending) {
            chpp_pf(s)->tx_blocked = true;
            chpp_engine_kick(chpp_pf(s));
        }
    }
    if (s->db_count) {
        chpp_engine_kick(s);
    }
}

static const VMStateDescription vmstate_chpp_read_resp = {
    .name = "chpp-hca-read-resp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(va, ChppReadResp),
        VMSTATE_UINT32(rkey, ChppReadResp),
        VMSTATE_UINT32(psn, ChppReadResp),
        VMSTATE_UINT32(len, ChppReadResp),
        VMSTATE_UINT32(sent, ChppReadResp),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_chpp_inflight = {
    .name = "chpp-hca-inflight",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(wr_id, ChppInflight),
        VMSTATE_UINT32(wqe_idx, ChppInflight),
        VMSTATE_UINT32(first_psn, ChppInflight),
        VMSTATE_UINT32(last_psn, ChppInflight),
        VMSTATE_UINT32(length, ChppInflight),
        VMSTATE_UINT32(sent, ChppInflight),
        VMSTATE_UINT32(done, ChppInflight),
        VMSTATE_UINT8(opcode, ChppInflight),
        VMSTATE_UINT8(flags, ChppInflight),
        VMSTATE_UINT8(status, ChppInflight),
        VMSTATE_UINT8(vendor_err, ChppInflight),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription vmstate_chpp_qp_engine = {
    .name = "chpp-hca-qp-engine",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(sq_comp, ChppQpEngine),
        VMSTATE_UINT32(sq_limit, ChppQpEngine),
        VMSTATE_STRUCT_ARRAY(inflight, ChppQpEngine, CHPP_MAX_INFLIGHT, 1,
                             vmstate_chpp_inflight, ChppInflight),
        VMSTATE_UINT32(infl_head, ChppQpEngine),
        VMSTATE_UINT32(infl_count, ChppQpEngine),
        VMSTATE_UINT32(rd_atomic, ChppQpEngine),
        VMSTATE_UINT8(retry_left, ChppQpEngine),
        VMSTATE_UINT8(rnr_left, ChppQpEngine),
        VMSTATE_BOOL(sqd_notify, ChppQpEngine),
        VMSTATE_UINT8(timer_kind, ChppQpEngine),
        VMSTATE_INT64(timer_deadline, ChppQpEngine),
        VMSTATE_BOOL(recv_active, ChppQpEngine),
        VMSTATE_UINT32(recv_wqe_idx, ChppQpEngine),
        VMSTATE_UINT32(recv_len, ChppQpEngine),
        VMSTATE_BOOL(nak_sent, ChppQpEngine),
        VMSTATE_BOOL(comm_est, ChppQpEngine),
        VMSTATE_STRUCT_ARRAY(rd, ChppQpEngine, CHPP_MAX_RD_ATOMIC, 1,
                             vmstate_chpp_read_resp, ChppReadResp),
        VMSTATE_UINT32(rd_head, ChppQpEngine),
        VMSTATE_UINT32(rd_count, ChppQpEngine),
        VMSTATE_BOOL(tx_pending, ChppQpEngine),
        VMSTATE_BOOL(atomic_valid, ChppQpEngine),
        VMSTATE_UINT32(atomic_psn, ChppQpEngine),
        VMSTATE_UINT64(atomic_orig, ChppQpEngine),
        VMSTATE_END_OF_LIST()
    }
};
