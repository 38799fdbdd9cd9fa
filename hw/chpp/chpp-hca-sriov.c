/*
 * chpp-hca: SR-IOV.  One PF and up to 7 VFs (seed 004); each VF is a
 * chpp-hca instance of its own with its own tables, doorbell FIFO and
 * MSI-X, created by QEMU's pcie_sriov when the guest sets VF Enable.
 * What must outlive the VFs lives in the PF: their resource quotas and
 * the arbitration between the functions' doorbell FIFOs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

/* The defaults, within what the PF itself has (a VF never has more). */
void chpp_sriov_defaults(ChppHcaState *s)
{
    const ChppHcaParams *pf = &s->params;
    unsigned i;

    s->fn_res[0] = (ChppFnRes) { .weight = 1 };
    for (i = 1; i <= CHPP_MAX_VFS; i++) {
        s->fn_res[i] = (ChppFnRes) {
            .num_qps = MIN(CHPP_VF_DEFAULT_QPS, pf->num_qps),
            .num_cqs = MIN(CHPP_VF_DEFAULT_CQS, pf->num_cqs),
            .num_eqs = MIN(CHPP_VF_DEFAULT_EQS, pf->num_eqs),
            .num_mpts = MIN(CHPP_VF_DEFAULT_MPTS, pf->num_mpts),
            .num_pds = MIN(CHPP_VF_DEFAULT_PDS, pf->num_pds),
            .num_mtts = MIN(CHPP_VF_DEFAULT_MTTS, pf->num_mtts),
            .msix_vectors = MIN(CHPP_VF_DEFAULT_MSIX, pf->msix_vectors),
            .weight = 1,
            .num_srqs = MIN(CHPP_VF_DEFAULT_SRQS, pf->num_srqs),
        };
    }
}

/*
 * The name of the first count of @r outside 1..the PF's own value of it,
 * or NULL.  Bounding each VF by the PF's properties bounds the memory a
 * PF driver can make QEMU allocate: at most sriov-max-vfs times the PF's
 * own tables.
 */
const char *chpp_vf_res_invalid(ChppHcaState *pf, const ChppFnRes *r,
                                uint32_t *val, uint32_t *max)
{
    const struct {
        const char *name;
        uint32_t val, max;
    } c[] = {
        { "num_qps", r->num_qps, pf->params.num_qps },
        { "num_cqs", r->num_cqs, pf->params.num_cqs },
        { "num_eqs", r->num_eqs, pf->params.num_eqs },
        { "num_mpts", r->num_mpts, pf->params.num_mpts },
        { "num_pds", r->num_pds, pf->params.num_pds },
        { "num_mtts", r->num_mtts, pf->params.num_mtts },
        { "msix_vectors", r->msix_vectors, pf->params.msix_vectors },
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(c); i++) {
        if (c[i].val < 1 || c[i].val > c[i].max) {
            *val = c[i].val;
            *max = c[i].max;
            return c[i].name;
        }
    }
    /* ABI 1.5: a VF may have no SRQ. */
    if (r->num_srqs > pf->params.num_srqs) {
        *val = r->num_srqs;
        *max = pf->params.num_srqs;
        return "num_srqs";
    }
    return NULL;
}

/* A VF is configured by its PF, never by properties. */
void chpp_sriov_vf_params(ChppHcaState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    ChppHcaState *pf = chpp_pf(s);
    const ChppFnRes *r;

    s->func = pcie_sriov_vf_number(pdev) + 1;
    r = &pf->fn_res[s->func];
    s->params = pf->params;
    s->params.num_qps = r->num_qps;
    s->params.num_cqs = r->num_cqs;
    s->params.num_eqs = r->num_eqs;
    s->params.num_mpts = r->num_mpts;
    s->params.num_pds = r->num_pds;
    s->params.num_mtts = r->num_mtts;
    s->params.msix_vectors = r->msix_vectors;
    s->params.num_srqs = r->num_srqs;
    s->params.uar_pages = CHPP_VF_UAR_PAGES;
    s->params.sriov_max_vfs = 0;
    s->dma_any_target = pf->dma_any_target;
}

bool chpp_sriov_init_pf(ChppHcaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    chpp_sriov_defaults(s);
    if (!s->params.sriov_max_vfs) {
        return true;
    }
    chpp_compat_ari_init(pdev, CHPP_PCI_EXT_CAP_ARI);
    /*
     * InitialVFs = TotalVFs: without VF Migration the SR-IOV specification
     * requires it, and Linux refuses to enable VFs otherwise (-EIO).
     */
    if (!chpp_compat_sriov_pf_init(pdev, CHPP_PCI_EXT_CAP_SRIOV,
                                   TYPE_CHPP_HCA_VF, s->params.vf_device_id,
                                   s->params.sriov_max_vfs,
                                   s->params.sriov_max_vfs, CHPP_VF_OFFSET,
                                   CHPP_VF_STRIDE, errp)) {
        return false;
    }
    pcie_sriov_pf_init_vf_bar(pdev, CHPP_BAR_REGS,
                              PCI_BASE_ADDRESS_MEM_TYPE_64, CHPP_BAR0_SIZE);
    pcie_sriov_pf_init_vf_bar(pdev, CHPP_BAR_UAR,
                              PCI_BASE_ADDRESS_MEM_TYPE_64 |
                              PCI_BASE_ADDRESS_MEM_PREFETCH,
                              CHPP_VF_UAR_PAGES * CHPP_UAR_PAGE_SIZE);
    pcie_acs_init(pdev, CHPP_PCI_EXT_CAP_ACS);
    return true;
}

void chpp_sriov_exit_pf(ChppHcaState *s)
{
    if (s->params.sriov_max_vfs) {
        pcie_sriov_pf_exit(PCI_DEVICE(s));
    }
}

/* A PCI-level reset of the PF takes every VF away (VF Enable clears). */
void chpp_sriov_reset_pf(ChppHcaState *s)
{
    if (s->params.sriov_max_vfs) {
        chpp_compat_sriov_pf_reset(PCI_DEVICE(s));
    }
}

/* In the config space write: the PF's event is queued, not written. */
void chpp_sriov_vf_flr(ChppHcaState *s)
{
    trace_chpp_hca_vf_flr(s->func);
    chpp_vf_flr_queue(chpp_pf(s), s->func);
}

uint8_t chpp_cmd_vf_res(ChppHcaState *s, bool set, uint32_t fn,
                        uint64_t mailbox)
{
    struct chpp_vf_res r = {};
    uint8_t status = CHPP_STAT_OK;
    ChppFnRes *f, in;
    const char *bad;
    uint32_t val, max;

    if (pci_is_vf(PCI_DEVICE(s))) {
        return chpp_cmd_fail(s, CHPP_STAT_PF_ONLY, "VF %u: command reserved "
                             "to the PF", s->func);
    }
    if (fn > s->params.sriov_max_vfs) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX, "function %u of %u",
                             fn, s->params.sriov_max_vfs);
    }
    f = &s->fn_res[fn];
    if (!set) {
        r = (struct chpp_vf_res) {
            .num_qps = cpu_to_le32(fn ? f->num_qps : s->params.num_qps),
            .num_cqs = cpu_to_le32(fn ? f->num_cqs : s->params.num_cqs),
            .num_eqs = cpu_to_le32(fn ? f->num_eqs : s->params.num_eqs),
            .num_mpts = cpu_to_le32(fn ? f->num_mpts : s->params.num_mpts),
            .num_pds = cpu_to_le32(fn ? f->num_pds : s->params.num_pds),
            .num_mtts = cpu_to_le32(fn ? f->num_mtts : s->params.num_mtts),
            .msix_vectors = cpu_to_le32(fn ? f->msix_vectors :
                                        s->params.msix_vectors),
            .weight = f->weight,
            .priority = f->priority,
            .num_srqs = cpu_to_le32(fn ? f->num_srqs : s->params.num_srqs),
        };
        chpp_mailbox_write(s, mailbox, &r, sizeof(r), &status);
        return status;
    }
    if (!chpp_mailbox_read(s, mailbox, &r, sizeof(r), &status)) {
        return status;
    }
    if (!r.weight || r.priority > CHPP_ARB_MAX_PRIORITY) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "weight %u priority %u",
                             r.weight, r.priority);
    }
    if (fn) {
        in = (ChppFnRes) {
            .num_qps = le32_to_cpu(r.num_qps),
            .num_cqs = le32_to_cpu(r.num_cqs),
            .num_eqs = le32_to_cpu(r.num_eqs),
            .num_mpts = le32_to_cpu(r.num_mpts),
            .num_pds = le32_to_cpu(r.num_pds),
            .num_mtts = le32_to_cpu(r.num_mtts),
            .msix_vectors = le32_to_cpu(r.msix_vectors),
            /* 0, as an ABI 1.4 driver leaves it: the default. */
            .num_srqs = le32_to_cpu(r.num_srqs) ?:
                        MIN(CHPP_VF_DEFAULT_SRQS, s->params.num_srqs),
        };
        bad = chpp_vf_res_invalid(s, &in, &val, &max);
        if (bad) {
            return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "VF %u: %s %u "
                                 "(1..%u, the PF's own)", fn, bad, val, max);
        }
        if (pcie_sriov_num_vfs(PCI_DEVICE(s)) &&
            (f->num_qps != in.num_qps || f->num_cqs != in.num_cqs ||
             f->num_eqs != in.num_eqs || f->num_mpts != in.num_mpts ||
             f->num_pds != in.num_pds || f->num_mtts != in.num_mtts ||
             f->msix_vectors != in.msix_vectors ||
             f->num_srqs != in.num_srqs)) {
            return chpp_cmd_fail(s, CHPP_STAT_RESOURCE_BUSY, "VF resources "
                                 "change only while VFs are disabled");
        }
        f->num_qps = in.num_qps;
        f->num_cqs = in.num_cqs;
        f->num_eqs = in.num_eqs;
        f->num_mpts = in.num_mpts;
        f->num_pds = in.num_pds;
        f->num_mtts = in.num_mtts;
        f->msix_vectors = in.msix_vectors;
        f->num_srqs = in.num_srqs;
    }
    f->weight = r.weight;
    f->priority = r.priority;
    return CHPP_STAT_OK;
}

/*
 * Which function's doorbell FIFO the engine serves next: the highest
 * priority with work, and among those smooth weighted round robin, so
 * the shares converge to the weights (seed 004 figure 19).
 */
ChppHcaState *chpp_arb_pick(ChppHcaState *pf)
{
    ChppHcaState *fns[1 + CHPP_MAX_VFS];
    int best = -1, prio = -1;
    uint32_t total = 0;
    unsigned i, n = 0, nfn = chpp_num_functions(pf);

    /* The PF alone (no VFs): it has the FIFO to itself. */
    if (nfn == 1) {
        if (!pf->db_count) {
            return NULL;
        }
        trace_chpp_hca_arb_pick(0, 1);
        return pf;
    }
    for (i = 0; i < nfn; i++) {
        ChppHcaState *f = chpp_function(pf, i);

        fns[i] = f && f->db_count ? f : NULL;
        if (fns[i] && pf->fn_res[i].priority > prio) {
            prio = pf->fn_res[i].priority;
        }
    }
    for (i = 0; i < nfn; i++) {
        if (!fns[i] || pf->fn_res[i].priority != prio) {
            continue;
        }
        n++;
        pf->arb_current[i] += pf->fn_res[i].weight;
        total += pf->fn_res[i].weight;
        if (best < 0 || pf->arb_current[i] > pf->arb_current[best]) {
            best = i;
        }
    }
    if (best < 0) {
        return NULL;
    }
    pf->arb_current[best] -= total;
    trace_chpp_hca_arb_pick(best, n);
    return fns[best];
}
