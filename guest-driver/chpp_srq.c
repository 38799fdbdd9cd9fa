// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: shared receive queues (ABI 1.5, docs/shared-receive-queues.md).
 *
 * The ring is followed by the consumer record the device writes: every WQE
 * before its free index may be posted again. The device takes WQEs in ring
 * order and copies each WQE's wr_id to its CQE, so the WQE carries the
 * caller's wr_id itself and no table of wr_ids is needed.
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>
#include "chpp_hca.h"

#define SEG 16

static u32 chpp_srq_ring_bytes(struct chpp_srq *srq)
{
	return srq->n << srq->shift;
}

static int chpp_srq_user_ring(struct chpp_dev *dev, struct chpp_srq *srq,
			      const struct ib_srq_init_attr *init,
			      struct ib_udata *udata)
{
	struct chpp_create_srq_cmd cmd = {};
	int err;

	err = ib_copy_from_udata(&cmd, udata, min(udata->inlen, sizeof(cmd)));
	if (err)
		return err;
	if (cmd.reserved0 || cmd.reserved1 || cmd.log_size > 15 ||
	    (1u << cmd.log_size) > dev->caps.max_srq_wqes ||
	    (1u << cmd.log_size) < init->attr.max_wr ||
	    cmd.log_stride < CHPP_MIN_WQE_SHIFT ||
	    cmd.log_stride > CHPP_MAX_WQE_SHIFT ||
	    (1u << cmd.log_stride) < SEG + SEG * init->attr.max_sge)
		return -EINVAL;
	srq->n = 1u << cmd.log_size;
	srq->shift = cmd.log_stride;
	srq->user = true;
	srq->uar = rdma_udata_to_drv_context(udata, struct chpp_ucontext,
					     ibuc)->uar;
	return chpp_ubuf_get(dev, cmd.buf_addr,
			     chpp_srq_ring_bytes(srq) +
			     sizeof(struct chpp_srq_record), &srq->buf);
}

int chpp_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibsrq->device);
	struct chpp_srq *srq = to_csrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	struct chpp_srq_context ctx = {};
	int idx, err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!dev->caps.max_srqs || attr->max_wr > dev->caps.max_srq_wqes ||
	    attr->max_sge > dev->caps.max_srq_sge)
		return -EINVAL;
	idx = ida_alloc_max(&dev->srq_ida, dev->caps.max_srqs - 1, GFP_KERNEL);
	if (idx < 0)
		return idx == -ENOSPC ? -ENOMEM : idx;
	srq->srqn = idx;
	srq->head = 0;
	spin_lock_init(&srq->lock);
	if (udata) {
		err = chpp_srq_user_ring(dev, srq, init, udata);
	} else {
		srq->n = roundup_pow_of_two(max_t(u32, attr->max_wr, 1));
		srq->shift = max_t(u32, CHPP_MIN_WQE_SHIFT,
				   order_base_2(SEG + SEG *
						max_t(u32, attr->max_sge, 1)));
		srq->uar = CHPP_KERNEL_UAR;
		err = chpp_buf_alloc(dev, chpp_srq_ring_bytes(srq) +
				     sizeof(struct chpp_srq_record), &srq->buf);
		srq->rec = srq->buf.va + chpp_srq_ring_bytes(srq);
	}
	if (err)
		goto free_idx;
	srq->max_sge = min_t(u32, ((1u << srq->shift) - SEG) / SEG,
			     CHPP_MAX_SGE);

	ctx.pd = cpu_to_le32(to_cpd(ibsrq->pd)->pdn);
	ctx.mtt_base = cpu_to_le32(srq->buf.mtt_base);
	ctx.log_size = ilog2(srq->n);
	ctx.log_stride = srq->shift;
	ctx.log_page_size = PAGE_SHIFT;
	ctx.uar = cpu_to_le16(srq->uar);
	err = xa_err(xa_store_irq(&dev->srq_xa, idx, srq, GFP_KERNEL));
	if (err)
		goto free_buf;
	err = chpp_cmd_in(dev, CHPP_CMD_SW2HW_SRQ, idx, &ctx, sizeof(ctx));
	if (err)
		goto erase;
	attr->max_wr = srq->n;
	attr->max_sge = srq->max_sge;
	if (udata) {
		struct chpp_create_srq_resp resp = { .srqn = idx };

		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto hw2sw;
	}
	return 0;

hw2sw:
	chpp_cmd(dev, CHPP_CMD_HW2SW_SRQ, 0, idx, 0, NULL);
erase:
	xa_erase_irq(&dev->srq_xa, idx);
free_buf:
	chpp_buf_free(dev, &srq->buf);
free_idx:
	ida_free(&dev->srq_ida, idx);
	return err;
}

int chpp_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibsrq->device);
	struct chpp_srq *srq = to_csrq(ibsrq);

	/* ib_core destroys the QPs first: nothing is attached any more. */
	if (chpp_cmd(dev, CHPP_CMD_HW2SW_SRQ, 0, srq->srqn, 0, NULL))
		dev_err(&dev->pdev->dev, "SRQ %u: HW2SW_SRQ failed on destroy\n",
			srq->srqn);
	xa_erase_irq(&dev->srq_xa, srq->srqn);
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	chpp_buf_free(dev, &srq->buf);
	ida_free(&dev->srq_ida, srq->srqn);
	return 0;
}

int chpp_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibsrq->device);
	struct chpp_srq *srq = to_csrq(ibsrq);

	/* No resizing. */
	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->n)
		return -EINVAL;
	return chpp_cmd(dev, CHPP_CMD_ARM_SRQ, attr->srq_limit, srq->srqn, 0,
			NULL);
}

int chpp_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct chpp_dev *dev = to_cdev(ibsrq->device);
	struct chpp_srq *srq = to_csrq(ibsrq);
	struct chpp_srq_context ctx;
	int err;

	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_SRQ, srq->srqn, &ctx,
			     sizeof(ctx));
	if (err)
		return err;
	attr->max_wr = srq->n;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = le32_to_cpu(ctx.limit);
	return 0;
}

int chpp_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad)
{
	struct chpp_dev *dev = to_cdev(ibsrq->device);
	struct chpp_srq *srq = to_csrq(ibsrq);
	unsigned long flags;
	int err = 0, n = 0, i;
	u32 free;

	/* A process posts to its own SRQ's ring, in user space. */
	if (srq->user) {
		*bad = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	/* The device's free index: slots before it may be written again. */
	free = le32_to_cpu(READ_ONCE(srq->rec->free));
	for (; wr; wr = wr->next) {
		struct chpp_rwqe_hdr *h;
		struct chpp_wqe_sge *s;

		if (((srq->head - free) & CHPP_UAR_DB_PI_MASK) >= srq->n) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		h = srq->buf.va + ((size_t)(srq->head & (srq->n - 1)) <<
				   srq->shift);
		h->wr_id = cpu_to_le64(wr->wr_id);
		h->num_sge = cpu_to_le32(wr->num_sge);
		h->reserved = 0;
		s = (void *)(h + 1);
		for (i = 0; i < wr->num_sge; i++) {
			s[i].length = cpu_to_le32(wr->sg_list[i].length);
			s[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
			s[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		}
		srq->head++;
		n++;
	}
	if (err)
		*bad = wr;
	if (n) {
		wmb();	/* WQEs before the producer index */
		writel((srq->srqn << CHPP_UAR_DB_QPN_SHIFT) |
		       (srq->head & CHPP_UAR_DB_PI_MASK),
		       dev->uar + CHPP_UAR_SRQ_DB);
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

void chpp_srq_event(struct chpp_dev *dev, u32 srqn, u8 type)
{
	struct chpp_srq *srq = xa_load(&dev->srq_xa, srqn);
	struct ib_event ev = {};

	if (!srq) {
		dev_warn(&dev->pdev->dev, "event %s for unknown SRQ %u\n",
			 chpp_event_name(type) ?: "?", srqn);
		return;
	}
	if (type == CHPP_EVENT_SRQ_LIMIT) {
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
	} else {
		dev_err(&dev->pdev->dev, "SRQ %u error event %s\n", srqn,
			chpp_event_name(type));
		ev.event = IB_EVENT_SRQ_ERR;
	}
	ev.device = &dev->ibdev;
	ev.element.srq = &srq->ibsrq;
	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}
