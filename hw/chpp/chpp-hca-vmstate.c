/*
 * chpp-hca: migration and snapshots.
 *
 * Every function (the PF and each VF) has the same state, described once
 * by vmstate_chpp_function.  VFs are objects pcie_sriov creates when the
 * guest sets VF Enable, and QEMU 7.2 does not create them again when the
 * PF's config space is loaded, so a VF has no vmstate section of its own
 * (TYPE_CHPP_HCA_VF has no vmsd): the PF's section carries them.  Its
 * "chpp-hca/sriov" subsection holds the quotas and arbitration state and,
 * once loaded, re-creates the VFs the source had; the "chpp-hca/vfs"
 * subsection that follows then loads each VF's state into its VF.
 *
 * A migration stream is untrusted input: what a function cannot hold is
 * refused (the load fails) before anything uses it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

static int chpp_function_pre_load(void *opaque)
{
    ChppHcaState *s = opaque;
    unsigned i;

    chpp_db_err_pre_load(s);
    chpp_srq_pre_load(s);
    chpp_mr_pre_load(s);
    /* Streams without the /mcg and /sma subsections: no group, no SM. */
    chpp_mcg_reset(s);
    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        chpp_sma_defaults(s, &s->sma[i]);
    }
    return 0;
}

static int chpp_function_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    unsigned i;
    int ret;

    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        if (!chpp_port_state_name(s->port_state[i])) {
            return chpp_refuse(s, "port state: port_state[%u] %u", i,
                               s->port_state[i]);
        }
    }
    /*
     * In this order: QPs refer to CQs and SRQs, the engine to the QPs'
     * rings.
     */
    ret = chpp_eq_post_load(s);
    if (!ret) {
        ret = chpp_mr_post_load(s);
    }
    if (!ret) {
        ret = chpp_cq_post_load(s);
    }
    if (!ret) {
        ret = chpp_srq_post_load(s);
    }
    if (!ret) {
        ret = chpp_qp_post_load(s);
    }
    if (!ret) {
        ret = chpp_engine_check_load(s);
    }
    if (ret) {
        return ret;
    }
    chpp_cmd_post_load(s);
    chpp_engine_post_load(s);
    return 0;
}

static const VMStateDescription *chpp_function_subsections[] = {
    &vmstate_chpp_db_err,
    &vmstate_chpp_db_lost,
    &vmstate_chpp_srqs,
    &vmstate_chpp_srq_wqes,
    &vmstate_chpp_sma,
    &vmstate_chpp_mcg,
    &vmstate_chpp_frmr,
    NULL
};

/* What every function has: registers, tables, engine, doorbell FIFO. */
static const VMStateDescription vmstate_chpp_function = {
    .name = "chpp-hca-function",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = chpp_function_pre_load,
    .post_load = chpp_function_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, ChppHcaState),
        VMSTATE_MSIX(parent_obj, ChppHcaState),
        VMSTATE_UINT32_ARRAY(hcr, ChppHcaState, CHPP_HCR_DWORDS),
        VMSTATE_TIMER_PTR(cmd_timer, ChppHcaState),
        VMSTATE_BOOL(hca_init, ChppHcaState),
        VMSTATE_UINT8_ARRAY(port_state, ChppHcaState, CHPP_NUM_PORTS),
        VMSTATE_BOOL_ARRAY(port_open, ChppHcaState, CHPP_NUM_PORTS),
        VMSTATE_UINT32(scratch, ChppHcaState),
        VMSTATE_UINT32_ARRAY(counters, ChppHcaState, CHPP_CNT_NUM),
        VMSTATE_STRUCT_ARRAY(eqs, ChppHcaState, CHPP_MAX_EQS, 1,
                             vmstate_chpp_eq, ChppEq),
        VMSTATE_UINT8_ARRAY(event_eq, ChppHcaState, CHPP_EVENT_NUM_TYPES),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(mpts, ChppHcaState,
                                             params.num_mpts,
                                             vmstate_chpp_mpt, ChppMpt),
        VMSTATE_VARRAY_UINT32(mtt, ChppHcaState, params.num_mtts, 0,
                              vmstate_info_uint64, uint64_t),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(cqs, ChppHcaState,
                                             params.num_cqs,
                                             vmstate_chpp_cq, ChppCq),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(qps, ChppHcaState,
                                             params.num_qps,
                                             vmstate_chpp_qp, ChppQp),
        VMSTATE_UINT32_ARRAY(db_fifo, ChppHcaState, CHPP_DB_FIFO_DEPTH),
        VMSTATE_UINT32(db_head, ChppHcaState),
        VMSTATE_UINT32(db_count, ChppHcaState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = chpp_function_subsections,
};

/*
 * The function state of the object itself (offset 0).  In the stream a
 * nested struct is just its fields, so the PF's section is byte for byte
 * what version 1 wrote with the same fields inline.
 */
#define VMSTATE_CHPP_FUNCTION {                 \
    .name = "function",                         \
    .size = sizeof(ChppHcaState),               \
    .vmsd = &vmstate_chpp_function,             \
    .flags = VMS_STRUCT,                        \
    .offset = 0,                                \
}

/*
 * A VF: which VF it is and the sizes of its tables come first, so a
 * stream for a VF with other quotas fails before any table is read.
 */
static const VMStateDescription vmstate_chpp_vf = {
    .name = "chpp-hca-vf",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8_EQUAL(func, ChppHcaState, "chpp-hca: VF number"),
        VMSTATE_UINT32_EQUAL(params.num_qps, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.num_cqs, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.num_eqs, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.num_mpts, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.num_pds, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.num_mtts, ChppHcaState, NULL),
        VMSTATE_UINT32_EQUAL(params.msix_vectors, ChppHcaState, NULL),
        VMSTATE_CHPP_FUNCTION,
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_chpp_fn_res = {
    .name = "chpp-hca-fn-res",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(num_qps, ChppFnRes),
        VMSTATE_UINT32(num_cqs, ChppFnRes),
        VMSTATE_UINT32(num_eqs, ChppFnRes),
        VMSTATE_UINT32(num_mpts, ChppFnRes),
        VMSTATE_UINT32(num_pds, ChppFnRes),
        VMSTATE_UINT32(num_mtts, ChppFnRes),
        VMSTATE_UINT32(msix_vectors, ChppFnRes),
        VMSTATE_UINT8(weight, ChppFnRes),
        VMSTATE_UINT8(priority, ChppFnRes),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The arbiter's running values stay within a small multiple of the sum of
 * the weights; a stream with values near INT32 limits could overflow them.
 */
#define CHPP_ARB_CURRENT_MAX    (1 << 20)

static bool chpp_sriov_needed(void *opaque)
{
    ChppHcaState *s = opaque;

    return s->params.sriov_max_vfs > 0;
}

/* Take the VFs away without changing the config space just loaded. */
static void chpp_vfs_remove(PCIDevice *pdev)
{
    uint16_t cap = pdev->exp.sriov_cap;
    uint16_t num_vf = pci_get_word(pdev->config + cap + PCI_SRIOV_NUM_VF);

    if (pcie_sriov_num_vfs(pdev)) {
        pcie_sriov_config_write(pdev, cap + PCI_SRIOV_CTRL, 0, 2);
        pci_set_word(pdev->config + cap + PCI_SRIOV_NUM_VF, num_vf);
    }
}

/*
 * The quotas are loaded: create the VFs the source had, as its VF Enable
 * write did, so that "chpp-hca/vfs" can load their state.
 */
static int chpp_sriov_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint16_t cap = pdev->exp.sriov_cap;
    uint16_t ctrl = pci_get_word(pdev->config + cap + PCI_SRIOV_CTRL);
    uint16_t num_vf = pci_get_word(pdev->config + cap + PCI_SRIOV_NUM_VF);
    unsigned i;

    if (!s->params.sriov_max_vfs) {
        return chpp_refuse(s, "SR-IOV state for a PF without SR-IOV");
    }
    /* The quotas a VF is created with: what SET_VF_RES accepts. */
    for (i = 1; i <= s->params.sriov_max_vfs; i++) {
        const ChppFnRes *r = &s->fn_res[i];
        uint32_t val, max;
        const char *bad = chpp_vf_res_invalid(s, r, &val, &max);

        if (bad) {
            return chpp_refuse(s, "VF quotas: fn_res[%u].%s %u (1..%u, the "
                               "PF's own)", i, bad, val, max);
        }
        if (!r->weight || r->priority > CHPP_ARB_MAX_PRIORITY) {
            return chpp_refuse(s, "VF quotas: fn_res[%u] weight %u priority "
                               "%u", i, r->weight, r->priority);
        }
    }
    for (i = 0; i <= CHPP_MAX_VFS; i++) {
        if (s->arb_current[i] > CHPP_ARB_CURRENT_MAX ||
            s->arb_current[i] < -CHPP_ARB_CURRENT_MAX) {
            return chpp_refuse(s, "arbitration state out of range");
        }
    }
    if (!s->fn_res[0].weight ||
        s->fn_res[0].priority > CHPP_ARB_MAX_PRIORITY) {
        return chpp_refuse(s, "PF arbitration weight or priority");
    }
    if (s->mig_num_vfs > s->params.sriov_max_vfs ||
        (s->mig_num_vfs && !(ctrl & PCI_SRIOV_CTRL_VFE))) {
        return chpp_refuse(s, "VF count disagrees with the SR-IOV control");
    }
    chpp_vfs_remove(pdev);
    memset(s->mig_vfs, 0, sizeof(s->mig_vfs));
    if (s->mig_num_vfs) {
        pci_set_word(pdev->config + cap + PCI_SRIOV_NUM_VF, s->mig_num_vfs);
        pcie_sriov_config_write(pdev, cap + PCI_SRIOV_CTRL, ctrl, 2);
        pci_set_word(pdev->config + cap + PCI_SRIOV_NUM_VF, num_vf);
        if (pcie_sriov_num_vfs(pdev) != s->mig_num_vfs) {
            chpp_vfs_remove(pdev);
            return chpp_refuse(s, "cannot create the VFs");
        }
        chpp_upcalls.vfs_enabled(s);
        for (i = 0; i < s->mig_num_vfs; i++) {
            s->mig_vfs[i] = CHPP_HCA(pcie_sriov_get_vf_at_index(pdev, i));
        }
    }
    trace_chpp_hca_vmstate_vfs(s->func, s->mig_num_vfs);
    s->mig_sriov_loaded = true;
    return 0;
}

static const VMStateDescription vmstate_chpp_sriov = {
    .name = "chpp-hca/sriov",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_sriov_needed,
    .post_load = chpp_sriov_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(fn_res, ChppHcaState, 1 + CHPP_MAX_VFS, 1,
                             vmstate_chpp_fn_res, ChppFnRes),
        VMSTATE_INT32_ARRAY(arb_current, ChppHcaState, 1 + CHPP_MAX_VFS),
        VMSTATE_UINT8(mig_num_vfs, ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The VFs' SRQ quotas (ABI 1.5), outside "chpp-hca/sriov" so that streams
 * from before load: only sent when one differs from the default, and
 * loaded before "chpp-hca/sriov" creates the VFs with them.
 */
static bool chpp_srq_quotas_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    unsigned i;

    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        if (s->fn_res[i].num_srqs !=
            MIN(CHPP_VF_DEFAULT_SRQS, s->params.num_srqs)) {
            return s->params.sriov_max_vfs > 0;
        }
    }
    return false;
}

static const VMStateDescription vmstate_chpp_srq_quotas = {
    .name = "chpp-hca/srq-quotas",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_srq_quotas_needed,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(fn_res[1].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[2].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[3].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[4].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[5].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[6].num_srqs, ChppHcaState),
        VMSTATE_UINT32(fn_res[7].num_srqs, ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};

static bool chpp_vfs_needed(void *opaque)
{
    ChppHcaState *s = opaque;

    return s->mig_num_vfs > 0;
}

static int chpp_vfs_pre_load(void *opaque)
{
    ChppHcaState *s = opaque;

    if (!s->mig_sriov_loaded) {
        return chpp_refuse(s, "VF states without the SR-IOV state");
    }
    return 0;
}

static int chpp_vfs_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;

    s->mig_vfs_loaded = true;
    return 0;
}

/* VF n at index n - 1; a VF the destination does not have is NULL. */
static const VMStateDescription vmstate_chpp_vfs = {
    .name = "chpp-hca/vfs",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_vfs_needed,
    .pre_load = chpp_vfs_pre_load,
    .post_load = chpp_vfs_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_ARRAY_OF_POINTER_TO_STRUCT(mig_vfs, ChppHcaState,
                                           CHPP_MAX_VFS, 0, vmstate_chpp_vf,
                                           ChppHcaState),
        VMSTATE_END_OF_LIST()
    }
};

static int chpp_hca_pre_save(void *opaque)
{
    ChppHcaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned i;

    memset(s->mig_vfs, 0, sizeof(s->mig_vfs));
    s->mig_num_vfs = 0;
    if (s->params.sriov_max_vfs) {
        s->mig_num_vfs = pcie_sriov_num_vfs(pdev);
        for (i = 0; i < s->mig_num_vfs; i++) {
            s->mig_vfs[i] = CHPP_HCA(pcie_sriov_get_vf_at_index(pdev, i));
        }
    }
    return 0;
}

static int chpp_hca_pre_load(void *opaque)
{
    ChppHcaState *s = opaque;
    unsigned i;

    s->mig_sriov_loaded = false;
    s->mig_vfs_loaded = false;
    s->mig_num_vfs = 0;
    memset(s->mig_vfs, 0, sizeof(s->mig_vfs));
    /* A stream without "chpp-hca/srq-quotas" has the default ones. */
    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        s->fn_res[i].num_srqs = MIN(CHPP_VF_DEFAULT_SRQS, s->params.num_srqs);
    }
    return 0;
}

static int chpp_hca_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!s->params.sriov_max_vfs) {
        return 0;
    }
    if (!s->mig_sriov_loaded) {
        /* A version 1 stream: VFs could not be enabled then. */
        chpp_vfs_remove(pdev);
        chpp_sriov_defaults(s);
        return 0;
    }
    if (s->mig_num_vfs && !s->mig_vfs_loaded) {
        chpp_vfs_remove(pdev);
        return chpp_refuse(s, "VFs without their state");
    }
    return 0;
}

/* In this order: the VFs exist before their states load. */
static const VMStateDescription *chpp_hca_subsections[] = {
    &vmstate_chpp_srq_quotas,
    &vmstate_chpp_sriov,
    &vmstate_chpp_vfs,
    NULL
};

const VMStateDescription vmstate_chpp_hca = {
    .name = "chpp-hca",
    .version_id = 2,
    .minimum_version_id = 1,
    .pre_save = chpp_hca_pre_save,
    .pre_load = chpp_hca_pre_load,
    .post_load = chpp_hca_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_CHPP_FUNCTION,
        VMSTATE_END_OF_LIST()
    },
    .subsections = chpp_hca_subsections,
};
