// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * chpp-uverbs-test: user-space (OS-bypass) access to chpp_hca through uverbs,
 * on one RC QP connected to itself (loopback through the device).
 *
 *   chpp-uverbs-test [/dev/infiniband/uverbs0]
 *   chpp-uverbs-test --pair MINE PEER [/dev/infiniband/uverbs0]
 *
 * --pair: traffic with the same program on another node instead. It writes
 * "lid qpn rkey addr" to the file MINE, waits for the file PEER (the caller
 * copies the peer's MINE there), connects, moves data both ways and checks
 * it, creates MINE.done and waits for PEER.done before tearing down.
 *
 * Prints "chpp-uverbs: <check> OK" per check and ends with
 * "chpp-uverbs: PASS <n> checks" (exit 0) or "chpp-uverbs: FAIL <why>"
 * (exit 1). The isolation check makes the device refuse one doorbell: the
 * kernel logs one "doorbell refused" line, which is expected.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "chpp_pairfile.h"
#include "chpp_user.h"

#define BUF_SIZE	(256 * 1024)
#define DEPTH		64

static int checks;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("chpp-uverbs: FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

static void ok(const char *what)
{
	checks++;
	printf("chpp-uverbs: %s OK\n", what);
	fflush(stdout);
}

static struct chpp_uctx ctx;
static struct chpp_ucq scq, rcq;
static struct chpp_uqp qp;
static struct chpp_umr mr;
static uint8_t *src, *dst;
static uint16_t lid;

/* Wait (polling, the OS-bypass way) for one CQE of @cq, up to 10 s. */
static struct chpp_ucqe wait_cqe(struct chpp_ucq *cq, const char *what)
{
	struct timespec t0, t;
	struct chpp_ucqe e;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (chpp_poll_cq(&ctx, cq, &e, 1) == 1)
			return e;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail("%s: no completion in 10 s", what);
		sched_yield();
	}
}

static void expect_send_ok(const char *what, uint64_t wr_id)
{
	struct chpp_ucqe e = wait_cqe(&scq, what);

	CHECK(e.status == CHPP_WC_SUCCESS, "%s: send status %u vendor_err %u",
	      what, e.status, e.vendor_err);
	CHECK(e.flags & CHPP_CQE_FLAG_SEND, "%s: not a send CQE", what);
	CHECK(e.wr_id == wr_id, "%s: wr_id %llx, want %llx", what,
	      (unsigned long long)e.wr_id, (unsigned long long)wr_id);
}

static struct chpp_ucqe expect_recv(const char *what, uint64_t wr_id,
				   uint32_t len)
{
	struct chpp_ucqe e = wait_cqe(&rcq, what);

	CHECK(e.status == CHPP_WC_SUCCESS, "%s: recv status %u", what, e.status);
	CHECK(!(e.flags & CHPP_CQE_FLAG_SEND), "%s: not a recv CQE", what);
	CHECK(e.wr_id == wr_id, "%s: recv wr_id %llx", what,
	      (unsigned long long)e.wr_id);
	CHECK(e.byte_len == len, "%s: byte_len %u, want %u", what, e.byte_len,
	      len);
	return e;
}

static uint8_t pat(unsigned int seed, size_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

static struct chpp_usge sge(void *p, uint32_t len)
{
	struct chpp_usge s = { (uintptr_t)p, len, mr.lkey };

	return s;
}

static void post_recv(uint64_t wr_id, void *p, uint32_t len)
{
	struct chpp_usge s = sge(p, len);

	CHECK(!chpp_post_recv(&ctx, &qp, wr_id, &s, 1), "post_recv");
}

static void test_bad_requests(uint32_t pd)
{
	struct chpp_create_cq_cmd cc = { .entries = 64 };
	struct chpp_create_qp_cmd qc = {};
	struct chpp_ucq bad = { .channel_fd = -1 };
	struct chpp_uqp badqp;
	void *ring, *m;

	ring = aligned_alloc(4096, 64 * 4096);
	CHECK(ring, "alloc");
	cc.buf_addr = (uintptr_t)ring + 64;
	CHECK(chpp_create_cq_raw(&ctx, 64, &cc, &bad) == -EINVAL,
	      "CQ ring not page aligned accepted");
	cc.buf_addr = (uintptr_t)ring;
	cc.entries = 48;
	CHECK(chpp_create_cq_raw(&ctx, 48, &cc, &bad) == -EINVAL,
	      "CQ of 48 entries (not a power of two) accepted");
	cc.entries = 64;
	cc.reserved = 1;
	CHECK(chpp_create_cq_raw(&ctx, 64, &cc, &bad) == -EINVAL,
	      "CQ with reserved bits accepted");
	ok("CQ geometry checks");

	qc.sq_buf_addr = (uintptr_t)ring;
	qc.rq_buf_addr = (uintptr_t)ring + 32 * 4096;
	qc.log_sq_size = 4;
	qc.log_sq_stride = CHPP_MIN_WQE_SHIFT - 1;
	qc.log_rq_size = 4;
	qc.log_rq_stride = CHPP_MIN_WQE_SHIFT;
	CHECK(chpp_create_qp_raw(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, &qc, &badqp) == -EINVAL,
	      "QP with a 32-byte SQ stride accepted");
	qc.log_sq_stride = CHPP_MAX_WQE_SHIFT + 1;
	CHECK(chpp_create_qp_raw(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, &qc, &badqp) == -EINVAL,
	      "QP with a 4 KiB SQ stride accepted");
	qc.log_sq_stride = 7;
	qc.log_sq_size = 24;
	CHECK(chpp_create_qp_raw(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, &qc, &badqp) == -EINVAL,
	      "QP deeper than max_qp_wqes accepted");
	qc.log_sq_size = 2;
	CHECK(chpp_create_qp_raw(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, &qc, &badqp) == -EINVAL,
	      "QP ring shallower than max_send_wr accepted");
	qc.log_sq_size = 4;
	qc.sq_buf_addr = 0x1000;	/* not this process's memory */
	CHECK(chpp_create_qp_raw(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, &qc, &badqp) < 0,
	      "QP ring at an unmapped address accepted");
	ok("QP geometry checks");
	free(ring);

	m = mmap(NULL, 2 * 4096, PROT_WRITE, MAP_SHARED, ctx.fd,
		 ctx.info.uar_mmap_offset);
	CHECK(m == MAP_FAILED, "two-page mmap of the UAR accepted");
	m = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, ctx.fd,
		 ctx.info.uar_mmap_offset + 16 * 4096);
	CHECK(m == MAP_FAILED, "mmap at an unknown offset accepted");
	ok("mmap checks");
}

static void test_send_imm(void)
{
	struct chpp_usge s = sge(src, 3000);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_SEND_IMM, .flags = CHPP_WQE_SIGNALED,
		.imm = 0x12345678, .wr_id = 0x51, .sg = &s, .num_sge = 1,
	};
	struct chpp_ucqe e;

	fill(src, 3000, 1);
	memset(dst, 0, BUF_SIZE);
	post_recv(0xa1, dst, 4096);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post SEND_IMM");
	expect_send_ok("SEND_IMM", 0x51);
	e = expect_recv("SEND_IMM", 0xa1, 3000);
	CHECK(e.opcode == CHPP_CQE_OP_RECV && (e.flags & CHPP_CQE_FLAG_IMM) &&
	      e.imm == 0x12345678, "SEND_IMM: opcode %u flags %x imm %x",
	      e.opcode, e.flags, e.imm);
	CHECK(!memcmp(src, dst, 3000), "SEND_IMM: data differs");
	ok("SEND with immediate");
}

static void test_put(void)
{
	struct chpp_usge s[2] = { sge(src, 40000), sge(src + 50000, 25536) };
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_PUT, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x52, .raddr = (uintptr_t)dst + 100, .rkey = mr.rkey,
		.sg = s, .num_sge = 2,
	};

	fill(src, BUF_SIZE, 2);
	memset(dst, 0, BUF_SIZE);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT");
	expect_send_ok("PUT", 0x52);
	CHECK(!memcmp(dst + 100, src, 40000) &&
	      !memcmp(dst + 40100, src + 50000, 25536), "PUT: data differs");
	CHECK(dst[99] == 0 && dst[100 + 65536] == 0, "PUT: wrote outside");
	ok("RDMA write (PUT), 2 SGEs, 64 KiB");
}

static void test_put_imm(void)
{
	struct chpp_usge s = sge(src, 8192);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_PUT_IMM, .flags = CHPP_WQE_SIGNALED,
		.imm = 0xcafe, .wr_id = 0x53, .raddr = (uintptr_t)dst,
		.rkey = mr.rkey, .sg = &s, .num_sge = 1,
	};
	struct chpp_ucqe e;

	fill(src, 8192, 3);
	post_recv(0xa3, dst + 200000, 16);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT_IMM");
	expect_send_ok("PUT_IMM", 0x53);
	e = expect_recv("PUT_IMM", 0xa3, 8192);
	CHECK(e.opcode == CHPP_CQE_OP_RECV_RDMA_IMM && e.imm == 0xcafe,
	      "PUT_IMM: opcode %u imm %x", e.opcode, e.imm);
	CHECK(!memcmp(src, dst, 8192), "PUT_IMM: data differs");
	ok("RDMA write with immediate");
}

static void test_get(void)
{
	struct chpp_usge s = sge(dst, 32768);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_GET, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x54, .raddr = (uintptr_t)src + 4096, .rkey = mr.rkey,
		.sg = &s, .num_sge = 1,
	};

	fill(src, BUF_SIZE, 4);
	memset(dst, 0, BUF_SIZE);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post GET");
	expect_send_ok("GET", 0x54);
	CHECK(!memcmp(dst, src + 4096, 32768), "GET: data differs");
	ok("RDMA read (GET), 32 KiB");
}

static void test_atomics(void)
{
	uint64_t *target = (uint64_t *)(dst + 4096), *old = (uint64_t *)src;
	struct chpp_usge s = sge(old, 8);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_ATOMIC_FA, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x55, .raddr = (uintptr_t)target, .rkey = mr.rkey,
		.swap_add = 5, .sg = &s, .num_sge = 1,
	};

	*target = 100;
	*old = 0;
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post FA");
	expect_send_ok("FETCH_ADD", 0x55);
	CHECK(*old == 100 && *target == 105, "FETCH_ADD: old %llu target %llu",
	      (unsigned long long)*old, (unsigned long long)*target);
	wr.opcode = CHPP_WQE_ATOMIC_CS;
	wr.wr_id = 0x56;
	wr.compare = 105;
	wr.swap_add = 7;
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post CS");
	expect_send_ok("CMP_SWAP", 0x56);
	CHECK(*old == 105 && *target == 7, "CMP_SWAP: old %llu target %llu",
	      (unsigned long long)*old, (unsigned long long)*target);
	ok("atomics (fetch-and-add, compare-and-swap)");
}

static void test_inline_nap(void)
{
	struct chpp_usge s = sge(src, 100);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_SEND,
		.flags = CHPP_WQE_SIGNALED | CHPP_WQE_INLINE,
		.wr_id = 0x57, .sg = &s, .num_sge = 1,
	};

	fill(src, 2048, 5);
	memset(dst, 0, 8192);
	post_recv(0xa7, dst, 4096);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post inline SEND");
	/* The WQE holds the data: changing the buffer now must not matter. */
	memset(src, 0xee, 100);
	expect_send_ok("inline SEND", 0x57);
	expect_recv("inline SEND", 0xa7, 100);
	fill(src, 2048, 5);
	CHECK(!memcmp(dst, src, 100), "inline SEND: data differs");
	ok("inline SEND");

	wr.opcode = CHPP_WQE_NAP;
	wr.wr_id = 0x58;
	s.length = 64;
	post_recv(0xa8, dst + 4096, 4096);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post NAP-immediate");
	expect_send_ok("NAP-immediate", 0x58);
	expect_recv("NAP-immediate", 0xa8, 64);
	CHECK(!memcmp(dst + 4096, src, 64), "NAP-immediate: data differs");

	wr.flags = CHPP_WQE_SIGNALED;
	wr.wr_id = 0x59;
	s.length = 2048;
	post_recv(0xa9, dst, 4096);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post NAP-indirect");
	expect_send_ok("NAP-indirect", 0x59);
	expect_recv("NAP-indirect", 0xa9, 2048);
	CHECK(!memcmp(dst, src, 2048), "NAP-indirect: data differs");
	ok("native NAP-immediate and NAP-indirect");
}

/* Many WQEs: the SQ ring and the CQ ring (phases) wrap several times. */
static void test_many(void)
{
	const int total = 600, chunk = 1024;
	int posted = 0, done = 0, i;

	fill(src, BUF_SIZE, 6);
	memset(dst, 0, BUF_SIZE);
	while (done < total) {
		while (posted < total && posted - done < DEPTH / 2) {
			struct chpp_usge s = sge(src + (posted % 200) * chunk, chunk);
			struct chpp_usend wr = {
				.opcode = CHPP_WQE_PUT,
				.flags = CHPP_WQE_SIGNALED, .wr_id = 1000 + posted,
				.raddr = (uintptr_t)dst + (posted % 200) * chunk,
				.rkey = mr.rkey, .sg = &s, .num_sge = 1,
			};

			CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT %d",
			      posted);
			posted++;
		}
		expect_send_ok("many PUTs", 1000 + done);
		done++;
	}
	for (i = 0; i < 200; i++)
		CHECK(!memcmp(dst + i * chunk, src + i * chunk, chunk),
		      "many PUTs: chunk %d differs", i);
	ok("600 PUTs through a 64-deep SQ and CQ (ring wrap)");
}

static void test_channel(void)
{
	struct chpp_usge s = sge(src, 256);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_SEND, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x5a, .sg = &s, .num_sge = 1,
	};
	int err;

	chpp_arm_cq(&ctx, &rcq, 0);
	err = chpp_wait_cq_event(&rcq, 300);
	CHECK(err == -ETIMEDOUT, "completion event with no completion (%d)", err);
	post_recv(0xaa, dst, 4096);
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post SEND");
	err = chpp_wait_cq_event(&rcq, 10000);
	CHECK(!err, "no completion event on the armed CQ (%d)", err);
	expect_recv("completion channel", 0xaa, 256);
	expect_send_ok("completion channel", 0x5a);
	/* Not re-armed: the next completion raises no event. */
	post_recv(0xab, dst, 4096);
	wr.wr_id = 0x5b;
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post SEND");
	expect_recv("unarmed CQ", 0xab, 256);
	expect_send_ok("unarmed CQ", 0x5b);
	err = chpp_wait_cq_event(&rcq, 300);
	CHECK(err == -ETIMEDOUT, "event from a CQ that was not armed (%d)", err);
	ok("completion channel (arm through the UAR page, event, no event unarmed)");
}

/* Another process's context cannot ring this QP's doorbell. */
static void test_isolation(void)
{
	struct chpp_uctx other;
	struct chpp_usge s = sge(src, 512);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_PUT, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x5c, .raddr = (uintptr_t)dst, .rkey = mr.rkey,
		.sg = &s, .num_sge = 1,
	};
	struct chpp_ucqe e;
	struct timespec d = { 0, 300 * 1000 * 1000 };
	int err;

	err = chpp_open(&other, "/dev/infiniband/uverbs0");
	CHECK(!err, "second context: %d", err);
	CHECK(other.info.uar_index != ctx.info.uar_index,
	      "two contexts share UAR page %u", ctx.info.uar_index);
	/* Post for real (rings our own page), then replay it from the other. */
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT");
	expect_send_ok("own doorbell", 0x5c);
	chpp_mmio_write32(other.uar + CHPP_UAR_SQ_DB,
			  (qp.qpn << CHPP_UAR_DB_QPN_SHIFT) |
			  ((qp.sq.head + 1) & CHPP_UAR_DB_PI_MASK));
	nanosleep(&d, NULL);
	CHECK(chpp_poll_cq(&ctx, &scq, &e, 1) == 0,
	      "a foreign context's doorbell started WQEs of this QP");
	chpp_close(&other);
	ok("isolation: a foreign UAR page cannot ring this QP");
}

/*
 * UD between two QPs of this context: a datagram lands after the 40-byte GRH
 * area with the sender's QP and LID in the CQE; a wrong Q_Key is dropped.
 */
static void test_ud(uint32_t pd)
{
	struct chpp_uqp ua, ub;
	struct chpp_usge s = sge(src, 1000);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_SEND_IMM, .flags = CHPP_WQE_SIGNALED,
		.imm = 0x5d5d, .wr_id = 0x71, .sg = &s, .num_sge = 1,
		.dlid = lid, .remote_qkey = 0x1111,
	};
	struct timespec d = { 0, 300 * 1000 * 1000 };
	struct chpp_ucqe e;

	CHECK(!chpp_create_qp(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_UD, 16, 1, 0,
			      &ua), "create UD QP A");
	CHECK(!chpp_create_qp(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_UD, 16, 1, 0,
			      &ub), "create UD QP B");
	CHECK(!chpp_ready_ud(&ctx, &ua, 0x2222) &&
	      !chpp_ready_ud(&ctx, &ub, 0x1111), "UD QPs to RTS");
	fill(src, 1000, 7);
	memset(dst, 0, 4096);
	{
		struct chpp_usge r = sge(dst, 4096);

		CHECK(!chpp_post_recv(&ctx, &ub, 0xc1, &r, 1), "post UD recv");
	}
	wr.remote_qp_num = ub.qp_num;
	CHECK(!chpp_post_send(&ctx, &ua, &wr), "post UD SEND");
	expect_send_ok("UD SEND", 0x71);
	e = expect_recv("UD SEND", 0xc1, 1000 + CHPP_UD_GRH_SIZE);
	CHECK((e.flags & CHPP_CQE_FLAG_IMM) && e.imm == 0x5d5d &&
	      e.src_qp == ua.qpn && CHPP_LID(e.src_node, e.src_vf) == lid,
	      "UD CQE: imm 0x%x src_qp %u src lid %u", e.imm, e.src_qp,
	      CHPP_LID(e.src_node, e.src_vf));
	CHECK(!memcmp(dst + CHPP_UD_GRH_SIZE, src, 1000), "UD: data differs");

	/* The wrong Q_Key: the datagram is dropped, the sender completes. */
	{
		struct chpp_usge r = sge(dst, 4096);

		CHECK(!chpp_post_recv(&ctx, &ub, 0xc2, &r, 1), "post UD recv");
	}
	wr.remote_qkey = 0x3333;
	wr.wr_id = 0x72;
	CHECK(!chpp_post_send(&ctx, &ua, &wr), "post UD SEND");
	expect_send_ok("UD SEND, wrong Q_Key", 0x72);
	nanosleep(&d, NULL);
	CHECK(chpp_poll_cq(&ctx, &rcq, &e, 1) == 0,
	      "a datagram with the wrong Q_Key was received");
	CHECK(!chpp_destroy_qp(&ctx, &ua) && !chpp_destroy_qp(&ctx, &ub),
	      "destroy UD QPs");
	ok("UD: datagram with immediate after the GRH area, source in the CQE, wrong Q_Key dropped");
}

/*
 * A bad rkey between two QPs of this context: the requester gets
 * REM_ACCESS_ERR and flushes what follows, the responder QP goes to error
 * with an async event (on one self-connected QP the responder's error would
 * flush the request before the NAK arrives).
 */
static void test_errors(uint32_t pd)
{
	struct chpp_uqp qa, qb;
	struct chpp_usge s = sge(src, 512);
	struct chpp_usend wr = {
		.opcode = CHPP_WQE_PUT, .flags = CHPP_WQE_SIGNALED,
		.wr_id = 0x5d, .raddr = (uintptr_t)dst, .rkey = mr.rkey ^ 0x80,
		.sg = &s, .num_sge = 1,
	};
	struct chpp_ucqe e;
	uint64_t element = 0;
	uint32_t ev = 0;
	int err;

	CHECK(!chpp_create_qp(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, 1, 0,
			      &qa), "create QP A");
	CHECK(!chpp_create_qp(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, 16, 1, 0,
			      &qb), "create QP B");
	CHECK(!chpp_connect_rc(&ctx, &qa, lid, qb.qp_num), "connect A");
	CHECK(!chpp_connect_rc(&ctx, &qb, lid, qa.qp_num), "connect B");
	CHECK(!chpp_post_send(&ctx, &qa, &wr), "post PUT");
	e = wait_cqe(&scq, "bad rkey");
	CHECK(e.status == CHPP_WC_REM_ACCESS_ERR && e.wr_id == 0x5d,
	      "bad rkey: status %u wr_id %llx, want REM_ACCESS_ERR", e.status,
	      (unsigned long long)e.wr_id);
	wr.wr_id = 0x5e;
	wr.rkey = mr.rkey;
	CHECK(!chpp_post_send(&ctx, &qa, &wr), "post after error");
	e = wait_cqe(&scq, "flush");
	CHECK(e.status == CHPP_WC_WR_FLUSH_ERR && e.wr_id == 0x5e,
	      "after the error: status %u wr_id %llx, want WR_FLUSH_ERR",
	      e.status, (unsigned long long)e.wr_id);
	/* Port events (the peer node going away) may come first: skip them. */
	do {
		err = chpp_get_async_event(&ctx, &ev, &element, 5000);
	} while (!err && (ev == CHPP_IB_EVENT_PORT_ACTIVE ||
			  ev == CHPP_IB_EVENT_PORT_ERR));
	CHECK(!err && ev == CHPP_IB_EVENT_QP_ACCESS_ERR &&
	      element == (uintptr_t)&qb,
	      "async event: err %d type %u on %s, want QP_ACCESS_ERR on B", err,
	      ev, element == (uintptr_t)&qb ? "B" : "another object");
	CHECK(!chpp_destroy_qp(&ctx, &qa) && !chpp_destroy_qp(&ctx, &qb),
	      "destroy QPs A, B");
	ok("error completions (REM_ACCESS_ERR, WR_FLUSH_ERR), responder QP async event");
}

/* Bytes [off, off + len) of @p must be the pattern of @seed from @from. */
static void check_pat(const uint8_t *p, size_t len, unsigned int seed,
		      size_t from, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(p[i] == pat(seed, from + i), "%s: byte %zu is 0x%02x, want 0x%02x",
		      what, i, p[i], pat(seed, from + i));
}

/*
 * RC traffic with the peer node: SEND, PUT, PUT with immediate (the last
 * write, so its receive tells that the peer's writes are done) and GET.
 */
static void run_pair(const char *mine, const char *peer)
{
	unsigned int me = ctx.info.node_id, them;
	struct chpp_pair_info mi, pi;
	char err[256];
	struct chpp_usge s;
	struct chpp_usend wr;
	struct chpp_ucqe e;
	int i;

	fill(src, BUF_SIZE, 10 + me);
	mi = (struct chpp_pair_info){ .lid = lid, .qp_num = qp.qp_num,
		.rkey = mr.rkey, .addr = (uintptr_t)src };
	CHECK(!chpp_pair_exchange(mine, peer, &mi, &pi, err, sizeof(err)),
	      "pair: %s", err);
	them = CHPP_LID_NODE(pi.lid);
	printf("chpp-uverbs: peer lid %u qp_num 0x%x\n", pi.lid, pi.qp_num);
	CHECK(!chpp_connect_rc(&ctx, &qp, pi.lid, pi.qp_num), "connect to the peer");

	post_recv(0xb1, dst, 4096);
	post_recv(0xb2, dst + 200000, 16);
	/* Receives are posted before the peer can send: wait for its info. */
	s = sge(src, 3000);
	wr = (struct chpp_usend){ .opcode = CHPP_WQE_SEND,
		.flags = CHPP_WQE_SIGNALED, .wr_id = 0x61, .sg = &s,
		.num_sge = 1 };
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post SEND");
	expect_send_ok("pair SEND", 0x61);
	s = sge(src, 65536);
	wr = (struct chpp_usend){ .opcode = CHPP_WQE_PUT,
		.flags = CHPP_WQE_SIGNALED, .wr_id = 0x62,
		.raddr = pi.addr + BUF_SIZE + 8192, .rkey = pi.rkey, .sg = &s,
		.num_sge = 1 };
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT");
	expect_send_ok("pair PUT", 0x62);
	s = sge(src, 4096);
	wr = (struct chpp_usend){ .opcode = CHPP_WQE_PUT_IMM,
		.flags = CHPP_WQE_SIGNALED, .wr_id = 0x63, .imm = 0xabc0 + me,
		.raddr = pi.addr + BUF_SIZE + 100000, .rkey = pi.rkey, .sg = &s,
		.num_sge = 1 };
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post PUT_IMM");
	expect_send_ok("pair PUT_IMM", 0x63);
	s = sge(dst + 150000, 32768);
	wr = (struct chpp_usend){ .opcode = CHPP_WQE_GET,
		.flags = CHPP_WQE_SIGNALED, .wr_id = 0x64,
		.raddr = pi.addr + 4096, .rkey = pi.rkey, .sg = &s, .num_sge = 1 };
	CHECK(!chpp_post_send(&ctx, &qp, &wr), "post GET");
	expect_send_ok("pair GET", 0x64);
	check_pat(dst + 150000, 32768, 10 + them, 4096, "GET from the peer");

	e = expect_recv("the peer's SEND", 0xb1, 3000);
	CHECK(e.opcode == CHPP_CQE_OP_RECV, "SEND: opcode %u", e.opcode);
	e = expect_recv("the peer's PUT_IMM", 0xb2, 4096);
	CHECK(e.opcode == CHPP_CQE_OP_RECV_RDMA_IMM && e.imm == 0xabc0 + them,
	      "PUT_IMM: opcode %u imm 0x%x", e.opcode, e.imm);
	check_pat(dst, 3000, 10 + them, 0, "the peer's SEND");
	check_pat(dst + 8192, 65536, 10 + them, 0, "the peer's PUT");
	check_pat(dst + 100000, 4096, 10 + them, 0, "the peer's PUT_IMM");
	for (i = 0; i < 2; i++)
		CHECK(chpp_poll_cq(&ctx, i ? &rcq : &scq, &e, 1) == 0,
		      "an extra completion");
	ok("user-space RC traffic with the peer node (SEND, PUT, PUT_IMM, GET), bytes verified");

	/* The peer may still read our memory: tear down only once it is done. */
	CHECK(!chpp_pair_done(mine, peer, err, sizeof(err)), "pair: %s", err);
}

int main(int argc, char **argv)
{
	const char *dev = "/dev/infiniband/uverbs0";
	const char *mine = NULL, *peer = NULL;
	uint32_t pd;
	uint8_t state;
	int err, chan;

	if (argc >= 4 && !strcmp(argv[1], "--pair")) {
		mine = argv[2];
		peer = argv[3];
		argv += 3;
		argc -= 3;
	}
	if (argc > 1)
		dev = argv[1];

	setvbuf(stdout, NULL, _IOLBF, 0);
	err = chpp_open(&ctx, dev);
	CHECK(!err, "open %s: %s", dev, strerror(-err));
	err = chpp_query_port_lid(&ctx, &lid, &state);
	CHECK(!err && state == CHPP_IB_PORT_ACTIVE,
	      "query port: err %d state %u", err, state);
	CHECK(CHPP_LID_NODE(lid) == ctx.info.node_id, "lid %u, node id %u", lid,
	      ctx.info.node_id);
	printf("chpp-uverbs: context UAR page %u, node %u, lid %u\n",
	       ctx.info.uar_index, ctx.info.node_id, lid);
	ok("context, UAR mmap, port ACTIVE");

	CHECK(!chpp_alloc_pd(&ctx, &pd), "alloc_pd");
	/* One MR over both buffers: src = first half, dst = second half. */
	src = aligned_alloc(4096, 2 * BUF_SIZE);
	CHECK(src, "alloc");
	dst = src + BUF_SIZE;
	memset(src, 0, 2 * BUF_SIZE);
	err = chpp_reg_mr(&ctx, pd, src, 2 * BUF_SIZE,
			  CHPP_IB_ACCESS_LOCAL_WRITE | CHPP_IB_ACCESS_REMOTE_WRITE |
			  CHPP_IB_ACCESS_REMOTE_READ |
			  CHPP_IB_ACCESS_REMOTE_ATOMIC, &mr);
	CHECK(!err, "reg_mr: %d", err);
	chan = chpp_create_channel(&ctx);
	CHECK(chan >= 0, "create_comp_channel: %d", chan);
	CHECK(!chpp_create_cq(&ctx, DEPTH, -1, &scq), "create send CQ");
	CHECK(!chpp_create_cq(&ctx, DEPTH, chan, &rcq), "create recv CQ");
	err = chpp_create_qp(&ctx, pd, &scq, &rcq, CHPP_IB_QPT_RC, DEPTH, 2,
			     128, &qp);
	CHECK(!err, "create_qp: %d", err);
	printf("chpp-uverbs: QP %u (qp_num 0x%x), CQs %u/%u\n", qp.qpn,
	       qp.qp_num, scq.cqn, rcq.cqn);
	ok("PD, MRs, CQs, QP in user memory");

	if (mine) {
		run_pair(mine, peer);
		goto teardown;
	}
	test_bad_requests(pd);
	CHECK(!chpp_connect_rc(&ctx, &qp, lid, qp.qp_num), "connect to self");
	ok("QP RESET->INIT->RTR->RTS (connected to itself)");

	test_send_imm();
	test_put();
	test_put_imm();
	test_get();
	test_atomics();
	test_inline_nap();
	test_many();
	test_channel();
	test_isolation();
	test_errors(pd);
	test_ud(pd);

teardown:
	CHECK(!chpp_destroy_qp(&ctx, &qp), "destroy_qp");
	CHECK(!chpp_destroy_cq(&ctx, &scq), "destroy send CQ");
	CHECK(!chpp_destroy_cq(&ctx, &rcq), "destroy recv CQ");
	CHECK(!chpp_dereg_mr(&ctx, &mr), "dereg_mr");
	CHECK(!chpp_dealloc_pd(&ctx, pd), "dealloc_pd");
	close(chan);
	chpp_close(&ctx);
	ok("teardown");
	printf("chpp-uverbs: PASS %d checks\n", checks);
	return 0;
}
