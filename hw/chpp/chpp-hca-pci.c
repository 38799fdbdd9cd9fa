/*
 * chpp-hca: QOM/PCI glue of the cHPP host channel adapter model.
 *
 * Properties, realize/exit, PCI capabilities and reset.  The
 * register file, the command engine, the event queues and migration
 * (chpp-hca-vmstate.c) live in their own files (see chpp-hca.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "chpp-hca.h"
#include "chpp-hca-capture.h"
#include "chpp-hca-link-io.h"
#include "trace.h"

#define CHPP_MAX_CMD_LATENCY_NS (10 * NANOSECONDS_PER_SECOND)

/* Device state back to its reset values; PCI config space is untouched. */
const ChppUpcalls chpp_upcalls = {
    .link_changed = chpp_port_link_changed,
    .qp_transition = chpp_engine_qp_transition,
    .vfs_enabled = chpp_hca_vfs_enabled,
    .rx_begin = chpp_engine_rx_begin,
    .rx_end = chpp_engine_rx_end,
};

void chpp_hca_soft_reset(ChppHcaState *s)
{
    trace_chpp_hca_reset(s->func);
    chpp_cmd_reset(s);
    chpp_link_reset(s);
    chpp_hca_reset_state(s);
    s->scratch = 0;
    memset(s->counters, 0, sizeof(s->counters));
}

static void chpp_hca_qdev_reset(DeviceState *dev)
{
    ChppHcaState *s = CHPP_HCA(dev);

    chpp_sriov_reset_pf(s);
    chpp_hca_soft_reset(s);
}

static bool chpp_check_range(const char *name, uint64_t val, uint64_t min,
                             uint64_t max, Error **errp)
{
    if (val < min || val > max) {
        error_setg(errp, "chpp-hca: %s=%" PRIu64 " is outside %" PRIu64
                   "..%" PRIu64, name, val, min, max);
        return false;
    }
    return true;
}

/* Dest-Mod needs a power of two; the header's TC field holds VC 0..4. */
static bool chpp_check_vcs(uint8_t vcs, Error **errp)
{
    if (vcs != 1 && vcs != 2 && vcs != 4) {
        error_setg(errp, "chpp-hca: vcs=%u: data VCs are 1, 2 or 4", vcs);
        return false;
    }
    return true;
}

static bool chpp_check_ring_size(uint32_t size, Error **errp)
{
    if (!chpp_check_range("x-link-ring-size", size, CHPP_LINK_RING_MIN,
                          CHPP_LINK_RING_MAX, errp)) {
        return false;
    }
    if (!is_power_of_2(size)) {
        error_setg(errp, "chpp-hca: x-link-ring-size=%" PRIu32
                   " is not a power of two", size);
        return false;
    }
    return true;
}

static bool chpp_check_pow2(const char *name, uint32_t val, uint32_t min,
                            uint32_t max, Error **errp)
{
    if (!chpp_check_range(name, val, min, max, errp)) {
        return false;
    }
    if (!is_power_of_2(val)) {
        error_setg(errp, "chpp-hca: %s=%" PRIu32 " is not a power of two",
                   name, val);
        return false;
    }
    return true;
}

/* The timing model's parameters (docs/properties.md, timing-model.md). */
static bool chpp_check_timing(const ChppTimingParams *t, Error **errp)
{
    return chpp_check_range("timing-clock-mhz", t->clock_mhz, 1,
                            CHPP_MAX_TIMING_CLOCK_MHZ, errp) &&
           chpp_check_pow2("timing-bus-bytes", t->bus_bytes,
                           CHPP_MIN_TIMING_BUS_BYTES,
                           CHPP_MAX_TIMING_BUS_BYTES, errp) &&
           chpp_check_pow2("timing-mtu", t->mtu, CHPP_MIN_TIMING_PAYLOAD,
                           CHPP_MAX_TIMING_PAYLOAD, errp) &&
           chpp_check_pow2("timing-read-req", t->read_req,
                           CHPP_MIN_TIMING_PAYLOAD, CHPP_MAX_TIMING_PAYLOAD,
                           errp) &&
           chpp_check_pow2("timing-host-mps", t->host_mps,
                           CHPP_MIN_TIMING_PAYLOAD, CHPP_MAX_TIMING_PAYLOAD,
                           errp) &&
           chpp_check_range("timing-tags", t->tags, 1, CHPP_MAX_TIMING_TAGS,
                            errp) &&
           chpp_check_range("timing-mem-cycles", t->mem_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-xbar-cycles", t->xbar_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-nap-imm-cycles", t->nap_imm_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-nap-ind-cycles", t->nap_ind_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-put-cycles", t->put_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-get-cycles", t->get_cycles, 0,
                            CHPP_MAX_TIMING_CYCLES, errp) &&
           chpp_check_range("timing-link-ns", t->link_ns, 0,
                            CHPP_MAX_TIMING_LINK_NS, errp);
}

static bool chpp_hca_check_params(ChppHcaState *s, Error **errp)
{
    const ChppHcaParams *p = &s->params;

    return chpp_check_range("node-id", p->node_id, 0, CHPP_MAX_NODE_ID,
                            errp) &&
           chpp_check_range("num-qps", p->num_qps, 1, CHPP_MAX_QPS, errp) &&
           chpp_check_range("num-cqs", p->num_cqs, 1, CHPP_MAX_CQS, errp) &&
           chpp_check_range("num-eqs", p->num_eqs, 1, CHPP_MAX_EQS, errp) &&
           chpp_check_range("num-mpts", p->num_mpts, 1, CHPP_MAX_MPTS,
                            errp) &&
           chpp_check_range("num-pds", p->num_pds, 1, CHPP_MAX_PDS, errp) &&
           chpp_check_range("msix-vectors", p->msix_vectors, 1,
                            CHPP_MAX_MSIX_VECTORS, errp) &&
           chpp_check_range("uar-pages", p->uar_pages, 1, CHPP_MAX_UAR_PAGES,
                            errp) &&
           chpp_check_range("num-mtts", p->num_mtts, 1, CHPP_MAX_MTTS,
                            errp) &&
           chpp_check_range("num-srqs", p->num_srqs, 0, CHPP_MAX_SRQS,
                            errp) &&
           chpp_check_range("cmd-latency-ns", p->cmd_latency_ns, 0,
                            CHPP_MAX_CMD_LATENCY_NS, errp) &&
           chpp_check_range("engine-delay-ns", p->engine_delay_ns, 0,
                            CHPP_MAX_CMD_LATENCY_NS, errp) &&
           chpp_check_range("sriov-max-vfs", p->sriov_max_vfs, 0,
                            CHPP_MAX_VFS, errp) &&
           chpp_check_ring_size(s->link.ring_size, errp) &&
           chpp_check_range("link-ack-hold-us", s->link.ack_hold_us, 0,
                            CHPP_LINK_ACK_HOLD_MAX_US, errp) &&
           chpp_check_range("x-link-poll-idle-us", s->link.poll_idle_us, 1,
                            CHPP_LINK_ACK_HOLD_MAX_US, errp) &&
           chpp_check_range("link-spin-us", s->link.spin_us, 0,
                            CHPP_LINK_SPIN_MAX_US, errp) &&
           chpp_check_range("x-link-spin-guest-us", s->link.spin_guest_us,
                            1, CHPP_LINK_ACK_HOLD_MAX_US, errp) &&
           chpp_check_vcs(p->data_vcs, errp) &&
           chpp_check_timing(&p->timing, errp);
}

static int chpp_add_pm_capability(PCIDevice *pdev, Error **errp)
{
    int ret = pci_add_capability(pdev, PCI_CAP_ID_PM, CHPP_PCI_CAP_PM,
                                 PCI_PM_SIZEOF, errp);

    if (ret < 0) {
        return ret;
    }
    pci_set_word(pdev->config + CHPP_PCI_CAP_PM + PCI_PM_PMC,
                 PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->config + CHPP_PCI_CAP_PM + PCI_PM_CTRL,
                 PCI_PM_CTRL_NO_SOFT_RESET);
    pci_set_word(pdev->wmask + CHPP_PCI_CAP_PM + PCI_PM_CTRL,
                 PCI_PM_CTRL_STATE_MASK);
    return 0;
}

static bool chpp_hca_init_msix(ChppHcaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned i;

    if (msix_init(pdev, s->params.msix_vectors,
                  &s->bar0, CHPP_BAR_REGS, CHPP_MSIX_TABLE_OFFSET,
                  &s->bar0, CHPP_BAR_REGS, CHPP_MSIX_PBA_OFFSET,
                  CHPP_PCI_CAP_MSIX, errp) < 0) {
        return false;
    }
    /* Every vector may carry an EQ, so all are in use for the device life. */
    for (i = 0; i < s->params.msix_vectors; i++) {
        msix_vector_use(pdev, i);
    }
    return true;
}

static bool chpp_hca_init_pci(ChppHcaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint64_t uar_size = pow2ceil((uint64_t)s->params.uar_pages *
                                 CHPP_UAR_PAGE_SIZE);

    bool vf = pci_is_vf(pdev);

    /* A VF's IDs read as 0xffff; its device ID is in the PF's capability. */
    pci_config_set_vendor_id(pdev->config, s->params.vendor_id);
    pci_config_set_device_id(pdev->config, vf ? s->params.vf_device_id
                                              : s->params.device_id);
    pci_config_set_class(pdev->config, CHPP_PCI_CLASS_CODE);
    pci_config_set_revision(pdev->config, CHPP_PCI_REVISION);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_VENDOR_ID, s->params.vendor_id);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_ID, s->params.device_id);

    memory_region_init(&s->bar0, OBJECT(s), "chpp-hca-bar0", CHPP_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &chpp_hca_regs_ops, s,
                          "chpp-hca-regs", CHPP_MSIX_TABLE_OFFSET);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    memory_region_init_io(&s->bar2, OBJECT(s), &chpp_hca_uar_ops, s,
                          "chpp-hca-uar", uar_size);
    if (vf) {
        pcie_sriov_vf_register_bar(pdev, CHPP_BAR_REGS, &s->bar0);
        pcie_sriov_vf_register_bar(pdev, CHPP_BAR_UAR, &s->bar2);
    } else {
        pci_register_bar(pdev, CHPP_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);
        pci_register_bar(pdev, CHPP_BAR_UAR, PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_TYPE_64 |
                         PCI_BASE_ADDRESS_MEM_PREFETCH, &s->bar2);
    }

    if (!vf && chpp_add_pm_capability(pdev, errp) < 0) {
        return false;
    }
    if (!chpp_hca_init_msix(s, errp)) {
        return false;
    }
    if (pcie_endpoint_cap_init(pdev, CHPP_PCI_CAP_EXP) < 0) {
        error_setg(errp, "chpp-hca: cannot add the PCIe capability");
        return false;
    }
    pcie_cap_flr_init(pdev);
    return vf || chpp_sriov_init_pf(s, errp);
}

/*
 * The link fails to come up: the PF takes its VFs back (QEMU 10.0 made
 * them already) so that no VF outlives a PF that never existed.
 */
static bool chpp_link_realize_checked(ChppHcaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    ERRP_GUARD();

    if (chpp_link_realize(s, errp)) {
        chpp_link_fabric_realize(s, errp);
    }
    if (!*errp) {
        return true;
    }
    chpp_link_capture_close(s);
    if (!pci_is_vf(pdev)) {
        chpp_sriov_exit_pf(s);
    }
    msix_unuse_all_vectors(pdev);
    msix_uninit(pdev, &s->bar0, &s->bar0);
    return false;
}

static void chpp_hca_alloc_tables(ChppHcaState *s)
{
    s->mpts = g_new0(ChppMpt, s->params.num_mpts);
    s->mtt = g_new0(uint64_t, s->params.num_mtts);
    s->cqs = g_new0(ChppCq, s->params.num_cqs);
    s->qps = g_new0(ChppQp, s->params.num_qps);
    s->srqs = g_new0(ChppSrq, s->params.num_srqs);
}

static void chpp_hca_free_tables(ChppHcaState *s)
{
    g_free(s->srqs);
    g_free(s->qps);
    g_free(s->cqs);
    g_free(s->mtt);
    g_free(s->mpts);
}

static void chpp_hca_realize(PCIDevice *pdev, Error **errp)
{
    ChppHcaState *s = CHPP_HCA(pdev);

    if (pci_is_vf(pdev)) {
        chpp_sriov_vf_params(s);
    }
    if (!chpp_hca_check_params(s, errp) ||
        !chpp_link_capture_open(s, errp)) {
        return;
    }
    if (!chpp_hca_init_pci(s, errp)) {
        chpp_link_capture_close(s);
        if (msix_present(pdev)) {
            msix_unuse_all_vectors(pdev);
            msix_uninit(pdev, &s->bar0, &s->bar0);
        }
        return;
    }
    chpp_hca_alloc_tables(s);
    chpp_cmd_init(s);
    chpp_engine_init(s);
    if (!chpp_link_realize_checked(s, errp)) {
        return;
    }
    chpp_hca_soft_reset(s);
    chpp_debug_register(s, true);
}

/*
 * Unrealize may happen under device code still on the stack (a guest
 * pointed a DMA or MSI-X address at the PF's SR-IOV control): the device
 * becomes gone, refuses every further DMA and interrupt and schedules
 * nothing, and its tables live until the last chpp_hold() is released
 * (chpp_hca_finalize).
 */
static void chpp_hca_exit(PCIDevice *pdev)
{
    ChppHcaState *s = CHPP_HCA(pdev);

    s->gone = true;
    chpp_debug_register(s, false);
    if (!pci_is_vf(pdev)) {
        chpp_sriov_exit_pf(s);
    }
    chpp_link_fabric_unrealize(s);
    chpp_link_unrealize(s);
    chpp_engine_stop(s);
    chpp_cmd_reset(s);
    msix_unuse_all_vectors(pdev);
    msix_uninit(pdev, &s->bar0, &s->bar0);
    /*
     * A subregion holds a reference to its owner, here the device itself:
     * left in BAR0, it would keep a VF alive after pcie_sriov drops it.
     */
    memory_region_del_subregion(&s->bar0, &s->regs);
}

static void chpp_hca_finalize(Object *obj)
{
    ChppHcaState *s = CHPP_HCA(obj);

    if (s->engine_bh) {
        chpp_engine_fini(s);
    }
    if (s->cmd_bh) {
        chpp_cmd_fini(s);
    }
    chpp_hca_free_tables(s);
}

/*
 * A VF that VF Enable brings up takes the quotas its PF holds now.  QEMU
 * 10 realizes the VFs with their PF, with the quotas in force then; a
 * SET_VF_RES since (VFs disabled) changed them.  The VF was reset with its
 * PF and nothing of it is in use: its tables, QP timers and MSI-X table
 * are made anew at the new sizes.  With QEMU 7.2 the VFs were just
 * realized with these quotas, and nothing changes.
 */
static void chpp_hca_vf_refit(ChppHcaState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    ChppHcaParams old = s->params, now;
    uint8_t caps[PCI_CONFIG_SPACE_SIZE];
    uint8_t off;

    chpp_sriov_vf_params(s);
    now = s->params;
    if (now.num_qps == old.num_qps && now.num_cqs == old.num_cqs &&
        now.num_eqs == old.num_eqs && now.num_mpts == old.num_mpts &&
        now.num_pds == old.num_pds && now.num_mtts == old.num_mtts &&
        now.msix_vectors == old.msix_vectors &&
        now.num_srqs == old.num_srqs) {
        return;
    }
    trace_chpp_hca_vf_refit(s->func, now.num_qps, now.msix_vectors);
    /* The list as it was: msix_init() puts MSI-X first (migration). */
    memcpy(caps, pdev->config, sizeof(caps));
    s->params = old;
    chpp_engine_stop(s);
    chpp_engine_fini(s);
    chpp_hca_free_tables(s);
    msix_unuse_all_vectors(pdev);
    msix_uninit(pdev, &s->bar0, &s->bar0);
    s->params = now;
    /* The same capability at the same place, only smaller or larger. */
    chpp_hca_init_msix(s, &error_abort);
    pdev->config[PCI_CAPABILITY_LIST] = caps[PCI_CAPABILITY_LIST];
    for (off = caps[PCI_CAPABILITY_LIST]; off;
         off = caps[off + PCI_CAP_LIST_NEXT]) {
        pdev->config[off + PCI_CAP_LIST_NEXT] = caps[off + PCI_CAP_LIST_NEXT];
    }
    chpp_hca_alloc_tables(s);
    chpp_engine_init(s);
    chpp_hca_soft_reset(s);
}

void chpp_hca_vfs_enabled(ChppHcaState *pf)
{
    PCIDevice *pdev = PCI_DEVICE(pf);
    uint16_t i, n = pcie_sriov_num_vfs(pdev);

    for (i = 0; i < n; i++) {
        chpp_hca_vf_refit(CHPP_HCA(pcie_sriov_get_vf_at_index(pdev, i)));
    }
}

static void chpp_hca_write_config(PCIDevice *pdev, uint32_t addr,
                                  uint32_t val, int len)
{
    uint8_t *devctl = pdev->config + pdev->exp.exp_cap + PCI_EXP_DEVCTL;
    bool vfs = !pci_is_vf(pdev) && pcie_sriov_num_vfs(pdev);
    bool flr;

    pci_default_write_config(pdev, addr, val, len);
    if (!pci_is_vf(pdev) && !vfs && pcie_sriov_num_vfs(pdev)) {
        chpp_hca_vfs_enabled(CHPP_HCA(pdev));
    }
    flr = pci_get_word(devctl) & PCI_EXP_DEVCTL_BCR_FLR;
    pcie_cap_flr_write_config(pdev, addr, val, len);
    /* The PF learns that a VF was reset under it. */
    if (flr && pci_is_vf(pdev)) {
        chpp_sriov_vf_flr(CHPP_HCA(pdev));
    }
}

static Property chpp_hca_props[] = {
    DEFINE_PROP_UINT16("vendor-id", ChppHcaState, params.vendor_id,
                       CHPP_PCI_VENDOR_ID),
    DEFINE_PROP_UINT16("device-id", ChppHcaState, params.device_id,
                       CHPP_PCI_DEVICE_ID_PF),
    DEFINE_PROP_UINT16("vf-device-id", ChppHcaState, params.vf_device_id,
                       CHPP_PCI_DEVICE_ID_VF),
    DEFINE_PROP_UINT8("sriov-max-vfs", ChppHcaState, params.sriov_max_vfs,
                      CHPP_MAX_VFS),
    DEFINE_PROP_UINT16("node-id", ChppHcaState, params.node_id, 0),
    DEFINE_PROP_UINT8("vcs", ChppHcaState, params.data_vcs, 1),
    DEFINE_PROP_CHR("chardev", ChppHcaState, link.chr),
    DEFINE_PROP_NETDEV("netdev", ChppHcaState, link.nic_conf.peers),
    DEFINE_PROP_UINT32("link-hello-ms", ChppHcaState, link.hello_ms, 500),
    DEFINE_PROP_UINT32("link-peer-timeout-ms", ChppHcaState, link.lost_ms,
                       3000),
    DEFINE_PROP_UINT32("link-credits", ChppHcaState, link.eth_credits,
                       CHPP_LINK_ETH_CREDITS),
    DEFINE_PROP_BOOL("link-thread", ChppHcaState, link.use_thread, true),
    DEFINE_PROP_BOOL("link-shm", ChppHcaState, link.use_shm, true),
    DEFINE_PROP_UINT32("link-ack-hold-us", ChppHcaState, link.ack_hold_us,
                       CHPP_LINK_ACK_HOLD_US),
    DEFINE_PROP_STRING("capture", ChppHcaState, link.capture_path),
    DEFINE_PROP_SIZE("capture-max", ChppHcaState, link.capture_max,
                     CHPP_CAPTURE_MAX_DEFAULT),
    DEFINE_PROP_UINT32("x-link-ring-size", ChppHcaState, link.ring_size,
                       CHPP_LINK_RING_DEFAULT),
    DEFINE_PROP_UINT32("x-link-poll-idle-us", ChppHcaState, link.poll_idle_us,
                       CHPP_LINK_POLL_IDLE_US),
    DEFINE_PROP_UINT32("link-spin-us", ChppHcaState, link.spin_us,
                       CHPP_LINK_SPIN_US),
    DEFINE_PROP_UINT32("x-link-spin-guest-us", ChppHcaState,
                       link.spin_guest_us, CHPP_LINK_SPIN_GUEST_US),
    DEFINE_PROP_UINT32("num-qps", ChppHcaState, params.num_qps,
                       CHPP_DEFAULT_QPS),
    DEFINE_PROP_UINT32("num-cqs", ChppHcaState, params.num_cqs,
                       CHPP_DEFAULT_CQS),
    DEFINE_PROP_UINT32("num-eqs", ChppHcaState, params.num_eqs,
                       CHPP_DEFAULT_EQS),
    DEFINE_PROP_UINT32("num-mpts", ChppHcaState, params.num_mpts,
                       CHPP_DEFAULT_MPTS),
    DEFINE_PROP_UINT32("num-pds", ChppHcaState, params.num_pds,
                       CHPP_DEFAULT_PDS),
    DEFINE_PROP_UINT32("msix-vectors", ChppHcaState, params.msix_vectors,
                       CHPP_DEFAULT_MSIX_VECTORS),
    DEFINE_PROP_UINT32("uar-pages", ChppHcaState, params.uar_pages,
                       CHPP_DEFAULT_UAR_PAGES),
    DEFINE_PROP_UINT32("num-mtts", ChppHcaState, params.num_mtts,
                       CHPP_DEFAULT_MTTS),
    DEFINE_PROP_UINT32("num-srqs", ChppHcaState, params.num_srqs,
                       CHPP_DEFAULT_SRQS),
    DEFINE_PROP_UINT64("cmd-latency-ns", ChppHcaState, params.cmd_latency_ns,
                       0),
    DEFINE_PROP_UINT64("engine-delay-ns", ChppHcaState,
                       params.engine_delay_ns, 0),
    DEFINE_PROP_BOOL("x-dma-any-target", ChppHcaState, dma_any_target, false),
    /* The timing model, docs/timing-model.md */
    DEFINE_PROP_BOOL("timing", ChppHcaState, params.timing.on, false),
    DEFINE_PROP_UINT32("timing-clock-mhz", ChppHcaState,
                       params.timing.clock_mhz, CHPP_TIMING_DEF_CLOCK_MHZ),
    DEFINE_PROP_UINT32("timing-bus-bytes", ChppHcaState,
                       params.timing.bus_bytes, CHPP_TIMING_DEF_BUS_BYTES),
    DEFINE_PROP_UINT32("timing-mtu", ChppHcaState, params.timing.mtu,
                       CHPP_TIMING_DEF_MTU),
    DEFINE_PROP_UINT32("timing-read-req", ChppHcaState,
                       params.timing.read_req, CHPP_TIMING_DEF_READ_REQ),
    DEFINE_PROP_UINT32("timing-host-mps", ChppHcaState,
                       params.timing.host_mps, CHPP_TIMING_DEF_HOST_MPS),
    DEFINE_PROP_UINT32("timing-tags", ChppHcaState, params.timing.tags,
                       CHPP_TIMING_DEF_TAGS),
    DEFINE_PROP_UINT32("timing-mem-cycles", ChppHcaState,
                       params.timing.mem_cycles, CHPP_TIMING_DEF_MEM_CYCLES),
    DEFINE_PROP_UINT32("timing-xbar-cycles", ChppHcaState,
                       params.timing.xbar_cycles,
                       CHPP_TIMING_DEF_XBAR_CYCLES),
    DEFINE_PROP_UINT32("timing-nap-imm-cycles", ChppHcaState,
                       params.timing.nap_imm_cycles,
                       CHPP_TIMING_DEF_NAP_IMM_CYCLES),
    DEFINE_PROP_UINT32("timing-nap-ind-cycles", ChppHcaState,
                       params.timing.nap_ind_cycles,
                       CHPP_TIMING_DEF_NAP_IND_CYCLES),
    DEFINE_PROP_UINT32("timing-put-cycles", ChppHcaState,
                       params.timing.put_cycles, CHPP_TIMING_DEF_PUT_CYCLES),
    DEFINE_PROP_UINT32("timing-get-cycles", ChppHcaState,
                       params.timing.get_cycles, CHPP_TIMING_DEF_GET_CYCLES),
    DEFINE_PROP_UINT32("timing-link-ns", ChppHcaState, params.timing.link_ns,
                       CHPP_TIMING_DEF_LINK_NS),
    DEFINE_PROP_END_OF_LIST(),
};

static void G_GNUC_PRINTF(3, 4)
chpp_hca_prop_desc(ObjectClass *oc, const char *name, const char *fmt, ...)
{
    g_autofree char *desc = NULL;
    va_list ap;

    va_start(ap, fmt);
    desc = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    object_class_property_set_description(oc, name, desc);
}

/* Ranges are printed from the limits chpp_hca_check_params() enforces. */
static void chpp_hca_prop_descs(ObjectClass *oc)
{
    g_autofree char *ring_min = size_to_str(CHPP_LINK_RING_MIN);
    g_autofree char *ring_max = size_to_str(CHPP_LINK_RING_MAX);
    g_autofree char *uar_page = size_to_str(CHPP_UAR_PAGE_SIZE);
    unsigned max_latency_s = CHPP_MAX_CMD_LATENCY_NS / NANOSECONDS_PER_SECOND;

    chpp_hca_prop_desc(oc, "vendor-id", "PCI vendor ID (placeholder until "
                       "silicon IDs exist)");
    chpp_hca_prop_desc(oc, "device-id", "PCI device ID of the physical "
                       "function");
    chpp_hca_prop_desc(oc, "vf-device-id", "PCI device ID of the virtual "
                       "functions");
    chpp_hca_prop_desc(oc, "sriov-max-vfs", "SR-IOV TotalVFs (0..%u, 0 = no "
                       "SR-IOV capability)", CHPP_MAX_VFS);
    chpp_hca_prop_desc(oc, "node-id", "node id (0..%u): SRC-CPU of outgoing "
                       "packets; LID = (function << %u | node-id) + 1",
                       CHPP_MAX_NODE_ID, CHPP_LID_FN_SHIFT);
    chpp_hca_prop_desc(oc, "chardev", "chardev (a socket) of the link to the "
                       "peer adapter; without one only this node is "
                       "reachable");
    chpp_hca_prop_desc(oc, "vcs", "data virtual channels of the link (1, 2 "
                       "or 4; node d's packets on VC d mod vcs), plus the "
                       "GET VC; both ends must agree");
    chpp_hca_prop_desc(oc, "netdev", "netdev of the link to the adapters "
                       "of an Ethernet segment (docs/fabric.md); exclusive "
                       "with chardev");
    chpp_hca_prop_desc(oc, "link-hello-ms", "netdev link: HELLO broadcast "
                       "period, ms (keepalive)");
    chpp_hca_prop_desc(oc, "link-peer-timeout-ms", "netdev link: a peer "
                       "silent this long is lost, ms (above link-hello-ms)");
    chpp_hca_prop_desc(oc, "link-credits", "netdev link: frames granted per "
                       "peer and VC (1..4096)");
    chpp_hca_prop_desc(oc, "link-thread", "read a plain socket link in a "
                       "thread, in large chunks (off: through the chardev, "
                       "4 KiB at a time)");
    chpp_hca_prop_desc(oc, "link-ack-hold-us", "socket link: plain ACKs and "
                       "credits wait up to this long for a request to go "
                       "with, us (0..%u; 0: sent at once)",
                       CHPP_LINK_ACK_HOLD_MAX_US);
    chpp_hca_prop_desc(oc, "capture", "pcap file of every record sent and "
                       "received on the chardev link, framed as the "
                       "Ethernet link frames them (docs/capture.md)");
    chpp_hca_prop_desc(oc, "capture-max", "bytes the capture file may "
                       "reach; then the capture stops");
    chpp_hca_prop_desc(oc, "x-link-ring-size", "bytes the link's reader "
                       "thread reads ahead (power of two, %s..%s; for tests)",
                       ring_min, ring_max);
    chpp_hca_prop_desc(oc, "x-link-poll-idle-us", "socket link: polls of "
                       "CHPP_UAR_DB_STATUS further apart than this end busy "
                       "polling, us (1..%u; for tests)",
                       CHPP_LINK_ACK_HOLD_MAX_US);
    chpp_hca_prop_desc(oc, "link-spin-us", "shared-memory link: the "
                       "reader watches the peer's ring this long before it "
                       "sleeps, while the guest leaves the adapter alone, "
                       "us (0..%u; 0: never)", CHPP_LINK_SPIN_MAX_US);
    chpp_hca_prop_desc(oc, "x-link-spin-guest-us", "shared-memory link: "
                       "no spin this long after a doorbell or a poll, "
                       "us (1..%u; for tests)", CHPP_LINK_ACK_HOLD_MAX_US);
    chpp_hca_prop_desc(oc, "num-qps", "queue pairs (1..%u; the FPGA has 4)",
                       CHPP_MAX_QPS);
    chpp_hca_prop_desc(oc, "num-cqs", "completion queues (1..%u)",
                       CHPP_MAX_CQS);
    chpp_hca_prop_desc(oc, "num-eqs", "event queues (1..%u)", CHPP_MAX_EQS);
    chpp_hca_prop_desc(oc, "num-mpts", "memory regions (1..%u)",
                       CHPP_MAX_MPTS);
    chpp_hca_prop_desc(oc, "num-pds", "protection domains (1..%u)",
                       CHPP_MAX_PDS);
    chpp_hca_prop_desc(oc, "msix-vectors", "MSI-X vectors (1..%u)",
                       CHPP_MAX_MSIX_VECTORS);
    chpp_hca_prop_desc(oc, "uar-pages", "%s UAR pages in BAR2 (1..%u; BAR "
                       "rounded to a power of two)", uar_page,
                       CHPP_MAX_UAR_PAGES);
    chpp_hca_prop_desc(oc, "num-mtts", "MTT entries, one per registered page "
                       "(1..%u)", CHPP_MAX_MTTS);
    chpp_hca_prop_desc(oc, "num-srqs", "shared receive queues (0..%u, 0 = "
                       "none)", CHPP_MAX_SRQS);
    chpp_hca_prop_desc(oc, "cmd-latency-ns", "virtual time each HCR command "
                       "takes, 0 = next main loop iteration (max %u s)",
                       max_latency_s);
    chpp_hca_prop_desc(oc, "engine-delay-ns", "virtual time before the engine "
                       "serves its doorbell FIFO, 0 = next main loop "
                       "iteration (max %u s)", max_latency_s);
    chpp_hca_prop_desc(oc, "x-dma-any-target", "tests only: let DMA and MSI-X "
                       "reach PCI config space and BARs (docs/security.md)");
    chpp_hca_prop_desc(oc, "timing", "timing mode: work takes the virtual "
                       "time the FPGA prototype takes (docs/timing-model.md)");
    chpp_hca_prop_desc(oc, "timing-clock-mhz", "timing: engine clock, MHz "
                       "(1..%u)", CHPP_MAX_TIMING_CLOCK_MHZ);
    chpp_hca_prop_desc(oc, "timing-bus-bytes", "timing: internal bus width, "
                       "bytes (power of two, %u..%u)",
                       CHPP_MIN_TIMING_BUS_BYTES, CHPP_MAX_TIMING_BUS_BYTES);
    chpp_hca_prop_desc(oc, "timing-mtu", "timing: largest TLP and packet "
                       "payload, bytes (power of two, %u..%u)",
                       CHPP_MIN_TIMING_PAYLOAD, CHPP_MAX_TIMING_PAYLOAD);
    chpp_hca_prop_desc(oc, "timing-read-req", "timing: largest memory read "
                       "request, bytes (power of two, %u..%u)",
                       CHPP_MIN_TIMING_PAYLOAD, CHPP_MAX_TIMING_PAYLOAD);
    chpp_hca_prop_desc(oc, "timing-host-mps", "timing: largest TLP payload "
                       "the host sends or takes, bytes (power of two, "
                       "%u..%u)", CHPP_MIN_TIMING_PAYLOAD,
                       CHPP_MAX_TIMING_PAYLOAD);
    chpp_hca_prop_desc(oc, "timing-tags", "timing: PCIe read tags (1..%u)",
                       CHPP_MAX_TIMING_TAGS);
    chpp_hca_prop_desc(oc, "timing-mem-cycles", "timing: cycles from a read "
                       "request to its first data (0..%u)",
                       CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-xbar-cycles", "timing: cycles through the "
                       "crossbar (0..%u)", CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-nap-imm-cycles", "timing: processing "
                       "cycles of a NAP immediate (0..%u)",
                       CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-nap-ind-cycles", "timing: processing "
                       "cycles of a NAP indirect (0..%u)",
                       CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-put-cycles", "timing: processing cycles "
                       "of a PUT (0..%u)", CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-get-cycles", "timing: processing cycles "
                       "of a GET request (0..%u)", CHPP_MAX_TIMING_CYCLES);
    chpp_hca_prop_desc(oc, "timing-link-ns", "timing: host to adapter link "
                       "latency, one way, ns (0..%u)",
                       CHPP_MAX_TIMING_LINK_NS);
}

static void chpp_hca_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);

    pc->realize = chpp_hca_realize;
    pc->exit = chpp_hca_exit;
    pc->config_write = chpp_hca_write_config;
    pc->vendor_id = CHPP_PCI_VENDOR_ID;
    pc->device_id = CHPP_PCI_DEVICE_ID_PF;
    pc->class_id = CHPP_PCI_CLASS_CODE;
    pc->revision = CHPP_PCI_REVISION;

    dc->desc = "cHPP host channel adapter (RDMA NIC)";
    device_class_set_legacy_reset(dc, chpp_hca_qdev_reset);
    dc->vmsd = &vmstate_chpp_hca;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    chpp_device_class_set_props(dc, chpp_hca_props);
    chpp_hca_prop_descs(oc);
}

static void chpp_hca_instance_init(Object *obj)
{
    chpp_link_add_properties(obj);
    chpp_debug_add_properties(obj);
}

static const TypeInfo chpp_hca_info = {
    .name = TYPE_CHPP_HCA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ChppHcaState),
    .instance_init = chpp_hca_instance_init,
    .instance_finalize = chpp_hca_finalize,
    .class_init = chpp_hca_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

/*
 * A VF is the same device; only its state travels inside the PF's
 * section (chpp-hca-vmstate.c), and only pcie_sriov creates one.
 */
static void chpp_hca_vf_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);

    dc->desc = "cHPP host channel adapter virtual function";
    dc->vmsd = NULL;
    dc->user_creatable = false;
}

static const TypeInfo chpp_hca_vf_info = {
    .name = TYPE_CHPP_HCA_VF,
    .parent = TYPE_CHPP_HCA,
    .class_init = chpp_hca_vf_class_init,
};

static void chpp_hca_register_types(void)
{
    type_register_static(&chpp_hca_info);
    type_register_static(&chpp_hca_vf_info);
}

type_init(chpp_hca_register_types)
