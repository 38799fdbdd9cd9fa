// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * libchpp-rdmav34: registration with libibverbs, device matching and the
 * control path. Every control operation is one uverbs command to
 * chpp_hca.ko through libibverbs' ibv_cmd_* helpers, with the driver's
 * udata of guest-driver/chpp_uverbs_abi.h; the rings it hands to the kernel
 * are process memory. docs/verbs-provider.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "chpp_provider.h"	/* first: libibverbs before the kernel's uAPI */
#include <rdma/ib_user_ioctl_verbs.h>

/* Driver udata appended to the core uverbs requests and responses. */
struct chpp_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct chpp_alloc_ucontext_resp drv;
};

struct chpp_create_cq_req {
	struct ibv_create_cq ibv_cmd;
	struct chpp_create_cq_cmd drv;
};

struct chpp_create_cq_rsp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct chpp_create_cq_resp drv;
};

struct chpp_create_qp_req {
	struct ibv_create_qp ibv_cmd;
	struct chpp_create_qp_cmd drv;
};

struct chpp_create_qp_rsp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct chpp_create_qp_resp drv;
};

struct chpp_create_srq_req {
	struct ibv_create_srq ibv_cmd;
	struct chpp_create_srq_cmd drv;
};

struct chpp_create_srq_rsp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct chpp_create_srq_resp drv;
};

static const struct verbs_context_ops chpp_ctx_ops;

static int chpp_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;
	/* The kernel's fw_ver: major << 32 | minor << 16 | subminor. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32),
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int chpp_query_port(struct ibv_context *context, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *chpp_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	if (ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			     sizeof(resp))) {
		free(pd);
		return NULL;
	}
	return pd;
}

static int chpp_dealloc_pd(struct ibv_pd *pd)
{
	int err = ibv_cmd_dealloc_pd(pd);

	if (!err)
		free(pd);
	return err;
}

static struct ibv_mr *chpp_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				  uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	if (ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			   sizeof(cmd), &resp, sizeof(resp))) {
		free(vmr);
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int chpp_dereg_mr(struct verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (!err)
		free(vmr);
	return err;
}

struct ibv_cq *chpp_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct chpp_context *ctx = to_cctx(context);
	struct chpp_create_cq_req cmd = {};
	struct chpp_create_cq_rsp resp = {};
	struct chpp_cq *cq;
	uint32_t n;
	int err;

	if (cqe < 1 || (uint32_t)cqe > ctx->info.max_cq_entries) {
		errno = EINVAL;
		return NULL;
	}
	n = 1u << chpp_log2_up(cqe < CHPP_CQ_MIN_ENTRIES ?
			       CHPP_CQ_MIN_ENTRIES : cqe);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->ring = chpp_ring_alloc((size_t)n * CHPP_CQE_SIZE);
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->n = n;
	cmd.drv.buf_addr = (uintptr_t)cq->ring;
	cmd.drv.entries = n;
	err = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(cq->ring);
		free(cq);
		errno = err;
		return NULL;
	}
	cq->cqn = resp.drv.cqn;
	return &cq->ibv_cq;
}

static int chpp_destroy_cq(struct ibv_cq *ibcq)
{
	struct chpp_cq *cq = to_ccq(ibcq);
	int err = ibv_cmd_destroy_cq(ibcq);

	if (err)
		return err;
	free(cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static int chpp_wq_init(struct chpp_wq *wq, uint32_t wrs, uint32_t bytes)
{
	memset(wq, 0, sizeof(*wq));
	wq->uwq.n = 1u << chpp_log2_up(wrs ? wrs : 1);
	wq->uwq.shift = chpp_wqe_shift(bytes);
	if (wq->uwq.shift > CHPP_MAX_WQE_SHIFT)
		return -EINVAL;
	wq->uwq.ring = chpp_ring_alloc((size_t)wq->uwq.n << wq->uwq.shift);
	wq->wrid = calloc(wq->uwq.n, sizeof(*wq->wrid));
	if (!wq->uwq.ring || !wq->wrid)
		return -ENOMEM;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void chpp_wq_free(struct chpp_wq *wq)
{
	free(wq->uwq.ring);
	free(wq->wrid);
	wq->uwq.ring = NULL;
	wq->wrid = NULL;
}

struct ibv_qp *chpp_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	struct chpp_context *ctx = to_cctx(pd->context);
	struct chpp_create_qp_req cmd = {};
	struct chpp_create_qp_rsp resp = {};
	struct ibv_qp_cap *cap = &attr->cap;
	struct chpp_qp *qp;
	int err;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
		qp->type = CHPP_QPT_RC;
		break;
	case IBV_QPT_UC:
		qp->type = CHPP_QPT_UC;
		break;
	case IBV_QPT_UD:
		qp->type = CHPP_QPT_UD;
		break;
	default:
		err = EOPNOTSUPP;
		goto fail;
	}
	/* With an SRQ the receive capabilities are ignored: no RQ. */
	qp->srq = attr->srq != NULL;
	if (qp->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (cap->max_send_wr > ctx->info.max_qp_wqes ||
	    cap->max_recv_wr > ctx->info.max_qp_wqes ||
	    cap->max_send_sge > ctx->info.max_sge ||
	    cap->max_recv_sge > ctx->info.max_sge ||
	    cap->max_inline_data > ctx->info.max_inline) {
		err = EINVAL;
		goto fail;
	}
	err = chpp_wq_init(&qp->sq, cap->max_send_wr,
			   chpp_sq_wqe_bytes(qp->type, cap->max_send_sge,
					     cap->max_inline_data));
	if (!err && !qp->srq)
		err = chpp_wq_init(&qp->rq, cap->max_recv_wr,
				   chpp_rq_wqe_bytes(cap->max_recv_sge));
	else if (!err)
		pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (err) {
		err = -err;
		goto fail;
	}
	qp->sig_all = attr->sq_sig_all;
	cmd.drv.sq_buf_addr = (uintptr_t)qp->sq.uwq.ring;
	cmd.drv.rq_buf_addr = (uintptr_t)qp->rq.uwq.ring;
	cmd.drv.log_sq_size = chpp_log2_up(qp->sq.uwq.n);
	cmd.drv.log_sq_stride = qp->sq.uwq.shift;
	if (!qp->srq) {
		cmd.drv.log_rq_size = chpp_log2_up(qp->rq.uwq.n);
		cmd.drv.log_rq_stride = qp->rq.uwq.shift;
	}
	err = ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err)
		goto fail;
	qp->qpn = resp.drv.qpn;
	qp->magic = resp.drv.magic;
	pthread_mutex_lock(&ctx->qp_table_lock);
	ctx->qp_table[qp->qpn & ((1u << ctx->info.qpn_bits) - 1)] = qp;
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return &qp->ibv_qp;

fail:
	chpp_wq_free(&qp->sq);
	chpp_wq_free(&qp->rq);
	free(qp);
	errno = err;
	return NULL;
}

/*
 * Drop the CQEs of device QP @qpn from @cq: a process owns its CQ rings, so
 * it cleans them itself when a QP is reset or destroyed. The CQEs kept move
 * towards the producer end; the freed slots are consumed by moving ci.
 */
static void chpp_cq_clean(struct chpp_context *ctx, struct ibv_cq *ibcq,
			  uint32_t qpn)
{
	struct chpp_cq *cq = to_ccq(ibcq);
	uint32_t pi, i, dst;

	if (!ibcq)
		return;
	pthread_spin_lock(&cq->lock);
	for (pi = cq->ci; pi - cq->ci < cq->n &&
	     chpp_cqe_at(cq->ring, cq->n, pi); pi++)
		;
	dst = pi;
	for (i = pi; i != cq->ci; ) {
		struct chpp_cqe *src = &cq->ring[--i & (cq->n - 1)];
		struct chpp_cqe *d;
		uint8_t owner;

		if (chpp_cqe_qpn(src) == qpn)
			continue;
		dst--;
		if (dst == i)
			continue;
		/* Keep the slot's own owner bit: it is valid in its pass. */
		d = &cq->ring[dst & (cq->n - 1)];
		owner = d->owner;
		memcpy(d, src, offsetof(struct chpp_cqe, owner));
		d->owner = owner;
	}
	if (dst != cq->ci) {
		cq->ci = dst;
		chpp_ring_cq(ctx->uar, cq->cqn, CHPP_CQ_DB_SET_CI, cq->ci);
	}
	pthread_spin_unlock(&cq->lock);
}

static void chpp_qp_clean_cqs(struct chpp_qp *qp)
{
	struct chpp_context *ctx = to_cctx(qp->ibv_qp.context);

	chpp_cq_clean(ctx, qp->ibv_qp.send_cq, qp->qpn);
	if (qp->ibv_qp.recv_cq != qp->ibv_qp.send_cq)
		chpp_cq_clean(ctx, qp->ibv_qp.recv_cq, qp->qpn);
}

static int chpp_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int chpp_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			  int attr_mask)
{
	struct chpp_qp *qp = to_cqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (attr_mask & IBV_QP_DEST_QPN)
		qp->dest_qp_num = attr->dest_qp_num;
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;	/* posting checks RESET */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		/* The device starts the rings again at index 0. */
		chpp_qp_clean_cqs(qp);
		pthread_spin_lock(&qp->sq.lock);
		qp->sq.uwq.head = 0;
		qp->sq.tail = 0;
		pthread_spin_unlock(&qp->sq.lock);
		pthread_spin_lock(&qp->rq.lock);
		qp->rq.uwq.head = 0;
		qp->rq.tail = 0;
		pthread_spin_unlock(&qp->rq.lock);
	}
	return 0;
}

static int chpp_destroy_qp(struct ibv_qp *ibqp)
{
	struct chpp_context *ctx = to_cctx(ibqp->context);
	struct chpp_qp *qp = to_cqp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	chpp_qp_clean_cqs(qp);
	pthread_mutex_lock(&ctx->qp_table_lock);
	ctx->qp_table[qp->qpn & ((1u << ctx->info.qpn_bits) - 1)] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_lock);
	chpp_qp_ex_free(qp);
	chpp_wq_free(&qp->sq);
	chpp_wq_free(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}

/*
 * Shared receive queues (docs/shared-receive-queues.md): the ring and its
 * consumer record in process memory, one block the kernel pins and maps.
 */
static struct ibv_srq *chpp_create_srq(struct ibv_pd *pd,
				       struct ibv_srq_init_attr *attr)
{
	struct chpp_create_srq_req cmd = {};
	struct chpp_create_srq_rsp resp = {};
	struct chpp_srq *srq;
	uint32_t wrs = attr->attr.max_wr ? attr->attr.max_wr : 1;
	int err;

	if (attr->attr.max_wr > CHPP_MAX_SRQ_WQES ||
	    attr->attr.max_sge > CHPP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	srq->uwq.n = 1u << chpp_log2_up(wrs);
	srq->uwq.shift = chpp_wqe_shift(chpp_rq_wqe_bytes(attr->attr.max_sge));
	srq->max_sge = ((1u << srq->uwq.shift) - CHPP_SEG) / CHPP_SEG;
	if (srq->max_sge > CHPP_MAX_SGE)
		srq->max_sge = CHPP_MAX_SGE;
	srq->uwq.ring = chpp_ring_alloc(((size_t)srq->uwq.n <<
					 srq->uwq.shift) +
					sizeof(struct chpp_srq_record));
	if (!srq->uwq.ring) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	cmd.drv.buf_addr = (uintptr_t)srq->uwq.ring;
	cmd.drv.log_size = chpp_log2_up(srq->uwq.n);
	cmd.drv.log_stride = srq->uwq.shift;
	err = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		pthread_spin_destroy(&srq->lock);
		free(srq->uwq.ring);
		free(srq);
		errno = err;
		return NULL;
	}
	srq->srqn = resp.drv.srqn;
	attr->attr.max_wr = srq->uwq.n;
	attr->attr.max_sge = srq->max_sge;
	return &srq->ibv_srq;
}

static int chpp_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int chpp_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int chpp_destroy_srq(struct ibv_srq *ibsrq)
{
	struct chpp_srq *srq = to_csrq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	pthread_spin_destroy(&srq->lock);
	free(srq->uwq.ring);
	free(srq);
	return 0;
}

/* Address handles live in user space only: a UD WQE carries the DLID. */
static struct ibv_ah *chpp_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct chpp_ah *ah;

	if (!attr->dlid || CHPP_LID_FN(attr->dlid) > CHPP_MAX_VFS) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ah->dlid = attr->dlid;
	return &ah->ibv_ah;
}

static int chpp_destroy_ah(struct ibv_ah *ah)
{
	free(to_cah(ah));
	return 0;
}

static struct verbs_context *chpp_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct chpp_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct chpp_context *ctx;
	void *uar;

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    (struct verbs_context *)
					    offsetof(struct chpp_context, vctx),
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp)))
		goto fail;
	ctx->info = resp.drv;
	if (ctx->info.abi_version != CHPP_UVERBS_ABI_VERSION ||
	    !ctx->info.qpn_bits || ctx->info.qpn_bits > 16) {
		errno = EPROTO;
		goto fail;
	}
	/* Readable too: CHPP_UAR_DB_STATUS, for doorbell flow control. */
	uar = mmap(NULL, CHPP_UAR_PAGE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_SHARED, cmd_fd, ctx->info.uar_mmap_offset);
	if (uar == MAP_FAILED)
		goto fail;
	ctx->uar = uar;
	ctx->qp_table = calloc(1u << ctx->info.qpn_bits,
			       sizeof(*ctx->qp_table));
	if (!ctx->qp_table)
		goto unmap;
	pthread_mutex_init(&ctx->qp_table_lock, NULL);
	pthread_mutex_init(&ctx->db_lock, NULL);
	/* Off only to test the driver's recovery of lost doorbells. */
	ctx->db_flow = !getenv("CHPP_NO_DB_FLOW");
	ctx->db_poll = !getenv("CHPP_NO_DB_POLL");
	verbs_set_ops(&ctx->vctx, &chpp_ctx_ops);
	return &ctx->vctx;

unmap:
	munmap(ctx->uar, CHPP_UAR_PAGE_SIZE);
fail:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

static void chpp_free_context(struct ibv_context *ibctx)
{
	struct chpp_context *ctx = to_cctx(ibctx);

	munmap(ctx->uar, CHPP_UAR_PAGE_SIZE);
	free(ctx->qp_table);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	pthread_mutex_destroy(&ctx->db_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops chpp_ctx_ops = {
	.alloc_pd = chpp_alloc_pd,
	.create_ah = chpp_create_ah,
	.create_cq = chpp_create_cq,
	.create_cq_ex = chpp_create_cq_ex,
	.create_qp = chpp_create_qp,
	.create_srq = chpp_create_srq,
	.create_qp_ex = chpp_create_qp_ex,
	.dealloc_pd = chpp_dealloc_pd,
	.dereg_mr = chpp_dereg_mr,
	.destroy_ah = chpp_destroy_ah,
	.destroy_cq = chpp_destroy_cq,
	.destroy_qp = chpp_destroy_qp,
	.destroy_srq = chpp_destroy_srq,
	.free_context = chpp_free_context,
	.modify_qp = chpp_modify_qp,
	.modify_srq = chpp_modify_srq,
	.poll_cq = chpp_poll_cq,
	.post_recv = chpp_post_recv,
	.post_send = chpp_post_send,
	.post_srq_recv = chpp_post_srq_recv,
	.query_device_ex = chpp_query_device_ex,
	.query_port = chpp_query_port,
	.query_qp = chpp_query_qp,
	.query_srq = chpp_query_srq,
	.reg_mr = chpp_reg_mr,
	.req_notify_cq = chpp_req_notify_cq,
};

static struct verbs_device *chpp_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct chpp_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->vdev : NULL;
}

static void chpp_uninit_device(struct verbs_device *vdev)
{
	free((struct chpp_device *)vdev);	/* vdev is its first member */
}

/* The PF and VF device ids of chpp-hca-abi.h. */
static const struct verbs_match_ent chpp_match_table[] = {
	VERBS_PCI_MATCH(CHPP_PCI_VENDOR_ID, CHPP_PCI_DEVICE_ID_PF, NULL),
	VERBS_PCI_MATCH(CHPP_PCI_VENDOR_ID, CHPP_PCI_DEVICE_ID_VF, NULL),
	{}
};

static const struct verbs_device_ops chpp_dev_ops = {
	.name = "chpp",
	.match_min_abi_version = CHPP_UVERBS_ABI_VERSION,
	.match_max_abi_version = CHPP_UVERBS_ABI_VERSION,
	.match_table = chpp_match_table,
	.alloc_device = chpp_alloc_device,
	.uninit_device = chpp_uninit_device,
	.alloc_context = chpp_alloc_context,
};

bool chpp_is_our_context(struct ibv_context *ctx)
{
	return verbs_get_device(ctx->device)->ops == &chpp_dev_ops;
}

/* libibverbs dlopen()s us from /etc/libibverbs.d/chpp.driver. */
PROVIDER_DRIVER(chpp, chpp_dev_ops);
