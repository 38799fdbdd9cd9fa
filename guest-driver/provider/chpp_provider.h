/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * libchpp-rdmav34: the libibverbs provider of chpp-hca. Objects of the
 * provider, shared by its control path (chpp_provider.c: uverbs commands
 * to chpp_hca.ko), its data path (chpp_provider_dp.c: WQEs, doorbells
 * and CQEs, no system call) and its extended verbs (chpp_provider_ex.c:
 * ibv_create_cq_ex with the poll API, ibv_create_qp_ex with the ibv_wr_*
 * API). docs/verbs-provider.md.
 */
#ifndef CHPP_PROVIDER_H
#define CHPP_PROVIDER_H

#include <pthread.h>
/*
 * libibverbs' provider interface: rdma-core's own driver.h when the
 * provider builds in rdma-core's tree as providers/chpp (CMakeLists.txt),
 * else our restatement of Debian 12's libibverbs 44 (the Makefile's
 * out-of-tree build defines CHPP_LIBIBVERBS_44). The one difference
 * between the two builds (docs/verbs-provider.md).
 */
#ifdef CHPP_LIBIBVERBS_44
#include "ibverbs_private.h"
#else
#include <infiniband/driver.h>
#endif
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
	bool db_poll;			/* read it when a CQ is empty */
};

struct chpp_cq {
	union {				/* ibv_cq_ex starts with an ibv_cq */
		struct ibv_cq ibv_cq;
		struct ibv_cq_ex ibv_cq_ex;	/* ibv_create_cq_ex */
	};
	pthread_spinlock_t lock;
	struct chpp_cqe *ring;
	uint32_t n;			/* ring entries, a power of two */
	uint32_t ci;			/* consumer index */
	uint32_t cqn;			/* device CQ number */
	/* the poll API (chpp_provider_ex.c) */
	struct ibv_wc cur;		/* the current completion */
	uint32_t poll_ci;		/* ci at ibv_start_poll */
};

/* A send or receive queue: the ring, its wr_ids and the free slots. */
struct chpp_wq {
	struct chpp_uwq uwq;		/* ring, n, shift, head */
	uint64_t *wrid;			/* the caller's wr_id of each slot */
	uint32_t tail;			/* oldest WQE not known complete */
	pthread_spinlock_t lock;
};

struct chpp_qp_wr;

struct chpp_qp {
	union {				/* libibverbs' struct verbs_qp first */
		struct ibv_qp ibv_qp;
		struct ibv_qp_ex ibv_qp_ex;	/* ibv_create_qp_ex */
		struct verbs_qp vqp;
	};
	struct chpp_qp_wr *wr;		/* the ibv_wr_* API's state, or NULL */
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

/* Control path (chpp_provider.c). */
struct ibv_cq *chpp_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_qp *chpp_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr);

/* Data path (chpp_provider_dp.c). */
int chpp_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int chpp_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int chpp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int chpp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int chpp_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
bool chpp_cqe_to_wc(struct chpp_context *ctx, const struct chpp_ucqe *e,
		    struct ibv_wc *wc);
uint8_t chpp_wqe_flags(struct chpp_qp *qp, unsigned int send_flags);
int chpp_sq_put(struct chpp_context *ctx, struct chpp_qp *qp,
		const struct chpp_usend *w, uint64_t wr_id);
void chpp_db_flow(struct chpp_context *ctx);
void chpp_db_poll(struct chpp_context *ctx);

/* Extended verbs (chpp_provider_ex.c). */
struct ibv_cq_ex *chpp_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *chpp_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
void chpp_qp_ex_free(struct chpp_qp *qp);

#endif /* CHPP_PROVIDER_H */
