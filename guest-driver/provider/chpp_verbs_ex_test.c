// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-verbs-ex-test: the extended verbs of the chpp-hca provider, through
 * the standard API only, on one device in loopback:
 *  - ibv_query_device_ex: the base attributes are ibv_query_device's, and
 *    every extended capability the device lacks (ODP, timestamps, TSO, RSS,
 *    WQs, tag matching, CQ moderation, device memory, PCI atomics) is 0;
 *  - ibv_create_cq_ex: the wc_flags, comp_mask bits and flags it refuses
 *    (EOPNOTSUPP) or accepts, and which ibv_wc_read_* accessors it sets;
 *  - ibv_create_qp_ex: the send_ops_flags and attributes it refuses, and
 *    ibv_qp_to_qp_ex() of extended and plain QPs;
 *  - every ibv_wr_* operation on RC (SEND with a gather list, SEND_IMM,
 *    inline data and inline lists, RDMA WRITE, WRITE_IMM, READ, both
 *    atomics), UC and UD (ibv_wr_set_ud_addr before or after the data),
 *    bytes checked and completions read with ibv_start_poll/ibv_next_poll/
 *    ibv_end_poll and every accessor; a batch of 16 in one critical region
 *    read as one poll batch; ibv_post_send and ibv_poll_cq mixed in;
 *  - ibv_wr_complete's refusals (unsupported operations, bad setters, a
 *    full SQ, RESET), each discarding the whole batch, and ibv_wr_abort;
 *  - 600 WRITEs through a 32-deep SQ in batches, a full SQ refusing a batch
 *    (ENOMEM) that is posted again after polling;
 *  - a completion channel on an extended CQ.
 *
 *   chpp-verbs-ex-test [-d ibdev]
 *   chpp-verbs-ex-test [-d ibdev] --pair MINE PEER
 *
 * --pair: an extended RC QP and extended CQs against the same program on
 * another node: every RC operation through ibv_wr_*, both ways at once,
 * the peer's bytes and completions checked through the poll API. The
 * rendezvous is chpp-verbs-test's (chpp_pairfile.h).
 *
 * Prints "chpp-verbs-ex: PASS <n> checks" and exits 0, or "chpp-verbs-ex:
 * FAIL ..." and exits 1. docs/verbs-provider.md#extended-verbs.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "hw/chpp/chpp-hca-abi.h"
#include "chppdv.h"
#include "chpp_pairfile.h"

#define BUF_SIZE	(2u << 20)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define QKEY		0x11111111u
#define RC_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;
static uint16_t lid;
static uint16_t dlid;		/* where connect_rc points: lid, or the peer */
static int wc_wait_ms = 5000;
static int ack_timeout = 14;	/* 4.096 us << 14 = 67 ms, 7 retries */
static int checks;

static _Noreturn void fail(int line, const char *fmt, ...)
{
	va_list ap;

	printf("chpp-verbs-ex: FAIL (line %d) ", line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

#define CHECK(cond, ...) do {				\
		if (!(cond))				\
			fail(__LINE__, __VA_ARGS__);	\
		checks++;				\
	} while (0)

static uint8_t *at(uint32_t off)
{
	return buf + off;
}

static uint64_t addr(uint32_t off)
{
	return (uintptr_t)at(off);
}

static struct ibv_sge sge(uint32_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = addr(off), .length = len,
			     .lkey = mr->lkey };

	return s;
}

static void pattern(uint32_t off, uint32_t len, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[off + i] = (uint8_t)(seed + i * 7);
}

/* Bytes [off, off + len) hold the pattern of @seed from its byte @from. */
static int pattern_from(uint32_t off, uint32_t len, uint8_t seed,
			uint32_t from)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (buf[off + i] != (uint8_t)(seed + (from + i) * 7))
			return 0;
	return 1;
}

static int same_pattern(uint32_t off, uint32_t len, uint8_t seed)
{
	return pattern_from(off, len, seed, 0);
}

/* A completion as the poll API's accessors give it. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, qp_num, src_qp, slid;
	unsigned int wc_flags;
	uint32_t imm;			/* be32toh() of the immediate */
	uint8_t sl, path_bits;
};

/* The current completion of a CQ made with IBV_WC_STANDARD_FLAGS. */
static void xwc_read(struct ibv_cq_ex *cq, struct xwc *w)
{
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->slid = ibv_wc_read_slid(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->imm = be32toh(ibv_wc_read_imm_data(cq));
	w->sl = ibv_wc_read_sl(cq);
	w->path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/* One completion within ms milliseconds (a batch of one), or 0. */
static int xpoll(struct ibv_cq_ex *cq, struct xwc *w, int ms)
{
	struct ibv_poll_cq_attr a = {};
	int i, err;

	for (i = 0; i <= ms * 10; i++) {
		err = ibv_start_poll(cq, &a);
		if (!err) {
			xwc_read(cq, w);
			ibv_end_poll(cq);
			return 1;
		}
		if (err != ENOENT)
			fail(__LINE__, "ibv_start_poll: %s", strerror(err));
		usleep(100);
	}
	return 0;
}

static struct xwc xexpect(struct ibv_cq_ex *cq, uint64_t wr_id,
			  enum ibv_wc_status status, enum ibv_wc_opcode op,
			  const char *what)
{
	struct xwc w;

	CHECK(xpoll(cq, &w, wc_wait_ms) == 1, "%s: no completion", what);
	CHECK(w.wr_id == wr_id, "%s: wr_id %llu, want %llu", what,
	      (unsigned long long)w.wr_id, (unsigned long long)wr_id);
	CHECK(w.status == status, "%s: status %s, want %s", what,
	      ibv_wc_status_str(w.status), ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS)
		CHECK(w.opcode == op, "%s: opcode %d, want %d", what, w.opcode,
		      op);
	return w;
}

static void xexpect_none(struct ibv_cq_ex *cq, int ms, const char *what)
{
	struct xwc w;

	CHECK(xpoll(cq, &w, ms) == 0, "%s: unexpected completion %llu %s",
	      what, (unsigned long long)w.wr_id, ibv_wc_status_str(w.status));
}

static struct ibv_cq_ex *create_cq_ex(uint32_t cqe,
				      struct ibv_comp_channel *ch, void *cq_ctx)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe, .channel = ch, .cq_context = cq_ctx,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);

	CHECK(cq, "ibv_create_cq_ex: %s", strerror(errno));
	CHECK(cq->cqe >= (int)cqe, "CQ of %d entries, %u asked", cq->cqe, cqe);
	return cq;
}

static struct ibv_cq *cq_of(struct ibv_cq_ex *cq)
{
	return ibv_cq_ex_to_cq(cq);
}

static struct ibv_qp *create_qp_ex(enum ibv_qp_type type,
				   struct ibv_cq_ex *scq,
				   struct ibv_cq_ex *rcq, uint32_t wrs,
				   uint32_t sges, uint32_t inl, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq_of(scq), .recv_cq = cq_of(rcq), .qp_type = type,
		.cap = { .max_send_wr = wrs, .max_recv_wr = wrs,
			 .max_send_sge = sges, .max_recv_sge = sges,
			 .max_inline_data = inl },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	CHECK(qp, "ibv_create_qp_ex: %s", strerror(errno));
	CHECK(a.cap.max_send_wr >= wrs && a.cap.max_send_sge >= sges &&
	      a.cap.max_inline_data >= inl, "QP caps %u/%u/%u",
	      a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_inline_data);
	CHECK(ibv_qp_to_qp_ex(qp) == (struct ibv_qp_ex *)qp,
	      "ibv_qp_to_qp_ex of an extended QP");
	return qp;
}

static struct ibv_qp_ex *qpx(struct ibv_qp *qp)
{
	return ibv_qp_to_qp_ex(qp);
}

static void to_init(struct ibv_qp *qp, int ud)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
		.qkey = QKEY,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);

	CHECK(!ibv_modify_qp(qp, &a, mask), "modify to INIT");
}

/* INIT (done) -> RTR -> RTS towards (dlid, dest); UC has no RC timers. */
static void rtr_rts(struct ibv_qp *qp, uint32_t dest, int rc)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .rq_psn = 0, .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
		.ah_attr = { .dlid = dlid, .port_num = 1 },
	};

	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER : 0)),
	      "modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ack_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0)),
	      "modify to RTS");
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest)
{
	to_init(qp, 0);
	rtr_rts(qp, dest, qp->qp_type == IBV_QPT_RC);
}

static void ready_ud(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	to_init(qp, 1);
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
	      "UD to RTS");
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *s,
		      int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = s, .num_sge = n };
	struct ibv_recv_wr *bad;

	CHECK(!ibv_post_recv(qp, &wr, &bad), "posting receive %llu",
	      (unsigned long long)wr_id);
}

/* Destroy QPs @a and @b and CQs @c and @d, those that are not NULL. */
static void destroy(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq_ex *c,
		    struct ibv_cq_ex *d)
{
	CHECK((!a || !ibv_destroy_qp(a)) && (!b || !ibv_destroy_qp(b)),
	      "ibv_destroy_qp");
	CHECK((!c || !ibv_destroy_cq(cq_of(c))) &&
	      (!d || !ibv_destroy_cq(cq_of(d))), "ibv_destroy_cq");
}

/*
 * One work request through the ibv_wr_* API, in a critical region of its
 * own: wr_start, wr_id and wr_flags, the builder (the caller's code between
 * WR_BEGIN and WR_END), the data setter, wr_complete, whose result is
 * returned.
 */
#define WR_BEGIN(x, id, flags) do {		\
		ibv_wr_start(x);		\
		(x)->wr_id = (id);		\
		(x)->wr_flags = (flags);	\
	} while (0)

static void wr_ok(struct ibv_qp_ex *x, const char *what)
{
	int err = ibv_wr_complete(x);

	CHECK(!err, "%s: ibv_wr_complete: %s", what, strerror(err));
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), "ibv_query_qp");
	return a.qp_state;
}

static void test_query_device_ex(void)
{
	struct ibv_device_attr_ex x;
	struct ibv_device_attr d;
	struct ibv_port_attr p;

	memset(&x, 0xa5, sizeof(x));
	CHECK(!ibv_query_device_ex(ctx, NULL, &x), "ibv_query_device_ex");
	CHECK(!ibv_query_device(ctx, &d), "ibv_query_device");
	CHECK(!memcmp(&x.orig_attr, &d, sizeof(d)),
	      "query_device_ex: base attributes differ from ibv_query_device");
	CHECK(x.odp_caps.general_caps == 0 &&
	      x.odp_caps.per_transport_caps.rc_odp_caps == 0 &&
	      x.odp_caps.per_transport_caps.uc_odp_caps == 0 &&
	      x.odp_caps.per_transport_caps.ud_odp_caps == 0 &&
	      x.xrc_odp_caps == 0, "ODP caps %llx", (unsigned long long)
	      x.odp_caps.general_caps);
	CHECK(x.completion_timestamp_mask == 0 && x.hca_core_clock == 0,
	      "timestamps: mask %llx clock %llu",
	      (unsigned long long)x.completion_timestamp_mask,
	      (unsigned long long)x.hca_core_clock);
	CHECK(x.device_cap_flags_ex == (uint32_t)d.device_cap_flags &&
	      (x.device_cap_flags_ex & IBV_DEVICE_RC_RNR_NAK_GEN),
	      "device_cap_flags_ex %llx, device_cap_flags %x",
	      (unsigned long long)x.device_cap_flags_ex, d.device_cap_flags);
	CHECK(x.tso_caps.max_tso == 0 && x.tso_caps.supported_qpts == 0 &&
	      x.rss_caps.supported_qpts == 0 &&
	      x.rss_caps.max_rwq_indirection_tables == 0 &&
	      x.max_wq_type_rq == 0 &&
	      x.packet_pacing_caps.qp_rate_limit_max == 0 &&
	      x.raw_packet_caps == 0, "TSO, RSS, WQ, pacing or raw caps");
	CHECK(x.tm_caps.max_num_tags == 0 && x.tm_caps.flags == 0 &&
	      x.cq_mod_caps.max_cq_count == 0 &&
	      x.cq_mod_caps.max_cq_period == 0 && x.max_dm_size == 0 &&
	      x.pci_atomic_caps.fetch_add == 0 &&
	      x.pci_atomic_caps.swap == 0 &&
	      x.pci_atomic_caps.compare_swap == 0,
	      "tag matching, CQ moderation, DM or PCI atomic caps");
	CHECK(x.phys_port_cnt_ex == CHPP_NUM_PORTS, "phys_port_cnt_ex %u",
	      x.phys_port_cnt_ex);
	CHECK(!ibv_query_port(ctx, 1, &p) && p.state == IBV_PORT_ACTIVE &&
	      p.lid, "port 1");
	lid = p.lid;
	dlid = lid;
	printf("chpp-verbs-ex: %s: lid %u; ibv_query_device_ex: base = ibv_query_device, cap_flags_ex 0x%llx, no ODP/timestamps/TSO/RSS/WQ/TM/CQ moderation/DM/PCI atomics\n",
	       ibv_get_device_name(ctx->device), lid,
	       (unsigned long long)x.device_cap_flags_ex);
}

/* ibv_create_cq_ex: what it refuses, what it accepts, the accessors. */
static void test_cq_ex_attrs(void)
{
	static const uint64_t no[] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_EX_WITH_CVLAN,
		IBV_WC_EX_WITH_FLOW_TAG, IBV_WC_EX_WITH_TM_INFO,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_cq_init_attr_ex a;
	struct ibv_device_attr d;
	struct ibv_cq_ex *cq;
	unsigned int i;

	CHECK(!ibv_query_device(ctx, &d), "ibv_query_device");
	for (i = 0; i < ARRAY_SIZE(no); i++) {
		memset(&a, 0, sizeof(a));
		a.cqe = 16;
		a.wc_flags = IBV_WC_STANDARD_FLAGS | no[i];
		errno = 0;
		CHECK(!ibv_create_cq_ex(ctx, &a) && errno == EOPNOTSUPP,
		      "wc_flags %llx: not refused with EOPNOTSUPP (%s)",
		      (unsigned long long)no[i], strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.cqe = 16;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &a) && errno == EOPNOTSUPP,
	      "IGNORE_OVERRUN not refused (%s)", strerror(errno));
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.flags = 0;
	a.parent_domain = pd;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &a) && errno == EOPNOTSUPP,
	      "a parent domain not refused (%s)", strerror(errno));
	a.comp_mask = 0;
	a.parent_domain = NULL;
	a.cqe = 0;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &a) && errno == EINVAL,
	      "0 entries not refused with EINVAL (%s)", strerror(errno));
	a.cqe = d.max_cqe + 1;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &a) && errno == EINVAL,
	      "%d entries not refused with EINVAL (%s)", d.max_cqe + 1,
	      strerror(errno));
	/* Accepted: SINGLE_THREADED; only the asked-for accessors are set. */
	a.cqe = 5;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	cq = ibv_create_cq_ex(ctx, &a);
	CHECK(cq, "SINGLE_THREADED, BYTE_LEN: %s", strerror(errno));
	CHECK(cq->cqe >= 5 && cq->start_poll && cq->next_poll &&
	      cq->end_poll && cq->read_opcode && cq->read_vendor_err &&
	      cq->read_wc_flags && cq->read_byte_len && !cq->read_imm_data &&
	      !cq->read_qp_num && !cq->read_src_qp && !cq->read_slid &&
	      !cq->read_sl && !cq->read_dlid_path_bits &&
	      !cq->read_completion_ts && !cq->read_cvlan &&
	      !cq->read_flow_tag && !cq->read_tm_info &&
	      !cq->read_completion_wallclock_ns,
	      "accessors of a BYTE_LEN CQ");
	{
		struct ibv_poll_cq_attr pa = { .comp_mask = 1 };

		CHECK(ibv_start_poll(cq, &pa) == EINVAL,
		      "start_poll with a comp_mask");
		pa.comp_mask = 0;
		CHECK(ibv_start_poll(cq, &pa) == ENOENT,
		      "start_poll on an empty CQ");
	}
	CHECK(!ibv_destroy_cq(cq_of(cq)), "destroy CQ");
	cq = create_cq_ex(8, NULL, NULL);
	CHECK(cq->read_imm_data && cq->read_qp_num && cq->read_src_qp &&
	      cq->read_slid && cq->read_sl && cq->read_dlid_path_bits &&
	      !cq->read_completion_ts, "accessors of a STANDARD_FLAGS CQ");
	CHECK(!ibv_destroy_cq(cq_of(cq)), "destroy CQ");
	printf("chpp-verbs-ex: ibv_create_cq_ex: timestamp/cvlan/flow tag/TM/wallclock, IGNORE_OVERRUN, parent domain -> EOPNOTSUPP; SINGLE_THREADED, standard wc_flags OK\n");
}

/* ibv_create_qp_ex: refusals, and ibv_qp_to_qp_ex of every kind of QP. */
static void test_qp_ex_attrs(void)
{
	static const struct { enum ibv_qp_type t; uint64_t ops; } no[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_LOCAL_INV },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP },
		{ IBV_QPT_RAW_PACKET, IBV_QP_EX_WITH_SEND },
	};
	static const uint32_t no_mask[] = {
		IBV_QP_INIT_ATTR_XRCD, IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
		IBV_QP_INIT_ATTR_IND_TABLE, IBV_QP_INIT_ATTR_RX_HASH,
	};
	struct ibv_cq_ex *cq = create_cq_ex(16, NULL, NULL);
	struct ibv_qp_init_attr_ex a, base = {
		.send_cq = cq_of(cq), .recv_cq = cq_of(cq),
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *qp;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(no); i++) {
		a = base;
		a.qp_type = no[i].t;
		a.send_ops_flags |= no[i].ops;
		errno = 0;
		CHECK(!ibv_create_qp_ex(ctx, &a) && errno == EOPNOTSUPP,
		      "QP type %d with send_ops_flags %llx: not refused with EOPNOTSUPP (%s)",
		      no[i].t, (unsigned long long)a.send_ops_flags,
		      strerror(errno));
	}
	for (i = 0; i < ARRAY_SIZE(no_mask); i++) {
		a = base;
		a.comp_mask |= no_mask[i];
		errno = 0;
		CHECK(!ibv_create_qp_ex(ctx, &a) && errno == EOPNOTSUPP,
		      "comp_mask %x: not refused with EOPNOTSUPP (%s)",
		      no_mask[i], strerror(errno));
	}
	a = base;
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	CHECK(!ibv_create_qp_ex(ctx, &a) && errno == EOPNOTSUPP,
	      "create_flags not refused with EOPNOTSUPP (%s)", strerror(errno));
	a.comp_mask &= ~IBV_QP_INIT_ATTR_PD;
	a.create_flags = 0;
	errno = 0;
	CHECK(!ibv_create_qp_ex(ctx, &a) && errno == EINVAL,
	      "no IBV_QP_INIT_ATTR_PD: not refused with EINVAL (%s)",
	      strerror(errno));
	/* Accepted: create_flags 0. */
	a = base;
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(ctx, &a);
	CHECK(qp && ibv_qp_to_qp_ex(qp) == (struct ibv_qp_ex *)qp,
	      "create_flags 0: %s", strerror(errno));
	CHECK(!ibv_destroy_qp(qp), "destroy QP");
	/* Without SEND_OPS_FLAGS, and through ibv_create_qp: no ibv_qp_ex. */
	a = base;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(ctx, &a);
	CHECK(qp && !ibv_qp_to_qp_ex(qp), "PD|CREATE_FLAGS QP: %p",
	      qp ? (void *)ibv_qp_to_qp_ex(qp) : NULL);
	CHECK(!ibv_destroy_qp(qp), "destroy QP");
	{
		struct ibv_qp_init_attr pa = {
			.send_cq = cq_of(cq), .recv_cq = cq_of(cq),
			.qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp = ibv_create_qp(pd, &pa);
		CHECK(qp && !ibv_qp_to_qp_ex(qp),
		      "ibv_qp_to_qp_ex of a plain QP is not NULL");
		CHECK(!ibv_destroy_qp(qp), "destroy QP");
	}
	CHECK(!ibv_destroy_cq(cq_of(cq)), "destroy CQ");
	printf("chpp-verbs-ex: ibv_create_qp_ex: LOCAL_INV/BIND_MW/SEND_INV/TSO/ATOMIC_WRITE, READ/atomics off RC, WRITE off RC/UC, RAW_PACKET, XRCD/TSO/RSS, create_flags -> EOPNOTSUPP; no PD -> EINVAL; plain QPs have no ibv_qp_ex\n");
}

/*
 * Every RC operation through ibv_wr_* between two extended QPs, each
 * completion read with the poll API, every byte checked.
 */
static void test_rc_ops(void)
{
	struct ibv_cq_ex *scq = create_cq_ex(64, NULL, NULL);
	struct ibv_cq_ex *rcq = create_cq_ex(64, NULL, NULL);
	uint64_t *target = (uint64_t *)at(0x1000);
	struct ibv_data_buf db[3];
	struct ibv_sge s[3], r[2];
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct xwc w;

	a = create_qp_ex(IBV_QPT_RC, scq, rcq, 16, 4, 128, RC_OPS);
	b = create_qp_ex(IBV_QPT_RC, scq, rcq, 16, 4, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);

	/* SEND: 3 gather entries (ibv_wr_set_sge_list) into 2 scatter. */
	pattern(0x10000, 1000, 1);
	pattern(0x11000, 3000, 2);
	pattern(0x14000, 1000, 3);
	memset(at(0x20000), 0, 0x10000);
	r[0] = sge(0x20000, 2500);
	r[1] = sge(0x28000, 4000);
	post_recv(b, 11, r, 2);
	s[0] = sge(0x10000, 1000);
	s[1] = sge(0x11000, 3000);
	s[2] = sge(0x14000, 1000);
	WR_BEGIN(x, 1, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 3, s);
	wr_ok(x, "SEND");
	w = xexpect(scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND");
	CHECK(w.qp_num == a->qp_num && w.byte_len == 5000 && !w.wc_flags &&
	      !w.vendor_err, "SEND send wc: qp %x len %u flags %x",
	      w.qp_num, w.byte_len, w.wc_flags);
	w = xexpect(rcq, 11, IBV_WC_SUCCESS, IBV_WC_RECV, "SEND recv");
	CHECK(w.byte_len == 5000 && w.qp_num == b->qp_num &&
	      w.src_qp == a->qp_num && !(w.wc_flags & IBV_WC_WITH_IMM) &&
	      w.slid == lid && w.sl == 0 && w.path_bits == 0,
	      "SEND recv wc: len %u qp %x src %x flags %x slid %u sl %u bits %u",
	      w.byte_len, w.qp_num, w.src_qp, w.wc_flags, w.slid, w.sl,
	      w.path_bits);
	CHECK(!memcmp(at(0x20000), at(0x10000), 1000) &&
	      !memcmp(at(0x20000 + 1000), at(0x11000), 1500) &&
	      !memcmp(at(0x28000), at(0x11000 + 1500), 1500) &&
	      !memcmp(at(0x28000 + 1500), at(0x14000), 1000),
	      "SEND data scattered wrongly");

	/* SEND_IMM, solicited, one ibv_wr_set_sge. */
	post_recv(b, 12, r, 1);
	WR_BEGIN(x, 2, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	ibv_wr_send_imm(x, htobe32(0x12345678));
	ibv_wr_set_sge(x, mr->lkey, addr(0x11000), 1000);
	wr_ok(x, "SEND_IMM");
	xexpect(scq, 2, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND_IMM");
	w = xexpect(rcq, 12, IBV_WC_SUCCESS, IBV_WC_RECV, "SEND_IMM recv");
	CHECK((w.wc_flags & IBV_WC_WITH_IMM) && w.imm == 0x12345678 &&
	      w.byte_len == 1000 && same_pattern(0x20000, 1000, 2),
	      "SEND_IMM wc flags %x imm %x len %u", w.wc_flags, w.imm,
	      w.byte_len);

	/* Inline SEND: the data is copied by the setter. */
	pattern(0x30000, 100, 9);
	post_recv(b, 13, r, 1);
	WR_BEGIN(x, 3, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, at(0x30000), 100);
	memset(at(0x30000), 0xee, 100);
	wr_ok(x, "inline SEND");
	xexpect(scq, 3, IBV_WC_SUCCESS, IBV_WC_SEND, "inline SEND");
	w = xexpect(rcq, 13, IBV_WC_SUCCESS, IBV_WC_RECV, "inline recv");
	CHECK(w.byte_len == 100 && same_pattern(0x20000, 100, 9),
	      "inline SEND data (len %u)", w.byte_len);

	/* An inline list of 3 buffers, overwritten before wr_complete. */
	pattern(0x30000, 10, 21);
	pattern(0x30100, 20, 22);
	pattern(0x30200, 30, 23);
	db[0] = (struct ibv_data_buf){ at(0x30000), 10 };
	db[1] = (struct ibv_data_buf){ at(0x30100), 20 };
	db[2] = (struct ibv_data_buf){ at(0x30200), 30 };
	post_recv(b, 14, r, 1);
	WR_BEGIN(x, 4, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 3, db);
	memset(at(0x30000), 0, 0x300);
	wr_ok(x, "inline list SEND");
	xexpect(scq, 4, IBV_WC_SUCCESS, IBV_WC_SEND, "inline list SEND");
	w = xexpect(rcq, 14, IBV_WC_SUCCESS, IBV_WC_RECV, "inline list recv");
	CHECK(w.byte_len == 60 && same_pattern(0x20000, 10, 21) &&
	      same_pattern(0x2000a, 20, 22) && same_pattern(0x2001e, 30, 23),
	      "inline list data (len %u)", w.byte_len);

	/*
	 * IBV_SEND_INLINE in wr_flags with a gather list (no key needed): the
	 * WQE gets a copy of the bytes, as with ibv_post_send.
	 */
	pattern(0x30000, 40, 25);
	pattern(0x30100, 50, 26);
	s[0] = sge(0x30000, 40);
	s[1] = sge(0x30100, 50);
	s[0].lkey = 0;
	s[1].lkey = 0;
	post_recv(b, 18, r, 1);
	WR_BEGIN(x, 33, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, s);
	wr_ok(x, "IBV_SEND_INLINE SEND");
	memset(at(0x30000), 0, 0x200);
	xexpect(scq, 33, IBV_WC_SUCCESS, IBV_WC_SEND, "IBV_SEND_INLINE SEND");
	w = xexpect(rcq, 18, IBV_WC_SUCCESS, IBV_WC_RECV, "IBV_SEND_INLINE recv");
	CHECK(w.byte_len == 90 && same_pattern(0x20000, 40, 25) &&
	      same_pattern(0x20028, 50, 26), "IBV_SEND_INLINE data (len %u)",
	      w.byte_len);

	/* RDMA WRITE, 20000 bytes (20 packets): no receive consumed. */
	pattern(0x40000, 20000, 4);
	memset(at(0x50000), 0, 20000);
	WR_BEGIN(x, 5, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(x, mr->rkey, addr(0x50000));
	ibv_wr_set_sge(x, mr->lkey, addr(0x40000), 20000);
	wr_ok(x, "RDMA WRITE");
	w = xexpect(scq, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	CHECK(w.byte_len == 20000 && same_pattern(0x50000, 20000, 4),
	      "RDMA WRITE data (len %u)", w.byte_len);
	xexpect_none(rcq, 20, "RDMA WRITE consumed a receive");

	/* RDMA WRITE_WITH_IMM with inline data. */
	pattern(0x30000, 120, 24);
	memset(at(0x60000), 0, 200);
	post_recv(b, 15, r, 1);
	WR_BEGIN(x, 6, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(x, mr->rkey, addr(0x60000), htobe32(0xcafe));
	ibv_wr_set_inline_data(x, at(0x30000), 120);
	wr_ok(x, "inline WRITE_IMM");
	xexpect(scq, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "WRITE_IMM");
	w = xexpect(rcq, 15, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "WRITE_IMM recv");
	CHECK((w.wc_flags & IBV_WC_WITH_IMM) && w.imm == 0xcafe &&
	      w.byte_len == 120 && w.src_qp == a->qp_num &&
	      same_pattern(0x60000, 120, 24), "WRITE_IMM wc/data");

	/* No data setter: a zero-length SEND and WRITE_WITH_IMM. */
	post_recv(b, 16, r, 1);
	post_recv(b, 17, r, 1);
	ibv_wr_start(x);
	x->wr_id = 31;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	x->wr_id = 32;
	ibv_wr_rdma_write_imm(x, mr->rkey, addr(0x60000), htobe32(0xbeef));
	wr_ok(x, "zero-length SEND and WRITE_IMM");
	w = xexpect(scq, 31, IBV_WC_SUCCESS, IBV_WC_SEND, "0-byte SEND");
	CHECK(w.byte_len == 0, "0-byte SEND: %u bytes", w.byte_len);
	xexpect(scq, 32, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "0-byte WRITE_IMM");
	w = xexpect(rcq, 16, IBV_WC_SUCCESS, IBV_WC_RECV, "0-byte SEND recv");
	CHECK(w.byte_len == 0 && !(w.wc_flags & IBV_WC_WITH_IMM),
	      "0-byte SEND recv: %u bytes", w.byte_len);
	w = xexpect(rcq, 17, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "0-byte WRITE_IMM recv");
	CHECK(w.byte_len == 0 && w.imm == 0xbeef &&
	      same_pattern(0x60000, 120, 24),
	      "0-byte WRITE_IMM recv: %u bytes imm %x", w.byte_len, w.imm);

	/* RDMA READ, 9000 bytes. */
	pattern(0x70000, 9000, 5);
	memset(at(0x80000), 0, 9000);
	WR_BEGIN(x, 7, IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(x, mr->rkey, addr(0x70000));
	ibv_wr_set_sge(x, mr->lkey, addr(0x80000), 9000);
	wr_ok(x, "RDMA READ");
	w = xexpect(scq, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "RDMA READ");
	CHECK(w.byte_len == 9000 && same_pattern(0x80000, 9000, 5),
	      "RDMA READ data/len %u", w.byte_len);

	/* Atomics: fetch-and-add, then compare-and-swap hit and miss. */
	*target = 1000;
	WR_BEGIN(x, 8, IBV_SEND_SIGNALED);
	ibv_wr_atomic_fetch_add(x, mr->rkey, addr(0x1000), 23);
	ibv_wr_set_sge(x, mr->lkey, addr(0x1100), 8);
	wr_ok(x, "FETCH_ADD");
	w = xexpect(scq, 8, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, "FETCH_ADD");
	CHECK(w.byte_len == 8 && *(uint64_t *)at(0x1100) == 1000 &&
	      *target == 1023, "FETCH_ADD: got %llu, target %llu",
	      (unsigned long long)*(uint64_t *)at(0x1100),
	      (unsigned long long)*target);
	WR_BEGIN(x, 9, IBV_SEND_SIGNALED);
	ibv_wr_atomic_cmp_swp(x, mr->rkey, addr(0x1000), 1023, 77);
	ibv_wr_set_sge(x, mr->lkey, addr(0x1100), 8);
	wr_ok(x, "CMP_SWP");
	xexpect(scq, 9, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "CMP_SWP");
	CHECK(*(uint64_t *)at(0x1100) == 1023 && *target == 77,
	      "CMP_SWP hit: target %llu", (unsigned long long)*target);
	WR_BEGIN(x, 10, IBV_SEND_SIGNALED);
	ibv_wr_atomic_cmp_swp(x, mr->rkey, addr(0x1000), 1023, 5);
	ibv_wr_set_sge(x, mr->lkey, addr(0x1100), 8);
	wr_ok(x, "CMP_SWP miss");
	xexpect(scq, 10, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "CMP_SWP miss");
	CHECK(*(uint64_t *)at(0x1100) == 77 && *target == 77,
	      "CMP_SWP miss: target %llu", (unsigned long long)*target);

	/*
	 * Mixed in: ibv_post_send on the extended QP, ibv_poll_cq on the
	 * extended CQs, then the wr API and the poll API again.
	 */
	{
		struct ibv_send_wr wr = {
			.wr_id = 20, .opcode = IBV_WR_SEND, .sg_list = s,
			.num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;
		struct ibv_wc wc;
		int i;

		memset(&wc, 0, sizeof(wc));
		post_recv(b, 21, r, 1);
		s[0] = sge(0x14000, 700);
		CHECK(!ibv_post_send(a, &wr, &bad), "ibv_post_send on an extended QP");
		for (i = 0; i < 50000 && ibv_poll_cq(cq_of(scq), 1, &wc) == 0; i++)
			usleep(100);
		CHECK(wc.wr_id == 20 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_SEND, "ibv_poll_cq on an extended CQ");
		for (i = 0; i < 50000 && ibv_poll_cq(cq_of(rcq), 1, &wc) == 0; i++)
			usleep(100);
		CHECK(wc.wr_id == 21 && wc.byte_len == 700 &&
		      wc.src_qp == a->qp_num, "ibv_poll_cq recv");
		post_recv(b, 22, r, 1);
		WR_BEGIN(x, 23, IBV_SEND_SIGNALED);
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 300);
		wr_ok(x, "SEND after ibv_post_send");
		xexpect(scq, 23, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND after mix");
		w = xexpect(rcq, 22, IBV_WC_SUCCESS, IBV_WC_RECV, "recv after mix");
		CHECK(w.byte_len == 300 && same_pattern(0x20000, 300, 1),
		      "data after the mix");
	}
	xexpect_none(scq, 10, "extra send completion");
	xexpect_none(rcq, 10, "extra receive completion");
	destroy(a, b, scq, rcq);
	printf("chpp-verbs-ex: RC through ibv_wr_*: SEND 3->2 SGEs, SEND_IMM, inline, inline list, WRITE, inline WRITE_IMM, READ, FETCH_ADD, CMP_SWP; ibv_post_send/ibv_poll_cq mixed in; poll API accessors\n");
}

/*
 * 16 signaled SENDs (and a WRITE unsignaled between them) in one critical
 * region; once their send completions are read, the 16 receive completions
 * are in the receive CQ and come as one poll batch: start_poll, 15
 * next_poll, then ENOENT, end_poll.
 */
static void test_batch(void)
{
	struct ibv_cq_ex *scq = create_cq_ex(64, NULL, NULL);
	struct ibv_cq_ex *rcq = create_cq_ex(64, NULL, NULL);
	struct ibv_poll_cq_attr pa = {};
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct ibv_sge r;
	struct xwc w;
	int i, err;

	a = create_qp_ex(IBV_QPT_RC, scq, rcq, 32, 1, 0, RC_OPS);
	b = create_qp_ex(IBV_QPT_RC, scq, rcq, 32, 1, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);
	memset(at(0x90000), 0, 0x10000);
	for (i = 0; i < 16; i++) {
		r = sge(0x90000 + i * 256, 256);
		post_recv(b, 100 + i, &r, 1);
		pattern(0xa0000 + i * 256, 256, 40 + i);
	}
	memset(at(0xb0000), 0, 4096);
	pattern(0xc0000, 4096, 60);
	ibv_wr_start(x);
	for (i = 0; i < 16; i++) {
		x->wr_id = 200 + i;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mr->lkey, addr(0xa0000 + i * 256), 100 + i);
		if (i == 7) {
			x->wr_id = 999;
			x->wr_flags = 0;
			ibv_wr_rdma_write(x, mr->rkey, addr(0xb0000));
			ibv_wr_set_sge(x, mr->lkey, addr(0xc0000), 4096);
		}
	}
	wr_ok(x, "a batch of 17");
	for (i = 0; i < 16; i++) {
		w = xexpect(scq, 200 + i, IBV_WC_SUCCESS, IBV_WC_SEND,
			    "batch send");
		CHECK(w.byte_len == (uint32_t)(100 + i), "batch send %d: %u bytes",
		      i, w.byte_len);
	}
	xexpect_none(scq, 10, "the unsignaled WRITE completed");
	CHECK(same_pattern(0xb0000, 4096, 60), "batch WRITE data");
	err = ibv_start_poll(rcq, &pa);
	CHECK(!err, "start_poll of the batch: %s", strerror(err));
	for (i = 0; i < 16; i++) {
		if (i) {
			err = ibv_next_poll(rcq);
			CHECK(!err, "next_poll %d: %s", i, strerror(err));
		}
		xwc_read(rcq, &w);
		CHECK(w.wr_id == (uint64_t)100 + i && w.status == IBV_WC_SUCCESS &&
		      w.opcode == IBV_WC_RECV && w.byte_len == (uint32_t)(100 + i) &&
		      w.src_qp == a->qp_num && w.qp_num == b->qp_num,
		      "batch recv %d: wr_id %llu len %u", i,
		      (unsigned long long)w.wr_id, w.byte_len);
		CHECK(same_pattern(0x90000 + i * 256, 100 + i, 40 + i),
		      "batch recv %d data", i);
	}
	err = ibv_next_poll(rcq);
	CHECK(err == ENOENT, "next_poll after the batch: %s", strerror(err));
	ibv_end_poll(rcq);
	CHECK(ibv_start_poll(rcq, &pa) == ENOENT, "CQ not empty after the batch");
	destroy(a, b, scq, rcq);
	printf("chpp-verbs-ex: 17 WRs in one critical region; 16 receive completions in one poll batch (start, 15 next, ENOENT, end)\n");
}

/*
 * ibv_wr_complete's refusals: each discards every WR since ibv_wr_start
 * (nothing executes, no completion), and the next batch works. Also
 * ibv_wr_abort, a QP in RESET, and a device error read with the poll API.
 */
static void test_refusals(void)
{
	struct ibv_cq_ex *scq = create_cq_ex(64, NULL, NULL);
	struct ibv_cq_ex *rcq = create_cq_ex(64, NULL, NULL);
	struct chppdv_qp dq;
	struct ibv_sge s[CHPP_MAX_SGE + 1], r;
	struct ibv_qp *a, *b, *u;
	struct ibv_qp_ex *x;
	uint64_t id = 300;
	struct xwc w;
	int i, err;

	a = create_qp_ex(IBV_QPT_RC, scq, rcq, 8, 2, 64, RC_OPS);
	b = create_qp_ex(IBV_QPT_RC, scq, rcq, 8, 1, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);
	CHECK(!chppdv_query_qp(a, &dq), "chppdv_query_qp");
	pattern(0x10000, 0x1000, 70);
	memset(at(0x50000), 0, 0x1000);
	r = sge(0x20000, 4096);

#define REFUSED(want, what, ...) do {					\
		WR_BEGIN(x, id, IBV_SEND_SIGNALED);			\
		/* A good WRITE first: discarded with the batch. */	\
		ibv_wr_rdma_write(x, mr->rkey, addr(0x50000));		\
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);		\
		__VA_ARGS__;						\
		err = ibv_wr_complete(x);				\
		CHECK(err == (want), "%s: ibv_wr_complete %s, want %s",	\
		      what, strerror(err), strerror(want));		\
		id++;							\
	} while (0)

	REFUSED(EOPNOTSUPP, "LOCAL_INV", ibv_wr_local_inv(x, 5));
	REFUSED(EOPNOTSUPP, "BIND_MW", ibv_wr_bind_mw(x, NULL, 5, NULL));
	REFUSED(EOPNOTSUPP, "SEND_WITH_INV",
		ibv_wr_send_inv(x, 5); ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8));
	REFUSED(EOPNOTSUPP, "TSO", ibv_wr_send_tso(x, at(0x10000), 40, 1000));
	REFUSED(EOPNOTSUPP, "ATOMIC_WRITE",
		ibv_wr_atomic_write(x, mr->rkey, addr(0x50000), at(0x10000)));
	REFUSED(EOPNOTSUPP, "set_xrc_srqn",
		ibv_wr_send(x); ibv_wr_set_xrc_srqn(x, 1);
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8));
	REFUSED(EOPNOTSUPP, "IBV_SEND_IP_CSUM",
		x->wr_flags = IBV_SEND_IP_CSUM; ibv_wr_send(x);
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8));
	ibv_wr_start(x);
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8);
	err = ibv_wr_complete(x);
	CHECK(err == EINVAL, "a setter without a builder: %s", strerror(err));
	REFUSED(EINVAL, "two data setters",
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8));
	REFUSED(EINVAL, "inline data over the WQE's room",
		ibv_wr_send(x); ibv_wr_set_inline_data(x, at(0x10000),
						       dq.max_inline + 1));
	REFUSED(EINVAL, "inline data of an RDMA READ",
		ibv_wr_rdma_read(x, mr->rkey, addr(0x50000));
		ibv_wr_set_inline_data(x, at(0x10000), 8));
	for (i = 0; i <= CHPP_MAX_SGE; i++)
		s[i] = sge(0x10000 + i * 8, 8);
	REFUSED(EINVAL, "33 gather entries",
		ibv_wr_send(x); ibv_wr_set_sge_list(x, CHPP_MAX_SGE + 1, s));
	/* A 128-byte WQE: ctrl, then 7 gather entries; 8 do not fit. */
	CHECK(dq.sq_stride == 128, "SQ stride %u", dq.sq_stride);
	REFUSED(EINVAL, "8 gather entries in a 128-byte WQE",
		ibv_wr_send(x); ibv_wr_set_sge_list(x, 8, s));
	REFUSED(EINVAL, "ibv_wr_set_ud_addr on RC",
		ibv_wr_send(x); ibv_wr_set_ud_addr(x, NULL, 1, QKEY));
	/* 8 WRs fit the 8-deep SQ, the 9th does not: ENOMEM, none posted. */
	REFUSED(ENOMEM, "9 WRs in an 8-deep SQ",
		for (i = 0; i < 8; i++) {
			ibv_wr_rdma_write(x, mr->rkey, addr(0x50000));
			ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
		});
	CHECK(!memcmp(at(0x50000), "\0\0\0\0\0\0\0\0", 8),
	      "a WRITE of a refused batch was executed");
	xexpect_none(scq, 50, "a refused batch completed");
	/* ibv_wr_abort discards too: the receive stays unconsumed. */
	post_recv(b, 400, &r, 1);
	WR_BEGIN(x, 401, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
	ibv_wr_abort(x);
	xexpect_none(rcq, 50, "an aborted SEND was received");
	/* After all that, a full batch of 8 goes through, in order. */
	ibv_wr_start(x);
	for (i = 0; i < 8; i++) {
		x->wr_id = 500 + i;
		x->wr_flags = i == 7 ? IBV_SEND_SIGNALED : 0;
		if (i == 7) {
			ibv_wr_send(x);
			ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
		} else {
			ibv_wr_rdma_write(x, mr->rkey, addr(0x50000 + i * 64));
			ibv_wr_set_sge(x, mr->lkey, addr(0x10000 + i * 64), 64);
		}
	}
	wr_ok(x, "8 WRs after the refusals");
	xexpect(scq, 507, IBV_WC_SUCCESS, IBV_WC_SEND, "after the refusals");
	w = xexpect(rcq, 400, IBV_WC_SUCCESS, IBV_WC_RECV, "recv after the refusals");
	CHECK(w.byte_len == 64 && pattern_from(0x20000, 64, 70, 0) &&
	      pattern_from(0x50000, 7 * 64, 70, 0),
	      "data after the refusals");
	xexpect_none(scq, 20, "extra completion after the refusals");
	xexpect_none(rcq, 20, "extra receive after the refusals");
	/* Inline data of exactly the WQE's room, and 7 gather entries. */
	r = sge(0x22000, 4096);
	post_recv(b, 410, &r, 1);
	r = sge(0x20000, 4096);
	post_recv(b, 411, &r, 1);
	ibv_wr_start(x);
	x->wr_id = 510;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, at(0x10100), dq.max_inline);
	x->wr_id = 511;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 7, s);
	wr_ok(x, "inline of max_inline bytes, 7 gather entries");
	xexpect(scq, 510, IBV_WC_SUCCESS, IBV_WC_SEND, "max inline");
	xexpect(scq, 511, IBV_WC_SUCCESS, IBV_WC_SEND, "7 SGEs");
	w = xexpect(rcq, 410, IBV_WC_SUCCESS, IBV_WC_RECV, "max inline recv");
	CHECK(w.byte_len == dq.max_inline &&
	      pattern_from(0x22000, dq.max_inline, 70, 0x100),
	      "max inline recv: %u bytes", w.byte_len);
	w = xexpect(rcq, 411, IBV_WC_SUCCESS, IBV_WC_RECV, "7 SGEs recv");
	CHECK(w.byte_len == 56 && pattern_from(0x20000, 56, 70, 0),
	      "7 SGEs recv: %u bytes", w.byte_len);

	/* A device error through the wr API: bad rkey, then a flush. */
	WR_BEGIN(x, 600, IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(x, mr->rkey ^ 0x5500, addr(0x50000));
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
	x->wr_id = 601;
	ibv_wr_rdma_write(x, mr->rkey, addr(0x50000));
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 64);
	wr_ok(x, "WRITE with a bad rkey");
	w = xexpect(scq, 600, IBV_WC_REM_ACCESS_ERR, 0, "bad rkey");
	CHECK(w.vendor_err == CHPP_VERR_RKEY && w.opcode == IBV_WC_RDMA_WRITE,
	      "bad rkey: vendor_err %u opcode %d", w.vendor_err, w.opcode);
	w = xexpect(scq, 601, IBV_WC_WR_FLUSH_ERR, 0, "flushed");
	CHECK(w.vendor_err == CHPP_VERR_FLUSH, "flush: vendor_err %u",
	      w.vendor_err);
	CHECK(qp_state(a) == IBV_QPS_ERR, "requester not in ERR");
	destroy(a, b, NULL, NULL);

	/* A QP in RESET refuses a batch; an empty batch is no error. */
	a = create_qp_ex(IBV_QPT_RC, scq, rcq, 4, 1, 0, RC_OPS);
	x = qpx(a);
	ibv_wr_start(x);
	CHECK(!ibv_wr_complete(x), "an empty batch");
	REFUSED(EINVAL, "a QP in RESET");
	/* UC: no RDMA READ and no atomics. */
	u = create_qp_ex(IBV_QPT_UC, scq, rcq, 4, 1, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(u, u->qp_num);
	x = qpx(u);
	REFUSED(EOPNOTSUPP, "RDMA READ on UC",
		ibv_wr_rdma_read(x, mr->rkey, addr(0x50000));
		ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 8));
	REFUSED(EOPNOTSUPP, "FETCH_ADD on UC",
		ibv_wr_atomic_fetch_add(x, mr->rkey, addr(0x1000), 1);
		ibv_wr_set_sge(x, mr->lkey, addr(0x1100), 8));
	xexpect_none(scq, 20, "a refused UC batch completed");
	destroy(a, u, scq, rcq);
#undef REFUSED
	printf("chpp-verbs-ex: ibv_wr_complete: LOCAL_INV/BIND_MW/SEND_INV/TSO/ATOMIC_WRITE/XRC/IP_CSUM/READ+atomics on UC -> EOPNOTSUPP; bad setters/inline/SGEs/RESET -> EINVAL; full SQ -> ENOMEM; batch discarded each time; ibv_wr_abort; REM_ACCESS_ERR + flush via the poll API\n");
}

/* UC and UD through ibv_wr_*. */
static void test_uc_ud(void)
{
	struct ibv_cq_ex *scq = create_cq_ex(32, NULL, NULL);
	struct ibv_cq_ex *rcq = create_cq_ex(32, NULL, NULL);
	struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct ibv_sge r;
	struct ibv_ah *ah;
	struct xwc w;
	int err;

	/* UC: SEND_IMM and RDMA WRITE_WITH_IMM. */
	a = create_qp_ex(IBV_QPT_UC, scq, rcq, 8, 1, 0,
			 IBV_QP_EX_WITH_SEND_WITH_IMM |
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
	b = create_qp_ex(IBV_QPT_UC, scq, rcq, 8, 1, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);
	pattern(0x10000, 3000, 80);
	memset(at(0x20000), 0, 8192);
	r = sge(0x20000, 4096);
	post_recv(b, 700, &r, 1);
	post_recv(b, 701, &r, 1);
	ibv_wr_start(x);
	x->wr_id = 710;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(0x55));
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 3000);
	x->wr_id = 711;
	ibv_wr_rdma_write_imm(x, mr->rkey, addr(0x30000), htobe32(0x66));
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 2000);
	wr_ok(x, "UC batch");
	xexpect(scq, 710, IBV_WC_SUCCESS, IBV_WC_SEND, "UC SEND_IMM");
	xexpect(scq, 711, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "UC WRITE_IMM");
	w = xexpect(rcq, 700, IBV_WC_SUCCESS, IBV_WC_RECV, "UC SEND_IMM recv");
	CHECK(w.imm == 0x55 && w.byte_len == 3000 && w.src_qp == a->qp_num &&
	      same_pattern(0x20000, 3000, 80), "UC SEND_IMM wc/data");
	w = xexpect(rcq, 701, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "UC WRITE_IMM recv");
	CHECK(w.imm == 0x66 && w.byte_len == 2000 &&
	      same_pattern(0x30000, 2000, 80), "UC WRITE_IMM wc/data");
	destroy(a, b, NULL, NULL);

	/* UD: the address before or after the data, inline, a wrong Q_Key. */
	a = create_qp_ex(IBV_QPT_UD, scq, rcq, 8, 1, 64,
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	b = create_qp_ex(IBV_QPT_UD, scq, rcq, 8, 1, 0, IBV_QP_EX_WITH_SEND);
	ready_ud(a);
	ready_ud(b);
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah, "ibv_create_ah");
	x = qpx(a);
	pattern(0x14000, 1000, 81);
	pattern(0x15000, 50, 82);
	r = sge(0x20000, 2048);
	post_recv(b, 720, &r, 1);
	r = sge(0x22000, 2048);
	post_recv(b, 721, &r, 1);
	r = sge(0x24000, 2048);
	post_recv(b, 722, &r, 1);
	ibv_wr_start(x);
	x->wr_id = 730;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htobe32(77));
	ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY);
	ibv_wr_set_sge(x, mr->lkey, addr(0x14000), 1000);
	x->wr_id = 731;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, addr(0x14000), 500);
	ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY);
	x->wr_id = 732;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, at(0x15000), 50);
	ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY);
	memset(at(0x15000), 0, 50);
	wr_ok(x, "UD batch");
	xexpect(scq, 730, IBV_WC_SUCCESS, IBV_WC_SEND, "UD SEND_IMM");
	xexpect(scq, 731, IBV_WC_SUCCESS, IBV_WC_SEND, "UD SEND");
	xexpect(scq, 732, IBV_WC_SUCCESS, IBV_WC_SEND, "UD inline SEND");
	w = xexpect(rcq, 720, IBV_WC_SUCCESS, IBV_WC_RECV, "UD recv 1");
	CHECK(w.src_qp == a->qp_num && w.imm == 77 &&
	      (w.wc_flags & IBV_WC_WITH_IMM) && w.slid == lid &&
	      w.byte_len == 1000 + CHPP_UD_GRH_SIZE &&
	      same_pattern(0x20000 + CHPP_UD_GRH_SIZE, 1000, 81),
	      "UD recv 1: src %x (want %x) len %u", w.src_qp, a->qp_num,
	      w.byte_len);
	w = xexpect(rcq, 721, IBV_WC_SUCCESS, IBV_WC_RECV, "UD recv 2");
	CHECK(w.byte_len == 500 + CHPP_UD_GRH_SIZE &&
	      !(w.wc_flags & IBV_WC_WITH_IMM) &&
	      same_pattern(0x22000 + CHPP_UD_GRH_SIZE, 500, 81), "UD recv 2");
	w = xexpect(rcq, 722, IBV_WC_SUCCESS, IBV_WC_RECV, "UD recv 3");
	CHECK(w.byte_len == 50 + CHPP_UD_GRH_SIZE &&
	      same_pattern(0x24000 + CHPP_UD_GRH_SIZE, 50, 82),
	      "UD inline recv");
	/* No address: refused. A wrong Q_Key: sent, and dropped. */
	WR_BEGIN(x, 740, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, addr(0x14000), 8);
	err = ibv_wr_complete(x);
	CHECK(err == EINVAL, "UD without ibv_wr_set_ud_addr: %s",
	      strerror(err));
	r = sge(0x20000, 2048);
	post_recv(b, 723, &r, 1);
	WR_BEGIN(x, 741, IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY + 1);
	ibv_wr_set_sge(x, mr->lkey, addr(0x14000), 8);
	wr_ok(x, "UD, wrong Q_Key");
	xexpect(scq, 741, IBV_WC_SUCCESS, IBV_WC_SEND, "UD wrong Q_Key");
	xexpect_none(rcq, 100, "UD with a wrong Q_Key was received");
	CHECK(!ibv_destroy_ah(ah), "destroy AH");
	destroy(a, b, scq, rcq);
	printf("chpp-verbs-ex: UC SEND_IMM + WRITE_IMM; UD SEND_IMM/SEND/inline with ibv_wr_set_ud_addr before or after the data, none -> EINVAL, wrong Q_Key dropped\n");
}

/*
 * 600 WRITEs through a 32-deep SQ in batches of 5, every 8th signaled: a
 * batch that finds the SQ full is refused whole (ENOMEM) and posted again
 * after a completion frees slots. The 75 completions go through an 8-entry
 * CQ, which overruns unless ibv_end_poll gives the device the consumer
 * index (at most 4 are outstanding).
 */
static void test_wrap(void)
{
	struct ibv_cq_ex *cq = create_cq_ex(8, NULL, NULL);
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	int i, n, done = 0, refused = 0, err;
	struct xwc w;

	a = create_qp_ex(IBV_QPT_RC, cq, cq, 32, 1, 0,
			 IBV_QP_EX_WITH_RDMA_WRITE);
	b = create_qp_ex(IBV_QPT_RC, cq, cq, 32, 1, 0,
			 IBV_QP_EX_WITH_RDMA_WRITE);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);
	for (i = 0; i < 64; i++)
		pattern(0x100000 + i * 64, 64, i);
	memset(at(0x180000), 0, 600 * 64);
	for (i = 0; i < 600; i += 5) {
		for (;;) {
			ibv_wr_start(x);
			for (n = i; n < i + 5; n++) {
				x->wr_id = 1000 + n;
				x->wr_flags = n % 8 == 7 ? IBV_SEND_SIGNALED : 0;
				ibv_wr_rdma_write(x, mr->rkey,
						  addr(0x180000 + n * 64));
				ibv_wr_set_sge(x, mr->lkey,
					       addr(0x100000 + (n % 64) * 64), 64);
			}
			err = ibv_wr_complete(x);
			if (err != ENOMEM)
				break;
			refused++;
			CHECK(xpoll(cq, &w, 5000) == 1, "wrap: stuck at %d", i);
			CHECK(w.status == IBV_WC_SUCCESS &&
			      w.wr_id == (uint64_t)1000 + done * 8 + 7,
			      "wrap: wc %llu %s", (unsigned long long)w.wr_id,
			      ibv_wc_status_str(w.status));
			done++;
		}
		CHECK(!err, "wrap: batch at %d: %s", i, strerror(err));
	}
	while (done < 600 / 8) {
		CHECK(xpoll(cq, &w, 5000) == 1, "wrap: tail stuck");
		CHECK(w.wr_id == (uint64_t)1000 + done * 8 + 7, "wrap: order");
		done++;
	}
	xexpect_none(cq, 20, "wrap: extra completion");
	for (i = 0; i < 600; i++)
		CHECK(same_pattern(0x180000 + i * 64, 64, i % 64),
		      "wrap: data of WRITE %d", i);
	CHECK(refused > 0, "wrap: the SQ never refused a batch");
	usleep(100000);
	destroy(a, b, cq, NULL);
	printf("chpp-verbs-ex: 600 WRITEs in batches of 5 through a 32-deep SQ and an 8-entry CQ, %d batches refused (ENOMEM) and posted again\n",
	       refused);
}

/* A completion channel and cq_context on an extended CQ. */
static void test_channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct pollfd pfd;
	struct ibv_cq *ev_cq;
	struct ibv_sge r;
	void *ev_ctx;
	int round;

	CHECK(ch, "ibv_create_comp_channel");
	scq = create_cq_ex(16, NULL, NULL);
	rcq = create_cq_ex(16, ch, (void *)0x5a5a);
	a = create_qp_ex(IBV_QPT_RC, scq, rcq, 8, 1, 0, IBV_QP_EX_WITH_SEND);
	b = create_qp_ex(IBV_QPT_RC, scq, rcq, 8, 1, 0, IBV_QP_EX_WITH_SEND);
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	x = qpx(a);
	/* The CQ holds a reference on the channel (verbs_init_cq). */
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY,
	      "the channel of a live extended CQ could be destroyed");
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	r = sge(0x1200, 16);
	for (round = 0; round < 3; round++) {
		CHECK(!ibv_req_notify_cq(cq_of(rcq), 0), "ibv_req_notify_cq");
		CHECK(poll(&pfd, 1, 50) == 0, "event before any completion");
		post_recv(b, 100 + round, &r, 1);
		WR_BEGIN(x, 200 + round, IBV_SEND_SIGNALED);
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mr->lkey, addr(0x1200), 16);
		wr_ok(x, "SEND");
		CHECK(poll(&pfd, 1, 5000) == 1, "no completion event (round %d)",
		      round);
		CHECK(!ibv_get_cq_event(ch, &ev_cq, &ev_ctx), "ibv_get_cq_event");
		CHECK(ev_cq == cq_of(rcq) && ev_ctx == (void *)0x5a5a,
		      "event for the wrong CQ or cq_context");
		ibv_ack_cq_events(ev_cq, 1);
		xexpect(rcq, 100 + round, IBV_WC_SUCCESS, IBV_WC_RECV, "recv");
		xexpect(scq, 200 + round, IBV_WC_SUCCESS, IBV_WC_SEND, "send");
	}
	destroy(a, b, scq, rcq);
	CHECK(!ibv_destroy_comp_channel(ch), "destroy the channel");
	printf("chpp-verbs-ex: completion channel on an extended CQ: 3 events with its cq_context, channel referenced\n");
}

/*
 * RC with the same program on the peer node, through ibv_wr_* and the poll
 * API, both ways at once: SEND (2 gather entries), RDMA WRITE, inline
 * WRITE_WITH_IMM, RDMA READ, FETCH_ADD and CMP_SWP on the peer's memory, in
 * two batches. Patterns are seeded by the sender's node id.
 */
static void run_pair(const char *mine, const char *peer)
{
	struct ibv_cq_ex *scq = create_cq_ex(16, NULL, NULL);
	struct ibv_cq_ex *rcq = create_cq_ex(16, NULL, NULL);
	uint64_t *target = (uint64_t *)at(0x1000);
	struct chpp_pair_info mi, pi;
	struct chppdv_context dc;
	unsigned int me, them;
	struct ibv_sge s[2], r;
	struct ibv_qp_ex *x;
	struct ibv_qp *qp;
	char err[256];
	struct xwc w;

	CHECK(!chppdv_query_context(ctx, &dc), "chppdv_query_context");
	me = dc.node_id;
	wc_wait_ms = 60000;
	/* 1.07 s x 7 retries: the peer may reach RTR seconds after us. */
	ack_timeout = 18;
	qp = create_qp_ex(IBV_QPT_RC, scq, rcq, 16, 2, 128, RC_OPS);
	x = qpx(qp);
	pattern(0x10000, 0x20000, 20 + me);
	*target = 2000;
	mi = (struct chpp_pair_info){ .lid = lid, .qp_num = qp->qp_num,
		.rkey = mr->rkey, .addr = (uintptr_t)buf };
	CHECK(!chpp_pair_exchange(mine, peer, &mi, &pi, err, sizeof(err)),
	      "pair: %s", err);
	them = CHPP_LID_NODE(pi.lid);
	printf("chpp-verbs-ex: pair: node %u (lid %u qp_num 0x%x) <-> node %u (lid %u qp_num 0x%x)\n",
	       me, lid, qp->qp_num, them, pi.lid, pi.qp_num);
	dlid = pi.lid;
	to_init(qp, 0);
	r = sge(0x40000, 8192);
	post_recv(qp, 101, &r, 1);
	r = sge(0x42000, 16);
	post_recv(qp, 102, &r, 1);
	rtr_rts(qp, pi.qp_num, 1);

	/* Batch 1: SEND, WRITE, inline WRITE_IMM (its receive is last). */
	s[0] = sge(0x10000, 1000);
	s[1] = sge(0x11000, 2000);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, s);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, pi.rkey, pi.addr + 0x50000);
	ibv_wr_set_sge(x, mr->lkey, addr(0x10000), 65536);
	x->wr_id = 3;
	ibv_wr_rdma_write_imm(x, pi.rkey, pi.addr + 0x60000,
			      htobe32(0xabc0 + me));
	ibv_wr_set_inline_data(x, at(0x20000), 100);
	wr_ok(x, "pair batch 1");
	xexpect(scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND, "pair SEND");
	xexpect(scq, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "pair WRITE");
	xexpect(scq, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "pair WRITE_IMM");

	/* Batch 2: READ, FETCH_ADD, CMP_SWP. */
	memset(at(0x70000), 0, 32768);
	ibv_wr_start(x);
	x->wr_id = 4;
	ibv_wr_rdma_read(x, pi.rkey, pi.addr + 0x18000);
	ibv_wr_set_sge(x, mr->lkey, addr(0x70000), 32768);
	x->wr_id = 5;
	ibv_wr_atomic_fetch_add(x, pi.rkey, pi.addr + 0x1000, me);
	ibv_wr_set_sge(x, mr->lkey, addr(0x1100), 8);
	x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(x, pi.rkey, pi.addr + 0x1000, 2000 + me,
			      8000 + me);
	ibv_wr_set_sge(x, mr->lkey, addr(0x1108), 8);
	wr_ok(x, "pair batch 2");
	w = xexpect(scq, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "pair READ");
	CHECK(w.byte_len == 32768 &&
	      pattern_from(0x70000, 32768, 20 + them, 0x8000),
	      "pair READ: not the peer's bytes (len %u)", w.byte_len);
	xexpect(scq, 5, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, "pair FETCH_ADD");
	xexpect(scq, 6, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "pair CMP_SWP");
	/* Only this node's atomics reach the peer's target. */
	CHECK(*(uint64_t *)at(0x1100) == 2000, "pair FETCH_ADD returned %llu",
	      (unsigned long long)*(uint64_t *)at(0x1100));
	CHECK(*(uint64_t *)at(0x1108) == 2000 + me,
	      "pair CMP_SWP returned %llu",
	      (unsigned long long)*(uint64_t *)at(0x1108));

	/* What the peer did to this node, read with the poll API. */
	w = xexpect(rcq, 101, IBV_WC_SUCCESS, IBV_WC_RECV, "the peer's SEND");
	CHECK(w.byte_len == 3000 && w.src_qp == pi.qp_num && w.slid == pi.lid &&
	      w.qp_num == qp->qp_num && !(w.wc_flags & IBV_WC_WITH_IMM),
	      "the peer's SEND: %u bytes from 0x%x lid %u", w.byte_len,
	      w.src_qp, w.slid);
	w = xexpect(rcq, 102, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "the peer's WRITE_IMM");
	CHECK(w.imm == 0xabc0 + them && (w.wc_flags & IBV_WC_WITH_IMM) &&
	      w.byte_len == 100 && w.src_qp == pi.qp_num,
	      "the peer's WRITE_IMM: imm 0x%x len %u", w.imm, w.byte_len);
	CHECK(pattern_from(0x40000, 1000, 20 + them, 0) &&
	      pattern_from(0x40000 + 1000, 2000, 20 + them, 0x1000),
	      "the peer's SEND: bytes");
	CHECK(pattern_from(0x50000, 65536, 20 + them, 0),
	      "the peer's WRITE: bytes");
	CHECK(pattern_from(0x60000, 100, 20 + them, 0x10000),
	      "the peer's inline WRITE_IMM: bytes");
	xexpect_none(rcq, 100, "pair: an extra receive completion");
	xexpect_none(scq, 10, "pair: an extra send completion");

	/* The peer may still be reading this memory: wait until it is done. */
	CHECK(!chpp_pair_done(mine, peer, err, sizeof(err)), "pair: %s", err);
	CHECK(*target == 8000 + them, "the peer's atomics left %llu, want %u",
	      (unsigned long long)*target, 8000 + them);
	destroy(qp, NULL, scq, rcq);
	printf("chpp-verbs-ex: pair: ibv_wr_* SEND, WRITE, inline WRITE_IMM, READ, FETCH_ADD, CMP_SWP both ways, poll API, bytes verified\n");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *want = NULL, *mine = NULL, *peer = NULL;
	int i, num;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			want = argv[++i];
		} else if (!strcmp(argv[i], "--pair") && i + 2 < argc) {
			mine = argv[++i];
			peer = argv[++i];
		} else {
			printf("usage: %s [-d ibdev] [--pair MINE PEER]\n", argv[0]);
			return 2;
		}
	}
	list = ibv_get_device_list(&num);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < num; i++)
		if (want ? !strcmp(ibv_get_device_name(list[i]), want) :
			   !strncmp(ibv_get_device_name(list[i]), "chpp", 4))
			break;
	CHECK(i < num, "no chpp device among %d", num);
	ctx = ibv_open_device(list[i]);
	CHECK(ctx, "ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd");
	CHECK(!posix_memalign((void **)&buf, 4096, BUF_SIZE), "memory");
	memset(buf, 0, BUF_SIZE);
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr, "ibv_reg_mr: %s", strerror(errno));

	test_query_device_ex();
	if (mine) {
		run_pair(mine, peer);
		goto out;
	}
	test_cq_ex_attrs();
	test_qp_ex_attrs();
	test_rc_ops();
	test_batch();
	test_refusals();
	test_uc_ud();
	test_wrap();
	test_channel();
out:
	CHECK(!ibv_dereg_mr(mr), "dereg MR");
	CHECK(!ibv_dealloc_pd(pd), "dealloc PD");
	CHECK(!ibv_close_device(ctx), "close device");
	printf("chpp-verbs-ex: PASS %d checks\n", checks);
	return 0;
}
