// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: the ib_device: device and port queries, PDs, MRs, AHs.
 *
 * Link layer: InfiniBand, with the port's core capabilities limited to
 * RDMA_CORE_CAP_PROT_IB (no IB_MAD, SMI, CM or SA), so ib_core's MAD layer
 * does not ask for QP0/QP1, which the device does not have. LID =
 * (function << 12 | node id) + 1; GID 0 = fe80::/64 + port GUID. See
 * docs/guest-driver.md.
 */
#include <linux/module.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_cache.h>
#include <linux/string_helpers.h>
#include "chpp_hca.h"

static bool global_rkey_atomic;
module_param(global_rkey_atomic, bool, 0644);
MODULE_PARM_DESC(global_rkey_atomic,
		 "DMA MRs with remote write also allow remote atomics (test knob: kernel ULPs cannot register kernel memory for atomics otherwise; default 0)");

static int chpp_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			     struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	const struct chpp_caps *c = &dev->caps;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = ((u64)dev->fw.fw_major << 32) | ((u64)dev->fw.fw_minor << 16) |
		    dev->fw.fw_subminor;
	a->sys_image_guid = cpu_to_be64(dev->port_guid);
	a->max_mr_size = U64_MAX;
	a->page_size_cap = c->page_size_cap;
	a->vendor_id = dev->pdev->vendor;
	a->vendor_part_id = dev->pdev->device;
	a->hw_ver = dev->pdev->revision;
	a->max_qp = c->max_qps;
	a->max_qp_wr = c->max_qp_wqes;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN;
	a->max_send_sge = c->max_sge;
	a->max_recv_sge = c->max_sge;
	a->max_sge_rd = c->max_sge;
	a->max_cq = c->max_cqs;
	a->max_cqe = c->max_cq_entries;
	a->max_mr = c->max_mpts;
	a->max_pd = c->max_pds;
	a->max_qp_rd_atom = CHPP_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = CHPP_MAX_RD_ATOMIC;
	a->max_res_rd_atom = CHPP_MAX_RD_ATOMIC * c->max_qps;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_ah = INT_MAX;
	a->max_srq = c->max_srqs;
	a->max_srq_wr = c->max_srq_wqes;
	a->max_srq_sge = c->max_srq_sge;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 0;
	return 0;
}

static int chpp_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *a)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	struct chpp_port_info pi;
	int err;

	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_PORT, port, &pi, sizeof(pi));
	if (err)
		return err;
	/* ib_core zeroed *a. */
	a->state = pi.state;
	a->phys_state = pi.phys_state;
	a->max_mtu = pi.max_mtu;
	a->active_mtu = pi.active_mtu;
	a->lid = le16_to_cpu(pi.lid);
	a->sm_lid = 0;
	a->lmc = 0;
	a->gid_tbl_len = le32_to_cpu(pi.gid_tbl_len);
	a->pkey_tbl_len = le32_to_cpu(pi.pkey_tbl_len);
	a->max_msg_sz = le32_to_cpu(pi.max_msg_size);
	a->port_cap_flags = 0;
	a->active_width = pi.link_width;
	a->active_speed = pi.link_speed;
	a->subnet_prefix = le64_to_cpu(pi.gid_prefix);
	return 0;
}

static int chpp_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	struct chpp_dev *dev = to_cdev(ibdev);

	if (index != 0)
		return -EINVAL;
	gid->global.subnet_prefix = cpu_to_be64(0xfe80000000000000ull);
	gid->global.interface_id = cpu_to_be64(dev->port_guid);
	return 0;
}

static int chpp_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (index != 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

static int chpp_port_immutable(struct ib_device *ibdev, u32 port,
			       struct ib_port_immutable *im)
{
	struct ib_port_attr attr;
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	im->pkey_tbl_len = attr.pkey_tbl_len;
	im->gid_tbl_len = attr.gid_tbl_len;
	/* IB protocol without MAD/SMI/CM/SA: no QP0/QP1 needed. */
	im->core_cap_flags = RDMA_CORE_CAP_PROT_IB;
	im->max_mad_size = 0;
	return 0;
}

static enum rdma_link_layer chpp_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_INFINIBAND;
}

static void chpp_fw_str(struct ib_device *ibdev, char *str)
{
	struct chpp_dev *dev = to_cdev(ibdev);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u (ABI %u.%u)",
		 dev->fw.fw_major, dev->fw.fw_minor, dev->fw.fw_subminor,
		 dev->fw.abi_major, dev->fw.abi_minor);
}

static int chpp_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibpd->device);
	int n;

	n = ida_alloc_max(&dev->pd_ida, dev->caps.max_pds - 1, GFP_KERNEL);
	if (n < 0)
		return n;
	to_cpd(ibpd)->pdn = n;
	if (udata && udata->outlen) {
		u32 pdn = n;
		int err = ib_copy_to_udata(udata, &pdn, min(udata->outlen, sizeof(pdn)));

		if (err) {
			ida_free(&dev->pd_ida, n);
			return err;
		}
	}
	return 0;
}

static int chpp_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	ida_free(&to_cdev(ibpd->device)->pd_ida, to_cpd(ibpd)->pdn);
	return 0;
}

static u32 chpp_mpt_flags(int acc)
{
	u32 f = 0;

	if (acc & IB_ACCESS_LOCAL_WRITE)
		f |= CHPP_MPT_LOCAL_WRITE;
	if (acc & IB_ACCESS_REMOTE_READ)
		f |= CHPP_MPT_REMOTE_READ;
	if (acc & IB_ACCESS_REMOTE_WRITE)
		f |= CHPP_MPT_REMOTE_WRITE | CHPP_MPT_LOCAL_WRITE;
	if (acc & IB_ACCESS_REMOTE_ATOMIC)
		f |= CHPP_MPT_REMOTE_ATOMIC | CHPP_MPT_LOCAL_WRITE;
	return f;
}

/* Allocate an MPT index with a fresh tag and SW2HW_MPT it. */
static int chpp_mpt_create(struct chpp_dev *dev, struct chpp_mr *mr, u32 pdn,
			   u32 flags, u64 start, u64 len, u8 log_ps)
{
	struct chpp_mpt_context ctx = {};
	int idx, err;
	u32 key;

	idx = ida_alloc_max(&dev->mpt_ida, dev->caps.max_mpts - 1, GFP_KERNEL);
	if (idx < 0)
		return idx;
	key = ((u32)idx << CHPP_KEY_INDEX_SHIFT) | ++dev->mpt_tag[idx];
	ctx.flags = cpu_to_le32(flags);
	ctx.key = cpu_to_le32(key);
	ctx.pd = cpu_to_le32(pdn);
	ctx.log_page_size = log_ps;
	ctx.start = cpu_to_le64(start);
	ctx.length = cpu_to_le64(len);
	ctx.mtt_base = cpu_to_le32(mr->mtt_base);
	err = chpp_cmd_in(dev, CHPP_CMD_SW2HW_MPT, idx, &ctx, sizeof(ctx));
	if (err) {
		ida_free(&dev->mpt_ida, idx);
		return err;
	}
	mr->mpt = idx;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return 0;
}

/* DMA MR: a PHYS region covering the whole DMA address space. */
static struct ib_mr *chpp_get_dma_mr(struct ib_pd *ibpd, int acc)
{
	struct chpp_dev *dev = to_cdev(ibpd->device);
	struct chpp_mr *mr;
	int err;

	if (global_rkey_atomic && (acc & IB_ACCESS_REMOTE_WRITE))
		acc |= IB_ACCESS_REMOTE_ATOMIC;
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = chpp_mpt_create(dev, mr, to_cpd(ibpd)->pdn,
			      chpp_mpt_flags(acc) | CHPP_MPT_PHYS, 0, U64_MAX, 0);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static struct ib_mr *chpp_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				      u64 virt, int acc, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibpd->device);
	struct chpp_mr *mr;
	unsigned long pgsz;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, len, acc);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto free_mr;
	}
	pgsz = ib_umem_find_best_pgsz(mr->umem, SZ_4K, virt);
	if (!pgsz) {
		err = -EINVAL;
		goto release;
	}
	err = chpp_umem_map(dev, mr->umem, pgsz, &mr->mtt_base, &mr->npages);
	if (err)
		goto release;
	err = chpp_mpt_create(dev, mr, to_cpd(ibpd)->pdn, chpp_mpt_flags(acc),
			      virt, len, ilog2(pgsz));
	if (err)
		goto free_mtt;
	return &mr->ibmr;

free_mtt:
	chpp_mtt_free(dev, mr->mtt_base, mr->npages);
release:
	ib_umem_release(mr->umem);
free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

static int chpp_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibmr->device);
	struct chpp_mr *mr = to_cmr(ibmr);
	int err;

	err = chpp_cmd(dev, CHPP_CMD_HW2SW_MPT, 0, mr->mpt, 0, NULL);
	if (err)
		return err;
	ida_free(&dev->mpt_ida, mr->mpt);
	if (mr->npages) {
		u64 *zeros = kvcalloc(mr->npages, sizeof(u64), GFP_KERNEL);

		if (zeros) {
			chpp_write_mtt(dev, mr->mtt_base, zeros, mr->npages);
			kvfree(zeros);
		}
		chpp_mtt_free(dev, mr->mtt_base, mr->npages);
	}
	if (mr->umem)
		ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

static int chpp_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			  struct ib_udata *udata)
{
	u16 dlid = rdma_ah_get_dlid(init->ah_attr);

	if (!dlid)
		return -EINVAL;
	if (CHPP_LID_FN(dlid) > CHPP_MAX_VFS)
		return -EINVAL;
	to_cah(ibah)->dest_node = CHPP_LID_NODE(dlid);
	to_cah(ibah)->dest_vf = CHPP_LID_FN(dlid);
	return 0;
}

static int chpp_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

void chpp_port_event(struct chpp_dev *dev, u8 state)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = state == CHPP_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						     IB_EVENT_PORT_ERR,
	};

	if (dev->ib_registered)
		ib_dispatch_event(&ev);
}

/*
 * Device counters in /sys/class/infiniband/<dev>/hw_counters/ (and rdma
 * statistic): the doorbell ones, so that lost doorbells can be seen from
 * user space (devmem cannot map a BAR the driver holds). Their names are
 * the ABI's (chpp_counter_name()) in lower case: "db_fifo_overflow".
 */
static const u32 chpp_stat_cnt[CHPP_NUM_HW_STATS] = {
	CHPP_CNT_DB_FIFO_OVERFLOW,
	CHPP_CNT_DB_ERRORS,
	CHPP_CNT_EVENTS_DROPPED,
};

static struct rdma_hw_stats *chpp_alloc_hw_device_stats(struct ib_device *ibdev)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	int i;

	for (i = 0; i < CHPP_NUM_HW_STATS; i++) {
		string_lower(dev->stat_name[i],
			     chpp_counter_name(chpp_stat_cnt[i]));
		dev->stat_desc[i].name = dev->stat_name[i];
	}
	return rdma_alloc_hw_stats_struct(dev->stat_desc, CHPP_NUM_HW_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int chpp_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	int i;

	for (i = 0; i < CHPP_NUM_HW_STATS; i++)
		stats->value[i] = chpp_rd(dev, CHPP_REG_CNT(chpp_stat_cnt[i]));
	return CHPP_NUM_HW_STATS;
}

const struct ib_device_ops chpp_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = CHPP_UVERBS_ABI_VERSION,

	.query_device = chpp_query_device,
	.query_port = chpp_query_port,
	.query_gid = chpp_query_gid,
	.query_pkey = chpp_query_pkey,
	.get_port_immutable = chpp_port_immutable,
	.get_link_layer = chpp_link_layer,
	.get_dev_fw_str = chpp_fw_str,
	.alloc_ucontext = chpp_alloc_ucontext,
	.dealloc_ucontext = chpp_dealloc_ucontext,
	.mmap = chpp_mmap,
	.mmap_free = chpp_mmap_free,
	.alloc_pd = chpp_alloc_pd,
	.dealloc_pd = chpp_dealloc_pd,
	.get_dma_mr = chpp_get_dma_mr,
	.reg_user_mr = chpp_reg_user_mr,
	.dereg_mr = chpp_dereg_mr,
	.create_ah = chpp_create_ah,
	.destroy_ah = chpp_destroy_ah,
	.create_cq = chpp_create_cq,
	.destroy_cq = chpp_destroy_cq,
	.poll_cq = chpp_poll_cq,
	.req_notify_cq = chpp_req_notify_cq,
	.create_qp = chpp_create_qp,
	.modify_qp = chpp_modify_qp,
	.query_qp = chpp_query_qp,
	.destroy_qp = chpp_destroy_qp,
	.post_send = chpp_post_send,
	.post_recv = chpp_post_recv,
	.create_srq = chpp_create_srq,
	.modify_srq = chpp_modify_srq,
	.query_srq = chpp_query_srq,
	.destroy_srq = chpp_destroy_srq,
	.post_srq_recv = chpp_post_srq_recv,
	.alloc_hw_device_stats = chpp_alloc_hw_device_stats,
	.get_hw_stats = chpp_get_hw_stats,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, chpp_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, chpp_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ah, chpp_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, chpp_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, chpp_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, chpp_srq, ibsrq),
};

int chpp_ib_register(struct chpp_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	int err;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = CHPP_NUM_PORTS;
	ibdev->num_comp_vectors = 1;
	ibdev->node_guid = cpu_to_be64(dev->port_guid);
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "chpp-hca", sizeof(ibdev->node_desc));
	/*
	 * The PCI function as sysfs parent: uverbsN/device/modalias is what
	 * libibverbs matches providers by (docs/verbs-provider.md).
	 */
	ibdev->dev.parent = &dev->pdev->dev;
	ib_set_device_ops(ibdev, &chpp_dev_ops);
	err = ib_register_device(ibdev, "chpp%d", &dev->pdev->dev);
	if (err) {
		dev_err(&dev->pdev->dev, "ib_register_device failed: %d\n", err);
		return err;
	}
	dev->ib_registered = true;
	return 0;
}

void chpp_ib_unregister(struct chpp_dev *dev)
{
	if (!dev->ib_registered)
		return;
	dev->ib_registered = false;
	ib_unregister_device(&dev->ibdev);
}
