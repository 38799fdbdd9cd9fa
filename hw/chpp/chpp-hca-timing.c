/*
 * chpp-hca: the timing model of the FPGA prototype (seed 004), for the
 * optional timing mode (property "timing"; docs/timing-model.md).
 *
 * The engine's logic does not change: the same packets, the same results.
 * The model only says when each step would have finished on the
 * prototype: when a doorbell FIFO entry may be taken, and when a packet's
 * data is in the target's memory.  The routing holds a packet until then
 * (chpp_timing_rx_*), the engine sleeps on a virtual-clock timer until the
 * next such time.  All times are virtual (QEMU_CLOCK_VIRTUAL), so a guest
 * run with -icount sees them in its own clock.
 *
 * The pipeline of one send, with c the cycle, B the bus width, m the
 * largest TLP payload (min of the MTU and the host's), r the read request:
 *
 *   doorbell --L--> descriptor read (M + return) -> processing (P_op)
 *     -> data: read (M + return, 32 tags)  or  extraction (8 bytes/cycle)
 *     -> packet -> crossbar (X) -> upload (write TLPs) --L--> memory
 *
 * A read's n bytes come back in TLPs of at most m bytes, each costing one
 * header and one processing cycle besides its data beats (n/B): 10 cycles
 * per 128 bytes, 3.2 GB/s at 250 MHz (seed 004 5.1).  NAPs are one packet,
 * stored and forwarded; other messages stream through (cut-through).
 *
 * This file calls no other file of the device: it is the bottom layer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "chpp-hca-datapath.h"

/*
 * Fixed by seed 004 5.1: a 16-byte header takes one cycle, and so does
 * the engine's processing of each returned TLP.
 */
#define TM_HDR          1
#define TM_TLP_PROC     1
/* Cut-through: the last beat through packetizer, crossbar port, upload. */
#define TM_CT_CYCLES    4
/* Inline data leaves the descriptor on its 64-bit path (seed 004 5.2). */
#define TM_EXTRACT      8

/* ChppTimingMsg.kind */
#define TM_SF           1       /* stored and forwarded (NAP) */
#define TM_INLINE       2       /* data from the descriptor */
#define TM_REQUEST      4       /* GET/atomic request: t_data is its arrival */

static const ChppTimingParams *tm_params(ChppHcaState *s)
{
    return &s->params.timing;
}

static int64_t tm_cycle_ps(const ChppTimingParams *p)
{
    return (1000000 + p->clock_mhz / 2) / p->clock_mhz;
}

static uint32_t tm_tlp(const ChppTimingParams *p)
{
    return MIN(p->mtu, p->host_mps);
}

static uint64_t tm_beats(const ChppTimingParams *p, uint64_t n)
{
    return DIV_ROUND_UP(n, p->bus_bytes);
}

/* Cycles the return of @n bytes of read data occupies the bus. */
static uint64_t tm_read_ret(const ChppTimingParams *p, uint64_t n)
{
    return DIV_ROUND_UP(n, tm_tlp(p)) * (TM_HDR + TM_TLP_PROC) +
           tm_beats(p, n);
}

/* Cycles the upload of @n bytes takes (write TLPs to the host). */
static uint64_t tm_write(const ChppTimingParams *p, uint64_t n)
{
    return DIV_ROUND_UP(n, tm_tlp(p)) * TM_HDR + tm_beats(p, n);
}

/* Cycles one packet of @n payload bytes takes through a port. */
static uint64_t tm_xfer(const ChppTimingParams *p, uint64_t n)
{
    return TM_HDR + tm_beats(p, n);
}

/*
 * Cycles from the first read request of a read until bytes [0, n) have
 * returned, less the memory latency M (n >= 1).  Requests of r bytes go
 * out one per cycle while tags last; request j's data returns M after it
 * went out, behind the earlier ones on the bus.  With enough tags
 * ((T - 1) b >= M, b the bus time of one request) the bus never idles;
 * otherwise every T requests wait for the first of them to return
 * (seed 004 formula (2): n = ceil(t / (r/16 + 2 r/m)) tags are needed).
 */
static uint64_t tm_read_fin(const ChppTimingParams *p, uint64_t n)
{
    uint64_t r = p->read_req;
    uint64_t j = (n - 1) / r;
    uint64_t b = tm_read_ret(p, r);
    uint64_t bp = tm_read_ret(p, n - j * r);

    if ((p->tags - 1) * b >= p->mem_cycles) {
        return j * b + bp;
    }
    return (j % p->tags) * b + (j / p->tags) * (p->mem_cycles + b) + bp;
}

static int64_t tm_ns(int64_t ps)
{
    return DIV_ROUND_UP(ps, 1000);
}

int64_t chpp_timing_now(void)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

bool chpp_timing_active(ChppHcaState *s)
{
    ChppHcaState *pf = chpp_pf(s);

    return pf->params.timing.on && !pf->timing.bypass;
}

/* When bytes [0, @x) of @m are in the engine: read back or extracted. */
static int64_t tm_ready(const ChppTimingParams *p, const ChppTimingMsg *m,
                        uint32_t x)
{
    int64_t c = tm_cycle_ps(p);

    if (m->kind & (TM_INLINE | TM_REQUEST) || !m->len) {
        return m->t_data + (int64_t)DIV_ROUND_UP(x, TM_EXTRACT) * c;
    }
    if (!x) {
        return m->t_data + (int64_t)p->mem_cycles * c;
    }
    return m->t_data + (int64_t)(p->mem_cycles + tm_read_fin(p, x)) * c;
}

/* ps: bytes [0, @end) of @m are in the target's memory. */
static int64_t tm_due_ps(const ChppTimingParams *p, const ChppTimingMsg *m,
                         uint32_t end)
{
    int64_t c = tm_cycle_ps(p);
    int64_t link = (int64_t)p->link_ns * 1000;

    if (m->kind & TM_REQUEST) {
        return m->t_data;
    }
    if (m->kind & TM_SF) {
        uint64_t pack = m->kind & TM_INLINE ? 0 : tm_beats(p, m->len);

        return tm_ready(p, m, m->len) +
               (int64_t)(pack + p->xbar_cycles + tm_xfer(p, m->len) +
                         tm_write(p, m->len)) * c + link;
    }
    return tm_ready(p, m, end) +
           (int64_t)(p->xbar_cycles + TM_CT_CYCLES) * c + link;
}

int64_t chpp_timing_due(ChppHcaState *s, const ChppTimingMsg *m, uint32_t end)
{
    return tm_ns(tm_due_ps(tm_params(s), m, MIN(end, m->len)));
}

/* The data read of @len bytes goes next on the read module, after @t. */
static int64_t tm_read(ChppTimingModel *tm, const ChppTimingParams *p,
                       int64_t t, uint32_t len)
{
    int64_t d0 = MAX(t, tm->read_free);

    tm->read_free = d0 + (int64_t)(p->mem_cycles + tm_read_fin(p, len)) *
                         tm_cycle_ps(p);
    return d0;
}

void chpp_timing_send(ChppHcaState *s, ChppTimingMsg *m, uint8_t opcode,
                      bool inl, uint32_t wqe_bytes, uint32_t len)
{
    const ChppTimingParams *p = tm_params(s);
    ChppTimingModel *tm = &chpp_pf(s)->timing;
    int64_t c = tm_cycle_ps(p);
    int64_t now = chpp_timing_now() * 1000;
    int64_t t_in, e1, leave;
    uint32_t proc;

    m->len = len;
    m->kind = 0;
    switch (opcode) {
    case CHPP_WQE_NAP:
        m->kind = TM_SF;
        /* fall through */
    case CHPP_WQE_SEND:
    case CHPP_WQE_SEND_IMM:
        proc = inl ? p->nap_imm_cycles : p->nap_ind_cycles;
        break;
    case CHPP_WQE_GET:
    case CHPP_WQE_ATOMIC_CS:
    case CHPP_WQE_ATOMIC_FA:
        m->kind = TM_REQUEST;
        proc = p->get_cycles;
        break;
    default:
        proc = p->put_cycles;
    }
    if (inl) {
        m->kind |= TM_INLINE;
    }
    /* The descriptor: the doorbell crosses the link, then one read. */
    t_in = MAX(now, tm->slot_free[tm->slot_next]);
    e1 = MAX(t_in + (int64_t)p->link_ns * 1000 +
             (int64_t)(p->mem_cycles + tm_read_ret(p, wqe_bytes)) * c,
             tm->eng_free) + (int64_t)proc * c;
    tm->eng_free = e1;
    if (m->kind & TM_REQUEST) {
        /* The GET packet carries the descriptor to the responder. */
        m->t_data = e1 + (int64_t)(tm_xfer(p, 16) + p->xbar_cycles) * c;
        leave = e1;
    } else if (inl || !len) {
        m->t_data = e1;
        tm->eng_free = e1 + (int64_t)DIV_ROUND_UP(len, TM_EXTRACT) * c;
        leave = tm->eng_free;
    } else {
        m->t_data = tm_read(tm, p, e1, len);
        leave = m->t_data;
    }
    tm->slot_free[tm->slot_next] = leave;
    tm->slot_next = (tm->slot_next + 1) % CHPP_TIMING_DESC_AHEAD;
    m->t_last = tm_ns(tm_due_ps(p, m, len));
}

/*
 * A GET request arrived at the responder: the prototype turns it into a
 * local PUT (seed 004 4.1): processed like one, then its data is read.
 */
void chpp_timing_get_resp(ChppHcaState *s, ChppTimingMsg *m, uint32_t len)
{
    const ChppTimingParams *p = tm_params(s);
    ChppTimingModel *tm = &chpp_pf(s)->timing;
    int64_t e1 = MAX(chpp_timing_now() * 1000, tm->eng_free) +
                 (int64_t)p->put_cycles * tm_cycle_ps(p);

    tm->eng_free = e1;
    m->len = len;
    m->kind = len ? 0 : TM_INLINE;
    m->t_data = len ? tm_read(tm, p, e1, len) : e1;
    m->t_last = tm_ns(tm_due_ps(p, m, len));
}

/* An ACK or NAK: a header through the crossbar, then the completion. */
int64_t chpp_timing_ack_due(ChppHcaState *s)
{
    const ChppTimingParams *p = tm_params(s);

    return tm_ns(chpp_timing_now() * 1000 +
                 (int64_t)(TM_HDR + p->xbar_cycles + TM_CT_CYCLES) *
                 tm_cycle_ps(p) + (int64_t)p->link_ns * 1000);
}

/* An atomic's response: processed like a GET of 8 bytes, then back. */
int64_t chpp_timing_atomic_due(ChppHcaState *s)
{
    const ChppTimingParams *p = tm_params(s);

    return tm_ns(chpp_timing_now() * 1000 +
                 (int64_t)(p->put_cycles + p->mem_cycles +
                           tm_read_ret(p, 8) + p->xbar_cycles +
                           TM_CT_CYCLES) * tm_cycle_ps(p) +
                 (int64_t)p->link_ns * 1000);
}

/*
 * The next doorbell FIFO entry may be taken when the descriptor fetch has
 * a free slot, and (engine-delay-ns, a test knob) one period after the
 * last one was taken.
 */
int64_t chpp_timing_intake(ChppHcaState *pf, bool fifo_busy)
{
    ChppTimingModel *tm = &pf->timing;
    int64_t t = tm_ns(tm->slot_free[tm->slot_next]);

    if (!fifo_busy) {
        return INT64_MAX;
    }
    if (pf->params.engine_delay_ns && tm->last_taken) {
        t = MAX(t, tm->last_taken + (int64_t)pf->params.engine_delay_ns);
    }
    return t;
}

void chpp_timing_intake_taken(ChppHcaState *pf)
{
    pf->timing.last_taken = chpp_timing_now();
}

void chpp_timing_reset(ChppHcaState *pf)
{
    bool bypass = pf->timing.bypass;

    memset(&pf->timing, 0, sizeof(pf->timing));
    pf->timing.bypass = bypass;
}

void chpp_timing_set_bypass(ChppHcaState *pf, bool bypass)
{
    pf->timing.bypass = bypass;
}

/* Loopback frames on their way: sorted by due time, then by arrival. */
typedef struct ChppTimedFrame {
    int64_t due;
    uint8_t vc;
    GByteArray *frame;
} ChppTimedFrame;

void chpp_timing_rx_push(ChppHcaState *to, uint8_t vc, GByteArray *frame,
                         int64_t due)
{
    ChppTimedFrame *f = g_new(ChppTimedFrame, 1);
    GList *l;

    f->due = due;
    f->vc = vc;
    f->frame = frame;
    /* Almost always the latest: look from the tail. */
    for (l = to->timed_rx->tail; l; l = l->prev) {
        if (((ChppTimedFrame *)l->data)->due <= due) {
            break;
        }
    }
    if (l) {
        g_queue_insert_after(to->timed_rx, l, f);
    } else {
        g_queue_push_head(to->timed_rx, f);
    }
}

GByteArray *chpp_timing_rx_pop(ChppHcaState *s, int64_t now, uint8_t *vc)
{
    ChppTimedFrame *f = g_queue_peek_head(s->timed_rx);
    GByteArray *frame;

    if (!f || f->due > now) {
        return NULL;
    }
    g_queue_pop_head(s->timed_rx);
    frame = f->frame;
    *vc = f->vc;
    g_free(f);
    return frame;
}

int64_t chpp_timing_rx_next(ChppHcaState *s)
{
    ChppTimedFrame *f = g_queue_peek_head(s->timed_rx);

    return f ? f->due : INT64_MAX;
}
