// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: the ib_device: device and port queries, PDs, MRs, AHs.
 *
 * Link layer: InfiniBand. On an ABI 1.6 device the port is a full IB port
 * (RDMA_CORE_PORT_IBA_IB: MADs, SMI, CM, SA, multicast): process_mad hands
 * SMPs and PMA MADs to the device's agents (MAD_IFC) and ib_core's MAD
 * layer runs QP0 and QP1. Older devices get RDMA_CORE_CAP_PROT_IB only.
 * LID = (function << 12 | node id) + 1 until an SM sets another; GID 0 =
 * GID prefix + port GUID. See docs/guest-driver.md and
 * docs/management-datagrams.md.
 */
#include <linux/module.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>
#include <linux/string_helpers.h>
#include <linux/utsname.h>
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
	/* With MADs, QPNs 0 and 1 are QP0 and QP1 of ib_core's MAD layer. */
	a->max_qp = c->max_qps - (dev->mad ? 2 : 0);
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
	if (c->flags & CHPP_DEV_CAP_FLAG_FAST_REG) {
		/* ABI 1.6: REG_MR, LOCAL_INV, SEND_INV (docs/memory-regions.md). */
		a->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
		a->max_fast_reg_page_list_len = c->max_fr_pages;
	}
	if (dev->mad) {
		a->device_cap_flags |= IB_DEVICE_PORT_ACTIVE_EVENT;
		a->max_mcast_grp = CHPP_MAX_MCGS;
		a->max_mcast_qp_attach = CHPP_MCG_MAX_QPS;
		a->max_total_mcast_qp_attach = CHPP_MAX_MCGS *
					       CHPP_MCG_MAX_QPS;
	}
	return 0;
}

int chpp_port_refresh(struct chpp_dev *dev)
{
	struct chpp_port_info pi;
	int err;

	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_PORT, 1, &pi, sizeof(pi));
	if (err)
		return err;
	WRITE_ONCE(dev->port.lid, le16_to_cpu(pi.lid));
	WRITE_ONCE(dev->port.state, pi.state);
	if (dev->mad) {
		dev->port.sm_lid = le16_to_cpu(pi.sm_lid);
		dev->port.sm_sl = pi.sm_sl;
		dev->port.pkey = le16_to_cpu(pi.pkey);
		dev->port.cap_mask = le32_to_cpu(pi.cap_mask);
		dev->port.gid_prefix = le64_to_cpu(pi.gid_prefix);
	} else {
		dev->port.pkey = 0xffff;
		dev->port.gid_prefix = 0xfe80000000000000ull;
	}
	return 0;
}

/*
 * The sender of a receive: the node-derived LID, or this port's own LID
 * (an SM may have set another) when it is this function.
 */
u16 chpp_src_lid(struct chpp_dev *dev, u16 node, u8 fn)
{
	if (node == dev->node_id && fn == dev->caps.func)
		return READ_ONCE(dev->port.lid);
	return CHPP_LID(node, fn);
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
	a->gid_tbl_len = le32_to_cpu(pi.gid_tbl_len);
	a->pkey_tbl_len = le32_to_cpu(pi.pkey_tbl_len);
	a->max_msg_sz = le32_to_cpu(pi.max_msg_size);
	a->active_width = pi.link_width;
	a->active_speed = pi.link_speed;
	a->subnet_prefix = le64_to_cpu(pi.gid_prefix);
	if (dev->mad) {
		a->sm_lid = le16_to_cpu(pi.sm_lid);
		a->sm_sl = pi.sm_sl;
		a->lmc = pi.lmc;
		a->port_cap_flags = le32_to_cpu(pi.cap_mask);
		a->subnet_timeout = pi.subnet_timeout;
		a->max_vl_num = 1;
		a->init_type_reply = 0;
	}
	WRITE_ONCE(dev->port.lid, a->lid);
	return 0;
}

static int chpp_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	struct chpp_dev *dev = to_cdev(ibdev);

	if (index != 0)
		return -EINVAL;
	gid->global.subnet_prefix = cpu_to_be64(READ_ONCE(dev->port.gid_prefix));
	gid->global.interface_id = cpu_to_be64(dev->port_guid);
	return 0;
}

static int chpp_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (index != 0)
		return -EINVAL;
	*pkey = READ_ONCE(to_cdev(ibdev)->port.pkey);
	return 0;
}

/*
 * MAD_IFC: the device's SMA or PMA answers @in into @out; *flags gets
 * CHPP_MAD_IFC_*. @local: the driver's own MAD (capability mask, node
 * description).
 */
static int chpp_mad_ifc(struct chpp_dev *dev, bool local, const void *in,
			void *out, u32 *flags)
{
	struct chpp_mbox mi, mo;
	const struct chpp_mad_ifc_out *o;
	int err;

	err = chpp_mbox_alloc(dev, &mi);
	if (err)
		return err;
	err = chpp_mbox_alloc(dev, &mo);
	if (err)
		goto free_in;
	memcpy(mi.buf, in, CHPP_MAD_SIZE);
	err = chpp_cmd(dev, CHPP_CMD_MAD_IFC, mi.dma,
		       1 | (local ? CHPP_MAD_IFC_LOCAL : 0), mo.dma, NULL);
	if (!err) {
		o = mo.buf;
		memcpy(out, o->mad, CHPP_MAD_SIZE);
		*flags = le32_to_cpu(o->flags);
	}
	chpp_mbox_free(dev, &mo);
free_in:
	chpp_mbox_free(dev, &mi);
	return err;
}

static void chpp_dispatch(struct chpp_dev *dev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	if (dev->ib_registered)
		ib_dispatch_event(&ev);
}

/* What a Set through the SMA changed: ib_core's cache and clients learn. */
static void chpp_mad_snoop(struct chpp_dev *dev, u32 flags)
{
	if (!(flags & ~CHPP_MAD_IFC_REPLY))
		return;
	chpp_port_refresh(dev);
	if (flags & CHPP_MAD_IFC_LID_CHANGE)
		chpp_dispatch(dev, IB_EVENT_LID_CHANGE);
	if (flags & CHPP_MAD_IFC_PKEY_CHANGE)
		chpp_dispatch(dev, IB_EVENT_PKEY_CHANGE);
	if (flags & CHPP_MAD_IFC_GID_CHANGE)
		chpp_dispatch(dev, IB_EVENT_GID_CHANGE);
	if (flags & CHPP_MAD_IFC_SM_CHANGE)
		chpp_dispatch(dev, IB_EVENT_SM_CHANGE);
	if (flags & CHPP_MAD_IFC_CLIENT_REREG)
		chpp_dispatch(dev, IB_EVENT_CLIENT_REREGISTER);
}

/*
 * ib_core's MAD layer gives every MAD the port receives (and the SMPs its
 * own clients send to it) here first. SMPs and PMA MADs are the device's
 * (mlx4: MAD_IFC); SMInfo is the SM's, and every other class goes on to
 * ib_core's agents.
 */
static int chpp_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			    const struct ib_wc *in_wc,
			    const struct ib_grh *in_grh,
			    const struct ib_mad *in, struct ib_mad *out,
			    size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	u8 cls = in->mad_hdr.mgmt_class, method = in->mad_hdr.method;
	u32 flags = 0;

	if (!dev->mad || port != 1)
		return IB_MAD_RESULT_FAILURE;
	if (cls == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
	    cls == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		if (method != IB_MGMT_METHOD_GET &&
		    method != IB_MGMT_METHOD_SET &&
		    method != IB_MGMT_METHOD_TRAP_REPRESS)
			return IB_MAD_RESULT_SUCCESS;
		if (in->mad_hdr.attr_id == IB_SMP_ATTR_SM_INFO)
			return IB_MAD_RESULT_SUCCESS;
	} else if (cls == IB_MGMT_CLASS_PERF_MGMT) {
		if (method != IB_MGMT_METHOD_GET &&
		    method != IB_MGMT_METHOD_SET)
			return IB_MAD_RESULT_SUCCESS;
	} else {
		return IB_MAD_RESULT_SUCCESS;
	}
	if (chpp_mad_ifc(dev, false, in, out, &flags))
		return IB_MAD_RESULT_FAILURE;
	chpp_mad_snoop(dev, flags);
	if (!(flags & CHPP_MAD_IFC_REPLY))
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	*out_mad_size = sizeof(struct ib_mad);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/* A local Get PortInfo, then Set with @cap_mask: the driver's own. */
static int chpp_set_cap_mask(struct chpp_dev *dev, u32 cap_mask)
{
	struct ib_smp *smp;
	u32 flags;
	int err;

	smp = kzalloc(sizeof(*smp), GFP_KERNEL);
	if (!smp)
		return -ENOMEM;
	smp->base_version = 1;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_GET;
	smp->attr_id = IB_SMP_ATTR_PORT_INFO;
	smp->attr_mod = cpu_to_be32(1);
	err = chpp_mad_ifc(dev, true, smp, smp, &flags);
	if (err || smp->status)
		goto out;
	smp->method = IB_MGMT_METHOD_SET;
	((struct ib_port_info *)smp->data)->cap_mask = cpu_to_be32(cap_mask);
	/* No change of the port state. */
	((struct ib_port_info *)smp->data)->linkspeed_portstate &= 0xf0;
	err = chpp_mad_ifc(dev, true, smp, smp, &flags);
	if (!err && smp->status)
		err = -EINVAL;
	if (!err)
		chpp_mad_snoop(dev, flags);
out:
	kfree(smp);
	return err;
}

/*
 * ib_umad sets IB_PORT_SM while an SM holds /dev/infiniband/issmN (IsSM in
 * the capability mask), ib_cm IB_PORT_CM_SUP. Counted, as several holders
 * may set a bit.
 */
static int chpp_modify_port(struct ib_device *ibdev, u32 port, int mask,
			    struct ib_port_modify *pm)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	u32 cap;
	int err;

	if (port != 1)
		return -EINVAL;
	if (!dev->mad || (mask & IB_PORT_SHUTDOWN))
		return -EOPNOTSUPP;
	mutex_lock(&dev->port_mutex);
	if (pm->set_port_cap_mask & IB_PORT_SM)
		dev->sm_cap_refs++;
	if ((pm->clr_port_cap_mask & IB_PORT_SM) && dev->sm_cap_refs)
		dev->sm_cap_refs--;
	cap = (dev->port.cap_mask | pm->set_port_cap_mask) &
	      ~(pm->clr_port_cap_mask & ~IB_PORT_SM);
	cap = dev->sm_cap_refs ? cap | IB_PORT_SM : cap & ~IB_PORT_SM;
	err = cap == dev->port.cap_mask ? 0 : chpp_set_cap_mask(dev, cap);
	mutex_unlock(&dev->port_mutex);
	return err;
}

static int chpp_modify_device(struct ib_device *ibdev, int mask,
			      struct ib_device_modify *props)
{
	struct chpp_dev *dev = to_cdev(ibdev);
	struct ib_smp *smp;
	u32 flags;
	int err;

	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	if (!(mask & IB_DEVICE_MODIFY_NODE_DESC))
		return 0;
	if (!dev->mad)
		return -EOPNOTSUPP;
	smp = kzalloc(sizeof(*smp), GFP_KERNEL);
	if (!smp)
		return -ENOMEM;
	smp->base_version = 1;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_SET;
	smp->attr_id = IB_SMP_ATTR_NODE_DESC;
	memcpy(smp->data, props->node_desc, IB_DEVICE_NODE_DESC_MAX);
	err = chpp_mad_ifc(dev, true, smp, smp, &flags);
	if (!err && smp->status)
		err = -EINVAL;
	if (!err)
		memcpy(ibdev->node_desc, props->node_desc,
		       IB_DEVICE_NODE_DESC_MAX);
	kfree(smp);
	return err;
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
	if (to_cdev(ibdev)->mad) {
		/* QP0 and QP1, the SMA behind process_mad: a full IB port. */
		im->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
		im->max_mad_size = IB_MGMT_MAD_SIZE;
	} else {
		/* IB protocol without MAD/SMI/CM/SA: no QP0/QP1 needed. */
		im->core_cap_flags = RDMA_CORE_CAP_PROT_IB;
		im->max_mad_size = 0;
	}
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

/* The rights of a REG_MR WQE (CHPP_MPT_* bits 3:0). */
u8 chpp_mr_access(int acc)
{
	return chpp_mpt_flags(acc) & (CHPP_MPT_LOCAL_WRITE |
				      CHPP_MPT_REMOTE_READ |
				      CHPP_MPT_REMOTE_WRITE |
				      CHPP_MPT_REMOTE_ATOMIC);
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

/*
 * A fast-registration region (ABI 1.6): free on the device until a REG_MR
 * WQE gives it the pages map_mr_sg collected; its MTT entries and a page
 * list the device reads are reserved here.
 */
static struct ib_mr *chpp_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				   u32 max_num_sg)
{
	struct chpp_dev *dev = to_cdev(ibpd->device);
	struct chpp_mpt_context ctx = {};
	struct chpp_mr *mr;
	int idx, err;
	u32 key;

	if (!(dev->caps.flags & CHPP_DEV_CAP_FLAG_FAST_REG) ||
	    type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > dev->caps.max_fr_pages)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pl_max = max_num_sg;
	mr->pl = dma_alloc_coherent(&dev->pdev->dev, max_num_sg * sizeof(u64),
				    &mr->pl_dma, GFP_KERNEL);
	if (!mr->pl) {
		err = -ENOMEM;
		goto free_mr;
	}
	err = chpp_mtt_alloc(dev, max_num_sg, &mr->mtt_base);
	if (err)
		goto free_pl;
	mr->npages = max_num_sg;
	idx = ida_alloc_max(&dev->mpt_ida, dev->caps.max_mpts - 1, GFP_KERNEL);
	if (idx < 0) {
		err = idx;
		goto free_mtt;
	}
	key = ((u32)idx << CHPP_KEY_INDEX_SHIFT) | ++dev->mpt_tag[idx];
	ctx.flags = cpu_to_le32(CHPP_MPT_FAST_REG);
	ctx.key = cpu_to_le32(key);
	ctx.pd = cpu_to_le32(to_cpd(ibpd)->pdn);
	ctx.mtt_base = cpu_to_le32(mr->mtt_base);
	ctx.max_pages = cpu_to_le32(max_num_sg);
	err = chpp_cmd_in(dev, CHPP_CMD_SW2HW_MPT, idx, &ctx, sizeof(ctx));
	if (err) {
		ida_free(&dev->mpt_ida, idx);
		goto free_mtt;
	}
	mr->mpt = idx;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return &mr->ibmr;

free_mtt:
	chpp_mtt_free(dev, mr->mtt_base, max_num_sg);
free_pl:
	dma_free_coherent(&dev->pdev->dev, max_num_sg * sizeof(u64), mr->pl,
			  mr->pl_dma);
free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

static int chpp_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct chpp_mr *mr = to_cmr(ibmr);

	if (mr->pl_n == mr->pl_max)
		return -ENOMEM;
	mr->pl[mr->pl_n++] = cpu_to_le64(addr);
	return 0;
}

static int chpp_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
			  int sg_nents, unsigned int *sg_offset)
{
	struct chpp_mr *mr = to_cmr(ibmr);

	mr->pl_n = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, chpp_set_page);
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
	if (mr->pl) {
		/* The device forgot the region: its entries are unused. */
		chpp_mtt_free(dev, mr->mtt_base, mr->npages);
		dma_free_coherent(&dev->pdev->dev, mr->pl_max * sizeof(u64),
				  mr->pl, mr->pl_dma);
		kfree(mr);
		return 0;
	}
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
	struct chpp_dev *dev = to_cdev(ibah->device);
	u16 dlid = rdma_ah_get_dlid(init->ah_attr);
	struct chpp_ah *ah = to_cah(ibah);

	ah->dlid = dlid;
	ah->sl = rdma_ah_get_sl(init->ah_attr);
	ah->path_bits = rdma_ah_get_path_bits(init->ah_attr);
	ah->static_rate = rdma_ah_get_static_rate(init->ah_attr);
	/*
	 * LID 0 is no port: ib_sa makes its SM AH from PortInfo:MasterSMLID,
	 * 0 until an SM runs. Its datagrams go to a node no one has.
	 */
	if (!dlid && dev->mad) {
		to_cah(ibah)->dest_node = U16_MAX;
		to_cah(ibah)->dest_vf = 0;
		to_cah(ibah)->ud_flags = 0;
		return 0;
	}
	return chpp_dlid_route(dev, dlid, &to_cah(ibah)->dest_node,
			       &to_cah(ibah)->dest_vf, &to_cah(ibah)->ud_flags);
}

/*
 * The AH's attributes, without a GRH (the device has none): ib_mad
 * matches a response to its request by the request AH's DLID and path
 * bits (rcv_has_same_gid()), so LID-routed MADs need this.
 */
static int chpp_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *a)
{
	struct chpp_ah *ah = to_cah(ibah);

	memset(a, 0, sizeof(*a));
	a->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(a, ah->dlid);
	rdma_ah_set_sl(a, ah->sl);
	rdma_ah_set_path_bits(a, ah->path_bits);
	rdma_ah_set_static_rate(a, ah->static_rate);
	rdma_ah_set_port_num(a, 1);
	return 0;
}

static int chpp_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* ATTACH_MCG / DETACH_MCG (ABI 1.6): a UD QP joins or leaves a group. */
static int chpp_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid,
		      bool attach)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_mcg_attach m = { .mlid = cpu_to_le16(lid) };

	if (!dev->mad || to_cqp(ibqp)->type != CHPP_QPT_UD)
		return -EOPNOTSUPP;
	if (lid < CHPP_MLID_MIN || lid > CHPP_MLID_MAX)
		return -EINVAL;
	memcpy(m.mgid, gid->raw, sizeof(m.mgid));
	return chpp_cmd_in(dev, attach ? CHPP_CMD_ATTACH_MCG :
			   CHPP_CMD_DETACH_MCG, to_cqp(ibqp)->idx, &m,
			   sizeof(m));
}

static int chpp_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return chpp_mcast(ibqp, gid, lid, true);
}

static int chpp_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return chpp_mcast(ibqp, gid, lid, false);
}

/*
 * A DLID as the device addresses it (docs/management-datagrams.md): the
 * permissive LID is the peer's PF (directed route), this port's own LID
 * this function, any other the node and function it is derived from.
 */
int chpp_dlid_route(struct chpp_dev *dev, u16 dlid, u16 *node, u8 *fn,
		    u8 *ud_flags)
{
	*ud_flags = 0;
	if (!dlid)
		return -EINVAL;
	if (dlid == CHPP_LID_PERMISSIVE && dev->mad) {
		*node = 0;
		*fn = 0;
		*ud_flags = CHPP_WQE_UD_PEER;
		return 0;
	}
	if (dlid >= CHPP_MLID_MIN && dlid <= CHPP_MLID_MAX && dev->mad) {
		/* A multicast group: the device finds its members. */
		*node = dlid;
		*fn = 0;
		*ud_flags = CHPP_WQE_UD_MCAST;
		return 0;
	}
	if (dlid == READ_ONCE(dev->port.lid)) {
		*node = dev->node_id;
		*fn = dev->caps.func;
		return 0;
	}
	if (CHPP_LID_FN(dlid) > CHPP_MAX_VFS)
		return -EINVAL;
	*node = CHPP_LID_NODE(dlid);
	*fn = CHPP_LID_FN(dlid);
	return 0;
}

/* PORT_ACTIVE on ACTIVE, PORT_ERR when leaving it; INIT/ARMED are quiet. */
void chpp_port_event(struct chpp_dev *dev, u8 state)
{
	u8 old = READ_ONCE(dev->port.state);

	WRITE_ONCE(dev->port.state, state);
	if (state == CHPP_PORT_ACTIVE)
		chpp_dispatch(dev, IB_EVENT_PORT_ACTIVE);
	else if (old == CHPP_PORT_ACTIVE || state == CHPP_PORT_DOWN)
		chpp_dispatch(dev, IB_EVENT_PORT_ERR);
}

/*
 * Device counters in /sys/class/infiniband/<dev>/hw_counters/ (and rdma
 * statistic): the doorbell ones, so that lost doorbells can be seen from
 * user space (devmem cannot map a BAR the driver holds), and the
 * requester's retransmissions and RNR NAKs, which tell a slow message rate
 * from a receiver that ran out of receives. Their names are the ABI's
 * (chpp_counter_name()) in lower case: "db_fifo_overflow".
 */
static const u32 chpp_stat_cnt[CHPP_NUM_HW_STATS] = {
	CHPP_CNT_DB_FIFO_OVERFLOW,
	CHPP_CNT_DB_ERRORS,
	CHPP_CNT_EVENTS_DROPPED,
	CHPP_CNT_RETRANSMITS,
	CHPP_CNT_RNR_NAKS,
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
	.modify_port = chpp_modify_port,
	.modify_device = chpp_modify_device,
	.process_mad = chpp_process_mad,
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
	.alloc_mr = chpp_alloc_mr,
	.map_mr_sg = chpp_map_mr_sg,
	.create_ah = chpp_create_ah,
	.attach_mcast = chpp_attach_mcast,
	.detach_mcast = chpp_detach_mcast,
	.query_ah = chpp_query_ah,
	.destroy_ah = chpp_destroy_ah,
	.create_cq = chpp_create_cq_op,
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
	err = chpp_port_refresh(dev);
	if (err)
		return err;
	if (dev->mad) {
		/* The SMA's NodeDescription, as NodeInfo readers see it. */
		struct ib_device_modify m = {};

		snprintf(m.node_desc, sizeof(m.node_desc), "%s chpp%u.%u",
			 init_utsname()->nodename, dev->node_id,
			 dev->caps.func);
		if (!chpp_modify_device(ibdev, IB_DEVICE_MODIFY_NODE_DESC, &m))
			memcpy(ibdev->node_desc, m.node_desc,
			       sizeof(ibdev->node_desc));
	}
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
