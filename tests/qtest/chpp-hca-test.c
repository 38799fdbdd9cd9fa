/*
 * chpp-hca register-level tests: PCI identity and BARs, registers, the HCR
 * command interface, event queues, MSI-X, reset and migration.
 *
 * Every guest mistake is checked three ways: the status code or register
 * behaviour the docs define, the guest-error counter (it counts exactly the
 * LOG_GUEST_ERROR lines), and that QEMU still answers afterwards.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define MAP_ALL_ASYNC \
    ((1ull << CHPP_EVENT_PORT_CHANGE) | (1ull << CHPP_EVENT_EQ_OVERFLOW) | \
     (1ull << CHPP_EVENT_DOORBELL_ERROR))

/* A command that fails is also a logged guest error. */
#define assert_cmd_fails chpp_assert_cmd_fails

/* ---- PCI identity ------------------------------------------------------ */

static uint64_t bar_size(QPCIDevice *pdev, int bar, uint32_t *flags)
{
    uint8_t off = PCI_BASE_ADDRESS_0 + bar * 4;
    uint32_t lo = qpci_config_readl(pdev, off);
    uint32_t hi = qpci_config_readl(pdev, off + 4);
    uint64_t mask;

    *flags = lo & 0xf;
    qpci_config_writel(pdev, off, 0xffffffff);
    qpci_config_writel(pdev, off + 4, 0xffffffff);
    mask = (uint64_t)qpci_config_readl(pdev, off + 4) << 32 |
           (qpci_config_readl(pdev, off) & ~0xfu);
    qpci_config_writel(pdev, off, lo);
    qpci_config_writel(pdev, off + 4, hi);
    return ~mask + 1;
}

static void test_pci_identity(void)
{
    ChppDev *d = chpp_start("uar-pages=5,msix-vectors=12", NULL);
    QPCIDevice *pdev = d->pdev;
    uint32_t flags;
    uint8_t cap;

    g_assert_cmphex(qpci_config_readw(pdev, PCI_VENDOR_ID), ==,
                    CHPP_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_DEVICE_ID), ==,
                    CHPP_PCI_DEVICE_ID_PF);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_CLASS_DEVICE), ==,
                    CHPP_PCI_CLASS_CODE);
    g_assert_cmphex(qpci_config_readb(pdev, PCI_REVISION_ID), ==,
                    CHPP_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_SUBSYSTEM_VENDOR_ID), ==,
                    CHPP_PCI_VENDOR_ID);

    g_assert_cmphex(bar_size(pdev, CHPP_BAR_REGS, &flags), ==,
                    CHPP_BAR0_SIZE);
    g_assert_cmphex(flags, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
    /* 5 pages round up to 8. */
    g_assert_cmphex(bar_size(pdev, CHPP_BAR_UAR, &flags), ==,
                    8 * CHPP_UAR_PAGE_SIZE);
    g_assert_cmphex(flags, ==, PCI_BASE_ADDRESS_MEM_TYPE_64 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    /* BAR1, BAR3 are the upper halves; BAR4/5 unused. */
    g_assert_cmphex(qpci_config_readl(pdev, PCI_BASE_ADDRESS_4), ==, 0);

    cap = qpci_find_capability(pdev, PCI_CAP_ID_PM, 0);
    g_assert_cmphex(cap, ==, CHPP_PCI_CAP_PM);
    cap = qpci_find_capability(pdev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmphex(cap, ==, CHPP_PCI_CAP_MSIX);
    g_assert_cmpuint(qpci_msix_table_size(pdev), ==, 12);
    g_assert_cmphex(qpci_config_readl(pdev, cap + PCI_MSIX_TABLE), ==,
                    CHPP_MSIX_TABLE_OFFSET | CHPP_BAR_REGS);
    g_assert_cmphex(qpci_config_readl(pdev, cap + PCI_MSIX_PBA), ==,
                    CHPP_MSIX_PBA_OFFSET | CHPP_BAR_REGS);
    cap = qpci_find_capability(pdev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(cap, ==, CHPP_PCI_CAP_EXP);
    /* On q35's root bus the function is a root-complex integrated EP. */
    g_assert_cmphex((qpci_config_readw(pdev, cap + PCI_EXP_FLAGS) &
                     PCI_EXP_FLAGS_TYPE) >> 4, ==, PCI_EXP_TYPE_RC_END);
    g_assert(qpci_config_readl(pdev, cap + PCI_EXP_DEVCAP) &
             PCI_EXP_DEVCAP_FLR);

    /* Identity registers. */
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_ABI_VERSION), ==, CHPP_ABI_VERSION);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_CAPS), ==, CHPP_CAP_CMD_EVENTS);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_FUNC), ==, 0);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_NODE_ID), ==, 0);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_UAR_INFO), ==,
                    5 | CHPP_UAR_PAGE_SHIFT << CHPP_UAR_INFO_SHIFT_SHIFT);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MSIX_INFO), ==, 12);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 0);
    chpp_stop(d);
}

/* Behind a root port (the normal q35 setup) it is a PCIe endpoint. */
static void test_pci_root_port(void)
{
    QOSState *qs = qtest_pc_boot("-machine q35 -nodefaults "
                                 "-device pcie-root-port,id=rp0,addr=03.0,"
                                 "chassis=1 -device chpp-hca,bus=rp0,"
                                 "node-id=7");
    QPCIDevice *rp = qpci_device_find(qs->pcibus, QPCI_DEVFN(3, 0));
    QPCIDevice *ep;
    uint8_t cap;

    g_assert(rp);
    /* No firmware here: number the secondary bus ourselves. */
    qpci_config_writeb(rp, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(rp, PCI_SUBORDINATE_BUS, 1);
    ep = qpci_device_find(qs->pcibus, 1 << 8);
    g_assert(ep);
    g_assert_cmphex(qpci_config_readw(ep, PCI_DEVICE_ID), ==,
                    CHPP_PCI_DEVICE_ID_PF);
    cap = qpci_find_capability(ep, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex((qpci_config_readw(ep, cap + PCI_EXP_FLAGS) &
                     PCI_EXP_FLAGS_TYPE) >> 4, ==, PCI_EXP_TYPE_ENDPOINT);
    g_free(ep);
    g_free(rp);
    qtest_shutdown(qs);
}

/* ---- properties -------------------------------------------------------- */

static void test_properties_described(void)
{
    static const char *const props[] = {
        "vendor-id", "device-id", "vf-device-id", "node-id", "num-qps",
        "num-cqs", "num-eqs", "num-mpts", "num-pds", "msix-vectors",
        "uar-pages", "num-mtts", "cmd-latency-ns", "engine-delay-ns",
        "timing", "timing-clock-mhz", "timing-bus-bytes", "timing-mtu",
        "timing-read-req", "timing-host-mps", "timing-tags",
        "timing-mem-cycles", "timing-xbar-cycles", "timing-nap-imm-cycles",
        "timing-nap-ind-cycles", "timing-put-cycles", "timing-get-cycles",
        "timing-link-ns", "capture", "capture-max",
    };
    QTestState *qts = qtest_init("-machine none");
    QDict *rsp = qtest_qmp(qts, "{'execute': 'device-list-properties', "
                           "'arguments': {'typename': 'chpp-hca'}}");
    QList *list = qdict_get_qlist(rsp, "return");
    unsigned i, found = 0;

    g_assert(list);
    for (i = 0; i < ARRAY_SIZE(props); i++) {
        QListEntry *e;

        QLIST_FOREACH_ENTRY(list, e) {
            QDict *p = qobject_to(QDict, qlist_entry_obj(e));

            if (!strcmp(qdict_get_str(p, "name"), props[i])) {
                g_assert(qdict_haskey(p, "description"));
                g_assert_cmpuint(strlen(qdict_get_str(p, "description")), >,
                                 10);
                found++;
            }
        }
    }
    g_assert_cmpuint(found, ==, ARRAY_SIZE(props));
    qobject_unref(rsp);
    qtest_quit(qts);
}

static void run_qemu(const char *args, int *status, char **out, char **err)
{
    g_autofree char *cmd = g_strdup_printf("%s %s",
                                           getenv("QTEST_QEMU_BINARY"), args);
    g_auto(GStrv) argv = NULL;

    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    g_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, out,
                          err, status, NULL));
}

static void test_properties_help(void)
{
    g_autofree char *out = NULL, *err = NULL;
    int status;

    run_qemu("-device chpp-hca,help", &status, &out, &err);
    g_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_assert(strstr(out, "node-id=<uint16>"));
    g_assert(strstr(out, "SRC-CPU of outgoing packets"));
    g_assert(strstr(out, "cmd-latency-ns=<uint64>"));
}

static void test_properties_invalid(void)
{
    static const char *const bad[] = {
        "num-eqs=0", "num-eqs=65", "msix-vectors=0", "msix-vectors=65",
        "uar-pages=0", "uar-pages=1025", "num-qps=0", "num-qps=4097",
        "cmd-latency-ns=20000000000", "num-mtts=0", "num-mtts=1048577",
        "engine-delay-ns=20000000000", "node-id=4096",
        "x-link-ring-size=8192", "x-link-ring-size=100000",
        "x-link-ring-size=134217728", "link-spin-us=10001",
        "x-link-spin-guest-us=0", "x-link-spin-guest-us=1000001",
        "timing-clock-mhz=0", "timing-clock-mhz=4001", "timing-bus-bytes=24",
        "timing-bus-bytes=2", "timing-mtu=100", "timing-mtu=8192",
        "timing-read-req=8", "timing-host-mps=3000", "timing-tags=0",
        "timing-tags=257", "timing-mem-cycles=100001",
        "timing-put-cycles=100001", "timing-link-ns=1000001",
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_autofree char *args = g_strdup_printf(
            "-machine q35 -nodefaults -display none -S "
            "-device chpp-hca,%s", bad[i]);
        g_autofree char *out = NULL, *err = NULL;
        g_autofree char *name = g_strndup(bad[i], strchr(bad[i], '=') - bad[i]);
        int status;

        run_qemu(args, &status, &out, &err);
        g_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
        g_assert(strstr(err, name));
    }
}

/* ---- registers --------------------------------------------------------- */

static void test_reg_access_rules(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint32_t errs;

    chpp_wr(d, CHPP_REG_SCRATCH, 0x12345678);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_SCRATCH), ==, 0x12345678);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 0);

    /* Narrow and misaligned accesses read 0 and are ignored. */
    g_assert_cmphex(qpci_io_readb(d->pdev, d->bar0, CHPP_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readw(d->pdev, d->bar0, CHPP_REG_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->bar0, CHPP_REG_MAGIC + 1), ==,
                    0);
    g_assert_cmphex(qpci_io_readq(d->pdev, d->bar0, CHPP_REG_MAGIC), ==, 0);
    qpci_io_writeb(d->pdev, d->bar0, CHPP_REG_SCRATCH, 0xff);
    qpci_io_writew(d->pdev, d->bar0, CHPP_REG_SCRATCH + 2, 0xffff);
    qpci_io_writeq(d->pdev, d->bar0, CHPP_REG_SCRATCH, ~0ull);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_SCRATCH), ==, 0x12345678);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 7);

    /* Undefined offsets read 0; writes to them and to RO registers vanish. */
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    g_assert_cmphex(chpp_rd(d, 0x0024), ==, 0);
    g_assert_cmphex(chpp_rd(d, 0x1ffc), ==, 0);
    chpp_wr(d, 0x1000, 1);
    chpp_wr(d, CHPP_REG_MAGIC, 0);
    chpp_wr(d, CHPP_REG_CNT(CHPP_CNT_CMDS), 55);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_CMDS), ==, 0);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 5);

    /* Reset register: anything but the magic value is an error. */
    chpp_wr(d, CHPP_REG_RESET, 2);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_SCRATCH), ==, 0x12345678);
    g_assert_cmphex(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 6);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_RESET), ==, 0);

    /* The UAR BAR exists and is inert for now. */
    qpci_io_writel(d->pdev, d->bar2, 0, 0xdeadbeef);
    qpci_io_writeq(d->pdev, d->bar2, CHPP_UAR_PAGE_SIZE + 8, ~0ull);
    g_assert_cmphex(qpci_io_readl(d->pdev, d->bar2, 0), ==, 0);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    chpp_stop(d);
}

/* ---- HCR protocol ------------------------------------------------------ */

static void test_hcr_reset_values(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    int i;

    for (i = 0; i < CHPP_HCR_SIZE; i += 4) {
        g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + i), ==, 0);
    }
    g_assert_cmphex(chpp_rd(d, CHPP_REG_STATUS), ==, 0);
    chpp_stop(d);
}

static void test_hcr_query_fw_dev_cap(void)
{
    ChppDev *d = chpp_start("node-id=3,num-qps=100,num-eqs=16", NULL);
    struct chpp_fw_info fw;
    struct chpp_dev_cap cap;

    qtest_memset(d->qts, d->mbox_out, 0xff, CHPP_MAILBOX_SIZE);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_FW, 0, 0, d->mbox_out), ==,
                    CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &fw, sizeof(fw));
    g_assert_cmpuint(le16_to_cpu(fw.fw_major), ==, CHPP_FW_VER_MAJOR);
    g_assert_cmpuint(le16_to_cpu(fw.fw_minor), ==, CHPP_FW_VER_MINOR);
    g_assert_cmpuint(le16_to_cpu(fw.abi_major), ==, CHPP_ABI_VERSION_MAJOR);
    g_assert_cmpuint(le16_to_cpu(fw.abi_minor), ==, CHPP_ABI_VERSION_MINOR);
    g_assert_cmpuint(le32_to_cpu(fw.reserved1[4]), ==, 0);
    /* The device wrote only its structure. */
    g_assert_cmphex(qtest_readb(d->qts, d->mbox_out + sizeof(fw)), ==, 0xff);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_DEV_CAP, 0, 0, d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(d->qts, d->mbox_out, &cap, sizeof(cap));
    g_assert_cmphex(le32_to_cpu(cap.flags), ==, CHPP_DEV_CAP_FLAG_CMD_EVENTS |
                    CHPP_DEV_CAP_FLAG_FAST_REG);
    g_assert_cmpuint(le32_to_cpu(cap.max_fr_pages), ==, CHPP_MAX_FR_PAGES);
    g_assert_cmpuint(le16_to_cpu(cap.node_id), ==, 3);
    g_assert_cmpuint(cap.num_ports, ==, 1);
    g_assert_cmpuint(cap.log_uar_page_size, ==, CHPP_UAR_PAGE_SHIFT);
    g_assert_cmpuint(le32_to_cpu(cap.num_uar_pages), ==,
                     CHPP_DEFAULT_UAR_PAGES);
    g_assert_cmpuint(le32_to_cpu(cap.num_msix), ==,
                     CHPP_DEFAULT_MSIX_VECTORS);
    g_assert_cmpuint(le32_to_cpu(cap.max_eqs), ==, 16);
    g_assert_cmpuint(le32_to_cpu(cap.max_eq_entries), ==,
                     CHPP_MAX_EQ_ENTRIES);
    g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==, 100);
    g_assert_cmpuint(le32_to_cpu(cap.max_cqs), ==, CHPP_DEFAULT_CQS);
    g_assert_cmpuint(le32_to_cpu(cap.max_mpts), ==, CHPP_DEFAULT_MPTS);
    g_assert_cmpuint(le32_to_cpu(cap.max_pds), ==, CHPP_DEFAULT_PDS);
    g_assert_cmpuint(le32_to_cpu(cap.max_cq_entries), ==,
                     CHPP_MAX_CQ_ENTRIES);
    g_assert_cmpuint(le32_to_cpu(cap.max_mtt_entries), ==,
                     CHPP_DEFAULT_MTTS);
    g_assert_cmpuint(le32_to_cpu(cap.max_qp_wqes), ==, CHPP_MAX_QP_WQES);
    g_assert_cmpuint(le32_to_cpu(cap.max_sge), ==, CHPP_MAX_SGE);
    g_assert_cmpuint(le32_to_cpu(cap.max_inline), ==, CHPP_MAX_INLINE);
    g_assert_cmpuint(le32_to_cpu(cap.max_msg_size), ==, CHPP_MAX_MSG_SIZE);
    g_assert_cmphex(le64_to_cpu(cap.page_size_cap), ==, 0x7ffff000ull);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMDS), ==, 2);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_ERRORS), ==, 0);
    chpp_stop(d);
}

/* go stays set while the command runs; t is kept as written. */
static void test_hcr_go_and_toggle(void)
{
    ChppDev *d = chpp_start("cmd-latency-ns=1000000", NULL);
    uint32_t ctrl;

    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, false, 0);
    ctrl = chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL);
    g_assert(ctrl & CHPP_HCR_GO);
    g_assert(ctrl & CHPP_HCR_T);
    g_assert(chpp_rd(d, CHPP_REG_STATUS) & CHPP_STATUS_CMD_BUSY);
    qtest_clock_step(d->qts, 999999);
    g_assert(chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL) & CHPP_HCR_GO);
    qtest_clock_step(d->qts, 1);
    ctrl = chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL);
    g_assert_cmphex(ctrl, ==, CHPP_HCR_T | CHPP_CMD_NOP);
    g_assert_false(chpp_rd(d, CHPP_REG_STATUS) & CHPP_STATUS_CMD_BUSY);

    /* The next command flips t, and the device keeps it clear. */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL), ==,
                    CHPP_CMD_NOP);
    chpp_stop(d);
}

static void test_hcr_busy_rejects(void)
{
    ChppDev *d = chpp_start("cmd-latency-ns=1000000", NULL);
    uint32_t errs;

    chpp_cmd_post(d, CHPP_CMD_QUERY_FW, 0, 0, d->mbox_out, false, 0);
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    /* A second command and a parameter write while busy are ignored. */
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L, 0x1000);
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_CTRL, CHPP_HCR_GO | 0x777);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMD_REJECTED), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 2);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L), ==,
                    (uint32_t)d->mbox_out);
    /* The first command completes as issued. */
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + CHPP_HCR_CTRL) &
                    CHPP_HCR_OPCODE_MASK, ==, CHPP_CMD_QUERY_FW);
    g_assert_cmpuint(le16_to_cpu(qtest_readw(d->qts, d->mbox_out +
                     offsetof(struct chpp_fw_info, abi_major))), ==,
                     CHPP_ABI_VERSION_MAJOR);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMDS), ==, 1);

    /* A control write without go starts nothing. */
    chpp_wr(d, CHPP_REG_HCR + CHPP_HCR_CTRL, CHPP_CMD_NOP);
    qtest_clock_step(d->qts, 2000000);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CMDS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 3);
    chpp_stop(d);
}

static void test_hcr_bad_commands(void)
{
    ChppDev *d = chpp_start(NULL, NULL);

    assert_cmd_fails(d, CHPP_STAT_BAD_OP, 0x777, 0, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_OP, 0x000, 0, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_OP, CHPP_CMD_NOP | (3 <<
                     CHPP_HCR_OPMOD_SHIFT), 0, 0, 0);
    /* Everything but the boot commands needs INIT_HCA. */
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_CLOSE_HCA, 0, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_SW2HW_EQ,
                     d->mbox_in, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_QUERY_PORT, 0, 1,
                     d->mbox_out);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_INIT_PORT, 0, 1, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_MAP_EQ, 0, 0, 0);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_NOP, 0, 0, 0), ==, CHPP_STAT_OK);

    /* INIT_HCA checks the ABI version and runs once. */
    assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_INIT_HCA, 0,
                     CHPP_ABI_VERSION_MAJOR + 1, 0);
    g_assert_false(chpp_rd(d, CHPP_REG_STATUS) & CHPP_STATUS_HCA_INIT);
    chpp_init_hca(d);
    g_assert(chpp_rd(d, CHPP_REG_STATUS) & CHPP_STATUS_HCA_INIT);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_INIT_HCA, 0,
                     CHPP_ABI_VERSION_MAJOR, 0);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_CLOSE_HCA, 0, 0, 0), ==,
                    CHPP_STAT_OK);
    g_assert_false(chpp_rd(d, CHPP_REG_STATUS) & CHPP_STATUS_HCA_INIT);
    assert_cmd_fails(d, CHPP_STAT_BAD_SYS_STATE, CHPP_CMD_CLOSE_HCA, 0, 0, 0);
    chpp_init_hca(d);
    chpp_stop(d);
}

static void test_hcr_bad_mailbox(void)
{
    ChppDev *d = chpp_start(NULL, NULL);

    assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_QUERY_FW, 0, 0,
                     d->mbox_out + 8);
    /* Far outside guest RAM and any device: the DMA fails. */
    assert_cmd_fails(d, CHPP_STAT_DMA_ERR, CHPP_CMD_QUERY_FW, 0, 0,
                     0x7ff000000000ull);
    assert_cmd_fails(d, CHPP_STAT_DMA_ERR, CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                     ~0ull & ~(uint64_t)(CHPP_MAILBOX_ALIGN - 1));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DMA_ERRORS), ==, 2);
    chpp_init_hca(d);
    assert_cmd_fails(d, CHPP_STAT_DMA_ERR, CHPP_CMD_SW2HW_EQ,
                     0x7ff000000000ull, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_MAILBOX, CHPP_CMD_SW2HW_EQ,
                     d->mbox_in + 0x800, 0, 0);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    chpp_stop(d);
}

/* ---- ports ------------------------------------------------------------- */

static uint8_t query_port(ChppDev *d, uint32_t port, struct chpp_port_info *pi)
{
    uint8_t status = chpp_cmd(d, CHPP_CMD_QUERY_PORT, 0, port, d->mbox_out);

    qtest_memread(d->qts, d->mbox_out, pi, sizeof(*pi));
    return status;
}

static void test_ports(void)
{
    ChppDev *d = chpp_start("node-id=9", NULL);
    struct chpp_port_info pi;
    struct chpp_eqe eqe;
    uint64_t ring;

    chpp_init_hca(d);
    ring = chpp_create_eq(d, 0, 8, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, MAP_ALL_ASYNC, false), ==,
                    CHPP_STAT_OK);

    g_assert_cmphex(query_port(d, 1, &pi), ==, CHPP_STAT_OK);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_DOWN);
    g_assert_cmpuint(le16_to_cpu(pi.lid), ==, 10);
    g_assert_cmphex(le64_to_cpu(pi.port_guid), ==, CHPP_PORT_GUID_BASE | 9);
    g_assert_cmpuint(CHPP_LID_NODE(le16_to_cpu(pi.lid)), ==, 9);
    g_assert_cmpuint(CHPP_LID_FN(le16_to_cpu(pi.lid)), ==, 0);
    g_assert_cmpuint(pi.max_mtu, ==, CHPP_MTU_4096);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(query_port(d, 1, &pi), ==, CHPP_STAT_OK);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ACTIVE);
    g_assert_cmpuint(pi.phys_state, ==, CHPP_PORT_PHYS_LINK_UP);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_PORT_CHANGE);
    g_assert_cmpuint(eqe.subtype, ==, CHPP_PORT_ACTIVE);
    g_assert_cmpuint(le32_to_cpu(eqe.event.port.port), ==, 1);
    g_assert_cmphex(le32_to_cpu(eqe.owner), ==, CHPP_EQE_OWNER);

    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_INIT_PORT, 0, 1, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_INIT_PORT, 0, 2, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_INIT_PORT, 0, 0, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_PORT, 0, 2,
                     d->mbox_out);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_CLOSE_PORT, 0, 5, 0);

    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_CLOSE_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(query_port(d, 1, &pi), ==, CHPP_STAT_OK);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_DOWN);
    chpp_read_eqe(d, ring, 1, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_PORT_CHANGE);
    g_assert_cmpuint(eqe.subtype, ==, CHPP_PORT_DOWN);
    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_CLOSE_PORT, 0, 1,
                     0);
    chpp_stop(d);
}

/* ---- event queues ------------------------------------------------------ */

static void test_eq_create_query_destroy(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eq_context ctx;
    uint64_t ring;

    chpp_init_hca(d);
    ring = chpp_create_eq(d, 2, 64, 5, true);
    g_assert_cmphex(chpp_query_eq(d, 2, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmphex(le64_to_cpu(ctx.base_addr), ==, ring);
    g_assert_cmpuint(le32_to_cpu(ctx.num_entries), ==, 64);
    g_assert_cmpuint(le16_to_cpu(ctx.msix_vector), ==, 5);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_ARMED);
    g_assert_cmpuint(le32_to_cpu(ctx.producer_index), ==, 0);
    g_assert_cmpuint(le32_to_cpu(ctx.consumer_index), ==, 0);
    g_assert_cmpuint(le32_to_cpu(ctx.dropped), ==, 0);
    g_assert_cmpuint(le32_to_cpu(ctx.reserved[8]), ==, 0);

    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_SW2HW_EQ,
                     d->mbox_in, 2, 0);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_EQ, 0, 2, 0), ==,
                    CHPP_STAT_OK);
    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_HW2SW_EQ, 0, 2, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_QUERY_EQ, 0, 2,
                     d->mbox_out);
    /* The number is free again. */
    chpp_create_eq(d, 2, 2, 0, false);
    g_assert_cmphex(chpp_query_eq(d, 2, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_FIRED);
    chpp_stop(d);
}

static void test_eq_bad_params(void)
{
    ChppDev *d = chpp_start("num-eqs=4,msix-vectors=4", NULL);
    uint64_t ring = chpp_eq_alloc(d, 16);
    static const uint32_t bad_sizes[] = {
        0, 1, 3, 12, CHPP_MAX_EQ_ENTRIES * 2, 0x80000000u, 0xffffffffu,
    };
    uint32_t errs;
    unsigned i;

    chpp_init_hca(d);
    for (i = 0; i < ARRAY_SIZE(bad_sizes); i++) {
        errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
        g_assert_cmphex(chpp_sw2hw_eq(d, 0, ring, bad_sizes[i], 0, 0), ==,
                        CHPP_STAT_BAD_SIZE);
        g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==,
                         errs + 1);
    }
    g_assert_cmphex(chpp_sw2hw_eq(d, 4, ring, 16, 0, 0), ==,
                    CHPP_STAT_BAD_INDEX);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0xffffffff, ring, 16, 0, 0), ==,
                    CHPP_STAT_BAD_INDEX);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, ring, 16, 4, 0), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, ring + 8, 16, 0, 0), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, ~0ull & ~63ull, 16, 0, 0), ==,
                    CHPP_STAT_BAD_PARAM);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, ring, 16, 0, 0x80), ==,
                    CHPP_STAT_BAD_PARAM);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_QUERY_EQ, 0, 4,
                     d->mbox_out);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_HW2SW_EQ, 0, 64, 0);

    /* MAP_EQ: missing EQ, range, unmappable types, reserved bits. */
    assert_cmd_fails(d, CHPP_STAT_BAD_RES_STATE, CHPP_CMD_MAP_EQ,
                     1ull << CHPP_EVENT_CMD, 1, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_INDEX, CHPP_CMD_MAP_EQ,
                     1ull << CHPP_EVENT_CMD, 9, 0);
    chpp_create_eq(d, 1, 16, 0, false);
    assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_MAP_EQ,
                     1ull << CHPP_EVENT_COMP, 1, 0);
    assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_MAP_EQ, 1ull << 63, 1,
                     0);
    assert_cmd_fails(d, CHPP_STAT_BAD_PARAM, CHPP_CMD_MAP_EQ,
                     1ull << CHPP_EVENT_CMD, 1 | 0x10000, 0);
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    /* None of it hurt the device. */
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    chpp_stop(d);
}

/* Command completion by event: token, status and out_param in the EQE. */
static void test_eq_cmd_event(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eqe eqe;
    uint64_t ring;

    chpp_msix_route(d, 3);
    chpp_init_hca(d);
    ring = chpp_create_eq(d, 1, 8, 3, true);
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    g_assert_false(chpp_msix_fired(d, 3));

    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 0xbeef);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_CMD);
    g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, 0xbeef);
    g_assert_cmphex(eqe.event.cmd.status, ==, CHPP_STAT_OK);
    g_assert_cmphex(le32_to_cpu(eqe.owner), ==, CHPP_EQE_OWNER);
    g_assert(chpp_msix_fired(d, 3));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_IRQS), ==, 1);

    /* A failing command reports its status in the EQE too; EQ disarmed. */
    chpp_cmd_post(d, 0x123, 0, 0, 0, true, 0x0042);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_BAD_OP);
    chpp_read_eqe(d, ring, 1, &eqe);
    g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, 0x0042);
    g_assert_cmphex(eqe.event.cmd.status, ==, CHPP_STAT_BAD_OP);
    g_assert_false(chpp_msix_fired(d, 3));

    /* Arming over unconsumed EQEs fires at once; consuming all does not. */
    chpp_eq_db(d, 1, 1, true);
    g_assert(chpp_msix_fired(d, 3));
    chpp_eq_db(d, 1, 2, true);
    g_assert_false(chpp_msix_fired(d, 3));
    g_assert_cmphex(chpp_rd(d, CHPP_REG_EQ_DB(1)), ==, 2 | CHPP_EQ_DB_ARM);

    /* The out_param of an immediate-output command is echoed. */
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0x1122334455667788ull, true, 7);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    chpp_read_eqe(d, ring, 2, &eqe);
    g_assert_cmphex(le32_to_cpu(eqe.event.cmd.out_param_lo), ==, 0x55667788);
    g_assert_cmphex(le32_to_cpu(eqe.event.cmd.out_param_hi), ==, 0x11223344);
    g_assert(chpp_msix_fired(d, 3));

    /* With no EQ mapped for CMD the event is dropped and counted. */
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_CMD, true), ==,
                    CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 8);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 1);
    chpp_read_eqe(d, ring, 3, &eqe);
    g_assert_cmphex(le32_to_cpu(eqe.owner), ==, 0);
    chpp_stop(d);
}

static void test_eq_wraparound(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eq_context ctx;
    uint64_t ring;
    uint32_t i;

    chpp_init_hca(d);
    ring = chpp_create_eq(d, 0, 4, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    /* Three passes over a 4-entry ring: owner 1, 0, 1. */
    for (i = 0; i < 12; i++) {
        struct chpp_eqe eqe;

        chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, i);
        g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
        chpp_read_eqe(d, ring, i % 4, &eqe);
        g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, i);
        g_assert_cmphex(le32_to_cpu(eqe.owner), ==,
                        ((i / 4) & 1) ? 0 : CHPP_EQE_OWNER);
        chpp_eq_db(d, 0, i + 1, false);
    }
    g_assert_cmphex(chpp_query_eq(d, 0, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(ctx.producer_index), ==, 12);
    g_assert_cmpuint(le32_to_cpu(ctx.consumer_index), ==, 12);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, 12);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 0);
    chpp_stop(d);
}

static void test_eq_overrun(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eq_context ctx;
    struct chpp_eqe eqe;
    uint64_t ring, async_ring;
    uint32_t errs;

    chpp_msix_route(d, 1);
    chpp_init_hca(d);
    async_ring = chpp_create_eq(d, 0, 4, 0, false);
    ring = chpp_create_eq(d, 1, 2, 1, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_EQ_OVERFLOW, false),
                    ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 1);
    chpp_cmd_wait(d, NULL);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 2);
    chpp_cmd_wait(d, NULL);
    errs = chpp_counter(d, CHPP_CNT_GUEST_ERRORS);
    /* The third event finds the ring full. */
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 3);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, errs + 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 1);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, 1);

    g_assert_cmphex(chpp_query_eq(d, 1, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_OVERRUN);
    g_assert_cmpuint(le32_to_cpu(ctx.dropped), ==, 1);
    g_assert_cmpuint(le32_to_cpu(ctx.producer_index), ==, 2);
    chpp_read_eqe(d, async_ring, 0, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_EQ_OVERFLOW);
    g_assert_cmpuint(le32_to_cpu(eqe.event.eq_overflow.eqn), ==, 1);

    /* Sticky: consuming and arming does not revive it. */
    chpp_eq_db(d, 1, 2, true);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 4);
    chpp_cmd_wait(d, NULL);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 2);
    g_assert_false(chpp_msix_fired(d, 1));
    g_assert_cmphex(chpp_query_eq(d, 1, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_OVERRUN);

    /* Recreating the EQ recovers (HW2SW unmapped it). */
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_HW2SW_EQ, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    ring = chpp_create_eq(d, 1, 2, 1, true);
    g_assert_cmphex(chpp_map_eq(d, 1, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 5);
    chpp_cmd_wait(d, NULL);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, 5);
    g_assert(chpp_msix_fired(d, 1));
    chpp_stop(d);
}

static void test_eq_bad_doorbells(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eqe eqe;
    uint64_t ring;

    chpp_init_hca(d);
    ring = chpp_create_eq(d, 0, 4, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, MAP_ALL_ASYNC, false), ==,
                    CHPP_STAT_OK);
    chpp_create_eq(d, 1, 4, 0, false);

    /* Consumer past the producer (EQ 1 is empty). */
    chpp_eq_db(d, 1, 1, false);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 1);
    chpp_read_eqe(d, ring, 0, &eqe);
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_DOORBELL_ERROR);
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.offset), ==,
                    CHPP_REG_EQ_DB(1));
    g_assert_cmphex(le32_to_cpu(eqe.event.db_error.value), ==, 1);
    /* EQ that does not exist, EQ beyond num-eqs, reserved bits. */
    chpp_eq_db(d, 2, 0, true);
    chpp_eq_db(d, 63, 0, true);
    chpp_wr(d, CHPP_REG_EQ_DB(1), 0x01000000);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 4);
    /* Consumer moving backwards. */
    chpp_eq_db(d, 0, 3, false);
    chpp_eq_db(d, 0, 1, false);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DB_ERRORS), ==, 5);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_EQ_DB(0)), ==, 3);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_GUEST_ERRORS), ==, 5);
    chpp_stop(d);
}

/* A ring the device cannot write stops the EQ instead of hurting QEMU. */
static void test_eq_ring_dma_error(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    struct chpp_eq_context ctx;

    chpp_init_hca(d);
    g_assert_cmphex(chpp_sw2hw_eq(d, 0, 0x7ff000000000ull, 4, 0, 0), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 1);
    g_assert_cmphex(chpp_cmd_wait(d, NULL), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_query_eq(d, 0, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_ERROR);
    g_assert_cmpuint(le32_to_cpu(ctx.producer_index), ==, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_DMA_ERRORS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS_DROPPED), ==, 1);
    chpp_stop(d);
}

/* ---- MSI-X ------------------------------------------------------------- */

static void test_msix_masked_and_disabled(void)
{
    ChppDev *d = chpp_start(NULL, NULL);

    chpp_init_hca(d);
    chpp_create_eq(d, 0, 8, 2, true);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    /* Vector masked (its reset state): the message waits in the PBA. */
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 1);
    chpp_cmd_wait(d, NULL);
    g_assert(qpci_msix_pending(d->pdev, 2));
    g_assert_false(qpci_msix_pending(d->pdev, 1));
    /* Unmasking delivers it. */
    chpp_msix_route(d, 2);
    g_assert(chpp_msix_fired(d, 2));

    /* MSI-X disabled: nothing is sent, and that is counted. */
    qpci_msix_disable(d->pdev);
    d->pdev->msix_enabled = false;
    chpp_eq_db(d, 0, 1, true);
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 2);
    chpp_cmd_wait(d, NULL);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_IRQS_MASKED), ==, 1);
    g_assert_false(chpp_msix_fired(d, 2));
    chpp_stop(d);
}

/* ---- reset ------------------------------------------------------------- */

static void configure_some_state(ChppDev *d)
{
    chpp_init_hca(d);
    chpp_create_eq(d, 0, 8, 0, true);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_CMD, false), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    chpp_wr(d, CHPP_REG_SCRATCH, 0xabcd);
    chpp_rd(d, 0x1ff0);     /* a guest error, so that counter is non-zero */
}

static void assert_reset_state(ChppDev *d)
{
    struct chpp_port_info pi;
    unsigned i;

    g_assert_cmphex(chpp_rd(d, CHPP_REG_STATUS), ==, 0);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_SCRATCH), ==, 0);
    for (i = 0; i < CHPP_HCR_SIZE; i += 4) {
        g_assert_cmphex(chpp_rd(d, CHPP_REG_HCR + i), ==, 0);
    }
    for (i = 0; i < CHPP_CNT_NUM; i++) {
        g_assert_cmphex(chpp_counter(d, i), ==, 0);
    }
    g_assert_cmphex(chpp_rd(d, CHPP_REG_EQ_DB(0)), ==, 0);
    /* t reads 0, so the driver's first command (t=1) is not "pending". */
    d->toggle = true;
    chpp_init_hca(d);
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_QUERY_EQ, 0, 0, d->mbox_out), ==,
                    CHPP_STAT_BAD_RES_STATE);
    g_assert_cmphex(query_port(d, 1, &pi), ==, CHPP_STAT_OK);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_DOWN);
}

static void test_reset_register(void)
{
    ChppDev *d = chpp_start("cmd-latency-ns=5000000", NULL);

    configure_some_state(d);
    /* A command in flight is abandoned by the reset. */
    chpp_cmd_post(d, CHPP_CMD_NOP, 0, 0, 0, true, 1);
    chpp_wr(d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    qtest_clock_step(d->qts, 10000000);
    assert_reset_state(d);
    /* PCI state survives a device reset: MSI-X is still enabled. */
    g_assert(qpci_config_readw(d->pdev, CHPP_PCI_CAP_MSIX + PCI_MSIX_FLAGS) &
             PCI_MSIX_FLAGS_ENABLE);
    chpp_stop(d);
}

static void test_reset_system(void)
{
    ChppDev *d = chpp_start(NULL, NULL);

    configure_some_state(d);
    qtest_qmp_assert_success(d->qts, "{'execute': 'system_reset'}");
    qtest_qmp_eventwait(d->qts, "RESET");
    /* Config space was reset too: enable and map again. */
    g_assert_false(qpci_config_readw(d->pdev, PCI_COMMAND) &
                   PCI_COMMAND_MEMORY);
    qpci_device_enable(d->pdev);
    qpci_msix_enable(d->pdev);
    d->bar0 = d->pdev->msix_table_bar;
    assert_reset_state(d);
    chpp_stop(d);
}

static void test_reset_flr(void)
{
    ChppDev *d = chpp_start(NULL, NULL);
    uint16_t devctl;

    configure_some_state(d);
    devctl = qpci_config_readw(d->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL);
    qpci_config_writew(d->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
    g_assert_false(qpci_config_readw(d->pdev, PCI_COMMAND) &
                   PCI_COMMAND_MEMORY);
    qpci_device_enable(d->pdev);
    qpci_msix_enable(d->pdev);
    d->bar0 = d->pdev->msix_table_bar;
    assert_reset_state(d);
    chpp_stop(d);
}

/* ---- migration --------------------------------------------------------- */

static void test_migration(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-hca-test-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/migsock", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/migsock", tmpdir);
    const char *props = "node-id=5,num-eqs=8,cmd-latency-ns=1000000";
    ChppDev *src = chpp_start(props, NULL);
    ChppDev *dst;
    struct chpp_eq_context ctx;
    struct chpp_port_info pi;
    struct chpp_eqe eqe;
    uint64_t ring;
    int i;

    g_assert(tmpdir);
    chpp_msix_route(src, 4);
    chpp_init_hca(src);
    ring = chpp_create_eq(src, 6, 4, 4, false);
    g_assert_cmphex(chpp_map_eq(src, 6, 1ull << CHPP_EVENT_CMD |
                                1ull << CHPP_EVENT_PORT_CHANGE, false), ==,
                    CHPP_STAT_OK);
    g_assert_cmphex(chpp_cmd(src, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    for (i = 0; i < 3; i++) {
        chpp_cmd_post(src, CHPP_CMD_NOP, 0, 0, 0, true, 0x100 + i);
        chpp_cmd_wait(src, NULL);
    }
    chpp_eq_db(src, 6, 3, true);   /* 4 EQEs written, 3 consumed: fires */
    g_assert(chpp_msix_fired(src, 4));
    chpp_eq_db(src, 6, 4, true);   /* all consumed: armed, quiet */
    g_assert_false(chpp_msix_fired(src, 4));
    chpp_wr(src, CHPP_REG_SCRATCH, 0x5a5a5a5a);
    /* Leave a command running across the migration. */
    chpp_cmd_post(src, CHPP_CMD_NOP, 0, 0, 0, true, 0x200);
    g_assert(chpp_rd(src, CHPP_REG_HCR + CHPP_HCR_CTRL) & CHPP_HCR_GO);

    dst = chpp_start_incoming(props, uri);
    migrate(src->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, src);

    g_assert_cmphex(chpp_rd(dst, CHPP_REG_SCRATCH), ==, 0x5a5a5a5a);
    g_assert_cmphex(chpp_rd(dst, CHPP_REG_STATUS), ==,
                    CHPP_STATUS_HCA_INIT | CHPP_STATUS_CMD_BUSY);
    g_assert_cmpuint(chpp_counter(dst, CHPP_CNT_CMDS), ==, 7);
    /* The running command completes on the destination, with its event. */
    g_assert_cmphex(chpp_cmd_wait(dst, NULL), ==, CHPP_STAT_OK);
    chpp_read_eqe(dst, ring, 0, &eqe);
    g_assert_cmphex(le16_to_cpu(eqe.event.cmd.token), ==, 0x200);
    g_assert_cmphex(le32_to_cpu(eqe.owner), ==, 0);
    g_assert(chpp_msix_fired(dst, 4));

    g_assert_cmphex(chpp_query_eq(dst, 6, &ctx), ==, CHPP_STAT_OK);
    g_assert_cmpuint(le32_to_cpu(ctx.producer_index), ==, 5);
    g_assert_cmpuint(le32_to_cpu(ctx.consumer_index), ==, 4);
    g_assert_cmpuint(ctx.state, ==, CHPP_EQ_STATE_FIRED);
    g_assert_cmphex(le64_to_cpu(ctx.base_addr), ==, ring);
    g_assert_cmphex(query_port(dst, 1, &pi), ==, CHPP_STAT_OK);
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ACTIVE);
    g_assert_cmpuint(le16_to_cpu(pi.lid), ==, 6);

    chpp_stop(src);
    chpp_stop(dst);
    unlink(sock);
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_machine("q35")) {
        g_test_message("q35 machine missing: this QEMU cannot run chpp-hca");
        return 1;
    }
    qtest_add_func("/chpp-hca/pci/identity", test_pci_identity);
    qtest_add_func("/chpp-hca/pci/root-port", test_pci_root_port);
    qtest_add_func("/chpp-hca/props/described", test_properties_described);
    qtest_add_func("/chpp-hca/props/help", test_properties_help);
    qtest_add_func("/chpp-hca/props/invalid", test_properties_invalid);
    qtest_add_func("/chpp-hca/regs/access-rules", test_reg_access_rules);
    qtest_add_func("/chpp-hca/hcr/reset-values", test_hcr_reset_values);
    qtest_add_func("/chpp-hca/hcr/query-fw-dev-cap",
                   test_hcr_query_fw_dev_cap);
    qtest_add_func("/chpp-hca/hcr/go-and-toggle", test_hcr_go_and_toggle);
    qtest_add_func("/chpp-hca/hcr/busy-rejects", test_hcr_busy_rejects);
    qtest_add_func("/chpp-hca/hcr/bad-commands", test_hcr_bad_commands);
    qtest_add_func("/chpp-hca/hcr/bad-mailbox", test_hcr_bad_mailbox);
    qtest_add_func("/chpp-hca/port/init-close-query", test_ports);
    qtest_add_func("/chpp-hca/eq/create-query-destroy",
                   test_eq_create_query_destroy);
    qtest_add_func("/chpp-hca/eq/bad-params", test_eq_bad_params);
    qtest_add_func("/chpp-hca/eq/cmd-event", test_eq_cmd_event);
    qtest_add_func("/chpp-hca/eq/wraparound", test_eq_wraparound);
    qtest_add_func("/chpp-hca/eq/overrun", test_eq_overrun);
    qtest_add_func("/chpp-hca/eq/bad-doorbells", test_eq_bad_doorbells);
    qtest_add_func("/chpp-hca/eq/ring-dma-error", test_eq_ring_dma_error);
    qtest_add_func("/chpp-hca/msix/masked-and-disabled",
                   test_msix_masked_and_disabled);
    qtest_add_func("/chpp-hca/reset/register", test_reset_register);
    qtest_add_func("/chpp-hca/reset/system", test_reset_system);
    qtest_add_func("/chpp-hca/reset/flr", test_reset_flr);
    qtest_add_func("/chpp-hca/migration/configured", test_migration);
    return g_test_run();
}
