// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-verbs-test: the libibverbs provider of chpp-hca, through standard
 * verbs (and chppdv.h), on one device in loopback: every opcode with its
 * ibv_wc opcode, flags, immediate and bytes; gather/scatter and inline;
 * ring wrap with unsignaled WQEs; a completion channel; UD with a wrong
 * Q_Key dropped; the native operations of chppdv_post_send and the QP
 * magic of chppdv_query_qp; error completions (bad rkey, RNR retries
 * exceeded, flush after the error); a shared receive queue feeding RC and
 * UD QPs, its limit event and LAST_WQE_REACHED; as many QPs as the device
 * has.
 * What rdma-core's tools (ibv_rc_pingpong, perftest) do not cover.
 *
 *   chpp-verbs-test [-d ibdev]
 *   chpp-verbs-test [-d ibdev] --pair MINE PEER
 *
 * --pair: RC traffic with the same program on another node instead. It
 * writes "lid qp_num rkey addr" to the file MINE, waits for the file PEER
 * (the caller copies the peer's MINE there), connects, runs every RC opcode
 * and a NAP both ways and checks the bytes, then creates MINE.done and waits
 * for PEER.done before it checks the atomics the peer did on its memory.
 *
 * Prints "chpp-verbs: PASS <n> checks" and exits 0, or "chpp-verbs: FAIL
 * ..." and exits 1. docs/verbs-provider.md#tests.
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
#define QKEY		0x11111111u

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

	printf("chpp-verbs: FAIL (line %d) ", line);
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

/* Regions of buf used by the tests. */
static uint8_t *at(uint32_t off)
{
	return buf + off;
}

static struct ibv_sge sge(uint32_t off, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)at(off), .length = len, .lkey = mr->lkey,
	};

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

/* One completion within ms milliseconds, or 0. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	int i, n;

	for (i = 0; i <= ms * 10; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(100);
	}
	return 0;
}

static struct ibv_wc expect(struct ibv_cq *cq, uint64_t wr_id,
			    enum ibv_wc_status status, enum ibv_wc_opcode op,
			    const char *what)
{
	struct ibv_wc wc;

	CHECK(wait_wc(cq, &wc, wc_wait_ms) == 1, "%s: no completion", what);
	CHECK(wc.wr_id == wr_id, "%s: wr_id %llu, want %llu", what,
	      (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
	CHECK(wc.status == status, "%s: status %s, want %s", what,
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == op, "%s: opcode %d, want %d", what,
		      wc.opcode, op);
	return wc;
}

static void expect_none(struct ibv_cq *cq, int ms, const char *what)
{
	struct ibv_wc wc;

	CHECK(wait_wc(cq, &wc, ms) == 0, "%s: unexpected completion %s op %d",
	      what, ibv_wc_status_str(wc.status), wc.opcode);
}

static struct ibv_qp *create_qp(enum ibv_qp_type type, struct ibv_cq *scq,
				struct ibv_cq *rcq, uint32_t wrs, uint32_t sges,
				uint32_t inl)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = type,
		.cap = { .max_send_wr = wrs, .max_recv_wr = wrs,
			 .max_send_sge = sges, .max_recv_sge = sges,
			 .max_inline_data = inl },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	CHECK(qp, "create QP: %s", strerror(errno));
	CHECK(a.cap.max_send_wr >= wrs && a.cap.max_send_sge >= sges &&
	      a.cap.max_inline_data >= inl, "QP caps %u/%u/%u",
	      a.cap.max_send_wr, a.cap.max_send_sge, a.cap.max_inline_data);
	return qp;
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

/* INIT (done) -> RTR -> RTS towards (dlid, dest). */
static void rtr_rts(struct ibv_qp *qp, uint32_t dest, int rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .rq_psn = 0, .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
		.ah_attr = { .dlid = dlid, .port_num = 1 },
	};

	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER), "modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ack_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
	      "modify to RTS");
}

static void connect_rc(struct ibv_qp *qp, uint32_t dest, int rnr_retry)
{
	to_init(qp, 0);
	rtr_rts(qp, dest, rnr_retry);
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

static void post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int err = ibv_post_send(qp, wr, &bad);

	CHECK(!err, "posting send wr_id %llu opcode %d: %s",
	      (unsigned long long)wr->wr_id, wr->opcode, strerror(err));
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), "ibv_query_qp");
	return a.qp_state;
}

static void test_device(void)
{
	struct ibv_device_attr d;
	struct chppdv_context dc;
	struct ibv_port_attr p;

	CHECK(!ibv_query_device(ctx, &d), "ibv_query_device");
	CHECK(!chppdv_query_context(ctx, &dc), "chppdv_query_context");
	/* The limits of QUERY_DEVICE are the device's (as GET_CONTEXT says). */
	CHECK((uint32_t)d.max_qp_wr == dc.max_qp_wqes &&
	      (uint32_t)d.max_sge == dc.max_sge &&
	      (uint32_t)d.max_cqe == dc.max_cq_entries,
	      "limits: wr %d/%u sge %d/%u cqe %d/%u", d.max_qp_wr,
	      dc.max_qp_wqes, d.max_sge, dc.max_sge, d.max_cqe,
	      dc.max_cq_entries);
	CHECK(d.vendor_id == CHPP_PCI_VENDOR_ID, "vendor %x", d.vendor_id);
	CHECK(d.vendor_part_id == CHPP_PCI_DEVICE_ID_PF ||
	      d.vendor_part_id == CHPP_PCI_DEVICE_ID_VF, "part %x",
	      d.vendor_part_id);
	CHECK(d.phys_port_cnt == CHPP_NUM_PORTS, "ports %d", d.phys_port_cnt);
	CHECK(d.max_qp >= 2 && d.max_qp_wr >= 64 && d.max_sge >= 4 &&
	      d.max_cqe >= 1024 && d.atomic_cap == IBV_ATOMIC_HCA &&
	      d.max_qp_rd_atom == CHPP_MAX_RD_ATOMIC,
	      "limits qp %d wr %d sge %d cqe %d atomic %d rd_atom %d",
	      d.max_qp, d.max_qp_wr, d.max_sge, d.max_cqe, d.atomic_cap,
	      d.max_qp_rd_atom);
	CHECK(!ibv_query_port(ctx, 1, &p), "ibv_query_port");
	CHECK(p.state == IBV_PORT_ACTIVE, "port state %d", p.state);
	CHECK(p.link_layer == IBV_LINK_LAYER_INFINIBAND && p.lid &&
	      p.max_mtu == IBV_MTU_4096, "port: link layer %d lid %u mtu %d",
	      p.link_layer, p.lid, p.max_mtu);
	lid = p.lid;
	dlid = lid;
	printf("chpp-verbs: %s: lid %u, max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, fw %s\n",
	       ibv_get_device_name(ctx->device), lid, d.max_qp, d.max_qp_wr,
	       d.max_sge, d.max_cqe, d.fw_ver);
}

/* Every RC opcode between two QPs of this device, checked byte by byte. */
static void test_rc_opcodes(void)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_sge s[3], r[2];
	struct ibv_send_wr wr;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	uint64_t *target = (uint64_t *)at(0x1000);

	CHECK(scq && rcq, "ibv_create_cq");
	a = create_qp(IBV_QPT_RC, scq, rcq, 16, 4, 64);
	b = create_qp(IBV_QPT_RC, scq, rcq, 16, 4, 64);
	{
		struct ibv_recv_wr rw = { .wr_id = 1 }, *bad;

		CHECK(ibv_post_recv(b, &rw, &bad) == EINVAL && bad == &rw,
		      "posting to a QP in RESET did not fail with EINVAL");
	}
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	CHECK(qp_state(a) == IBV_QPS_RTS, "A not in RTS");

	/* SEND, 3 gather entries into 2 scatter entries, 5000 bytes. */
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
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = s;
	wr.num_sge = 3;
	post_send(a, &wr);
	expect(scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND");
	wc = expect(rcq, 11, IBV_WC_SUCCESS, IBV_WC_RECV, "SEND recv");
	CHECK(wc.byte_len == 5000 && wc.qp_num == b->qp_num &&
	      wc.src_qp == a->qp_num && !(wc.wc_flags & IBV_WC_WITH_IMM) &&
	      wc.slid == lid, "SEND wc: len %u qp %x src %x flags %x slid %u",
	      wc.byte_len, wc.qp_num, wc.src_qp, wc.wc_flags, wc.slid);
	CHECK(!memcmp(at(0x20000), at(0x10000), 1000) &&
	      !memcmp(at(0x20000 + 1000), at(0x11000), 1500) &&
	      !memcmp(at(0x28000), at(0x11000 + 1500), 1500) &&
	      !memcmp(at(0x28000 + 1500), at(0x14000), 1000),
	      "SEND data scattered wrongly");

	/* SEND_WITH_IMM, solicited. */
	post_recv(b, 12, r, 1);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0x12345678);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	wr.num_sge = 1;
	post_send(a, &wr);
	expect(scq, 2, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND_IMM");
	wc = expect(rcq, 12, IBV_WC_SUCCESS, IBV_WC_RECV, "SEND_IMM recv");
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc.imm_data) == 0x12345678 && wc.byte_len == 1000,
	      "SEND_IMM wc flags %x imm %x len %u", wc.wc_flags,
	      be32toh(wc.imm_data), wc.byte_len);

	/* Inline SEND: the data is copied at post time. */
	pattern(0x30000, 60, 9);
	post_recv(b, 13, r, 1);
	s[0] = sge(0x30000, 60);
	s[0].lkey = 0;		/* inline data needs no key */
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	post_send(a, &wr);
	memset(at(0x30000), 0xee, 60);
	expect(scq, 3, IBV_WC_SUCCESS, IBV_WC_SEND, "inline SEND");
	wc = expect(rcq, 13, IBV_WC_SUCCESS, IBV_WC_RECV, "inline recv");
	pattern(0x30000, 60, 9);
	CHECK(wc.byte_len == 60 && !memcmp(at(0x20000), at(0x30000), 60),
	      "inline SEND data (len %u)", wc.byte_len);

	/* RDMA WRITE, 20000 bytes (20 packets): no receive consumed. */
	pattern(0x40000, 20000, 4);
	memset(at(0x50000), 0, 20000);
	s[0] = sge(0x40000, 20000);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)at(0x50000);
	wr.wr.rdma.rkey = mr->rkey;
	post_send(a, &wr);
	expect(scq, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	CHECK(same_pattern(0x50000, 20000, 4), "RDMA WRITE data");
	expect_none(rcq, 20, "RDMA WRITE consumed a receive");

	/* RDMA WRITE_WITH_IMM. */
	post_recv(b, 14, r, 1);
	wr.wr_id = 5;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0xcafe);
	s[0] = sge(0x40000, 4096);
	wr.wr.rdma.remote_addr = (uintptr_t)at(0x60000);
	post_send(a, &wr);
	expect(scq, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "WRITE_IMM");
	wc = expect(rcq, 14, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "WRITE_IMM recv");
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc.imm_data) == 0xcafe && wc.byte_len == 4096 &&
	      same_pattern(0x60000, 4096, 4), "WRITE_IMM wc/data");

	/* RDMA READ, 9000 bytes. */
	pattern(0x70000, 9000, 5);
	memset(at(0x80000), 0, 9000);
	s[0] = sge(0x80000, 9000);
	wr.wr_id = 6;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)at(0x70000);
	post_send(a, &wr);
	wc = expect(scq, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "RDMA READ");
	CHECK(wc.byte_len == 9000 && same_pattern(0x80000, 9000, 5),
	      "RDMA READ data/len %u", wc.byte_len);

	/* Atomics: fetch-and-add, then compare-and-swap hit and miss. */
	*target = 1000;
	s[0] = sge(0x1100, 8);
	wr.wr_id = 7;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = mr->rkey;
	wr.wr.atomic.compare_add = 23;
	post_send(a, &wr);
	expect(scq, 7, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, "FETCH_ADD");
	CHECK(*(uint64_t *)at(0x1100) == 1000 && *target == 1023,
	      "FETCH_ADD: got %llu, target %llu",
	      (unsigned long long)*(uint64_t *)at(0x1100),
	      (unsigned long long)*target);
	wr.wr_id = 8;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1023;
	wr.wr.atomic.swap = 77;
	post_send(a, &wr);
	expect(scq, 8, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "CMP_SWP");
	CHECK(*(uint64_t *)at(0x1100) == 1023 && *target == 77,
	      "CMP_SWP hit: target %llu", (unsigned long long)*target);
	wr.wr_id = 9;
	wr.wr.atomic.swap = 5;
	post_send(a, &wr);
	expect(scq, 9, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "CMP_SWP miss");
	CHECK(*(uint64_t *)at(0x1100) == 77 && *target == 77,
	      "CMP_SWP miss: target %llu", (unsigned long long)*target);

	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: RC opcodes OK (SEND 3->2 SGEs, SEND_IMM, inline, WRITE, WRITE_IMM, READ, FETCH_ADD, CMP_SWP)\n");
}

/*
 * 600 WRITEs through a 32-deep SQ, signaling every 8th: slots are freed
 * by the signaled completions; a post beyond the free slots fails.
 */
static void test_ring_wrap(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	struct ibv_send_wr wr, *bad;
	struct ibv_qp *a, *b;
	struct ibv_sge s;
	struct ibv_wc wc;
	int i, done = 0, err;

	CHECK(cq, "create CQ");
	a = create_qp(IBV_QPT_RC, cq, cq, 32, 1, 0);
	b = create_qp(IBV_QPT_RC, cq, cq, 32, 1, 0);
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.rkey = mr->rkey;
	for (i = 0; i < 600; i++) {
		pattern(0x100000 + (i % 64) * 64, 64, i);
		s = sge(0x100000 + (i % 64) * 64, 64);
		wr.wr_id = 1000 + i;
		wr.send_flags = (i % 8 == 7) ? IBV_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = (uintptr_t)at(0x180000 + i * 64);
		while ((err = ibv_post_send(a, &wr, &bad)) == ENOMEM) {
			CHECK(wait_wc(cq, &wc, 5000) == 1, "ring wrap: stuck at %d",
			      i);
			CHECK(wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == (uint64_t)1000 + done * 8 + 7,
			      "ring wrap: wc %llu %s",
			      (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
			done++;
		}
		CHECK(!err, "ring wrap: post %d: %s", i, strerror(err));
	}
	while (done < 600 / 8) {
		CHECK(wait_wc(cq, &wc, 5000) == 1, "ring wrap: tail stuck");
		CHECK(wc.wr_id == (uint64_t)1000 + done * 8 + 7, "wc order");
		done++;
	}
	expect_none(cq, 20, "ring wrap: extra completion");
	for (i = 0; i < 600; i++)
		CHECK(same_pattern(0x180000 + i * 64, 64, i), "ring wrap data %d",
		      i);
	/* A full queue refuses the next post with ENOMEM. */
	wr.send_flags = 0;
	for (i = 0; i < 32; i++)
		post_send(a, &wr);
	CHECK(ibv_post_send(a, &wr, &bad) == ENOMEM && bad == &wr,
	      "post to a full SQ did not fail with ENOMEM");
	usleep(200000);
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(cq), "destroy CQ");
	printf("chpp-verbs: 600 WRITEs through a 32-deep SQ, unsignaled x7, full SQ -> ENOMEM\n");
}

/* ibv_req_notify_cq + ibv_get_cq_event on a completion channel. */
static void test_channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq, *rcq, *ev_cq;
	struct ibv_send_wr wr;
	struct ibv_qp *a, *b;
	struct pollfd pfd;
	struct ibv_sge s;
	struct ibv_wc wc;
	void *ev_ctx;
	int round;

	CHECK(ch, "ibv_create_comp_channel");
	scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 16, (void *)0x5a5a, ch, 0);
	CHECK(scq && rcq, "create CQs");
	a = create_qp(IBV_QPT_RC, scq, rcq, 8, 1, 0);
	b = create_qp(IBV_QPT_RC, scq, rcq, 8, 1, 0);
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	for (round = 0; round < 3; round++) {
		CHECK(!ibv_req_notify_cq(rcq, 0), "ibv_req_notify_cq");
		CHECK(poll(&pfd, 1, 50) == 0, "event before any completion");
		s = sge(0x1200, 16);
		post_recv(b, 100 + round, &s, 1);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 200 + round;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &s;
		wr.num_sge = 1;
		post_send(a, &wr);
		CHECK(poll(&pfd, 1, 5000) == 1, "no completion event (round %d)",
		      round);
		CHECK(!ibv_get_cq_event(ch, &ev_cq, &ev_ctx), "ibv_get_cq_event");
		CHECK(ev_cq == rcq && ev_ctx == (void *)0x5a5a,
		      "event for the wrong CQ");
		ibv_ack_cq_events(ev_cq, 1);
		CHECK(ibv_poll_cq(rcq, 1, &wc) == 1 && wc.wr_id == (uint64_t)100 + round,
		      "poll after the event");
		expect(scq, 200 + round, IBV_WC_SUCCESS, IBV_WC_SEND, "send");
	}
	/* Not armed: a completion raises no event. */
	post_recv(b, 110, &s, 1);
	wr.wr_id = 210;
	post_send(a, &wr);
	expect(rcq, 110, IBV_WC_SUCCESS, IBV_WC_RECV, "unarmed recv");
	CHECK(poll(&pfd, 1, 100) == 0, "event without arming");
	expect(scq, 210, IBV_WC_SUCCESS, IBV_WC_SEND, "send");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(rcq), "destroy CQs");
	CHECK(!ibv_destroy_comp_channel(ch), "destroy channel");
	printf("chpp-verbs: completion channel: 3 armed events, none unarmed\n");
}

/* UD: SEND to an AH with the right Q_Key arrives (after the 40-byte GRH). */
static void test_ud(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
	struct ibv_send_wr wr;
	struct ibv_qp *a, *b;
	struct ibv_sge s, r;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	CHECK(cq && rcq, "create CQs");
	a = create_qp(IBV_QPT_UD, cq, rcq, 8, 1, 0);
	b = create_qp(IBV_QPT_UD, cq, rcq, 8, 1, 0);
	ready_ud(a);
	ready_ud(b);
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah, "ibv_create_ah");
	pattern(0x1400, 1000, 6);
	memset(at(0x2000), 0, 2048);
	r = sge(0x2000, 2048);
	post_recv(b, 31, &r, 1);
	s = sge(0x1400, 1000);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 21;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(77);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	post_send(a, &wr);
	expect(cq, 21, IBV_WC_SUCCESS, IBV_WC_SEND, "UD send");
	wc = expect(rcq, 31, IBV_WC_SUCCESS, IBV_WC_RECV, "UD recv");
	CHECK(wc.src_qp == a->qp_num && be32toh(wc.imm_data) == 77 &&
	      wc.byte_len == 1000 + CHPP_UD_GRH_SIZE &&
	      !memcmp(at(0x2000 + CHPP_UD_GRH_SIZE), at(0x1400), 1000),
	      "UD recv: src %x (want %x) len %u", wc.src_qp, a->qp_num,
	      wc.byte_len);
	/* A wrong Q_Key: dropped by the receiver, the sender completes. */
	post_recv(b, 32, &r, 1);
	wr.wr_id = 22;
	wr.wr.ud.remote_qkey = QKEY + 1;
	post_send(a, &wr);
	expect(cq, 22, IBV_WC_SUCCESS, IBV_WC_SEND, "UD send, wrong qkey");
	expect_none(rcq, 100, "UD with a wrong Q_Key was received");
	CHECK(!ibv_destroy_ah(ah), "destroy AH");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(cq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: UD SEND_IMM with GRH, wrong Q_Key dropped\n");
}

/* chppdv: QP magic, NAP-immediate, NAP-indirect, PUT, GET. */
static void test_dv(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct chppdv_send_wr w;
	struct chppdv_context dc;
	struct chppdv_qp dq;
	struct ibv_qp *a, *b;
	struct ibv_sge s, r;
	struct ibv_wc wc;

	CHECK(cq && rcq, "create CQs");
	CHECK(!chppdv_query_context(ctx, &dc) && dc.qpn_bits, "chppdv_query_context");
	a = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 256);
	b = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	CHECK(!chppdv_query_qp(a, &dq), "chppdv_query_qp");
	CHECK(dq.magic == a->qp_num >> dc.qpn_bits && dq.magic &&
	      dq.qpn == (a->qp_num & ((1u << dc.qpn_bits) - 1)) &&
	      dq.max_inline >= 256, "chppdv_qp: qpn %u magic %u of qp_num %x",
	      dq.qpn, dq.magic, a->qp_num);
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	r = sge(0x3000, 4096);

	pattern(0x1800, 200, 7);
	post_recv(b, 41, &r, 1);
	memset(&w, 0, sizeof(w));
	s = sge(0x1800, 200);
	w.wr_id = 51;
	w.opcode = CHPPDV_WR_NAP_IMMEDIATE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.sg_list = &s;
	w.num_sge = 1;
	CHECK(!chppdv_post_send(a, &w, 1, NULL), "post NAP-immediate");
	expect(cq, 51, IBV_WC_SUCCESS, IBV_WC_SEND, "NAP-immediate");
	wc = expect(rcq, 41, IBV_WC_SUCCESS, IBV_WC_RECV, "NAP-immediate recv");
	CHECK(wc.byte_len == 200 && same_pattern(0x3000, 200, 7),
	      "NAP-immediate data");

	pattern(0x1800, 2048, 8);
	post_recv(b, 42, &r, 1);
	s = sge(0x1800, 2048);
	w.wr_id = 52;
	w.opcode = CHPPDV_WR_NAP_INDIRECT;
	CHECK(!chppdv_post_send(a, &w, 1, NULL), "post NAP-indirect");
	expect(cq, 52, IBV_WC_SUCCESS, IBV_WC_SEND, "NAP-indirect");
	wc = expect(rcq, 42, IBV_WC_SUCCESS, IBV_WC_RECV, "NAP-indirect recv");
	CHECK(wc.byte_len == 2048 && same_pattern(0x3000, 2048, 8),
	      "NAP-indirect data");

	pattern(0x1800, 3000, 9);
	w.wr_id = 53;
	w.opcode = CHPPDV_WR_PUT;
	s = sge(0x1800, 3000);
	w.remote_addr = (uintptr_t)at(0x5000);
	w.rkey = mr->rkey;
	CHECK(!chppdv_post_send(a, &w, 1, NULL), "post PUT");
	expect(cq, 53, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "PUT");
	CHECK(same_pattern(0x5000, 3000, 9), "PUT data");
	memset(at(0x8000), 0, 3000);
	w.wr_id = 54;
	w.opcode = CHPPDV_WR_GET;
	s = sge(0x8000, 3000);
	CHECK(!chppdv_post_send(a, &w, 1, NULL), "post GET");
	expect(cq, 54, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "GET");
	CHECK(same_pattern(0x8000, 3000, 9), "GET data");
	/* A NAP over 2 KiB is refused by the device. */
	post_recv(b, 43, &r, 1);
	s = sge(0x1800, 2049);
	w.wr_id = 55;
	w.opcode = CHPPDV_WR_NAP_INDIRECT;
	CHECK(!chppdv_post_send(a, &w, 1, NULL), "post long NAP");
	expect(cq, 55, IBV_WC_LOC_LEN_ERR, 0, "NAP over 2048 bytes");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(cq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: chppdv: magic %u, NAP-immediate, NAP-indirect, PUT, GET, NAP > 2 KiB -> LOC_LEN_ERR\n",
	       dq.magic);
}

/*
 * Errors: a WRITE with a bad rkey completes REM_ACCESS_ERR and moves the
 * requester to ERR, which flushes its later sends and its receives; a SEND
 * without a receive WQE at the peer ends in RNR_RETRY_EXC_ERR (rnr_retry 0).
 */
static void test_errors(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_send_wr wr;
	struct ibv_qp *a, *b;
	struct ibv_sge s, r;

	CHECK(cq && rcq, "create CQs");
	a = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	b = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	r = sge(0x3000, 64);
	post_recv(a, 61, &r, 1);
	post_recv(a, 62, &r, 1);
	s = sge(0x1800, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 71;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)at(0x5000);
	wr.wr.rdma.rkey = mr->rkey ^ 0x5500;
	post_send(a, &wr);
	expect(cq, 71, IBV_WC_REM_ACCESS_ERR, 0, "WRITE with a bad rkey");
	CHECK(qp_state(a) == IBV_QPS_ERR, "requester not in ERR");
	wr.wr_id = 72;
	wr.wr.rdma.rkey = mr->rkey;
	post_send(a, &wr);
	expect(rcq, 61, IBV_WC_WR_FLUSH_ERR, 0, "receive 1 flushed");
	expect(rcq, 62, IBV_WC_WR_FLUSH_ERR, 0, "receive 2 flushed");
	expect(cq, 72, IBV_WC_WR_FLUSH_ERR, 0, "send after the error");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");

	a = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	b = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	connect_rc(a, b->qp_num, 0);
	connect_rc(b, a->qp_num, 7);
	wr.wr_id = 73;
	wr.opcode = IBV_WR_SEND;
	post_send(a, &wr);
	expect(cq, 73, IBV_WC_RNR_RETRY_EXC_ERR, 0, "SEND without a receive");
	CHECK(qp_state(a) == IBV_QPS_ERR, "RNR: requester not in ERR");
	CHECK(qp_state(b) == IBV_QPS_RTS, "RNR: responder left RTS");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");

	/* RESET removes the QP's completions not yet polled from its CQs. */
	a = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	b = create_qp(IBV_QPT_RC, cq, rcq, 8, 1, 0);
	connect_rc(a, b->qp_num, 7);
	connect_rc(b, a->qp_num, 7);
	post_recv(b, 63, &r, 1);
	wr.wr_id = 74;
	post_send(a, &wr);
	expect(cq, 74, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND before the reset");
	{
		struct ibv_qp_attr ra = { .qp_state = IBV_QPS_RESET };

		CHECK(!ibv_modify_qp(b, &ra, IBV_QP_STATE), "modify to RESET");
	}
	expect_none(rcq, 50, "the receive of a reset QP was still in its CQ");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy QPs");
	CHECK(!ibv_destroy_cq(cq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: errors: bad rkey -> REM_ACCESS_ERR, ERR, flushes; RNR -> RNR_RETRY_EXC_ERR; RESET cleans the CQ\n");
}

/* As many RC QPs as the device has, in pairs, all moving data at once. */
/*
 * The next async event of @type within 5 s (events of other types, left
 * by earlier tests, are skipped).
 */
static struct ibv_async_event async_event(enum ibv_event_type type,
					  const char *what)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int i;

	for (i = 0; i < 100; i++) {
		CHECK(poll(&pfd, 1, 5000) == 1, "%s: no %s event", what,
		      ibv_event_type_str(type));
		CHECK(!ibv_get_async_event(ctx, &ev),
		      "%s: ibv_get_async_event", what);
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return ev;
	}
	fail(__LINE__, "%s: no %s event among 100", what,
	     ibv_event_type_str(type));
}

static void post_srq(struct ibv_srq *srq, uint64_t wr_id, uint32_t off,
		     uint32_t len)
{
	struct ibv_sge r = sge(off, len);
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &r, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK(!ibv_post_srq_recv(srq, &wr, &bad), "posting SRQ receive %llu",
	      (unsigned long long)wr_id);
}

/*
 * A shared receive queue (ABI 1.5): two RC QPs connected to each other
 * and a UD QP take their receives from it, in the order they were posted; its limit event; a QP
 * entering ERR says LAST_WQE_REACHED; a full SRQ refuses more receives.
 */
static void test_srq(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8,
						.max_send_sge = 1 } };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	/* 0 <-> 1 RC, both on the SRQ; 2 -> 3 UD, 3 on the SRQ: 4 QPs, a VF's. */
	static const uint32_t from[4] = { 0, 1, 2, 0 }, to[4] = { 1, 0, 3, 1 };
	struct ibv_qp *qp[4];
	struct ibv_async_event ev;
	struct ibv_device_attr d;
	struct ibv_srq_attr sat;
	struct ibv_recv_wr rwr, *bad;
	struct ibv_send_wr wr;
	struct ibv_srq *srq;
	struct ibv_sge s;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	uint32_t i, n;

	CHECK(!ibv_query_device(ctx, &d), "query device");
	CHECK(d.max_srq > 0 && d.max_srq_wr >= 1024 && d.max_srq_sge >= 1,
	      "SRQ limits: srq %d wr %d sge %d", d.max_srq, d.max_srq_wr,
	      d.max_srq_sge);
	CHECK(cq && rcq, "create CQs");
	srq = ibv_create_srq(pd, &sa);
	CHECK(srq, "ibv_create_srq: %s", strerror(errno));
	CHECK(sa.attr.max_wr >= 8 && sa.attr.max_sge >= 1, "SRQ caps %u/%u",
	      sa.attr.max_wr, sa.attr.max_sge);
	qa.send_cq = cq;
	qa.recv_cq = rcq;
	for (i = 0; i < 4; i++) {
		qa.qp_type = i < 2 ? IBV_QPT_RC : IBV_QPT_UD;
		qa.srq = i == 2 ? NULL : srq;
		qa.cap.max_recv_wr = qa.srq ? 0 : 4;
		qa.cap.max_recv_sge = qa.srq ? 0 : 1;
		qp[i] = ibv_create_qp(pd, &qa);
		CHECK(qp[i], "create QP %u: %s", i, strerror(errno));
	}
	connect_rc(qp[0], qp[1]->qp_num, 7);
	connect_rc(qp[1], qp[0]->qp_num, 7);
	ready_ud(qp[2]);
	ready_ud(qp[3]);
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah, "ibv_create_ah");
	/* A QP on an SRQ has no receive queue of its own. */
	s = sge(0x1000, 64);
	rwr = (struct ibv_recv_wr) { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
	CHECK(ibv_post_recv(qp[1], &rwr, &bad), "post_recv on an SRQ's QP");

	for (i = 0; i < 8; i++)
		post_srq(srq, 500 + i, 0x40000 + i * 4096, 4096);
	/* Full: the ninth is refused until a WQE is freed. */
	rwr.wr_id = 508;
	s = sge(0x40000, 4096);
	CHECK(ibv_post_srq_recv(srq, &rwr, &bad) == ENOMEM, "SRQ overfilled");
	for (i = 0; i < 4; i++) {
		uint32_t len = 100 + 1000 * i;

		pattern(0x1000 + i * 8192, len, 40 + i);
		s = sge(0x1000 + i * 8192, len);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 60 + i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &s;
		wr.num_sge = 1;
		if (to[i] == 3) {
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = qp[3]->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
		}
		post_send(qp[from[i]], &wr);
		expect(cq, 60 + i, IBV_WC_SUCCESS, IBV_WC_SEND, "SRQ: send");
		wc = expect(rcq, 500 + i, IBV_WC_SUCCESS, IBV_WC_RECV,
			    "SRQ: receive");
		n = to[i] == 3 ? CHPP_UD_GRH_SIZE : 0;
		CHECK(wc.qp_num == qp[to[i]]->qp_num && wc.byte_len == len + n &&
		      !memcmp(at(0x40000 + i * 4096 + n),
			      at(0x1000 + i * 8192), len),
		      "SRQ receive %u: qp %x (want %x) len %u", i, wc.qp_num,
		      qp[to[i]]->qp_num, wc.byte_len);
	}
	/* Four WQEs were freed: four more fit, not five. */
	for (i = 8; i < 12; i++)
		post_srq(srq, 500 + i, 0x40000 + (i % 8) * 4096, 4096);
	CHECK(ibv_post_srq_recv(srq, &rwr, &bad) == ENOMEM, "SRQ overfilled");

	/* The limit: 8 left; armed at 7, the second receive fires it. */
	sat.srq_limit = 7;
	CHECK(!ibv_modify_srq(srq, &sat, IBV_SRQ_LIMIT), "arm the SRQ limit");
	CHECK(!ibv_query_srq(srq, &sat) && sat.srq_limit == 7 &&
	      sat.max_wr >= 8, "query SRQ: limit %u", sat.srq_limit);
	for (i = 4; i < 6; i++) {
		s = sge(0x1000, 64);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 60 + i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &s;
		wr.num_sge = 1;
		post_send(qp[1], &wr);
		expect(cq, 60 + i, IBV_WC_SUCCESS, IBV_WC_SEND, "SRQ: send");
		expect(rcq, 500 + i, IBV_WC_SUCCESS, IBV_WC_RECV,
		       "SRQ: receive");
	}
	ev = async_event(IBV_EVENT_SRQ_LIMIT_REACHED, "SRQ limit");
	CHECK(ev.element.srq == srq, "SRQ limit event: another SRQ");
	CHECK(!ibv_query_srq(srq, &sat) && sat.srq_limit == 0,
	      "SRQ limit still %u after the event", sat.srq_limit);

	/* A QP on the SRQ to ERR: LAST_WQE_REACHED, no receive flushed. */
	CHECK(!ibv_modify_qp(qp[3], &err, IBV_QP_STATE), "QP to ERR");
	ev = async_event(IBV_EVENT_QP_LAST_WQE_REACHED, "last WQE");
	CHECK(ev.element.qp == qp[3], "LAST_WQE_REACHED for another QP");
	expect_none(rcq, 100, "SRQ receive flushed by a QP's error");

	CHECK(!ibv_destroy_ah(ah), "destroy AH");
	for (i = 0; i < 4; i++)
		CHECK(!ibv_destroy_qp(qp[i]), "destroy QP %u", i);
	CHECK(!ibv_destroy_srq(srq), "destroy SRQ");
	CHECK(!ibv_destroy_cq(cq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: SRQ: RC and UD receives in posting order, full SRQ refused, limit event, LAST_WQE_REACHED\n");
}

static void test_many_qps(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	struct ibv_device_attr d;
	struct ibv_qp *qp[256];
	struct ibv_send_wr wr;
	struct ibv_sge s, r;
	struct ibv_wc wc;
	int n, i, got = 0;
	uint32_t off;

	CHECK(cq, "create CQ");
	CHECK(!ibv_query_device(ctx, &d), "query device");
	n = d.max_qp > 256 ? 256 : d.max_qp & ~1;
	for (i = 0; i < n; i++)
		qp[i] = create_qp(IBV_QPT_RC, cq, cq, 2, 1, 0);
	for (i = 0; i < n; i++)
		connect_rc(qp[i], qp[i ^ 1]->qp_num, 7);
	for (i = 0; i < n; i++) {
		off = 0x100000 + i * 2048;
		r = sge(off + 1024, 1024);
		post_recv(qp[i], 1000 + i, &r, 1);
	}
	for (i = 0; i < n; i++) {
		off = 0x100000 + i * 2048;
		pattern(off, 1024, i);
		s = sge(off, 1024);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &s;
		wr.num_sge = 1;
		post_send(qp[i], &wr);
	}
	while (got < 2 * n) {
		CHECK(wait_wc(cq, &wc, 5000) == 1, "many QPs: %d of %d", got,
		      2 * n);
		CHECK(wc.status == IBV_WC_SUCCESS, "many QPs: %s",
		      ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_RECV) {
			i = wc.wr_id - 1000;
			CHECK(i >= 0 && i < n && wc.qp_num == qp[i]->qp_num &&
			      wc.src_qp == qp[i ^ 1]->qp_num,
			      "many QPs: recv on the wrong QP");
			CHECK(same_pattern(0x100000 + i * 2048 + 1024, 1024,
					   i ^ 1), "many QPs: data of QP %d", i);
		}
		got++;
	}
	/* One more QP than the device has is refused. */
	if (d.max_qp <= 256) {
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *extra = n == d.max_qp ? ibv_create_qp(pd, &a) :
					NULL;

		CHECK(!extra, "QP number %d of %d created", n + 1, d.max_qp);
	}
	for (i = 0; i < n; i++)
		CHECK(!ibv_destroy_qp(qp[i]), "destroy QP %d", i);
	CHECK(!ibv_destroy_cq(cq), "destroy CQ");
	printf("chpp-verbs: %d QPs (all of the device's) in %d pairs moved data at once\n",
	       n, n / 2);
}

/*
 * RC traffic with the same program on the peer node, both ways at once:
 * SEND (2 gather entries), RDMA WRITE, WRITE_WITH_IMM (its receive tells
 * that the peer's writes landed), RDMA READ, FETCH_ADD and CMP_SWP on the
 * peer's memory, and a NAP-indirect. Patterns are seeded by the sender's
 * node id, so each side checks the bytes the other one produced.
 */
static void run_pair(const char *mine, const char *peer)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	unsigned int me, them;
	uint64_t *target = (uint64_t *)at(0x1000);
	struct chppdv_context dc;
	struct chppdv_send_wr w;
	struct ibv_send_wr wr;
	struct ibv_sge s[2], r;
	struct chpp_pair_info mi, pi;
	char err[256];
	struct ibv_qp *qp;
	struct ibv_wc wc;

	CHECK(scq && rcq, "create CQs");
	CHECK(!chppdv_query_context(ctx, &dc), "chppdv_query_context");
	me = dc.node_id;
	wc_wait_ms = 60000;
	/* 1.07 s x 7 retries: the peer may reach RTR seconds after us. */
	ack_timeout = 18;
	qp = create_qp(IBV_QPT_RC, scq, rcq, 16, 2, 0);
	pattern(0x10000, 0x20000, 10 + me);
	*target = 1000;
	mi = (struct chpp_pair_info){ .lid = lid, .qp_num = qp->qp_num,
		.rkey = mr->rkey, .addr = (uintptr_t)buf };
	CHECK(!chpp_pair_exchange(mine, peer, &mi, &pi, err, sizeof(err)),
	      "pair: %s", err);
	them = CHPP_LID_NODE(pi.lid);
	printf("chpp-verbs: pair: node %u (lid %u qp_num 0x%x) <-> node %u (lid %u qp_num 0x%x)\n",
	       me, lid, qp->qp_num, them, pi.lid, pi.qp_num);
	dlid = pi.lid;
	/* Receives in INIT, before the peer can send. */
	to_init(qp, 0);
	r = sge(0x40000, 8192);
	post_recv(qp, 101, &r, 1);
	r = sge(0x42000, 16);
	post_recv(qp, 102, &r, 1);
	r = sge(0x43000, 2048);
	post_recv(qp, 103, &r, 1);
	rtr_rts(qp, pi.qp_num, 7);

	memset(&wr, 0, sizeof(wr));
	s[0] = sge(0x10000, 1000);
	s[1] = sge(0x11000, 2000);
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = s;
	wr.num_sge = 2;
	post_send(qp, &wr);
	expect(scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND, "pair SEND");

	s[0] = sge(0x10000, 65536);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = pi.addr + 0x50000;
	wr.wr.rdma.rkey = pi.rkey;
	post_send(qp, &wr);
	expect(scq, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "pair WRITE");

	s[0] = sge(0x20000, 4096);
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0xabc0 + me);
	wr.wr.rdma.remote_addr = pi.addr + 0x60000;
	post_send(qp, &wr);
	expect(scq, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "pair WRITE_IMM");

	memset(at(0x70000), 0, 32768);
	s[0] = sge(0x70000, 32768);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = pi.addr + 0x18000;
	post_send(qp, &wr);
	wc = expect(scq, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "pair READ");
	CHECK(wc.byte_len == 32768, "pair READ: %u bytes", wc.byte_len);
	/* The peer's pattern starts at its offset 0x10000. */
	CHECK(pattern_from(0x70000, 32768, 10 + them, 0x8000),
	      "pair READ: not the peer's bytes");

	s[0] = sge(0x1100, 8);
	wr.wr_id = 5;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = pi.addr + 0x1000;
	wr.wr.atomic.rkey = pi.rkey;
	wr.wr.atomic.compare_add = me;
	post_send(qp, &wr);
	expect(scq, 5, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, "pair FETCH_ADD");
	CHECK(*(uint64_t *)at(0x1100) == 1000, "pair FETCH_ADD returned %llu",
	      (unsigned long long)*(uint64_t *)at(0x1100));
	wr.wr_id = 6;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1000 + me;
	wr.wr.atomic.swap = 7000 + me;
	post_send(qp, &wr);
	expect(scq, 6, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, "pair CMP_SWP");
	CHECK(*(uint64_t *)at(0x1100) == 1000 + me, "pair CMP_SWP returned %llu",
	      (unsigned long long)*(uint64_t *)at(0x1100));

	memset(&w, 0, sizeof(w));
	s[0] = sge(0x12000, 2048);
	w.wr_id = 7;
	w.opcode = CHPPDV_WR_NAP_INDIRECT;
	w.send_flags = IBV_SEND_SIGNALED;
	w.sg_list = s;
	w.num_sge = 1;
	CHECK(!chppdv_post_send(qp, &w, 1, NULL), "post NAP");
	expect(scq, 7, IBV_WC_SUCCESS, IBV_WC_SEND, "pair NAP");

	/* What the peer did to this node. */
	wc = expect(rcq, 101, IBV_WC_SUCCESS, IBV_WC_RECV, "the peer's SEND");
	CHECK(wc.byte_len == 3000 && wc.src_qp == pi.qp_num && wc.slid == pi.lid,
	      "the peer's SEND: %u bytes from 0x%x lid %u", wc.byte_len,
	      wc.src_qp, wc.slid);
	wc = expect(rcq, 102, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		    "the peer's WRITE_IMM");
	CHECK(be32toh(wc.imm_data) == 0xabc0 + them && wc.byte_len == 4096,
	      "the peer's WRITE_IMM: imm 0x%x", be32toh(wc.imm_data));
	wc = expect(rcq, 103, IBV_WC_SUCCESS, IBV_WC_RECV, "the peer's NAP");
	CHECK(wc.byte_len == 2048, "the peer's NAP: %u bytes", wc.byte_len);
	CHECK(pattern_from(0x40000, 1000, 10 + them, 0) &&
	      pattern_from(0x40000 + 1000, 2000, 10 + them, 0x1000),
	      "the peer's SEND: bytes");
	CHECK(pattern_from(0x50000, 65536, 10 + them, 0),
	      "the peer's WRITE: bytes");
	CHECK(pattern_from(0x60000, 4096, 10 + them, 0x10000),
	      "the peer's WRITE_IMM: bytes");
	CHECK(pattern_from(0x43000, 2048, 10 + them, 0x2000),
	      "the peer's NAP: bytes");
	expect_none(rcq, 100, "pair: an extra receive completion");
	expect_none(scq, 10, "pair: an extra send completion");

	/* The peer may still be reading this memory: wait until it is done. */
	CHECK(!chpp_pair_done(mine, peer, err, sizeof(err)), "pair: %s", err);
	CHECK(*target == 7000 + them, "the peer's atomics left %llu, want %u",
	      (unsigned long long)*target, 7000 + them);
	CHECK(!ibv_destroy_qp(qp), "destroy QP");
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(rcq), "destroy CQs");
	printf("chpp-verbs: pair: SEND, WRITE, WRITE_IMM, READ, FETCH_ADD, CMP_SWP, NAP both ways, bytes verified\n");
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

	test_device();
	if (mine) {
		run_pair(mine, peer);
		goto out;
	}
	test_rc_opcodes();
	test_ring_wrap();
	test_channel();
	test_ud();
	test_dv();
	test_errors();
	test_srq();
	test_many_qps();
out:
	CHECK(!ibv_dereg_mr(mr), "dereg MR");
	CHECK(!ibv_dealloc_pd(pd), "dealloc PD");
	CHECK(!ibv_close_device(ctx), "close device");
	printf("chpp-verbs: PASS %d checks\n", checks);
	return 0;
}
