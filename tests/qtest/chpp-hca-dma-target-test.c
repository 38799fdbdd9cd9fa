/*
 * chpp-hca DMA target tests: a driver that points any address the device
 * writes to (mailboxes, EQ, CQ and QP rings, MTT-mapped and physical data
 * buffers, MSI-X messages) at PCI config space, a BAR of this or another
 * function, or the MSI window gets an error status, an error completion
 * or a stopped queue, and the target is not touched (docs/security.md).
 * And a function torn down by device DMA mid-command (possible only with
 * the test property x-dma-any-target) leaves QEMU whole.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define UAR         1
#define PD          2
#define SRIOV_CTRL  (CHPP_PCI_EXT_CAP_SRIOV + PCI_SRIOV_CTRL)
#define MSI_WINDOW  0xfee00000ull

/* UD QP @q->qpn in INIT on @d, 4-WQE rings of 64 bytes, CQ @cqn. */
static void ud_qp(ChppDev *d, ChppTQp *q, uint32_t cqn)
{
    struct chpp_qp_context c = {
        .type = CHPP_QPT_UD,
        .port = 1,
        .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(cqn),
        .recv_cqn = cpu_to_le32(cqn),
        .log_sq_size = 2,
        .log_sq_stride = 6,
        .log_rq_size = 2,
        .log_rq_stride = 6,
        .uar = cpu_to_le16(UAR),
        .qkey = cpu_to_le32(0x11111111),
        .magic = 0x42,
    };

    q->type = CHPP_QPT_UD;
    q->log_sq = q->log_rq = 2;
    q->stride = 6;
    q->magic = 0x42;
    q->uar = UAR;
    chpp_qp_alloc_rings(d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, q->qpn,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT | CHPP_QP_ATTR_QKEY, &c),
                    ==, CHPP_STAT_OK);
}

/* @q to RTS, then a signaled inline UD SEND of @data to itself. */
static void ud_send_self(ChppDev *d, ChppTQp *q, const void *data,
                         uint32_t len, uint64_t wr_id)
{
    struct chpp_qp_context qc = { 0 };
    ChppWqeBuf *wqe;

    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_INIT2RTR_QP, q->qpn, 0, &qc),
                    ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RTR2RTS_QP, q->qpn,
                                   CHPP_QP_ATTR_SQ_PSN, &qc), ==,
                    CHPP_STAT_OK);
    wqe = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED | CHPP_WQE_INLINE,
                       wr_id, 0);
    chpp_wqe_ud(wqe, 0, q->qpn, 0x11111111, q->magic);
    chpp_wqe_inline(wqe, data, len);
    chpp_post_send(d, q, wqe, true);
}

/*
 * The review's reproducer: on a VF, an EQ inside the PF's config page
 * takes CQ_ERROR; a 2-entry CQ overruns when 2ERR_QP flushes three
 * receives, and the CQ_ERROR EQE would clear the PF's VF Enable.
 */
static void vf_flush_into_pf_config(ChppPf *p, ChppDev *vf)
{
    ChppTQp q = { .qpn = 0 };

    chpp_init_hca(vf);
    g_assert_cmphex(chpp_sw2hw_eq(vf, 0, chpp_ecam(CHPP_TEST_DEVFN, 0) + 0x100,
                                  8, 0, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_map_eq(vf, 0, 1ull << CHPP_EVENT_CQ_ERROR, false),
                    ==, CHPP_STAT_OK);
    chpp_create_cq(vf, 0, 2, 0, UAR);
    ud_qp(vf, &q, 0);
    chpp_rq_db(vf, UAR, 0, 3);
    chpp_cmd_post(vf, CHPP_CMD_2ERR_QP, 0, 0, 0, false, 0);
}

static void test_vf_eq_in_pf_config(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppDev *vf;
    struct chpp_eq_context eq;

    chpp_pf_vfs_set(p, 1);
    vf = p->vf[1] = chpp_vf_handle(p, 1);
    vf_flush_into_pf_config(p, vf);
    g_assert_cmphex(chpp_cmd_wait(vf, NULL), ==, CHPP_STAT_OK);

    /* The EQE went nowhere: VF Enable holds, the EQ stopped, counted. */
    g_assert_cmphex(chpp_pf_cfg_rd(p, 0, SRIOV_CTRL) & PCI_SRIOV_CTRL_VFE,
                    ==, PCI_SRIOV_CTRL_VFE);
    g_assert_cmpuint(chpp_counter(vf, CHPP_CNT_DMA_REFUSED), >=, 1);
    g_assert_cmphex(chpp_query_eq(vf, 0, &eq), ==, CHPP_STAT_OK);
    g_assert_cmpuint(eq.state, ==, CHPP_EQ_STATE_ERROR);
    /* Both functions still work. */
    g_assert_cmphex(chpp_cmd(vf, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_stop(p);
}

/*
 * Without the policy (x-dma-any-target) the same EQE does clear VF
 * Enable: the VF is unrealized while its command still runs.  Under ASan
 * this was a heap use-after-free in chpp_resp_flush; now the function
 * unwinds on state that lives until it is released.
 */
static void test_teardown_under_dma(void)
{
    ChppPf *p = chpp_pf_start("x-dma-any-target=on", NULL);
    ChppDev *vf;
    int i;

    chpp_pf_vfs_set(p, 1);
    vf = chpp_vf_handle(p, 1);
    vf_flush_into_pf_config(p, vf);
    for (i = 0; i < 100 && (chpp_pf_cfg_rd(p, 0, SRIOV_CTRL) &
                            PCI_SRIOV_CTRL_VFE); i++) {
        qtest_clock_step(p->d->qts, 100000);
    }
    g_assert_cmphex(chpp_pf_cfg_rd(p, 0, SRIOV_CTRL) & PCI_SRIOV_CTRL_VFE,
                    ==, 0);
    chpp_vf_free(vf);
    /* QEMU and the PF live on, and VFs come back. */
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_vfs_set(p, 2);
    vf = p->vf[2] = chpp_vf_handle(p, 2);
    chpp_init_hca(vf);
    g_assert_cmphex(chpp_cmd(vf, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_stop(p);
}

/*
 * An MSI-X message is a write the driver aims too: a VF vector pointed at
 * the PF's SR-IOV control would clear VF Enable from the VF's own event.
 */
static void test_msix_into_pf_config(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    uint64_t entry, addr = chpp_ecam(CHPP_TEST_DEVFN, 0) + SRIOV_CTRL;
    ChppDev *vf;

    chpp_pf_vfs_set(p, 1);
    vf = p->vf[1] = chpp_vf_handle(p, 1);
    chpp_init_hca(vf);
    chpp_create_eq(vf, 0, 64, 0, true);
    g_assert_cmphex(chpp_map_eq(vf, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    entry = vf->pdev->msix_table_off;
    qpci_io_writel(vf->pdev, vf->bar0, entry + PCI_MSIX_ENTRY_LOWER_ADDR,
                   addr);
    qpci_io_writel(vf->pdev, vf->bar0, entry + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(vf->pdev, vf->bar0, entry + PCI_MSIX_ENTRY_DATA, 0);
    chpp_msix_mask(vf, 0, false);

    chpp_cmd_post(vf, CHPP_CMD_NOP, 0, 0, 0, true, 7);
    g_assert_cmphex(chpp_cmd_wait(vf, NULL), ==, CHPP_STAT_OK);
    qtest_clock_step(vf->qts, 1000000);
    g_assert_cmphex(chpp_pf_cfg_rd(p, 0, SRIOV_CTRL) & PCI_SRIOV_CTRL_VFE,
                    ==, PCI_SRIOV_CTRL_VFE);
    g_assert_cmpuint(chpp_counter(vf, CHPP_CNT_DMA_REFUSED), ==, 1);
    g_assert_cmpuint(chpp_counter(vf, CHPP_CNT_EVENTS), ==, 1);
    g_assert_cmpuint(chpp_counter(vf, CHPP_CNT_IRQS), ==, 0);
    g_assert_cmphex(chpp_cmd(vf, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_stop(p);
}

/* A physical region @idx of @len bytes at @addr, local write. */
static uint32_t phys_mr(ChppDev *d, uint32_t idx, uint64_t addr, uint64_t len)
{
    uint32_t key = idx << CHPP_KEY_INDEX_SHIFT | 0x11;
    struct chpp_mpt_context mr = {
        .flags = cpu_to_le32(CHPP_MPT_PHYS | CHPP_MPT_LOCAL_WRITE),
        .key = cpu_to_le32(key),
        .pd = cpu_to_le32(PD),
        .start = cpu_to_le64(addr),
        .length = cpu_to_le64(len),
    };

    g_assert_cmphex(chpp_sw2hw_mpt(d, idx, &mr), ==, CHPP_STAT_OK);
    return key;
}

/*
 * The engine's timer (engine-delay-ns) runs the responder like its bottom
 * half does, behind the device's re-entrancy guard: a receive scattered
 * onto the device's own reset register (allowed here only by
 * x-dma-any-target) must not reset the device from inside the engine.
 */
static void test_timer_guard(void)
{
    ChppDev *d = chpp_start("engine-delay-ns=100000,x-dma-any-target=on",
                            NULL);
    uint64_t grh = guest_alloc(&d->qs->alloc, 4096);
    ChppTQp q = { .qpn = 0 };
    ChppTCq cq = { .cqn = 0, .nent = 64, .uar = UAR };
    ChppTSge sge[2];
    struct chpp_cqe cqe;
    static const uint8_t reset[4] = { CHPP_RESET_MAGIC };

    chpp_init_hca(d);
    chpp_create_eq(d, 0, 64, 0, false);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    chpp_wr(d, CHPP_REG_SCRATCH, 0x5ca1ab1e);
    cq.ring = chpp_create_cq(d, 0, 64, 0, UAR);
    ud_qp(d, &q, 0);
    sge[0] = (ChppTSge) { grh, CHPP_UD_GRH_SIZE, phys_mr(d, 1, grh, 4096) };
    sge[1] = (ChppTSge) { d->bar0.addr + CHPP_REG_RESET, 4,
                          phys_mr(d, 2, d->bar0.addr, 4096) };
    chpp_post_recv_sges(d, &q, 0x77, sge, 2);
    ud_send_self(d, &q, reset, sizeof(reset), 0x78);

    chpp_poll_cq(d, &cq, &cqe);
    g_assert_cmpuint(le64_to_cpu(cqe.wr_id), ==, 0x78);
    chpp_poll_cq(d, &cq, &cqe);
    g_assert_cmpuint(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, !=, CHPP_WC_SUCCESS);
    /* Not reset: the scratch register and the HCA state survived. */
    g_assert_cmphex(chpp_rd(d, CHPP_REG_SCRATCH), ==, 0x5ca1ab1e);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DMA_ERRORS), >=, 1);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_PORT, 0, 1, d->mbox_out), ==,
                    CHPP_STAT_OK);
    chpp_stop(d);
}

/*
 * The PF's own FLR from inside its command: the second EQE of an EQ in
 * the PF's config page puts out_param_lo (an out mailbox address whose
 * low 16 bits are 0x8000) on DEVCTL, Initiate FLR.  The PF and its VFs are
 * reset while chpp_cmd_execute() still runs; QEMU goes on.
 */
static void test_flr_under_command(void)
{
    ChppPf *p = chpp_pf_start("x-dma-any-target=on", NULL);
    ChppDev *d = p->d;
    uint64_t buf = guest_alloc(&d->qs->alloc, 0x20000);
    uint64_t mbox = ((buf + 0xffff) & ~0xffffull) | 0x8000;
    int i;

    chpp_pf_vfs_set(p, 2);
    p->vf[1] = chpp_vf_handle(p, 1);
    chpp_init_hca(p->vf[1]);
    chpp_init_hca(d);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, chpp_ecam(CHPP_TEST_DEVFN, 0) + 0x40,
                                  4, 0, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 1);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_QUERY_FW, 0, 0, mbox, true, 2);
    for (i = 0; i < 100 && chpp_pf_cfg_rd(p, 1, PCI_VENDOR_ID) !=
                           0xffffffff; i++) {
        qtest_clock_step(d->qts, 100000);
    }
    /*
     * FLR: the VFs are gone (QEMU 7.2's pcie_sriov leaves VF Enable set
     * in config space meanwhile) and the PF is back to its reset state,
     * its HCR cleared.
     */
    g_assert_cmphex(chpp_pf_cfg_rd(p, 1, PCI_VENDOR_ID), ==, 0xffffffff);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL), ==, 0);
    chpp_vf_free(p->vf[1]);
    p->vf[1] = NULL;
    qpci_device_enable(d->pdev);
    d->toggle = false;
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_FW, 0, 0, d->mbox_out), ==,
                    CHPP_STAT_OK);
    chpp_init_hca(d);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_stop(p);
}

/* ---- every address kind at every forbidden target ----------------------- */

typedef struct Target {
    const char *name;
    uint64_t (*addr)(ChppPf *p);
} Target;

/* Page aligned as mailboxes and MTT pages are; holds PCI_COMMAND. */
static uint64_t t_ecam(ChppPf *p)
{
    return chpp_ecam(CHPP_TEST_DEVFN, 0);
}

static uint64_t t_own_bar(ChppPf *p)
{
    return p->d->bar0.addr;
}

static uint64_t t_vf_bar(ChppPf *p)
{
    return CHPP_TEST_VF_BAR0;
}

static uint64_t t_msi(ChppPf *p)
{
    return MSI_WINDOW;
}

static const Target targets[] = {
    { "ecam", t_ecam },
    { "own-bar", t_own_bar },
    { "vf-bar", t_vf_bar },
    { "msi", t_msi },
};

/* What a stray write would have changed, read back afterwards. */
typedef struct Witness {
    uint32_t sriov_ctrl;
    uint32_t pf_scratch;
    uint32_t vf_scratch;
    uint32_t command;
} Witness;

static void witness(ChppPf *p, Witness *w)
{
    w->sriov_ctrl = chpp_pf_cfg_rd(p, 0, SRIOV_CTRL);
    w->command = chpp_pf_cfg_rd(p, 0, PCI_COMMAND);
    w->pf_scratch = chpp_rd(p->d, CHPP_REG_SCRATCH);
    w->vf_scratch = chpp_rd(p->vf[1], CHPP_REG_SCRATCH);
}

static ChppPf *class_start(void)
{
    ChppPf *p = chpp_pf_start("num-qps=16,num-cqs=16", NULL);

    chpp_pf_vfs_set(p, 1);
    p->vf[1] = chpp_vf_handle(p, 1);
    chpp_init_hca(p->d);
    chpp_init_hca(p->vf[1]);
    chpp_create_eq(p->d, 0, 64, 0, false);
    chpp_wr(p->d, CHPP_REG_SCRATCH, 0x5ca1ab1e);
    chpp_wr(p->vf[1], CHPP_REG_SCRATCH, 0x0ddba11);
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    return p;
}

/* One refused access more than before, the witnesses unchanged. */
static void class_check(ChppPf *p, const Witness *before, uint32_t refused,
                        const char *what, const Target *t)
{
    Witness after;

    if (chpp_counter(p->d, CHPP_CNT_DMA_REFUSED) <= refused) {
        g_error("%s at %s: no refused DMA", what, t->name);
    }
    witness(p, &after);
    g_assert_cmphex(after.sriov_ctrl, ==, before->sriov_ctrl);
    g_assert_cmphex(after.command, ==, before->command);
    g_assert_cmphex(after.pf_scratch, ==, before->pf_scratch);
    g_assert_cmphex(after.vf_scratch, ==, before->vf_scratch);
}

static void test_class(const void *opaque)
{
    const Target *t = opaque;
    ChppPf *p = class_start();
    ChppDev *d = p->d;
    uint64_t target = t->addr(p);
    uint64_t mtt = target | CHPP_MTT_VALID;
    uint32_t refused;
    Witness w;
    struct chpp_cq_context cq = {
        .log_page_size = 12,
        .num_entries = cpu_to_le32(64),
        .uar = cpu_to_le16(UAR),
    };
    struct chpp_eq_context eqc;
    struct chpp_qp_context qc;
    ChppTSge sge = { .addr = target, .len = 4096 };
    ChppTQp q1 = { .qpn = 1 }, q2 = { .qpn = 2 }, q3 = { .qpn = 3 };
    ChppTCq tcq = { .cqn = 2, .nent = 64, .uar = UAR };
    struct chpp_cqe cqe;

    witness(p, &w);

    /* Out mailbox: the command fails with DMA_ERR. */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_FW, 0, 0, target), ==,
                    CHPP_STAT_DMA_ERR);
    class_check(p, &w, refused, "out mailbox", t);

    /* In mailbox: reads have side effects too (clear-on-read). */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_SW2HW_CQ, target, 5, 0), ==,
                    CHPP_STAT_DMA_ERR);
    class_check(p, &w, refused, "in mailbox", t);

    /* EQ ring: the first EQE stops the EQ. */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    g_assert_cmphex(chpp_sw2hw_eq(d, 1, target, 8, 0, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_DOORBELL_ERROR,
                                false), ==, CHPP_STAT_OK);
    chpp_sq_db(d, UAR, 15, 1);            /* QP 15 is in RESET: refused */
    qtest_clock_step(d->qts, 1000000);
    g_assert_cmphex(chpp_query_eq(d, 1, &eqc), ==, CHPP_STAT_OK);
    g_assert_cmpuint(eqc.state, ==, CHPP_EQ_STATE_ERROR);
    class_check(p, &w, refused, "EQ ring", t);

    /* CQ ring through its MTT entry: the flush's CQE stops the CQ. */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    cq.mtt_base = cpu_to_le32(d->next_mtt);
    chpp_write_mtt(d, d->next_mtt++, &mtt, 1);
    g_assert_cmphex(chpp_sw2hw_cq(d, 1, &cq), ==, CHPP_STAT_OK);
    ud_qp(d, &q1, 1);
    chpp_rq_db(d, UAR, 1, 1);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_2ERR_QP, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    qtest_clock_step(d->qts, 1000000);
    g_assert_cmphex(chpp_query_cq(d, 1, &cq), ==, CHPP_STAT_OK);
    g_assert_cmpuint(cq.state, ==, CHPP_RES_ERROR);
    class_check(p, &w, refused, "CQ ring", t);

    /* RQ ring through its MTT entry: its receive WQE cannot be read. */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    tcq.ring = chpp_create_cq(d, 2, 64, 0, UAR);
    ud_qp(d, &q2, 2);
    g_assert_cmphex(chpp_query_qp(d, 2, &qc), ==, CHPP_STAT_OK);
    chpp_write_mtt(d, le32_to_cpu(qc.rq_mtt_base), &mtt, 1);
    chpp_rq_db(d, UAR, 2, 1);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_2ERR_QP, 0, 2, 0), ==,
                    CHPP_STAT_OK);
    qtest_clock_step(d->qts, 1000000);
    class_check(p, &w, refused, "RQ ring", t);

    /* Data: a physical region over the target takes a UD receive. */
    refused = chpp_counter(d, CHPP_CNT_DMA_REFUSED);
    sge.key = phys_mr(d, 1, target, 4096);
    ud_qp(d, &q3, 2);
    chpp_post_recvs(d, &q3, 0x77, &sge, 1, 1);
    ud_send_self(d, &q3, "refused", 7, 0x78);
    /* The flush of QP 2 left one error CQE first. */
    chpp_poll_cq(d, &tcq, &cqe);
    g_assert_cmpuint(le32_to_cpu(cqe.qpn), ==, 2);
    chpp_poll_cq(d, &tcq, &cqe);
    if (le32_to_cpu(cqe.qpn) == 3 && (cqe.flags & CHPP_CQE_FLAG_SEND)) {
        chpp_poll_cq(d, &tcq, &cqe);
    }
    g_assert_cmpuint(le64_to_cpu(cqe.wr_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, !=, CHPP_WC_SUCCESS);
    class_check(p, &w, refused, "data", t);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    chpp_pf_stop(p);
}

int main(int argc, char **argv)
{
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/dma-target/vf-eq-in-pf-config",
                   test_vf_eq_in_pf_config);
    qtest_add_func("/chpp-hca/dma-target/msix-into-pf-config",
                   test_msix_into_pf_config);
    qtest_add_func("/chpp-hca/dma-target/timer-guard", test_timer_guard);
    qtest_add_func("/chpp-hca/dma-target/teardown-under-dma",
                   test_teardown_under_dma);
    qtest_add_func("/chpp-hca/dma-target/flr-under-command",
                   test_flr_under_command);
    for (i = 0; i < ARRAY_SIZE(targets); i++) {
        g_autofree char *path = g_strdup_printf("/chpp-hca/dma-target/"
                                                "class/%s", targets[i].name);

        qtest_add_data_func(path, &targets[i], test_class);
    }
    return g_test_run();
}
