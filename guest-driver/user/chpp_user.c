// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * libchpp-user: see chpp_user.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include "chpp_user.h"

/*
 * One legacy uverbs write() command: header, core request, driver request;
 * the kernel writes the core response then the driver response at *resp.
 */
static int uv_cmd(int fd, uint32_t command, void *req, size_t in_len,
		  size_t out_len)
{
	struct ib_uverbs_cmd_hdr *h = req;
	ssize_t r;

	h->command = command;
	h->in_words = in_len / 4;
	h->out_words = out_len / 4;
	r = write(fd, req, in_len);
	if (r == (ssize_t)in_len)
		return 0;
	return r < 0 ? -errno : -EIO;
}

#define UV_RESP(p) ((uint64_t)(uintptr_t)(p))

int chpp_open(struct chpp_uctx *c, const char *dev)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
	} req = {};
	struct {
		struct ib_uverbs_get_context_resp core;
		struct chpp_alloc_ucontext_resp drv;
	} resp = {};
	void *uar;
	int err;

	memset(c, 0, sizeof(*c));
	c->fd = open(dev, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	req.core.response = UV_RESP(&resp);
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req, sizeof(req),
		     sizeof(resp));
	if (err)
		goto fail;
	c->async_fd = resp.core.async_fd;
	c->info = resp.drv;
	if (c->info.abi_version != CHPP_UVERBS_ABI_VERSION) {
		err = -EPROTO;
		goto fail;
	}
	uar = mmap(NULL, CHPP_UAR_PAGE_SIZE, PROT_WRITE, MAP_SHARED, c->fd,
		   c->info.uar_mmap_offset);
	if (uar == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	c->uar = uar;
	return 0;
fail:
	close(c->fd);
	c->fd = -1;
	return err;
}

void chpp_close(struct chpp_uctx *c)
{
	if (c->uar)
		munmap(c->uar, CHPP_UAR_PAGE_SIZE);
	close(c->async_fd);
	close(c->fd);
	c->fd = -1;
}

int chpp_query_port_lid(struct chpp_uctx *c, uint16_t *lid, uint8_t *state)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_query_port core;
	} req = {};
	struct ib_uverbs_query_port_resp resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.port_num = 1;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_QUERY_PORT, &req, sizeof(req),
		     sizeof(resp));
	if (err)
		return err;
	*lid = resp.lid;
	*state = resp.state;
	return 0;
}

int chpp_alloc_pd(struct chpp_uctx *c, uint32_t *pd)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd core;
	} req = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_ALLOC_PD, &req, sizeof(req),
		     sizeof(resp));
	if (!err)
		*pd = resp.pd_handle;
	return err;
}

int chpp_dealloc_pd(struct chpp_uctx *c, uint32_t pd)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_dealloc_pd core;
	} req = { .core.pd_handle = pd };

	return uv_cmd(c->fd, IB_USER_VERBS_CMD_DEALLOC_PD, &req, sizeof(req), 0);
}

int chpp_reg_mr(struct chpp_uctx *c, uint32_t pd, void *addr, size_t len,
		int ib_access, struct chpp_umr *mr)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_reg_mr core;
	} req = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.start = (uintptr_t)addr;
	req.core.length = len;
	req.core.hca_va = (uintptr_t)addr;
	req.core.pd_handle = pd;
	req.core.access_flags = ib_access;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_REG_MR, &req, sizeof(req),
		     sizeof(resp));
	if (err)
		return err;
	mr->handle = resp.mr_handle;
	mr->lkey = resp.lkey;
	mr->rkey = resp.rkey;
	return 0;
}

int chpp_dereg_mr(struct chpp_uctx *c, struct chpp_umr *mr)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_dereg_mr core;
	} req = { .core.mr_handle = mr->handle };

	return uv_cmd(c->fd, IB_USER_VERBS_CMD_DEREG_MR, &req, sizeof(req), 0);
}

int chpp_create_channel(struct chpp_uctx *c)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_comp_channel core;
	} req = {};
	struct ib_uverbs_create_comp_channel_resp resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &req,
		     sizeof(req), sizeof(resp));
	return err ? err : (int)resp.fd;
}

int chpp_create_cq_raw(struct chpp_uctx *c, uint32_t cqe,
		       const struct chpp_create_cq_cmd *drv, struct chpp_ucq *cq)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq core;
		struct chpp_create_cq_cmd drv;
	} req = {};
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct chpp_create_cq_resp drv;
	} resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.user_handle = (uintptr_t)cq;
	req.core.cqe = cqe;
	req.core.comp_channel = cq->channel_fd;
	req.drv = *drv;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, sizeof(req),
		     sizeof(resp));
	if (err)
		return err;
	cq->handle = resp.core.cq_handle;
	cq->cqn = resp.drv.cqn;
	cq->n = resp.drv.entries;
	cq->ci = 0;
	return 0;
}

int chpp_create_cq(struct chpp_uctx *c, uint32_t entries, int channel_fd,
		   struct chpp_ucq *cq)
{
	struct chpp_create_cq_cmd drv = { .entries = entries };
	int err;

	memset(cq, 0, sizeof(*cq));
	cq->channel_fd = channel_fd;
	cq->ring = chpp_ring_alloc((size_t)entries * CHPP_CQE_SIZE);
	if (!cq->ring)
		return -ENOMEM;
	drv.buf_addr = (uintptr_t)cq->ring;
	err = chpp_create_cq_raw(c, entries, &drv, cq);
	if (err) {
		free(cq->ring);
		cq->ring = NULL;
	}
	return err;
}

int chpp_destroy_cq(struct chpp_uctx *c, struct chpp_ucq *cq)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_cq core;
	} req = {};
	struct ib_uverbs_destroy_cq_resp resp;
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.cq_handle = cq->handle;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_DESTROY_CQ, &req, sizeof(req),
		     sizeof(resp));
	if (!err) {
		free(cq->ring);
		cq->ring = NULL;
	}
	return err;
}

int chpp_create_qp_raw(struct chpp_uctx *c, uint32_t pd, struct chpp_ucq *scq,
		       struct chpp_ucq *rcq, uint8_t ib_qp_type, uint32_t wrs,
		       const struct chpp_create_qp_cmd *drv, struct chpp_uqp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp core;
		struct chpp_create_qp_cmd drv;
	} req = {};
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct chpp_create_qp_resp drv;
	} resp = {};
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.user_handle = (uintptr_t)qp;
	req.core.pd_handle = pd;
	req.core.send_cq_handle = scq->handle;
	req.core.recv_cq_handle = rcq->handle;
	req.core.max_send_wr = wrs;
	req.core.max_recv_wr = wrs;
	req.core.max_send_sge = 1;
	req.core.max_recv_sge = 1;
	req.core.qp_type = ib_qp_type;
	req.drv = *drv;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
		     sizeof(resp));
	if (err)
		return err;
	qp->handle = resp.core.qp_handle;
	qp->qp_num = resp.core.qpn;
	qp->qpn = resp.drv.qpn;
	qp->max_send_sge = resp.core.max_send_sge;
	qp->max_inline = resp.core.max_inline_data;
	return 0;
}

int chpp_create_qp(struct chpp_uctx *c, uint32_t pd, struct chpp_ucq *scq,
		   struct chpp_ucq *rcq, uint8_t ib_qp_type, uint32_t wrs,
		   uint32_t sges, uint32_t inline_len, struct chpp_uqp *qp)
{
	struct chpp_create_qp_cmd drv = {};
	uint32_t sq_bytes, rq_bytes;
	int err;

	if (ib_qp_type != CHPP_IB_QPT_RC && ib_qp_type != CHPP_IB_QPT_UD)
		return -EOPNOTSUPP;
	memset(qp, 0, sizeof(*qp));
	qp->type = ib_qp_type == CHPP_IB_QPT_UD ? CHPP_QPT_UD : CHPP_QPT_RC;
	sq_bytes = chpp_sq_wqe_bytes(qp->type, sges, inline_len);
	rq_bytes = chpp_rq_wqe_bytes(sges);
	qp->sq.n = 1u << chpp_log2_up(wrs);
	qp->sq.shift = chpp_wqe_shift(sq_bytes);
	qp->rq.n = qp->sq.n;
	qp->rq.shift = chpp_wqe_shift(rq_bytes);
	qp->sq.ring = chpp_ring_alloc((size_t)qp->sq.n << qp->sq.shift);
	qp->rq.ring = chpp_ring_alloc((size_t)qp->rq.n << qp->rq.shift);
	if (!qp->sq.ring || !qp->rq.ring) {
		err = -ENOMEM;
		goto fail;
	}
	drv.sq_buf_addr = (uintptr_t)qp->sq.ring;
	drv.rq_buf_addr = (uintptr_t)qp->rq.ring;
	drv.log_sq_size = chpp_log2_up(qp->sq.n);
	drv.log_sq_stride = qp->sq.shift;
	drv.log_rq_size = chpp_log2_up(qp->rq.n);
	drv.log_rq_stride = qp->rq.shift;
	err = chpp_create_qp_raw(c, pd, scq, rcq, ib_qp_type, wrs, &drv, qp);
	if (!err)
		return 0;
fail:
	free(qp->sq.ring);
	free(qp->rq.ring);
	qp->sq.ring = qp->rq.ring = NULL;
	return err;
}

int chpp_destroy_qp(struct chpp_uctx *c, struct chpp_uqp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp core;
	} req = {};
	struct ib_uverbs_destroy_qp_resp resp;
	int err;

	req.core.response = UV_RESP(&resp);
	req.core.qp_handle = qp->handle;
	err = uv_cmd(c->fd, IB_USER_VERBS_CMD_DESTROY_QP, &req, sizeof(req),
		     sizeof(resp));
	if (!err) {
		free(qp->sq.ring);
		free(qp->rq.ring);
		qp->sq.ring = qp->rq.ring = NULL;
	}
	return err;
}

static int modify(struct chpp_uctx *c, struct ib_uverbs_modify_qp *m)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_modify_qp core;
	} req = { .core = *m };

	return uv_cmd(c->fd, IB_USER_VERBS_CMD_MODIFY_QP, &req, sizeof(req), 0);
}

int chpp_modify_state(struct chpp_uctx *c, struct chpp_uqp *qp, int ib_state)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = qp->handle,
		.attr_mask = CHPP_IB_QP_STATE,
		.qp_state = ib_state,
	};

	return modify(c, &m);
}

int chpp_connect_rc(struct chpp_uctx *c, struct chpp_uqp *qp, uint16_t dlid,
		    uint32_t dest_qp_num)
{
	struct ib_uverbs_modify_qp m = { .qp_handle = qp->handle };
	int err;

	m.attr_mask = CHPP_IB_QP_STATE | CHPP_IB_QP_PKEY_INDEX |
		      CHPP_IB_QP_PORT | CHPP_IB_QP_ACCESS_FLAGS;
	m.qp_state = CHPP_IB_QPS_INIT;
	m.port_num = 1;
	m.qp_access_flags = CHPP_IB_ACCESS_LOCAL_WRITE |
			    CHPP_IB_ACCESS_REMOTE_WRITE |
			    CHPP_IB_ACCESS_REMOTE_READ |
			    CHPP_IB_ACCESS_REMOTE_ATOMIC;
	err = modify(c, &m);
	if (err)
		return err;

	memset(&m, 0, sizeof(m));
	m.qp_handle = qp->handle;
	m.attr_mask = CHPP_IB_QP_STATE | CHPP_IB_QP_AV | CHPP_IB_QP_PATH_MTU |
		      CHPP_IB_QP_DEST_QPN | CHPP_IB_QP_RQ_PSN |
		      CHPP_IB_QP_MAX_DEST_RD_ATOMIC | CHPP_IB_QP_MIN_RNR_TIMER;
	m.qp_state = CHPP_IB_QPS_RTR;
	m.dest.dlid = dlid;
	m.dest.port_num = 1;
	m.path_mtu = CHPP_IB_MTU_4096;
	m.dest_qp_num = dest_qp_num;
	m.rq_psn = 0;
	m.max_dest_rd_atomic = 4;
	m.min_rnr_timer = 1;
	err = modify(c, &m);
	if (err)
		return err;

	memset(&m, 0, sizeof(m));
	m.qp_handle = qp->handle;
	m.attr_mask = CHPP_IB_QP_STATE | CHPP_IB_QP_TIMEOUT |
		      CHPP_IB_QP_RETRY_CNT | CHPP_IB_QP_RNR_RETRY |
		      CHPP_IB_QP_SQ_PSN | CHPP_IB_QP_MAX_QP_RD_ATOMIC;
	m.qp_state = CHPP_IB_QPS_RTS;
	/* 4.096 us * 2^18 = 1.07 s, 7 retries: a peer may connect seconds later. */
	m.timeout = 18;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.sq_psn = 0;
	m.max_rd_atomic = 4;
	return modify(c, &m);
}

int chpp_ready_ud(struct chpp_uctx *c, struct chpp_uqp *qp, uint32_t qkey)
{
	struct ib_uverbs_modify_qp m = { .qp_handle = qp->handle };
	int err;

	m.attr_mask = CHPP_IB_QP_STATE | CHPP_IB_QP_PKEY_INDEX |
		      CHPP_IB_QP_PORT | CHPP_IB_QP_QKEY;
	m.qp_state = CHPP_IB_QPS_INIT;
	m.port_num = 1;
	m.qkey = qkey;
	err = modify(c, &m);
	if (!err)
		err = chpp_modify_state(c, qp, CHPP_IB_QPS_RTR);
	if (err)
		return err;
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp->handle;
	m.attr_mask = CHPP_IB_QP_STATE | CHPP_IB_QP_SQ_PSN;
	m.qp_state = CHPP_IB_QPS_RTS;
	return modify(c, &m);
}

/* The caller's wr_id goes to the WQE as is: the CQE gives it back. */
int chpp_post_send(struct chpp_uctx *c, struct chpp_uqp *qp,
		   const struct chpp_usend *wr)
{
	int err = chpp_write_send_wqe(&qp->sq, qp->type, c->info.qpn_bits, wr,
				      wr->wr_id);

	if (err)
		return err;
	qp->sq.head++;
	chpp_ring_sq(c->uar, qp->qpn, qp->sq.head);
	return 0;
}

int chpp_post_recv(struct chpp_uctx *c, struct chpp_uqp *qp, uint64_t wr_id,
		   const struct chpp_usge *sg, int num_sge)
{
	int err = chpp_write_recv_wqe(&qp->rq, wr_id, sg, num_sge);

	if (err)
		return err;
	qp->rq.head++;
	chpp_ring_rq(c->uar, qp->qpn, qp->rq.head);
	return 0;
}

int chpp_poll_cq(struct chpp_uctx *c, struct chpp_ucq *cq,
		 struct chpp_ucqe *out, int max)
{
	const struct chpp_cqe *e;
	int n = 0;

	while (n < max && (e = chpp_cqe_at(cq->ring, cq->n, cq->ci))) {
		chpp_cqe_read(e, &out[n]);
		cq->ci++;
		n++;
	}
	if (n)
		chpp_ring_cq(c->uar, cq->cqn, CHPP_CQ_DB_SET_CI, cq->ci);
	return n;
}

void chpp_arm_cq(struct chpp_uctx *c, struct chpp_ucq *cq, int solicited)
{
	chpp_ring_cq(c->uar, cq->cqn,
		     solicited ? CHPP_CQ_DB_ARM_SOL : CHPP_CQ_DB_ARM_NEXT, cq->ci);
}

int chpp_wait_cq_event(struct chpp_ucq *cq, int ms)
{
	struct pollfd pfd = { .fd = cq->channel_fd, .events = POLLIN };
	struct ib_uverbs_comp_event_desc ev;
	int r = poll(&pfd, 1, ms);

	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (read(cq->channel_fd, &ev, sizeof(ev)) != sizeof(ev))
		return -EIO;
	return ev.cq_handle == (uintptr_t)cq ? 0 : -EBADMSG;
}

int chpp_get_async_event(struct chpp_uctx *c, uint32_t *event,
			 uint64_t *element, int ms)
{
	struct pollfd pfd = { .fd = c->async_fd, .events = POLLIN };
	struct ib_uverbs_async_event_desc ev;
	int r = poll(&pfd, 1, ms);

	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (read(c->async_fd, &ev, sizeof(ev)) != sizeof(ev))
		return -EIO;
	*event = ev.event_type;
	*element = ev.element;
	return 0;
}
