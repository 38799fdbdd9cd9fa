/*
 * chpp-hca shared receive queue tests (ABI 1.5): the commands and each
 * input they refuse, the SRQ doorbell, RC, UC and UD QPs taking their
 * receive WQEs from one SRQ (data, wr_ids, the consumer record), messages
 * interleaved on two QPs, RNR, the limit event, LAST_WQE_REACHED, errors
 * (a bad WQE, a ring the device cannot read), VFs and their quota,
 * migration with SRQs in use, streams with SRQ state the device refuses,
 * and every kind of reset.
 * docs/shared-receive-queues.md is what they check.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define UAR         1
#define PD          3
#define SCQ         0       /* send completions of every QP */
#define RCQ         1       /* receive completions of every QP */
#define CQ_SIZE     256
#define SRQN        0
#define ACCESS_ALL  (CHPP_ACCESS_REMOTE_WRITE | CHPP_ACCESS_REMOTE_READ | \
                     CHPP_ACCESS_REMOTE_ATOMIC)
#define QKEY        0x11111111
#define BUF_SIZE    4096
#define DB_MASK     CHPP_UAR_DB_PI_MASK

typedef ChppTCq TCq;
typedef ChppTQp TQp;
typedef ChppTSge TSge;
typedef ChppTSrq TSrq;

/* One function: its EQ, two CQs, an SRQ and QPs 0..7. */
typedef struct Fx {
    ChppDev *d;
    uint8_t func;
    uint64_t eq;
    uint32_t eq_ci;
    TCq cq[2];
    TSrq srq;
    TQp qp[8];
    uint32_t next_mr;
    uint64_t buf[16];       /* the SRQ's receive buffers, BUF_SIZE each */
    uint32_t buf_key;
} Fx;

/* ---- fixture ----------------------------------------------------------- */

static void fx_event(Fx *f, uint8_t type, uint32_t obj);

/* INIT_HCA (unless done), an EQ for every async event, CQs 0 and 1. */
static void fx_setup(Fx *f, ChppDev *d, uint8_t func, bool init)
{
    unsigned i;

    memset(f, 0, sizeof(*f));
    f->d = d;
    f->func = func;
    if (init) {
        chpp_init_hca(d);
    }
    f->eq = chpp_create_eq(d, 0, 256, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    for (i = 0; i < 2; i++) {
        f->cq[i] = (TCq) {
            .cqn = i, .nent = CQ_SIZE, .uar = UAR,
            .ring = chpp_create_cq(d, i, CQ_SIZE, 0, UAR),
        };
    }
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    fx_event(f, CHPP_EVENT_PORT_CHANGE, 1);
}

static Fx *fx_new(const char *props)
{
    Fx *f = g_new0(Fx, 1);
    g_autofree char *p = g_strdup_printf("num-qps=8%s%s", props ? "," : "",
                                         props ?: "");

    fx_setup(f, chpp_start(p, NULL), 0, true);
    return f;
}

static void fx_free(Fx *f)
{
    chpp_stop(f->d);
    g_free(f);
}

static uint64_t fx_buf(Fx *f, size_t len)
{
    uint64_t addr = guest_alloc(&f->d->qs->alloc, MAX(len, 1));

    qtest_memset(f->d->qts, addr, 0, MAX(len, 1));
    return addr;
}

static uint32_t fx_mr(Fx *f, uint64_t addr, uint64_t len, uint32_t flags)
{
    return chpp_create_mr(f->d, f->next_mr++, PD, addr, len, flags);
}

/* SRQ SRQN of 2^@log_size WQEs, and receive buffers for 16 of them. */
static void fx_srq(Fx *f, uint8_t log_size)
{
    uint64_t all = fx_buf(f, 16 * BUF_SIZE);
    unsigned i;

    g_assert_cmphex(chpp_create_srq(f->d, &f->srq, SRQN, PD, log_size, 8,
                                    UAR), ==, CHPP_STAT_OK);
    f->buf_key = fx_mr(f, all, 16 * BUF_SIZE, CHPP_MPT_LOCAL_WRITE);
    for (i = 0; i < 16; i++) {
        f->buf[i] = all + i * BUF_SIZE;
    }
}

/* @n WQEs, wr_id 0x100 + WQE index, each into buffer (index mod 16). */
static void fx_post(Fx *f, uint32_t n)
{
    while (n--) {
        uint32_t i = f->srq.pi;
        TSge sge = { f->buf[i % 16], BUF_SIZE, f->buf_key };

        chpp_post_srq_recvs(f->d, &f->srq, 0x100 + i, &sge, 1, 1);
    }
}

/* RST2INIT of QP @qpn: @srq takes its receives from the SRQ. */
static uint8_t fx_qp(Fx *f, uint32_t qpn, uint8_t type, bool srq)
{
    TQp *q = &f->qp[qpn];
    struct chpp_qp_context c = {
        .type = type,
        .port = 1,
        .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(SCQ),
        .recv_cqn = cpu_to_le32(RCQ),
        .log_sq_size = 4,
        .log_sq_stride = 8,
        .log_rq_size = 4,
        .log_rq_stride = 8,
        .uar = cpu_to_le16(UAR),
        .access_flags = cpu_to_le32(ACCESS_ALL),
        .qkey = cpu_to_le32(QKEY),
        .magic = 0x40 + qpn,
        .flags = srq ? CHPP_QP_FLAG_SRQ : 0,
        .srqn = cpu_to_le32(srq ? SRQN : 0),
    };
    uint32_t mask = CHPP_QP_ATTR_PKEY_INDEX | CHPP_QP_ATTR_PORT |
                    (type == CHPP_QPT_UD ? CHPP_QP_ATTR_QKEY
                                         : CHPP_QP_ATTR_ACCESS_FLAGS);

    *q = (TQp) {
        .qpn = qpn, .type = type, .log_sq = 4, .log_rq = 4, .stride = 8,
        .magic = c.magic, .uar = UAR,
    };
    chpp_qp_alloc_rings(f->d, &c, &q->sq, &q->rq);
    if (srq) {
        /* Ignored with an SRQ: even values RST2INIT would refuse. */
        c.log_rq_size = 30;
        c.rq_mtt_base = cpu_to_le32(0xffffffff);
    }
    return chpp_modify_qp(f->d, CHPP_CMD_RST2INIT_QP, qpn, mask, &c);
}

/* INIT -> RTR -> RTS towards QP @peer of function @peer_fn (loopback). */
static void fx_connect(Fx *f, uint32_t qpn, uint32_t peer, uint8_t peer_fn,
                       uint8_t mtu, uint8_t rnr_retry)
{
    TQp *q = &f->qp[qpn];
    struct chpp_qp_context c = {
        .path_mtu = mtu,
        .dest_qpn = cpu_to_le32(peer),
        .dest_magic = 0x40 + peer,
        .dest_vf = peer_fn,
        .rq_psn = cpu_to_le32(0x100),
        .sq_psn = cpu_to_le32(0x100),
        .max_dest_rd_atomic = 4,
        .max_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 14,
        .retry_cnt = 3,
        .rnr_retry = rnr_retry,
    };
    uint32_t rtr = 0, rts = CHPP_QP_ATTR_SQ_PSN;

    if (q->type != CHPP_QPT_UD) {
        rtr = CHPP_QP_ATTR_AV | CHPP_QP_ATTR_PATH_MTU |
              CHPP_QP_ATTR_DEST_QPN | CHPP_QP_ATTR_RQ_PSN;
    }
    if (q->type == CHPP_QPT_RC) {
        rtr |= CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC | CHPP_QP_ATTR_MIN_RNR_TIMER;
        rts |= CHPP_QP_ATTR_TIMEOUT | CHPP_QP_ATTR_RETRY_CNT |
               CHPP_QP_ATTR_RNR_RETRY | CHPP_QP_ATTR_MAX_QP_RD_ATOMIC;
    }
    g_assert_cmphex(chpp_modify_qp(f->d, CHPP_CMD_INIT2RTR_QP, qpn, rtr, &c),
                    ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(f->d, CHPP_CMD_RTR2RTS_QP, qpn, rts, &c),
                    ==, CHPP_STAT_OK);
}

/* RC (or UC) QPs @s -> @r of this function, @r on the SRQ. */
static void fx_pair(Fx *f, uint32_t s, uint32_t r, uint8_t type)
{
    g_assert_cmphex(fx_qp(f, s, type, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, r, type, true), ==, CHPP_STAT_OK);
    fx_connect(f, s, r, f->func, CHPP_MTU_4096, 3);
    fx_connect(f, r, s, f->func, CHPP_MTU_4096, 3);
}

/* A signaled SEND of @len bytes of pattern @seed on QP @qpn. */
static void fx_send(Fx *f, uint32_t qpn, uint64_t wr_id, uint32_t len,
                    uint8_t seed, uint32_t ud_dest)
{
    uint64_t src = fx_buf(f, len);
    uint32_t key = fx_mr(f, src, len, 0);
    ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, wr_id, 0);

    chpp_fill(f->d, src, len, seed);
    if (f->qp[qpn].type == CHPP_QPT_UD) {
        chpp_wqe_ud(w, 0, ud_dest, QKEY, 0x40 + ud_dest);
    }
    chpp_wqe_sge(w, src, len, key);
    chpp_post_send(f->d, &f->qp[qpn], w, true);
}

static void fx_cqe(Fx *f, uint32_t cqn, struct chpp_cqe *cqe)
{
    chpp_poll_cq(f->d, &f->cq[cqn], cqe);
}

/* The next CQE of @cqn: @wr_id on QP @qpn, @status, @len bytes. */
static void fx_expect(Fx *f, uint32_t cqn, uint64_t wr_id, uint32_t qpn,
                      uint8_t status, uint32_t len)
{
    struct chpp_cqe cqe;

    fx_cqe(f, cqn, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == CHPP_WC_SUCCESS) {
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    }
}

static void fx_no_cqe(Fx *f, uint32_t cqn)
{
    struct chpp_cqe cqe;

    qtest_clock_step(f->d->qts, 1000000);
    g_assert_false(chpp_cqe_valid(f->d, &f->cq[cqn], &cqe));
}

/* The next async event, which must be @type naming @obj (QP or SRQ). */
static void fx_event(Fx *f, uint8_t type, uint32_t obj)
{
    struct chpp_eqe eqe;
    int i;

    for (i = 0; i < 100; i++) {
        chpp_read_eqe(f->d, f->eq, f->eq_ci % 256, &eqe);
        if (!!(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER) ==
            !((f->eq_ci / 256) & 1)) {
            break;
        }
        qtest_clock_step(f->d->qts, 100000);
    }
    g_assert_cmpint(i, <, 100);
    f->eq_ci++;
    chpp_eq_db(f->d, 0, f->eq_ci, false);
    g_assert_cmphex(eqe.type, ==, type);
    g_assert_cmpuint(le32_to_cpu(eqe.event.raw[0]), ==, obj);
}

static void fx_no_event(Fx *f)
{
    struct chpp_eqe eqe;

    qtest_clock_step(f->d->qts, 1000000);
    chpp_read_eqe(f->d, f->eq, f->eq_ci % 256, &eqe);
    g_assert_cmpuint(!!(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER), !=,
                     !((f->eq_ci / 256) & 1));
}

static void fx_record(Fx *f, uint32_t free, uint32_t ci)
{
    uint32_t rfree, rci;

    chpp_srq_record(f->d, &f->srq, &rfree, &rci);
    g_assert_cmpuint(rfree, ==, free);
    g_assert_cmpuint(rci, ==, ci);
}

static struct chpp_srq_context fx_query(Fx *f)
{
    struct chpp_srq_context c;

    g_assert_cmphex(chpp_query_srq(f->d, SRQN, &c), ==, CHPP_STAT_OK);
    return c;
}

/* 2ERR_QP or 2RST_QP: no mailbox. */
static uint8_t qp_cmd(Fx *f, uint16_t opcode, uint32_t qpn)
{
    return chpp_cmd(f->d, opcode, 0, qpn, 0);
}

static uint8_t qp_state(Fx *f, uint32_t qpn)
{
    struct chpp_qp_context c;

    g_assert_cmphex(chpp_query_qp(f->d, qpn, &c), ==, CHPP_STAT_OK);
    return c.state;
}

/* ---- commands ----------------------------------------------------------- */

static void test_caps(void)
{
    struct chpp_dev_cap cap;
    struct chpp_fw_info fw;
    ChppDev *d = chpp_start(NULL, NULL);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_DEV_CAP, 0, 0, d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_srqs), ==, CHPP_DEFAULT_SRQS);
    g_assert_cmpuint(le32_to_cpu(cap.max_srq_wqes), ==, CHPP_MAX_SRQ_WQES);
    g_assert_cmpuint(le32_to_cpu(cap.max_srq_sge), ==, CHPP_MAX_SGE);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_FW, 0, 0, d->mbox_out), ==,
                    CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &fw, sizeof(fw));
    /* SRQs came with ABI 1.5; later minors keep them. */
    g_assert_cmpuint(le16_to_cpu(fw.abi_minor), >=, 5);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_ABI_VERSION), ==, CHPP_ABI_VERSION);
    chpp_stop(d);

    d = chpp_start("num-srqs=0", NULL);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_DEV_CAP, 0, 0, d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_srqs), ==, 0);
    g_assert_cmpuint(le32_to_cpu(cap.max_srq_wqes), ==, 0);
    g_assert_cmpuint(le32_to_cpu(cap.max_srq_sge), ==, 0);
    chpp_init_hca(d);
    chpp_assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_SRQ, 0, 0,
                          d->mbox_out);
    chpp_stop(d);

    d = chpp_start("num-srqs=4096", NULL);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_DEV_CAP, 0, 0, d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_srqs), ==, CHPP_MAX_SRQS);
    chpp_stop(d);
}

static void test_lifecycle(void)
{
    Fx *f = fx_new(NULL);
    struct chpp_srq_context c;

    fx_srq(f, 4);
    /* SW2HW_SRQ wrote the record: nothing taken, nothing in use. */
    fx_record(f, 0, 0);
    c = fx_query(f);
    g_assert_cmpuint(c.state, ==, CHPP_RES_HW);
    g_assert_cmpuint(le32_to_cpu(c.pd), ==, PD);
    g_assert_cmpuint(c.log_size, ==, 4);
    g_assert_cmpuint(c.log_stride, ==, 8);
    g_assert_cmpuint(c.log_page_size, ==, 12);
    g_assert_cmpuint(le16_to_cpu(c.uar), ==, UAR);
    g_assert_cmpuint(le32_to_cpu(c.limit), ==, 0);
    g_assert_cmpuint(le32_to_cpu(c.pi), ==, 0);
    g_assert_cmpuint(le32_to_cpu(c.ci), ==, 0);
    g_assert_cmpuint(le32_to_cpu(c.free), ==, 0);
    g_assert_cmpuint(le32_to_cpu(c.num_qps), ==, 0);

    fx_post(f, 5);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 5);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 3, SRQN, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).limit), ==, 3);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 16, SRQN, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 0, SRQN, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).limit), ==, 0);

    /* QPs attach at RST2INIT; QUERY_QP says so; the RQ reads 0. */
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 2, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).num_qps), ==, 2);
    {
        struct chpp_qp_context q;

        g_assert_cmphex(chpp_query_qp(f->d, 1, &q), ==, CHPP_STAT_OK);
        g_assert_cmphex(q.flags, ==, CHPP_QP_FLAG_SRQ);
        g_assert_cmpuint(le32_to_cpu(q.srqn), ==, SRQN);
        g_assert_cmpuint(q.log_rq_size, ==, 0);
        g_assert_cmpuint(q.log_rq_stride, ==, 0);
        g_assert_cmpuint(le32_to_cpu(q.rq_mtt_base), ==, 0);
    }
    /* Busy while attached, even with the QP in ERR; free after 2RST. */
    chpp_assert_cmd_fails(f->d, CHPP_STAT_RESOURCE_BUSY, CHPP_CMD_HW2SW_SRQ,
                          0, SRQN, 0);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 2), ==,
                    CHPP_STAT_OK);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_RESOURCE_BUSY, CHPP_CMD_HW2SW_SRQ,
                          0, SRQN, 0);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).num_qps), ==, 1);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 1), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_HW2SW_SRQ, 0, SRQN, 0), ==,
                    CHPP_STAT_OK);
    c = fx_query(f);
    g_assert_true(buffer_is_zero(&c, sizeof(c)));
    /* And it can be created again, from index 0. */
    g_assert_cmphex(chpp_create_srq(f->d, &f->srq, SRQN, PD, 2, 6, UAR), ==,
                    CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 0);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_CMD_ERRORS), ==, 2);
    fx_free(f);
}

/* SW2HW_SRQ of @c fails with @status, and changes nothing. */
static void sw2hw_fails(Fx *f, uint8_t status, uint32_t srqn,
                        const struct chpp_srq_context *c)
{
    qtest_memwrite(f->d->qts, f->d->mbox_in, c, sizeof(*c));
    chpp_assert_cmd_fails(f->d, status, CHPP_CMD_SW2HW_SRQ, f->d->mbox_in,
                          srqn, 0);
}

static void test_refused(void)
{
    Fx *f = fx_new("num-mtts=64,uar-pages=4,num-pds=8");
    uint64_t page = fx_buf(f, 8192);
    uint32_t mtt = chpp_map_pages(f->d, page, 4096);
    struct chpp_srq_context good = {
        .pd = cpu_to_le32(PD), .mtt_base = cpu_to_le32(mtt),
        .log_size = 2, .log_stride = 6, .log_page_size = 12,
        .uar = cpu_to_le16(UAR),
    }, c;
    struct chpp_qp_context q;

    c = good;
    sw2hw_fails(f, CHPP_STAT_BAD_INDEX, CHPP_DEFAULT_SRQS, &c);
    sw2hw_fails(f, CHPP_STAT_BAD_INDEX, 0xffffffff, &c);
    c.pd = cpu_to_le32(8);
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    c = good;
    c.log_size = 16;
    sw2hw_fails(f, CHPP_STAT_BAD_SIZE, 0, &c);
    c = good;
    c.log_stride = 5;
    sw2hw_fails(f, CHPP_STAT_BAD_SIZE, 0, &c);
    c.log_stride = 12;
    sw2hw_fails(f, CHPP_STAT_BAD_SIZE, 0, &c);
    /* MTT: beyond the MTT, an entry never written, a bad page size. */
    c = good;
    c.mtt_base = cpu_to_le32(64);
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    c.mtt_base = cpu_to_le32(63);
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    c = good;
    c.log_page_size = 11;
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    c.log_page_size = 31;
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    /* 64 WQEs of 64 bytes fill the page: the record needs a second. */
    c = good;
    c.log_size = 6;
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    c = good;
    c.uar = cpu_to_le16(4);
    sw2hw_fails(f, CHPP_STAT_BAD_PARAM, 0, &c);
    /* None of them created anything. */
    g_assert_cmpuint(fx_query(f).state, ==, CHPP_RES_SW);

    /* The largest ring that leaves room for the record in the page. */
    c = good;
    c.log_size = 5;
    qtest_memwrite(f->d->qts, f->d->mbox_in, &c, sizeof(c));
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_SW2HW_SRQ, f->d->mbox_in, 0, 0),
                    ==, CHPP_STAT_OK);
    sw2hw_fails(f, CHPP_STAT_BAD_RES_STATE, 0, &c);

    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_INDEX, CHPP_CMD_HW2SW_SRQ, 0,
                          CHPP_DEFAULT_SRQS, 0);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_HW2SW_SRQ,
                          0, 1, 0);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_SRQ, 0,
                          CHPP_DEFAULT_SRQS, f->d->mbox_out);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_INDEX, CHPP_CMD_ARM_SRQ, 1,
                          CHPP_DEFAULT_SRQS, 0);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_ARM_SRQ, 1,
                          1, 0);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_PARAM, CHPP_CMD_ARM_SRQ, 33, 0,
                          0);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_PARAM, CHPP_CMD_ARM_SRQ,
                          1ull << 32, 0, 0);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).limit), ==, 0);

    /* RST2INIT naming an SRQ that is not in hardware ownership. */
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 1), ==,
                    CHPP_STAT_OK);
    q = (struct chpp_qp_context) {
        .type = CHPP_QPT_RC, .port = 1, .pd = cpu_to_le32(PD),
        .recv_cqn = cpu_to_le32(1), .log_sq_size = 2, .log_sq_stride = 6,
        .uar = cpu_to_le16(UAR), .flags = CHPP_QP_FLAG_SRQ,
        .srqn = cpu_to_le32(1),
    };
    chpp_qp_alloc_rings(f->d, &q, NULL, NULL);
    qtest_memwrite(f->d->qts, f->d->mbox_in, &(struct chpp_qp_modify) {
                       .attr_mask = cpu_to_le32(CHPP_QP_ATTR_PKEY_INDEX |
                                                CHPP_QP_ATTR_PORT |
                                                CHPP_QP_ATTR_ACCESS_FLAGS),
                       .ctx = q,
                   }, sizeof(struct chpp_qp_modify));
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_RESOURCE,
                          CHPP_CMD_RST2INIT_QP, f->d->mbox_in, 2, 0);
    q.srqn = cpu_to_le32(0xffffffff);
    qtest_memwrite(f->d->qts, f->d->mbox_in, &(struct chpp_qp_modify) {
                       .attr_mask = cpu_to_le32(CHPP_QP_ATTR_PKEY_INDEX |
                                                CHPP_QP_ATTR_PORT |
                                                CHPP_QP_ATTR_ACCESS_FLAGS),
                       .ctx = q,
                   }, sizeof(struct chpp_qp_modify));
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_RESOURCE,
                          CHPP_CMD_RST2INIT_QP, f->d->mbox_in, 2, 0);
    g_assert_cmpuint(qp_state(f, 2), ==, CHPP_QPS_RESET);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).num_qps), ==, 0);
    fx_free(f);
}

/* A doorbell write that is refused: counted, DOORBELL_ERROR event. */
static void db_refused(Fx *f, uint16_t uar, uint32_t off, uint64_t val,
                       unsigned size)
{
    uint32_t errs = chpp_counter(f->d, CHPP_CNT_DB_ERRORS);
    uint64_t addr = (uint64_t)uar * CHPP_UAR_PAGE_SIZE + off;
    struct chpp_eqe eqe;

    if (size == 8) {
        qpci_io_writeq(f->d->pdev, f->d->bar2, addr, val);
    } else {
        qpci_io_writel(f->d->pdev, f->d->bar2, addr, val);
    }
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DB_ERRORS), ==, errs + 1);
    fx_event(f, CHPP_EVENT_DOORBELL_ERROR, off);
    chpp_read_eqe(f->d, f->eq, (f->eq_ci - 1) % 256, &eqe);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value), ==, (uint32_t)val);
    g_assert_cmpuint(le32_to_cpu(eqe.event.db_error.uar), ==, uar);
}

static void test_bad_doorbell(void)
{
    Fx *f = fx_new(NULL);
    uint32_t srq_db = SRQN << CHPP_UAR_DB_QPN_SHIFT;

    fx_srq(f, 2);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    /* An SRQ that does not exist, or not in hardware ownership. */
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, 1u << 16 | 1, 4);
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, 0xffffu << 16 | 1, 4);
    /* Another UAR page than the SRQ's. */
    db_refused(f, 2, CHPP_UAR_SRQ_DB, srq_db | 1, 4);
    /* More WQEs than the SRQ holds, then back. */
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, srq_db | 5, 4);
    chpp_srq_db(f->d, UAR, SRQN, 4);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 4);
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, srq_db | 3, 4);
    /* 64-bit writes. */
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, srq_db | 4, 8);
    /* The RQ doorbell of a QP on an SRQ. */
    db_refused(f, UAR, CHPP_UAR_RQ_DB, 1u << 16 | 1, 4);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 4);
    /* Rewriting the same index is allowed. */
    chpp_srq_db(f->d, UAR, SRQN, 4);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DB_ERRORS), ==, 7);
    fx_free(f);
}

/* ---- the data path ------------------------------------------------------ */

/*
 * RC QPs 1 and 3 and UD QP 4 share the SRQ; 0, 2 and 5 send to them.  The
 * WQEs are taken in ring order whichever QP a message is for.
 */
static void test_shared(void)
{
    Fx *f = fx_new(NULL);
    static const struct {
        uint32_t from, to, len;
    } msg[] = {
        { 0, 1, 1000 }, { 2, 3, 2000 }, { 5, 4, 300 }, { 0, 1, 3000 },
        { 5, 4, 4000 - CHPP_UD_GRH_SIZE }, { 2, 3, 1 },
    };
    struct chpp_srq_context c;
    unsigned i;

    fx_srq(f, 3);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    g_assert_cmphex(fx_qp(f, 4, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 5, CHPP_QPT_UD, false), ==, CHPP_STAT_OK);
    fx_connect(f, 4, 0, 0, CHPP_MTU_4096, 3);
    fx_connect(f, 5, 0, 0, CHPP_MTU_4096, 3);
    fx_post(f, 8);
    for (i = 0; i < ARRAY_SIZE(msg); i++) {
        struct chpp_cqe cqe;
        bool ud = msg[i].to == 4;

        fx_send(f, msg[i].from, 0x900 + i, msg[i].len, 10 + i, msg[i].to);
        fx_expect(f, SCQ, 0x900 + i, msg[i].from, CHPP_WC_SUCCESS,
                  msg[i].len);
        fx_cqe(f, RCQ, &cqe);
        g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x100 + i);
        g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, msg[i].to);
        g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, msg[i].from);
        g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
        g_assert_cmpuint(cqe.opcode, ==, CHPP_CQE_OP_RECV);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==,
                         msg[i].len + (ud ? CHPP_UD_GRH_SIZE : 0));
        chpp_check(f->d, f->buf[i] + (ud ? CHPP_UD_GRH_SIZE : 0),
                   msg[i].len, 10 + i);
        /* Single-packet messages: every WQE taken is free again. */
        fx_record(f, i + 1, i + 1);
    }
    c = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(c.pi), ==, 8);
    g_assert_cmpuint(le32_to_cpu(c.ci), ==, 6);
    g_assert_cmpuint(le32_to_cpu(c.free), ==, 6);
    g_assert_cmpuint(le32_to_cpu(c.num_qps), ==, 3);
    /* The free index lets the driver post a whole ring again. */
    chpp_srq_db(f->d, UAR, SRQN, 6 + 8);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DB_ERRORS), ==, 0);
    fx_no_cqe(f, RCQ);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_GUEST_ERRORS), ==, 0);
    fx_free(f);
}

/* UC, and a multi-packet RC SEND: the WQE is freed at its last packet. */
static void test_uc_multi_packet(void)
{
    Fx *f = fx_new(NULL);
    uint64_t big = fx_buf(f, 3 * BUF_SIZE);
    uint32_t bkey = fx_mr(f, big, 3 * BUF_SIZE, CHPP_MPT_LOCAL_WRITE);
    TSge sge = { big, 3 * BUF_SIZE, bkey };
    struct chpp_cqe cqe;

    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_UC);
    g_assert_cmphex(fx_qp(f, 2, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 3, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 2, 3, 0, 1, 3);
    fx_connect(f, 3, 2, 0, 1, 3);
    fx_post(f, 1);
    chpp_post_srq_recvs(f->d, &f->srq, 0x777, &sge, 1, 1);

    fx_send(f, 0, 1, 777, 1, 0);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_SUCCESS, 777);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_SUCCESS, 777);
    chpp_check(f->d, f->buf[0], 777, 1);
    /* 10000 bytes at a path MTU of 256: 40 packets into one WQE. */
    fx_send(f, 2, 2, 10000, 2, 0);
    fx_expect(f, SCQ, 2, 2, CHPP_WC_SUCCESS, 10000);
    fx_cqe(f, RCQ, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x777);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 10000);
    chpp_check(f->d, big, 10000, 2);
    fx_record(f, 2, 2);
    fx_free(f);
}

/*
 * Messages interleaved on two QPs of one SRQ: VF 1 receives on QPs 0 and
 * 1, both on its SRQ; VF 2's QP 0 sends a long message to QP 0 and the
 * PF's QP 0 a short one to QP 1.  VF 2 is served first (priority) and
 * fills the frame queue; the PF's QP, waiting for room too, resumes
 * first (function order), so its message arrives while VF 2's is
 * in progress: it takes the next WQE and completes first, and the long
 * message's WQE is still the one it started in.
 */
static void test_interleaved(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    struct chpp_vf_res r;
    Fx *pf = g_new0(Fx, 1), *v1 = g_new0(Fx, 1), *v2 = g_new0(Fx, 1);
    uint32_t long_len = 600 * 256 - 100;
    uint64_t big = 0;
    uint32_t bkey;
    TSge sge;

    /* VF 2 first in the doorbell arbitration. */
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_QUERY_VF_RES, 0, 2,
                             p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->d->mbox_out, &r, sizeof(r));
    r.priority = 7;
    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in, 2, 0),
                    ==, CHPP_STAT_OK);
    chpp_pf_vfs_set(p, 2);
    fx_setup(pf, p->d, 0, true);
    fx_setup(v1, p->vf[1], 1, true);
    fx_setup(v2, p->vf[2], 2, true);

    fx_srq(v1, 2);
    big = fx_buf(v1, long_len);
    bkey = fx_mr(v1, big, long_len, CHPP_MPT_LOCAL_WRITE);
    sge = (TSge) { big, long_len, bkey };
    chpp_post_srq_recvs(v1->d, &v1->srq, 0x100, &sge, 1, 1);
    fx_post(v1, 2);
    g_assert_cmphex(fx_qp(v1, 0, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(v1, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(v2, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(pf, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    /* The peers' magics are 0x40 + QPN on every function. */
    fx_connect(v1, 0, 0, 2, 1, 3);
    fx_connect(v1, 1, 0, 0, 1, 3);
    fx_connect(v2, 0, 0, 1, 1, 3);
    fx_connect(pf, 0, 1, 1, 1, 3);

    qtest_qmp_assert_success(p->d->qts, "{ 'execute': 'stop' }");
    fx_send(v2, 0, 0xa, long_len, 7, 0);
    fx_send(pf, 0, 0xb, 700, 8, 0);
    qtest_qmp_assert_success(p->d->qts, "{ 'execute': 'cont' }");

    /*
     * The short message took WQE 1 and completed first.  In timing mode
     * (docs/timing-model.md) the prototype's one read engine moves the
     * long message (first in the arbitration) before it: WQE 1 all the
     * same, completed second.
     */
    if (chpp_timing_on()) {
        fx_expect(v1, RCQ, 0x100, 0, CHPP_WC_SUCCESS, long_len);
        fx_expect(v1, RCQ, 0x101, 1, CHPP_WC_SUCCESS, 700);
    } else {
        fx_expect(v1, RCQ, 0x101, 1, CHPP_WC_SUCCESS, 700);
        fx_expect(v1, RCQ, 0x100, 0, CHPP_WC_SUCCESS, long_len);
    }
    chpp_check(v1->d, big, long_len, 7);
    chpp_check(v1->d, v1->buf[1], 700, 8);
    fx_expect(v2, SCQ, 0xa, 0, CHPP_WC_SUCCESS, long_len);
    fx_expect(pf, SCQ, 0xb, 0, CHPP_WC_SUCCESS, 700);
    fx_record(v1, 2, 2);
    g_assert_cmpuint(chpp_counter(v1->d, CHPP_CNT_GUEST_ERRORS), ==, 0);
    chpp_pf_stop(p);
    g_free(pf);
    g_free(v1);
    g_free(v2);
}

/* RC: RNR NAKs while the SRQ is empty, then the message lands. UD: dropped. */
static void test_rnr(void)
{
    Fx *f = fx_new(NULL);
    uint32_t drops;

    fx_srq(f, 2);
    g_assert_cmphex(fx_qp(f, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 0, 1, 0, CHPP_MTU_4096, 7);
    fx_connect(f, 1, 0, 0, CHPP_MTU_4096, 7);
    g_assert_cmphex(fx_qp(f, 2, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 3, CHPP_QPT_UD, false), ==, CHPP_STAT_OK);
    fx_connect(f, 2, 0, 0, CHPP_MTU_4096, 3);
    fx_connect(f, 3, 0, 0, CHPP_MTU_4096, 3);

    fx_send(f, 0, 1, 100, 1, 0);
    fx_no_cqe(f, SCQ);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_RNR_NAKS), >, 0);
    fx_record(f, 0, 0);
    drops = chpp_counter(f->d, CHPP_CNT_PKTS_DROPPED);
    fx_send(f, 3, 2, 100, 2, 2);
    fx_expect(f, SCQ, 2, 3, CHPP_WC_SUCCESS, 100);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_PKTS_DROPPED), ==,
                     drops + 1);

    fx_post(f, 1);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_SUCCESS, 100);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_SUCCESS, 100);
    chpp_check(f->d, f->buf[0], 100, 1);
    fx_record(f, 1, 1);
    fx_free(f);
}

/* SRQ_LIMIT: once when fewer WQEs than the limit are left. */
static void test_limit(void)
{
    Fx *f = fx_new(NULL);
    unsigned i;

    fx_srq(f, 3);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_post(f, 8);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 6, SRQN, 0), ==,
                    CHPP_STAT_OK);
    for (i = 0; i < 2; i++) {
        fx_send(f, 0, i, 10, i, 0);
        fx_expect(f, RCQ, 0x100 + i, 1, CHPP_WC_SUCCESS, 10);
    }
    /* 6 left: not below the limit yet. */
    fx_no_event(f);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).limit), ==, 6);
    fx_send(f, 0, 2, 10, 2, 0);
    fx_expect(f, RCQ, 0x102, 1, CHPP_WC_SUCCESS, 10);
    fx_event(f, CHPP_EVENT_SRQ_LIMIT, SRQN);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).limit), ==, 0);
    /* One-shot. */
    fx_send(f, 0, 3, 10, 3, 0);
    fx_expect(f, RCQ, 0x103, 1, CHPP_WC_SUCCESS, 10);
    fx_no_event(f);
    /* Armed again below the limit: the next WQE taken raises it. */
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 6, SRQN, 0), ==,
                    CHPP_STAT_OK);
    fx_no_event(f);
    fx_send(f, 0, 4, 10, 4, 0);
    fx_expect(f, RCQ, 0x104, 1, CHPP_WC_SUCCESS, 10);
    fx_event(f, CHPP_EVENT_SRQ_LIMIT, SRQN);
    fx_free(f);
}

/*
 * A QP on an SRQ that enters ERR: LAST_WQE_REACHED, once; the SRQ's
 * WQEs are not flushed, the other QPs go on taking them.
 */
static void test_last_wqe(void)
{
    Fx *f = fx_new(NULL);
    struct chpp_srq_context c;

    fx_srq(f, 3);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    fx_post(f, 4);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==,
                    CHPP_STAT_OK);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    fx_no_cqe(f, RCQ);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==,
                    CHPP_STAT_OK);
    fx_no_event(f);
    c = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(c.pi), ==, 4);
    g_assert_cmpuint(le32_to_cpu(c.ci), ==, 0);
    fx_send(f, 2, 1, 50, 1, 0);
    fx_expect(f, RCQ, 0x100, 3, CHPP_WC_SUCCESS, 50);
    /* A UD QP and an RC QP failing by themselves say it too. */
    g_assert_cmphex(fx_qp(f, 4, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 4), ==,
                    CHPP_STAT_OK);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 4);
    /* QP 2's peer 3 in ERR: 3 drops, 2 retries and fails; 3 said it. */
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 3), ==,
                    CHPP_STAT_OK);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 3);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).ci), ==, 1);
    fx_free(f);
}

/*
 * 2ERR of a QP while a long message fills its WQE: that WQE (only) is
 * flushed, then LAST_WQE_REACHED; the record frees it.
 */
static void test_error_in_progress(void)
{
    /*
     * In timing mode the message advances only with the virtual clock, so
     * it is certainly still in progress when the QP fails; without it the
     * engine could finish all 16384 packets between two qtest commands.
     */
    Fx *f = fx_new("timing=on");
    uint32_t len = 4 << 20;
    uint64_t big = fx_buf(f, len);
    uint32_t bkey = fx_mr(f, big, len, CHPP_MPT_LOCAL_WRITE);
    TSge sge = { big, len, bkey };
    struct chpp_srq_context c;
    struct chpp_cqe cqe;

    fx_srq(f, 2);
    chpp_post_srq_recvs(f->d, &f->srq, 0x100, &sge, 1, 1);
    fx_post(f, 3);
    g_assert_cmphex(fx_qp(f, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 0, 1, 0, 1, 3);
    fx_connect(f, 1, 0, 0, 1, 3);
    fx_pair(f, 2, 3, CHPP_QPT_RC);

    /* 16384 packets: the first lands after about 2 us, the last 1.3 ms. */
    fx_send(f, 0, 1, len, 1, 0);
    qtest_clock_step(f->d->qts, 10000);
    c = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(c.ci), ==, 1);
    /* The WQE in use was copied at the first packet: its slot is free. */
    g_assert_cmpuint(le32_to_cpu(c.free), ==, 1);
    fx_record(f, 1, 1);
    /* The free index still bounds the producer index. */
    db_refused(f, UAR, CHPP_UAR_SRQ_DB, SRQN << 16 | 6, 4);

    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==,
                    CHPP_STAT_OK);
    fx_cqe(f, RCQ, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x100);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, 1);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(cqe.vendor_err, ==, CHPP_VERR_FLUSH);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    fx_record(f, 1, 1);
    chpp_srq_db(f->d, UAR, SRQN, 5);
    /* The other WQEs stay for the SRQ's other QPs. */
    fx_send(f, 2, 2, 64, 2, 0);
    fx_expect(f, RCQ, 0x101, 3, CHPP_WC_SUCCESS, 64);
    fx_record(f, 2, 2);
    fx_free(f);
}

/*
 * The pattern of UCX's rc_verbs on one SRQ with several peers: QP 1's
 * message from a slow peer fills WQE 0 (here: the peer, QP 0, fails after
 * the first packets, so the message never ends) while QP 3's short
 * messages complete, and the driver keeps max_wr (4, the size) receives
 * posted, reposting each completed one while the record lets it (pi -
 * free < size).  Every repost is accepted (no DOORBELL_ERROR) and lands,
 * the first one overwriting WQE 0's slot; QP 1's flush still reports WQE
 * 0's wr_id.
 */
static void test_repost_in_progress(void)
{
    /* Timing mode: the long message advances only with the clock. */
    Fx *f = fx_new("timing=on");
    uint32_t len = 4 << 20;
    uint64_t big = fx_buf(f, len);
    uint32_t bkey = fx_mr(f, big, len, CHPP_MPT_LOCAL_WRITE);
    TSge sge = { big, len, bkey };
    uint32_t i, rfree, rci;
    struct chpp_cqe cqe;

    fx_srq(f, 2);
    chpp_post_srq_recvs(f->d, &f->srq, 0x100, &sge, 1, 1);
    fx_post(f, 3);
    g_assert_cmphex(fx_qp(f, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 0, 1, 0, 1, 3);
    fx_connect(f, 1, 0, 0, 1, 3);
    fx_pair(f, 2, 3, CHPP_QPT_RC);

    fx_send(f, 0, 1, len, 1, 0);
    qtest_clock_step(f->d->qts, 10000);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 0), ==, CHPP_STAT_OK);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).ci), ==, 1);
    /* Two rounds of the ring while WQE 0's message is in progress. */
    for (i = 0; i < 8; i++) {
        fx_send(f, 2, 2 + i, 64, 2 + i, 0);
        fx_expect(f, SCQ, 2 + i, 2, CHPP_WC_SUCCESS, 64);
        fx_expect(f, RCQ, 0x101 + i, 3, CHPP_WC_SUCCESS, 64);
        chpp_check(f->d, f->buf[(1 + i) % 16], 64, 2 + i);
        chpp_srq_record(f->d, &f->srq, &rfree, &rci);
        g_assert_cmpuint(rci, ==, 2 + i);
        g_assert_cmpuint((f->srq.pi - rfree) & CHPP_UAR_DB_PI_MASK, <, 4);
        fx_post(f, 1);
    }
    g_assert_false(chpp_cqe_valid(f->d, &f->cq[RCQ], &cqe));
    fx_no_event(f);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 12);
    /* QP 1's WQE is the one it took, not what its slot holds now. */
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==, CHPP_STAT_OK);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_WR_FLUSH_ERR, 0);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    /* The reposted WQEs serve the next messages, in ring order. */
    fx_send(f, 2, 10, 64, 10, 0);
    fx_expect(f, RCQ, 0x109, 3, CHPP_WC_SUCCESS, 64);
    chpp_check(f->d, f->buf[9], 64, 10);
    fx_record(f, 10, 10);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DB_ERRORS), ==, 0);
    fx_free(f);
}

/* A WQE with too many segments: the receiving QP's error, as for an RQ. */
static void test_bad_wqe(void)
{
    Fx *f = fx_new(NULL);
    uint8_t wqe[16] = {};

    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    stq_le_p(wqe, 0xbad);
    stl_le_p(wqe + 8, CHPP_MAX_SGE + 1);
    qtest_memwrite(f->d->qts, f->srq.ring, wqe, sizeof(wqe));
    chpp_srq_db(f->d, UAR, SRQN, 1);
    f->srq.pi = 1;
    fx_post(f, 1);

    fx_send(f, 0, 1, 10, 1, 0);
    fx_expect(f, RCQ, 0xbad, 1, CHPP_WC_LOC_QP_OP_ERR, 0);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_REM_OP_ERR, 0);
    fx_event(f, CHPP_EVENT_WQ_CATAS_ERROR, 1);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    g_assert_cmpuint(qp_state(f, 1), ==, CHPP_QPS_ERR);
    g_assert_cmpuint(fx_query(f).state, ==, CHPP_RES_HW);
    fx_record(f, 1, 1);
    fx_send(f, 2, 2, 10, 2, 0);
    fx_expect(f, RCQ, 0x101, 3, CHPP_WC_SUCCESS, 10);
    fx_free(f);
}

/*
 * The SRQ's ring stops being memory (its MTT entry rewritten to point at
 * the MSI window): SRQ_CATAS_ERROR, the SRQ in error, every QP on it to
 * ERR with LAST_WQE_REACHED; the sender gets REM_OP_ERR.
 */
static void test_ring_dma_error(void)
{
    Fx *f = fx_new(NULL);
    struct chpp_srq_context c;
    uint64_t bad = 0xfee00000ull | CHPP_MTT_VALID;
    uint32_t mtt;

    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    g_assert_cmphex(fx_qp(f, 4, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    fx_post(f, 2);
    c = fx_query(f);
    mtt = le32_to_cpu(c.mtt_base);
    g_assert_cmphex(chpp_write_mtt_status(f->d, mtt, &bad, 1), ==,
                    CHPP_STAT_OK);

    fx_send(f, 0, 1, 10, 1, 0);
    fx_event(f, CHPP_EVENT_SRQ_CATAS_ERROR, SRQN);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 3);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 4);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_REM_OP_ERR, 0);
    g_assert_cmpuint(qp_state(f, 1), ==, CHPP_QPS_ERR);
    g_assert_cmpuint(qp_state(f, 3), ==, CHPP_QPS_ERR);
    g_assert_cmpuint(qp_state(f, 4), ==, CHPP_QPS_ERR);
    /* No WQE could be read: no receive CQE. */
    fx_no_cqe(f, RCQ);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DMA_REFUSED), >, 0);
    c = fx_query(f);
    g_assert_cmpuint(c.state, ==, CHPP_RES_ERROR);
    g_assert_cmpuint(le32_to_cpu(c.num_qps), ==, 3);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_ARM_SRQ, 1,
                          SRQN, 0);
    /* Doorbells still count WQEs; nothing is taken. */
    chpp_srq_db(f->d, UAR, SRQN, 3);
    g_assert_cmpuint(le32_to_cpu(fx_query(f).pi), ==, 3);
    chpp_assert_cmd_fails(f->d, CHPP_STAT_RESOURCE_BUSY, CHPP_CMD_HW2SW_SRQ,
                          0, SRQN, 0);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 1), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 3), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2RST_QP, 4), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_HW2SW_SRQ, 0, SRQN, 0), ==,
                    CHPP_STAT_OK);
    fx_free(f);
}

/* ---- functions, resets, migration -------------------------------------- */

static struct chpp_vf_res vf_res(ChppDev *d, uint32_t fn)
{
    struct chpp_vf_res r;

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_VF_RES, 0, fn, d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &r, sizeof(r));
    return r;
}

static uint8_t set_vf_res(ChppDev *d, uint32_t fn, struct chpp_vf_res *r)
{
    qtest_memwrite(d->qts, d->mbox_in, r, sizeof(*r));
    return chpp_cmd(d, CHPP_CMD_SET_VF_RES, d->mbox_in, fn, 0);
}

static void test_vf(void)
{
    ChppPf *p = chpp_pf_start("num-srqs=5", NULL);
    struct chpp_vf_res r = vf_res(p->d, 1);
    struct chpp_dev_cap cap;
    Fx *v = g_new0(Fx, 1);

    /* The default quota; the PF's own count for function 0. */
    g_assert_cmpuint(le32_to_cpu(r.num_srqs), ==, CHPP_VF_DEFAULT_SRQS);
    g_assert_cmpuint(le32_to_cpu(vf_res(p->d, 0).num_srqs), ==, 5);
    r.num_srqs = cpu_to_le32(6);
    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    chpp_assert_cmd_fails(p->d, CHPP_STAT_BAD_PARAM, CHPP_CMD_SET_VF_RES,
                          p->d->mbox_in, 1, 0);
    r.num_srqs = cpu_to_le32(5);
    g_assert_cmphex(set_vf_res(p->d, 1, &r), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(vf_res(p->d, 1).num_srqs), ==, 5);
    /* 0, as an ABI 1.4 driver leaves the word: the default. */
    r.num_srqs = 0;
    g_assert_cmphex(set_vf_res(p->d, 1, &r), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(vf_res(p->d, 1).num_srqs), ==,
                     CHPP_VF_DEFAULT_SRQS);
    r.num_srqs = cpu_to_le32(3);
    g_assert_cmphex(set_vf_res(p->d, 1, &r), ==, CHPP_STAT_OK);

    chpp_pf_vfs_set(p, 1);
    r.num_srqs = cpu_to_le32(4);
    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    chpp_assert_cmd_fails(p->d, CHPP_STAT_RESOURCE_BUSY, CHPP_CMD_SET_VF_RES,
                          p->d->mbox_in, 1, 0);
    fx_setup(v, p->vf[1], 1, true);
    g_assert_cmphex(chpp_cmd(v->d, CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                             v->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(v->d->qts, v->d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_srqs), ==, 3);
    chpp_assert_cmd_fails(v->d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_SRQ, 0, 3,
                          v->d->mbox_out);
    /* The VF's own SRQs: a SEND between two of its QPs. */
    fx_srq(v, 2);
    fx_pair(v, 0, 1, CHPP_QPT_RC);
    fx_post(v, 2);
    fx_send(v, 0, 1, 1234, 5, 0);
    fx_expect(v, RCQ, 0x100, 1, CHPP_WC_SUCCESS, 1234);
    chpp_check(v->d, v->buf[0], 1234, 5);
    fx_record(v, 1, 1);
    /* An FLR takes them with everything else. */
    qpci_config_writew(v->d->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       qpci_config_readw(v->d->pdev, CHPP_PCI_CAP_EXP +
                                         PCI_EXP_DEVCTL) |
                       PCI_EXP_DEVCTL_BCR_FLR);
    qpci_config_writew(v->d->pdev, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    v->d->toggle = true;
    chpp_init_hca(v->d);
    g_assert_cmpuint(fx_query(v).state, ==, CHPP_RES_SW);
    chpp_pf_stop(p);
    g_free(v);
}

/* Device reset, FLR of the PF path and CLOSE_HCA: the SRQs are gone. */
static void test_reset(void)
{
    Fx *f = fx_new(NULL);

    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_post(f, 2);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_CLOSE_HCA, 0, 0, 0), ==,
                    CHPP_STAT_OK);
    chpp_init_hca(f->d);
    g_assert_cmpuint(fx_query(f).state, ==, CHPP_RES_SW);
    g_assert_cmpuint(qp_state(f, 1), ==, CHPP_QPS_RESET);
    /* The SRQ doorbell of an SRQ that is gone is refused. */
    qpci_io_writel(f->d->pdev, f->d->bar2,
                   UAR * CHPP_UAR_PAGE_SIZE + CHPP_UAR_SRQ_DB, 1);
    g_assert_cmpuint(chpp_counter(f->d, CHPP_CNT_DB_ERRORS), ==, 1);

    fx_setup(f, f->d, 0, false);
    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    chpp_wr(f->d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    chpp_init_hca(f->d);
    g_assert_cmpuint(fx_query(f).state, ==, CHPP_RES_SW);
    /* Everything can be built again. */
    fx_setup(f, f->d, 0, false);
    fx_srq(f, 2);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_post(f, 1);
    fx_send(f, 0, 1, 10, 1, 0);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_SUCCESS, 10);
    fx_free(f);
}

static void srq_migrate(QOSState *from, QOSState *to, const char *uri)
{
    QDict *rsp = qtest_qmp(from->qts, "{ 'execute': 'migrate', "
                           "'arguments': { 'uri': %s } }", uri);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    for (;;) {
        const char *st;

        rsp = qtest_qmp(from->qts, "{ 'execute': 'query-migrate' }");
        st = qdict_get_str(qdict_get_qdict(rsp, "return"), "status");
        if (!strcmp(st, "completed")) {
            qobject_unref(rsp);
            break;
        }
        g_assert(strcmp(st, "failed") && strcmp(st, "cancelled"));
        qobject_unref(rsp);
        g_usleep(5000);
    }
    qtest_qmp_eventwait(to->qts, "RESUME");
}

/*
 * Migration in the middle of the traffic: a long message is filling a
 * WQE of the SRQ (the stop finishes it), the limit is armed, a QP is in
 * ERR.  On the destination every index, the record, the references and
 * the traffic go on.
 */
static void test_migrate(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-srq-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    Fx *f = fx_new(NULL);
    uint32_t len = 4 << 20;
    uint64_t big = fx_buf(f, len);
    uint32_t bkey = fx_mr(f, big, len, CHPP_MPT_LOCAL_WRITE);
    TSge sge = { big, len, bkey };
    struct chpp_srq_context before, after;
    ChppDev *dst;

    fx_srq(f, 3);
    chpp_post_srq_recvs(f->d, &f->srq, 0x100, &sge, 1, 1);
    fx_post(f, 5);
    g_assert_cmphex(fx_qp(f, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 0, 1, 0, 1, 3);
    fx_connect(f, 1, 0, 0, 1, 3);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    g_assert_cmphex(fx_qp(f, 4, CHPP_QPT_UD, true), ==, CHPP_STAT_OK);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 4), ==,
                    CHPP_STAT_OK);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 4);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 3, SRQN, 0), ==,
                    CHPP_STAT_OK);
    fx_send(f, 0, 1, len, 1, 0);
    /* WQE 0, once taken (not yet in timing mode), is copied: slot free. */
    before = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(before.free), ==, le32_to_cpu(before.ci));

    dst = chpp_start_incoming("num-qps=8", uri);
    srq_migrate(f->d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, f->d);
    /* Guest memory and MTT entries in use stay in use. */
    migrate_allocator(&f->d->qs->alloc, &dst->qs->alloc);
    dst->next_mtt = f->d->next_mtt;
    chpp_stop(f->d);
    f->d = dst;

    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_SUCCESS, len);
    chpp_check(f->d, big, len, 1);
    before = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(before.ci), ==, 1);
    g_assert_cmpuint(le32_to_cpu(before.free), ==, 1);
    g_assert_cmpuint(le32_to_cpu(before.pi), ==, 6);
    g_assert_cmpuint(le32_to_cpu(before.limit), ==, 3);
    g_assert_cmpuint(le32_to_cpu(before.num_qps), ==, 3);
    fx_record(f, 1, 1);
    /* The limit is still armed: 5 left, then 4, 3, 2 < 3. */
    fx_send(f, 2, 2, 20, 2, 0);
    fx_expect(f, RCQ, 0x101, 3, CHPP_WC_SUCCESS, 20);
    fx_send(f, 2, 3, 20, 3, 0);
    fx_expect(f, RCQ, 0x102, 3, CHPP_WC_SUCCESS, 20);
    fx_send(f, 2, 4, 20, 4, 0);
    fx_expect(f, RCQ, 0x103, 3, CHPP_WC_SUCCESS, 20);
    fx_event(f, CHPP_EVENT_SRQ_LIMIT, SRQN);
    chpp_check(f->d, f->buf[3], 20, 4);
    /* The references came along: the SRQ is busy. */
    chpp_assert_cmd_fails(f->d, CHPP_STAT_RESOURCE_BUSY, CHPP_CMD_HW2SW_SRQ,
                          0, SRQN, 0);
    after = fx_query(f);
    g_assert_cmpuint(le32_to_cpu(after.ci), ==, 4);
    fx_free(f);
    unlink(sock);
    rmdir(tmpdir);
}

/*
 * Streams with SRQ state the device could not hold are refused, naming
 * the field (docs/shared-receive-queues.md#resets-and-migration).  The
 * subsection "chpp-hca-function/srq": its header (QEMU_VM_SUBSECTION, the
 * name's length, the name, a 32-bit version), num_srqs, then each SRQ's
 * fields, then each QP's SRQN, all big-endian.
 */
static const char srq_header[] = "\x05\x15" "chpp-hca-function/srq";
#define SRQ_BYTES   30      /* the fields of vmstate "chpp-hca-srq" */
#define SRQ_STATE   0
#define SRQ_LOGSZ   1
#define SRQ_PD      11      /* low bytes of the be32/be16 fields */
#define SRQ_LIMIT   17
#define SRQ_PI      21
#define SRQ_CI      25

static void test_migrate_refused(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-srq-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    const char *props = "num-qps=8";
    g_autofree uint8_t *data = NULL;
    Fx *f = fx_new(NULL);
    size_t len, s0, qps;
    struct {
        const char *what;
        size_t at;
        uint8_t value;
        const char *trace;
    } bad[10];
    unsigned i, n = 0;

    fx_srq(f, 3);
    fx_pair(f, 0, 1, CHPP_QPT_RC);
    fx_post(f, 4);
    fx_send(f, 0, 1, 10, 1, 0);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_SUCCESS, 10);
    g_assert_cmphex(chpp_cmd(f->d, CHPP_CMD_ARM_SRQ, 2, SRQN, 0), ==,
                    CHPP_STAT_OK);
    chpp_save_to_file(f->d->qts, good);
    fx_free(f);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    /* num_srqs, then SRQ 0 (pi 4, ci 1, limit 2, PD 3), SRQ 1 unused. */
    s0 = chpp_stream_find(data, len, srq_header, strlen(srq_header)) +
         strlen(srq_header) + 4;
    g_assert_cmpuint(ldl_be_p(data + s0), ==, CHPP_DEFAULT_SRQS);
    s0 += 4;
    qps = s0 + CHPP_DEFAULT_SRQS * SRQ_BYTES;
    g_assert_cmpuint(data[s0 + SRQ_STATE], ==, CHPP_RES_HW);
    g_assert_cmpuint(ldl_be_p(data + s0 + SRQ_PI - 3), ==, 4);
    g_assert_cmpuint(ldl_be_p(data + s0 + SRQ_CI - 3), ==, 1);
    g_assert_cmpuint(ldl_be_p(data + qps + 4), ==, SRQN);

#define BAD(w, a, v, t) \
    bad[n++] = (typeof(bad[0])) { (w), (a), (v), (t) }
    BAD("SRQ state", s0 + SRQ_STATE, 3,
        "chpp_hca_err_vmstate_refused fn 0: SRQ 0: state 3");
    BAD("SRQ size", s0 + SRQ_LOGSZ, 16, "SRQ 0: log_size 16");
    BAD("SRQ PD", s0 + SRQ_PD, 200, "SRQ 0: pd 200");
    BAD("SRQ pi beyond 16 bits", s0 + SRQ_PI - 3, 1, "SRQ 0: pi 0x1000004");
    BAD("SRQ ci past pi", s0 + SRQ_CI, 5, "not in order");
    BAD("SRQ limit above its size", s0 + SRQ_LIMIT, 9, "limit 9");
    BAD("unused SRQ with an index", s0 + SRQ_BYTES + SRQ_PI, 1,
        "SRQ 1: state in software ownership with a context");
    BAD("QP on an unused SRQ", qps + 4 + 3, 5,
        "QP 1: srqn 5 not an SRQ in hardware ownership");
    BAD("SRQN of a QP without the flag", qps + 3, 1,
        "QP 0: srqn 1 without an SRQ");
    BAD("number of SRQs", s0 - 1, CHPP_DEFAULT_SRQS + 1, NULL);
#undef BAD

    chpp_load_stream(props, good, log, true);
    for (i = 0; i < n; i++) {
        /* The refusal names the field (the trace's text contains it). */
        chpp_load_corrupted(props, data, len, dir, bad[i].what, bad[i].at,
                            bad[i].value, bad[i].trace);
    }
    unlink(good);
    unlink(log);
    rmdir(dir);
}

/*
 * QP 1 stuck in a message (its peer QP 0 failed after the first packets)
 * with WQE 0 copied; QP 3 received one message and WQE 0's slot was
 * posted again (wr_id 0x104).
 */
static Fx *fx_stuck(void)
{
    Fx *f = fx_new("timing=on");
    uint32_t len = 4 << 20;
    uint64_t big = fx_buf(f, len);
    uint32_t bkey = fx_mr(f, big, len, CHPP_MPT_LOCAL_WRITE);
    TSge sge = { big, len, bkey };

    fx_srq(f, 2);
    chpp_post_srq_recvs(f->d, &f->srq, 0x100, &sge, 1, 1);
    fx_post(f, 3);
    g_assert_cmphex(fx_qp(f, 0, CHPP_QPT_RC, false), ==, CHPP_STAT_OK);
    g_assert_cmphex(fx_qp(f, 1, CHPP_QPT_RC, true), ==, CHPP_STAT_OK);
    fx_connect(f, 0, 1, 0, 1, 3);
    fx_connect(f, 1, 0, 0, 1, 3);
    fx_pair(f, 2, 3, CHPP_QPT_RC);
    fx_send(f, 0, 1, len, 1, 0);
    qtest_clock_step(f->d->qts, 10000);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 0), ==, CHPP_STAT_OK);
    fx_expect(f, SCQ, 1, 0, CHPP_WC_WR_FLUSH_ERR, 0);
    fx_send(f, 2, 2, 64, 2, 0);
    fx_expect(f, SCQ, 2, 2, CHPP_WC_SUCCESS, 64);
    fx_expect(f, RCQ, 0x101, 3, CHPP_WC_SUCCESS, 64);
    fx_post(f, 1);
    fx_record(f, 2, 2);
    return f;
}

/*
 * A QP's copied SRQ WQE migrates ("chpp-hca-function/copied-srq-wqe"):
 * on the destination QP 1's flush still reports WQE 0's wr_id, not what
 * the slot holds now, and the SRQ serves QP 3 on.
 */
static void test_migrate_copied(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-srq-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    Fx *f = fx_stuck();
    ChppDev *dst;

    dst = chpp_start_incoming("num-qps=8,timing=on", uri);
    srq_migrate(f->d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, f->d);
    migrate_allocator(&f->d->qs->alloc, &dst->qs->alloc);
    dst->next_mtt = f->d->next_mtt;
    chpp_stop(f->d);
    f->d = dst;

    fx_record(f, 2, 2);
    g_assert_cmphex(qp_cmd(f, CHPP_CMD_2ERR_QP, 1), ==, CHPP_STAT_OK);
    fx_expect(f, RCQ, 0x100, 1, CHPP_WC_WR_FLUSH_ERR, 0);
    fx_event(f, CHPP_EVENT_LAST_WQE_REACHED, 1);
    fx_send(f, 2, 3, 64, 3, 0);
    fx_expect(f, RCQ, 0x102, 3, CHPP_WC_SUCCESS, 64);
    chpp_check(f->d, f->buf[2], 64, 3);
    fx_free(f);
    unlink(sock);
    rmdir(tmpdir);
}

/*
 * A copied WQE of a stream with more segments than a WQE can have is
 * refused by name.  The subsection "chpp-hca-function/copied-srq-wqe":
 * per QP recv_cached (1 byte), recv_num_sge (4), recv_wr_id (8), 32
 * segments (16 each), big-endian.
 */
static const char srq_wqe_header[] =
    "\x05\x20" "chpp-hca-function/copied-srq-wqe";
#define SRQ_WQE_BYTES   (1 + 4 + 8 + CHPP_MAX_SGE * 16)

static void test_migrate_copied_refused(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-srq-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    const char *props = "num-qps=8,timing=on";
    g_autofree uint8_t *data = NULL;
    Fx *f = fx_stuck();
    size_t len, q1;

    chpp_save_to_file(f->d->qts, good);
    fx_free(f);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    q1 = chpp_stream_find(data, len, srq_wqe_header,
                          strlen(srq_wqe_header)) +
         strlen(srq_wqe_header) + 4 + SRQ_WQE_BYTES;
    g_assert_cmpuint(data[q1], ==, 1);
    g_assert_cmpuint(ldl_be_p(data + q1 + 1), ==, 1);
    g_assert_cmphex(ldq_be_p(data + q1 + 5), ==, 0x100);

    chpp_load_stream(props, good, log, true);
    chpp_load_corrupted(props, data, len, dir, "copied WQE segments",
                        q1 + 4, CHPP_MAX_SGE + 1,
                        "QP 1: eng.recv_num_sge 33 (max 32)");
    unlink(good);
    unlink(log);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/srq/caps", test_caps);
    qtest_add_func("/chpp-hca/srq/lifecycle", test_lifecycle);
    qtest_add_func("/chpp-hca/srq/refused", test_refused);
    qtest_add_func("/chpp-hca/srq/bad-doorbell", test_bad_doorbell);
    qtest_add_func("/chpp-hca/srq/shared", test_shared);
    qtest_add_func("/chpp-hca/srq/uc-multi-packet", test_uc_multi_packet);
    qtest_add_func("/chpp-hca/srq/interleaved", test_interleaved);
    qtest_add_func("/chpp-hca/srq/rnr", test_rnr);
    qtest_add_func("/chpp-hca/srq/limit", test_limit);
    qtest_add_func("/chpp-hca/srq/last-wqe", test_last_wqe);
    qtest_add_func("/chpp-hca/srq/error-in-progress",
                   test_error_in_progress);
    qtest_add_func("/chpp-hca/srq/repost-in-progress",
                   test_repost_in_progress);
    qtest_add_func("/chpp-hca/srq/bad-wqe", test_bad_wqe);
    qtest_add_func("/chpp-hca/srq/ring-dma-error", test_ring_dma_error);
    qtest_add_func("/chpp-hca/srq/vf", test_vf);
    qtest_add_func("/chpp-hca/srq/reset", test_reset);
    qtest_add_func("/chpp-hca/srq/migrate", test_migrate);
    qtest_add_func("/chpp-hca/srq/migrate-refused", test_migrate_refused);
    qtest_add_func("/chpp-hca/srq/migrate-copied", test_migrate_copied);
    qtest_add_func("/chpp-hca/srq/migrate-copied-refused",
                   test_migrate_copied_refused);
    return g_test_run();
}
