/*
 * chpp-hca SR-IOV tests: the capability (reached through q35's ECAM, as
 * libqos config accessors stop at 256 bytes), enabling and disabling VFs,
 * VF registers and commands, quotas, traffic between functions, isolation,
 * VF FLR, and the doorbell FIFO arbitration shares.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define SRIOV       CHPP_PCI_EXT_CAP_SRIOV

static uint32_t cfg_rd(ChppPf *p, int fn, int off)
{
    return chpp_pf_cfg_rd(p, fn, off);
}

/* ---- tests -------------------------------------------------------------- */

static void test_capability(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);

    g_assert_cmphex(cfg_rd(p, 0, CHPP_PCI_EXT_CAP_ARI) & 0xffff, ==,
                    PCI_EXT_CAP_ID_ARI);
    g_assert_cmphex(cfg_rd(p, 0, SRIOV) & 0xffff, ==, PCI_EXT_CAP_ID_SRIOV);
    g_assert_cmphex(cfg_rd(p, 0, CHPP_PCI_EXT_CAP_ACS) & 0xffff, ==,
                    PCI_EXT_CAP_ID_ACS);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_TOTAL_VF) & 0xffff, ==,
                     CHPP_MAX_VFS);
    /* No VF Migration, so InitialVFs must equal TotalVFs (Linux checks). */
    g_assert_cmphex(cfg_rd(p, 0, SRIOV + PCI_SRIOV_CAP) & PCI_SRIOV_CAP_VFM,
                    ==, 0);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_INITIAL_VF) & 0xffff, ==,
                     CHPP_MAX_VFS);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_VF_OFFSET) & 0xffff, ==,
                     CHPP_VF_OFFSET);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_VF_STRIDE) & 0xffff, ==,
                     CHPP_VF_STRIDE);
    g_assert_cmphex(cfg_rd(p, 0, SRIOV + PCI_SRIOV_VF_DID) & 0xffff, ==,
                    CHPP_PCI_DEVICE_ID_VF);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_NUM_VF) & 0xffff, ==, 0);
    chpp_pf_stop(p);

    p = chpp_pf_start("sriov-max-vfs=3", NULL);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_TOTAL_VF) & 0xffff, ==, 3);
    g_assert_cmpuint(cfg_rd(p, 0, SRIOV + PCI_SRIOV_INITIAL_VF) & 0xffff, ==,
                     3);
    chpp_pf_stop(p);

    /* sriov-max-vfs=0: no capability at all. */
    p = chpp_pf_start("sriov-max-vfs=0", NULL);
    g_assert_cmphex(cfg_rd(p, 0, SRIOV), ==, 0);
    chpp_pf_stop(p);
}

static void test_enable_disable(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    int round, i;

    for (round = 0; round < 3; round++) {
        int n = round == 1 ? CHPP_MAX_VFS : 2;

        chpp_pf_vfs_set(p, n);
        for (i = 1; i <= n; i++) {
            /* IDs read as all-ones; the rest of the function is there. */
            g_assert_cmphex(cfg_rd(p, i, PCI_VENDOR_ID), ==, 0xffffffff);
            g_assert_cmphex(cfg_rd(p, i, CHPP_PCI_CAP_EXP) & 0xff, ==,
                            PCI_CAP_ID_EXP);
            g_assert_cmphex(chpp_rd(p->vf[i], CHPP_REG_MAGIC), ==,
                            CHPP_MAGIC);
            g_assert_cmpuint(chpp_rd(p->vf[i], CHPP_REG_FUNC), ==, i);
            g_assert(chpp_rd(p->vf[i], CHPP_REG_CAPS) & CHPP_CAP_VF);
            g_assert_cmpuint(chpp_rd(p->vf[i], CHPP_REG_MSIX_INFO), ==,
                             CHPP_VF_DEFAULT_MSIX);
        }
        chpp_pf_vfs_set(p, 0);
        /* The VFs are gone: no config space, no registers. */
        g_assert_cmphex(cfg_rd(p, 1, CHPP_PCI_CAP_EXP), ==, 0xffffffff);
        g_assert_cmphex(qtest_readl(p->d->qts,
                                    CHPP_TEST_VF_BAR0 + CHPP_REG_MAGIC), !=,
                        CHPP_MAGIC);
        g_assert_cmpuint(chpp_rd(p->d, CHPP_REG_FUNC), ==, 0);
    }
    chpp_pf_stop(p);
}

/*
 * 64-bit VF BARs above 4 GiB, where a guest's firmware or kernel puts
 * them: each VF answers at its full address, and nothing answers at the
 * low 32 bits of it.  QEMU 10.0.2 realizes the VFs before the PF declares
 * the VF BARs' type, and decoded them as 32-bit BARs (fixed by
 * scripts/lib/qemu10-hooks.patch, docs/build.md).
 */
#define VF_BAR_HIGH     0x1ull

/* Whether the flat view of the system memory has @name at @addr. */
static bool mapped_at(QTestState *qts, uint64_t addr, const char *name)
{
    g_autofree char *mtree = qtest_hmp(qts, "info mtree -f");
    g_autofree char *start = g_strdup_printf("%016" PRIx64 "-", addr);
    const char *line = strstr(mtree, start);
    const char *eol = line ? strchr(line, '\n') : NULL;
    const char *at = line ? strstr(line, name) : NULL;

    return at && (!eol || at < eol);
}

static void test_vf_bars_above_4g(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    QTestState *qts = p->d->qts;
    int i;

    qtest_writel(qts, chpp_ecam(CHPP_TEST_DEVFN, SRIOV + PCI_SRIOV_BAR + 4),
                 VF_BAR_HIGH);
    qtest_writel(qts, chpp_ecam(CHPP_TEST_DEVFN, SRIOV + PCI_SRIOV_BAR + 12),
                 VF_BAR_HIGH);
    chpp_pf_vfs_set(p, 2);
    for (i = 1; i <= 2; i++) {
        /* libqos's PC bus takes 32-bit addresses: qtest's own accessors. */
        uint64_t low = p->vf[i]->bar0.addr;
        uint64_t regs = (VF_BAR_HIGH << 32) + low;
        uint64_t uar = (VF_BAR_HIGH << 32) + p->vf[i]->bar2.addr;

        g_assert_cmphex(qtest_readl(qts, regs + CHPP_REG_MAGIC), ==,
                        CHPP_MAGIC);
        g_assert_cmpuint(qtest_readl(qts, regs + CHPP_REG_FUNC), ==, i);
        qtest_writel(qts, regs + CHPP_REG_SCRATCH, 0x5a5a0000u + i);
        g_assert_cmphex(qtest_readl(qts, regs + CHPP_REG_SCRATCH), ==,
                        0x5a5a0000u + i);
        g_assert_cmphex(qtest_readl(qts, low + CHPP_REG_MAGIC), !=,
                        CHPP_MAGIC);
        /* The 64-bit BAR2 too: its UAR pages are where the BAR says. */
        g_assert(mapped_at(qts, uar, "chpp-hca-uar"));
    }
    chpp_pf_stop(p);
}

/* VmRSS of the QEMU under test, in KiB. */
static uint64_t qemu_rss_kib(void)
{
    int pid = chpp_find_qemu_pid(0);
    g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree char *text = NULL;
    char *p;

    g_assert(pid > 0 && g_file_get_contents(path, &text, NULL, NULL));
    p = strstr(text, "VmRSS:");
    g_assert(p);
    return g_ascii_strtoull(p + 6, NULL, 10);
}

/*
 * Run QEMU's pending RCU callbacks: an unplugged VF is freed by one (its
 * memory regions leave the flat views there).  A device_add that fails
 * drains them before it returns (qmp_device_add).
 */
static void drain_rcu(ChppPf *p)
{
    QDict *rsp = qtest_qmp(p->d->qts, "{ 'execute': 'device_add', "
                           "'arguments': { 'driver': 'chpp-hca-vf' } }");

    g_assert(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
}

/* Set VF Enable with every VF, then clear it, @n times. */
static void vf_enable_cycles(ChppPf *p, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        chpp_pf_cfg_wr16(p, 0, SRIOV + PCI_SRIOV_NUM_VF, CHPP_MAX_VFS);
        chpp_pf_cfg_wr16(p, 0, SRIOV + PCI_SRIOV_CTRL,
                         PCI_SRIOV_CTRL_VFE | PCI_SRIOV_CTRL_MSE);
        g_assert_cmphex(cfg_rd(p, CHPP_MAX_VFS, CHPP_PCI_CAP_EXP) & 0xff, ==,
                        PCI_CAP_ID_EXP);
        chpp_pf_cfg_wr16(p, 0, SRIOV + PCI_SRIOV_CTRL, 0);
        g_assert_cmphex(cfg_rd(p, CHPP_MAX_VFS, CHPP_PCI_CAP_EXP), ==,
                        0xffffffff);
        drain_rcu(p);
    }
}

/*
 * A guest toggling VF Enable must not grow QEMU.  QEMU 7.2's pcie_sriov
 * kept pci_new()'s reference to every VF it unplugged (fixed in
 * scripts/lib/qemu-hooks.patch), and BAR0's register subregion referenced its
 * own VF: either leaked the VF objects, about 130 KiB per cycle of 7 VFs
 * (40 MiB over this test).  A leaked VF is unparented, so the QOM tree
 * cannot count it: RSS does, after a warm-up, with the RCU callbacks that
 * free unplugged VFs drained after every cycle (without that, RSS swings
 * by tens of MiB with how far the RCU thread lags).
 */
static void test_enable_cycles_bounded(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    uint64_t before, after;

    vf_enable_cycles(p, 20);
    before = qemu_rss_kib();
    vf_enable_cycles(p, 300);
    after = qemu_rss_kib();
    g_test_message("QEMU RSS %" PRIu64 " KiB -> %" PRIu64 " KiB over 300 "
                   "cycles of %u VFs", before, after, CHPP_MAX_VFS);
    g_assert_cmpuint(after, <, before + 16 * 1024);
    chpp_pf_stop(p);
}

static void set_vf_res(ChppPf *p, int fn, uint32_t qps, uint8_t weight,
                       uint8_t prio, uint8_t status)
{
    struct chpp_vf_res r = {
        .num_qps = cpu_to_le32(qps), .num_cqs = cpu_to_le32(8),
        .num_eqs = cpu_to_le32(4), .num_mpts = cpu_to_le32(64),
        .num_pds = cpu_to_le32(16), .num_mtts = cpu_to_le32(4096),
        .msix_vectors = cpu_to_le32(4), .weight = weight, .priority = prio,
    };

    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in, fn,
                             0), ==, status);
}

/* The PF's own resources, each a different number. */
#define PF_RES  "num-qps=16,num-cqs=12,num-eqs=6,num-mpts=80,num-pds=20," \
                "num-mtts=5000,msix-vectors=6"

static void vf_res_query(ChppPf *p, int fn, struct chpp_vf_res *r)
{
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_QUERY_VF_RES, 0, fn,
                             p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->d->mbox_out, r, sizeof(*r));
}

/*
 * A VF never gets more of a resource than the PF itself has: SET_VF_RES
 * takes 1..the PF's value of each count and refuses one more with
 * BAD_PARAM, so the VFs' tables are bounded by sriov-max-vfs times the
 * PF's (docs/sriov.md).  The defaults are within it too.
 */
static void test_vf_quotas_bounded_by_pf(void)
{
    static const uint32_t pf[] = { 16, 12, 6, 80, 20, 5000, 6 };
    ChppPf *p = chpp_pf_start(PF_RES, NULL);
    struct chpp_vf_res r, q;
    uint32_t *cnt = &r.num_qps;
    unsigned i;

    QEMU_BUILD_BUG_ON(offsetof(struct chpp_vf_res, msix_vectors) !=
                      6 * sizeof(uint32_t));
    /* The PF's own counts (QUERY_VF_RES of function 0): all accepted. */
    vf_res_query(p, 0, &r);
    for (i = 0; i < ARRAY_SIZE(pf); i++) {
        g_assert_cmpuint(le32_to_cpu(cnt[i]), ==, pf[i]);
    }
    r.weight = 1;
    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in,
                             CHPP_MAX_VFS, 0), ==, CHPP_STAT_OK);
    for (i = 0; i < ARRAY_SIZE(pf); i++) {
        vf_res_query(p, 0, &r);
        r.weight = 1;
        cnt[i] = cpu_to_le32(pf[i] + 1);
        qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
        chpp_assert_cmd_fails(p->d, CHPP_STAT_BAD_PARAM, CHPP_CMD_SET_VF_RES,
                              p->d->mbox_in, 1, 0);
    }
    /* Refused: VF 1 kept its defaults; VF 7 has the PF's counts. */
    vf_res_query(p, 1, &q);
    g_assert_cmpuint(le32_to_cpu(q.num_qps), ==, CHPP_VF_DEFAULT_QPS);
    g_assert_cmpuint(le32_to_cpu(q.num_mtts), ==, CHPP_VF_DEFAULT_MTTS);
    vf_res_query(p, CHPP_MAX_VFS, &q);
    g_assert_cmpuint(le32_to_cpu(q.num_mtts), ==, 5000);
    chpp_pf_vfs_set(p, CHPP_MAX_VFS);
    g_assert_cmpuint(chpp_rd(p->vf[CHPP_MAX_VFS], CHPP_REG_MSIX_INFO), ==, 6);
    chpp_pf_stop(p);

    /* A PF smaller than the FPGA's split gives its VFs its own counts. */
    p = chpp_pf_start("num-qps=2,msix-vectors=2", NULL);
    vf_res_query(p, 1, &q);
    g_assert_cmpuint(le32_to_cpu(q.num_qps), ==, 2);
    g_assert_cmpuint(le32_to_cpu(q.msix_vectors), ==, 2);
    g_assert_cmpuint(le32_to_cpu(q.num_cqs), ==, CHPP_VF_DEFAULT_CQS);
    chpp_pf_vfs_set(p, 1);
    g_assert_cmpuint(chpp_rd(p->vf[1], CHPP_REG_MSIX_INFO), ==, 2);
    chpp_pf_stop(p);
}

static void test_vf_commands_and_quotas(void)
{
    ChppPf *p = chpp_pf_start("num-qps=16", NULL);
    struct chpp_dev_cap cap;
    struct chpp_vf_res r;

    chpp_init_hca(p->d);
    set_vf_res(p, 2, 10, 1, 0, CHPP_STAT_OK);
    chpp_assert_cmd_fails(p->d, CHPP_STAT_BAD_INDEX, CHPP_CMD_SET_VF_RES,
                          p->d->mbox_in, 8, 0);
    chpp_pf_vfs_set(p, 2);
    /* Quotas change only while the VFs are disabled. */
    set_vf_res(p, 2, 12, 1, 0, CHPP_STAT_RESOURCE_BUSY);
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_QUERY_VF_RES, 0, 2,
                             p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->d->mbox_out, &r, sizeof(r));
    g_assert_cmpuint(le32_to_cpu(r.num_qps), ==, 10);

    g_assert_cmphex(chpp_cmd(p->vf[2], CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                             p->vf[2]->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->vf[2]->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le16_to_cpu(cap.func), ==, 2);
    g_assert(le32_to_cpu(cap.flags) & CHPP_DEV_CAP_FLAG_VF);
    g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==, 10);
    g_assert_cmpuint(le32_to_cpu(cap.num_uar_pages), ==, CHPP_VF_UAR_PAGES);
    g_assert_cmphex(chpp_cmd(p->vf[1], CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                             p->vf[1]->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->vf[1]->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==, CHPP_VF_DEFAULT_QPS);

    /* PF-only commands are refused to a VF; a VF QP beyond its quota. */
    chpp_init_hca(p->vf[1]);
    /* Each function has its own LID and port GUID: node and function. */
    {
        struct chpp_port_info pi;

        g_assert_cmphex(chpp_cmd(p->vf[1], CHPP_CMD_QUERY_PORT, 0, 1,
                                 p->vf[1]->mbox_out), ==, CHPP_STAT_OK);
        qtest_memread(p->d->qts, p->vf[1]->mbox_out, &pi, sizeof(pi));
        g_assert_cmpuint(le16_to_cpu(pi.lid), ==,
                         CHPP_LID(le16_to_cpu(cap.node_id), 1));
        g_assert_cmpuint(CHPP_LID_FN(le16_to_cpu(pi.lid)), ==, 1);
        g_assert_cmphex(le64_to_cpu(pi.port_guid), ==,
                        CHPP_PORT_GUID(le16_to_cpu(cap.node_id), 1));
    }
    chpp_assert_cmd_fails(p->vf[1], CHPP_STAT_PF_ONLY, CHPP_CMD_SET_VF_RES,
                          p->vf[1]->mbox_in, 1, 0);
    chpp_assert_cmd_fails(p->vf[1], CHPP_STAT_PF_ONLY,
                          CHPP_CMD_QUERY_VF_RES, 0, 0, p->vf[1]->mbox_out);
    chpp_assert_cmd_fails(p->vf[1], CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_QP,
                          0, CHPP_VF_DEFAULT_QPS, p->vf[1]->mbox_out);
    chpp_pf_stop(p);
}

/* PUT from @a's QP to @b's buffer, and GET it back; bytes verified. */
static void put_get(ChppNode *a, ChppNode *b, uint8_t seed)
{
    uint64_t ab = guest_alloc(&a->d->qs->alloc, 16384);
    uint64_t bb = guest_alloc(&b->d->qs->alloc, 16384);
    uint32_t ak = chpp_create_mr(a->d, a->next_mr++, CHPP_NODE_PD, ab, 16384,
                                 CHPP_MPT_LOCAL_WRITE |
                                 CHPP_MPT_REMOTE_READ |
                                 CHPP_MPT_REMOTE_WRITE);
    uint32_t bk = chpp_create_mr(b->d, b->next_mr++, CHPP_NODE_PD, bb, 16384,
                                 CHPP_MPT_LOCAL_WRITE |
                                 CHPP_MPT_REMOTE_READ |
                                 CHPP_MPT_REMOTE_WRITE);
    struct chpp_cqe cqe;
    ChppWqeBuf *w;

    chpp_fill(a->d, ab, 8192, seed);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, bb, bk);
    chpp_wqe_sge(w, ab, 8192, ak);
    chpp_post_send(a->d, &a->qp, w, true);
    chpp_poll_cq(a->d, &a->cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, 0);
    chpp_check(b->d, bb, 8192, seed);

    w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_raddr(w, bb, bk);
    chpp_wqe_sge(w, ab + 8192, 8192, ak);
    chpp_post_send(a->d, &a->qp, w, true);
    chpp_poll_cq(a->d, &a->cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, 0);
    g_assert_cmpuint(cqe.opcode, ==, CHPP_CQE_OP_RDMA_READ);
    chpp_check(a->d, ab + 8192, 8192, seed);
}

static void test_traffic_between_functions(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppNode pf, v1, v2;

    chpp_pf_vfs_set(p, 2);
    chpp_node_setup(&pf, p->d, 0, 0);
    chpp_node_setup(&v1, p->vf[1], 0, 1);
    chpp_node_setup(&v2, p->vf[2], 0, 2);
    chpp_node_qp(&v1, 0, 0x11, 4, 8);
    chpp_node_qp(&v2, 0, 0x22, 4, 8);
    chpp_node_connect(&v1, &v2, 14, 3);
    chpp_node_connect(&v2, &v1, 14, 3);
    put_get(&v1, &v2, 1);
    put_get(&v2, &v1, 2);

    /* VF1 <-> PF on other QPs. */
    chpp_node_qp(&v1, 1, 0x13, 4, 8);
    chpp_node_qp(&pf, 3, 0x31, 4, 8);
    chpp_node_connect(&v1, &pf, 14, 3);
    chpp_node_connect(&pf, &v1, 14, 3);
    put_get(&v1, &pf, 3);
    put_get(&pf, &v1, 4);
    g_assert_cmpuint(chpp_counter(p->d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    chpp_pf_stop(p);
}

static void test_isolation(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppNode pf, v1, v2;
    uint64_t buf = guest_alloc(&p->d->qs->alloc, 4096);
    uint32_t pf_key;
    struct chpp_cqe cqe;
    ChppWqeBuf *w;

    chpp_pf_vfs_set(p, 2);
    chpp_node_setup(&pf, p->d, 0, 0);
    chpp_node_setup(&v1, p->vf[1], 0, 1);
    chpp_node_setup(&v2, p->vf[2], 0, 2);
    pf_key = chpp_create_mr(p->d, 0, CHPP_NODE_PD, buf, 4096,
                            CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_WRITE);
    /* PF QP 0 is connected to VF2 QP 0. */
    chpp_node_qp(&pf, 0, 0x30, 4, 8);
    chpp_node_qp(&v2, 0, 0x20, 4, 8);
    chpp_node_connect(&pf, &v2, 14, 3);
    chpp_node_connect(&v2, &pf, 14, 3);
    /* VF1 aims a QP at it anyway, with the right magic and the PF's key. */
    chpp_node_qp(&v1, 0, 0x10, 4, 8);
    pf.qp.qpn = 0;
    chpp_node_connect(&v1, &pf, 10, 1);

    /* The PF's lkey means nothing in VF1's own MR table. */
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, buf, pf_key);
    chpp_wqe_sge(w, buf, 16, pf_key);
    chpp_post_send(v1.d, &v1.qp, w, true);
    chpp_poll_cq(v1.d, &v1.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_LOC_PROT_ERR);
    g_assert_cmpuint(cqe.vendor_err, ==, CHPP_VERR_BAD_LKEY);
    chpp_pf_stop(p);

    /* Packets into another connection are dropped: the sender times out. */
    p = chpp_pf_start(NULL, NULL);
    chpp_pf_vfs_set(p, 2);
    chpp_node_setup(&pf, p->d, 0, 0);
    chpp_node_setup(&v1, p->vf[1], 0, 1);
    chpp_node_setup(&v2, p->vf[2], 0, 2);
    buf = guest_alloc(&p->d->qs->alloc, 4096);
    pf_key = chpp_create_mr(p->d, 0, CHPP_NODE_PD, buf, 4096,
                            CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_WRITE);
    chpp_node_qp(&pf, 0, 0x30, 4, 8);
    chpp_node_qp(&v2, 0, 0x20, 4, 8);
    chpp_node_connect(&pf, &v2, 14, 3);
    chpp_node_qp(&v1, 0, 0x10, 4, 8);
    chpp_node_connect(&v1, &pf, 10, 1);
    {
        uint64_t vb = guest_alloc(&p->d->qs->alloc, 4096);
        uint32_t vk = chpp_create_mr(v1.d, 0, CHPP_NODE_PD, vb, 4096,
                                     CHPP_MPT_LOCAL_WRITE);

        qtest_memset(p->d->qts, buf, 0x77, 16);
        w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 2, 0);
        chpp_wqe_raddr(w, buf, pf_key);
        chpp_wqe_sge(w, vb, 16, vk);
        chpp_post_send(v1.d, &v1.qp, w, true);
        chpp_poll_cq(v1.d, &v1.cq[0], &cqe);
        g_assert_cmpuint(cqe.status, ==, CHPP_WC_RETRY_EXC_ERR);
        /* The PF's memory was not touched. */
        g_assert_cmphex(qtest_readl(p->d->qts, buf), ==, 0x77777777);
    }
    g_assert_cmpuint(chpp_counter(p->d, CHPP_CNT_PKTS_DROPPED), >=, 1);

    /* A packet for a VF that is not enabled is dropped and counted. */
    v1.qp.qpn = 1;
    chpp_node_qp(&v1, 1, 0x10, 4, 8);
    {
        ChppNode ghost = { .id = 0, .func = 5, .qp = { .qpn = 0 } };

        chpp_node_connect(&v1, &ghost, 10, 1);
    }
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 3, 0);
    chpp_post_send(v1.d, &v1.qp, w, true);
    chpp_poll_cq(v1.d, &v1.cq[0], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(chpp_counter(p->vf[1], CHPP_CNT_PKTS_DROPPED), >=, 1);
    chpp_pf_stop(p);
}

static void test_vf_flr(void)
{
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppNode pf, v1;
    uint16_t devctl;
    int i;

    chpp_pf_vfs_set(p, 1);
    chpp_node_setup(&pf, p->d, 0, 0);
    chpp_node_setup(&v1, p->vf[1], 0, 1);
    chpp_node_qp(&v1, 0, 0x10, 4, 8);
    chpp_node_qp(&pf, 0, 0x30, 4, 8);
    chpp_node_connect(&v1, &pf, 14, 3);
    chpp_node_connect(&pf, &v1, 14, 3);
    put_get(&v1, &pf, 9);

    devctl = qpci_config_readw(p->vf[1]->pdev,
                               CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL);
    qpci_config_writew(p->vf[1]->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
    /* FLR cleared its command register, as on hardware. */
    g_assert_cmphex(qpci_config_readw(p->vf[1]->pdev, PCI_COMMAND), ==, 0);
    qpci_config_writew(p->vf[1]->pdev, PCI_COMMAND,
                       PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    /* The VF is back to reset values... */
    g_assert_cmphex(chpp_rd(p->vf[1], CHPP_REG_STATUS), ==, 0);
    g_assert_cmpuint(chpp_rd(p->vf[1], CHPP_REG_FUNC), ==, 1);
    /* ... and the PF was told, with the VF's number (by a bottom half). */
    for (i = 0; i < 256; i++) {
        struct chpp_eqe eqe;
        int w;

        chpp_read_eqe(p->d, pf.eq, i, &eqe);
        for (w = 0; w < 1000 && !(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER);
             w++) {
            qtest_clock_step(p->d->qts, 1000);
            chpp_read_eqe(p->d, pf.eq, i, &eqe);
        }
        if (!(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER)) {
            g_error("no VF_FLR event on the PF");
        }
        if (eqe.type == CHPP_EVENT_VF_FLR) {
            g_assert_cmpuint(le32_to_cpu(eqe.event.vf.vf), ==, 1);
            break;
        }
    }
    /* The VF works again after a new set-up. */
    p->vf[1]->toggle = true;
    chpp_vf_free(p->vf[1]);
    p->vf[1] = chpp_vf_handle(p, 1);
    chpp_node_setup(&v1, p->vf[1], 0, 1);
    g_assert(chpp_rd(p->vf[1], CHPP_REG_STATUS) & CHPP_STATUS_HCA_INIT);
    chpp_pf_stop(p);
}

/*
 * Two VFs keep their doorbell FIFOs busy (one WQE per doorbell) while the
 * engine serves one FIFO entry per period: the shares follow the
 * arbitration configuration.
 */
typedef struct ArbVf {
    ChppNode n;
    uint64_t buf;
    uint32_t key;
    uint32_t posted;
} ArbVf;

static uint32_t started(ChppPf *p, int fn)
{
    return chpp_counter(p->vf[fn], CHPP_CNT_WQES);
}

static void arb_run(ChppPf *p, ArbVf *v, uint32_t ticks, uint32_t served[3])
{
    uint32_t base[3], t;
    int fn;

    for (fn = 1; fn <= 2; fn++) {
        base[fn] = started(p, fn);
    }
    for (t = 0; t < ticks; t++) {
        for (fn = 1; fn <= 2; fn++) {
            while (v[fn].posted - started(p, fn) < 8) {
                ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_INLINE,
                                             0, 0);

                chpp_wqe_raddr(w, v[fn].buf, v[fn].key);
                chpp_wqe_inline(w, "x", 1);
                chpp_post_send(v[fn].n.d, &v[fn].n.qp, w, true);
                v[fn].posted++;
            }
        }
        qtest_clock_step(p->d->qts, 100000);
    }
    for (fn = 1; fn <= 2; fn++) {
        served[fn] = started(p, fn) - base[fn];
    }
}

static void test_arbitration(void)
{
    ChppPf *p = chpp_pf_start("engine-delay-ns=100000", NULL);
    ArbVf v[3] = {};
    uint32_t served[3];
    int fn;

    set_vf_res(p, 1, 4, 3, 0, CHPP_STAT_OK);
    set_vf_res(p, 2, 4, 1, 0, CHPP_STAT_OK);
    chpp_pf_vfs_set(p, 2);
    for (fn = 1; fn <= 2; fn++) {
        chpp_node_setup(&v[fn].n, p->vf[fn], 0, fn);
        chpp_node_qp(&v[fn].n, 0, 0x40 + fn, 10, 6);
        chpp_node_connect(&v[fn].n, &v[fn].n, 14, 3);
        v[fn].buf = guest_alloc(&p->d->qs->alloc, 4096);
        v[fn].key = chpp_create_mr(p->vf[fn], 0, CHPP_NODE_PD, v[fn].buf,
                                   4096, CHPP_MPT_LOCAL_WRITE |
                                   CHPP_MPT_REMOTE_WRITE);
    }
    arb_run(p, v, 400, served);
    g_test_message("weights 3:1 -> served %u:%u", served[1], served[2]);
    g_assert_cmpuint(served[1] + served[2], >=, 380);
    g_assert_cmpfloat((double)served[1] / served[2], >, 2.8);
    g_assert_cmpfloat((double)served[1] / served[2], <, 3.2);

    /* Equal weights: a fair split. */
    set_vf_res(p, 1, 4, 1, 0, CHPP_STAT_OK);
    arb_run(p, v, 200, served);
    g_assert_cmpint(abs((int)served[1] - (int)served[2]), <=, 2);

    /* Strict priority: VF2 above VF1 takes every service slot. */
    set_vf_res(p, 2, 4, 1, 1, CHPP_STAT_OK);
    arb_run(p, v, 100, served);
    g_assert_cmpuint(served[1], ==, 0);
    g_assert_cmpuint(served[2], >=, 95);
    chpp_pf_stop(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    qtest_add_func("/chpp-hca/sriov/capability", test_capability);
    qtest_add_func("/chpp-hca/sriov/enable-disable", test_enable_disable);
    qtest_add_func("/chpp-hca/sriov/vf-bars-above-4g", test_vf_bars_above_4g);
    qtest_add_func("/chpp-hca/sriov/enable-cycles-bounded",
                   test_enable_cycles_bounded);
    qtest_add_func("/chpp-hca/sriov/commands-and-quotas",
                   test_vf_commands_and_quotas);
    qtest_add_func("/chpp-hca/sriov/quotas-bounded-by-pf",
                   test_vf_quotas_bounded_by_pf);
    qtest_add_func("/chpp-hca/sriov/traffic", test_traffic_between_functions);
    qtest_add_func("/chpp-hca/sriov/isolation", test_isolation);
    qtest_add_func("/chpp-hca/sriov/flr", test_vf_flr);
    qtest_add_func("/chpp-hca/sriov/arbitration", test_arbitration);
    return g_test_run();
}
