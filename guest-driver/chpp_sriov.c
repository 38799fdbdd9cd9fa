// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: SR-IOV on the PF (docs/sriov.md). Writing N to sriov_numvfs
 * provisions VFs 1..N with SET_VF_RES, then sets VF Enable; 0 clears it.
 */
#include <linux/pci.h>
#include "chpp_hca.h"

/*
 * Every VF gets the FPGA's fixed split, capped by the PF's own counts (the
 * device refuses more than those, docs/sriov.md). SET_VF_RES refuses new
 * counts while VFs are enabled (RESOURCE_BUSY), and the PCI core only lets
 * sriov_numvfs go from 0 to N, so this always runs with VF Enable clear.
 */
static int chpp_sriov_provision(struct chpp_dev *dev, int num_vfs)
{
	const struct chpp_caps *c = &dev->caps;
	const struct chpp_vf_res res = {
		.num_qps = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_QPS,
					     c->max_qps)),
		.num_cqs = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_CQS,
					     c->max_cqs)),
		.num_eqs = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_EQS,
					     c->max_eqs)),
		.num_mpts = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_MPTS,
					      c->max_mpts)),
		.num_pds = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_PDS,
					     c->max_pds)),
		.num_mtts = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_MTTS,
					      c->max_mtt_entries)),
		.msix_vectors = cpu_to_le32(min_t(u32, CHPP_VF_DEFAULT_MSIX,
						  c->num_msix)),
		.weight = 1,
		.priority = 0,
	};
	int vf, err;

	for (vf = 1; vf <= num_vfs; vf++) {
		err = chpp_cmd_in(dev, CHPP_CMD_SET_VF_RES, vf, &res,
				  sizeof(res));
		if (err) {
			dev_err(&dev->pdev->dev,
				"SET_VF_RES for VF %d failed: %d\n", vf, err);
			return err;
		}
	}
	return 0;
}

void chpp_sriov_disable(struct chpp_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int n = pci_num_vf(pdev);

	if (!n)
		return;
	if (pci_vfs_assigned(pdev))
		dev_warn(&pdev->dev, "disabling %d VF(s) still assigned to a guest\n",
			 n);
	/* Removes the VF devices, which unbinds their drivers first. */
	pci_disable_sriov(pdev);
	dev_info(&pdev->dev, "SR-IOV disabled (%d VF(s) removed)\n", n);
}

int chpp_sriov_configure(struct pci_dev *pdev, int num_vfs)
{
	struct chpp_dev *dev = pci_get_drvdata(pdev);
	int err;

	if (!dev)
		return -ENODEV;	/* the bring-up after a reset failed */
	if (dev->caps.flags & CHPP_DEV_CAP_FLAG_VF)
		return -EOPNOTSUPP;
	if (!num_vfs) {
		if (pci_vfs_assigned(pdev)) {
			dev_err(&pdev->dev, "VFs are assigned: not disabling\n");
			return -EPERM;
		}
		chpp_sriov_disable(dev);
		return 0;
	}
	if (pci_num_vf(pdev))
		return -EBUSY;	/* the PCI core asks for 0 first; be safe */

	err = chpp_sriov_provision(dev, num_vfs);
	if (err)
		return err;
	err = pci_enable_sriov(pdev, num_vfs);
	if (err) {
		dev_err(&pdev->dev, "pci_enable_sriov(%d) failed: %d\n",
			num_vfs, err);
		return err;
	}
	dev_info(&pdev->dev, "SR-IOV enabled: %d VF(s)\n", num_vfs);
	return num_vfs;
}

void chpp_vf_flr_event(struct chpp_dev *dev, u32 vf)
{
	dev_info(&dev->pdev->dev, "VF %u was reset (FLR)\n", vf);
}
