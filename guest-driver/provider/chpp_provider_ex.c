// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * libchpp-rdmav34: the extended verbs. ibv_create_cq_ex gives a CQ with the
 * poll API (ibv_start_poll, ibv_next_poll, ibv_end_poll and the
 * ibv_wc_read_* accessors of the wc_flags a CQE can fill); ibv_create_qp_ex
 * gives a QP with the ibv_wr_* API for the operations the device has. They
 * are the CQs and QPs of chpp_provider.c, with the same uverbs commands,
 * rings and doorbells: only how work is posted and completions are read
 * differs, and a CQ or QP may be used both ways. ibv_query_device_ex is
 * chpp_provider.c's. What is supported and what is refused, with which
 * errno: docs/verbs-provider.md#extended-verbs.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "chpp_provider.h"

/*
 * The wc_flags a CQE fills: IBV_WC_STANDARD_FLAGS (SL and DLID path bits
 * are 0, as ibv_poll_cq reports them: one SL, LMC 0). No timestamps, VLANs,
 * flow tags or tag matching.
 */
#define CHPP_WC_EX_FLAGS	((uint64_t)IBV_WC_STANDARD_FLAGS)

/* The ibv_wr_* operations the device has on a QP of each type. */
#define CHPP_OPS_UD	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define CHPP_OPS_UC	(CHPP_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define CHPP_OPS_RC	(CHPP_OPS_UC | IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* The send flags a work request of the ibv_wr_* API may carry. */
#define CHPP_WR_FLAGS	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
			 IBV_SEND_FENCE | IBV_SEND_INLINE)

static struct chpp_cq *to_ccq_ex(struct ibv_cq_ex *cqx)
{
	return to_ccq(ibv_cq_ex_to_cq(cqx));
}

/*
 * Poll API. start_poll takes the CQ's lock and end_poll drops it; each
 * completion is read (and its CQE consumed) by start_poll or next_poll into
 * cq->cur with chpp_cqe_to_wc(), the conversion of ibv_poll_cq, and the
 * accessors read it from there. end_poll tells the device the new consumer
 * index, as ibv_poll_cq does after a batch.
 */

/* The next completion into cq->cur: 0, or -ENOENT (lock held). */
static int chpp_cq_ex_read(struct chpp_cq *cq)
{
	struct chpp_context *ctx = to_cctx(cq->ibv_cq.context);
	const struct chpp_cqe *e;
	struct chpp_ucqe c;

	while ((e = chpp_cqe_at(cq->ring, cq->n, cq->ci))) {
		chpp_cqe_read(e, &c);
		cq->ci++;
		/* A CQE of a QP this context destroyed is skipped. */
		if (chpp_cqe_to_wc(ctx, &c, &cq->cur)) {
			cq->ibv_cq_ex.wr_id = cq->cur.wr_id;
			cq->ibv_cq_ex.status = cq->cur.status;
			return 0;
		}
	}
	return -ENOENT;
}

/* End of a batch: the consumer index to the device, the lock dropped. */
static void chpp_cq_ex_done(struct chpp_cq *cq)
{
	if (cq->ci != cq->poll_ci)
		chpp_ring_cq(to_cctx(cq->ibv_cq.context)->uar, cq->cqn,
			     CHPP_CQ_DB_SET_CI, cq->ci);
	pthread_spin_unlock(&cq->lock);
}

static int chpp_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct chpp_cq *cq = to_ccq_ex(cqx);
	int err = -EINVAL;

	if (!attr->comp_mask) {
		pthread_spin_lock(&cq->lock);
		cq->poll_ci = cq->ci;
		err = chpp_cq_ex_read(cq);
		if (err) {
			chpp_db_poll(to_cctx(cq->ibv_cq.context));
			err = chpp_cq_ex_read(cq);
		}
		if (err)	/* no end_poll follows */
			chpp_cq_ex_done(cq);
	}
	return -err;	/* libibverbs: a positive errno */
}

static int chpp_next_poll(struct ibv_cq_ex *cqx)
{
	return -chpp_cq_ex_read(to_ccq_ex(cqx));
}

static void chpp_end_poll(struct ibv_cq_ex *cqx)
{
	chpp_cq_ex_done(to_ccq_ex(cqx));
}

static enum ibv_wc_opcode chpp_wc_read_opcode(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.opcode;
}

static uint32_t chpp_wc_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.vendor_err;
}

static unsigned int chpp_wc_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.wc_flags;
}

static uint32_t chpp_wc_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.byte_len;
}

static __be32 chpp_wc_read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.imm_data;
}

static uint32_t chpp_wc_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.qp_num;
}

static uint32_t chpp_wc_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.src_qp;
}

static uint32_t chpp_wc_read_slid(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.slid;
}

static uint8_t chpp_wc_read_sl(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.sl;
}

static uint8_t chpp_wc_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return to_ccq_ex(cqx)->cur.dlid_path_bits;
}

/*
 * A CQ of chpp_create_cq() with the poll API. Accessors are set for the
 * wc_flags asked for only (opcode, vendor_err and wc_flags always), as in
 * rdma-core's providers; wc_flags the device cannot fill, the
 * IGNORE_OVERRUN flag and parent domains fail with EOPNOTSUPP.
 * SINGLE_THREADED is accepted (the CQ is locked all the same).
 */
struct ibv_cq_ex *chpp_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *cqx;
	struct ibv_cq *ibcq;
	uint64_t f = attr->wc_flags;

	if ((attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    (f & ~CHPP_WC_EX_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * libibverbs' wrapper, which verbs_set_ops() puts in front of us, then
	 * calls verbs_init_cq() (cq_context, the channel's reference), as
	 * ibv_create_cq() does after chpp_create_cq().
	 */
	ibcq = chpp_create_cq(context, (int)attr->cqe, attr->channel,
			      (int)attr->comp_vector);
	if (!ibcq)
		return NULL;
	cqx = &to_ccq(ibcq)->ibv_cq_ex;
	cqx->start_poll = chpp_start_poll;
	cqx->next_poll = chpp_next_poll;
	cqx->end_poll = chpp_end_poll;
	cqx->read_opcode = chpp_wc_read_opcode;
	cqx->read_vendor_err = chpp_wc_read_vendor_err;
	cqx->read_wc_flags = chpp_wc_read_wc_flags;
	if (f & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = chpp_wc_read_byte_len;
	if (f & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = chpp_wc_read_imm_data;
	if (f & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = chpp_wc_read_qp_num;
	if (f & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = chpp_wc_read_src_qp;
	if (f & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = chpp_wc_read_slid;
	if (f & IBV_WC_EX_WITH_SL)
		cqx->read_sl = chpp_wc_read_sl;
	if (f & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = chpp_wc_read_dlid_path_bits;
	return cqx;
}

/*
 * The ibv_wr_* API. ibv_wr_start takes the SQ's lock and ibv_wr_complete
 * or ibv_wr_abort drops it. A builder opens a work request in
 * qp->wr (its opcode, remote address, immediate, wr_id and flags); the
 * setters add its data and, on UD, its destination; the next builder or
 * ibv_wr_complete writes it into the ring with chpp_sq_put(), the WQE
 * writer of ibv_post_send. Inline data is copied when its setter is called.
 * The setters return nothing: the first error is kept and
 * ibv_wr_complete returns it, with every work request since ibv_wr_start
 * discarded (the SQ head goes back; nothing was announced to the device).
 */
struct chpp_qp_wr {
	uint64_t ops;			/* IBV_QP_EX_WITH_* of the QP's type */
	uint32_t start;			/* SQ head at ibv_wr_start */
	int err;			/* the first error since then, or 0 */
	bool open;			/* a WR is built and not yet written */
	bool data;			/* ... its data setter was called */
	bool ud;			/* ... its UD address is set */
	uint64_t wr_id;
	struct chpp_usend w;
	struct chpp_usge sg[CHPP_MAX_SGE];
	uint32_t inline_cap;		/* inline bytes a WQE of the QP holds */
	uint8_t inl[CHPP_MAX_INLINE];	/* inline data, copied by the setter */
};

static struct chpp_qp *to_cqp_ex(struct ibv_qp_ex *qpx)
{
	return to_cqp(&qpx->qp_base);
}

static void wr_fail(struct chpp_qp_wr *s, int err)
{
	if (!s->err)
		s->err = err;
}

/* Write the open WR into the SQ (lock held). */
static void wr_close(struct chpp_qp *qp)
{
	struct chpp_qp_wr *s = qp->wr;
	int err;

	if (!s->open)
		return;
	s->open = false;
	if (s->err)
		return;
	if (qp->type == CHPP_QPT_UD && !s->ud) {
		wr_fail(s, EINVAL);	/* ibv_wr_set_ud_addr is mandatory */
		return;
	}
	err = chpp_sq_put(to_cctx(qp->ibv_qp.context), qp, &s->w, s->wr_id);
	if (err)
		wr_fail(s, -err);	/* ENOMEM: the SQ is full */
}

/*
 * A builder: close the previous WR and open one of WQE opcode @opcode, the
 * operation @op of enum ibv_qp_create_send_ops_flags (0: one the device
 * does not have). An operation the QP's type does not allow fails with
 * EOPNOTSUPP; one it allows works whether or not send_ops_flags named it.
 */
static struct chpp_qp_wr *wr_open(struct ibv_qp_ex *qpx, uint8_t opcode,
				  uint64_t op)
{
	struct chpp_qp *qp = to_cqp_ex(qpx);
	struct chpp_qp_wr *s = qp->wr;

	wr_close(qp);
	s->open = true;
	s->data = false;
	s->ud = false;
	memset(&s->w, 0, sizeof(s->w));
	s->w.opcode = opcode;
	s->w.sg = s->sg;
	s->wr_id = qpx->wr_id;
	if (!(op & s->ops) || (qpx->wr_flags & ~CHPP_WR_FLAGS))
		wr_fail(s, EOPNOTSUPP);	/* e.g. IBV_SEND_IP_CSUM */
	s->w.flags = chpp_wqe_flags(qp, qpx->wr_flags);
	return s;
}

/* The immediate's bytes as the caller gave them (network order). */
static uint32_t wr_imm(__be32 imm)
{
	return le32toh((CHPP_FORCE __le32)imm);
}

static void chpp_wr_send(struct ibv_qp_ex *qpx)
{
	wr_open(qpx, CHPP_WQE_SEND, IBV_QP_EX_WITH_SEND);
}

static void chpp_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	wr_open(qpx, CHPP_WQE_SEND_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM)->w.imm =
		wr_imm(imm);
}

static void wr_remote(struct chpp_qp_wr *s, uint32_t rkey, uint64_t addr)
{
	s->w.rkey = rkey;
	s->w.raddr = addr;
}

static void chpp_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t addr)
{
	wr_remote(wr_open(qpx, CHPP_WQE_PUT, IBV_QP_EX_WITH_RDMA_WRITE), rkey,
		  addr);
}

static void chpp_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t addr, __be32 imm)
{
	struct chpp_qp_wr *s = wr_open(qpx, CHPP_WQE_PUT_IMM,
				       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	wr_remote(s, rkey, addr);
	s->w.imm = wr_imm(imm);
}

static void chpp_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr)
{
	wr_remote(wr_open(qpx, CHPP_WQE_GET, IBV_QP_EX_WITH_RDMA_READ), rkey,
		  addr);
}

static void chpp_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t addr, uint64_t compare,
				   uint64_t swap)
{
	struct chpp_qp_wr *s = wr_open(qpx, CHPP_WQE_ATOMIC_CS,
				       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);

	wr_remote(s, rkey, addr);
	s->w.swap_add = swap;
	s->w.compare = compare;
}

static void chpp_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				     uint64_t addr, uint64_t add)
{
	struct chpp_qp_wr *s = wr_open(qpx, CHPP_WQE_ATOMIC_FA,
				       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);

	wr_remote(s, rkey, addr);
	s->w.swap_add = add;
}

/* Operations the device does not have: ibv_wr_complete says EOPNOTSUPP. */
static void chpp_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			    uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	wr_open(qpx, 0, 0);
}

static void chpp_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	wr_open(qpx, 0, 0);
}

static void chpp_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	wr_open(qpx, 0, 0);
}

static void chpp_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
			     uint16_t hdr_sz, uint16_t mss)
{
	wr_open(qpx, 0, 0);
}

static void chpp_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t addr, const void *atomic_wr)
{
	wr_open(qpx, 0, 0);
}

static void chpp_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	wr_fail(to_cqp_ex(qpx)->wr, EOPNOTSUPP);
}

/* The open WR for its one data setter, or NULL (EINVAL kept). */
static struct chpp_qp_wr *wr_data(struct ibv_qp_ex *qpx)
{
	struct chpp_qp_wr *s = to_cqp_ex(qpx)->wr;

	if (!s->open || s->data) {
		wr_fail(s, EINVAL);
		return NULL;
	}
	s->data = true;
	return s;
}

static void chpp_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num,
				 const struct ibv_sge *list)
{
	struct chpp_qp_wr *s = wr_data(qpx);
	size_t i;

	if (!s)
		return;
	if (num > CHPP_MAX_SGE) {
		wr_fail(s, EINVAL);
		return;
	}
	for (i = 0; i < num; i++) {
		s->sg[i].addr = list[i].addr;
		s->sg[i].length = list[i].length;
		s->sg[i].lkey = list[i].lkey;
	}
	s->w.num_sge = num;
}

static void chpp_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	chpp_wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data (SEND and RDMA WRITE only), copied now into qp->wr. */
static void chpp_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num,
					 const struct ibv_data_buf *list)
{
	struct chpp_qp_wr *s = wr_data(qpx);
	size_t i, len = 0;

	if (!s)
		return;
	switch (s->w.opcode) {
	case CHPP_WQE_SEND:
	case CHPP_WQE_SEND_IMM:
	case CHPP_WQE_PUT:
	case CHPP_WQE_PUT_IMM:
		break;
	default:
		wr_fail(s, EINVAL);
		return;
	}
	for (i = 0; i < num; i++) {
		if (list[i].length > s->inline_cap - len) {
			wr_fail(s, EINVAL);
			return;
		}
		memcpy(s->inl + len, list[i].addr, list[i].length);
		len += list[i].length;
	}
	s->sg[0].addr = (uintptr_t)s->inl;
	s->sg[0].length = len;
	s->sg[0].lkey = 0;
	s->w.num_sge = 1;
	s->w.flags |= CHPP_WQE_INLINE;
}

static void chpp_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				    size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	chpp_wr_set_inline_data_list(qpx, 1, &b);
}

static void chpp_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct chpp_qp *qp = to_cqp_ex(qpx);
	struct chpp_qp_wr *s = qp->wr;

	if (!s->open || s->ud || qp->type != CHPP_QPT_UD || !ah) {
		wr_fail(s, EINVAL);
		return;
	}
	s->ud = true;
	s->w.dlid = to_cah(ah)->dlid;
	s->w.remote_qp_num = remote_qpn;
	s->w.remote_qkey = remote_qkey;
}

static void chpp_wr_start(struct ibv_qp_ex *qpx)
{
	struct chpp_qp *qp = to_cqp_ex(qpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr->start = qp->sq.uwq.head;
	qp->wr->err = 0;
	qp->wr->open = false;
}

static int chpp_wr_complete(struct ibv_qp_ex *qpx)
{
	struct chpp_qp *qp = to_cqp_ex(qpx);
	struct chpp_context *ctx = to_cctx(qp->ibv_qp.context);
	struct chpp_qp_wr *s = qp->wr;
	int err;

	wr_close(qp);
	err = s->err;
	/* The device refuses doorbells of a QP in RESET (IB: an error). */
	if (!err && qp->sq.uwq.head != s->start &&
	    qp->ibv_qp.state == IBV_QPS_RESET)
		err = EINVAL;
	if (err)
		qp->sq.uwq.head = s->start;
	else if (qp->sq.uwq.head != s->start) {
		chpp_db_flow(ctx);
		chpp_ring_sq(ctx->uar, qp->qpn, qp->sq.uwq.head);
	}
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void chpp_wr_abort(struct ibv_qp_ex *qpx)
{
	struct chpp_qp *qp = to_cqp_ex(qpx);

	qp->wr->open = false;
	qp->sq.uwq.head = qp->wr->start;
	pthread_spin_unlock(&qp->sq.lock);
}

static uint64_t chpp_qp_ops(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return CHPP_OPS_RC;
	case IBV_QPT_UC:
		return CHPP_OPS_UC;
	case IBV_QPT_UD:
		return CHPP_OPS_UD;
	default:
		return 0;
	}
}

/*
 * A QP of chpp_create_qp(). With IBV_QP_INIT_ATTR_SEND_OPS_FLAGS it is an
 * extended QP (ibv_qp_to_qp_ex() gives it) with the ibv_wr_* API;
 * send_ops_flags the device or the QP type cannot do fail with EOPNOTSUPP,
 * as do XRC domains, TSO headers, RSS (indirection table, RX hash) and
 * creation flags. IBV_QP_INIT_ATTR_PD is mandatory (EINVAL).
 */
struct ibv_qp *chpp_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	uint64_t ops = chpp_qp_ops(attr->qp_type);
	struct chpp_qp_wr *s = NULL;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *ibqp;
	struct chpp_qp *qp;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    (ex && (!ops || (attr->send_ops_flags & ~ops)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (ex) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			errno = ENOMEM;
			return NULL;
		}
	}
	/* ibv_qp_init_attr is the start of ibv_qp_init_attr_ex. */
	ibqp = chpp_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (!ibqp || !ex) {
		free(s);
		return ibqp;
	}
	qp = to_cqp(ibqp);
	s->ops = ops;
	s->inline_cap = (1u << qp->sq.uwq.shift) - CHPP_WQE_INLINE_HDR;
	if (s->inline_cap > sizeof(s->inl))
		s->inline_cap = sizeof(s->inl);
	qp->wr = s;
	qpx = &qp->ibv_qp_ex;
	qpx->comp_mask = 0;
	qpx->wr_start = chpp_wr_start;
	qpx->wr_complete = chpp_wr_complete;
	qpx->wr_abort = chpp_wr_abort;
	qpx->wr_send = chpp_wr_send;
	qpx->wr_send_imm = chpp_wr_send_imm;
	qpx->wr_rdma_write = chpp_wr_rdma_write;
	qpx->wr_rdma_write_imm = chpp_wr_rdma_write_imm;
	qpx->wr_rdma_read = chpp_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = chpp_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = chpp_wr_atomic_fetch_add;
	qpx->wr_bind_mw = chpp_wr_bind_mw;
	qpx->wr_local_inv = chpp_wr_local_inv;
	qpx->wr_send_inv = chpp_wr_send_inv;
	qpx->wr_send_tso = chpp_wr_send_tso;
	qpx->wr_atomic_write = chpp_wr_atomic_write;
	qpx->wr_set_sge = chpp_wr_set_sge;
	qpx->wr_set_sge_list = chpp_wr_set_sge_list;
	qpx->wr_set_inline_data = chpp_wr_set_inline_data;
	qpx->wr_set_inline_data_list = chpp_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = chpp_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = chpp_wr_set_xrc_srqn;
	qp->vqp.comp_mask |= VERBS_QP_EX;
	return ibqp;
}

void chpp_qp_ex_free(struct chpp_qp *qp)
{
	free(qp->wr);
	qp->wr = NULL;
}
