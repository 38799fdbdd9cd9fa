/*
 * chpp-hca loopback benchmark: a qtest-style program (not a test) that
 * boots one q35 with the device and measures, per message size,
 *
 *  - throughput of PUT, GET, SEND and NAP between two RC QPs of the device
 *    (a batch of WQEs, at most BENCH_WINDOW in flight, every
 *    BENCH_SIG_EVERY-th signaled, wall time from the first doorbell to the
 *    last CQE);
 *  - latency of one signaled operation, doorbell -> CQE seen, median and
 *    p99, minus the qtest round-trip overhead measured in the same run;
 *  - baselines in this process: memcpy bandwidth of the same size and the
 *    qtest bufwrite bandwidth (how fast the test side can move bytes into
 *    guest memory).
 *
 * It prints a table and one "BENCH key=value ..." line per measurement.
 * Nothing here passes or fails on time; it only exits non-zero if the
 * device misbehaves (error CQE, no progress).
 *
 *   QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 \
 *       build/qemu/tests/qtest/chpp-hca-bench [--quick] [--op NAME]
 *
 * scripts/bench.sh builds and runs it.  The queues, work requests and
 * completions are the shared helpers of chpp-hca-qtest.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/bswap.h"
#include <math.h>
#include "chpp-hca-qtest.h"

#define UAR         1
#define PD          3
#define SCQ         0
#define RCQ         1
#define CQ_SIZE     1024
#define LOG_Q       6           /* 64 WQEs per SQ and RQ */
#define STRIDE      6           /* 64-byte WQEs: ctrl + raddr + 1 SGE */
#define BUF_SIZE    (1u << 20)  /* largest message */
#define ACCESS_ALL  (CHPP_ACCESS_REMOTE_WRITE | CHPP_ACCESS_REMOTE_READ | \
                     CHPP_ACCESS_REMOTE_ATOMIC)
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)

#define BENCH_WINDOW        16  /* CHPP_MAX_INFLIGHT of the device */
#define BENCH_SIG_EVERY     8
#define BENCH_LAT_N         200
#define BENCH_RTT_N         2000
/* Polls of a CQE without progress before the virtual clock is stepped. */
#define BENCH_SPIN_POLLS    20000
#define BENCH_MAX_STEPS     2000

typedef struct Bench {
    ChppDev *d;
    ChppTCq cq[2];
    uint32_t ci_told[2];    /* last consumer index written to the device */
    ChppTQp a;
    ChppTQp b;
    uint64_t src;       /* BUF_SIZE, key skey */
    uint64_t dst;       /* BUF_SIZE, key dkey */
    uint32_t skey;
    uint32_t dkey;
    uint32_t clock_steps;   /* times a wait had to step the virtual clock */
    int qemu_pid;           /* the QEMU under test, for its CPU time */
    bool quick;
} Bench;

enum { OP_PUT, OP_GET, OP_SEND, OP_NAP, OP_NUM };
static const char *const op_name[OP_NUM] = { "PUT", "GET", "SEND", "NAP" };
static const uint8_t op_wqe[OP_NUM] = {
    CHPP_WQE_PUT, CHPP_WQE_GET, CHPP_WQE_SEND, CHPP_WQE_NAP
};

static const uint32_t sizes[] = { 1, 64, 1024, 4096, 65536, 1u << 20 };
#define NSIZES ARRAY_SIZE(sizes)

static int64_t now_us(void)
{
    return g_get_monotonic_time();
}

static bool op_valid(int op, uint32_t size)
{
    return op != OP_NAP || size <= CHPP_NAP_MAX_PAYLOAD;
}

static bool op_is_send(int op)
{
    return op == OP_SEND || op == OP_NAP;
}

/* ---- fixture ------------------------------------------------------------ */

static void qp_init(Bench *b, ChppTQp *q, uint32_t qpn)
{
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC,
        .port = 1,
        .pd = cpu_to_le32(PD),
        .send_cqn = cpu_to_le32(SCQ),
        .recv_cqn = cpu_to_le32(RCQ),
        .log_sq_size = LOG_Q,
        .log_sq_stride = STRIDE,
        .log_rq_size = LOG_Q,
        .log_rq_stride = STRIDE,
        .uar = cpu_to_le16(UAR),
        .access_flags = cpu_to_le32(ACCESS_ALL),
        .magic = q->magic,
    };

    *q = (ChppTQp) {
        .qpn = qpn, .type = CHPP_QPT_RC, .log_sq = LOG_Q, .log_rq = LOG_Q,
        .stride = STRIDE, .magic = q->magic, .uar = UAR,
    };
    chpp_qp_alloc_rings(b->d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(b->d, CHPP_CMD_RST2INIT_QP, qpn,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c),
                    ==, CHPP_STAT_OK);
}

/*
 * INIT -> RTR -> RTS towards @peer (loopback).  Unlike the data test, the
 * initiator depth is the device maximum so GETs can fill the window too.
 */
static void qp_connect(Bench *b, ChppTQp *q, const ChppTQp *peer)
{
    struct chpp_qp_context c = {
        .path_mtu = 5,
        .dest_node = 0,
        .dest_qpn = cpu_to_le32(peer->qpn),
        .dest_magic = peer->magic,
        .rq_psn = cpu_to_le32(0x100 + peer->qpn),
        .sq_psn = cpu_to_le32(0x100 + q->qpn),
        .max_dest_rd_atomic = CHPP_MAX_RD_ATOMIC,
        .max_rd_atomic = CHPP_MAX_RD_ATOMIC,
        .min_rnr_timer = 1,
        .timeout = 14,
        .retry_cnt = 3,
        .rnr_retry = 3,
    };

    chpp_rc_qp_connect(b->d, q->qpn, &c);
}

static void bench_setup(Bench *b)
{
    uint64_t eq;

    b->d = chpp_start("num-qps=8", NULL);
    chpp_msix_route(b->d, 0);
    chpp_init_hca(b->d);
    eq = chpp_create_eq(b->d, 0, 256, 0, true);
    (void)eq;
    g_assert_cmphex(chpp_map_eq(b->d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    for (uint32_t i = 0; i < 2; i++) {
        b->cq[i] = (ChppTCq) {
            .cqn = i,
            .nent = CQ_SIZE,
            .ring = chpp_create_cq(b->d, i, CQ_SIZE, 0, UAR),
            .uar = UAR,
        };
    }
    b->a = (ChppTQp) { .magic = 0xa1 };
    b->b = (ChppTQp) { .magic = 0xb2 };
    qp_init(b, &b->a, 0);
    qp_init(b, &b->b, 1);
    qp_connect(b, &b->a, &b->b);
    qp_connect(b, &b->b, &b->a);

    b->src = guest_alloc(&b->d->qs->alloc, BUF_SIZE);
    b->dst = guest_alloc(&b->d->qs->alloc, BUF_SIZE);
    qtest_memset(b->d->qts, b->src, 0x5a, BUF_SIZE);
    qtest_memset(b->d->qts, b->dst, 0, BUF_SIZE);
    b->skey = chpp_create_mr(b->d, 0, PD, b->src, BUF_SIZE, MR_ALL);
    b->dkey = chpp_create_mr(b->d, 1, PD, b->dst, BUF_SIZE, MR_ALL);
}

/* ---- work requests ------------------------------------------------------ */

/* The send WQE of operation @op, @size bytes. */
static ChppWqeBuf *wqe_build(Bench *b, int op, uint32_t size, uint64_t wr_id,
                             bool signaled)
{
    ChppWqeBuf *w = chpp_wqe_new(op_wqe[op], signaled ? CHPP_WQE_SIGNALED : 0,
                                 wr_id, 0);

    if (op == OP_PUT || op == OP_GET) {
        chpp_wqe_raddr(w, op == OP_GET ? b->src : b->dst,
                       op == OP_GET ? b->skey : b->dkey);
    }
    chpp_wqe_sge(w, op == OP_GET ? b->dst : b->src, size,
                 op == OP_GET ? b->dkey : b->skey);
    return w;
}

/* Post @n receives of @size bytes into dst on QP b; ring its doorbell. */
static void post_recvs(Bench *b, uint32_t n, uint32_t size)
{
    ChppTSge sge = { b->dst, size, b->dkey };

    chpp_post_recvs(b->d, &b->b, b->b.rq_pi, &sge, 1, n);
}

/*
 * Post send WQEs [first, first + n) of a run of @total on QP a (receives
 * first for SEND/NAP) and ring the doorbell once.
 */
static void post_sends(Bench *b, int op, uint32_t size, uint32_t first,
                       uint32_t n, uint32_t total, uint32_t sig_every)
{
    g_autofree ChppWqeBuf **w = g_new(ChppWqeBuf *, n);

    if (op_is_send(op)) {
        post_recvs(b, n, size);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = first + i;
        bool sig = (idx + 1) % sig_every == 0 || idx + 1 == total;

        w[i] = wqe_build(b, op, size, idx, sig);
    }
    chpp_post_sends(b->d, &b->a, w, n, true);
}

/* ---- completions -------------------------------------------------------- */

/*
 * Spin (one qtest round trip per poll) until the next CQE of @cq is valid.
 * The engine is a bottom half: it runs between qtest commands without any
 * clock step.  Only if nothing shows up for a long time is the virtual
 * clock stepped (device timers: RNR, retransmit), and that is counted.
 * Returns the number of polls.
 */
static uint32_t cq_wait(Bench *b, ChppTCq *cq, struct chpp_cqe *cqe)
{
    uint32_t polls = 0, steps = 0;

    while (!chpp_cqe_valid(b->d, cq, cqe)) {
        if (++polls % BENCH_SPIN_POLLS == 0) {
            if (++steps > BENCH_MAX_STEPS) {
                g_error("no CQE on CQ %u at ci %u", cq->cqn, cq->ci);
            }
            b->clock_steps++;
            qtest_clock_step(b->d->qts, 100000);
        }
    }
    if (cqe->status != CHPP_WC_SUCCESS) {
        g_error("CQ %u: CQE wr_id 0x%" PRIx64 " status %u vendor_err %u",
                cq->cqn, le64_to_cpu(cqe->wr_id), cqe->status,
                cqe->vendor_err);
    }
    return polls + 1;
}

/*
 * Consume @n CQEs of @cq.  The device only needs the consumer index to
 * detect an overrun, so it is told every CQ_TELL entries (or when @flush):
 * one qtest round trip saved per CQE.
 */
#define CQ_TELL 64
static void cq_consume(Bench *b, ChppTCq *cq, uint32_t n, bool flush)
{
    uint32_t *told = &b->ci_told[cq->cqn];

    cq->ci += n;
    if (cq->ci - *told >= CQ_TELL || (flush && cq->ci != *told)) {
        chpp_cq_db(b->d, UAR, cq->cqn, CHPP_CQ_DB_SET_CI, cq->ci);
        *told = cq->ci;
    }
}

/* ---- measurements ------------------------------------------------------- */

typedef struct Tput {
    uint32_t ops;
    double secs;
    double mbps;        /* 10^6 bytes per second */
    double kops;        /* 10^3 operations per second */
    double polls_per_cqe;
    double qemu_cpu_us;     /* per op: CPU time of the QEMU process */
    double bench_cpu_us;    /* per op: CPU time of this process */
} Tput;

static uint32_t tput_ops(Bench *b, uint32_t size)
{
    uint64_t want = (32ull << 20) / size;
    uint32_t ops = MIN(MAX(want, 200), b->quick ? 256 : 2048);

    if (b->quick && size >= 65536) {
        ops = MIN(ops, 64);
    }
    return ROUND_UP(ops, BENCH_SIG_EVERY);
}

static Tput run_tput(Bench *b, int op, uint32_t size)
{
    uint32_t total = tput_ops(b, size);
    uint32_t posted = 0, done = 0, cqes = 0, polls = 0;
    ChppTCq *scq = &b->cq[SCQ], *rcq = &b->cq[RCQ];
    int64_t t0, t1;
    uint64_t q0, q1, c0, c1;
    Tput r = { .ops = total };

    q0 = chpp_cpu_ns(b->qemu_pid);
    c0 = chpp_cpu_ns(0);
    t0 = now_us();
    while (done < total) {
        uint32_t n = MIN(BENCH_WINDOW - (posted - done), total - posted);
        struct chpp_cqe cqe;
        uint32_t upto;

        if (n >= BENCH_SIG_EVERY || (n && posted + n == total)) {
            post_sends(b, op, size, posted, n, total, BENCH_SIG_EVERY);
            posted += n;
        }
        polls += cq_wait(b, scq, &cqe);
        upto = le64_to_cpu(cqe.wr_id) + 1;
        g_assert_cmpuint(upto, >, done);
        g_assert_cmpuint(upto, <=, posted);
        if (op_is_send(op)) {
            /* RC: each receive CQE precedes the ACK of its send. */
            cq_consume(b, rcq, upto - done, upto == total);
        }
        done = upto;
        cq_consume(b, scq, 1, done == total);
        cqes++;
    }
    t1 = now_us();
    q1 = chpp_cpu_ns(b->qemu_pid);
    c1 = chpp_cpu_ns(0);
    r.qemu_cpu_us = b->qemu_pid ? (q1 - q0) / 1e3 / total : 0;
    r.bench_cpu_us = (c1 - c0) / 1e3 / total;
    r.secs = (t1 - t0) / 1e6;
    r.mbps = (double)total * size / r.secs / 1e6;
    r.kops = total / r.secs / 1e3;
    r.polls_per_cqe = (double)polls / cqes;
    return r;
}

typedef struct Lat {
    double med_us;
    double p99_us;
    double polls;
    double floor_us;    /* median null op interleaved with the samples */
} Lat;

static Lat lat_stats(int64_t *v, uint32_t n, uint64_t polls)
{
    Lat r = { .polls = (double)polls / n };

    chpp_med_p99(v, n, &r.med_us, &r.p99_us);
    return r;
}

/* N single signaled operations: doorbell write -> CQE read valid. */
static Lat run_lat(Bench *b, int op, uint32_t size)
{
    uint32_t n = b->quick ? 50 : BENCH_LAT_N;
    g_autofree int64_t *v = g_new(int64_t, n);
    g_autofree int64_t *fl = g_new(int64_t, n);
    ChppTCq *scq = &b->cq[SCQ], *rcq = &b->cq[RCQ];
    uint64_t polls = 0;
    Lat r;

    for (uint32_t i = 0; i < n; i++) {
        struct chpp_cqe cqe;
        int64_t t0;

        /* The qtest floor under the same conditions, just before. */
        t0 = now_us();
        chpp_wr(b->d, CHPP_REG_SCRATCH, i);
        chpp_read_cqe(b->d, scq->ring, (scq->ci + 1) % scq->nent, &cqe);
        fl[i] = now_us() - t0;

        if (op_is_send(op)) {
            post_recvs(b, 1, size);
        }
        chpp_post_send(b->d, &b->a, wqe_build(b, op, size, i, true), false);
        t0 = now_us();
        chpp_sq_db(b->d, UAR, b->a.qpn, b->a.sq_pi);
        polls += cq_wait(b, scq, &cqe);
        v[i] = now_us() - t0;
        g_assert_cmpuint(le64_to_cpu(cqe.wr_id), ==, i);
        cq_consume(b, scq, 1, i + 1 == n);
        if (op_is_send(op)) {
            cq_consume(b, rcq, 1, i + 1 == n);
        }
    }
    r = lat_stats(v, n, polls);
    r.floor_us = lat_stats(fl, n, n).med_us;
    return r;
}

/*
 * The qtest floor of a latency sample: one MMIO write (the doorbell) plus
 * one 32-byte memory read (a CQE poll that hits at once).
 */
static Lat run_null_op(Bench *b)
{
    uint32_t n = b->quick ? 200 : BENCH_RTT_N;
    g_autofree int64_t *v = g_new(int64_t, n);
    struct chpp_cqe cqe;

    for (uint32_t i = 0; i < n; i++) {
        int64_t t0 = now_us();

        chpp_wr(b->d, CHPP_REG_SCRATCH, i);
        chpp_read_cqe(b->d, b->cq[SCQ].ring, 0, &cqe);
        v[i] = now_us() - t0;
    }
    return lat_stats(v, n, n);
}

static Lat run_reg_read(Bench *b)
{
    uint32_t n = b->quick ? 200 : BENCH_RTT_N;
    g_autofree int64_t *v = g_new(int64_t, n);

    for (uint32_t i = 0; i < n; i++) {
        int64_t t0 = now_us();

        g_assert_cmphex(chpp_rd(b->d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
        v[i] = now_us() - t0;
    }
    return lat_stats(v, n, n);
}

/* NOP through the HCR: 7 register writes, then reads until go clears. */
static Lat run_nop_cmd(Bench *b)
{
    uint32_t n = b->quick ? 50 : BENCH_LAT_N;
    g_autofree int64_t *v = g_new(int64_t, n);

    for (uint32_t i = 0; i < n; i++) {
        int64_t t0 = now_us();

        g_assert_cmphex(chpp_cmd(b->d, CHPP_CMD_NOP, 0, 0, 0), ==,
                        CHPP_STAT_OK);
        v[i] = now_us() - t0;
    }
    return lat_stats(v, n, n);
}

/* Repetitions to move about @bytes in pieces of @size, within bounds. */
static uint32_t reps_for(uint32_t size, uint64_t bytes, uint32_t lo,
                         uint32_t hi)
{
    return MIN(MAX(bytes / size, lo), hi);
}

/* memcpy of @size bytes in this process, out of a BUF_SIZE source. */
static double run_memcpy(Bench *b, uint32_t size)
{
    static uint8_t *src, *dst;
    uint32_t reps;
    int64_t t0, t1;

    if (!src) {
        src = g_malloc(BUF_SIZE);
        dst = g_malloc(BUF_SIZE);
        memset(src, 0x5a, BUF_SIZE);
        memset(dst, 0, BUF_SIZE);
    }
    reps = reps_for(size, b->quick ? 64ull << 20 : 512ull << 20, 16,
                    10000000);
    t0 = now_us();
    for (uint32_t i = 0; i < reps; i++) {
        memcpy(dst, src, size);
        asm volatile("" : : "r"(dst), "r"(src) : "memory");
    }
    t1 = now_us();
    return (double)reps * size / ((t1 - t0) / 1e6) / 1e6;
}

/* qtest_bufwrite of @size bytes into guest memory (base64 over the socket). */
static double run_bufwrite(Bench *b, uint32_t size)
{
    g_autofree uint8_t *buf = g_malloc(size);
    uint32_t reps;
    int64_t t0, t1;

    memset(buf, 0x33, size);
    reps = reps_for(size, b->quick ? 4ull << 20 : 32ull << 20,
                    b->quick ? 50 : 200, 2000);
    t0 = now_us();
    for (uint32_t i = 0; i < reps; i++) {
        qtest_bufwrite(b->d->qts, b->dst, buf, size);
    }
    t1 = now_us();
    return (double)reps * size / ((t1 - t0) / 1e6) / 1e6;
}

/* ---- report ------------------------------------------------------------- */

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--quick] [--op PUT|GET|SEND|NAP]... "
            "[--size BYTES] [--no-latency] [--no-throughput] "
            "[--no-baseline]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    Bench b = {};
    bool want_op[OP_NUM] = {}, any_op = false, lat = true, tput = true;
    bool baseline = true;
    uint32_t only_size = 0;
    double memcpy_mbps[NSIZES], bufwrite_mbps[NSIZES];
    Tput tp[OP_NUM][NSIZES] = {};
    Lat lt[OP_NUM][NSIZES] = {};
    Lat floor, regrd, nop;
    g_autoptr(GDateTime) date = g_date_time_new_now_local();
    g_autofree char *datestr = g_date_time_format(date, "%F %T %z");
    char host[256] = "?";
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int i, op;
    uint32_t s;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            b.quick = true;
        } else if (!strcmp(argv[i], "--no-latency")) {
            lat = false;
        } else if (!strcmp(argv[i], "--no-throughput")) {
            tput = false;
        } else if (!strcmp(argv[i], "--no-baseline")) {
            baseline = false;       /* for profiling the device alone */
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            g_assert(qemu_strtoui(argv[++i], NULL, 0, &only_size) == 0);
        } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
            i++;
            for (op = 0; op < OP_NUM; op++) {
                if (!g_ascii_strcasecmp(argv[i], op_name[op])) {
                    want_op[op] = any_op = true;
                    break;
                }
            }
            if (op == OP_NUM) {
                usage(argv[0]);
            }
        } else {
            usage(argv[0]);
        }
    }
    if (!any_op) {
        for (op = 0; op < OP_NUM; op++) {
            want_op[op] = true;
        }
    }
    if (!getenv("QTEST_QEMU_BINARY")) {
        fprintf(stderr,
                "QTEST_QEMU_BINARY is not set (use scripts/bench.sh)\n");
        return 2;
    }
    gethostname(host, sizeof(host) - 1);

    bench_setup(&b);
    b.qemu_pid = chpp_find_qemu_pid(0);

    /* Baselines first: round trips, memcpy, bufwrite. */
    regrd = run_reg_read(&b);
    floor = run_null_op(&b);
    nop = run_nop_cmd(&b);
    for (s = 0; s < NSIZES; s++) {
        memcpy_mbps[s] = baseline ? run_memcpy(&b, sizes[s]) : NAN;
        bufwrite_mbps[s] = baseline ? run_bufwrite(&b, sizes[s]) : NAN;
    }
    for (op = 0; op < OP_NUM; op++) {
        for (s = 0; s < NSIZES && want_op[op]; s++) {
            if (!op_valid(op, sizes[s]) ||
                (only_size && sizes[s] != only_size)) {
                continue;
            }
            if (tput) {
                tp[op][s] = run_tput(&b, op, sizes[s]);
            }
            if (lat) {
                lt[op][s] = run_lat(&b, op, sizes[s]);
            }
        }
    }

    /* Table. */
    printf("chpp-hca loopback benchmark  %s  host %s, %ld CPUs%s\n",
           datestr, host, ncpu, b.quick ? "  (--quick)" : "");
    printf("QEMU: %s (TCG/qtest accel, device engine = main-loop bottom "
           "half)\n", getenv("QTEST_QEMU_BINARY"));
    printf("MB = 10^6 bytes; wall clock (g_get_monotonic_time); one RC QP "
           "pair, loopback\n\n");
    printf("qtest round trip (median / p99, us): register read %.1f / %.1f, "
           "null op (MMIO write + 32 B read) %.1f / %.1f, NOP command "
           "%.1f / %.1f\n\n", regrd.med_us, regrd.p99_us, floor.med_us,
           floor.p99_us, nop.med_us, nop.p99_us);

    printf("Baseline in the benchmark process\n");
    printf("  %-8s %12s %14s\n", "size", "memcpy MB/s", "bufwrite MB/s");
    for (s = 0; s < NSIZES; s++) {
        printf("  %-8s %12.0f %14.1f\n", chpp_size_str(sizes[s]),
               memcpy_mbps[s], bufwrite_mbps[s]);
    }
    if (tput) {
        printf("\nThroughput (window %d WQEs, every %dth signaled; "
               "per-op columns in us: wall, CPU of QEMU, CPU of this "
               "program)\n", BENCH_WINDOW, BENCH_SIG_EVERY);
        printf("  %-5s %-8s %6s %8s %10s %9s %12s %10s %8s %8s %8s\n",
               "op", "size", "ops", "time s", "MB/s", "kops/s",
               "memcpy MB/s", "dev/memcpy", "wall/op", "qemu/op", "bench/op");
        for (op = 0; op < OP_NUM; op++) {
            for (s = 0; s < NSIZES; s++) {
                Tput *r = &tp[op][s];

                if (!r->ops) {
                    continue;
                }
                printf("  %-5s %-8s %6u %8.3f %10.1f %9.2f %12.0f %10.5f "
                       "%8.1f %8.1f %8.1f\n", op_name[op],
                       chpp_size_str(sizes[s]), r->ops, r->secs, r->mbps,
                       r->kops, memcpy_mbps[s], r->mbps / memcpy_mbps[s],
                       1e3 / r->kops,
                       r->qemu_cpu_us, r->bench_cpu_us);
            }
        }
    }
    if (lat) {
        printf("\nLatency, doorbell -> CQE, %u single signaled ops (us; "
               "floor = median null op interleaved with the samples; "
               "net = value - floor)\n", b.quick ? 50 : BENCH_LAT_N);
        printf("  %-5s %-8s %9s %9s %9s %9s %9s %7s\n", "op", "size",
               "median", "p99", "floor", "net med", "net p99", "polls");
        for (op = 0; op < OP_NUM; op++) {
            for (s = 0; s < NSIZES; s++) {
                Lat *r = &lt[op][s];

                if (!want_op[op] || !op_valid(op, sizes[s]) ||
                    (only_size && sizes[s] != only_size)) {
                    continue;
                }
                printf("  %-5s %-8s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f\n",
                       op_name[op], chpp_size_str(sizes[s]), r->med_us,
                       r->p99_us, r->floor_us, r->med_us - r->floor_us,
                       r->p99_us - r->floor_us, r->polls);
            }
        }
    }
    printf("\nclock steps needed: %u (0 = the engine never waited on a "
           "device timer); device: CQEs %u, dropped %u, pkts tx %u, "
           "retransmits %u, RNR NAKs %u, guest errors %u\n\n", b.clock_steps,
           chpp_counter(b.d, CHPP_CNT_CQES),
           chpp_counter(b.d, CHPP_CNT_CQES_DROPPED),
           chpp_counter(b.d, CHPP_CNT_PKTS_TX),
           chpp_counter(b.d, CHPP_CNT_RETRANSMITS),
           chpp_counter(b.d, CHPP_CNT_RNR_NAKS),
           chpp_counter(b.d, CHPP_CNT_GUEST_ERRORS));

    /* Machine-readable lines. */
    printf("BENCH kind=rtt op=reg_read med_us=%.2f p99_us=%.2f\n",
           regrd.med_us, regrd.p99_us);
    printf("BENCH kind=rtt op=null_op med_us=%.2f p99_us=%.2f\n",
           floor.med_us, floor.p99_us);
    printf("BENCH kind=rtt op=nop_cmd med_us=%.2f p99_us=%.2f\n",
           nop.med_us, nop.p99_us);
    for (s = 0; s < NSIZES; s++) {
        printf("BENCH kind=baseline op=memcpy size=%u mbps=%.1f\n", sizes[s],
               memcpy_mbps[s]);
        printf("BENCH kind=baseline op=bufwrite size=%u mbps=%.2f\n",
               sizes[s], bufwrite_mbps[s]);
    }
    for (op = 0; op < OP_NUM; op++) {
        for (s = 0; s < NSIZES; s++) {
            if (tp[op][s].ops) {
                Tput *r = &tp[op][s];

                printf("BENCH kind=tput op=%s size=%u ops=%u secs=%.4f "
                       "mbps=%.2f kops=%.3f ratio_memcpy=%.6f "
                       "polls_per_cqe=%.2f qemu_cpu_us_per_op=%.2f "
                       "bench_cpu_us_per_op=%.2f\n", op_name[op], sizes[s],
                       r->ops, r->secs, r->mbps, r->kops,
                       r->mbps / memcpy_mbps[s], r->polls_per_cqe,
                       r->qemu_cpu_us, r->bench_cpu_us);
            }
            if (lat && want_op[op] && op_valid(op, sizes[s]) &&
                (!only_size || sizes[s] == only_size)) {
                Lat *r = &lt[op][s];

                printf("BENCH kind=lat op=%s size=%u n=%u med_us=%.2f "
                       "p99_us=%.2f floor_us=%.2f net_med_us=%.2f "
                       "net_p99_us=%.2f polls=%.2f\n", op_name[op], sizes[s],
                       b.quick ? 50 : BENCH_LAT_N, r->med_us, r->p99_us,
                       r->floor_us, r->med_us - r->floor_us,
                       r->p99_us - r->floor_us, r->polls);
            }
        }
    }
    fflush(stdout);
    chpp_stop(b.d);
    return 0;
}
