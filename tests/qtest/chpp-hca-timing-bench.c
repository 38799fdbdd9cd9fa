/*
 * chpp-hca timing model benchmark: a qtest-style program (not a test) that
 * boots q35 with the device in timing mode and measures, in virtual time
 * only (the qtest clock: no wall time anywhere), what the model makes of
 * seed 004's experiments (docs/timing-model.md):
 *
 *  - Table 3: the latency of NAP immediate, NAP indirect, PUT and GET of
 *    one message, doorbell write to the last byte in the target's memory,
 *    for any list of payloads, beside the paper's values and the error;
 *  - figure 15: PUT bandwidth against the MTU (read request = MTU), 2 MiB
 *    messages, with the tags formula (2) says are needed;
 *  - figure 16: bandwidth against payload for PUT, GET and both NAPs;
 *  - figure 19: the bandwidth share of the PF and 7 VFs streaming PUTs of
 *    random sizes, over time, under the doorbell arbitration (equal
 *    weights, then weights 1..8).
 *
 * Every figure comes from the device: WQEs are posted and doorbells rung
 * through qtest, and the virtual clock is stepped to the device's next
 * timer (clock_step without an argument) until the data is there.  The
 * results are deterministic: the same on every run and machine.
 *
 *   QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 \
 *       build/qemu/tests/qtest/chpp-hca-timing-bench [--sizes 1,256,...]
 *       [--quick] [--out DIR] [--no-table3] [--no-mtu] [--no-payload]
 *       [--no-share] [--props P]
 *
 * scripts/bench.sh --timing builds and runs it, then draws the PNGs from
 * the CSV files written to DIR (scripts/lib/timing-plot.py).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/bswap.h"
#include <math.h>
#include "chpp-hca-qtest.h"

#define LOG_Q       6           /* 64 WQEs per SQ and RQ */
#define STRIDE      11          /* 2 KiB WQEs: NAP immediates up to 2000 B */
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)
#define WINDOW      32          /* doorbells outstanding: the FIFO depth */
#define MAX_STEPS   200000
#define CLK_MHZ     250         /* for cycles in the tables */

enum { OP_NAP_IMM, OP_NAP_IND, OP_PUT, OP_GET, OP_NUM,
       OP_PUT_INLINE = OP_NUM };   /* not in the paper: what perftest posts */
static const char *const op_name[OP_NUM] = {
    "NAP imm", "NAP ind", "PUT", "GET"
};
static const char *const op_key[OP_NUM] = {
    "nap_imm", "nap_ind", "put", "get"
};

/* Seed 004, Table 3 (us); 0: no value in the paper. */
static const struct {
    uint32_t size;
    double us[OP_NUM];
} paper_t3[] = {
    { 1, { 1.242, 1.846, 1.762, 1.838 } },
    { 256, { 1.458, 2.018, 1.838, 1.914 } },
    { 2048, { 3.922, 3.978, 2.398, 2.474 } },
    { 4096, { 0, 0, 3.054, 3.13 } },
    { 51036, { 0, 0, 22.254, 22.33 } },
    { 1048576, { 0, 0, 329.454, 329.53 } },
};

/* One function's traffic: an RC QP connected to itself, two buffers. */
typedef struct Flow {
    ChppNode n;
    uint64_t src, dst;
    uint32_t skey, dkey;
    uint32_t buf;               /* bytes of each buffer */
    uint32_t ci_told[2];
    uint32_t rq_out;            /* receives posted, not consumed */
} Flow;

typedef struct Opts {
    GArray *sizes;
    GArray *lat_sizes;          /* --lat-sizes: PUT, inline and not */
    const char *out;
    const char *props;
    bool quick, table3, mtu, payload, share;
} Opts;

static Opts opt;
static FILE *csv_t3, *csv_mtu, *csv_pl, *csv_share;
static GString *bench_lines;     /* "BENCH ..." lines, printed at the end */

static FILE *csv_open(const char *name, const char *header)
{
    g_autofree char *path = NULL;
    FILE *f;

    if (!opt.out) {
        return NULL;
    }
    path = g_build_filename(opt.out, name, NULL);
    f = fopen(path, "w");
    if (!f) {
        g_error("cannot write %s", path);
    }
    fprintf(f, "%s\n", header);
    return f;
}

static ChppDev *boot(const char *props)
{
    g_autofree char *all = g_strdup_printf("timing=on,num-qps=4%s%s%s%s",
                                           props ? "," : "",
                                           props ? props : "",
                                           opt.props ? "," : "",
                                           opt.props ? opt.props : "");

    return chpp_start(all, "-m 256M");
}

static void flow_setup(Flow *f, ChppDev *d, uint8_t func, uint32_t buf)
{
    chpp_node_setup(&f->n, d, 0, func);
    chpp_node_qp(&f->n, 0, 0x40 + func, LOG_Q, STRIDE);
    chpp_node_connect(&f->n, &f->n, 14, 3);
    f->buf = buf;
    f->src = guest_alloc(&d->qs->alloc, buf);
    f->dst = guest_alloc(&d->qs->alloc, buf);
    qtest_memset(d->qts, f->src, 0x5a, buf);
    qtest_memset(d->qts, f->dst, 0, buf);
    f->skey = chpp_create_mr(d, 0, CHPP_NODE_PD, f->src, buf, MR_ALL);
    f->dkey = chpp_create_mr(d, 1, CHPP_NODE_PD, f->dst, buf, MR_ALL);
    f->ci_told[0] = f->ci_told[1] = 0;
    f->rq_out = 0;
}

static int64_t vnow(Flow *f)
{
    return qtest_clock_step(f->n.d->qts, 0);
}

static void post_op(Flow *f, int op, uint32_t size, uint64_t wr_id,
                    uint8_t mark)
{
    ChppWqeBuf *w;

    switch (op) {
    case OP_NAP_IMM: {
        g_autofree uint8_t *data = g_malloc(size);

        memset(data, 0x5a, size);
        data[size - 1] = mark;
        w = chpp_wqe_new(CHPP_WQE_NAP, CHPP_WQE_SIGNALED | CHPP_WQE_INLINE,
                         wr_id, 0);
        chpp_wqe_inline(w, data, size);
        break;
    }
    case OP_NAP_IND:
        w = chpp_wqe_new(CHPP_WQE_NAP, CHPP_WQE_SIGNALED, wr_id, 0);
        chpp_wqe_sge(w, f->src, size, f->skey);
        break;
    case OP_PUT:
        w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, wr_id, 0);
        chpp_wqe_raddr(w, f->dst, f->dkey);
        chpp_wqe_sge(w, f->src, size, f->skey);
        break;
    case OP_PUT_INLINE: {
        g_autofree uint8_t *data = g_malloc(size);

        memset(data, 0x5a, size);
        data[size - 1] = mark;
        w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED | CHPP_WQE_INLINE,
                         wr_id, 0);
        chpp_wqe_raddr(w, f->dst, f->dkey);
        chpp_wqe_inline(w, data, size);
        break;
    }
    default:
        /* A GET reads src (the remote side) into dst. */
        w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, wr_id, 0);
        chpp_wqe_raddr(w, f->src, f->skey);
        chpp_wqe_sge(w, f->dst, size, f->dkey);
        break;
    }
    chpp_post_send(f->n.d, &f->n.qp, w, true);
}

static bool is_nap(int op)
{
    return op == OP_NAP_IMM || op == OP_NAP_IND;
}

/* Receives up to @want posted (the RQ holds 1 << LOG_Q). */
static void post_recvs(Flow *f, uint32_t want)
{
    ChppTSge sge = { f->dst, CHPP_NAP_MAX_PAYLOAD, f->dkey };

    if (f->rq_out < want) {
        chpp_post_recvs(f->n.d, &f->n.qp, f->n.qp.rq_pi, &sge, 1,
                        want - f->rq_out);
        f->rq_out = want;
    }
}

/* Take the next CQE of CQ @cq if there is one (status checked). */
static bool cq_take(Flow *f, unsigned cq, struct chpp_cqe *cqe)
{
    ChppTCq *c = &f->n.cq[cq];

    if (!chpp_cqe_valid(f->n.d, c, cqe)) {
        return false;
    }
    if (cqe->status != CHPP_WC_SUCCESS) {
        g_error("function %u CQ %u: wr_id 0x%" PRIx64 " status %u vendor "
                "error %u", f->n.func, cq, le64_to_cpu(cqe->wr_id),
                cqe->status, cqe->vendor_err);
    }
    c->ci++;
    if (c->ci - f->ci_told[cq] >= c->nent / 4) {
        chpp_cq_db(f->n.d, c->uar, c->cqn, CHPP_CQ_DB_SET_CI, c->ci);
        f->ci_told[cq] = c->ci;
    }
    return true;
}

static void settle(Flow *f)
{
    /* Past anything the model still holds; nothing is in flight. */
    qtest_clock_step(f->n.d->qts, 1000 * 1000);
}

/*
 * Table 3: one @op of @size bytes alone; virtual ns from the doorbell to
 * the last byte in the target's memory (a NAP: its receive CQE, written
 * with the data).
 */
static int64_t last_cqe_ns;    /* latency(): doorbell to the send CQE */

static int64_t latency(Flow *f, int op, uint32_t size, uint8_t mark)
{
    QTestState *qts = f->n.d->qts;
    uint64_t probe = f->dst + size - 1;
    struct chpp_cqe cqe;
    int64_t t0, t = 0;
    uint32_t steps;
    bool seen = false;

    if (is_nap(op)) {
        post_recvs(f, 1);
    } else {
        qtest_writeb(qts, probe, 0);
        qtest_writeb(qts, f->src + size - 1, mark);
    }
    if (op == OP_NAP_IND) {
        qtest_writeb(qts, f->src + size - 1, mark);
    }
    t0 = vnow(f);
    post_op(f, op, size, mark, mark);
    for (steps = 0; !seen; steps++) {
        g_assert_cmpuint(steps, <, MAX_STEPS);
        t = qtest_clock_step_next(qts);
        if (is_nap(op)) {
            seen = cq_take(f, 1, &cqe);
            f->rq_out -= seen;
        } else {
            seen = qtest_readb(qts, probe) == mark;
        }
    }
    if (is_nap(op)) {
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, size);
        g_assert_cmpuint(qtest_readb(qts, f->dst + size - 1), ==, mark);
    }
    /* The send completion follows (RC: the ACK). */
    last_cqe_ns = t - t0;
    for (steps = 0; !cq_take(f, 0, &cqe); steps++) {
        g_assert_cmpuint(steps, <, MAX_STEPS);
        last_cqe_ns = qtest_clock_step_next(qts) - t0;
    }
    settle(f);
    return t - t0;
}

/*
 * A stream of @nmsg @op of @size bytes, one doorbell each, at most WINDOW
 * outstanding.  Returns bytes per virtual second between the first and
 * the last send completion (the steady state: start-up and the last ACK
 * fall out).
 */
static double stream(Flow *f, int op, uint32_t size, uint32_t nmsg)
{
    QTestState *qts = f->n.d->qts;
    uint32_t posted = 0, done = 0, recvd = 0, steps = 0;
    int64_t t_first = 0, t_last = 0, t;
    struct chpp_cqe cqe;

    if (is_nap(op)) {
        post_recvs(f, 1u << LOG_Q);
    }
    t = vnow(f);
    while (done < nmsg) {
        while (posted < nmsg && posted - done < WINDOW) {
            post_op(f, op, size, posted, 0x80 | (posted & 0x7f));
            posted++;
        }
        g_assert_cmpuint(++steps, <, MAX_STEPS);
        t = qtest_clock_step_next(qts);
        while (cq_take(f, 0, &cqe)) {
            if (++done == 1) {
                t_first = t;
            }
            t_last = t;
        }
        while (is_nap(op) && cq_take(f, 1, &cqe)) {
            recvd++;
            f->rq_out--;
        }
        if (is_nap(op) && f->rq_out < (1u << LOG_Q) / 2) {
            post_recvs(f, 1u << LOG_Q);
        }
    }
    while (is_nap(op) && recvd < nmsg) {
        g_assert_cmpuint(++steps, <, MAX_STEPS);
        qtest_clock_step_next(qts);
        while (cq_take(f, 1, &cqe)) {
            recvd++;
            f->rq_out--;
        }
    }
    settle(f);
    return t_last > t_first ? (double)(nmsg - 1) * size * 1e9 /
                              (t_last - t_first) : 0;
}

/* ---- Table 3 ------------------------------------------------------------ */

/*
 * The paper's value for @size.  Its 51036-byte row lies on its own 3.2 GB/s
 * slope at 65536 bytes (the 4096 row + 61440 B / 3.2 GB/s, to the ns), so
 * 65536 is compared with that row too (marked; the 51036 row stays).
 */
static double paper_value(int op, uint32_t size, bool *moved)
{
    *moved = size == 65536;
    if (*moved) {
        size = 51036;
    }
    for (unsigned i = 0; i < ARRAY_SIZE(paper_t3); i++) {
        if (paper_t3[i].size == size) {
            return paper_t3[i].us[op];
        }
    }
    return 0;
}

static bool op_fits(int op, uint32_t size)
{
    if (op == OP_NAP_IMM) {
        return size <= CHPP_MAX_INLINE;
    }
    return op != OP_NAP_IND || size <= CHPP_NAP_MAX_PAYLOAD;
}

static void run_table3(void)
{
    ChppDev *d = boot(NULL);
    Flow f;
    uint32_t maxsz = 0;
    double worst = 0;
    int64_t cqe_min = INT64_MAX, cqe_max = 0;
    bool starred = false;

    for (unsigned i = 0; i < opt.sizes->len; i++) {
        maxsz = MAX(maxsz, g_array_index(opt.sizes, uint32_t, i));
    }
    flow_setup(&f, d, 0, MAX(ROUND_UP(maxsz, 4096), 4096));
    printf("\nTable 3: latency of one operation, doorbell to the last byte "
           "in the target's memory (us)\n");
    printf("(model: this device in timing mode, virtual time; paper: seed "
           "004 Table 3)\n\n");
    printf("%9s", "payload");
    for (int op = 0; op < OP_NUM; op++) {
        printf(" | %9s %7s %7s", op_name[op], "paper", "error");
    }
    printf("\n");
    for (unsigned i = 0; i < opt.sizes->len; i++) {
        uint32_t size = g_array_index(opt.sizes, uint32_t, i);

        printf("%9u", size);
        for (int op = 0; op < OP_NUM; op++) {
            uint32_t eff = size;
            bool moved;
            double paper = paper_value(op, size, &moved), us, err = 0;

            if (op == OP_NAP_IMM && size > CHPP_MAX_INLINE &&
                size <= CHPP_NAP_MAX_PAYLOAD) {
                eff = CHPP_MAX_INLINE;  /* the largest NAP immediate */
                starred = true;
            }
            if (!op_fits(op, eff)) {
                printf(" | %9s %7s %7s", "-", "", "");
                continue;
            }
            us = latency(&f, op, eff, 0x80 | ((i * OP_NUM + op) & 0x7f)) /
                 1000.0;
            cqe_min = MIN(cqe_min, last_cqe_ns - (int64_t)(us * 1000 + 0.5));
            cqe_max = MAX(cqe_max, last_cqe_ns - (int64_t)(us * 1000 + 0.5));
            if (paper) {
                err = (us - paper) / paper * 100;
                if (eff == size && size != 51036) {
                    worst = MAX(worst, fabs(err));
                }
                printf(" | %8.3f%s %7.3f%s%+6.2f%%", us,
                       eff != size ? "*" : " ", paper, moved ? "+" : " ",
                       err);
            } else {
                printf(" | %8.3f%s %7s %7s", us, eff != size ? "*" : " ", "",
                       "");
            }
            if (csv_t3) {
                fprintf(csv_t3, "%s,%u,%u,%.3f,", op_key[op], size, eff, us);
                if (paper) {
                    fprintf(csv_t3, "%.3f", paper);
                }
                fprintf(csv_t3, "\n");
            }
            g_string_append_printf(bench_lines, "BENCH kind=table3 op=%s "
                                   "size=%u measured_size=%u model_us=%.3f "
                                   "cqe_us=%.3f", op_key[op], size, eff, us,
                                   last_cqe_ns / 1000.0);
            if (paper) {
                g_string_append_printf(bench_lines, " paper_us=%.3f "
                                       "err_pct=%.2f", paper, err);
            }
            g_string_append_c(bench_lines, '\n');
        }
        printf("\n");
    }
    if (starred) {
        printf("  * measured at %u bytes: a NAP immediate carries at most "
               "%u (2 KiB WQEs)\n", CHPP_MAX_INLINE, CHPP_MAX_INLINE);
    }
    for (unsigned i = 0; i < opt.sizes->len; i++) {
        uint32_t size = g_array_index(opt.sizes, uint32_t, i);

        if (size == 51036 || size == 65536) {
            printf("  + 51036 B: the paper's values for that row are its "
                   "4096-B row plus 61440 B at\n    3.2 GB/s, to the ns: "
                   "they are 65536 B (a typo in the paper); the 65536 row "
                   "is\n    compared with them, the 51036 row is shown as "
                   "printed\n");
            break;
        }
    }
    printf("  largest error against the paper, same payload (without the "
           "51036 row): %.2f%%\n", worst);
    printf("  the send CQE (doorbell to completion): %.3f to %.3f us after "
           "the data (a GET: with its data; the others: the ACK)\n",
           cqe_min / 1000.0, cqe_max / 1000.0);
    chpp_stop(d);
}

/*
 * PUT latencies with and without inline data: what a verbs program such as
 * perftest's ib_write_lat posts (inline up to its inline size), for
 * scripts/lib/bench-icount.sh to compare with what the guest measures.
 */
static void run_put_lat(void)
{
    ChppDev *d = boot(NULL);
    Flow f;

    flow_setup(&f, d, 0, 1u << 20);
    printf("\nPUT latency, doorbell to the last byte in memory (us)\n\n"
           "%9s %10s %10s\n", "payload", "inline", "gather");
    for (unsigned i = 0; i < opt.lat_sizes->len; i++) {
        uint32_t size = g_array_index(opt.lat_sizes, uint32_t, i);
        int64_t inl = -1, sge;

        if (size <= CHPP_MAX_INLINE) {
            inl = latency(&f, OP_PUT_INLINE, size, 0x80 | (i & 0x3f));
            g_string_append_printf(bench_lines, "BENCH kind=lat "
                                   "op=put_inline size=%u model_ns=%" PRId64
                                   "\n", size, inl);
        }
        sge = latency(&f, OP_PUT, size, 0xc0 | (i & 0x3f));
        g_string_append_printf(bench_lines, "BENCH kind=lat op=put size=%u "
                               "model_ns=%" PRId64 "\n", size, sge);
        char inl_us[16] = "-";

        if (inl >= 0) {
            snprintf(inl_us, sizeof(inl_us), "%.3f", inl / 1000.0);
        }
        printf("%9u %10s %10.3f\n", size, inl_us, sge / 1000.0);
    }
    chpp_stop(d);
}

/* ---- figure 15: bandwidth against MTU ---------------------------------- */

/*
 * Formula (2) of seed 004 with the model's default parameters (130-cycle
 * memory latency, 16-byte bus, host TLPs of at most 128 bytes): the tags
 * needed to keep reads of @rr bytes streaming.
 */
static uint32_t formula2_tags(uint32_t rr)
{
    uint32_t tlp = MIN(rr, 128u);
    uint32_t per = rr / 16 + 2 * DIV_ROUND_UP(rr, tlp);
    uint32_t t = 130 + per;

    return DIV_ROUND_UP(t, per);
}

static void run_mtu(void)
{
    static const uint32_t mtus[] = { 16, 32, 64, 128, 256, 512, 1024, 2048,
                                     4096 };
    uint32_t msg = 2u << 20, nmsg = opt.quick ? 2 : 4;

    printf("\nFigure 15: PUT bandwidth against the MTU (read request = MTU), "
           "%u messages of 2 MiB\n\n", nmsg);
    printf("%6s %10s %14s %s\n", "MTU", "GB/s", "tags needed", "(formula "
           "(2); 32 available)");
    for (unsigned i = 0; i < ARRAY_SIZE(mtus); i++) {
        g_autofree char *props = g_strdup_printf("timing-mtu=%u,"
                                                 "timing-read-req=%u",
                                                 mtus[i], mtus[i]);
        ChppDev *d = boot(props);
        Flow f;
        double gbps;

        flow_setup(&f, d, 0, msg);
        gbps = stream(&f, OP_PUT, msg, nmsg) / 1e9;
        printf("%6u %10.3f %14u\n", mtus[i], gbps, formula2_tags(mtus[i]));
        if (csv_mtu) {
            fprintf(csv_mtu, "%u,%.4f,%u\n", mtus[i], gbps,
                    formula2_tags(mtus[i]));
        }
        g_string_append_printf(bench_lines, "BENCH kind=mtu op=put mtu=%u "
                               "gbps=%.4f tags_needed=%u\n", mtus[i], gbps,
                               formula2_tags(mtus[i]));
        chpp_stop(d);
    }
    printf("  paper: linear up to 128 B, then about 3.2 GB/s (a 16-byte "
           "header and one processing cycle\n  per 8 data cycles: 80%% of "
           "4 GB/s)\n");
}

/* ---- figure 16: bandwidth against payload ------------------------------ */

static uint32_t stream_msgs(uint32_t size)
{
    uint64_t want = (opt.quick ? 4ull << 20 : 32ull << 20) / size;

    return MAX(MIN(want, opt.quick ? 200 : 1000), 8);
}

static void run_payload(void)
{
    static const uint32_t sizes[] = { 1, 16, 64, 256, 1024, 2000, 2048, 4096,
                                      16384, 65536, 262144, 524288,
                                      1048576 };
    ChppDev *d = boot(NULL);
    Flow f;

    flow_setup(&f, d, 0, 1u << 20);
    printf("\nFigure 16: bandwidth against payload (GB/s; MTU 128 B, 32 "
           "tags; a stream of one-doorbell WQEs)\n\n");
    printf("%9s", "payload");
    for (int op = 0; op < OP_NUM; op++) {
        printf(" %9s", op_name[op]);
    }
    printf("\n");
    for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
        printf("%9u", sizes[i]);
        for (int op = 0; op < OP_NUM; op++) {
            double gbps;

            if (!op_fits(op, sizes[i]) ||
                (sizes[i] == 2000 && op != OP_NAP_IMM) ||
                (sizes[i] == 2048 && op == OP_NAP_IMM)) {
                printf(" %9s", "-");
                continue;
            }
            gbps = stream(&f, op, sizes[i], stream_msgs(sizes[i])) / 1e9;
            printf(" %9.4f", gbps);
            if (csv_pl) {
                fprintf(csv_pl, "%s,%u,%.5f\n", op_key[op], sizes[i], gbps);
            }
            g_string_append_printf(bench_lines, "BENCH kind=payload op=%s "
                                   "size=%u gbps=%.5f\n", op_key[op],
                                   sizes[i], gbps);
        }
        printf("\n");
        fflush(stdout);
    }
    printf("  paper: PUT 3.19 GB/s at 512 KiB, GET slightly lower, NAP "
           "immediate ahead of NAP indirect\n  for small payloads\n");
    chpp_stop(d);
}

/* ---- figure 19: shares of the functions -------------------------------- */

#define NFN         (1 + CHPP_MAX_VFS)
#define SHARE_OUT   8           /* WQEs each function keeps posted */
#define SHARE_GRAIN 64          /* sizes: 64 B .. 64 KiB, uniform */
#define SHARE_MAX   65536

static void set_weight(ChppPf *p, unsigned fn, uint8_t weight)
{
    struct chpp_vf_res r;

    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_QUERY_VF_RES, 0, fn,
                             p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->d->mbox_out, &r, sizeof(r));
    r.weight = weight;
    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in, fn,
                             0), ==, CHPP_STAT_OK);
}

static void run_share_once(ChppPf *p, Flow *fl, bool weighted,
                           int64_t span_ns, int64_t sample_ns)
{
    QTestState *qts = p->d->qts;
    uint64_t bytes[NFN] = {}, total = 0;
    uint32_t posted[NFN] = {}, done[NFN] = {};
    uint32_t lens[NFN][1u << LOG_Q];
    uint32_t rng = 0x2545f491u, steps = 0;
    int64_t t0 = qtest_clock_step(qts, 0), t = t0, next = t0 + sample_ns;
    const char *run = weighted ? "weights 1..8" : "equal weights";
    double final[NFN];

    for (unsigned fn = 0; fn < NFN; fn++) {
        set_weight(p, fn, weighted ? fn + 1 : 1);
    }
    printf("\nFigure 19: bandwidth share of each function over time, %s "
           "(PF = function 0; PUTs of random "
           "sizes,\nuniform in 64 B .. 64 KiB, %u WQEs posted per function; cumulative %% of the bytes moved)\n\n",
           run, SHARE_OUT);
    printf("%9s %9s", "us", "cycles");
    for (unsigned fn = 0; fn < NFN; fn++) {
        printf(" %5s%u", fn ? "VF" : "PF", fn ? fn : 0);
    }
    printf(" %8s\n", "GB/s");
    while (t - t0 < span_ns) {
        for (unsigned fn = 0; fn < NFN; fn++) {
            while (posted[fn] - done[fn] < SHARE_OUT) {
                uint32_t sz;

                rng = rng * 1103515245u + 12345u;
                sz = SHARE_GRAIN * (1 + (rng >> 8) %
                                    (SHARE_MAX / SHARE_GRAIN));
                lens[fn][posted[fn] % (1u << LOG_Q)] = sz;
                post_op(&fl[fn], OP_PUT, sz, posted[fn], 0x80);
                posted[fn]++;
            }
        }
        g_assert_cmpuint(++steps, <, MAX_STEPS);
        t = qtest_clock_step_next(qts);
        for (unsigned fn = 0; fn < NFN; fn++) {
            struct chpp_cqe cqe;

            while (cq_take(&fl[fn], 0, &cqe)) {
                uint32_t sz = lens[fn][done[fn] % (1u << LOG_Q)];

                g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, sz);
                bytes[fn] += sz;
                total += sz;
                done[fn]++;
            }
        }
        while (t >= next && total) {
            printf("%9.1f %9" PRId64, (next - t0) / 1000.0,
                   (next - t0) * CLK_MHZ / 1000);
            if (csv_share) {
                fprintf(csv_share, "%s,%" PRId64, weighted ? "weighted" :
                        "equal", (next - t0) * CLK_MHZ / 1000);
            }
            for (unsigned fn = 0; fn < NFN; fn++) {
                printf(" %6.2f", 100.0 * bytes[fn] / total);
                if (csv_share) {
                    fprintf(csv_share, ",%.4f", 100.0 * bytes[fn] / total);
                }
            }
            printf(" %8.3f\n", total / (double)(next - t0));
            if (csv_share) {
                fprintf(csv_share, "\n");
            }
            next += sample_ns;
        }
    }
    printf("  final shares:");
    for (unsigned fn = 0; fn < NFN; fn++) {
        final[fn] = 100.0 * bytes[fn] / total;
        printf(" %.2f", final[fn]);
    }
    printf(" %% (%s: ", run);
    if (weighted) {
        printf("weight/36 = ");
        for (unsigned fn = 0; fn < NFN; fn++) {
            printf("%s%.1f", fn ? " " : "", 100.0 * (fn + 1) / 36);
        }
        printf(" %% by WQEs; bytes follow with noise)\n");
    } else {
        printf("12.5 %% each)\n");
    }
    g_string_append_printf(bench_lines, "BENCH kind=share run=%s span_us=%.0f"
                           " gbps=%.4f", weighted ? "weighted" : "equal",
                           (t - t0) / 1000.0, total / (double)(t - t0));
    for (unsigned fn = 0; fn < NFN; fn++) {
        g_string_append_printf(bench_lines, " f%u_pct=%.3f f%u_wqes=%u", fn,
                               final[fn], fn, done[fn]);
    }
    g_string_append_c(bench_lines, '\n');
    /* Let everything posted finish before the next run. */
    for (steps = 0;; steps++) {
        bool busy = false;

        for (unsigned fn = 0; fn < NFN; fn++) {
            struct chpp_cqe cqe;

            while (cq_take(&fl[fn], 0, &cqe)) {
                done[fn]++;
            }
            busy |= done[fn] != posted[fn];
        }
        if (!busy) {
            break;
        }
        g_assert_cmpuint(steps, <, MAX_STEPS);
        qtest_clock_step_next(qts);
    }
}

static void run_share(void)
{
    g_autofree char *props = g_strdup_printf("timing=on,num-qps=4%s%s",
                                             opt.props ? "," : "",
                                             opt.props ? opt.props : "");
    ChppPf *p = chpp_pf_start(props, "-m 256M");
    Flow fl[NFN];
    int64_t span = (opt.quick ? 2000 : 8000) * 1000ll;

    chpp_pf_vfs_set(p, CHPP_MAX_VFS);
    for (unsigned fn = 0; fn < NFN; fn++) {
        flow_setup(&fl[fn], fn ? p->vf[fn] : p->d, fn, SHARE_MAX);
    }
    run_share_once(p, fl, false, span, span / 16);
    run_share_once(p, fl, true, span, span / 16);
    chpp_pf_stop(p);
}

/* ---- main --------------------------------------------------------------- */

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--quick] [--sizes N,N,...] [--out DIR] "
            "[--props P] [--lat-sizes N,N,...] [--no-table3] [--no-mtu] "
            "[--no-payload] [--no-share]\n", argv0);
    exit(2);
}

static void parse_sizes(GArray *a, const char *list)
{
    g_auto(GStrv) v = g_strsplit(list, ",", -1);

    g_array_set_size(a, 0);
    for (unsigned i = 0; v[i]; i++) {
        uint32_t n;

        if (qemu_strtoui(v[i], NULL, 0, &n) || !n || n > (1u << 24)) {
            fprintf(stderr, "bad size '%s' (1..16 MiB)\n", v[i]);
            exit(2);
        }
        g_array_append_val(a, n);
    }
}

int main(int argc, char **argv)
{
    static const uint32_t def_sizes[] = { 1, 256, 2048, 4096, 51036, 65536,
                                          1048576 };

    opt.sizes = g_array_new(false, false, sizeof(uint32_t));
    opt.lat_sizes = g_array_new(false, false, sizeof(uint32_t));
    g_array_append_vals(opt.sizes, def_sizes, ARRAY_SIZE(def_sizes));
    opt.table3 = opt.mtu = opt.payload = opt.share = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            opt.quick = true;
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            parse_sizes(opt.sizes, argv[++i]);
        } else if (!strcmp(argv[i], "--lat-sizes") && i + 1 < argc) {
            parse_sizes(opt.lat_sizes, argv[++i]);
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            opt.out = argv[++i];
        } else if (!strcmp(argv[i], "--props") && i + 1 < argc) {
            opt.props = argv[++i];
        } else if (!strcmp(argv[i], "--no-table3")) {
            opt.table3 = false;
        } else if (!strcmp(argv[i], "--no-mtu")) {
            opt.mtu = false;
        } else if (!strcmp(argv[i], "--no-payload")) {
            opt.payload = false;
        } else if (!strcmp(argv[i], "--no-share")) {
            opt.share = false;
        } else {
            usage(argv[0]);
        }
    }
    if (!getenv("QTEST_QEMU_BINARY")) {
        fprintf(stderr, "QTEST_QEMU_BINARY is not set "
                "(use scripts/bench.sh --timing)\n");
        return 2;
    }
    if (opt.out) {
        g_mkdir_with_parents(opt.out, 0755);
    }
    bench_lines = g_string_new(NULL);
    printf("chpp-hca timing model (docs/timing-model.md): seed 004's "
           "experiments on the device in timing mode%s%s\n",
           opt.props ? ", properties " : "", opt.props ? opt.props : "");
    if (opt.table3) {
        csv_t3 = csv_open("table3.csv", "op,size,measured_size,model_us,"
                          "paper_us");
        run_table3();
    }
    if (opt.lat_sizes->len) {
        run_put_lat();
    }
    if (opt.mtu) {
        csv_mtu = csv_open("mtu.csv", "mtu,gbps,tags_needed");
        run_mtu();
    }
    if (opt.payload) {
        csv_pl = csv_open("payload.csv", "op,size,gbps");
        run_payload();
    }
    if (opt.share) {
        g_autofree char *hdr = g_strdup("run,cycles");

        for (unsigned fn = 0; fn < NFN; fn++) {
            g_autofree char *old = hdr;

            hdr = g_strdup_printf("%s,f%u", old, fn);
        }
        csv_share = csv_open("share.csv", hdr);
        run_share();
    }
    for (unsigned i = 0; i < 4; i++) {
        FILE *f = i == 0 ? csv_t3 : i == 1 ? csv_mtu : i == 2 ? csv_pl
                                                            : csv_share;

        if (f) {
            fclose(f);
        }
    }
    printf("\n%s", bench_lines->str);
    g_string_free(bench_lines, true);
    g_array_free(opt.sizes, true);
    g_array_free(opt.lat_sizes, true);
    return 0;
}
