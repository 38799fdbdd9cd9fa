/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * chppdv: direct verbs of the chpp-hca provider (libchpp-rdmav34.so), the
 * device's extras beyond standard verbs, in the manner of rdma-core's
 * mlx5dv.h/efadv.h. Link with -lchpp-rdmav34 (the provider library itself)
 * after -libverbs. docs/verbs-provider.md#direct-verbs.
 *
 * Every function returns 0 or a positive errno value, and EOPNOTSUPP for an
 * object of another provider.
 */
#ifndef CHPPDV_H
#define CHPPDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a context knows about its adapter and its UAR page. */
struct chppdv_context {
	uint32_t node_id;	/* adapter node id; LID = CHPP_LID(node, fn) */
	uint32_t uar_index;	/* the context's UAR page in BAR2 */
	uint32_t qpn_bits;	/* qp_num = magic << qpn_bits | device QPN */
	uint32_t max_inline;	/* largest inline payload of the device */
	uint32_t max_qp_wqes;
	uint32_t max_cq_entries;
	uint32_t max_sge;
	uint32_t reserved;
};

int chppdv_query_context(struct ibv_context *context,
			 struct chppdv_context *out);

/*
 * A QP's device identity. A QP accepts only packets carrying its magic
 * (the "QP Magic" of the cHPP header): a new QP on the same device QPN gets
 * a new magic, so stale packets for the old one are dropped.
 */
struct chppdv_qp {
	uint32_t qpn;		/* device QPN (index) */
	uint8_t magic;		/* high bits of ibv_qp.qp_num */
	uint8_t type;		/* enum chpp_qp_type: 0 RC, 1 UC, 2 UD */
	uint16_t reserved;
	uint32_t sq_wqes;	/* ring sizes and WQE strides in bytes */
	uint32_t sq_stride;
	uint32_t rq_wqes;
	uint32_t rq_stride;
	uint32_t max_inline;	/* inline payload that fits a send WQE */
};

int chppdv_query_qp(struct ibv_qp *qp, struct chppdv_qp *out);

/* The device's native operations (docs/work-requests.md). */
enum chppdv_wr_opcode {
	/* One NAP packet, payload (<= 2048 bytes) copied into the WQE. */
	CHPPDV_WR_NAP_IMMEDIATE,
	/* One NAP packet, payload gathered from sg_list (<= 2048 bytes). */
	CHPPDV_WR_NAP_INDIRECT,
	/* PUT: write sg_list to remote_addr/rkey (RDMA WRITE). */
	CHPPDV_WR_PUT,
	/* GET: read remote_addr/rkey into sg_list (RDMA READ). */
	CHPPDV_WR_GET,
};

struct chppdv_send_wr {
	uint64_t wr_id;		/* returned in the ibv_wc */
	enum chppdv_wr_opcode opcode;
	unsigned int send_flags; /* IBV_SEND_SIGNALED, _SOLICITED, _FENCE */
	struct ibv_sge *sg_list;
	int num_sge;
	uint64_t remote_addr;	/* PUT, GET */
	uint32_t rkey;		/* PUT, GET */
	/* UD QPs (NAP only): the destination. */
	struct ibv_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
};

/*
 * Post @num native work requests to the send queue of @qp, as
 * ibv_post_send does (same ring, same completions: a NAP completes like a
 * SEND on both sides, PUT like RDMA_WRITE, GET like RDMA_READ). On an
 * error, *bad_index (if not NULL) is the first request not posted.
 */
int chppdv_post_send(struct ibv_qp *qp, const struct chppdv_send_wr *wr,
		     int num, int *bad_index);

#ifdef __cplusplus
}
#endif

#endif /* CHPPDV_H */
