/*
 * chpp-hca: the base every other file of the device may call, and which
 * calls none of them: the guest-error funnel, holding a function while
 * device code runs on it, command failure status, command mailboxes and
 * the refusal of incoming migration state; and scheduling: the engine's
 * kick and the transmit bound, by which lower layers tell the engine that
 * work arrived or room freed up without calling into it.  DMA itself is
 * in chpp-hca-dma.c, one layer above (docs/architecture.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

static void G_GNUC_PRINTF(2, 0) chpp_guest_vlog(ChppHcaState *s,
                                                const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    trace_chpp_hca_err_guest(s->func, msg);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n",
                  object_get_canonical_path_component(OBJECT(s)) ?: "chpp-hca",
                  msg);
}

void chpp_guest_error(ChppHcaState *s, const char *fmt, ...)
{
    va_list ap;

    chpp_count(s, CHPP_CNT_GUEST_ERRORS);
    va_start(ap, fmt);
    chpp_guest_vlog(s, fmt, ap);
    va_end(ap);
}

void chpp_guest_note(ChppHcaState *s, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    chpp_guest_vlog(s, fmt, ap);
    va_end(ap);
}

void chpp_hold(ChppHcaState *s)
{
    object_ref(OBJECT(s));
}

static void chpp_release_bh(void *opaque)
{
    object_unref(OBJECT(opaque));
}

void chpp_release(ChppHcaState *s)
{
    if (s->gone) {
        /*
         * This may be the last reference, and the bottom half that called
         * us still restores the device's re-entrancy guard on return.
         */
        aio_bh_schedule_oneshot(qemu_get_aio_context(), chpp_release_bh, s);
    } else {
        object_unref(OBJECT(s));
    }
}

void chpp_timer_call(ChppHcaState *s, void (*fn)(void *), void *opaque)
{
    MemReentrancyGuard *guard = &chpp_pci(s)->qdev.mem_reentrancy_guard;
    bool engaged = guard->engaged_in_io;

    if (s->gone) {
        return;
    }
    /* As a guarded bottom half: our own MMIO is refused meanwhile. */
    guard->engaged_in_io = true;
    chpp_hold(s);
    fn(opaque);
    guard->engaged_in_io = engaged;
    chpp_release(s);
}

uint8_t chpp_cmd_fail(ChppHcaState *s, uint8_t status, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    chpp_guest_error(s, "command %s: %s (status 0x%02x)",
                     chpp_cmd_name(s->hcr[CHPP_HCR_CTRL / 4] &
                                   CHPP_HCR_OPCODE_MASK) ?: "UNKNOWN",
                     msg, status);
    return status;
}

int chpp_refuse(ChppHcaState *s, const char *fmt, ...)
{
    g_autofree char *why = NULL;
    va_list ap;

    va_start(ap, fmt);
    why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    trace_chpp_hca_err_vmstate_refused(s->func, why);
    error_report("chpp-hca: function %u: incoming state refused: %s",
                 s->func, why);
    return -EINVAL;
}

void chpp_engine_kick_at(ChppHcaState *s, int64_t when_ns)
{
    if (s->engine_stopped || s->gone) {
        return;
    }
    timer_mod_anticipate(s->engine_timer, when_ns);
}

void chpp_engine_kick(ChppHcaState *s)
{
    if (s->engine_stopped || s->gone) {
        return;
    }
    if (chpp_timing_active(s)) {
        /*
         * Timing mode: the engine runs on the virtual clock only, at the
         * same virtual time here (a bottom half would run whenever the
         * main loop gets to it: under -icount, at no definite time), or
         * one engine-delay-ns later (a test knob, as without timing).
         */
        chpp_engine_kick_at(s, chpp_timing_now() +
                               (int64_t)s->params.engine_delay_ns);
    } else if (s->params.engine_delay_ns) {
        if (!timer_pending(s->engine_timer)) {
            timer_mod(s->engine_timer,
                      qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                      s->params.engine_delay_ns);
        }
    } else if (!s->engine_kicked) {
        /* Scheduling wakes the main loop each time: once per run does. */
        s->engine_kicked = true;
        qemu_bh_schedule(s->engine_bh);
    }
}

bool chpp_tx_room(ChppHcaState *s, ChppQp *qp)
{
    ChppHcaState *pf = chpp_pf(s);

    if (pf->tx_queued < CHPP_TX_QUEUE_MAX) {
        return true;
    }
    qp->eng.tx_pending = true;
    pf->tx_blocked = true;
    return false;
}

/* Senders wait until the queues are half empty, then all resume. */
void chpp_tx_dequeued(ChppHcaState *s)
{
    ChppHcaState *pf = chpp_pf(s);

    if (pf->tx_queued) {
        pf->tx_queued--;
    }
    if (pf->tx_blocked && pf->tx_queued < CHPP_TX_QUEUE_MAX / 2) {
        chpp_engine_kick(pf);
    }
}
