// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * libchpp-rdmav34: the data path and the direct verbs. Posting writes WQEs
 * into the QP's rings in process memory and rings one doorbell on the
 * context's UAR page per call; polling reads CQEs from the CQ's ring and
 * tells the device the new consumer index; arming is a CQ doorbell. No
 * system call. The WQE and CQE code is chpp_datapath.c, shared with
 * libchpp-user. docs/verbs-provider.md.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include "chpp_provider.h"
#include "chppdv.h"

/* ibv_wc_status for a CQE status (enum chpp_wc_status). */
static enum ibv_wc_status chpp_wc_status(uint8_t status)
{
	switch (status) {
	case CHPP_WC_SUCCESS:
		return IBV_WC_SUCCESS;
	case CHPP_WC_LOC_LEN_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case CHPP_WC_LOC_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case CHPP_WC_LOC_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case CHPP_WC_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case CHPP_WC_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case CHPP_WC_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case CHPP_WC_LOC_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case CHPP_WC_REM_INV_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case CHPP_WC_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case CHPP_WC_REM_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case CHPP_WC_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case CHPP_WC_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

/* ibv_wc_opcode for a CQE opcode (enum chpp_cqe_opcode). */
static enum ibv_wc_opcode chpp_wc_opcode(uint8_t op)
{
	switch (op) {
	case CHPP_CQE_OP_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case CHPP_CQE_OP_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case CHPP_CQE_OP_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case CHPP_CQE_OP_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case CHPP_CQE_OP_RECV:
		return IBV_WC_RECV;
	case CHPP_CQE_OP_RECV_RDMA_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case CHPP_CQE_OP_SEND:
	default:
		return IBV_WC_SEND;
	}
}

/* Fill @wc from @e; false if the CQE is of a QP this context no longer has. */
bool chpp_cqe_to_wc(struct chpp_context *ctx, const struct chpp_ucqe *e,
		    struct ibv_wc *wc)
{
	uint32_t mask = (1u << ctx->info.qpn_bits) - 1;
	struct chpp_qp *qp = ctx->qp_table[e->qpn & mask];
	struct chpp_wq *wq;

	if (!qp || qp->qpn != e->qpn)
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->status = chpp_wc_status(e->status);
	wc->opcode = chpp_wc_opcode(e->opcode);
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->qp_num = qp->ibv_qp.qp_num;
	/*
	 * Every earlier WQE of the queue is complete too: their slots are free
	 * once wr_id is read (posting reads tail under the queue's lock).
	 */
	if (!(e->flags & CHPP_CQE_FLAG_SEND) && qp->srq) {
		/* An SRQ's WQE carries the caller's wr_id itself. */
		wc->wr_id = e->wr_id;
	} else {
		wq = e->flags & CHPP_CQE_FLAG_SEND ? &qp->sq : &qp->rq;
		wc->wr_id = wq->wrid[e->wr_id & (wq->uwq.n - 1)];
		__atomic_store_n(&wq->tail, (uint32_t)e->wr_id + 1,
				 __ATOMIC_RELEASE);
	}
	if (!(e->flags & CHPP_CQE_FLAG_SEND)) {
		wc->src_qp = qp->type == CHPP_QPT_UD ?
			     (uint32_t)CHPP_UD_MAGIC << ctx->info.qpn_bits |
			     e->src_qp : qp->dest_qp_num;
		wc->slid = CHPP_LID(e->src_node, e->src_vf);
		wc->pkey_index = 0;
	}
	if (e->flags & CHPP_CQE_FLAG_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		/* The immediate's bytes as the sender posted them. */
		wc->imm_data = (CHPP_FORCE __be32)htole32(e->imm);
	}
	return true;
}

/*
 * The CQ is empty: read CHPP_UAR_DB_STATUS, which lets the device do at
 * once what its link received (docs/verbs-provider.md, "Polling"); a
 * device before ABI 1.4 reads 0 there, and is not asked again.
 */
void chpp_db_poll(struct chpp_context *ctx)
{
	if (ctx->db_poll &&
	    !CHPP_UAR_DB_STATUS_DEPTH(chpp_mmio_read32(ctx->uar +
						       CHPP_UAR_DB_STATUS)))
		ctx->db_poll = false;
}

int chpp_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct chpp_context *ctx = to_cctx(ibcq->context);
	struct chpp_cq *cq = to_ccq(ibcq);
	const struct chpp_cqe *e;
	struct chpp_ucqe c;
	bool asked = false;
	uint32_t start;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	start = cq->ci;
	for (;;) {
		while (n < num_entries &&
		       (e = chpp_cqe_at(cq->ring, cq->n, cq->ci))) {
			chpp_cqe_read(e, &c);
			if (chpp_cqe_to_wc(ctx, &c, &wc[n]))
				n++;
			cq->ci++;
		}
		if (n || asked || !ctx->db_poll)
			break;
		chpp_db_poll(ctx);
		asked = true;
	}
	if (cq->ci != start)
		chpp_ring_cq(ctx->uar, cq->cqn, CHPP_CQ_DB_SET_CI, cq->ci);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int chpp_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct chpp_cq *cq = to_ccq(ibcq);

	pthread_spin_lock(&cq->lock);
	chpp_ring_cq(to_cctx(ibcq->context)->uar, cq->cqn,
		     solicited_only ? CHPP_CQ_DB_ARM_SOL : CHPP_CQ_DB_ARM_NEXT,
		     cq->ci);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

uint8_t chpp_wqe_flags(struct chpp_qp *qp, unsigned int send_flags)
{
	uint8_t f = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sig_all)
		f |= CHPP_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		f |= CHPP_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		f |= CHPP_WQE_FENCE;
	if (send_flags & IBV_SEND_INLINE)
		f |= CHPP_WQE_INLINE;
	return f;
}

/* ibv_sge and chpp_usge differ in field order: convert the gather list. */
static int chpp_sges(const struct ibv_sge *in, int num, struct chpp_usge *out)
{
	int i;

	if (num < 0 || num > CHPP_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		out[i].lkey = in[i].lkey;
	}
	return 0;
}

/* Write one WQE at the SQ head (lock held); the caller rings. */
int chpp_sq_put(struct chpp_context *ctx, struct chpp_qp *qp,
		const struct chpp_usend *w, uint64_t wr_id)
{
	struct chpp_wq *sq = &qp->sq;

	if (sq->uwq.head - __atomic_load_n(&sq->tail, __ATOMIC_ACQUIRE) >=
	    sq->uwq.n)
		return -ENOMEM;
	if (chpp_write_send_wqe(&sq->uwq, qp->type, ctx->info.qpn_bits, w,
				sq->uwq.head))
		return -EINVAL;
	sq->wrid[sq->uwq.head & (sq->uwq.n - 1)] = wr_id;
	sq->uwq.head++;
	return 0;
}

static int chpp_send_wr(struct chpp_qp *qp, const struct ibv_send_wr *wr,
			struct chpp_usend *w, struct chpp_usge *sg)
{
	memset(w, 0, sizeof(*w));
	w->flags = chpp_wqe_flags(qp, wr->send_flags);
	w->sg = sg;
	w->num_sge = wr->num_sge;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		w->opcode = CHPP_WQE_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		w->opcode = CHPP_WQE_SEND_IMM;
		/* The WQE carries imm_data's bytes as they are (network order). */
		w->imm = le32toh((CHPP_FORCE __le32)wr->imm_data);
		break;
	case IBV_WR_RDMA_WRITE:
		w->opcode = CHPP_WQE_PUT;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		w->opcode = CHPP_WQE_PUT_IMM;
		w->imm = le32toh((CHPP_FORCE __le32)wr->imm_data);
		break;
	case IBV_WR_RDMA_READ:
		w->opcode = CHPP_WQE_GET;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		w->opcode = CHPP_WQE_ATOMIC_CS;
		w->raddr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->swap_add = wr->wr.atomic.swap;
		w->compare = wr->wr.atomic.compare_add;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->opcode = CHPP_WQE_ATOMIC_FA;
		w->raddr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->swap_add = wr->wr.atomic.compare_add;
		break;
	default:
		return -EINVAL;
	}
	if (w->opcode == CHPP_WQE_PUT || w->opcode == CHPP_WQE_PUT_IMM ||
	    w->opcode == CHPP_WQE_GET) {
		w->raddr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (qp->type == CHPP_QPT_UD) {
		if (!wr->wr.ud.ah)
			return -EINVAL;
		w->dlid = to_cah(wr->wr.ud.ah)->dlid;
		w->remote_qp_num = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	}
	return chpp_sges(wr->sg_list, wr->num_sge, sg);
}

/*
 * Seed 004's software flow control of the doorbell FIFO: at most
 * CHPP_DB_BUDGET of this context's SQ doorbells wait in the function's
 * FIFO, so that one process cannot overflow it. The device tells how many
 * wait (CHPP_UAR_DB_STATUS) and takes them by itself, so waiting for room
 * ends without any help from the program. The wait is bounded all the same:
 * after CHPP_DB_WAIT_NS the doorbell is rung, and if the FIFO loses it the
 * driver recovers it. A doorbell is never held back for a later call: a
 * program may sleep on a completion channel right after posting.
 */
#define CHPP_DB_BUDGET		(CHPP_DB_FIFO_DEPTH / 2)
#define CHPP_DB_WAIT_NS		100000000ull

static uint64_t chpp_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

void chpp_db_flow(struct chpp_context *ctx)
{
	uint64_t deadline = 0;

	pthread_mutex_lock(&ctx->db_lock);
	while (ctx->db_flow && !ctx->db_credits) {
		uint32_t v = chpp_mmio_read32(ctx->uar + CHPP_UAR_DB_STATUS);
		uint32_t depth = CHPP_UAR_DB_STATUS_DEPTH(v);
		uint32_t mine = CHPP_UAR_DB_STATUS_MINE(v);
		uint32_t fill = CHPP_UAR_DB_STATUS_FILL(v);

		if (!depth) {		/* a device before ABI 1.4 */
			ctx->db_flow = false;
			break;
		}
		if (mine < CHPP_DB_BUDGET && fill < depth) {
			ctx->db_credits = CHPP_DB_BUDGET - mine;
			if (ctx->db_credits > depth - fill)
				ctx->db_credits = depth - fill;
			break;
		}
		if (!deadline) {
			deadline = chpp_now_ns() + CHPP_DB_WAIT_NS;
		} else if (chpp_now_ns() > deadline) {
			ctx->db_credits = 1;
			break;
		}
		sched_yield();
	}
	if (ctx->db_credits)
		ctx->db_credits--;
	pthread_mutex_unlock(&ctx->db_lock);
}

int chpp_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct chpp_context *ctx = to_cctx(ibqp->context);
	struct chpp_usge sg[CHPP_MAX_SGE];
	struct chpp_qp *qp = to_cqp(ibqp);
	uint32_t start;
	struct chpp_usend w;
	int err = 0;

	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.uwq.head;
	/* The device refuses doorbells of a QP in RESET (IB: an error). */
	if (ibqp->state == IBV_QPS_RESET) {
		err = -EINVAL;
		*bad_wr = wr;
		wr = NULL;
	}
	for (; wr; wr = wr->next) {
		err = chpp_send_wr(qp, wr, &w, sg);
		if (!err)
			err = chpp_sq_put(ctx, qp, &w, wr->wr_id);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	if (qp->sq.uwq.head != start) {
		chpp_db_flow(ctx);
		chpp_ring_sq(ctx->uar, qp->qpn, qp->sq.uwq.head);
	}
	pthread_spin_unlock(&qp->sq.lock);
	return -err;	/* libibverbs: a positive errno */
}

int chpp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct chpp_context *ctx = to_cctx(ibqp->context);
	struct chpp_usge sg[CHPP_MAX_SGE];
	struct chpp_qp *qp = to_cqp(ibqp);
	struct chpp_wq *rq = &qp->rq;
	uint32_t start;
	int err = 0;

	pthread_spin_lock(&rq->lock);
	start = rq->uwq.head;
	/* A QP on an SRQ has no RQ: its receives are posted to the SRQ. */
	if (ibqp->state == IBV_QPS_RESET || qp->srq) {
		err = -EINVAL;
		*bad_wr = wr;
		wr = NULL;
	}
	for (; wr; wr = wr->next) {
		if (rq->uwq.head - __atomic_load_n(&rq->tail, __ATOMIC_ACQUIRE) >=
		    rq->uwq.n)
			err = -ENOMEM;
		else
			err = chpp_sges(wr->sg_list, wr->num_sge, sg);
		if (!err && chpp_write_recv_wqe(&rq->uwq, rq->uwq.head, sg,
						wr->num_sge))
			err = -EINVAL;
		if (err) {
			*bad_wr = wr;
			break;
		}
		rq->wrid[rq->uwq.head & (rq->uwq.n - 1)] = wr->wr_id;
		rq->uwq.head++;
	}
	if (rq->uwq.head != start)
		chpp_ring_rq(ctx->uar, qp->qpn, rq->uwq.head);
	pthread_spin_unlock(&rq->lock);
	return -err;
}

/*
 * Receives into an SRQ: a slot may be written again once the device's
 * consumer record frees it (docs/shared-receive-queues.md).
 */
int chpp_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct chpp_context *ctx = to_cctx(ibsrq->context);
	struct chpp_srq *srq = to_csrq(ibsrq);
	struct chpp_usge sg[CHPP_MAX_SGE];
	uint32_t start, free;
	int err = 0;

	pthread_spin_lock(&srq->lock);
	start = srq->uwq.head;
	free = chpp_srq_free(&srq->uwq);
	for (; wr; wr = wr->next) {
		if (((srq->uwq.head - free) & CHPP_UAR_DB_PI_MASK) >=
		    srq->uwq.n)
			err = -ENOMEM;
		else if ((uint32_t)wr->num_sge > srq->max_sge)
			err = -EINVAL;
		else
			err = chpp_sges(wr->sg_list, wr->num_sge, sg);
		if (!err && chpp_write_recv_wqe(&srq->uwq, wr->wr_id, sg,
						wr->num_sge))
			err = -EINVAL;
		if (err) {
			*bad_wr = wr;
			break;
		}
		srq->uwq.head++;
	}
	if (srq->uwq.head != start)
		chpp_ring_srq(ctx->uar, srq->srqn, srq->uwq.head);
	pthread_spin_unlock(&srq->lock);
	return -err;
}

/* 0, or -EOPNOTSUPP for an object of another provider. */
static int chppdv_ours(struct ibv_context *context)
{
	return chpp_is_our_context(context) ? 0 : -EOPNOTSUPP;
}

/* The chppdv_* functions return positive errno values, as libibverbs. */
int chppdv_query_context(struct ibv_context *context,
			 struct chppdv_context *out)
{
	struct chpp_context *ctx;
	int err = chppdv_ours(context);

	if (err)
		return -err;
	ctx = to_cctx(context);
	memset(out, 0, sizeof(*out));
	out->node_id = ctx->info.node_id;
	out->uar_index = ctx->info.uar_index;
	out->qpn_bits = ctx->info.qpn_bits;
	out->max_inline = ctx->info.max_inline;
	out->max_qp_wqes = ctx->info.max_qp_wqes;
	out->max_cq_entries = ctx->info.max_cq_entries;
	out->max_sge = ctx->info.max_sge;
	return 0;
}

int chppdv_query_qp(struct ibv_qp *ibqp, struct chppdv_qp *out)
{
	struct chpp_qp *qp = to_cqp(ibqp);
	int err = chppdv_ours(ibqp->context);

	if (err)
		return -err;
	memset(out, 0, sizeof(*out));
	out->qpn = qp->qpn;
	out->magic = qp->magic;
	out->type = qp->type;
	out->sq_wqes = qp->sq.uwq.n;
	out->sq_stride = 1u << qp->sq.uwq.shift;
	out->rq_wqes = qp->rq.uwq.n;
	out->rq_stride = 1u << qp->rq.uwq.shift;
	out->max_inline = out->sq_stride - CHPP_WQE_INLINE_HDR;
	return 0;
}

static int chppdv_wr(struct chpp_qp *qp, const struct chppdv_send_wr *wr,
		     struct chpp_usend *w, struct chpp_usge *sg)
{
	memset(w, 0, sizeof(*w));
	w->flags = chpp_wqe_flags(qp, wr->send_flags & ~IBV_SEND_INLINE);
	w->sg = sg;
	w->num_sge = wr->num_sge;
	switch (wr->opcode) {
	case CHPPDV_WR_NAP_IMMEDIATE:
		w->opcode = CHPP_WQE_NAP;
		w->flags |= CHPP_WQE_INLINE;
		break;
	case CHPPDV_WR_NAP_INDIRECT:
		w->opcode = CHPP_WQE_NAP;
		break;
	case CHPPDV_WR_PUT:
		w->opcode = CHPP_WQE_PUT;
		break;
	case CHPPDV_WR_GET:
		w->opcode = CHPP_WQE_GET;
		break;
	default:
		return -EINVAL;
	}
	w->raddr = wr->remote_addr;
	w->rkey = wr->rkey;
	if (qp->type == CHPP_QPT_UD) {
		if (!wr->ah || w->opcode != CHPP_WQE_NAP)
			return -EINVAL;
		w->dlid = to_cah(wr->ah)->dlid;
		w->remote_qp_num = wr->remote_qpn;
		w->remote_qkey = wr->remote_qkey;
	}
	return chpp_sges(wr->sg_list, wr->num_sge, sg);
}

int chppdv_post_send(struct ibv_qp *ibqp, const struct chppdv_send_wr *wr,
		     int num, int *bad_index)
{
	struct chpp_usge sg[CHPP_MAX_SGE];
	struct chpp_context *ctx;
	struct chpp_qp *qp = to_cqp(ibqp);
	struct chpp_usend w;
	uint32_t start;
	int i, err = chppdv_ours(ibqp->context);

	if (err)
		return -err;
	ctx = to_cctx(ibqp->context);
	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.uwq.head;
	for (i = 0; i < num; i++) {
		err = chppdv_wr(qp, &wr[i], &w, sg);
		if (!err)
			err = chpp_sq_put(ctx, qp, &w, wr[i].wr_id);
		if (err) {
			if (bad_index)
				*bad_index = i;
			break;
		}
	}
	if (qp->sq.uwq.head != start) {
		chpp_db_flow(ctx);
		chpp_ring_sq(ctx->uar, qp->qpn, qp->sq.uwq.head);
	}
	pthread_spin_unlock(&qp->sq.lock);
	return -err;	/* libibverbs: a positive errno */
}
