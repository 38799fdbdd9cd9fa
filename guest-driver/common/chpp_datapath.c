// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * User-space data path of a chpp-hca: see chpp_datapath.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "chpp_datapath.h"

int chpp_log2_up(uint32_t v)
{
	int l = 0;

	while ((1ull << l) < v)
		l++;
	return l;
}

void *chpp_ring_alloc(size_t size)
{
	void *p;

	size = (size + CHPP_UAR_PAGE_SIZE - 1) & ~(size_t)(CHPP_UAR_PAGE_SIZE - 1);
	if (posix_memalign(&p, CHPP_UAR_PAGE_SIZE, size))
		return NULL;
	memset(p, 0, size);
	return p;
}

uint32_t chpp_sq_wqe_bytes(uint8_t qp_type, uint32_t sges, uint32_t inline_len)
{
	/* ctrl, UD, raddr and atomic segments, then the gather list. */
	uint32_t gather = 3 * CHPP_SEG + (qp_type == CHPP_QPT_UD ? CHPP_SEG : 0) +
			  CHPP_SEG * (sges ? sges : 1);
	/* Inline data after the largest header of SEND and RDMA WRITE. */
	uint32_t in = CHPP_WQE_INLINE_HDR +
		      ((inline_len + CHPP_SEG - 1) & ~(CHPP_SEG - 1));

	return gather > in ? gather : in;
}

uint32_t chpp_rq_wqe_bytes(uint32_t sges)
{
	return CHPP_SEG + CHPP_SEG * (sges ? sges : 1);
}

uint32_t chpp_wqe_shift(uint32_t bytes)
{
	int l = chpp_log2_up(bytes);

	return l < CHPP_MIN_WQE_SHIFT ? CHPP_MIN_WQE_SHIFT : l;
}

static void *wqe_at(struct chpp_uwq *wq, uint32_t i)
{
	return (uint8_t *)wq->ring + ((size_t)(i & (wq->n - 1)) << wq->shift);
}

int chpp_write_send_wqe(struct chpp_uwq *wq, uint8_t qp_type,
			uint32_t qpn_bits, const struct chpp_usend *wr,
			uint64_t wqe_id)
{
	uint8_t *wqe = wqe_at(wq, wq->head);
	uint8_t *p = wqe + CHPP_SEG, *end = wqe + (1u << wq->shift);
	struct chpp_wqe_ctrl *ctrl = (void *)wqe;
	int i;

	if (wr->num_sge < 0)
		return -EINVAL;
	memset(wqe, 0, 1u << wq->shift);
	ctrl->opcode = wr->opcode;
	ctrl->flags = wr->flags;
	ctrl->imm = htole32(wr->imm);
	ctrl->wr_id = htole64(wqe_id);
	if (qp_type == CHPP_QPT_UD) {
		struct chpp_wqe_ud *u = (void *)p;

		u->dest_node = htole32(CHPP_LID_NODE(wr->dlid));
		u->dest_vf = CHPP_LID_FN(wr->dlid);
		u->dest_qpn = htole32(wr->remote_qp_num &
				      ((1u << qpn_bits) - 1));
		u->dest_magic = wr->remote_qp_num >> qpn_bits;
		u->qkey = htole32(wr->remote_qkey);
		p += CHPP_SEG;
	}
	switch (wr->opcode) {
	case CHPP_WQE_PUT:
	case CHPP_WQE_PUT_IMM:
	case CHPP_WQE_GET:
	case CHPP_WQE_ATOMIC_CS:
	case CHPP_WQE_ATOMIC_FA: {
		struct chpp_wqe_raddr *r = (void *)p;

		r->raddr = htole64(wr->raddr);
		r->rkey = htole32(wr->rkey);
		p += CHPP_SEG;
		if (wr->opcode == CHPP_WQE_ATOMIC_CS ||
		    wr->opcode == CHPP_WQE_ATOMIC_FA) {
			struct chpp_wqe_atomic *a = (void *)p;

			a->swap_add = htole64(wr->swap_add);
			a->compare = htole64(wr->compare);
			p += CHPP_SEG;
		}
		break;
	}
	default:
		break;
	}
	if (wr->flags & CHPP_WQE_INLINE) {
		struct chpp_wqe_inline *in = (void *)p;
		uint32_t len = 0;

		p += CHPP_SEG;
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg[i].length > (size_t)(end - p) - len)
				return -EINVAL;
			memcpy(p + len, (void *)(uintptr_t)wr->sg[i].addr,
			       wr->sg[i].length);
			len += wr->sg[i].length;
		}
		in->length = htole32(len);
	} else {
		if ((size_t)CHPP_SEG * wr->num_sge > (size_t)(end - p))
			return -EINVAL;
		ctrl->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			struct chpp_wqe_sge *s = (void *)(p + CHPP_SEG * i);

			s->addr = htole64(wr->sg[i].addr);
			s->length = htole32(wr->sg[i].length);
			s->lkey = htole32(wr->sg[i].lkey);
		}
	}
	return 0;
}

int chpp_write_recv_wqe(struct chpp_uwq *wq, uint64_t wqe_id,
			const struct chpp_usge *sg, int num_sge)
{
	struct chpp_rwqe_hdr *h = wqe_at(wq, wq->head);
	struct chpp_wqe_sge *s = (void *)(h + 1);
	int i;

	if (num_sge < 0 || CHPP_SEG + CHPP_SEG * num_sge > (1 << wq->shift))
		return -EINVAL;
	h->wr_id = htole64(wqe_id);
	h->num_sge = htole32(num_sge);
	h->reserved = 0;
	for (i = 0; i < num_sge; i++) {
		s[i].addr = htole64(sg[i].addr);
		s[i].length = htole32(sg[i].length);
		s[i].lkey = htole32(sg[i].lkey);
	}
	return 0;
}

/* WQEs in memory before the doorbell store that announces them. */
static void db_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void chpp_ring_sq(uint8_t *uar, uint32_t qpn, uint32_t head)
{
	db_barrier();
	chpp_mmio_write32(uar + CHPP_UAR_SQ_DB,
			  (qpn << CHPP_UAR_DB_QPN_SHIFT) |
			  (head & CHPP_UAR_DB_PI_MASK));
}

void chpp_ring_rq(uint8_t *uar, uint32_t qpn, uint32_t head)
{
	db_barrier();
	chpp_mmio_write32(uar + CHPP_UAR_RQ_DB,
			  (qpn << CHPP_UAR_DB_QPN_SHIFT) |
			  (head & CHPP_UAR_DB_PI_MASK));
}

void chpp_ring_srq(uint8_t *uar, uint32_t srqn, uint32_t head)
{
	db_barrier();
	chpp_mmio_write32(uar + CHPP_UAR_SRQ_DB,
			  (srqn << CHPP_UAR_DB_QPN_SHIFT) |
			  (head & CHPP_UAR_DB_PI_MASK));
}

void chpp_ring_cq(uint8_t *uar, uint32_t cqn, uint32_t cmd, uint32_t ci)
{
	/* One 64-bit store: the device refuses a CQ doorbell split in two. */
	db_barrier();
	chpp_mmio_write64(uar + CHPP_UAR_CQ_DB,
			  (cqn & CHPP_CQ_DB_CQN_MASK) |
			  ((uint64_t)cmd << CHPP_CQ_DB_CMD_SHIFT) |
			  ((uint64_t)(ci & CHPP_CQ_DB_CI_MASK) <<
			   CHPP_CQ_DB_CI_SHIFT));
}

const struct chpp_cqe *chpp_cqe_at(const struct chpp_cqe *ring, uint32_t n,
				   uint32_t ci)
{
	const struct chpp_cqe *e = &ring[ci & (n - 1)];
	int phase = ((ci / n) & 1) ^ 1;
	/* The device writes the owner byte last: read it first. */
	uint8_t owner = __atomic_load_n(&e->owner, __ATOMIC_ACQUIRE);

	return !!(owner & CHPP_CQE_OWNER) == phase ? e : NULL;
}

void chpp_cqe_read(const struct chpp_cqe *e, struct chpp_ucqe *out)
{
	out->wr_id = le64toh(e->wr_id);
	out->byte_len = le32toh(e->byte_len);
	out->imm = le32toh(e->imm);
	out->qpn = le32toh(e->qpn);
	out->src_qp = le32toh(e->src_qp);
	out->src_node = le16toh(e->src_node);
	out->src_vf = e->src_vf;
	out->vendor_err = e->vendor_err;
	out->opcode = e->opcode;
	out->status = e->status;
	out->flags = e->flags;
}
