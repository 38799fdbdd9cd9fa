// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: PCI probe and remove (bring-up sequence of docs/README.md).
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/delay.h>
#include "chpp_hca.h"

static bool cmd_events = true;
module_param(cmd_events, bool, 0444);
MODULE_PARM_DESC(cmd_events, "complete HCR commands by events (default 1; 0 = poll)");

static void chpp_reset(struct chpp_dev *dev)
{
	chpp_wr(dev, CHPP_REG_RESET, CHPP_RESET_MAGIC);
	/* The reset completes before the write returns; flush it. */
	chpp_rd(dev, CHPP_REG_STATUS);
	dev->cmd_toggle = 1;	/* HCR reads 0 after reset: t = 0 */
	dev->cmd_events = false;
	dev->hca_init = false;
	dev->port_open = false;
}

static int chpp_query_caps(struct chpp_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	struct chpp_dev_cap cap;
	struct chpp_fw_info fw;
	int err;

	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_FW, 0, &fw, sizeof(fw));
	if (err)
		return err;
	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_DEV_CAP, 0, &cap, sizeof(cap));
	if (err)
		return err;
	dev->fw = (struct chpp_fw) {
		.fw_major = le16_to_cpu(fw.fw_major),
		.fw_minor = le16_to_cpu(fw.fw_minor),
		.fw_subminor = le16_to_cpu(fw.fw_subminor),
		.abi_major = le16_to_cpu(fw.abi_major),
		.abi_minor = le16_to_cpu(fw.abi_minor),
	};
	dev->caps = (struct chpp_caps) {
		.flags = le32_to_cpu(cap.flags),
		.func = le16_to_cpu(cap.func),
		.node_id = le16_to_cpu(cap.node_id),
		.num_ports = cap.num_ports,
		.num_uar_pages = le32_to_cpu(cap.num_uar_pages),
		.num_msix = le32_to_cpu(cap.num_msix),
		.max_eqs = le32_to_cpu(cap.max_eqs),
		.max_cqs = le32_to_cpu(cap.max_cqs),
		.max_cq_entries = le32_to_cpu(cap.max_cq_entries),
		.max_qps = le32_to_cpu(cap.max_qps),
		.max_qp_wqes = le32_to_cpu(cap.max_qp_wqes),
		.max_mpts = le32_to_cpu(cap.max_mpts),
		.max_mtt_entries = le32_to_cpu(cap.max_mtt_entries),
		.max_pds = le32_to_cpu(cap.max_pds),
		.max_sge = le32_to_cpu(cap.max_sge),
		.max_inline = le32_to_cpu(cap.max_inline),
		.page_size_cap = le64_to_cpu(cap.page_size_cap),
		/* Reserved (0) before ABI 1.5: no SRQ. */
		.max_srqs = le32_to_cpu(cap.max_srqs),
		.max_srq_wqes = le32_to_cpu(cap.max_srq_wqes),
		.max_srq_sge = le32_to_cpu(cap.max_srq_sge),
	};
	if (dev->fw.abi_major != CHPP_ABI_VERSION_MAJOR) {
		dev_err(d, "QUERY_FW reports ABI %u.%u, driver speaks %u\n",
			dev->fw.abi_major, dev->fw.abi_minor,
			CHPP_ABI_VERSION_MAJOR);
		return -ENODEV;
	}
	if (dev->caps.num_ports != 1 || !dev->caps.max_eqs ||
	    !dev->caps.num_uar_pages || !dev->caps.max_mtt_entries ||
	    !dev->caps.max_mpts || !dev->caps.max_pds) {
		dev_err(d, "unusable capabilities (ports %u eqs %u uars %u)\n",
			dev->caps.num_ports, dev->caps.max_eqs,
			dev->caps.num_uar_pages);
		return -ENODEV;
	}
	dev->node_id = dev->caps.node_id;
	dev->port_guid = CHPP_PORT_GUID(dev->node_id, dev->caps.func);
	dev_info(d, "fw %u.%u.%u ABI %u.%u, node %u, func %u: %u QPs, %u CQs, %u EQs, %u MPTs, %u MTTs, %u PDs, %u UAR pages, %u MSI-X\n",
		 dev->fw.fw_major, dev->fw.fw_minor, dev->fw.fw_subminor,
		 dev->fw.abi_major, dev->fw.abi_minor, dev->node_id,
		 dev->caps.func, dev->caps.max_qps, dev->caps.max_cqs,
		 dev->caps.max_eqs, dev->caps.max_mpts,
		 dev->caps.max_mtt_entries, dev->caps.max_pds,
		 dev->caps.num_uar_pages, dev->caps.num_msix);
	return 0;
}

/* Bring the HCA down: ports, EQ, HCA, then a reset so no DMA is left. */
static void chpp_hw_down(struct chpp_dev *dev)
{
	if (dev->port_open) {
		chpp_cmd(dev, CHPP_CMD_CLOSE_PORT, 0, 1, 0, NULL);
		dev->port_open = false;
	}
	chpp_eq_cleanup(dev);
	/* No event can schedule it any more. */
	cancel_work_sync(&dev->db_lost_work);
	if (dev->hca_init) {
		chpp_cmd(dev, CHPP_CMD_CLOSE_HCA, 0, 0, 0, NULL);
		dev->hca_init = false;
	}
	chpp_reset(dev);
}

/*
 * Everything but the PCI resources: run by probe, and again after a reset of
 * the function (reset_done), with a new chpp_dev each time.
 */
static int chpp_setup(struct pci_dev *pdev)
{
	struct chpp_dev *dev;
	u32 magic, abi, link;
	int err;

	dev = ib_alloc_device(chpp_dev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->pdev = pdev;
	mutex_init(&dev->cmd_mutex);
	init_completion(&dev->cmd_done);
	INIT_WORK(&dev->db_lost_work, chpp_db_lost_work);
	dev->regs = pcim_iomap_table(pdev)[CHPP_BAR_REGS];
	dev->uar_base = pcim_iomap_table(pdev)[CHPP_BAR_UAR];
	dev->uar = dev->uar_base + CHPP_KERNEL_UAR * CHPP_UAR_PAGE_SIZE;
	dev->uar_phys = pci_resource_start(pdev, CHPP_BAR_UAR);

	magic = chpp_rd(dev, CHPP_REG_MAGIC);
	abi = chpp_rd(dev, CHPP_REG_ABI_VERSION);
	if (magic != CHPP_MAGIC || (abi >> 16) != CHPP_ABI_VERSION_MAJOR) {
		dev_err(&pdev->dev, "not a chpp-hca of ABI %u: magic 0x%08x ABI 0x%08x\n",
			CHPP_ABI_VERSION_MAJOR, magic, abi);
		err = -ENODEV;
		goto free_dev;
	}
	chpp_reset(dev);
	pci_set_master(pdev);

	err = chpp_query_caps(dev);
	if (err)
		goto reset;
	err = chpp_res_init(dev);
	if (err)
		goto reset;
	err = chpp_cmd(dev, CHPP_CMD_INIT_HCA, 0, CHPP_ABI_VERSION_MAJOR, 0, NULL);
	if (err)
		goto res;
	dev->hca_init = true;

	err = chpp_eq_init(dev);
	if (err)
		goto down;
	if (cmd_events && (chpp_rd(dev, CHPP_REG_CAPS) & CHPP_CAP_CMD_EVENTS)) {
		err = chpp_nop_selftest(dev);
		if (err)
			goto down;
	}

	err = chpp_cmd(dev, CHPP_CMD_INIT_PORT, 0, 1, 0, NULL);
	if (err)
		goto down;
	dev->port_open = true;

	pci_set_drvdata(pdev, dev);
	err = chpp_ib_register(dev);
	if (err)
		goto drvdata;

	link = chpp_rd(dev, CHPP_REG_LINK);
	dev_info(&pdev->dev, "%s: node %u LID %u, link %s%s (peer node %u)\n",
		 dev_name(&dev->ibdev.dev), dev->node_id,
		 CHPP_LID(dev->node_id, dev->caps.func),
		 (link & CHPP_LINK_ATTACHED) ? "attached" : "none",
		 (link & CHPP_LINK_UP) ? " up" : "",
		 link >> CHPP_LINK_PEER_SHIFT);
	return 0;

drvdata:
	pci_set_drvdata(pdev, NULL);
down:
	chpp_hw_down(dev);
res:
	chpp_res_cleanup(dev);
reset:
	chpp_reset(dev);
	pci_clear_master(pdev);
free_dev:
	ib_dealloc_device(&dev->ibdev);
	return err;
}

/* The reverse of chpp_setup; the PCI resources stay. */
static void chpp_teardown(struct chpp_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	u32 errs;

	chpp_ib_unregister(dev);
	errs = chpp_rd(dev, CHPP_REG_CNT(CHPP_CNT_GUEST_ERRORS));
	if (errs)
		dev_warn(&pdev->dev, "device counted %u guest error(s) since probe\n",
			 errs);
	chpp_hw_down(dev);
	pci_clear_master(pdev);
	chpp_res_cleanup(dev);
	pci_set_drvdata(pdev, NULL);
	ib_dealloc_device(&dev->ibdev);
}

static int chpp_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int err;

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	err = pcim_iomap_regions(pdev, BIT(CHPP_BAR_REGS) | BIT(CHPP_BAR_UAR),
				 DRV_NAME);
	if (err)
		return err;
	if (pci_resource_len(pdev, CHPP_BAR_REGS) < CHPP_BAR0_SIZE) {
		dev_err(&pdev->dev, "BAR0 too small\n");
		return -ENODEV;
	}
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		return err;
	return chpp_setup(pdev);
}

static void chpp_remove(struct pci_dev *pdev)
{
	struct chpp_dev *dev = pci_get_drvdata(pdev);

	if (!dev)
		return;		/* the bring-up after a reset failed */
	chpp_sriov_disable(dev);	/* VFs go before the PF that owns them */
	chpp_teardown(dev);
}

/*
 * A reset of the function while bound (sysfs reset, a VF FLR): the device
 * forgets everything, so the driver tears down first and starts over after.
 */
static void chpp_reset_prepare(struct pci_dev *pdev)
{
	struct chpp_dev *dev = pci_get_drvdata(pdev);

	if (!dev)
		return;
	dev_info(&pdev->dev, "function reset: tearing down\n");
	chpp_sriov_disable(dev);
	chpp_teardown(dev);
}

static void chpp_reset_done(struct pci_dev *pdev)
{
	int err = chpp_setup(pdev);

	if (err)
		dev_err(&pdev->dev, "bring-up after the reset failed (%d): unbind and bind to retry\n",
			err);
	else
		dev_info(&pdev->dev, "function reset: up again\n");
}

static const struct pci_error_handlers chpp_err_handlers = {
	.reset_prepare = chpp_reset_prepare,
	.reset_done = chpp_reset_done,
};

static const struct pci_device_id chpp_ids[] = {
	{ PCI_DEVICE(CHPP_PCI_VENDOR_ID, CHPP_PCI_DEVICE_ID_PF) },
	{ PCI_DEVICE(CHPP_PCI_VENDOR_ID, CHPP_PCI_DEVICE_ID_VF) },
	{ }
};
MODULE_DEVICE_TABLE(pci, chpp_ids);

static struct pci_driver chpp_driver = {
	.name = DRV_NAME,
	.id_table = chpp_ids,
	.probe = chpp_probe,
	.remove = chpp_remove,
	.err_handler = &chpp_err_handlers,
	.sriov_configure = chpp_sriov_configure,
};
module_pci_driver(chpp_driver);

MODULE_DESCRIPTION("chpp-hca RDMA adapter (emulated cHPP HCA)");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: ib_core");
