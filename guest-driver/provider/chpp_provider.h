/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * libchpp-rdmav34: the libibverbs provider of chpp-hca. Objects of the
 * provider, shared by its control path (chpp_provider.c: uverbs commands
 * to chpp_hca.ko) and its data path (chpp_provider_dp.c: WQEs, doorbells
 * and CQEs, no system call). docs/verbs-provider.md.
 */
#ifndef CHPP_PROVIDER_H
#define CHPP_PROVIDER_H

#include <pthread.h>
#include "ibverbs_private.h"
#include "chpp_uverbs_abi.h"
#include "chpp_datapath.h"

struct chpp_device {
	struct verbs_device vdev;
};

struct chpp_context {
	struct verbs_context vctx;
	uint8_t *uar;			/* this context's UAR page */
	struct chpp_alloc_ucontext_resp info;
	pthread_mutex_t qp_table_lock;
	struct chpp_qp **qp_table;	/* device QPN -> QP, for CQEs */
	/* doorbell FIFO flow control (chpp_provider_dp.c) */
	pthread_mutex_t db_lock;
	uint32_t db_credits;		/* SQ doorbells to ring before a look */
	bool db_flow;			/* the device has CHPP_UAR_DB_STATUS */
};

struct chpp_cq {
	struct ibv_cq ibv_cq;
	pthread_spinlock_t lock;
	struct chpp_cqe *ring;
	uint32_t n;			/* ring entries, a power of two */
	uint32_t ci;			/* consumer index */
	uint32_t cqn;			/* device CQ number */
};

/* A send or receive queue: the ring, its wr_ids and the free slots. */
struct chpp_wq {
	struct chpp_uwq uwq;		/* ring, n, shift, head */
	uint64_t *wrid;			/* the caller's wr_id of each slot */
	uint32_t tail;			/* oldest WQE not known complete */
	pthread_spinlock_t lock;
};

struct chpp_qp {
	struct ibv_qp ibv_qp;
	struct chpp_wq sq, rq;
	uint32_t qpn;			/* device QPN (doorbells name it) */
	uint8_t type;			/* enum chpp_qp_type */
	uint8_t magic;
	bool sig_all;
	bool srq;			/* receives from an SRQ: no RQ */
	uint32_t dest_qp_num;		/* RC/UC: the connected peer */
};

/*
 * A shared receive queue (docs/shared-receive-queues.md): its ring, then
 * the consumer record the device writes. Each WQE carries the caller's
 * wr_id, which the device copies to the CQE.
 */
struct chpp_srq {
	struct ibv_srq ibv_srq;
	struct chpp_uwq uwq;		/* ring, n, shift, head */
	uint32_t srqn;			/* device SRQ number */
	uint32_t max_sge;
	pthread_spinlock_t lock;
};

struct chpp_ah {
	struct ibv_ah ibv_ah;
	uint16_t dlid;
};

static inline struct chpp_context *to_cctx(struct ibv_context *c)
{
	return (struct chpp_context *)((uint8_t *)c -
				       offsetof(struct chpp_context,
						vctx.context));
}

static inline struct chpp_cq *to_ccq(struct ibv_cq *cq)
{
	return (struct chpp_cq *)cq;
}

static inline struct chpp_qp *to_cqp(struct ibv_qp *qp)
{
	return (struct chpp_qp *)qp;
}

static inline struct chpp_srq *to_csrq(struct ibv_srq *srq)
{
	return (struct chpp_srq *)srq;
}

static inline struct chpp_ah *to_cah(struct ibv_ah *ah)
{
	return (struct chpp_ah *)ah;
}

/* True if @ctx is a context of this provider (direct verbs check it). */
bool chpp_is_our_context(struct ibv_context *ctx);

int chpp_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int chpp_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int chpp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int chpp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int chpp_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

#endif /* CHPP_PROVIDER_H */
