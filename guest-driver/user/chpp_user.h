/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * libchpp-user: direct user-space access to a chpp-hca through the kernel's
 * uverbs character device, without libibverbs. The control path (context,
 * PD, MR, CQ, QP) is uverbs write() commands to chpp_hca.ko; the data path
 * (posting WQEs, ringing doorbells, polling CQEs, arming CQs) touches only
 * the process's own rings and its mmap()ed UAR page: no system call.
 *
 * It is what the rdma-core provider does inside libibverbs, kept small so it
 * can test the driver's uverbs ABI (guest-driver/chpp_uverbs_abi.h) and the
 * OS-bypass path. docs/guest-driver.md#user-space-access.
 */
#ifndef CHPP_USER_H
#define CHPP_USER_H

#include <stdint.h>
#include <stddef.h>
#include "hw/chpp/chpp-hca-abi.h"
#include "chpp_uverbs_abi.h"
#include "chpp_datapath.h"

/* Values of the kernel's verbs enums used in uverbs commands. */
enum {
	CHPP_IB_QPT_RC = 2, CHPP_IB_QPT_UD = 4,
	CHPP_IB_QPS_RESET = 0, CHPP_IB_QPS_INIT = 1, CHPP_IB_QPS_RTR = 2,
	CHPP_IB_QPS_RTS = 3, CHPP_IB_QPS_ERR = 6,
	CHPP_IB_MTU_4096 = 5,
	CHPP_IB_PORT_ACTIVE = 4,
	CHPP_IB_ACCESS_LOCAL_WRITE = 1, CHPP_IB_ACCESS_REMOTE_WRITE = 2,
	CHPP_IB_ACCESS_REMOTE_READ = 4, CHPP_IB_ACCESS_REMOTE_ATOMIC = 8,
	CHPP_IB_QP_STATE = 1 << 0, CHPP_IB_QP_ACCESS_FLAGS = 1 << 3,
	CHPP_IB_QP_PKEY_INDEX = 1 << 4, CHPP_IB_QP_PORT = 1 << 5,
	CHPP_IB_QP_QKEY = 1 << 6,
	CHPP_IB_QP_AV = 1 << 7, CHPP_IB_QP_PATH_MTU = 1 << 8,
	CHPP_IB_QP_TIMEOUT = 1 << 9, CHPP_IB_QP_RETRY_CNT = 1 << 10,
	CHPP_IB_QP_RNR_RETRY = 1 << 11, CHPP_IB_QP_RQ_PSN = 1 << 12,
	CHPP_IB_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	CHPP_IB_QP_MIN_RNR_TIMER = 1 << 15, CHPP_IB_QP_SQ_PSN = 1 << 16,
	CHPP_IB_QP_MAX_DEST_RD_ATOMIC = 1 << 17, CHPP_IB_QP_DEST_QPN = 1 << 20,
	CHPP_IB_EVENT_QP_FATAL = 1, CHPP_IB_EVENT_QP_REQ_ERR = 2,
	CHPP_IB_EVENT_QP_ACCESS_ERR = 3, CHPP_IB_EVENT_PORT_ACTIVE = 9,
	CHPP_IB_EVENT_PORT_ERR = 10,
};

struct chpp_uctx {
	int fd;				/* /dev/infiniband/uverbsN */
	int async_fd;
	uint8_t *uar;			/* the context's UAR page */
	struct chpp_alloc_ucontext_resp info;
};

struct chpp_ucq {
	uint32_t handle;		/* uverbs object handle */
	uint32_t cqn;			/* device CQ number */
	uint32_t n;
	uint32_t ci;
	struct chpp_cqe *ring;
	int channel_fd;			/* completion channel, or -1 */
};

struct chpp_uqp {
	uint32_t handle;
	uint32_t qpn;			/* device QPN */
	uint32_t qp_num;		/* magic << qpn_bits | qpn (what peers use) */
	uint8_t type;			/* enum chpp_qp_type */
	struct chpp_uwq sq, rq;
	uint32_t max_send_sge, max_inline;
};

struct chpp_umr {
	uint32_t handle, lkey, rkey;
};

int chpp_open(struct chpp_uctx *c, const char *dev);
void chpp_close(struct chpp_uctx *c);
int chpp_query_port_lid(struct chpp_uctx *c, uint16_t *lid, uint8_t *state);
int chpp_alloc_pd(struct chpp_uctx *c, uint32_t *pd);
int chpp_dealloc_pd(struct chpp_uctx *c, uint32_t pd);
int chpp_reg_mr(struct chpp_uctx *c, uint32_t pd, void *addr, size_t len,
		int ib_access, struct chpp_umr *mr);
int chpp_dereg_mr(struct chpp_uctx *c, struct chpp_umr *mr);
int chpp_create_channel(struct chpp_uctx *c);
int chpp_create_cq(struct chpp_uctx *c, uint32_t entries, int channel_fd,
		   struct chpp_ucq *cq);
/* Same, with the raw driver command (for tests of the kernel's checks). */
int chpp_create_cq_raw(struct chpp_uctx *c, uint32_t cqe,
		       const struct chpp_create_cq_cmd *drv, struct chpp_ucq *cq);
int chpp_destroy_cq(struct chpp_uctx *c, struct chpp_ucq *cq);
int chpp_create_qp(struct chpp_uctx *c, uint32_t pd, struct chpp_ucq *scq,
		   struct chpp_ucq *rcq, uint8_t ib_qp_type, uint32_t wrs,
		   uint32_t sges, uint32_t inline_len, struct chpp_uqp *qp);
int chpp_create_qp_raw(struct chpp_uctx *c, uint32_t pd, struct chpp_ucq *scq,
		       struct chpp_ucq *rcq, uint8_t ib_qp_type, uint32_t wrs,
		       const struct chpp_create_qp_cmd *drv, struct chpp_uqp *qp);
int chpp_destroy_qp(struct chpp_uctx *c, struct chpp_uqp *qp);
/* RESET -> INIT -> RTR -> RTS of an RC QP towards (dlid, dest qp_num). */
int chpp_connect_rc(struct chpp_uctx *c, struct chpp_uqp *qp, uint16_t dlid,
		    uint32_t dest_qp_num);
int chpp_modify_state(struct chpp_uctx *c, struct chpp_uqp *qp, int ib_state);
/* RESET -> INIT -> RTR -> RTS of a UD QP with Q_Key @qkey. */
int chpp_ready_ud(struct chpp_uctx *c, struct chpp_uqp *qp, uint32_t qkey);

/* Data path: no system calls. */
int chpp_post_send(struct chpp_uctx *c, struct chpp_uqp *qp,
		   const struct chpp_usend *wr);
int chpp_post_recv(struct chpp_uctx *c, struct chpp_uqp *qp, uint64_t wr_id,
		   const struct chpp_usge *sg, int num_sge);
/* Up to @max CQEs, in CPU byte order. */
int chpp_poll_cq(struct chpp_uctx *c, struct chpp_ucq *cq,
		 struct chpp_ucqe *out, int max);
void chpp_arm_cq(struct chpp_uctx *c, struct chpp_ucq *cq, int solicited);
/* Wait up to ms for a completion event on the CQ's channel; 0 or -errno. */
int chpp_wait_cq_event(struct chpp_ucq *cq, int ms);
/* Read one async event, waiting up to ms; element = the object's handle. */
int chpp_get_async_event(struct chpp_uctx *c, uint32_t *event,
			 uint64_t *element, int ms);

#endif /* CHPP_USER_H */
