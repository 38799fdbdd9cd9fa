/*
 * chpp-hca timing mode (docs/timing-model.md): work takes the virtual
 * time the FPGA prototype takes, and only its timing changes.  Every
 * check here is in virtual time (qtest's clock), so it is exact and the
 * same on any machine: a step lands when the model says, not a
 * nanosecond earlier; the doorbell FIFO drains at the model's pace; a
 * UC WQE completes when its last packet is sent; a migration in the
 * middle keeps it all; the calibrated defaults give Table 3's latencies.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqos/libqos.h"
#include "chpp-hca-qtest.h"

#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)
#define SCQ         0
#define RCQ         1
#define BUF         (1u << 20)
#define MAX_STEPS   100000

typedef struct Fx {
    ChppNode n;
    uint64_t src, dst;
    uint32_t skey, dkey;
} Fx;

/* A QP of @type connected to itself (loopback), 64 WQEs of 1 KiB. */
static void fx_qp(Fx *f, uint8_t type)
{
    ChppTQp *q = &f->n.qp;
    struct chpp_qp_context c = {
        .type = type, .port = 1,
        .pd = cpu_to_le32(CHPP_NODE_PD),
        .send_cqn = cpu_to_le32(SCQ), .recv_cqn = cpu_to_le32(RCQ),
        .log_sq_size = 6, .log_sq_stride = 10,
        .log_rq_size = 6, .log_rq_stride = 10,
        .uar = cpu_to_le16(CHPP_NODE_UAR),
        .access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE |
                                    CHPP_ACCESS_REMOTE_READ),
        .magic = 0x5e,
    };

    if (type == CHPP_QPT_RC) {
        chpp_node_qp(&f->n, 0, 0x5e, 6, 10);
        chpp_node_connect(&f->n, &f->n, 14, 3);
        return;
    }
    *q = (ChppTQp) {
        .qpn = 0, .type = type, .log_sq = 6, .log_rq = 6, .stride = 10,
        .magic = 0x5e, .uar = CHPP_NODE_UAR,
    };
    chpp_qp_alloc_rings(f->n.d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(f->n.d, CHPP_CMD_RST2INIT_QP, 0,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
    c = (struct chpp_qp_context) {
        .path_mtu = 5, .dest_qpn = 0, .dest_magic = 0x5e,
        .rq_psn = cpu_to_le32(0x700), .sq_psn = cpu_to_le32(0x700),
    };
    g_assert_cmphex(chpp_modify_qp(f->n.d, CHPP_CMD_INIT2RTR_QP, 0,
                                   CHPP_QP_ATTR_AV | CHPP_QP_ATTR_PATH_MTU |
                                   CHPP_QP_ATTR_DEST_QPN |
                                   CHPP_QP_ATTR_RQ_PSN, &c), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(f->n.d, CHPP_CMD_RTR2RTS_QP, 0,
                                   CHPP_QP_ATTR_SQ_PSN, &c), ==,
                    CHPP_STAT_OK);
}

static void fx_setup(Fx *f, ChppDev *d, uint8_t type)
{
    chpp_node_setup(&f->n, d, 0, 0);
    fx_qp(f, type);
    f->src = guest_alloc(&d->qs->alloc, BUF);
    f->dst = guest_alloc(&d->qs->alloc, BUF);
    chpp_fill(d, f->src, BUF, 0x21);
    qtest_memset(d->qts, f->dst, 0, BUF);
    f->skey = chpp_create_mr(d, 0, CHPP_NODE_PD, f->src, BUF, MR_ALL);
    f->dkey = chpp_create_mr(d, 1, CHPP_NODE_PD, f->dst, BUF, MR_ALL);
}

static Fx *fx_new(const char *props, uint8_t type)
{
    g_autofree char *all = g_strdup_printf("timing=on%s%s",
                                           props ? "," : "",
                                           props ? props : "");
    Fx *f = g_new0(Fx, 1);

    fx_setup(f, chpp_start(all, "-m 256M"), type);
    return f;
}

static void fx_free(Fx *f)
{
    chpp_stop(f->n.d);
    g_free(f);
}

/* The virtual time, once the clock moved by CHPP_QTEST_CLOCK_PROBE_NS. */
static int64_t vnow(Fx *f)
{
    return qtest_clock_step(f->n.d->qts, CHPP_QTEST_CLOCK_PROBE_NS);
}

/* Post (and ring) one WQE of @op moving @len bytes from src to dst. */
static void post(Fx *f, uint8_t op, uint64_t wr_id, uint32_t len,
                 bool inl, bool ring)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED |
                                 (inl ? CHPP_WQE_INLINE : 0), wr_id, 0);

    if (op == CHPP_WQE_PUT) {
        chpp_wqe_raddr(w, f->dst, f->dkey);
    } else if (op == CHPP_WQE_GET) {
        chpp_wqe_raddr(w, f->src, f->skey);
    }
    if (inl) {
        g_autofree uint8_t *data = g_malloc(len);

        qtest_memread(f->n.d->qts, f->src, data, len);
        chpp_wqe_inline(w, data, len);
    } else {
        chpp_wqe_sge(w, op == CHPP_WQE_GET ? f->dst : f->src, len,
                     op == CHPP_WQE_GET ? f->dkey : f->skey);
    }
    chpp_post_send(f->n.d, &f->n.qp, w, ring);
}

/*
 * The calibrated defaults give seed 004's Table 3 for one byte, to within
 * a few per cent (docs/timing-model.md), and the step comes exactly then:
 * not a nanosecond earlier.
 */
static void test_latency(void)
{
    static const struct {
        uint8_t op;
        bool inl;
        int64_t ns;         /* the model; Table 3 in the comment */
        uint8_t cqe_op;
    } cases[] = {
        { CHPP_WQE_NAP, true, 1192, CHPP_CQE_OP_SEND },         /* 1.242 */
        { CHPP_WQE_NAP, false, 1808, CHPP_CQE_OP_SEND },        /* 1.846 */
        { CHPP_WQE_PUT, false, 1772, CHPP_CQE_OP_RDMA_WRITE },  /* 1.762 */
        { CHPP_WQE_GET, false, 1848, CHPP_CQE_OP_RDMA_READ },   /* 1.838 */
    };
    Fx *f = fx_new(NULL, CHPP_QPT_RC);
    QTestState *qts = f->n.d->qts;
    ChppTSge sge = { f->dst + 8192, 64, f->dkey };
    struct chpp_cqe cqe;

    for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
        bool nap = cases[i].op == CHPP_WQE_NAP;
        uint64_t probe = f->dst + (nap ? 8192 : 0);
        uint8_t want = qtest_readb(qts, f->src);

        qtest_writeb(qts, probe, ~want);
        if (nap) {
            chpp_post_recvs(f->n.d, &f->n.qp, i, &sge, 1, 1);
        }
        post(f, cases[i].op, i, 1, cases[i].inl, true);
        qtest_clock_step(qts, cases[i].ns - 1);
        g_assert_cmphex(qtest_readb(qts, probe), ==, (uint8_t)~want);
        g_assert_false(chpp_cqe_valid(f->n.d, &f->n.cq[RCQ], &cqe));
        qtest_clock_step(qts, 1);
        g_assert_cmphex(qtest_readb(qts, probe), ==, want);
        if (nap) {
            g_assert_true(chpp_cqe_valid(f->n.d, &f->n.cq[RCQ], &cqe));
            chpp_node_expect(&f->n, RCQ, i, CHPP_CQE_OP_RECV, 1);
        }
        chpp_node_expect(&f->n, SCQ, i, cases[i].cqe_op, 1);
        qtest_clock_step(qts, 100000);
    }
    g_assert_cmpuint(chpp_counter(f->n.d, CHPP_CNT_RETRANSMITS), ==, 0);
    fx_free(f);
}

/* Each parameter moves the latency as the equations say. */
static void test_parameters(void)
{
    static const struct {
        const char *props;
        int64_t ns;
    } cases[] = {
        { NULL, 1772 },
        /* the link is crossed twice: doorbell, then the data */
        { "timing-link-ns=1230", 1772 + 2000 },
        /* two memory reads (descriptor, data) */
        { "timing-mem-cycles=230", 1772 + 2 * 100 * 4 },
        { "timing-put-cycles=148", 1772 + 100 * 4 },
        { "timing-xbar-cycles=108", 1772 + 100 * 4 },
        /* every cycle counts double, the link not */
        { "timing-clock-mhz=125", 1772 + (1772 - 460) },
    };

    for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
        Fx *f = fx_new(cases[i].props, CHPP_QPT_RC);
        QTestState *qts = f->n.d->qts;
        int64_t t0 = vnow(f), t = t0;
        uint32_t steps = 0;

        qtest_writeb(qts, f->dst, 0);
        post(f, CHPP_WQE_PUT, 1, 1, false, true);
        while (qtest_readb(qts, f->dst) != qtest_readb(qts, f->src)) {
            g_assert_cmpuint(++steps, <, MAX_STEPS);
            t = qtest_clock_step_next(qts);
        }
        g_test_message("%s: %" PRId64 " ns", cases[i].props ?: "defaults",
                       t - t0);
        g_assert_cmpint(t - t0, ==, cases[i].ns);
        chpp_node_expect(&f->n, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 1);
        fx_free(f);
    }
}

/*
 * Doorbells rung at one instant wait in the FIFO (CHPP_UAR_DB_STATUS
 * shows them) and are taken at the pace of the descriptor fetch; all
 * complete, in order, and the data is right.
 */
static void test_fifo_pace(void)
{
    Fx *f = fx_new(NULL, CHPP_QPT_RC);
    uint32_t i, n = 16, waiting;
    uint32_t off = CHPP_UAR_DB_STATUS;
    struct chpp_cqe cqe;

    for (i = 0; i < n; i++) {
        post(f, CHPP_WQE_PUT, i, 4096, false, true);
    }
    waiting = (qpci_io_readl(f->n.d->pdev, f->n.d->bar2,
                             CHPP_NODE_UAR * CHPP_UAR_PAGE_SIZE + off) >> 8) &
              0xff;
    g_test_message("%u of %u doorbells wait at the instant they are rung",
                   waiting, n);
    g_assert_cmpuint(waiting, >, 0);
    g_assert_cmpuint(waiting, <, n);
    for (i = 0; i < n; i++) {
        chpp_poll_cq(f->n.d, &f->n.cq[SCQ], &cqe);
        g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, i);
        waiting = (qpci_io_readl(f->n.d->pdev, f->n.d->bar2,
                                 CHPP_NODE_UAR * CHPP_UAR_PAGE_SIZE + off) >>
                   8) & 0xff;
    }
    g_assert_cmpuint(waiting, ==, 0);
    chpp_check(f->n.d, f->dst, 4096, 0x21);
    g_assert_cmpuint(chpp_counter(f->n.d, CHPP_CNT_DB_FIFO_OVERFLOW), ==, 0);
    g_assert_cmpuint(chpp_counter(f->n.d, CHPP_CNT_RETRANSMITS), ==, 0);
    fx_free(f);
}

/* Virtual ns until the last byte of @len at dst and the send CQE. */
static void wait_data_cqe(Fx *f, uint32_t len, int64_t *t_data,
                          int64_t *t_cqe, struct chpp_cqe *cqe)
{
    QTestState *qts = f->n.d->qts;
    uint8_t want = qtest_readb(qts, f->src + len - 1);
    int64_t t0 = vnow(f), t = t0;
    uint32_t steps = 0;

    *t_data = *t_cqe = -1;
    while (*t_data < 0 || *t_cqe < 0) {
        if (*t_data < 0 && qtest_readb(qts, f->dst + len - 1) == want) {
            *t_data = t - t0;
        }
        if (*t_cqe < 0 && chpp_cqe_valid(f->n.d, &f->n.cq[SCQ], cqe)) {
            *t_cqe = t - t0;
        }
        g_assert_cmpuint(++steps, <, MAX_STEPS);
        t = qtest_clock_step_next(qts);
    }
}

/*
 * UC has no ACK: a WQE completes once its packets are sent, which in
 * timing mode is when the model says (not when the engine built them).
 * RC completes on the ACK, a little after the data.
 */
static void test_uc_completion(void)
{
    Fx *f = fx_new(NULL, CHPP_QPT_UC);
    int64_t t_data, t_cqe;
    struct chpp_cqe cqe;

    qtest_writeb(f->n.d->qts, f->dst + 65535, 0);
    post(f, CHPP_WQE_PUT, 7, 65536, false, true);
    wait_data_cqe(f, 65536, &t_data, &t_cqe, &cqe);
    g_test_message("UC PUT 64 KiB: data after %" PRId64 " ns, CQE after %"
                   PRId64 " ns", t_data, t_cqe);
    g_assert_cmpint(t_data, >, 20000);      /* about 22 us: 3.2 GB/s */
    g_assert_cmpint(t_cqe, ==, t_data);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    chpp_check(f->n.d, f->dst, 65536, 0x21);
    fx_free(f);

    f = fx_new(NULL, CHPP_QPT_RC);
    qtest_writeb(f->n.d->qts, f->dst + 65535, 0);
    post(f, CHPP_WQE_PUT, 8, 65536, false, true);
    wait_data_cqe(f, 65536, &t_data, &t_cqe, &cqe);
    g_assert_cmpint(t_cqe, >, t_data);
    g_assert_cmpint(t_cqe, <, t_data + 1000);
    fx_free(f);
}

/*
 * A QP's requests arrive in the order it sent them although a GET's
 * request travels faster than a long PUT's data, and so do its
 * responses: no PSN ever arrives early, nothing is sent again.
 */
static void test_order(void)
{
    Fx *f = fx_new(NULL, CHPP_QPT_RC);
    struct chpp_cqe cqe;
    uint32_t i;

    post(f, CHPP_WQE_PUT, 0, 262144, false, true);
    post(f, CHPP_WQE_GET, 1, 64, false, true);
    post(f, CHPP_WQE_PUT, 2, 64, false, true);
    post(f, CHPP_WQE_GET, 3, 131072, false, true);
    post(f, CHPP_WQE_PUT, 4, 1, false, true);
    for (i = 0; i < 5; i++) {
        chpp_poll_cq(f->n.d, &f->n.cq[SCQ], &cqe);
        g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, i);
    }
    g_assert_cmpuint(chpp_counter(f->n.d, CHPP_CNT_RETRANSMITS), ==, 0);
    g_assert_cmpuint(chpp_counter(f->n.d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    chpp_check(f->n.d, f->dst, 131072, 0x21);
    fx_free(f);
}

/*
 * Migration in the middle: the VM stop finishes the packets at once, a
 * UC WQE's completion waits on the QP timer (CHPP_TIMER_SENT), which the
 * stream carries; the destination completes it when its time comes.
 */
static void test_migrate(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-tmig-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    Fx *f = fx_new(NULL, CHPP_QPT_UC);
    struct chpp_cqe cqe;
    ChppDev *dst;

    post(f, CHPP_WQE_PUT, 9, BUF, false, true);
    /* Started (the engine ran at this instant), nothing sent yet. */
    qtest_clock_step(f->n.d->qts, 1000);
    g_assert_false(chpp_cqe_valid(f->n.d, &f->n.cq[SCQ], &cqe));

    dst = chpp_start_incoming_extra("timing=on", "-m 256M", uri);
    migrate(f->n.d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, f->n.d);
    chpp_stop(f->n.d);
    f->n.d = dst;

    /* All data is there; the completion waits for its time (330 us). */
    chpp_check(dst, f->dst, BUF, 0x21);
    g_assert_false(chpp_cqe_valid(dst, &f->n.cq[SCQ], &cqe));
    qtest_clock_step(dst->qts, 100000);
    g_assert_false(chpp_cqe_valid(dst, &f->n.cq[SCQ], &cqe));
    chpp_node_expect(&f->n, SCQ, 9, CHPP_CQE_OP_RDMA_WRITE, BUF);

    /* And the QP works on. */
    post(f, CHPP_WQE_PUT, 10, 4096, false, true);
    chpp_node_expect(&f->n, SCQ, 10, CHPP_CQE_OP_RDMA_WRITE, 4096);
    fx_free(f);
    unlink(sock);
    rmdir(tmpdir);
}

/* Off (the default): the engine does not wait for the clock at all. */
static void test_off(void)
{
    ChppDev *d = chpp_start("timing=off", "-m 256M");
    Fx *f = g_new0(Fx, 1);

    int64_t t0;
    uint32_t i;

    fx_setup(f, d, CHPP_QPT_RC);
    t0 = vnow(f);
    post(f, CHPP_WQE_PUT, 1, 65536, false, true);
    /* The engine runs in the main loop between qtest commands. */
    for (i = 0; i < 1000 &&
         qtest_readb(d->qts, f->dst + 65535) !=
         qtest_readb(d->qts, f->src + 65535); i++) {
        g_usleep(100);
    }
    chpp_check(d, f->dst, 65536, 0x21);
    /* Nothing but the clock probe moved it. */
    g_assert_cmpint(vnow(f), ==, t0 + CHPP_QTEST_CLOCK_PROBE_NS);
    fx_free(f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/timing/latency", test_latency);
    qtest_add_func("/chpp-hca/timing/parameters", test_parameters);
    qtest_add_func("/chpp-hca/timing/fifo-pace", test_fifo_pace);
    qtest_add_func("/chpp-hca/timing/uc-completion", test_uc_completion);
    qtest_add_func("/chpp-hca/timing/order", test_order);
    qtest_add_func("/chpp-hca/timing/migrate", test_migrate);
    qtest_add_func("/chpp-hca/timing/off", test_off);
    return g_test_run();
}
