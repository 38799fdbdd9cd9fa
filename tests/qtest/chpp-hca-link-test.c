/*
 * chpp-hca link tests: two QEMUs joined by a unix socket chardev moving
 * data both ways, fault injection and recovery, link loss and reconnect,
 * handshake refusal, and a hostile peer (this program) that speaks the
 * link protocol directly, as a third-party peer would.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include "chpp-hca-qtest.h"
#include "hw/chpp/chpp-wire.h"

#define DEV_PATH "/machine/peripheral-anon/device[0]"

#define UAR     1
#define PD      2
#define SCQ     0
#define RCQ     1
#define MR_ALL  (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                 CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)

typedef ChppNode Node;

static char *tmpdir;

static char *sock_path(const char *name)
{
    return g_strdup_printf("%s/%s", tmpdir, name);
}

/* Extra device properties of the nodes the running test starts. */
static const char *node_props = "";

static void node_start(Node *n, uint16_t id, const char *chardev)
{
    g_autofree char *props = g_strdup_printf("node-id=%u,chardev=lnk%s", id,
                                             node_props);
    g_autofree char *extra = g_strdup_printf("-chardev socket,id=lnk,%s",
                                             chardev);

    chpp_node_setup(n, chpp_start(props, extra), id, 0);
}

/* Server first, then a client that keeps reconnecting. */
static void pair_start(Node *a, Node *b, const char *name)
{
    g_autofree char *path = sock_path(name);
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s,reconnect=1", path);

    node_start(a, 1, srv);
    node_start(b, 2, cli);
}

static void wait_link(Node *a, Node *b, bool up)
{
    chpp_node_wait_link(a, b, up);
}

/* Is @n's connection read by the device's reader thread? */
static bool reader_thread(Node *n)
{
    QDict *rsp = qtest_qmp(n->d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'state'}}", DEV_PATH);
    QDict *link = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "link");
    bool on = qdict_get_bool(link, "reader-thread");

    qobject_unref(rsp);
    return on;
}

/* @n's state property, its "link" member; unref *@rsp after use. */
static QDict *link_state(Node *n, QDict **rsp)
{
    *rsp = qtest_qmp(n->d->qts, "{'execute': 'qom-get', 'arguments': "
                     "{'path': %s, 'property': 'state'}}", DEV_PATH);
    return qdict_get_qdict(qdict_get_qdict(*rsp, "return"), "link");
}

static bool link_state_bool(Node *n, const char *key)
{
    QDict *rsp;
    bool v = qdict_get_bool(link_state(n, &rsp), key);

    qobject_unref(rsp);
    return v;
}

/*
 * Do the two nodes move to shared rings (docs/link.md, "Shared memory")?
 * On a unix socket read by the reader thread, unless link-shm=off: the
 * socket-* variant of this test (meson.build) runs it so.
 */
static bool shm_expected(void)
{
    const char *env = chpp_env_props();

    return !*node_props && !(env && strstr(env, "link-shm=off"));
}

/* Wait (bounded) for both directions of @n's link in memory, or none. */
static void check_shm(Node *n)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (shm_expected() && !(link_state_bool(n, "shm-rx") &&
                               link_state_bool(n, "shm-tx"))) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpint(link_state_bool(n, "shm-rx"), ==, shm_expected());
    g_assert_cmpint(link_state_bool(n, "shm-tx"), ==, shm_expected());
}

static uint64_t link_state_u64(Node *n, const char *key)
{
    QDict *rsp;
    uint64_t v = qdict_get_int(link_state(n, &rsp), key);

    qobject_unref(rsp);
    return v;
}

static void node_qp(Node *n, uint32_t qpn, uint8_t magic)
{
    chpp_node_qp(n, qpn, magic, 6, 9);
}

static void node_connect(Node *n, const Node *peer, uint8_t timeout,
                         uint8_t retry)
{
    chpp_node_connect(n, peer, timeout, retry);
}

/* Two nodes with QP @qpn connected to each other. */
static void pair_connect(Node *a, Node *b, uint32_t qpn, uint8_t timeout,
                         uint8_t retry)
{
    node_qp(a, qpn, 0x10 + qpn);
    node_qp(b, qpn, 0x20 + qpn);
    node_connect(a, b, timeout, retry);
    node_connect(b, a, timeout, retry);
}

static void pair_stop(Node *a, Node *b)
{
    chpp_stop(a->d);
    chpp_stop(b->d);
}

static uint32_t node_mr(Node *n, uint64_t addr, uint64_t len)
{
    return chpp_create_mr(n->d, n->next_mr++, PD, addr, len, MR_ALL);
}

static uint64_t node_buf(Node *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = node_mr(n, addr, len);
    return addr;
}

/*
 * Wait for a CQE on @n while stepping both virtual clocks (timers of
 * either side may be what moves things) and letting the socket run.
 */
static bool poll_db_status;

/* Read CHPP_UAR_DB_STATUS as a provider polling an empty CQ does. */
static void read_db_status(Node *n)
{
    qpci_io_readl(n->d->pdev, n->d->bar2,
                  UAR * CHPP_UAR_PAGE_SIZE + CHPP_UAR_DB_STATUS);
}

static void poll2(Node *n, Node *other, uint32_t cqn, struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (!chpp_cqe_valid(n->d, &n->cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (poll_db_status) {
            /* Each read also takes what the socket holds, beside the thread. */
            read_db_status(n);
            if (other) {
                read_db_status(other);
            }
            continue;
        }
        qtest_clock_step(n->d->qts, 200000);
        if (other) {
            qtest_clock_step(other->d->qts, 200000);
        }
        g_usleep(200);
    }
    n->cq[cqn].ci++;
    chpp_cq_db(n->d, UAR, cqn, CHPP_CQ_DB_SET_CI, n->cq[cqn].ci);
}

static void expect2(Node *n, Node *other, uint32_t cqn, uint64_t wr_id,
                    uint8_t opcode, uint8_t status, uint32_t len)
{
    struct chpp_cqe cqe;

    poll2(n, other, cqn, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    if (!status) {
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    }
}

static void put(Node *from, Node *to, uint64_t src, uint32_t skey,
                uint64_t dst, uint32_t dkey, uint32_t len, uint64_t wr_id)
{
    ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, wr_id, 0);

    chpp_wqe_raddr(w, dst, dkey);
    chpp_wqe_sge(w, src, len, skey);
    chpp_post_send(from->d, &from->qp, w, true);
}

/*
 * PUT @len bytes of pattern @pat from @x's buffer to @y's, then GET them
 * back after them in @x's buffer (wr_ids 1 and 2), bytes checked each time.
 */
static void put_then_get(Node *x, Node *y, uint64_t xb, uint32_t xk,
                         uint64_t yb, uint32_t yk, uint32_t len, uint8_t pat)
{
    ChppWqeBuf *w;

    chpp_fill(x->d, xb, len, pat);
    put(x, y, xb, xk, yb, yk, len, 1);
    expect2(x, y, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 0, len);
    chpp_check(y->d, yb, len, pat);
    w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_raddr(w, yb, yk);
    chpp_wqe_sge(w, xb + len, len, xk);
    chpp_post_send(x->d, &x->qp, w, true);
    expect2(x, y, SCQ, 2, CHPP_CQE_OP_RDMA_READ, 0, len);
    chpp_check(x->d, xb + len, len, pat);
}

/* ---- tests -------------------------------------------------------------- */

static void test_link_up_and_port(void)
{
    Node a, b;
    struct chpp_port_info pi;

    pair_start(&a, &b, "up");
    wait_link(&a, &b, true);
    g_assert_cmphex(chpp_rd(a.d, CHPP_REG_LINK), ==,
                    CHPP_LINK_UP | CHPP_LINK_ATTACHED |
                    2 << CHPP_LINK_PEER_SHIFT);
    g_assert_cmphex(chpp_rd(b.d, CHPP_REG_LINK) >> CHPP_LINK_PEER_SHIFT, ==,
                    1);
    g_assert(chpp_rd(a.d, CHPP_REG_CAPS) & CHPP_CAP_LINK);
    g_assert_cmphex(chpp_cmd(a.d, CHPP_CMD_QUERY_PORT, 0, 1, a.d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(a.d->qts, a.d->mbox_out, &pi, sizeof(pi));
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_ACTIVE);
    g_assert_cmpuint(pi.phys_state, ==, CHPP_PORT_PHYS_LINK_UP);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_LINK_UPS), ==, 1);
    check_shm(&a);
    check_shm(&b);
    pair_stop(&a, &b);
}

static void test_ops_both_directions(void)
{
    Node a, b;
    Node *n[2] = { &a, &b };
    uint32_t len = 1 << 20;
    int i;

    pair_start(&a, &b, "ops");
    wait_link(&a, &b, true);
    /* The path under test: the reader thread unless link-thread=off. */
    g_assert_cmpint(reader_thread(&a), ==, !*node_props);
    g_assert_cmpint(reader_thread(&b), ==, !*node_props);
    check_shm(&a);
    check_shm(&b);
    pair_connect(&a, &b, 0, 14, 3);
    for (i = 0; i < 2; i++) {
        Node *x = n[i], *y = n[!i];
        uint32_t xk, yk;
        uint64_t xb = node_buf(x, 2 * len, &xk);
        uint64_t yb = node_buf(y, 2 * len, &yk);
        ChppTSge rs = { yb + len, 4096, yk };
        ChppWqeBuf *w;
        struct chpp_cqe cqe;

        /* PUT 1 MiB, GET it back, SEND with immediate, fetch-add. */
        put_then_get(x, y, xb, xk, yb, yk, len, 10 + i);

        chpp_post_recv_sges(y->d, &y->qp, 3, &rs, 1);
        w = chpp_wqe_new(CHPP_WQE_SEND_IMM, CHPP_WQE_SIGNALED, 4, 0xabc);
        chpp_wqe_sge(w, xb, 3000, xk);
        chpp_post_send(x->d, &x->qp, w, true);
        expect2(x, y, SCQ, 4, CHPP_CQE_OP_SEND, 0, 3000);
        poll2(y, x, RCQ, &cqe);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 3000);
        g_assert_cmphex(le32_to_cpu(cqe.imm), ==, 0xabc);
        g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, x->id);
        chpp_check(y->d, yb + len, 3000, 10 + i);

        qtest_writeq(y->d->qts, yb, 40);
        w = chpp_wqe_new(CHPP_WQE_ATOMIC_FA, CHPP_WQE_SIGNALED, 5, 0);
        chpp_wqe_raddr(w, yb, yk);
        chpp_wqe_atomic(w, 2, 0);
        chpp_wqe_sge(w, xb, 8, xk);
        chpp_post_send(x->d, &x->qp, w, true);
        expect2(x, y, SCQ, 5, CHPP_CQE_OP_FETCH_ADD, 0, 8);
        g_assert_cmpuint(qtest_readq(y->d->qts, yb), ==, 42);
        g_assert_cmpuint(qtest_readq(x->d->qts, xb), ==, 40);
    }
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_LINK_CREDIT_ERRORS), ==, 0);
    pair_stop(&a, &b);
}

/* GETs at full depth from both sides at once: no deadlock. */
static void test_simultaneous_gets(void)
{
    Node a, b;
    uint32_t len = 256 * 1024, part = len / 16;
    uint32_t ak, bk;
    uint64_t ab, bb;
    int i;

    pair_start(&a, &b, "gets");
    wait_link(&a, &b, true);
    pair_connect(&a, &b, 0, 14, 3);
    ab = node_buf(&a, 2 * len, &ak);
    bb = node_buf(&b, 2 * len, &bk);
    chpp_fill(a.d, ab, len, 1);
    chpp_fill(b.d, bb, len, 2);
    for (i = 0; i < 16; i++) {
        ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, i, 0);

        chpp_wqe_raddr(w, bb + i * part, bk);
        chpp_wqe_sge(w, ab + len + i * part, part, ak);
        chpp_post_send(a.d, &a.qp, w, false);
        w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, i, 0);
        chpp_wqe_raddr(w, ab + i * part, ak);
        chpp_wqe_sge(w, bb + len + i * part, part, bk);
        chpp_post_send(b.d, &b.qp, w, false);
    }
    chpp_sq_db(a.d, UAR, 0, a.qp.sq_pi);
    chpp_sq_db(b.d, UAR, 0, b.qp.sq_pi);
    for (i = 0; i < 16; i++) {
        expect2(&a, &b, SCQ, i, CHPP_CQE_OP_RDMA_READ, 0, part);
        expect2(&b, &a, SCQ, i, CHPP_CQE_OP_RDMA_READ, 0, part);
    }
    chpp_check(a.d, ab + len, len, 2);
    chpp_check(b.d, bb + len, len, 1);
    pair_stop(&a, &b);
}

/* Fault injection is driven from the monitor, as a user would. */
static void set_fault(Node *n, const char *prop, uint64_t value)
{
    QDict *rsp = qtest_qmp(n->d->qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': %s, 'value': %u}}",
                           DEV_PATH, prop, (unsigned)value);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

static void cut_link(Node *n)
{
    QDict *rsp = qtest_qmp(n->d->qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': 'fault-cut', "
                           "'value': true}}", DEV_PATH);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* Each injected fault, and the recovery it must produce. */
static void test_faults_recover(void)
{
    static const char *const faults[] = {
        "fault-drop-next", "fault-corrupt-next", "fault-duplicate-next",
    };
    static const int counters[] = {
        CHPP_CNT_FAULT_DROPS, CHPP_CNT_FAULT_CORRUPTS, CHPP_CNT_FAULT_DUPS,
    };
    Node a, b;
    uint32_t ak, bk;
    uint64_t ab, bb;
    unsigned i;

    pair_start(&a, &b, "faults");
    wait_link(&a, &b, true);
    pair_connect(&a, &b, 0, 12, 7);
    ab = node_buf(&a, 65536, &ak);
    bb = node_buf(&b, 65536, &bk);
    for (i = 0; i < ARRAY_SIZE(faults); i++) {
        uint32_t rtx = chpp_counter(a.d, CHPP_CNT_RETRANSMITS);

        chpp_fill(a.d, ab, 20000, i);
        set_fault(&a, faults[i], 1);
        put(&a, &b, ab, ak, bb, bk, 20000, 0x70 + i);
        expect2(&a, &b, SCQ, 0x70 + i, CHPP_CQE_OP_RDMA_WRITE, 0, 20000);
        chpp_check(b.d, bb, 20000, i);
        g_assert_cmpuint(chpp_counter(a.d, counters[i]), ==, 1);
        if (i < 2) {
            /* A lost or damaged packet is sent again. */
            g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_RETRANSMITS), >, rtx);
        }
    }
    /* Delay: every frame arrives late, nothing is lost. */
    set_fault(&a, "fault-delay-ns", 2000000);
    chpp_fill(a.d, ab, 9000, 9);
    put(&a, &b, ab, ak, bb, bk, 9000, 0x80);
    expect2(&a, &b, SCQ, 0x80, CHPP_CQE_OP_RDMA_WRITE, 0, 9000);
    chpp_check(b.d, bb, 9000, 9);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_FAULT_DELAYS), >=, 3);
    set_fault(&a, "fault-delay-ns", 0);
    /* Every frame dropped: the retries run out. */
    set_fault(&a, "fault-drop-every", 1);
    put(&a, &b, ab, ak, bb, bk, 100, 0x90);
    expect2(&a, &b, SCQ, 0x90, CHPP_CQE_OP_RDMA_WRITE,
            CHPP_WC_RETRY_EXC_ERR, 0);
    pair_stop(&a, &b);
}

/* Cut the link: outstanding work fails after the timeout; reconnect. */
static void test_cut_and_reconnect(void)
{
    Node a, b;
    uint32_t ak, bk;
    uint64_t ab, bb;
    struct chpp_port_info pi;

    pair_start(&a, &b, "cut");
    wait_link(&a, &b, true);
    pair_connect(&a, &b, 0, 12, 2);
    ab = node_buf(&a, 8192, &ak);
    bb = node_buf(&b, 8192, &bk);
    cut_link(&a);
    wait_link(&a, &b, false);
    g_assert_cmphex(chpp_cmd(a.d, CHPP_CMD_QUERY_PORT, 0, 1, a.d->mbox_out),
                    ==, CHPP_STAT_OK);
    qtest_memread(a.d->qts, a.d->mbox_out, &pi, sizeof(pi));
    g_assert_cmpuint(pi.state, ==, CHPP_PORT_DOWN);

    put(&a, &b, ab, ak, bb, bk, 64, 1);
    expect2(&a, NULL, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, CHPP_WC_RETRY_EXC_ERR,
            0);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_LINK_DOWN_DROPS), >=, 1);

    /* The client reconnects by itself; new QPs carry traffic again. */
    wait_link(&a, &b, true);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_LINK_UPS), ==, 2);
    pair_connect(&a, &b, 1, 12, 2);
    chpp_fill(a.d, ab, 64, 5);
    put(&a, &b, ab, ak, bb, bk, 64, 2);
    expect2(&a, &b, SCQ, 2, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    chpp_check(b.d, bb, 64, 5);
    pair_stop(&a, &b);
}

static void test_same_node_refused(void)
{
    g_autofree char *path = sock_path("same");
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s", path);
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    Node a, b;

    node_start(&a, 5, srv);
    node_start(&b, 5, cli);
    while (chpp_counter(a.d, CHPP_CNT_LINK_REFUSED) == 0 ||
           chpp_counter(b.d, CHPP_CNT_LINK_REFUSED) == 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
    g_assert_false(chpp_node_link_up(&a));
    g_assert_false(chpp_node_link_up(&b));
    pair_stop(&a, &b);
}

/*
 * Migrate one node of a linked pair while its QPs are connected: the link
 * comes back with the destination and traffic resumes both ways, with the
 * QPs' PSNs carried over and no data lost or doubled.
 */
static void test_migrate_linked_node(void)
{
    g_autofree char *path = sock_path("migl");
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    g_autofree char *cli = g_strdup_printf("path=%s,reconnect=1", path);
    g_autofree char *uri = g_strdup_printf("unix:%s/migl-stream", tmpdir);
    g_autofree char *extra = g_strdup_printf("-chardev socket,id=lnk,%s",
                                             cli);
    uint32_t ak, bk;
    uint64_t ab, bb;
    ChppDev *dst;
    struct chpp_qp_context before, after;
    Node a, b;
    int i;

    node_start(&a, 1, srv);
    node_start(&b, 2, cli);
    wait_link(&a, &b, true);
    pair_connect(&a, &b, 0, 14, 7);
    ab = node_buf(&a, 65536, &ak);
    bb = node_buf(&b, 65536, &bk);
    for (i = 0; i < 2; i++) {
        chpp_fill(a.d, ab, 30000, 20 + i);
        put(&a, &b, ab, ak, bb, bk, 30000, 0x10 + i);
        expect2(&a, &b, SCQ, 0x10 + i, CHPP_CQE_OP_RDMA_WRITE, 0, 30000);
        chpp_check(b.d, bb, 30000, 20 + i);
    }
    g_assert_cmphex(chpp_query_qp(b.d, 0, &before), ==, CHPP_STAT_OK);

    dst = chpp_start_incoming_extra("node-id=2,chardev=lnk", extra, uri);
    migrate(b.d->qs, dst->qs, uri);
    chpp_adopt_migrated(dst, b.d);
    chpp_stop(b.d);             /* its socket closes; the server takes dst */
    b.d = dst;
    wait_link(&a, &b, true);

    g_assert_cmphex(chpp_query_qp(b.d, 0, &after), ==, CHPP_STAT_OK);
    g_assert_cmpuint(after.state, ==, CHPP_QPS_RTS);
    g_assert_cmpuint(le32_to_cpu(after.rq_psn), ==,
                     le32_to_cpu(before.rq_psn));
    g_assert_cmpuint(le32_to_cpu(after.sq_psn), ==,
                     le32_to_cpu(before.sq_psn));
    /* Both directions work again; one PUT each, exactly once. */
    chpp_fill(a.d, ab, 40000, 77);
    put(&a, &b, ab, ak, bb, bk, 40000, 0x20);
    expect2(&a, &b, SCQ, 0x20, CHPP_CQE_OP_RDMA_WRITE, 0, 40000);
    chpp_check(b.d, bb, 40000, 77);
    chpp_fill(b.d, bb + 40960, 20000, 88);
    put(&b, &a, bb + 40960, bk, ab + 40960, ak, 20000, 0x30);
    expect2(&b, &a, SCQ, 0x30, CHPP_CQE_OP_RDMA_WRITE, 0, 20000);
    chpp_check(a.d, ab + 40960, 20000, 88);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_WQES), ==, 1);
    pair_stop(&a, &b);
}

/* ---- hostile peer ----------------------------------------------------- */

typedef struct Peer {
    int listen_fd;
    int fd;
    char *path;
} Peer;

static void peer_listen(Peer *p, const char *name)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };

    p->path = sock_path(name);
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    g_assert(p->listen_fd >= 0);
    pstrcpy(un.sun_path, sizeof(un.sun_path), p->path);
    g_assert(bind(p->listen_fd, (void *)&un, sizeof(un)) == 0);
    g_assert(listen(p->listen_fd, 1) == 0);
}

static void peer_accept(Peer *p)
{
    p->fd = accept(p->listen_fd, NULL, NULL);
    g_assert(p->fd >= 0);
}

static void peer_write(Peer *p, const void *buf, size_t len)
{
    g_assert_cmpint(qemu_write_full(p->fd, buf, len), ==, len);
}

static void peer_rec(Peer *p, uint32_t magic, uint8_t type, uint8_t vc,
                     const void *data, uint32_t len)
{
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(magic), .type = type, .vc = vc,
        .len = cpu_to_le32(len),
    };

    peer_write(p, &rec, sizeof(rec));
    if (len) {
        peer_write(p, data, len);
    }
}

/* Read one record from QEMU (bounded wait). */
static uint8_t peer_read_rec(Peer *p, void *buf, uint32_t max)
{
    struct chpp_link_rec rec;
    uint32_t len;

    g_assert_cmpint(read(p->fd, &rec, sizeof(rec)), ==, sizeof(rec));
    g_assert_cmphex(le32_to_cpu(rec.magic), ==, CHPP_LINK_MAGIC);
    len = le32_to_cpu(rec.len);
    g_assert_cmpuint(len, <=, max);
    g_assert_cmpint(read(p->fd, buf, len), ==, len);
    return rec.type;
}

static void peer_hello(Peer *p, uint16_t major, uint16_t node)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(major),
        .node_id = cpu_to_le16(node),
        .credits = { cpu_to_le32(64), cpu_to_le32(64) },
    };

    peer_rec(p, CHPP_LINK_MAGIC, CHPP_LINK_HELLO, 0, &h, sizeof(h));
}

static void peer_close(Peer *p)
{
    close(p->fd);
    close(p->listen_fd);
    unlink(p->path);
    g_free(p->path);
}

/* A valid frame towards QP 0 of node 1, as bytes to be spoiled. */
static GByteArray *good_frame(uint32_t payload)
{
    GByteArray *f = g_byte_array_new();
    uint8_t hdr[CHPP_WIRE_HDR_SIZE] = {};
    struct chpp_wire_ext e = {
        .version = CHPP_WIRE_EXT_VERSION, .op = CHPP_OP_WRITE,
        .flags = CHPP_WIRE_F_FIRST | CHPP_WIRE_F_LAST, .dst_node = 1,
        .src_node = 9, .payload_len = cpu_to_le32(payload),
        .msg_len = cpu_to_le32(payload),
    };
    uint8_t data[64] = {};

    hdr[0] = (payload ? 3 : 1) << 5;
    hdr[2] = CHPP_PKT_PUT << 2;
    hdr[3] = DIV_ROUND_UP(payload, 4);
    hdr[7] = payload ? 0xff : 0;
    stl_be_p(hdr + 8, (9u & 0xf) << 28 | (1u & 0xf) << 18 | 8u << 8);
    g_byte_array_append(f, hdr, sizeof(hdr));
    g_byte_array_append(f, (void *)&e, sizeof(e));
    g_byte_array_append(f, data, payload);
    return f;
}

static uint32_t wait_counter(Node *n, int c, uint32_t at_least)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint32_t v;

    while ((v = chpp_counter(n->d, c)) < at_least) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    return v;
}

static void test_hostile_peer(void)
{
    uint8_t buf[CHPP_WIRE_FRAME_MAX];
    Peer p;
    Node n;
    g_autofree char *cli = NULL;
    GByteArray *f;
    int i;

    peer_listen(&p, "hostile");
    cli = g_strdup_printf("path=%s,reconnect=1", p.path);
    node_start(&n, 1, cli);
    node_qp(&n, 0, 0x33);
    peer_accept(&p);
    g_assert_cmpuint(peer_read_rec(&p, buf, sizeof(buf)), ==,
                     CHPP_LINK_HELLO);
    peer_hello(&p, CHPP_LINK_VERSION_MAJOR, 9);
    wait_link(&n, NULL, true);
    g_assert_cmpint(reader_thread(&n), ==, !*node_props);

    /* Payload length that disagrees with the record. */
    f = good_frame(16);
    stl_le_p(f->data + CHPP_WIRE_HDR_SIZE + 48, 4000);
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    g_byte_array_unref(f);
    /* Unknown opcode; unknown extension version; header mismatch. */
    f = good_frame(16);
    f->data[CHPP_WIRE_HDR_SIZE + 1] = 0x77;
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    f->data[CHPP_WIRE_HDR_SIZE + 1] = CHPP_OP_WRITE;
    f->data[CHPP_WIRE_HDR_SIZE] = 9;
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    f->data[CHPP_WIRE_HDR_SIZE] = CHPP_WIRE_EXT_VERSION;
    f->data[6] ^= 1;
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    /* Shorter than its headers. */
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, 40);
    g_byte_array_unref(f);
    wait_counter(&n, CHPP_CNT_PKTS_MALFORMED, 5);

    /* Well formed but for a QP out of range, and with the wrong magic. */
    f = good_frame(8);
    stl_le_p(f->data + CHPP_WIRE_HDR_SIZE + 12, 100000);
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    g_byte_array_unref(f);
    f = good_frame(8);
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    wait_counter(&n, CHPP_CNT_PKTS_DROPPED, 7);
    g_assert_cmpuint(chpp_counter(n.d, CHPP_CNT_PKTS_MALFORMED), ==, 5);

    /* A flood beyond the credits granted. */
    for (i = 0; i < CHPP_LINK_CREDITS + 50; i++) {
        peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, f->len);
    }
    g_byte_array_unref(f);
    /* Each is dropped: beyond the credits, or for a QP not ready. */
    wait_counter(&n, CHPP_CNT_PKTS_DROPPED, 7 + CHPP_LINK_CREDITS + 50);
    g_assert_cmphex(chpp_rd(n.d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);

    /* A record that breaks the protocol cuts the connection. */
    peer_rec(&p, 0xdeadbeef, CHPP_LINK_FRAME, 0, NULL, 0);
    wait_link(&n, NULL, false);
    g_assert_cmpuint(chpp_counter(n.d, CHPP_CNT_LINK_BAD_RECORDS), ==, 1);
    close(p.fd);

    /* Reconnect; a frame truncated mid-record, then the peer leaves. */
    peer_accept(&p);
    g_assert_cmpuint(peer_read_rec(&p, buf, sizeof(buf)), ==,
                     CHPP_LINK_HELLO);
    peer_hello(&p, CHPP_LINK_VERSION_MAJOR, 9);
    wait_link(&n, NULL, true);
    f = good_frame(64);
    peer_rec(&p, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, f->data, 0);
    {
        struct chpp_link_rec rec = {
            .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = CHPP_LINK_FRAME,
            .len = cpu_to_le32(f->len),
        };
        peer_write(&p, &rec, sizeof(rec));
        peer_write(&p, f->data, f->len / 2);
    }
    g_byte_array_unref(f);
    close(p.fd);
    wait_link(&n, NULL, false);

    /* An unknown version and the same node id are refused. */
    peer_accept(&p);
    peer_read_rec(&p, buf, sizeof(buf));
    peer_hello(&p, CHPP_LINK_VERSION_MAJOR + 1, 9);
    g_assert_cmpuint(peer_read_rec(&p, buf, sizeof(buf)), ==,
                     CHPP_LINK_REFUSE);
    g_assert_cmpuint(ldl_le_p(buf), ==, CHPP_LINK_REFUSE_VERSION);
    close(p.fd);
    peer_accept(&p);
    peer_read_rec(&p, buf, sizeof(buf));
    peer_hello(&p, CHPP_LINK_VERSION_MAJOR, 1);
    g_assert_cmpuint(peer_read_rec(&p, buf, sizeof(buf)), ==,
                     CHPP_LINK_REFUSE);
    g_assert_cmpuint(ldl_le_p(buf), ==, CHPP_LINK_REFUSE_SAME_NODE);
    g_assert_false(chpp_node_link_up(&n));
    g_assert_cmpuint(chpp_counter(n.d, CHPP_CNT_LINK_REFUSED), ==, 2);
    g_assert_cmphex(chpp_rd(n.d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    peer_close(&p);
    chpp_stop(n.d);
}

/*
 * 2 MiB PUTs and GETs both ways between @a and @b through the reader
 * thread's smallest ring (16 KiB; the reads' responses stream the other
 * way), bytes checked; with @poll, both nodes read CHPP_UAR_DB_STATUS
 * while they wait.  Nothing may be dropped or refused.  The pair stays up.
 */
static void small_ring_traffic(Node *a, Node *b, const char *tag, bool poll,
                               uint8_t pat)
{
    Node *n[2] = { a, b };
    uint32_t len = 2 << 20;
    int i;

    node_props = ",x-link-ring-size=16384";
    pair_start(a, b, tag);
    node_props = "";
    wait_link(a, b, true);
    g_assert(reader_thread(a) && reader_thread(b));
    g_assert_cmpuint(link_state_u64(a, "reader-ring-size"), ==, 16384);
    pair_connect(a, b, 0, 14, 3);
    poll_db_status = poll;
    for (i = 0; i < 2; i++) {
        Node *x = n[i], *y = n[!i];
        uint32_t xk, yk;
        uint64_t xb = node_buf(x, 2 * len, &xk);
        uint64_t yb = node_buf(y, 2 * len, &yk);

        put_then_get(x, y, xb, xk, yb, yk, len, pat + i);
    }
    poll_db_status = false;
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_PKTS_DROPPED), ==, 0);
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_LINK_CREDIT_ERRORS),
                         ==, 0);
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_LINK_BAD_RECORDS),
                         ==, 0);
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_LINK_DOWNS), ==, 0);
    }
}

/*
 * The reader thread's smallest ring: megabytes both ways fill it again and
 * again, so the thread waits for room (and records wrap around its end);
 * every byte still arrives, nothing is dropped.
 */
static void test_reader_ring_full(void)
{
    Node a, b;

    small_ring_traffic(&a, &b, "ring", false, 30);
    g_assert_cmpuint(link_state_u64(&a, "reader-ring-waits"), >, 0);
    g_assert_cmpuint(link_state_u64(&b, "reader-ring-waits"), >, 0);
    pair_stop(&a, &b);
}

/*
 * Software that polls (CHPP_UAR_DB_STATUS reads on both nodes, no clock
 * steps) makes the device read the socket in the polling thread, beside
 * the reader thread: both producers fill the small ring and wrap around
 * its end.  Every byte arrives in order, nothing is dropped, and both
 * nodes read in the poll (in timing mode, where the engine keeps its
 * clock, they do not).
 */
static void test_poll_reads(void)
{
    Node a, b;
    Node *n[2] = { &a, &b };
    int i;

    small_ring_traffic(&a, &b, "pollrd", true, 50);
    for (i = 0; i < 2; i++) {
        if (chpp_timing_on()) {
            g_assert_cmpuint(link_state_u64(n[i], "poll-reads"), ==, 0);
        } else {
            g_assert_cmpuint(link_state_u64(n[i], "poll-reads"), >, 0);
        }
    }
    pair_stop(&a, &b);
}

/* @n polls CHPP_UAR_DB_STATUS until @len bytes of @pat are at @addr. */
static void poll_until_landed(Node *n, uint64_t addr, uint32_t len,
                              uint8_t pat)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);

    memset(want, pat, len);
    for (;;) {
        read_db_status(n);
        qtest_memread(n->d->qts, addr, got, len);
        if (!memcmp(got, want, len)) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
    }
}

/* @n's send CQ stays empty for @ms milliseconds (its main loop runs). */
static void no_cqe_for(Node *n, unsigned ms)
{
    struct chpp_cqe cqe;

    g_usleep(ms * 1000);
    g_assert_false(chpp_cqe_valid(n->d, &n->cq[SCQ], &cqe));
}

/*
 * A and B linked with extra device properties @props, QP 0 connected
 * (ACK timeout 4 s, above the tests' holds), a 4 KiB buffer each.
 */
static void linked_pair(Node *a, Node *b, const char *name, const char *props,
                        uint64_t *ab, uint32_t *ak, uint64_t *bb,
                        uint32_t *bk)
{
    node_props = props;
    pair_start(a, b, name);
    node_props = "";
    wait_link(a, b, true);
    pair_connect(a, b, 0, 20, 3);
    *ab = node_buf(a, 4096, ak);
    *bb = node_buf(b, 4096, bk);
}

/*
 * Neither node dropped a frame, lost the link or sent a request twice
 * (every ACK came before its requester's timeout).
 */
static void assert_clean(Node *a, Node *b)
{
    Node *n[2] = { a, b };
    int i;

    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_PKTS_DROPPED), ==, 0);
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_LINK_DOWNS), ==, 0);
        g_assert_cmpuint(chpp_counter(n[i]->d, CHPP_CNT_RETRANSMITS), ==, 0);
    }
}

/*
 * B talks (it PUTs 8 bytes to A, wr_id 100 + @wr_id, and polls until that
 * completes: ACKs are held only where software also rings doorbells), then
 * busy-polls (32 reads of CHPP_UAR_DB_STATUS), then A PUTs 64 bytes of
 * @pat from its buffer at @off to B's at @off (@wr_id).
 */
static void busy_put(Node *a, uint64_t ab, uint32_t ak, Node *b, uint64_t bb,
                     uint32_t bk, uint32_t off, uint8_t pat, uint64_t wr_id)
{
    int i;

    put(b, a, bb + 2048, bk, ab + 2048, ak, 8, 100 + wr_id);
    poll_db_status = true;
    expect2(b, NULL, SCQ, 100 + wr_id, CHPP_CQE_OP_RDMA_WRITE, 0, 8);
    poll_db_status = false;
    for (i = 0; i < 32; i++) {
        read_db_status(b);
    }
    qtest_memset(a->d->qts, ab + off, pat, 64);
    put(a, b, ab + off, ak, bb + off, bk, 64, wr_id);
}

/*
 * ACK hold (docs/link.md, "ACKs wait for a request"): while B busy-polls,
 * the ACK of A's PUT waits for B's own request and goes with it; held past
 * link-ack-hold-us it goes alone when B polls, or when B stops polling
 * (the reader thread looks every x-link-poll-idle-us).  A never polls:
 * its ACKs are never held.  B rings doorbells too (busy_put()): a node
 * that only receives does not hold its ACKs.  The hold and the idle time
 * are long here (1 s, 300 ms) so that qtest's slow polls count as busy
 * polling.
 */
static void test_ack_hold(void)
{
    Node a, b;
    uint64_t ab, bb, t0;
    uint32_t ak, bk;
    int i;

    linked_pair(&a, &b, "ackhold",
                ",link-ack-hold-us=1000000,x-link-poll-idle-us=300000",
                &ab, &ak, &bb, &bk);
    if (chpp_timing_on()) {
        /* The timing model's clock sends frames: nothing is held. */
        busy_put(&a, ab, ak, &b, bb, bk, 0, 0x61, 1);
        expect2(&a, &b, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
        g_assert_cmpuint(link_state_u64(&b, "acks-held"), ==, 0);
        pair_stop(&a, &b);
        return;
    }

    /* 0. B has rung no doorbell: it only receives, its ACK goes at once. */
    for (i = 0; i < 32; i++) {
        read_db_status(&b);
    }
    qtest_memset(a.d->qts, ab + 1024, 0x60, 64);
    put(&a, &b, ab + 1024, ak, bb + 1024, bk, 64, 10);
    poll_until_landed(&b, bb + 1024, 64, 0x60);
    expect2(&a, NULL, SCQ, 10, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    g_assert_cmpuint(link_state_u64(&b, "acks-held"), ==, 0);

    /* 1. The ACK goes with B's request. */
    busy_put(&a, ab, ak, &b, bb, bk, 0, 0x61, 1);
    poll_until_landed(&b, bb, 64, 0x61);
    g_assert_cmpuint(link_state_u64(&b, "acks-held"), ==, 1);
    no_cqe_for(&a, 100);                /* A's ACK did not come */
    qtest_memset(b.d->qts, bb + 64, 0x62, 64);
    put(&b, &a, bb + 64, bk, ab + 64, ak, 64, 2);
    read_db_status(&b);                 /* B polls: its request goes */
    expect2(&a, NULL, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    expect2(&b, NULL, SCQ, 2, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    poll_until_landed(&a, ab + 64, 64, 0x62);
    g_assert_cmpuint(link_state_u64(&b, "acks-held-timed-out"), ==, 0);

    /* 2. Held past its time, the ACK goes at B's next poll. */
    busy_put(&a, ab, ak, &b, bb, bk, 128, 0x63, 3);
    poll_until_landed(&b, bb + 128, 64, 0x63);
    t0 = g_get_monotonic_time();
    g_assert_cmpuint(link_state_u64(&b, "acks-held"), ==, 2);
    while (!chpp_cqe_valid(a.d, &a.cq[SCQ], &(struct chpp_cqe){ 0 })) {
        read_db_status(&b);
        g_usleep(1000);
        g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
    }
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 900 * 1000);
    expect2(&a, NULL, SCQ, 3, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    g_assert_cmpuint(link_state_u64(&b, "acks-held-timed-out"), ==, 1);

    /* 3. B stops polling: the reader thread sends it. */
    busy_put(&a, ab, ak, &b, bb, bk, 192, 0x64, 4);
    poll_until_landed(&b, bb + 192, 64, 0x64);
    g_assert_cmpuint(link_state_u64(&b, "acks-held"), ==, 3);
    expect2(&a, NULL, SCQ, 4, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    g_assert_cmpuint(link_state_u64(&b, "acks-held-timed-out"), ==, 2);

    g_assert_cmpuint(link_state_u64(&a, "acks-held"), ==, 0);
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/* @n's memory at @addr holds @len bytes of @pat within @ms milliseconds. */
static bool landed_within(Node *n, uint64_t addr, uint32_t len, uint8_t pat,
                          unsigned ms)
{
    int64_t end = g_get_monotonic_time() + ms * 1000;
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);

    memset(want, pat, len);
    do {
        qtest_memread(n->d->qts, addr, got, len);
        if (!memcmp(got, want, len)) {
            return true;
        }
        g_usleep(1000);
    } while (g_get_monotonic_time() < end);
    return false;
}

/*
 * A PUTs 64 bytes of @pat from its buffer's slot @i to B's (wr_id 1 + @i),
 * which land in B's memory; A's completion is taken.
 */
static void put_slot(Node *a, Node *b, uint64_t ab, uint32_t ak, uint64_t bb,
                     uint32_t bk, int i, uint8_t pat)
{
    qtest_memset(a->d->qts, ab + 64 * i, pat, 64);
    put(a, b, ab + 64 * i, ak, bb + 64 * i, bk, 64, 1 + i);
    g_assert_true(landed_within(b, bb + 64 * i, 64, pat, 20000));
    expect2(a, NULL, SCQ, 1 + i, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
}

/*
 * A quiet link (docs/link.md, "Threads and I/O"): small reads, nobody
 * polls, so B's main loop reads the socket itself and A's PUTs wake no
 * thread of B; a bulk transfer (reads of a quarter of the 16 KiB ring and
 * more) gives the socket back to the thread, which reads while the main
 * loop parses.  Without spinning (link-spin-us=0): a spinning reader of a
 * shared ring keeps it (test_spin_reads()).
 */
static void test_quiet_loop_reads(void)
{
    Node a, b;
    uint64_t ab, bb, big_a, big_b, r0, l0;
    uint32_t ak, bk, big_ak, big_bk, len = 1 << 20;
    int i;

    linked_pair(&a, &b, "quiet", ",x-link-ring-size=16384,link-spin-us=0",
                &ab, &ak, &bb, &bk);
    big_a = node_buf(&a, len, &big_ak);
    big_b = node_buf(&b, len, &big_bk);
    /* 1. A first PUT: by now B's reads were small. */
    put_slot(&a, &b, ab, ak, bb, bk, 0, 0x91);
    r0 = link_state_u64(&b, "reader-reads");
    l0 = link_state_u64(&b, "loop-reads");

    /* 2. B's main loop reads the next ones, its thread none. */
    for (i = 1; i <= 3; i++) {
        put_slot(&a, &b, ab, ak, bb, bk, i, 0x91 + i);
    }
    g_assert_cmpuint(link_state_u64(&b, "loop-reads"), >=, l0 + 3);
    g_assert_cmpuint(link_state_u64(&b, "reader-reads"), ==, r0);

    /* 3. 1 MiB: the thread reads again; every byte arrives. */
    chpp_fill(a.d, big_a, len, 0x77);
    put(&a, &b, big_a, big_ak, big_b, big_bk, len, 5);
    expect2(&a, NULL, SCQ, 5, CHPP_CQE_OP_RDMA_WRITE, 0, len);
    chpp_check(b.d, big_b, len, 0x77);
    g_assert_cmpuint(link_state_u64(&b, "reader-reads"), >, r0);
    g_assert_cmpuint(link_state_u64(&b, "spin-hits"), ==, 0);
    g_assert_cmpuint(link_state_u64(&b, "spin-misses"), ==, 0);
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/*
 * Spinning (docs/link.md, "Threads and I/O"): B's guest leaves its adapter
 * alone, so after each read B's thread watches A's ring before it sleeps
 * (10 ms here, so that the test does not depend on the host's speed) and
 * finds A's next PUT there: spin hits, no main-loop reads.  Once A stops,
 * a spin ends in vain.  Only on a shared ring.
 */
static void test_spin_reads(void)
{
    Node a, b;
    uint64_t ab, bb, l0 = 0, h0 = 0;
    uint32_t ak, bk;
    int i;

    linked_pair(&a, &b, "spin", ",link-spin-us=10000", &ab, &ak, &bb, &bk);
    if (!shm_expected()) {
        g_assert_cmpuint(link_state_u64(&b, "spin-hits"), ==, 0);
        pair_stop(&a, &b);
        return;
    }
    check_shm(&b);
    /* Four, as in test_quiet_loop_reads(): timing mode's clock stands. */
    for (i = 0; i < 4; i++) {
        /* After the first: the main loop gave the ring back, if it had it. */
        if (i == 1) {
            l0 = link_state_u64(&b, "loop-reads");
            h0 = link_state_u64(&b, "spin-hits");
        }
        put_slot(&a, &b, ab, ak, bb, bk, i, 0x31 + i);
    }
    g_assert_cmpuint(link_state_u64(&b, "spin-hits"), >=, h0 + 1);
    g_assert_cmpuint(link_state_u64(&b, "loop-reads"), ==, l0);
    for (i = 0; i < 500 && !link_state_u64(&b, "spin-misses"); i++) {
        g_usleep(10000);
    }
    g_assert_cmpuint(link_state_u64(&b, "spin-misses"), >=, 1);
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/*
 * The spin's guest check (docs/link.md, "Threads and I/O"): for
 * x-link-spin-guest-us after B's guest rang a doorbell (any UAR write, here
 * an SQ doorbell that announces nothing new) or polled CHPP_UAR_DB_STATUS,
 * B's reader does not spin, so A's PUTs reach it by a wake-up, never by a
 * spin; once B's guest has been quiet that long, spins find them again.
 * The check's time is 0.3 s here, far beyond the test's own pace even
 * under a sanitizer, so nothing depends on the host's speed.
 */
static void test_spin_guest_check(void)
{
    Node a, b;
    uint64_t ab, bb, h0;
    uint32_t ak, bk;
    /* Four PUTs in all in timing mode, whose clock stands (spin-reads). */
    int n = chpp_timing_on() ? 1 : 4;
    int i, slot = 0;

    linked_pair(&a, &b, "spin-guest",
                ",link-spin-us=10000,x-link-spin-guest-us=300000",
                &ab, &ak, &bb, &bk);
    if (!shm_expected()) {
        g_assert_cmpuint(link_state_u64(&b, "spin-hits"), ==, 0);
        pair_stop(&a, &b);
        return;
    }
    check_shm(&b);
    /* 1. B's guest rings a doorbell before each PUT: no spin finds one. */
    h0 = link_state_u64(&b, "spin-hits");
    for (i = 0; i < n; i++, slot++) {
        chpp_sq_db(b.d, UAR, b.qp.qpn, b.qp.sq_pi);
        put_slot(&a, &b, ab, ak, bb, bk, slot, 0x51 + slot);
    }
    g_assert_cmpuint(link_state_u64(&b, "spin-hits"), ==, h0);

    /* 2. Quiet for longer than the check's time: spins find them. */
    g_usleep(400 * 1000);
    for (i = 0; i < MAX(n, 2); i++, slot++) {
        put_slot(&a, &b, ab, ak, bb, bk, slot, 0x51 + slot);
    }
    g_assert_cmpuint(link_state_u64(&b, "spin-hits"), >=, h0 + 1);

    /* 3. B's guest polls before each PUT: no spin finds one. */
    h0 = link_state_u64(&b, "spin-hits");
    for (i = 0; i < n; i++, slot++) {
        read_db_status(&b);
        put_slot(&a, &b, ab, ak, bb, bk, slot, 0x51 + slot);
    }
    g_assert_cmpuint(link_state_u64(&b, "spin-hits"), ==, h0);
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/*
 * Doorbell hold (docs/link.md, "Requests wait for the next poll"): B
 * busy-polls and rings a doorbell; its PUT waits for B's next poll, which
 * writes it.  Arming a CQ ends the polling: what is held goes at once.  B
 * stops polling: the reader thread sends it once the polls are
 * x-link-poll-idle-us apart, before link-ack-hold-us.  A,
 * which never polls, holds nothing.  Hold and idle time long as in
 * test_ack_hold().
 */
static void test_doorbell_hold(void)
{
    Node a, b;
    uint64_t ab, bb, t0;
    uint32_t ak, bk;
    int i, step;

    linked_pair(&a, &b, "dbhold",
                ",link-ack-hold-us=1000000,x-link-poll-idle-us=300000",
                &ab, &ak, &bb, &bk);

    for (step = 1; step <= 3; step++) {
        uint8_t pat = 0x70 + step;
        uint64_t off = step * 64;

        for (i = 0; i < 32; i++) {
            read_db_status(&b);
        }
        qtest_memset(b.d->qts, bb + off, pat, 64);
        t0 = g_get_monotonic_time();
        put(&b, &a, bb + off, bk, ab + off, ak, 64, step);
        if (chpp_timing_on()) {
            /* The timing model's clock sends frames: nothing is held. */
            expect2(&b, &a, SCQ, step, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
            g_assert_cmpuint(link_state_u64(&b, "requests-held"), ==, 0);
            continue;
        }
        g_assert_cmpuint(link_state_u64(&b, "requests-held"), ==, step);
        if (step == 1) {
            /* Held: A's memory stays as it was until B polls. */
            g_assert_false(landed_within(&a, ab + off, 64, pat, 100));
            read_db_status(&b);
            g_assert_true(landed_within(&a, ab + off, 64, pat, 20000));
        } else if (step == 2) {
            /*
             * Arming B's send CQ to sleep sends it at once, well before
             * the polls would be x-link-poll-idle-us (300 ms) apart.
             */
            chpp_cq_db(b.d, UAR, SCQ, CHPP_CQ_DB_ARM_NEXT, b.cq[SCQ].ci);
            g_assert_true(landed_within(&a, ab + off, 64, pat, 150));
        } else {
            /*
             * B polls no more: the reader thread sends it once the polls
             * are x-link-poll-idle-us (300 ms) apart.
             */
            g_assert_false(landed_within(&a, ab + off, 64, pat, 150));
            g_assert_true(landed_within(&a, ab + off, 64, pat, 20000));
            g_assert_cmpint(g_get_monotonic_time() - t0, <, 900 * 1000);
        }
        poll_db_status = true;
        expect2(&b, NULL, SCQ, step, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
        poll_db_status = false;
    }
    g_assert_cmpuint(link_state_u64(&a, "requests-held"), ==, 0);
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/*
 * The polling vCPU owns the socket (docs/link.md, "Threads and I/O"):
 * while B busy-polls, B's reader thread stays off the socket and B's polls
 * read A's PUT; arming a CQ gives the socket back to the thread at once;
 * polls that just stop give it back once they are x-link-poll-idle-us
 * (300 ms here) apart, and when frames waited meanwhile, sooner the next
 * time (halved each time; a quarter later after each return to polls going
 * on).  In timing mode polls read nothing: the thread
 * (or, on a quiet link, the main loop) reads it all.
 */
static void test_poll_owns_socket(void)
{
    Node a, b;
    uint64_t ab, bb, r0, p0, l0, t0;
    uint32_t ak, bk;
    int i, round;

    linked_pair(&a, &b, "pollown", ",x-link-poll-idle-us=300000",
                &ab, &ak, &bb, &bk);

    /* 1. B busy-polls: its polls read A's PUT, its thread does not. */
    for (i = 0; i < 32; i++) {
        read_db_status(&b);
    }
    r0 = link_state_u64(&b, "reader-reads");
    p0 = link_state_u64(&b, "poll-reads");
    l0 = link_state_u64(&b, "loop-reads");
    qtest_memset(a.d->qts, ab, 0x81, 64);
    put(&a, &b, ab, ak, bb, bk, 64, 1);
    poll_until_landed(&b, bb, 64, 0x81);
    expect2(&a, NULL, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    if (chpp_timing_on()) {
        /* The thread or, the link being quiet, the main loop. */
        g_assert_cmpuint(link_state_u64(&b, "poll-reads"), ==, 0);
        g_assert_cmpuint(link_state_u64(&b, "reader-reads") +
                         link_state_u64(&b, "loop-reads"), >, r0 + l0);
        pair_stop(&a, &b);
        return;
    }
    g_assert_cmpuint(link_state_u64(&b, "reader-reads"), ==, r0);
    g_assert_cmpuint(link_state_u64(&b, "poll-reads"), >, p0);

    /*
     * 2. A's next PUT waits in B's socket (B stopped polling) until B arms
     * its CQ to sleep: the thread reads it at once, and that is no stall
     * (software said it stopped polling).
     */
    qtest_memset(a.d->qts, ab + 64, 0x82, 64);
    put(&a, &b, ab + 64, ak, bb + 64, bk, 64, 2);
    g_usleep(10 * 1000);
    chpp_cq_db(b.d, UAR, SCQ, CHPP_CQ_DB_ARM_NEXT, b.cq[SCQ].ci);
    g_assert_true(landed_within(&b, bb + 64, 64, 0x82, 150));
    g_assert_cmpuint(link_state_u64(&b, "reader-reads"), >, r0);
    g_assert_cmpuint(link_state_u64(&b, "poll-stalls"), ==, 0);
    expect2(&a, NULL, SCQ, 2, CHPP_CQE_OP_RDMA_WRITE, 0, 64);

    /* 3. B's polls just stop: the thread comes back after the idle time. */
    for (i = 0; i < 32; i++) {
        read_db_status(&b);
    }
    r0 = link_state_u64(&b, "reader-reads");
    t0 = g_get_monotonic_time();
    qtest_memset(a.d->qts, ab + 128, 0x83, 64);
    put(&a, &b, ab + 128, ak, bb + 128, bk, 64, 3);
    g_assert_false(landed_within(&b, bb + 128, 64, 0x83, 100));
    g_assert_true(landed_within(&b, bb + 128, 64, 0x83, 20000));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
    g_assert_cmpuint(link_state_u64(&b, "reader-reads"), >, r0);
    expect2(&a, NULL, SCQ, 3, CHPP_CQE_OP_RDMA_WRITE, 0, 64);

    /*
     * 4. The PUT waited while software no longer polled the device: the
     * thread now stays away half as long; once more, a quarter.
     */
    for (round = 1; round <= 2; round++) {
        g_assert_cmpuint(link_state_u64(&b, "poll-stalls"), ==, round);
        g_assert_cmpuint(link_state_u64(&b, "reader-away-us"), ==,
                         300000 >> round);
        for (i = 0; i < 32; i++) {
            read_db_status(&b);
        }
        qtest_memset(a.d->qts, ab + 128 + 64 * round, 0x83 + round, 64);
        put(&a, &b, ab + 128 + 64 * round, ak, bb + 128 + 64 * round, bk, 64,
            3 + round);
        g_assert_true(landed_within(&b, bb + 128 + 64 * round, 64,
                                    0x83 + round, 20000));
        expect2(&a, NULL, SCQ, 3 + round, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    }
    g_assert_cmpuint(link_state_u64(&b, "poll-stalls"), ==, 3);
    g_assert_cmpuint(link_state_u64(&b, "reader-away-us"), ==, 300000 >> 3);

    /*
     * 5. Software alternates: it polls while the thread comes back (each
     * such return makes the away time a quarter longer), then stops while
     * A's PUT waits (halved).  A round of each brings it down; with
     * doubling instead, the two balanced and it stayed where it was.
     */
    for (round = 1; round <= 2; round++) {
        uint64_t away0 = link_state_u64(&b, "reader-away-us");
        uint64_t early0 = link_state_u64(&b, "reader-early");
        int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        uint64_t early;
        uint32_t off = 128 + 64 * (2 + round);

        do {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            for (i = 0; i < 16; i++) {
                read_db_status(&b);
            }
            early = link_state_u64(&b, "reader-early");
        } while (early == early0);
        /* At most two returns before the polls stop (~40 ms apart). */
        g_assert_cmpuint(early - early0, <=, 2);
        g_assert_cmpuint(link_state_u64(&b, "reader-away-us"), >, away0);
        qtest_memset(a.d->qts, ab + off, 0x90 + round, 64);
        put(&a, &b, ab + off, ak, bb + off, bk, 64, 5 + round);
        g_assert_true(landed_within(&b, bb + off, 64, 0x90 + round, 20000));
        expect2(&a, NULL, SCQ, 5 + round, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
        g_assert_cmpuint(link_state_u64(&b, "poll-stalls"), ==, 3 + round);
        g_assert_cmpuint(link_state_u64(&b, "reader-away-us"), <, away0);
    }
    assert_clean(&a, &b);
    pair_stop(&a, &b);
}

/*
 * @n posts PUTs @first..@first + @count - 1 (wr_id = index, 64 bytes each
 * from its buffer @nb at 64 x index to @peer's @pb) with one doorbell; the
 * one at @bad_at (if below @count) with a wrong rkey.
 */
static void put_burst(Node *n, uint64_t nb, uint32_t nk, uint64_t pb,
                      uint32_t pk, uint32_t first, uint32_t count,
                      uint32_t bad_at)
{
    ChppWqeBuf *w[16];
    uint32_t i;

    g_assert_cmpuint(count, <=, ARRAY_SIZE(w));
    for (i = 0; i < count; i++) {
        uint32_t k = first + i;

        w[i] = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, k, 0);
        chpp_wqe_raddr(w[i], pb + 64 * k, i == bad_at ? pk ^ 0x100 : pk);
        chpp_wqe_sge(w[i], nb + 64 * k, 64, nk);
    }
    chpp_post_sends(n->d, &n->qp, w, count, true);
}

/*
 * ACKs coalesce (docs/work-requests.md, "Acknowledgements"): A posts 8
 * PUTs with one doorbell, written to the socket at once; B's engine takes
 * them in one run and answers with one cumulative ACK, which completes
 * all 8 at A, in order.  Then 4 PUTs and a fifth with a wrong rkey in one
 * run at B: the 4 succeed (the ACK owed for them goes before the NAK) and
 * the fifth fails.  In timing mode every request has its own ACK.
 */
static void test_acks_coalesced(void)
{
    Node a, b;
    uint64_t ab, bb;
    uint32_t ak, bk, rx0, rx, i;

    linked_pair(&a, &b, "ackco", "", &ab, &ak, &bb, &bk);
    chpp_fill(a.d, ab, 64 * 8, 0x91);

    rx0 = chpp_counter(a.d, CHPP_CNT_PKTS_RX);
    put_burst(&a, ab, ak, bb, bk, 0, 8, UINT32_MAX);
    for (i = 0; i < 8; i++) {
        expect2(&a, &b, SCQ, i, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    }
    chpp_check(b.d, bb, 64 * 8, 0x91);
    rx = chpp_counter(a.d, CHPP_CNT_PKTS_RX) - rx0;
    if (chpp_timing_on()) {
        g_assert_cmpuint(rx, ==, 8);
    } else {
        /* One run, one ACK (two if B's reader split the burst). */
        g_assert_cmpuint(rx, >=, 1);
        g_assert_cmpuint(rx, <=, 2);
    }

    put_burst(&a, ab, ak, bb, bk, 8, 5, 4);
    for (i = 8; i < 12; i++) {
        expect2(&a, &b, SCQ, i, CHPP_CQE_OP_RDMA_WRITE, 0, 64);
    }
    expect2(&a, &b, SCQ, 12, CHPP_CQE_OP_RDMA_WRITE, CHPP_WC_REM_ACCESS_ERR,
            0);
    for (i = 0; i < 2; i++) {
        Node *n = i ? &b : &a;

        g_assert_cmpuint(chpp_counter(n->d, CHPP_CNT_RETRANSMITS), ==, 0);
    }
    pair_stop(&a, &b);
}

/*
 * A peer's last words: it sends a HELLO with our own node id and closes at
 * once, again and again.  Every HELLO is still parsed, and refused, though
 * the chardev may see the hang-up before the reader thread's bytes are
 * parsed.
 */
static void test_last_words(void)
{
    g_autofree char *path = sock_path("lastwords");
    g_autofree char *srv = g_strdup_printf("path=%s,server=on,wait=off",
                                           path);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    uint8_t buf[CHPP_WIRE_FRAME_MAX];
    Node n;
    int i;

    node_start(&n, 1, srv);
    pstrcpy(un.sun_path, sizeof(un.sun_path), path);
    for (i = 1; i <= 20; i++) {
        Peer p = { .listen_fd = -1 };

        p.fd = socket(AF_UNIX, SOCK_STREAM, 0);
        g_assert(p.fd >= 0);
        g_assert(connect(p.fd, (void *)&un, sizeof(un)) == 0);
        g_assert_cmpuint(peer_read_rec(&p, buf, sizeof(buf)), ==,
                         CHPP_LINK_HELLO);
        peer_hello(&p, CHPP_LINK_VERSION_MAJOR, 1);
        close(p.fd);
        g_assert_cmpuint(wait_counter(&n, CHPP_CNT_LINK_REFUSED, i), ==, i);
        /* The server takes the next connection once this one is gone. */
        wait_link(&n, NULL, false);
    }
    chpp_stop(n.d);
}

/* Without a chardev another node is unreachable. */
static void test_no_link(void)
{
    ChppDev *d = chpp_start("node-id=1,fault-drop-every=5", NULL);
    QDict *rsp;

    g_assert_cmphex(chpp_rd(d, CHPP_REG_LINK), ==, 0);
    g_assert_false(chpp_rd(d, CHPP_REG_CAPS) & CHPP_CAP_LINK);
    /* Fault settings are the host's: a guest reset keeps them. */
    chpp_wr(d, CHPP_REG_RESET, CHPP_RESET_MAGIC);
    rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': %s, 'property': 'fault-drop-every'}}",
                    DEV_PATH);
    g_assert_cmpuint(qdict_get_int(rsp, "return"), ==, 5);
    qobject_unref(rsp);
    chpp_stop(d);
}

/*
 * The same traffic and hostile frames through QEMU's chardev read path
 * (link-thread=off) instead of the device's reader thread.
 */
static void test_chardev_ops(void)
{
    node_props = ",link-thread=off";
    test_ops_both_directions();
    node_props = "";
}

static void test_chardev_hostile(void)
{
    node_props = ",link-thread=off";
    test_hostile_peer();
    node_props = "";
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("chpp-link-XXXXXX", NULL);
    g_assert(tmpdir);

    qtest_add_func("/chpp-hca/link/up-and-port", test_link_up_and_port);
    qtest_add_func("/chpp-hca/link/ops-both-directions",
                   test_ops_both_directions);
    qtest_add_func("/chpp-hca/link/simultaneous-gets",
                   test_simultaneous_gets);
    qtest_add_func("/chpp-hca/link/faults-recover", test_faults_recover);
    qtest_add_func("/chpp-hca/link/cut-and-reconnect",
                   test_cut_and_reconnect);
    qtest_add_func("/chpp-hca/link/same-node-refused",
                   test_same_node_refused);
    qtest_add_func("/chpp-hca/link/hostile-peer", test_hostile_peer);
    qtest_add_func("/chpp-hca/link/migrate-linked-node",
                   test_migrate_linked_node);
    qtest_add_func("/chpp-hca/link/no-link", test_no_link);
    qtest_add_func("/chpp-hca/link/reader-ring-full", test_reader_ring_full);
    qtest_add_func("/chpp-hca/link/poll-reads", test_poll_reads);
    qtest_add_func("/chpp-hca/link/ack-hold", test_ack_hold);
    qtest_add_func("/chpp-hca/link/doorbell-hold", test_doorbell_hold);
    qtest_add_func("/chpp-hca/link/poll-owns-socket", test_poll_owns_socket);
    qtest_add_func("/chpp-hca/link/quiet-loop-reads", test_quiet_loop_reads);
    qtest_add_func("/chpp-hca/link/spin-reads", test_spin_reads);
    qtest_add_func("/chpp-hca/link/spin-guest-check", test_spin_guest_check);
    qtest_add_func("/chpp-hca/link/acks-coalesced", test_acks_coalesced);
    qtest_add_func("/chpp-hca/link/last-words", test_last_words);
    qtest_add_func("/chpp-hca/link/chardev-path/ops-both-directions",
                   test_chardev_ops);
    qtest_add_func("/chpp-hca/link/chardev-path/hostile-peer",
                   test_chardev_hostile);
    ret = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}
