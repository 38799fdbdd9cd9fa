// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: completion queues (docs/completion-queues.md).
 */
#include <rdma/uverbs_ioctl.h>
#include "chpp_hca.h"

static void chpp_cq_db(struct chpp_dev *dev, struct chpp_cq *cq, u32 cmd)
{
	u64 v = (cq->cqn & CHPP_CQ_DB_CQN_MASK) |
		((u64)cmd << CHPP_CQ_DB_CMD_SHIFT) |
		((u64)(cq->ci & CHPP_CQ_DB_CI_MASK) << CHPP_CQ_DB_CI_SHIFT);

	/* One 64-bit write (a 32-bit pair would be refused). */
	writeq(v, dev->uar + CHPP_UAR_CQ_DB);
}

/* The ring of a user CQ: user memory described by the command's udata. */
static int chpp_cq_user_ring(struct chpp_dev *dev, struct chpp_cq *cq,
			     const struct ib_cq_init_attr *attr,
			     struct ib_udata *udata)
{
	struct chpp_ucontext *uc = rdma_udata_to_drv_context(udata,
				struct chpp_ucontext, ibuc);
	struct chpp_create_cq_cmd cmd = {};
	int err;

	err = ib_copy_from_udata(&cmd, udata, min(udata->inlen, sizeof(cmd)));
	if (err)
		return err;
	if (cmd.reserved || !is_power_of_2(cmd.entries) ||
	    cmd.entries < CHPP_CQ_MIN_ENTRIES || cmd.entries < attr->cqe ||
	    cmd.entries > dev->caps.max_cq_entries)
		return -EINVAL;
	cq->n = cmd.entries;
	cq->user = true;
	cq->uar = uc->uar;
	return chpp_ubuf_get(dev, cmd.buf_addr,
			     (size_t)cq->n * CHPP_CQE_SIZE, &cq->buf);
}

int chpp_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibcq->device);
	struct chpp_cq *cq = to_ccq(ibcq);
	struct chpp_cq_context ctx = {};
	int idx, err;

	if (attr->flags || attr->cqe < 1 || attr->cqe > dev->caps.max_cq_entries)
		return -EINVAL;

	idx = ida_alloc_max(&dev->cq_ida, dev->caps.max_cqs - 1, GFP_KERNEL);
	if (idx < 0)
		return idx;
	cq->cqn = idx;
	cq->ci = 0;
	spin_lock_init(&cq->lock);
	if (udata) {
		err = chpp_cq_user_ring(dev, cq, attr, udata);
	} else {
		cq->n = roundup_pow_of_two(max_t(u32, attr->cqe,
						 CHPP_CQ_MIN_ENTRIES));
		cq->uar = CHPP_KERNEL_UAR;
		err = chpp_buf_alloc(dev, cq->n * CHPP_CQE_SIZE, &cq->buf);
	}
	if (err)
		goto free_idx;

	ctx.mtt_base = cpu_to_le32(cq->buf.mtt_base);
	ctx.log_page_size = PAGE_SHIFT;
	ctx.num_entries = cpu_to_le32(cq->n);
	ctx.eqn = cpu_to_le32(dev->eq.eqn);
	ctx.uar = cpu_to_le16(cq->uar);
	err = xa_err(xa_store_irq(&dev->cq_xa, idx, cq, GFP_KERNEL));
	if (err)
		goto free_buf;
	err = chpp_cmd_in(dev, CHPP_CMD_SW2HW_CQ, idx, &ctx, sizeof(ctx));
	if (err)
		goto erase;
	cq->hw = true;
	ibcq->cqe = cq->n;
	if (udata) {
		struct chpp_create_cq_resp resp = {
			.cqn = idx,
			.entries = cq->n,
		};

		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto hw2sw;
	}
	return 0;

hw2sw:
	chpp_cmd(dev, CHPP_CMD_HW2SW_CQ, 0, idx, 0, NULL);
erase:
	xa_erase_irq(&dev->cq_xa, idx);
free_buf:
	chpp_buf_free(dev, &cq->buf);
free_idx:
	ida_free(&dev->cq_ida, idx);
	return err;
}

int chpp_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibcq->device);
	struct chpp_cq *cq = to_ccq(ibcq);
	int err;

	err = chpp_cmd(dev, CHPP_CMD_HW2SW_CQ, 0, cq->cqn, 0, NULL);
	if (err)
		dev_err(&dev->pdev->dev, "CQ %u: HW2SW_CQ failed (%d), ring kept\n",
			cq->cqn, err);
	xa_erase_irq(&dev->cq_xa, cq->cqn);
	/* The EQ handler may still be looking at it. */
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	if (!err)
		chpp_buf_free(dev, &cq->buf);
	ida_free(&dev->cq_ida, cq->cqn);
	return 0;
}

static struct chpp_cqe *chpp_cqe_at(struct chpp_cq *cq, u32 i)
{
	return (struct chpp_cqe *)cq->buf.va + (i & (cq->n - 1));
}

static bool chpp_cqe_valid(struct chpp_cq *cq, u32 i)
{
	struct chpp_cqe *cqe = chpp_cqe_at(cq, i);

	return !!(READ_ONCE(cqe->owner) & CHPP_CQE_OWNER) ==
	       (((i / cq->n) & 1) ^ 1);
}

static enum ib_wc_opcode chpp_wc_opcode(u8 op)
{
	switch (op) {
	case CHPP_CQE_OP_SEND: return IB_WC_SEND;
	case CHPP_CQE_OP_RDMA_WRITE: return IB_WC_RDMA_WRITE;
	case CHPP_CQE_OP_RDMA_READ: return IB_WC_RDMA_READ;
	case CHPP_CQE_OP_COMP_SWAP: return IB_WC_COMP_SWAP;
	case CHPP_CQE_OP_FETCH_ADD: return IB_WC_FETCH_ADD;
	case CHPP_CQE_OP_RECV_RDMA_IMM: return IB_WC_RECV_RDMA_WITH_IMM;
	default: return IB_WC_RECV;
	}
}

static void chpp_cqe_to_wc(struct chpp_dev *dev, struct chpp_cq *cq,
			   const struct chpp_cqe *cqe, struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	u64 wqe_id = le64_to_cpu(cqe->wr_id);
	struct chpp_qp *qp;
	struct chpp_wq *wq;

	memset(wc, 0, sizeof(*wc));
	qp = xa_load(&dev->qp_xa, qpn);
	wc->status = cqe->status;
	wc->opcode = chpp_wc_opcode(cqe->opcode);
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->vendor_err = cqe->vendor_err;
	wc->port_num = 1;
	if (!qp) {
		dev_warn(&dev->pdev->dev, "CQ %u: CQE for unknown QP %u dropped\n",
			 cq->cqn, qpn);
		wc->status = IB_WC_GENERAL_ERR;
		return;
	}
	wc->qp = &qp->ibqp;
	if (!(cqe->flags & CHPP_CQE_FLAG_SEND) && qp->ibqp.srq) {
		/* An SRQ's WQE holds the caller's wr_id itself. */
		wc->wr_id = wqe_id;
	} else {
		/* The WQE's wr_id field holds the driver's WQE counter. */
		wq = (cqe->flags & CHPP_CQE_FLAG_SEND) ? &qp->sq : &qp->rq;
		wc->wr_id = wq->wrid[wqe_id & (wq->n - 1)];
		wq->tail = (u32)wqe_id + 1;
	}
	if (cqe->flags & CHPP_CQE_FLAG_IMM) {
		/* The immediate's bytes as the sender posted them. */
		wc->ex.imm_data = (__force __be32)cqe->imm;
		wc->wc_flags |= IB_WC_WITH_IMM;
	}
	if (!(cqe->flags & CHPP_CQE_FLAG_SEND)) {
		wc->slid = CHPP_LID(le16_to_cpu(cqe->src_node), cqe->src_vf);
		if (qp->type == CHPP_QPT_UD)
			wc->src_qp = CHPP_IBQPN(CHPP_UD_MAGIC,
						le32_to_cpu(cqe->src_qp));
		else
			wc->src_qp = qp->dest_ibqpn;
	}
	if (cqe->status)
		dev_warn(&dev->pdev->dev,
			 "QP %u: error completion status %u (%s) vendor_err %u\n",
			 qpn, cqe->status, ib_wc_status_msg(cqe->status),
			 cqe->vendor_err);
}

int chpp_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct chpp_dev *dev = to_cdev(ibcq->device);
	struct chpp_cq *cq = to_ccq(ibcq);
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && chpp_cqe_valid(cq, cq->ci)) {
		dma_rmb();	/* owner before the rest of the CQE */
		chpp_cqe_to_wc(dev, cq, chpp_cqe_at(cq, cq->ci), &wc[n]);
		cq->ci++;
		n++;
	}
	if (n)
		chpp_cq_db(dev, cq, CHPP_CQ_DB_SET_CI);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int chpp_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct chpp_dev *dev = to_cdev(ibcq->device);
	struct chpp_cq *cq = to_ccq(ibcq);
	unsigned long irqf;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqf);
	chpp_cq_db(dev, cq, (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		   CHPP_CQ_DB_ARM_SOL : CHPP_CQ_DB_ARM_NEXT);
	/* Arming never fires for CQEs already in the ring: report them. */
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && chpp_cqe_valid(cq, cq->ci))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqf);
	return ret;
}

/*
 * Remove the CQEs of device QP @qpn that are still in the ring (after 2RST,
 * docs/queue-pairs.md#2rst): compact the later CQEs over them.
 */
void chpp_cq_clean(struct chpp_cq *cq, u32 qpn)
{
	unsigned long flags;
	u32 pi, i, dst;

	/* A process owns its CQ ring and consumer index: it cleans it. */
	if (!cq || cq->user)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	for (pi = cq->ci; chpp_cqe_valid(cq, pi) && pi - cq->ci < cq->n; pi++)
		;
	dma_rmb();
	/* Walk backwards, moving kept CQEs towards the producer end. */
	dst = pi;
	for (i = pi; i != cq->ci; ) {
		struct chpp_cqe *src;

		i--;
		src = chpp_cqe_at(cq, i);
		if (le32_to_cpu(src->qpn) == qpn)
			continue;
		dst--;
		if (dst != i) {
			struct chpp_cqe *d = chpp_cqe_at(cq, dst);
			u8 owner = d->owner;

			memcpy(d, src, CHPP_CQE_SIZE - 1);
			d->owner = owner;
		}
	}
	/* Slots [ci, dst) held removed CQEs: consume them by moving ci. */
	if (dst != cq->ci) {
		cq->ci = dst;
		chpp_cq_db(to_cdev(cq->ibcq.device), cq, CHPP_CQ_DB_SET_CI);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

void chpp_cq_event(struct chpp_dev *dev, u32 cqn, bool error)
{
	struct chpp_cq *cq = xa_load(&dev->cq_xa, cqn);

	if (!cq) {
		dev_warn(&dev->pdev->dev, "event for unknown CQ %u\n", cqn);
		return;
	}
	if (error) {
		struct ib_event ev = {
			.device = cq->ibcq.device,
			.element.cq = &cq->ibcq,
			.event = IB_EVENT_CQ_ERR,
		};

		if (cq->ibcq.event_handler)
			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		return;
	}
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}
