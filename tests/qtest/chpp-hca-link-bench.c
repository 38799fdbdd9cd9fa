/*
 * chpp-hca link benchmark: a qtest-style program (not a test) that starts
 * two QEMUs, each with a chpp-hca, joined by a chardev socket (unix, and
 * TCP with nodelay=on) or, with --eth, by a netdev (a UDP multicast group
 * on loopback, docs/fabric.md), one RC QP each, and measures
 *
 *  - PUT bandwidth node 1 -> node 2 for 1 KiB .. 4 MiB messages, at most
 *    BENCH_WINDOW in flight, every BENCH_SIG_EVERY-th signaled (wall time
 *    from the first doorbell to the last CQE);
 *  - latency of single 1 B and 64 B PUTs and SENDs, doorbell -> CQE seen,
 *    median and p99, minus the qtest floor measured in the same run;
 *  - baselines of the same socket type between this process and a forked
 *    child: streaming bandwidth (256 KiB reads, and 4 KiB reads as QEMU's
 *    chardev does) and the round-trip time of a 64 B ping-pong.
 *
 * It prints a table with the ratios to the raw socket and to the FPGA
 * prototype (3.19 GB/s), and one "BENCH key=value ..." line per
 * measurement.  It exits non-zero only if the devices misbehave.
 *
 *   QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 \
 *       build/qemu/tests/qtest/chpp-hca-link-bench [--quick] [--unix|--tcp]
 *       [--eth]
 *
 * scripts/bench.sh --link builds and runs it.  docs/build.md (Benchmark).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/bswap.h"
#include <math.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include "chpp-hca-qtest.h"

#define SCQ             0
#define RCQ             1
#define LOG_Q           6       /* 64 WQEs per ring */
#define STRIDE          6       /* 64-byte WQEs: ctrl + raddr + 1 SGE */
#define BUF_SIZE        (4u << 20)
#define MR_ALL          (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                         CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)
#define FPGA_MBPS       3190.0  /* the FPGA prototype's large-PUT figure */

#define BENCH_WINDOW    16      /* CHPP_MAX_INFLIGHT of the device */
#define BENCH_SIG_EVERY 8
#define BENCH_LAT_N     200
#define BENCH_RTT_N     2000
#define CQ_TELL         64      /* tell the device the CI every 64 CQEs */
/* Polls of a CQE without progress before the virtual clock is stepped. */
#define BENCH_SPIN_POLLS 20000
#define BENCH_MAX_STEPS  2000

enum { T_UNIX, T_TCP, T_ETH, T_NUM };
static const char *const t_name[T_NUM] = { "unix", "tcp", "eth" };

enum { OP_PUT, OP_SEND };
static const char *const op_name[] = { "PUT", "SEND" };

static const uint32_t tp_sizes[] = {
    1024, 4096, 16384, 65536, 262144, 1u << 20, 4u << 20
};
#define NTP ARRAY_SIZE(tp_sizes)
static const struct { int op; uint32_t size; } lat_ops[] = {
    { OP_PUT, 1 }, { OP_PUT, 64 }, { OP_SEND, 1 }, { OP_SEND, 64 },
};
#define NLAT ARRAY_SIZE(lat_ops)

typedef struct LBench {
    ChppNode a;             /* node 1: requester */
    ChppNode b;             /* node 2: responder */
    int pid_a;
    int pid_b;
    uint64_t src;           /* on a, BUF_SIZE */
    uint64_t dst;           /* on b, BUF_SIZE */
    uint32_t skey;
    uint32_t dkey;
    uint32_t ci_told[2][2]; /* [node][cq] */
    uint32_t clock_steps;
    bool quick;
    bool chardev_path;      /* link-thread=off: QEMU's chardev reads */
    bool eth;               /* the link is a netdev (--eth) */
} LBench;

typedef struct Tput {
    uint32_t ops;
    double secs;
    double mbps;
    double polls_per_cqe;
    double cpu_a_us;        /* per op: CPU of QEMU node 1, node 2, bench */
    double cpu_b_us;
    double cpu_me_us;
} Tput;

typedef struct Lat {
    double med_us;
    double p99_us;
    double floor_us;
} Lat;

typedef struct Raw {
    double mbps;            /* 256 KiB reads */
    double mbps_4k;         /* 4 KiB reads, like QEMU's chardev */
    double rtt_med_us;      /* 64 B ping-pong */
    double rtt_p99_us;
} Raw;

static int64_t now_us(void)
{
    return g_get_monotonic_time();
}

/* ---- raw socket baseline ------------------------------------------------ */

/* A listening socket of @t on loopback or in @dir; its QEMU/peer address. */
static int raw_listen(int t, const char *dir, struct sockaddr_storage *ss,
                      socklen_t *sl)
{
    int fd, one = 1;

    memset(ss, 0, sizeof(*ss));
    if (t == T_UNIX) {
        struct sockaddr_un *un = (struct sockaddr_un *)ss;

        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof(un->sun_path), "%s/raw.sock", dir);
        unlink(un->sun_path);
        *sl = sizeof(*un);
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;

        fd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *sl = sizeof(*in);
    }
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)ss, *sl), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)ss, sl), ==, 0);
    return fd;
}

static void set_nodelay(int t, int fd)
{
    int one = 1;

    if (t == T_TCP) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(k, >, 0);
        p += k;
        n -= k;
    }
}

static void read_all(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = read(fd, p, n);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(k, >, 0);
        p += k;
        n -= k;
    }
}

/*
 * Fork a child that connects to the listener and either streams @bytes
 * (@pingpong false) or echoes @n 64-byte messages.  Returns the parent's
 * end, accepted; *child is the child's pid.
 */
static int raw_pair(int t, const char *dir, bool pingpong, uint64_t bytes,
                    uint32_t n, pid_t *child)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int lfd = raw_listen(t, dir, &ss, &sl), fd;
    pid_t pid = fork();

    g_assert_cmpint(pid, >=, 0);
    if (!pid) {
        static uint8_t buf[256 * 1024];
        int c = socket(ss.ss_family, SOCK_STREAM, 0);

        close(lfd);
        if (c < 0 || connect(c, (struct sockaddr *)&ss, sl)) {
            _exit(1);
        }
        set_nodelay(t, c);
        if (pingpong) {
            for (uint32_t i = 0; i < n; i++) {
                read_all(c, buf, 64);
                write_all(c, buf, 64);
            }
        } else {
            memset(buf, 0x5a, sizeof(buf));
            while (bytes) {
                size_t k = MIN(bytes, sizeof(buf));

                write_all(c, buf, k);
                bytes -= k;
            }
        }
        close(c);
        _exit(0);
    }
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(lfd);
    set_nodelay(t, fd);
    *child = pid;
    return fd;
}

static void raw_reap(int fd, pid_t child)
{
    int status;

    close(fd);
    g_assert_cmpint(waitpid(child, &status, 0), ==, child);
    g_assert_true(WIFEXITED(status) && !WEXITSTATUS(status));
}

/* Stream @bytes from a child, reading @rsize at a time: MB/s. */
static double raw_stream(int t, const char *dir, uint64_t bytes,
                         size_t rsize)
{
    g_autofree uint8_t *buf = g_malloc(rsize);
    uint64_t got = 0;
    pid_t child;
    int fd = raw_pair(t, dir, false, bytes, 0, &child);
    int64_t t0 = now_us();

    while (got < bytes) {
        ssize_t k = read(fd, buf, rsize);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(k, >, 0);
        got += k;
    }
    raw_reap(fd, child);
    return bytes / ((now_us() - t0) / 1e6) / 1e6;
}

static Raw raw_baseline(int t, const char *dir, bool quick)
{
    uint64_t bytes = quick ? 256ull << 20 : 1ull << 30;
    uint32_t n = quick ? 500 : BENCH_RTT_N;
    g_autofree int64_t *v = g_new(int64_t, n);
    uint8_t msg[64] = { 1 };
    pid_t child;
    Raw r;
    int fd;

    r.mbps = raw_stream(t, dir, bytes, 256 * 1024);
    r.mbps_4k = raw_stream(t, dir, bytes / 4, 4096);
    fd = raw_pair(t, dir, true, 0, n, &child);
    for (uint32_t i = 0; i < n; i++) {
        int64_t t0 = now_us();

        write_all(fd, msg, sizeof(msg));
        read_all(fd, msg, sizeof(msg));
        v[i] = now_us() - t0;
    }
    raw_reap(fd, child);
    chpp_med_p99(v, n, &r.rtt_med_us, &r.rtt_p99_us);
    return r;
}

/* ---- the two nodes ------------------------------------------------------ */

/* A free TCP port on loopback (closed again; QEMU binds it next). */
static int free_port(void)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd = raw_listen(T_TCP, NULL, &ss, &sl);
    int port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

    close(fd);
    return port;
}

static void lb_node_start(LBench *b, ChppNode *n, uint16_t id,
                          const char *chardev)
{
    g_autofree char *props = g_strdup_printf("node-id=%u,chardev=lnk%s", id,
                                             b->chardev_path ?
                                             ",link-thread=off" : "");
    g_autofree char *extra = g_strdup_printf("-chardev socket,id=lnk,%s",
                                             chardev);

    if (b->eth) {
        g_free(props);
        g_free(extra);
        props = g_strdup_printf("node-id=%u,netdev=fab,link-hello-ms=100",
                                id);
        extra = g_strdup_printf("-netdev socket,id=fab,mcast=%s,"
                                "localaddr=127.0.0.1", chardev);
    }
    chpp_node_setup(n, chpp_start(props, extra), id, 0);
}

static void lb_setup(LBench *b, int t, const char *dir)
{
    g_autofree char *srv = NULL, *cli = NULL;

    b->eth = t == T_ETH;
    if (t == T_ETH) {
        /* A group of our own: others may use multicast on this host. */
        srv = g_strdup_printf("239.255.%u.%u:%u", (getpid() >> 8) & 0xff,
                              getpid() & 0xff,
                              20000 + g_random_int_range(0, 40000));
        cli = g_strdup(srv);
    } else if (t == T_UNIX) {
        srv = g_strdup_printf("path=%s/link.sock,server=on,wait=off", dir);
        cli = g_strdup_printf("path=%s/link.sock,reconnect=1", dir);
    } else {
        int port = free_port();

        srv = g_strdup_printf("host=127.0.0.1,port=%d,server=on,wait=off,"
                              "nodelay=on", port);
        cli = g_strdup_printf("host=127.0.0.1,port=%d,reconnect=1,"
                              "nodelay=on", port);
    }
    memset(b->ci_told, 0, sizeof(b->ci_told));
    lb_node_start(b, &b->a, 1, srv);
    b->pid_a = chpp_find_qemu_pid(0);
    lb_node_start(b, &b->b, 2, cli);
    b->pid_b = chpp_find_qemu_pid(b->pid_a);
    chpp_node_wait_link(&b->a, &b->b, true);
    chpp_node_qp(&b->a, 0, 0x11, LOG_Q, STRIDE);
    chpp_node_qp(&b->b, 0, 0x22, LOG_Q, STRIDE);
    chpp_node_connect(&b->a, &b->b, 14, 7);
    chpp_node_connect(&b->b, &b->a, 14, 7);

    b->src = guest_alloc(&b->a.d->qs->alloc, BUF_SIZE);
    b->dst = guest_alloc(&b->b.d->qs->alloc, BUF_SIZE);
    qtest_memset(b->a.d->qts, b->src, 0x5a, BUF_SIZE);
    qtest_memset(b->b.d->qts, b->dst, 0, BUF_SIZE);
    b->skey = chpp_create_mr(b->a.d, 0, CHPP_NODE_PD, b->src, BUF_SIZE,
                             MR_ALL);
    b->dkey = chpp_create_mr(b->b.d, 0, CHPP_NODE_PD, b->dst, BUF_SIZE,
                             MR_ALL);
}

static void lb_stop(LBench *b)
{
    chpp_stop(b->a.d);
    chpp_stop(b->b.d);
}

static ChppWqeBuf *wqe_build(LBench *b, int op, uint32_t size, uint64_t wr_id,
                             bool signaled)
{
    ChppWqeBuf *w = chpp_wqe_new(op == OP_PUT ? CHPP_WQE_PUT : CHPP_WQE_SEND,
                                 signaled ? CHPP_WQE_SIGNALED : 0, wr_id, 0);

    if (op == OP_PUT) {
        chpp_wqe_raddr(w, b->dst, b->dkey);
    }
    chpp_wqe_sge(w, b->src, size, b->skey);
    return w;
}

/*
 * Wait for the next CQE of @cq on @n.  Spins (one qtest round trip a poll),
 * sleeping @nap_us between polls so that the QEMUs keep the CPUs for large
 * messages; steps the virtual clock (counted) only if nothing arrives.
 */
static uint32_t cq_wait(LBench *b, ChppNode *n, ChppTCq *cq,
                        struct chpp_cqe *cqe, uint32_t nap_us)
{
    uint32_t polls = 0, steps = 0;

    while (!chpp_cqe_valid(n->d, cq, cqe)) {
        if (nap_us) {
            g_usleep(nap_us);
        }
        if (++polls % BENCH_SPIN_POLLS == 0) {
            if (++steps > BENCH_MAX_STEPS) {
                g_error("no CQE on node %u CQ %u at ci %u", n->id, cq->cqn,
                        cq->ci);
            }
            b->clock_steps++;
            qtest_clock_step(b->a.d->qts, 100000);
            qtest_clock_step(b->b.d->qts, 100000);
        }
    }
    if (cqe->status != CHPP_WC_SUCCESS) {
        g_error("node %u CQ %u: CQE wr_id 0x%" PRIx64 " status %u "
                "vendor_err %u", n->id, cq->cqn, le64_to_cpu(cqe->wr_id),
                cqe->status, cqe->vendor_err);
    }
    return polls + 1;
}

static void cq_consume(LBench *b, ChppNode *n, uint32_t cqn, uint32_t k,
                       bool flush)
{
    ChppTCq *cq = &n->cq[cqn];
    uint32_t *told = &b->ci_told[n == &b->b][cqn];

    cq->ci += k;
    if (cq->ci - *told >= CQ_TELL || (flush && cq->ci != *told)) {
        chpp_cq_db(n->d, CHPP_NODE_UAR, cqn, CHPP_CQ_DB_SET_CI, cq->ci);
        *told = cq->ci;
    }
}

/* ---- measurements ------------------------------------------------------- */

static uint32_t tput_ops(LBench *b, uint32_t size)
{
    uint64_t bytes = b->quick ? 32ull << 20 : 256ull << 20;
    uint32_t ops = MIN(MAX(bytes / size, 64), b->quick ? 512 : 4096);

    return ROUND_UP(ops, BENCH_SIG_EVERY);
}

static Tput run_tput(LBench *b, uint32_t size)
{
    uint32_t total = tput_ops(b, size);
    uint32_t posted = 0, done = 0, cqes = 0, polls = 0;
    /* About a tenth of a window's transfer time at 1 GB/s, up to 200 us. */
    uint32_t nap = MIN(size * BENCH_SIG_EVERY / 10000, 200);
    ChppTCq *scq = &b->a.cq[SCQ];
    uint64_t ca0, cb0, cm0;
    int64_t t0, t1;
    Tput r = { .ops = total };

    ca0 = chpp_cpu_ns(b->pid_a);
    cb0 = chpp_cpu_ns(b->pid_b);
    cm0 = chpp_cpu_ns(0);
    t0 = now_us();
    while (done < total) {
        uint32_t n = MIN(BENCH_WINDOW - (posted - done), total - posted);
        struct chpp_cqe cqe;
        uint32_t upto;

        if (n >= BENCH_SIG_EVERY || (n && posted + n == total)) {
            g_autofree ChppWqeBuf **w = g_new(ChppWqeBuf *, n);

            for (uint32_t i = 0; i < n; i++) {
                uint32_t idx = posted + i;

                w[i] = wqe_build(b, OP_PUT, size, idx,
                                 (idx + 1) % BENCH_SIG_EVERY == 0 ||
                                 idx + 1 == total);
            }
            chpp_post_sends(b->a.d, &b->a.qp, w, n, true);
            posted += n;
        }
        polls += cq_wait(b, &b->a, scq, &cqe, nap);
        upto = le64_to_cpu(cqe.wr_id) + 1;
        g_assert_cmpuint(upto, >, done);
        g_assert_cmpuint(upto, <=, posted);
        done = upto;
        cq_consume(b, &b->a, SCQ, 1, done == total);
        cqes++;
    }
    t1 = now_us();
    r.cpu_a_us = (chpp_cpu_ns(b->pid_a) - ca0) / 1e3 / total;
    r.cpu_b_us = (chpp_cpu_ns(b->pid_b) - cb0) / 1e3 / total;
    r.cpu_me_us = (chpp_cpu_ns(0) - cm0) / 1e3 / total;
    r.secs = (t1 - t0) / 1e6;
    r.mbps = (double)total * size / r.secs / 1e6;
    r.polls_per_cqe = (double)polls / cqes;
    return r;
}

/* Single signaled operations: doorbell write -> CQE read valid. */
static Lat run_lat(LBench *b, int op, uint32_t size)
{
    uint32_t n = b->quick ? 50 : BENCH_LAT_N;
    g_autofree int64_t *v = g_new(int64_t, n);
    g_autofree int64_t *fl = g_new(int64_t, n);
    ChppTCq *scq = &b->a.cq[SCQ];
    ChppTSge rsge = { b->dst, size, b->dkey };
    double p99;
    Lat r;

    for (uint32_t i = 0; i < n; i++) {
        struct chpp_cqe cqe;
        int64_t t0;

        /* The qtest floor: MMIO write + 32 B read, just before. */
        t0 = now_us();
        chpp_wr(b->a.d, CHPP_REG_SCRATCH, i);
        chpp_read_cqe(b->a.d, scq->ring, (scq->ci + 1) % scq->nent, &cqe);
        fl[i] = now_us() - t0;

        if (op == OP_SEND) {
            chpp_post_recvs(b->b.d, &b->b.qp, i, &rsge, 1, 1);
        }
        chpp_post_send(b->a.d, &b->a.qp, wqe_build(b, op, size, i, true),
                       false);
        t0 = now_us();
        chpp_sq_db(b->a.d, CHPP_NODE_UAR, b->a.qp.qpn, b->a.qp.sq_pi);
        cq_wait(b, &b->a, scq, &cqe, 0);
        v[i] = now_us() - t0;
        g_assert_cmpuint(le64_to_cpu(cqe.wr_id), ==, i);
        cq_consume(b, &b->a, SCQ, 1, i + 1 == n);
        if (op == OP_SEND) {
            /* RC: the receive CQE is written before the ACK is sent. */
            cq_consume(b, &b->b, RCQ, 1, i + 1 == n);
        }
    }
    chpp_med_p99(v, n, &r.med_us, &r.p99_us);
    chpp_med_p99(fl, n, &r.floor_us, &p99);
    return r;
}

/* ---- main --------------------------------------------------------------- */

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--quick] [--unix] [--tcp] [--eth] "
            "[--size BYTES] "
            "[--no-latency] [--no-throughput] [--no-baseline] "
            "[--chardev-path]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    bool want[T_NUM] = {}, any = false, lat = true, tput = true;
    bool baseline = true, quick = false, chardev_path = false;
    uint32_t only_size = 0;
    g_autoptr(GDateTime) date = g_date_time_new_now_local();
    g_autofree char *datestr = g_date_time_format(date, "%F %T %z");
    g_autofree char *dir = NULL;
    char host[256] = "?";
    Raw raw[T_NUM] = {};
    Tput tp[T_NUM][NTP] = {};
    Lat lt[T_NUM][NLAT] = {};
    uint32_t steps[T_NUM] = {};
    uint32_t cnt[T_NUM][6] = {};
    int i, t;
    uint32_t s;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--unix")) {
            want[T_UNIX] = any = true;
        } else if (!strcmp(argv[i], "--tcp")) {
            want[T_TCP] = any = true;
        } else if (!strcmp(argv[i], "--eth")) {
            want[T_ETH] = any = true;
        } else if (!strcmp(argv[i], "--no-latency")) {
            lat = false;
        } else if (!strcmp(argv[i], "--no-throughput")) {
            tput = false;
        } else if (!strcmp(argv[i], "--no-baseline")) {
            baseline = false;
        } else if (!strcmp(argv[i], "--chardev-path")) {
            chardev_path = true;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            g_assert(qemu_strtoui(argv[++i], NULL, 0, &only_size) == 0);
        } else {
            usage(argv[0]);
        }
    }
    if (!any) {
        want[T_UNIX] = want[T_TCP] = true;
    }
    if (!getenv("QTEST_QEMU_BINARY")) {
        fprintf(stderr, "QTEST_QEMU_BINARY is not set (use scripts/bench.sh "
                "--link)\n");
        return 2;
    }
    gethostname(host, sizeof(host) - 1);
    dir = g_dir_make_tmp("chpp-link-bench-XXXXXX", NULL);
    g_assert(dir);

    for (t = 0; t < T_NUM; t++) {
        LBench b = { .quick = quick, .chardev_path = chardev_path };

        if (!want[t]) {
            continue;
        }
        if (baseline && t != T_ETH) {
            raw[t] = raw_baseline(t, dir, quick);
        } else {
            raw[t] = (Raw) { NAN, NAN, NAN, NAN };
        }
        lb_setup(&b, t, dir);
        for (s = 0; s < NTP && tput; s++) {
            if (!only_size || tp_sizes[s] == only_size) {
                tp[t][s] = run_tput(&b, tp_sizes[s]);
            }
        }
        for (s = 0; s < NLAT && lat; s++) {
            if (!only_size || lat_ops[s].size == only_size) {
                lt[t][s] = run_lat(&b, lat_ops[s].op, lat_ops[s].size);
            }
        }
        steps[t] = b.clock_steps;
        cnt[t][0] = chpp_counter(b.a.d, CHPP_CNT_LINK_TX_FRAMES);
        cnt[t][1] = chpp_counter(b.b.d, CHPP_CNT_LINK_RX_FRAMES);
        cnt[t][2] = chpp_counter(b.a.d, CHPP_CNT_RETRANSMITS);
        cnt[t][3] = chpp_counter(b.b.d, CHPP_CNT_PKTS_DROPPED) +
                    chpp_counter(b.a.d, CHPP_CNT_PKTS_DROPPED);
        cnt[t][4] = chpp_counter(b.a.d, CHPP_CNT_RNR_NAKS);
        cnt[t][5] = chpp_counter(b.b.d, CHPP_CNT_LINK_CREDIT_ERRORS);
        lb_stop(&b);
    }

    printf("chpp-hca link benchmark  %s  host %s, %ld CPUs%s\n", datestr,
           host, sysconf(_SC_NPROCESSORS_ONLN), quick ? "  (--quick)" : "");
    printf("QEMU: %s; two QEMUs (qtest accel), node 1 -> node 2, one RC QP "
           "each, MTU 4096; link read by %s\n", getenv("QTEST_QEMU_BINARY"),
           chardev_path ? "the chardev (link-thread=off)"
                        : "the device's reader thread");
    printf("MB = 10^6 bytes; wall clock; FPGA prototype target %.0f MB/s\n",
           FPGA_MBPS);
    for (t = 0; t < T_NUM; t++) {
        if (!want[t]) {
            continue;
        }
        printf("\n[%s%s]\n", t_name[t],
               t == T_TCP ? " socket, 127.0.0.1, nodelay=on" :
               t == T_ETH ? ": netdev socket,mcast on loopback (no raw "
                            "baseline: compare with unix)" : " socket");
        printf("Raw socket between two plain processes: %.0f MB/s "
               "(256 KiB reads), %.0f MB/s (4 KiB reads); 64 B round trip "
               "%.1f / %.1f us (median / p99)\n", raw[t].mbps,
               raw[t].mbps_4k, raw[t].rtt_med_us, raw[t].rtt_p99_us);
        if (tput) {
            printf("PUT bandwidth (window %d, every %dth signaled; per-op "
                   "CPU us: QEMU node 1, node 2, bench)\n", BENCH_WINDOW,
                   BENCH_SIG_EVERY);
            printf("  %-8s %6s %8s %9s %8s %8s %8s %7s %9s %9s %8s\n",
                   "size", "ops", "time s", "MB/s", "/raw", "/raw4k",
                   "/FPGA", "polls", "cpu n1", "cpu n2", "cpu me");
            for (s = 0; s < NTP; s++) {
                Tput *r = &tp[t][s];

                if (!r->ops) {
                    continue;
                }
                printf("  %-8s %6u %8.3f %9.1f %8.4f %8.4f %8.4f %7.2f "
                       "%9.1f %9.1f %8.1f\n", chpp_size_str(tp_sizes[s]),
                       r->ops, r->secs, r->mbps, r->mbps / raw[t].mbps,
                       r->mbps / raw[t].mbps_4k, r->mbps / FPGA_MBPS,
                       r->polls_per_cqe, r->cpu_a_us, r->cpu_b_us,
                       r->cpu_me_us);
            }
        }
        if (lat) {
            printf("Latency, doorbell -> CQE on node 1, %u single signaled "
                   "ops (us; floor = qtest null op; net = value - floor; "
                   "/rtt = net median / raw 64 B round trip)\n",
                   quick ? 50 : BENCH_LAT_N);
            printf("  %-5s %-6s %9s %9s %9s %9s %9s %8s\n", "op", "size",
                   "median", "p99", "floor", "net med", "net p99", "/rtt");
            for (s = 0; s < NLAT; s++) {
                Lat *r = &lt[t][s];

                if (only_size && lat_ops[s].size != only_size) {
                    continue;
                }
                printf("  %-5s %-6s %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f\n",
                       op_name[lat_ops[s].op],
                       chpp_size_str(lat_ops[s].size), r->med_us, r->p99_us,
                       r->floor_us, r->med_us - r->floor_us,
                       r->p99_us - r->floor_us,
                       (r->med_us - r->floor_us) / raw[t].rtt_med_us);
            }
        }
        printf("clock steps needed: %u; link frames tx (node 1) %u, rx "
               "(node 2) %u; retransmits %u, dropped %u, RNR NAKs %u, "
               "credit errors %u\n", steps[t], cnt[t][0], cnt[t][1],
               cnt[t][2], cnt[t][3], cnt[t][4], cnt[t][5]);
    }
    printf("\n");
    for (t = 0; t < T_NUM; t++) {
        if (!want[t]) {
            continue;
        }
        printf("BENCH kind=raw sock=%s mbps=%.1f mbps_4k=%.1f rtt_med_us=%.2f "
               "rtt_p99_us=%.2f\n", t_name[t], raw[t].mbps, raw[t].mbps_4k,
               raw[t].rtt_med_us, raw[t].rtt_p99_us);
        for (s = 0; s < NTP; s++) {
            Tput *r = &tp[t][s];

            if (r->ops) {
                printf("BENCH kind=link_tput sock=%s op=PUT size=%u ops=%u "
                       "secs=%.4f mbps=%.2f ratio_raw=%.5f ratio_raw4k=%.5f "
                       "ratio_fpga=%.5f polls_per_cqe=%.2f cpu_n1_us=%.2f "
                       "cpu_n2_us=%.2f cpu_bench_us=%.2f path=%s\n",
                       t_name[t], tp_sizes[s], r->ops, r->secs, r->mbps,
                       r->mbps / raw[t].mbps, r->mbps / raw[t].mbps_4k,
                       r->mbps / FPGA_MBPS, r->polls_per_cqe, r->cpu_a_us,
                       r->cpu_b_us, r->cpu_me_us,
                       chardev_path ? "chardev" : "thread");
            }
        }
        for (s = 0; s < NLAT && lat; s++) {
            Lat *r = &lt[t][s];

            if (only_size && lat_ops[s].size != only_size) {
                continue;
            }
            printf("BENCH kind=link_lat sock=%s op=%s size=%u med_us=%.2f "
                   "p99_us=%.2f floor_us=%.2f net_med_us=%.2f "
                   "ratio_rtt=%.3f\n", t_name[t], op_name[lat_ops[s].op],
                   lat_ops[s].size, r->med_us, r->p99_us, r->floor_us,
                   r->med_us - r->floor_us,
                   (r->med_us - r->floor_us) / raw[t].rtt_med_us);
        }
    }
    fflush(stdout);
    {
        g_autofree char *p1 = g_strdup_printf("%s/raw.sock", dir);
        g_autofree char *p2 = g_strdup_printf("%s/link.sock", dir);

        unlink(p1);
        unlink(p2);
        rmdir(dir);
    }
    return 0;
}
