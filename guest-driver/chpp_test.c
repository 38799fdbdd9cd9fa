// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp_test: a kernel verbs test client for chpp-hca. It uses only the kernel
 * verbs API (ib_core), never the driver's internals.
 *
 * debugfs /sys/kernel/debug/chpp_test/:
 *   ctl    write "setup"                      PD, CQs, an RC QP in INIT, buffers
 *          write "connect LID QPN RKEY ADDR"  RTR (receives posted) then RTS
 *          write "connect self"               loopback: connect to its own QP
 *          write "run"                        SEND, RDMA WRITE, RDMA READ,
 *                                             FETCH_ADD, CMP_SWAP, WRITE_WITH_IMM
 *                                             to the peer; then wait for the
 *                                             peer's SEND and WRITE_WITH_IMM and
 *                                             verify every byte the peer placed
 *          write "srq"                        (after setup) a shared receive
 *                                             queue: two QPs of this device
 *                                             each SEND to the other, both
 *                                             taking receives from one SRQ
 *          write "teardown"
 *   info   "lid=L qpn=Q rkey=0xK addr=0xA" of the local side (after setup)
 *   result the outcome of the last "run" ("PASS ..." or "FAIL ...")
 * Both sides run the same sequence, so the test is symmetric.
 *
 * slot1/ ... slot15/ hold the same three files for more independent tests
 * at once (each its own QP, CQs and buffer), e.g. one QP to each of several
 * peers (scripts/guest/fabric-init.sh); commands on different slots run
 * concurrently, those on one slot one after the other.
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/uaccess.h>
#include <rdma/ib_verbs.h>

#define BUF_SIZE	(64 * 1024)
/* Offsets in the buffer. */
#define R_SEND_SRC	0x0000	/* 3000 bytes sent with SEND */
#define R_RECV		0x1000	/* receive buffer of the peer's SEND */
#define R_WRITE		0x2000	/* the peer's RDMA WRITE lands here (10000 B) */
#define R_READSRC	0x5000	/* the peer RDMA-READs this (8000 B) */
#define R_READDST	0x7000	/* our RDMA READ result */
#define R_WIMM		0x9000	/* the peer's WRITE_WITH_IMM lands here */
#define R_WIMM_SRC	0xa000
#define R_WRITE_SRC	0xb000
#define R_ATOMIC	0xe000	/* 8-byte atomic target of the peer */
#define R_ATOMRES	0xe100	/* our atomic results */

#define LEN_SEND	3000
#define LEN_WRITE	10000
#define LEN_READ	8000
#define LEN_WIMM	4096
#define ATOM_START	1000ull
#define FA_ADD		5ull
#define CS_SWAP		77ull
#define IMM_VALUE	0xc0ffee01u
#define TIMEOUT_MS	30000
#define CT_SLOTS	16

struct ct {
	struct ib_device *ibdev;	/* ct_ibdev while set up */
	struct mutex mutex;		/* one command at a time */
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;
	u16 lid;
	bool connected;
	u16 peer_lid;
	u32 peer_qpn, peer_rkey;
	u64 peer_addr;
	wait_queue_head_t wq;
	atomic_t events;
	atomic_t comp_irqs;
	atomic_t srq_limit;
	char result[256];
};

static struct ct ct_slots[CT_SLOTS];
/* Held for reading by commands, for writing while the device comes or goes. */
static DECLARE_RWSEM(ct_dev_sem);
static struct ib_device *ct_ibdev;
static struct ib_event_handler ct_port_handler;

static char *ct_ibdev_name;
module_param_named(ibdev, ct_ibdev_name, charp, 0444);
MODULE_PARM_DESC(ibdev, "ib device to test (default: the first chpp device)");
static struct dentry *ct_dir;

static u8 pat(int kind, u16 node, u32 i)
{
	return (i * 31 + kind * 17 + node * 101) & 0xff;
}

static void fill(u8 *p, int kind, u16 node, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = pat(kind, node, i);
}

static int check(struct ct *c, const u8 *p, int kind, u16 node, u32 len, const char *what)
{
	u32 i;

	for (i = 0; i < len; i++) {
		if (p[i] != pat(kind, node, i)) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL %s: byte %u is 0x%02x, expected 0x%02x\n",
				 what, i, p[i], pat(kind, node, i));
			return -EIO;
		}
	}
	return 0;
}

static void ct_comp(struct ib_cq *cq, void *ctx)
{
	struct ct *c = ctx;

	atomic_inc(&c->comp_irqs);
	atomic_set(&c->events, 1);
	wake_up(&c->wq);
}

static void ct_event(struct ib_event *ev, void *ctx)
{
	pr_info("chpp_test: async event %s\n", ib_event_msg(ev->event));
}

/* Poll one completion, sleeping on the completion interrupt in between. */
static int ct_wait(struct ct *c, struct ib_cq *cq, struct ib_wc *wc, const char *what)
{
	unsigned long end = jiffies + msecs_to_jiffies(TIMEOUT_MS);

	for (;;) {
		long left;

		if (ib_poll_cq(cq, 1, wc) > 0)
			break;
		if (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			continue;
		left = (long)end - (long)jiffies;
		if (left <= 0) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL %s: no completion within %d ms\n", what,
				 TIMEOUT_MS);
			return -ETIMEDOUT;
		}
		wait_event_timeout(c->wq, atomic_xchg(&c->events, 0), left);
	}
	if (wc->status != IB_WC_SUCCESS) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL %s: completion status %s (vendor_err %u)\n", what,
			 ib_wc_status_msg(wc->status), wc->vendor_err);
		return -EIO;
	}
	return 0;
}

static void ct_teardown(struct ct *c)
{
	if (c->qp)
		ib_destroy_qp(c->qp);
	if (c->scq)
		ib_destroy_cq(c->scq);
	if (c->rcq)
		ib_destroy_cq(c->rcq);
	if (c->buf && c->ibdev)
		ib_dma_unmap_single(c->ibdev, c->dma, BUF_SIZE, DMA_BIDIRECTIONAL);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	kfree(c->buf);
	c->qp = NULL;
	c->scq = c->rcq = NULL;
	c->pd = NULL;
	c->buf = NULL;
	c->connected = false;
}

static int ct_setup(struct ct *c)
{
	struct ib_cq_init_attr cqa = { .cqe = 64 };
	struct ib_qp_init_attr qpa = {};
	struct ib_qp_attr a = {};
	struct ib_port_attr pa;
	int err;

	ct_teardown(c);
	c->ibdev = ct_ibdev;
	if (!c->ibdev)
		return -ENODEV;
	err = ib_query_port(c->ibdev, 1, &pa);
	if (err)
		return err;
	c->lid = pa.lid;
	c->buf = kzalloc(BUF_SIZE, GFP_KERNEL);
	if (!c->buf)
		return -ENOMEM;
	fill(c->buf + R_READSRC, 3, c->lid - 1, LEN_READ);
	*(u64 *)(c->buf + R_ATOMIC) = ATOM_START;
	c->dma = ib_dma_map_single(c->ibdev, c->buf, BUF_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->ibdev, c->dma)) {
		kfree(c->buf);
		c->buf = NULL;
		return -ENOMEM;
	}
	/* The unsafe global rkey makes the whole buffer remotely accessible. */
	c->pd = ib_alloc_pd(c->ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		goto fail;
	}
	c->scq = ib_create_cq(c->ibdev, ct_comp, NULL, c, &cqa);
	if (IS_ERR(c->scq)) {
		err = PTR_ERR(c->scq);
		c->scq = NULL;
		goto fail;
	}
	c->rcq = ib_create_cq(c->ibdev, ct_comp, NULL, c, &cqa);
	if (IS_ERR(c->rcq)) {
		err = PTR_ERR(c->rcq);
		c->rcq = NULL;
		goto fail;
	}
	qpa.event_handler = ct_event;
	qpa.send_cq = c->scq;
	qpa.recv_cq = c->rcq;
	qpa.qp_type = IB_QPT_RC;
	qpa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qpa.cap.max_send_wr = 16;
	qpa.cap.max_recv_wr = 16;
	qpa.cap.max_send_sge = 2;
	qpa.cap.max_recv_sge = 2;
	c->qp = ib_create_qp(c->pd, &qpa);
	if (IS_ERR(c->qp)) {
		err = PTR_ERR(c->qp);
		c->qp = NULL;
		goto fail;
	}
	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			    IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(c->qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		goto fail;
	pr_info("chpp_test: setup on %s: lid=%u qpn=%u rkey=0x%x addr=0x%llx\n",
		dev_name(&c->ibdev->dev), c->lid, c->qp->qp_num,
		c->pd->unsafe_global_rkey, c->dma);
	return 0;
fail:
	ct_teardown(c);
	return err;
}

static int ct_post_recv(struct ct *c, u64 off, u32 len, u64 id)
{
	struct ib_sge sge = {
		.addr = c->dma + off, .length = len, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(c->qp, &wr, NULL);
}

static int ct_connect(struct ct *c, u16 lid, u32 qpn, u32 rkey, u64 addr)
{
	struct ib_qp_attr a = {};
	int err;

	if (!c->qp)
		return -EINVAL;
	c->peer_lid = lid;
	c->peer_qpn = qpn;
	c->peer_rkey = rkey;
	c->peer_addr = addr;

	/* Receives for the peer's SEND and WRITE_WITH_IMM, before RTR. */
	err = ct_post_recv(c, R_RECV, 4096, 1);
	if (!err)
		err = ct_post_recv(c, R_WIMM, 16, 2);	/* WRITE_IMM uses no bytes */
	if (err)
		return err;

	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;	/* exercise segmentation */
	a.dest_qp_num = qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&a.ah_attr, lid);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	err = ib_modify_qp(c->qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;		/* 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;	/* infinite */
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	err = ib_modify_qp(c->qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			   IB_QP_MAX_QP_RD_ATOMIC);
	if (err)
		return err;
	c->connected = true;
	pr_info("chpp_test: connected to lid=%u qpn=%u\n", lid, qpn);
	return 0;
}

static int ct_send(struct ct *c, enum ib_wr_opcode op, u64 off, u32 len, u64 roff,
		   u64 cmp, u64 swap, const char *what)
{
	struct ib_sge sge = {
		.addr = c->dma + off, .length = len, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_atomic_wr aw = {};
	struct ib_rdma_wr rw = {};
	struct ib_send_wr *wr;
	struct ib_wc wc;
	int err;

	if (op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD) {
		aw.remote_addr = c->peer_addr + roff;
		aw.rkey = c->peer_rkey;
		aw.compare_add = cmp;
		aw.swap = swap;
		wr = &aw.wr;
	} else {
		rw.remote_addr = c->peer_addr + roff;
		rw.rkey = c->peer_rkey;
		wr = &rw.wr;
	}
	wr->wr_id = 0x1000 + op;
	wr->opcode = op;
	wr->send_flags = IB_SEND_SIGNALED;
	wr->sg_list = &sge;
	wr->num_sge = 1;
	if (op == IB_WR_RDMA_WRITE_WITH_IMM)
		wr->ex.imm_data = cpu_to_be32(IMM_VALUE);
	err = ib_post_send(c->qp, wr, NULL);
	if (err) {
		snprintf(c->result, sizeof(c->result), "FAIL %s: post_send %d\n",
			 what, err);
		return err;
	}
	err = ct_wait(c, c->scq, &wc, what);
	if (err)
		return err;
	if (wc.wr_id != 0x1000 + op) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL %s: wr_id 0x%llx, expected 0x%x\n", what, wc.wr_id,
			 0x1000 + op);
		return -EIO;
	}
	return 0;
}

static int ct_run(struct ct *c)
{
	u16 me = c->lid - 1, peer = c->peer_lid - 1;
	u64 *res = (u64 *)(c->buf + R_ATOMRES);
	struct ib_wc wc;
	int err, i;

	if (!c->connected)
		return -ENOTCONN;
	c->result[0] = 0;
	fill(c->buf + R_SEND_SRC, 1, me, LEN_SEND);
	fill(c->buf + R_WRITE_SRC, 2, me, LEN_WRITE);
	fill(c->buf + R_WIMM_SRC, 4, me, LEN_WIMM);
	memset(c->buf + R_READDST, 0, LEN_READ);
	res[0] = res[1] = ~0ull;

	err = ct_send(c, IB_WR_SEND, R_SEND_SRC, LEN_SEND, 0, 0, 0, "SEND");
	if (!err)
		err = ct_send(c, IB_WR_RDMA_WRITE, R_WRITE_SRC, LEN_WRITE, R_WRITE,
			      0, 0, "RDMA_WRITE");
	if (!err)
		err = ct_send(c, IB_WR_RDMA_READ, R_READDST, LEN_READ, R_READSRC,
			      0, 0, "RDMA_READ");
	if (!err)
		err = check(c, c->buf + R_READDST, 3, peer, LEN_READ,
			    "RDMA_READ data");
	if (!err)
		err = ct_send(c, IB_WR_ATOMIC_FETCH_AND_ADD, R_ATOMRES, 8,
			      R_ATOMIC, FA_ADD, 0, "FETCH_ADD");
	if (!err)
		err = ct_send(c, IB_WR_ATOMIC_CMP_AND_SWP, R_ATOMRES + 8, 8,
			      R_ATOMIC, ATOM_START + FA_ADD, CS_SWAP, "CMP_SWAP");
	if (!err && (res[0] != ATOM_START || res[1] != ATOM_START + FA_ADD)) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL atomics returned %llu and %llu, expected %llu and %llu\n",
			 res[0], res[1], ATOM_START, ATOM_START + FA_ADD);
		err = -EIO;
	}
	/* Last: it tells the peer that all our operations are done. */
	if (!err)
		err = ct_send(c, IB_WR_RDMA_WRITE_WITH_IMM, R_WIMM_SRC, LEN_WIMM,
			      R_WIMM, 0, 0, "RDMA_WRITE_WITH_IMM");
	if (err)
		goto out;

	/* The peer's SEND, then its WRITE_WITH_IMM. */
	for (i = 1; i <= 2 && !err; i++) {
		err = ct_wait(c, c->rcq, &wc, i == 1 ? "RECV of the peer's SEND" :
						   "RECV of the peer's WRITE_WITH_IMM");
		if (err)
			break;
		if (wc.wr_id != i) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL receive %d: wr_id %llu\n", i, wc.wr_id);
			err = -EIO;
		} else if (i == 1 && (wc.opcode != IB_WC_RECV ||
				      wc.byte_len != LEN_SEND)) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL RECV: opcode %d byte_len %u\n", wc.opcode,
				 wc.byte_len);
			err = -EIO;
		} else if (i == 2 && (wc.opcode != IB_WC_RECV_RDMA_WITH_IMM ||
				      !(wc.wc_flags & IB_WC_WITH_IMM) ||
				      be32_to_cpu(wc.ex.imm_data) != IMM_VALUE ||
				      wc.byte_len != LEN_WIMM)) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL RECV_RDMA_WITH_IMM: opcode %d flags 0x%x imm 0x%x len %u\n",
				 wc.opcode, wc.wc_flags,
				 be32_to_cpu(wc.ex.imm_data), wc.byte_len);
			err = -EIO;
		}
	}
	if (!err)
		err = check(c, c->buf + R_RECV, 1, peer, LEN_SEND, "received SEND data");
	if (!err)
		err = check(c, c->buf + R_WRITE, 2, peer, LEN_WRITE, "RDMA_WRITE data");
	if (!err)
		err = check(c, c->buf + R_WIMM, 4, peer, LEN_WIMM,
			    "RDMA_WRITE_WITH_IMM data");
	if (!err && *(u64 *)(c->buf + R_ATOMIC) != CS_SWAP) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL atomic target is %llu, expected %llu\n",
			 *(u64 *)(c->buf + R_ATOMIC), CS_SWAP);
		err = -EIO;
	}
out:
	if (!err)
		snprintf(c->result, sizeof(c->result),
			 "PASS LID %u <-> LID %u: SEND %u B, RDMA_WRITE %u B, RDMA_READ %u B, FETCH_ADD, CMP_SWAP, WRITE_WITH_IMM %u B both ways, bytes verified (%d completion interrupts)\n",
			 c->lid, c->peer_lid, LEN_SEND, LEN_WRITE, LEN_READ, LEN_WIMM,
			 atomic_read(&c->comp_irqs));
	pr_info("chpp_test: %s", c->result);
	return err;
}

/*
 * Kernel verbs on a shared receive queue (docs/shared-receive-queues.md):
 * QPs a and b of this device, connected to each other, both on one SRQ.
 * Four receives are posted to the SRQ; a, b, a, b SEND in turn, and each
 * message lands in the next receive, in posting order, whichever QP it is
 * for. Then the SRQ limit event, armed at 2 with 2 receives left, comes
 * with the next message. Uses the buffers of "setup".
 */
#define SRQ_MSGS	4
#define SRQ_LEN		2000
/* The buffers of RDMA_WRITE and of its source: "run" is done with them. */
#define R_SRQ_SRC	R_WRITE
#define R_SRQ_DST	R_WRITE_SRC

static void ct_srq_event(struct ib_event *ev, void *ctx)
{
	struct ct *c = ctx;

	pr_info("chpp_test: SRQ async event %s\n", ib_event_msg(ev->event));
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&c->srq_limit);
}

static int ct_srq_qp(struct ct *c, struct ib_srq *srq, struct ib_qp **qp)
{
	struct ib_qp_init_attr qpa = {
		.event_handler = ct_event,
		.send_cq = c->scq, .recv_cq = c->rcq, .srq = srq,
		.qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE,
	};

	*qp = ib_create_qp(c->pd, &qpa);
	if (IS_ERR(*qp)) {
		int err = PTR_ERR(*qp);

		*qp = NULL;
		return err;
	}
	return ib_modify_qp(*qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

static int ct_srq_connect(struct ct *c, struct ib_qp *qp, u32 dest)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_RTR, .path_mtu = IB_MTU_1024,
		.dest_qp_num = dest, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
	};
	int err;

	a.ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&a.ah_attr, c->lid);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static int ct_srq_run(struct ct *c, struct ib_srq *srq, struct ib_qp *qp[2])
{
	struct ib_srq_attr sa = { .srq_limit = 2 };
	struct ib_wc wc;
	int err, i;

	for (i = 0; i < SRQ_MSGS; i++) {
		struct ib_sge sge = {
			.addr = c->dma + R_SRQ_DST + i * SRQ_LEN,
			.length = SRQ_LEN, .lkey = c->pd->local_dma_lkey,
		};
		struct ib_recv_wr wr = {
			.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1,
		};

		err = ib_post_srq_recv(srq, &wr, NULL);
		if (err) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL SRQ: post_srq_recv %d\n", err);
			return err;
		}
	}
	err = ib_modify_srq(srq, &sa, IB_SRQ_LIMIT);
	if (err) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL SRQ: arming the limit: %d\n", err);
		return err;
	}
	for (i = 0; i < SRQ_MSGS; i++) {
		struct ib_sge sge = {
			.addr = c->dma + R_SRQ_SRC + i * SRQ_LEN,
			.length = SRQ_LEN, .lkey = c->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_id = 200 + i, .opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED, .sg_list = &sge,
			.num_sge = 1,
		};

		fill(c->buf + R_SRQ_SRC + i * SRQ_LEN, 5 + i, c->lid, SRQ_LEN);
		err = ib_post_send(qp[i & 1], &wr, NULL);
		if (!err)
			err = ct_wait(c, c->scq, &wc, "SRQ: SEND");
		if (!err)
			err = ct_wait(c, c->rcq, &wc, "SRQ: RECV");
		if (err)
			return err;
		if (wc.wr_id != 100 + i || wc.qp != qp[!(i & 1)] ||
		    wc.byte_len != SRQ_LEN) {
			snprintf(c->result, sizeof(c->result),
				 "FAIL SRQ receive %d: wr_id %llu on QP %u, %u B\n",
				 i, wc.wr_id, wc.qp->qp_num, wc.byte_len);
			return -EIO;
		}
		err = check(c, c->buf + R_SRQ_DST + i * SRQ_LEN, 5 + i, c->lid,
			    SRQ_LEN, "SRQ receive data");
		if (err)
			return err;
	}
	/* 2 left after the second, 1 after the third: the event came once. */
	if (atomic_read(&c->srq_limit) != 1) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL SRQ: %d limit events, expected 1\n",
			 atomic_read(&c->srq_limit));
		return -EIO;
	}
	return 0;
}

static int ct_srq(struct ct *c)
{
	struct ib_srq_init_attr sia = {
		.event_handler = ct_srq_event,
		.srq_context = c,
		.attr = { .max_wr = SRQ_MSGS, .max_sge = 1 },
	};
	struct ib_qp *qp[2] = {};
	struct ib_srq *srq;
	int err, i;

	if (!c->pd)
		return -EINVAL;
	atomic_set(&c->srq_limit, 0);
	srq = ib_create_srq(c->pd, &sia);
	if (IS_ERR(srq)) {
		snprintf(c->result, sizeof(c->result),
			 "FAIL SRQ: create_srq %ld\n", PTR_ERR(srq));
		return PTR_ERR(srq);
	}
	err = ct_srq_qp(c, srq, &qp[0]);
	if (!err)
		err = ct_srq_qp(c, srq, &qp[1]);
	if (!err)
		err = ct_srq_connect(c, qp[0], qp[1]->qp_num);
	if (!err)
		err = ct_srq_connect(c, qp[1], qp[0]->qp_num);
	if (err && !c->result[0])
		snprintf(c->result, sizeof(c->result),
			 "FAIL SRQ: QPs on the SRQ: %d\n", err);
	if (!err)
		err = ct_srq_run(c, srq, qp);
	for (i = 0; i < 2; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	ib_destroy_srq(srq);
	if (!err)
		snprintf(c->result, sizeof(c->result),
			 "PASS SRQ: %d SENDs from 2 QPs into one SRQ, receives in posting order, bytes verified, limit event\n",
			 SRQ_MSGS);
	pr_info("chpp_test: %s", c->result);
	return err;
}

/*
 * RDMA writes of 4 KiB to the peer, one at a time, for @secs seconds or until
 * one completes in error (a link cut, fault injection): the result says how
 * many completed and the first error status.
 */
static int ct_stream(struct ct *c, unsigned int secs)
{
	unsigned long end = jiffies + secs * HZ;
	enum ib_wc_status st = IB_WC_SUCCESS;
	struct ib_sge sge = {
		.addr = c->dma + R_WRITE_SRC, .length = 4096,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_rdma_wr rw = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.send_flags = IB_SEND_SIGNALED,
		.wr.sg_list = &sge,
		.wr.num_sge = 1,
		.remote_addr = c->peer_addr + R_WRITE,
		.rkey = c->peer_rkey,
	};
	struct ib_wc wc;
	u32 ok = 0;
	int err = 0;

	if (!c->connected)
		return -ENOTCONN;
	while (time_before(jiffies, end)) {
		rw.wr.wr_id = ok;
		err = ib_post_send(c->qp, &rw.wr, NULL);
		if (err)
			break;
		err = ct_wait(c, c->scq, &wc, "stream");
		if (err) {
			if (err == -EIO)
				st = wc.status;
			break;
		}
		ok++;
	}
	snprintf(c->result, sizeof(c->result), "STREAM ok=%u status=%s err=%d\n",
		 ok, ib_wc_status_msg(st), err);
	pr_info("chpp_test: %s", c->result);
	return 0;
}

static ssize_t ct_ctl_write(struct file *f, const char __user *ubuf,
			    size_t len, loff_t *pos)
{
	struct ct *c = file_inode(f)->i_private;
	char cmd[128];
	unsigned int lid, qpn, rkey, secs;
	unsigned long long addr;
	int err;

	if (len >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, len))
		return -EFAULT;
	cmd[len] = 0;
	strim(cmd);
	down_read(&ct_dev_sem);
	mutex_lock(&c->mutex);
	if (!strcmp(cmd, "setup")) {
		err = ct_setup(c);
	} else if (!strcmp(cmd, "connect self")) {
		err = c->qp ? ct_connect(c, c->lid, c->qp->qp_num,
					 c->pd->unsafe_global_rkey, c->dma) : -EINVAL;
	} else if (sscanf(cmd, "connect %u %u %x %llx", &lid, &qpn, &rkey,
			  &addr) == 4) {
		err = ct_connect(c, lid, qpn, rkey, addr);
	} else if (!strcmp(cmd, "run")) {
		err = ct_run(c);
	} else if (!strcmp(cmd, "srq")) {
		c->result[0] = 0;
		err = ct_srq(c);
	} else if (sscanf(cmd, "stream %u", &secs) == 1) {
		err = ct_stream(c, secs);
	} else if (!strcmp(cmd, "teardown")) {
		ct_teardown(c);
		err = 0;
	} else {
		err = -EINVAL;
	}
	mutex_unlock(&c->mutex);
	up_read(&ct_dev_sem);
	if (err)
		pr_err("chpp_test: slot %td: '%s' failed: %d\n", c - ct_slots,
		       cmd, err);
	return err ? err : len;
}

static ssize_t ct_info_read(struct file *f, char __user *ubuf, size_t len,
			    loff_t *pos)
{
	struct ct *c = file_inode(f)->i_private;
	char s[128];
	int n = 0;

	mutex_lock(&c->mutex);
	if (c->qp)
		n = scnprintf(s, sizeof(s), "lid=%u qpn=%u rkey=0x%x addr=0x%llx\n",
			      c->lid, c->qp->qp_num, c->pd->unsafe_global_rkey,
			      c->dma);
	mutex_unlock(&c->mutex);
	return simple_read_from_buffer(ubuf, len, pos, s, n);
}

static ssize_t ct_result_read(struct file *f, char __user *ubuf, size_t len,
			      loff_t *pos)
{
	struct ct *c = file_inode(f)->i_private;
	ssize_t r;

	mutex_lock(&c->mutex);
	r = simple_read_from_buffer(ubuf, len, pos, c->result,
				    strlen(c->result));
	mutex_unlock(&c->mutex);
	return r;
}

static const struct file_operations ct_ctl_fops = {
	.owner = THIS_MODULE,
	.write = ct_ctl_write,
};

static const struct file_operations ct_info_fops = {
	.owner = THIS_MODULE,
	.read = ct_info_read,
};

static const struct file_operations ct_result_fops = {
	.owner = THIS_MODULE,
	.read = ct_result_read,
};

/* Port events as ib_core delivers them to any client. */
static void ct_port_event(struct ib_event_handler *h, struct ib_event *ev)
{
	if (ev->event == IB_EVENT_PORT_ACTIVE || ev->event == IB_EVENT_PORT_ERR)
		pr_info("chpp_test: %s: %s\n", dev_name(&ev->device->dev),
			ib_event_msg(ev->event));
}

static int ct_add(struct ib_device *ibdev)
{
	if (strncmp(dev_name(&ibdev->dev), "chpp", 4) ||
	    (ct_ibdev_name && *ct_ibdev_name &&
	     strcmp(dev_name(&ibdev->dev), ct_ibdev_name)))
		return -EOPNOTSUPP;
	down_write(&ct_dev_sem);
	if (!ct_ibdev) {
		ct_ibdev = ibdev;
		INIT_IB_EVENT_HANDLER(&ct_port_handler, ibdev, ct_port_event);
		ib_register_event_handler(&ct_port_handler);
	}
	up_write(&ct_dev_sem);
	return 0;
}

static void ct_remove(struct ib_device *ibdev, void *data)
{
	int i;

	down_write(&ct_dev_sem);
	if (ct_ibdev == ibdev) {
		for (i = 0; i < CT_SLOTS; i++)
			if (ct_slots[i].ibdev == ibdev)
				ct_teardown(&ct_slots[i]);
		ib_unregister_event_handler(&ct_port_handler);
		ct_ibdev = NULL;
	}
	up_write(&ct_dev_sem);
}

static struct ib_client ct_client = {
	.name = "chpp_test",
	.add = ct_add,
	.remove = ct_remove,
};

static int __init ct_init(void)
{
	struct dentry *dir;
	char name[16];
	int err, i;

	ct_dir = debugfs_create_dir("chpp_test", NULL);
	for (i = 0; i < CT_SLOTS; i++) {
		struct ct *c = &ct_slots[i];

		mutex_init(&c->mutex);
		init_waitqueue_head(&c->wq);
		dir = ct_dir;
		if (i) {
			snprintf(name, sizeof(name), "slot%d", i);
			dir = debugfs_create_dir(name, ct_dir);
		}
		debugfs_create_file("ctl", 0200, dir, c, &ct_ctl_fops);
		debugfs_create_file("info", 0444, dir, c, &ct_info_fops);
		debugfs_create_file("result", 0444, dir, c, &ct_result_fops);
	}
	err = ib_register_client(&ct_client);
	if (err)
		debugfs_remove_recursive(ct_dir);
	return err;
}

static void __exit ct_exit(void)
{
	debugfs_remove_recursive(ct_dir);
	ib_unregister_client(&ct_client);
}

module_init(ct_init);
module_exit(ct_exit);
MODULE_DESCRIPTION("chpp-hca kernel verbs test client");
MODULE_LICENSE("GPL");
