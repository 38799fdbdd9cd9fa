// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: queue pairs, the modify-QP commands and posting work requests
 * (docs/queue-pairs.md, docs/work-requests.md).
 *
 * Every device QP always exists in RESET; create_qp only reserves a QPN and
 * the rings, RESET->INIT issues RST2INIT with the creation fields.
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>
#include "chpp_hca.h"

#define SEG 16	/* every WQE segment is 16 bytes */

static u32 chpp_wq_shift(u32 bytes)
{
	return max_t(u32, CHPP_MIN_WQE_SHIFT, order_base_2(bytes));
}

static int chpp_wq_alloc(struct chpp_dev *dev, struct chpp_wq *wq, u32 nwr,
			 u32 bytes)
{
	wq->n = roundup_pow_of_two(max_t(u32, nwr, 1));
	wq->shift = chpp_wq_shift(bytes);
	if (wq->n > dev->caps.max_qp_wqes || wq->shift > CHPP_MAX_WQE_SHIFT)
		return -EINVAL;
	wq->head = 0;
	wq->tail = 0;
	wq->wrid = kcalloc(wq->n, sizeof(u64), GFP_KERNEL);
	if (!wq->wrid)
		return -ENOMEM;
	if (chpp_buf_alloc(dev, (size_t)wq->n << wq->shift, &wq->buf)) {
		kfree(wq->wrid);
		wq->wrid = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* A user ring: geometry from the process, checked like a kernel ring's. */
static int chpp_wq_user(struct chpp_dev *dev, struct chpp_wq *wq, u64 addr,
			u8 log_size, u8 log_stride, u32 nwr, u32 min_bytes)
{
	if (log_size > 30 || (1u << log_size) > dev->caps.max_qp_wqes ||
	    (1u << log_size) < nwr || log_stride < CHPP_MIN_WQE_SHIFT ||
	    log_stride > CHPP_MAX_WQE_SHIFT || (1u << log_stride) < min_bytes)
		return -EINVAL;
	wq->n = 1u << log_size;
	wq->shift = log_stride;
	wq->head = 0;
	wq->tail = 0;
	wq->wrid = NULL;	/* the process keeps its own wr_ids */
	return chpp_ubuf_get(dev, addr, (size_t)wq->n << wq->shift, &wq->buf);
}

static void chpp_wq_free(struct chpp_dev *dev, struct chpp_wq *wq)
{
	chpp_buf_free(dev, &wq->buf);
	kfree(wq->wrid);
	wq->wrid = NULL;
}

int chpp_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	u32 sq_bytes, rq_bytes, hdr;
	int idx, err;

	if (init->create_flags)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_RC:
		qp->type = CHPP_QPT_RC;
		break;
	case IB_QPT_UC:
		qp->type = CHPP_QPT_UC;
		break;
	case IB_QPT_UD:
		qp->type = CHPP_QPT_UD;
		break;
	case IB_QPT_SMI:
	case IB_QPT_GSI:
		/* ABI 1.6: device QPNs 0 and 1 (docs/management-datagrams.md). */
		if (!dev->mad || udata || init->port_num != 1)
			return -EOPNOTSUPP;
		qp->type = init->qp_type == IB_QPT_SMI ? CHPP_QPT_SMI :
							CHPP_QPT_GSI;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (cap->max_send_sge > dev->caps.max_sge ||
	    cap->max_recv_sge > dev->caps.max_sge ||
	    cap->max_inline_data > dev->caps.max_inline)
		return -EINVAL;

	/*
	 * ctrl + UD + raddr + atomic, then the gather list; inline data after
	 * the largest header of the opcodes that carry it (ABI header).
	 */
	hdr = SEG + (chpp_qpt_is_ud(qp->type) ? SEG : 0) + 2 * SEG;
	sq_bytes = max_t(u32, hdr + SEG * max_t(u32, cap->max_send_sge, 1),
			 CHPP_WQE_INLINE_HDR +
			 ALIGN(cap->max_inline_data, SEG));
	rq_bytes = SEG + SEG * max_t(u32, cap->max_recv_sge, 1);

	if (qp->type == CHPP_QPT_SMI || qp->type == CHPP_QPT_GSI) {
		u32 n = qp->type == CHPP_QPT_SMI ? 0 : 1;

		idx = ida_alloc_range(&dev->qp_ida, n, n, GFP_KERNEL);
		if (idx < 0)
			return idx == -ENOSPC ? -EBUSY : idx;
	} else {
		/* With MADs, QPNs 0 and 1 are the special QPs'. */
		idx = ida_alloc_range(&dev->qp_ida, dev->mad ? 2 : 0,
				      min_t(u32, dev->caps.max_qps,
					    CHPP_QPN_MASK + 1) - 1,
				      GFP_KERNEL);
		if (idx < 0)
			return idx == -ENOSPC ? -ENOMEM : idx;
	}
	qp->idx = idx;
	INIT_WORK(&qp->redb_work, chpp_qp_redoorbell_work);
	if (udata) {
		struct chpp_create_qp_cmd cmd = {};

		err = ib_copy_from_udata(&cmd, udata,
					 min(udata->inlen, sizeof(cmd)));
		if (err)
			goto free_idx;
		if (cmd.reserved) {
			err = -EINVAL;
			goto free_idx;
		}
		qp->user = true;
		qp->uar = rdma_udata_to_drv_context(udata, struct chpp_ucontext,
						    ibuc)->uar;
		err = chpp_wq_user(dev, &qp->sq, cmd.sq_buf_addr,
				   cmd.log_sq_size, cmd.log_sq_stride,
				   cap->max_send_wr, sq_bytes);
		if (err)
			goto free_idx;
		/* With an SRQ there is no RQ (docs/shared-receive-queues.md). */
		if (!init->srq)
			err = chpp_wq_user(dev, &qp->rq, cmd.rq_buf_addr,
					   cmd.log_rq_size, cmd.log_rq_stride,
					   cap->max_recv_wr, rq_bytes);
		if (err)
			goto free_sq;
	} else {
		qp->uar = CHPP_KERNEL_UAR;
		err = chpp_wq_alloc(dev, &qp->sq, cap->max_send_wr, sq_bytes);
		if (err)
			goto free_idx;
		if (!init->srq)
			err = chpp_wq_alloc(dev, &qp->rq, cap->max_recv_wr,
					    rq_bytes);
		if (err)
			goto free_sq;
	}

	qp->sq.max_sge = ((1u << qp->sq.shift) - hdr) / SEG;
	qp->sq.max_sge = min_t(u32, qp->sq.max_sge, CHPP_MAX_SGE);
	qp->rq.max_sge = init->srq ? 0 :
			 min_t(u32, ((1u << qp->rq.shift) - SEG) / SEG,
			       CHPP_MAX_SGE);
	qp->max_inline = (1u << qp->sq.shift) - CHPP_WQE_INLINE_HDR;
	cap->max_send_wr = qp->sq.n;
	cap->max_recv_wr = qp->rq.n;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = qp->rq.max_sge;
	cap->max_inline_data = qp->max_inline;

	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	mutex_init(&qp->mutex);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	if (qp->type == CHPP_QPT_SMI || qp->type == CHPP_QPT_GSI) {
		/* MADs are sent to QP0/QP1 with magic 0. */
		qp->magic = 0;
	} else if (qp->type == CHPP_QPT_UD) {
		qp->magic = CHPP_UD_MAGIC;
	} else {
		/* A fresh magic per incarnation, never 0 or the UD magic. */
		do {
			qp->magic = ++dev->next_magic;
		} while (qp->magic <= CHPP_UD_MAGIC);
	}
	ibqp->qp_num = CHPP_IBQPN(qp->magic, idx);
	if (udata) {
		struct chpp_create_qp_resp resp = {
			.qpn = idx,
			.magic = qp->magic,
		};

		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto free_rq;
	}
	err = xa_err(xa_store_irq(&dev->qp_xa, idx, qp, GFP_KERNEL));
	if (err)
		goto free_rq;
	return 0;

free_rq:
	chpp_wq_free(dev, &qp->rq);
free_sq:
	chpp_wq_free(dev, &qp->sq);
free_idx:
	ida_free(&dev->qp_ida, idx);
	return err;
}

static void chpp_qp_reset_sw(struct chpp_dev *dev, struct chpp_qp *qp)
{
	chpp_cq_clean(to_ccq(qp->ibqp.send_cq), qp->idx);
	if (qp->ibqp.recv_cq != qp->ibqp.send_cq)
		chpp_cq_clean(to_ccq(qp->ibqp.recv_cq), qp->idx);
	qp->sq.head = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
}

int chpp_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);

	mutex_lock(&qp->mutex);
	if (qp->state != IB_QPS_RESET) {
		if (chpp_cmd(dev, CHPP_CMD_2RST_QP, 0, qp->idx, 0, NULL))
			dev_err(&dev->pdev->dev, "QP %u: 2RST failed on destroy\n",
				qp->idx);
		chpp_qp_reset_sw(dev, qp);
	}
	mutex_unlock(&qp->mutex);
	xa_erase_irq(&dev->qp_xa, qp->idx);
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	cancel_work_sync(&qp->redb_work);
	chpp_wq_free(dev, &qp->rq);
	chpp_wq_free(dev, &qp->sq);
	ida_free(&dev->qp_ida, qp->idx);
	return 0;
}

static int chpp_transition(enum ib_qp_state cur, enum ib_qp_state next)
{
	if (next == IB_QPS_RESET)
		return CHPP_CMD_2RST_QP;
	if (next == IB_QPS_ERR)
		return CHPP_CMD_2ERR_QP;
	switch (cur) {
	case IB_QPS_RESET:
		return next == IB_QPS_INIT ? CHPP_CMD_RST2INIT_QP : -1;
	case IB_QPS_INIT:
		return next == IB_QPS_INIT ? CHPP_CMD_INIT2INIT_QP :
		       next == IB_QPS_RTR ? CHPP_CMD_INIT2RTR_QP : -1;
	case IB_QPS_RTR:
		return next == IB_QPS_RTS ? CHPP_CMD_RTR2RTS_QP : -1;
	case IB_QPS_RTS:
		return next == IB_QPS_RTS ? CHPP_CMD_RTS2RTS_QP :
		       next == IB_QPS_SQD ? CHPP_CMD_RTS2SQD_QP : -1;
	case IB_QPS_SQD:
		return next == IB_QPS_SQD ? CHPP_CMD_SQD2SQD_QP :
		       next == IB_QPS_RTS ? CHPP_CMD_SQD2RTS_QP : -1;
	case IB_QPS_SQE:
		return next == IB_QPS_RTS ? CHPP_CMD_SQERR2RTS_QP : -1;
	default:
		return -1;
	}
}

static void chpp_fill_modify(struct chpp_qp *qp, const struct ib_qp_attr *a,
			     int mask, struct chpp_qp_modify *m)
{
	struct chpp_qp_context *c = &m->ctx;
	struct ib_qp *ibqp = &qp->ibqp;

	m->attr_mask = cpu_to_le32(mask & ~IB_QP_STATE);
	/* Creation fields (read by RST2INIT only). */
	c->type = qp->type;
	c->pd = cpu_to_le32(to_cpd(ibqp->pd)->pdn);
	c->send_cqn = cpu_to_le32(to_ccq(ibqp->send_cq)->cqn);
	c->recv_cqn = cpu_to_le32(to_ccq(ibqp->recv_cq)->cqn);
	c->sq_mtt_base = cpu_to_le32(qp->sq.buf.mtt_base);
	c->log_sq_size = ilog2(qp->sq.n);
	c->log_sq_stride = qp->sq.shift;
	if (ibqp->srq) {
		/* No RQ: its fields are ignored (shared-receive-queues.md). */
		c->flags |= CHPP_QP_FLAG_SRQ;
		c->srqn = cpu_to_le32(to_csrq(ibqp->srq)->srqn);
	} else {
		c->rq_mtt_base = cpu_to_le32(qp->rq.buf.mtt_base);
		c->log_rq_size = ilog2(qp->rq.n);
		c->log_rq_stride = qp->rq.shift;
	}
	c->sq_log_page_size = PAGE_SHIFT;
	c->rq_log_page_size = PAGE_SHIFT;
	c->uar = cpu_to_le16(qp->uar);
	c->magic = qp->magic;
	if (qp->sig_all)
		c->flags |= CHPP_QP_FLAG_SQ_SIG_ALL;

	if (mask & IB_QP_CUR_STATE)
		c->state = a->cur_qp_state;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		c->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IB_QP_ACCESS_FLAGS)
		c->access_flags = cpu_to_le32(a->qp_access_flags &
			(CHPP_ACCESS_LOCAL_WRITE | CHPP_ACCESS_REMOTE_WRITE |
			 CHPP_ACCESS_REMOTE_READ | CHPP_ACCESS_REMOTE_ATOMIC));
	if (mask & IB_QP_PKEY_INDEX)
		c->pkey_index = cpu_to_le16(a->pkey_index);
	if (mask & IB_QP_PORT)
		c->port = a->port_num;
	if (mask & IB_QP_QKEY)
		c->qkey = cpu_to_le32(a->qkey);
	if (mask & IB_QP_AV) {
		u16 node = 0;
		u8 fn = 0, flags;

		/* Checked by chpp_modify_qp() already. */
		chpp_dlid_route(to_cdev(ibqp->device),
				rdma_ah_get_dlid(&a->ah_attr), &node, &fn, &flags);
		c->dest_node = cpu_to_le32(node);
		c->dest_vf = fn;
	}
	if (mask & IB_QP_DEST_QPN)
		c->dest_qpn = cpu_to_le32(a->dest_qp_num & CHPP_QPN_MASK);
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN)) {
		u32 dq = (mask & IB_QP_DEST_QPN) ? a->dest_qp_num : qp->dest_ibqpn;

		c->dest_magic = dq >> CHPP_QPN_BITS;
	}
	if (mask & IB_QP_PATH_MTU)
		c->path_mtu = a->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		c->timeout = a->timeout;
	if (mask & IB_QP_RETRY_CNT)
		c->retry_cnt = a->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		c->rnr_retry = a->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		c->rq_psn = cpu_to_le32(a->rq_psn);
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		c->max_rd_atomic = a->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		c->min_rnr_timer = a->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		c->sq_psn = cpu_to_le32(a->sq_psn);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		c->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

int chpp_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);
	enum ib_qp_state cur, next;
	struct chpp_qp_modify *m;
	int op, err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	mutex_lock(&qp->mutex);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != 1) {
		err = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_AV) {
		u16 node;
		u8 fn, flags;

		/* The permissive LID is for the special QPs' datagrams. */
		if (chpp_dlid_route(dev, rdma_ah_get_dlid(&attr->ah_attr),
				    &node, &fn, &flags) || flags) {
			err = -EINVAL;
			goto out;
		}
	}
	if (cur == IB_QPS_RESET && next == IB_QPS_RESET) {
		err = 0;
		goto out;
	}
	op = chpp_transition(cur, next);
	if (op < 0) {
		err = -EINVAL;
		goto out;
	}
	if (op == CHPP_CMD_2RST_QP || op == CHPP_CMD_2ERR_QP) {
		err = chpp_cmd(dev, op, 0, qp->idx, 0, NULL);
	} else {
		m = kzalloc(sizeof(*m), GFP_KERNEL);
		if (!m) {
			err = -ENOMEM;
			goto out;
		}
		chpp_fill_modify(qp, attr, mask, m);
		err = chpp_cmd_in(dev, op, qp->idx, m, sizeof(*m));
		kfree(m);
	}
	if (err)
		goto out;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_ibqpn = attr->dest_qp_num;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	qp->state = next;
	if (next == IB_QPS_RESET)
		chpp_qp_reset_sw(dev, qp);
out:
	mutex_unlock(&qp->mutex);
	return err;
}

int chpp_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *a, int mask,
		  struct ib_qp_init_attr *init)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);
	struct chpp_qp_context c;
	int err;

	mutex_lock(&qp->mutex);
	err = chpp_cmd_query(dev, CHPP_CMD_QUERY_QP, qp->idx, &c, sizeof(c));
	if (err)
		goto out;
	memset(a, 0, sizeof(*a));
	a->qp_state = c.state;
	a->cur_qp_state = c.state;
	qp->state = c.state;	/* the device may have moved it to ERR/SQE */
	a->path_mtu = c.path_mtu ? c.path_mtu : IB_MTU_4096;
	a->path_mig_state = IB_MIG_MIGRATED;
	a->qkey = le32_to_cpu(c.qkey);
	a->rq_psn = le32_to_cpu(c.rq_psn);
	a->sq_psn = le32_to_cpu(c.sq_psn);
	a->dest_qp_num = qp->dest_ibqpn;
	a->qp_access_flags = le32_to_cpu(c.access_flags);
	a->pkey_index = le16_to_cpu(c.pkey_index);
	a->port_num = c.port ? c.port : 1;
	a->en_sqd_async_notify = c.en_sqd_async_notify;
	a->sq_draining = c.sq_draining;
	a->max_rd_atomic = c.max_rd_atomic;
	a->max_dest_rd_atomic = c.max_dest_rd_atomic;
	a->min_rnr_timer = c.min_rnr_timer;
	a->timeout = c.timeout;
	a->retry_cnt = c.retry_cnt;
	a->rnr_retry = c.rnr_retry;
	if (!chpp_qpt_is_ud(qp->type)) {
		a->ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
		rdma_ah_set_dlid(&a->ah_attr,
				 CHPP_LID(le32_to_cpu(c.dest_node), c.dest_vf));
		rdma_ah_set_port_num(&a->ah_attr, 1);
	}
	a->cap.max_send_wr = qp->sq.n;
	a->cap.max_recv_wr = qp->rq.n;
	a->cap.max_send_sge = qp->sq.max_sge;
	a->cap.max_recv_sge = qp->rq.max_sge;
	a->cap.max_inline_data = qp->max_inline;
	memset(init, 0, sizeof(*init));
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->qp_type = ibqp->qp_type;
	init->srq = ibqp->srq;
	init->cap = a->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
out:
	mutex_unlock(&qp->mutex);
	return err;
}

static void *chpp_wqe(struct chpp_wq *wq, u32 i)
{
	return wq->buf.va + ((size_t)(i & (wq->n - 1)) << wq->shift);
}

static int chpp_wqe_opcode(enum ib_wr_opcode op, u8 type)
{
	/* Which opcodes each service type may use: docs/work-requests.md. */
#define ANY_QPT (BIT(CHPP_QPT_RC) | BIT(CHPP_QPT_UC) | BIT(CHPP_QPT_UD))
	static const struct {
		enum ib_wr_opcode op;
		int wqe;
		u8 types;	/* BIT(CHPP_QPT_*) */
	} map[] = {
		{ IB_WR_SEND, CHPP_WQE_SEND, ANY_QPT },
		{ IB_WR_SEND_WITH_IMM, CHPP_WQE_SEND_IMM, ANY_QPT },
		{ IB_WR_RDMA_WRITE, CHPP_WQE_PUT,
		  BIT(CHPP_QPT_RC) | BIT(CHPP_QPT_UC) },
		{ IB_WR_RDMA_WRITE_WITH_IMM, CHPP_WQE_PUT_IMM,
		  BIT(CHPP_QPT_RC) | BIT(CHPP_QPT_UC) },
		{ IB_WR_RDMA_READ, CHPP_WQE_GET, BIT(CHPP_QPT_RC) },
		{ IB_WR_ATOMIC_CMP_AND_SWP, CHPP_WQE_ATOMIC_CS, BIT(CHPP_QPT_RC) },
		{ IB_WR_ATOMIC_FETCH_AND_ADD, CHPP_WQE_ATOMIC_FA,
		  BIT(CHPP_QPT_RC) },
		/* ABI 1.6: fast registration (docs/memory-regions.md) */
		{ IB_WR_SEND_WITH_INV, CHPP_WQE_SEND_INV, BIT(CHPP_QPT_RC) },
		{ IB_WR_LOCAL_INV, CHPP_WQE_LOCAL_INV,
		  BIT(CHPP_QPT_RC) | BIT(CHPP_QPT_UC) },
		{ IB_WR_REG_MR, CHPP_WQE_REG_MR,
		  BIT(CHPP_QPT_RC) | BIT(CHPP_QPT_UC) },
	};
	int i;

	if (type == CHPP_QPT_SMI || type == CHPP_QPT_GSI)
		return op == IB_WR_SEND ? CHPP_WQE_SEND : -1;	/* MADs */
	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (map[i].op == op)
			return (map[i].types & BIT(type)) ? map[i].wqe : -1;
	return -1;
#undef ANY_QPT
}

static int chpp_build_send(struct chpp_qp *qp, const struct ib_send_wr *wr,
			   void *wqe, u32 cookie)
{
	struct chpp_wqe_ctrl *ctrl = wqe;
	void *p = wqe + SEG, *end = wqe + (1u << qp->sq.shift);
	int op = chpp_wqe_opcode(wr->opcode, qp->type);
	int i;

	if (op < 0)
		return -EINVAL;
	memset(wqe, 0, 1u << qp->sq.shift);
	ctrl->opcode = op;
	ctrl->wr_id = cpu_to_le64(cookie);
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		ctrl->flags |= CHPP_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		ctrl->flags |= CHPP_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		ctrl->flags |= CHPP_WQE_FENCE;
	if (op == CHPP_WQE_SEND_IMM || op == CHPP_WQE_PUT_IMM)
		/* The immediate's bytes as posted (network order). */
		ctrl->imm = (__force __le32)wr->ex.imm_data;
	if (op == CHPP_WQE_SEND_INV || op == CHPP_WQE_LOCAL_INV)
		ctrl->imm = cpu_to_le32(wr->ex.invalidate_rkey);
	if (op == CHPP_WQE_REG_MR) {
		const struct ib_reg_wr *rw = reg_wr(wr);
		struct chpp_mr *mr = to_cmr(rw->mr);
		struct chpp_wqe_reg *r = p;

		r->iova = cpu_to_le64(mr->ibmr.iova);
		r->length = cpu_to_le64(mr->ibmr.length);
		r->page_list = cpu_to_le64(mr->pl_dma);
		r->key = cpu_to_le32(rw->key);
		r->npages = cpu_to_le16(mr->pl_n);
		r->log_page_size = ilog2(mr->ibmr.page_size);
		r->access = chpp_mr_access(rw->access);
		return 0;
	}

	if (chpp_qpt_is_ud(qp->type)) {
		const struct ib_ud_wr *ud = ud_wr(wr);
		struct chpp_wqe_ud *u = p;

		u->dest_node = cpu_to_le32(to_cah(ud->ah)->dest_node);
		u->dest_vf = to_cah(ud->ah)->dest_vf;
		u->flags = to_cah(ud->ah)->ud_flags;
		u->dest_qpn = cpu_to_le32(ud->remote_qpn & CHPP_QPN_MASK);
		u->dest_magic = ud->remote_qpn >> CHPP_QPN_BITS;
		u->qkey = cpu_to_le32((ud->remote_qkey & 0x80000000) ?
				      qp->qkey : ud->remote_qkey);
		p += SEG;
	}
	if (op == CHPP_WQE_PUT || op == CHPP_WQE_PUT_IMM || op == CHPP_WQE_GET) {
		struct chpp_wqe_raddr *r = p;

		r->raddr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		r->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		p += SEG;
	} else if (op == CHPP_WQE_ATOMIC_CS || op == CHPP_WQE_ATOMIC_FA) {
		const struct ib_atomic_wr *aw = atomic_wr(wr);
		struct chpp_wqe_raddr *r = p;
		struct chpp_wqe_atomic *at = p + SEG;

		r->raddr = cpu_to_le64(aw->remote_addr);
		r->rkey = cpu_to_le32(aw->rkey);
		if (op == CHPP_WQE_ATOMIC_CS) {
			at->swap_add = cpu_to_le64(aw->swap);
			at->compare = cpu_to_le64(aw->compare_add);
		} else {
			at->swap_add = cpu_to_le64(aw->compare_add);
		}
		p += 2 * SEG;
	}
	if ((wr->send_flags & IB_SEND_INLINE) && op != CHPP_WQE_GET &&
	    op != CHPP_WQE_ATOMIC_CS && op != CHPP_WQE_ATOMIC_FA) {
		struct chpp_wqe_inline *in = p;
		u8 *data = p + SEG;
		u32 len = 0;

		for (i = 0; i < wr->num_sge; i++) {
			if (data + len + wr->sg_list[i].length > (u8 *)end)
				return -EINVAL;
			memcpy(data + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		in->length = cpu_to_le32(len);
		ctrl->flags |= CHPP_WQE_INLINE;
		return 0;
	}
	if (wr->num_sge > qp->sq.max_sge || p + SEG * wr->num_sge > end)
		return -EINVAL;
	ctrl->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		struct chpp_wqe_sge *s = p + SEG * i;

		s->length = cpu_to_le32(wr->sg_list[i].length);
		s->lkey = cpu_to_le32(wr->sg_list[i].lkey);
		s->addr = cpu_to_le64(wr->sg_list[i].addr);
	}
	return 0;
}

static void chpp_sq_doorbell(struct chpp_dev *dev, struct chpp_qp *qp)
{
	wmb();	/* WQEs before the producer index */
	writel((qp->idx << CHPP_UAR_DB_QPN_SHIFT) |
	       (qp->sq.head & CHPP_UAR_DB_PI_MASK), dev->uar + CHPP_UAR_SQ_DB);
}

int chpp_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);
	unsigned long flags;
	int err = 0, n = 0;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT ||
	    qp->state == IB_QPS_RTR) {
		err = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		u32 slot = qp->sq.head;

		if (qp->sq.head - READ_ONCE(qp->sq.tail) >= qp->sq.n) {
			err = -ENOMEM;
			break;
		}
		err = chpp_build_send(qp, wr, chpp_wqe(&qp->sq, slot), slot);
		if (err)
			break;
		qp->sq.wrid[slot & (qp->sq.n - 1)] = wr->wr_id;
		qp->sq.head++;
		n++;
	}
	if (err)
		*bad = wr;
	if (n)
		chpp_sq_doorbell(dev, qp);
out:
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return err;
}

/*
 * The doorbell FIFO lost this QP's entry: RING_SQ in a work item. The xa
 * lock keeps destroy (xa_erase, then cancel_work_sync) from running
 * between the lookup and the scheduling.
 */
void chpp_qp_sq_redoorbell(struct chpp_dev *dev, u32 qpn)
{
	struct chpp_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&dev->qp_xa, flags);
	qp = xa_load(&dev->qp_xa, qpn);
	if (qp)
		schedule_work(&qp->redb_work);
	xa_unlock_irqrestore(&dev->qp_xa, flags);
}

int chpp_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad)
{
	struct chpp_dev *dev = to_cdev(ibqp->device);
	struct chpp_qp *qp = to_cqp(ibqp);
	unsigned long flags;
	int err = 0, n = 0, i;

	spin_lock_irqsave(&qp->rq_lock, flags);
	/* Receives of a QP on an SRQ are posted to the SRQ. */
	if (qp->state == IB_QPS_RESET || ibqp->srq) {
		err = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		u32 slot = qp->rq.head;
		struct chpp_rwqe_hdr *h;
		struct chpp_wqe_sge *s;

		if (qp->rq.head - READ_ONCE(qp->rq.tail) >= qp->rq.n) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > qp->rq.max_sge) {
			err = -EINVAL;
			break;
		}
		h = chpp_wqe(&qp->rq, slot);
		h->wr_id = cpu_to_le64(slot);
		h->num_sge = cpu_to_le32(wr->num_sge);
		h->reserved = 0;
		s = (void *)(h + 1);
		for (i = 0; i < wr->num_sge; i++) {
			s[i].length = cpu_to_le32(wr->sg_list[i].length);
			s[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
			s[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		}
		qp->rq.wrid[slot & (qp->rq.n - 1)] = wr->wr_id;
		qp->rq.head++;
		n++;
	}
	if (err)
		*bad = wr;
	if (n) {
		wmb();	/* WQEs before the producer index */
		writel((qp->idx << CHPP_UAR_DB_QPN_SHIFT) |
		       (qp->rq.head & CHPP_UAR_DB_PI_MASK),
		       dev->uar + CHPP_UAR_RQ_DB);
	}
out:
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return err;
}

void chpp_qp_event(struct chpp_dev *dev, u32 qpn, u8 type)
{
	struct chpp_qp *qp = xa_load(&dev->qp_xa, qpn);
	struct ib_event ev = {};

	if (!qp) {
		dev_warn(&dev->pdev->dev, "event %s for unknown QP %u\n",
			 chpp_event_name(type) ?: "?", qpn);
		return;
	}
	switch (type) {
	case CHPP_EVENT_COMM_EST:
		ev.event = IB_EVENT_COMM_EST;
		break;
	case CHPP_EVENT_SQ_DRAINED:
		ev.event = IB_EVENT_SQ_DRAINED;
		break;
	case CHPP_EVENT_PATH_MIG:
		ev.event = IB_EVENT_PATH_MIG;
		break;
	case CHPP_EVENT_LAST_WQE_REACHED:
		ev.event = IB_EVENT_QP_LAST_WQE_REACHED;
		break;
	case CHPP_EVENT_WQ_INVAL_REQ:
		ev.event = IB_EVENT_QP_REQ_ERR;
		qp->state = IB_QPS_ERR;
		break;
	case CHPP_EVENT_WQ_ACCESS_ERROR:
		ev.event = IB_EVENT_QP_ACCESS_ERR;
		qp->state = IB_QPS_ERR;
		break;
	default:
		ev.event = IB_EVENT_QP_FATAL;
		qp->state = IB_QPS_ERR;
		break;
	}
	ev.device = &dev->ibdev;
	ev.element.qp = &qp->ibqp;
	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}
