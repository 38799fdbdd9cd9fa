/*
 * chpp-hca fabric tests (docs/fabric.md): three or more QEMUs whose devices
 * share one Ethernet segment, a QEMU "-netdev socket,mcast=" group on the
 * loopback interface.  RC traffic between every pair, a node that quits
 * (only its QPs fail) and restarts (new QPs work), loss on the wire, and
 * this program as a hostile node on the segment.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "qapi/qmp/qdict.h"
#include "qapi/qmp/qlist.h"
#include "chpp-hca-qtest.h"
#include "hw/chpp/chpp-wire.h"

#define DEV_PATH "/machine/peripheral-anon/device[0]"

#define UAR     CHPP_NODE_UAR
#define PD      CHPP_NODE_PD
#define SCQ     0
#define RCQ     1
#define MR_ALL  (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                 CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC)

#define NODES   4               /* node ids 1..NODES at most */
#define BUF     (256 * 1024)

/* A node and its QP towards each other node (QP number = peer's id). */
typedef struct Fab {
    ChppNode n;
    ChppTQp q[NODES + 1];
    uint64_t buf;
    uint32_t key;
} Fab;

static char mcast[64];          /* group:port of the running test */

/* A group and port of our own: other programs may use multicast too. */
static void new_segment(void)
{
    snprintf(mcast, sizeof(mcast), "239.255.%u.%u:%u",
             (unsigned)(getpid() >> 8) & 0xff, (unsigned)getpid() & 0xff,
             20000 + g_random_int_range(0, 40000));
}

static const char *fab_props = "";

static void fab_start(Fab *f, uint16_t id)
{
    g_autofree char *props = g_strdup_printf(
        "node-id=%u,netdev=fab,link-hello-ms=100,link-peer-timeout-ms=1000%s",
        id, fab_props);
    g_autofree char *extra = g_strdup_printf(
        "-netdev socket,id=fab,mcast=%s,localaddr=127.0.0.1", mcast);

    memset(f, 0, sizeof(*f));
    chpp_node_setup(&f->n, chpp_start(props, extra), id, 0);
    f->buf = guest_alloc(&f->n.d->qs->alloc, 2 * BUF);
    qtest_memset(f->n.d->qts, f->buf, 0, 2 * BUF);
    f->key = chpp_create_mr(f->n.d, f->n.next_mr++, PD, f->buf, 2 * BUF,
                            MR_ALL);
}

static QDict *link_state(Fab *f)
{
    QDict *rsp = qtest_qmp(f->n.d->qts, "{'execute': 'qom-get', "
                           "'arguments': {'path': %s, 'property': "
                           "'state'}}", DEV_PATH);
    QDict *link = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "link");

    qobject_ref(link);
    qobject_unref(rsp);
    return link;
}

/* A per-peer figure of @f's view of node @node; -1 if it has no state. */
static int64_t peer_u64(Fab *f, uint16_t node, const char *key)
{
    QDict *link = link_state(f);
    QListEntry *e;
    int64_t v = -1;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(link, "peers"), e) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(p, "node") == node) {
            v = !strcmp(key, "up") ? qdict_get_bool(p, "up") :
                qdict_get_int(p, key);
        }
    }
    qobject_unref(link);
    return v;
}

static uint64_t link_u64(Fab *f, const char *key)
{
    QDict *link = link_state(f);
    uint64_t v = qdict_get_int(link, key);

    qobject_unref(link);
    return v;
}

static uint64_t vc_u64(Fab *f, unsigned vc, const char *key)
{
    QDict *link = link_state(f);
    QListEntry *e;
    uint64_t v = UINT64_MAX;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(link, "vcs"), e) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(p, "vc") == vc) {
            v = qdict_get_int(p, key);
        }
    }
    qobject_unref(link);
    return v;
}

/* Wait (real time, bounded) until @f sees node @node up (or not). */
static void wait_peer(Fab *f, uint16_t node, bool up)
{
    int64_t end = g_get_monotonic_time() + 15 * G_USEC_PER_SEC;

    while ((peer_u64(f, node, "up") == 1) != up) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
}

static void wait_all(Fab *f, unsigned n)
{
    unsigned i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++) {
            if (i != j) {
                wait_peer(&f[i], f[j].n.id, true);
            }
        }
    }
}

/* The node's QP towards node @to becomes its current one. */
static void use_qp(Fab *f, uint16_t to)
{
    f->n.qp = f->q[to];
}

static void keep_qp(Fab *f, uint16_t to)
{
    f->q[to] = f->n.qp;
}

/* RC QPs between @a and @b, each numbered by the other's node id. */
static void fab_connect(Fab *a, Fab *b, uint8_t timeout, uint8_t retry)
{
    uint16_t x = a->n.id, y = b->n.id;

    chpp_node_qp(&a->n, y, 0x10 + y, 6, 9);
    chpp_node_qp(&b->n, x, 0x20 + x, 6, 9);
    keep_qp(a, y);
    keep_qp(b, x);
    use_qp(a, y);
    use_qp(b, x);
    chpp_node_connect(&a->n, &b->n, timeout, retry);
    chpp_node_connect(&b->n, &a->n, timeout, retry);
}

/* @f's QP towards node @to back to RESET, to be connected again. */
static void fab_reset_qp(Fab *f, uint16_t to)
{
    struct chpp_qp_context zero = {};

    g_assert_cmphex(chpp_modify_qp(f->n.d, CHPP_CMD_2RST_QP, to, 0, &zero),
                    ==, CHPP_STAT_OK);
}

/* Wait for a CQE on @f, stepping every node's virtual clock. */
static void poll_all(Fab *f, Fab *all, unsigned n, uint32_t cqn,
                     struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    unsigned i;

    while (!chpp_cqe_valid(f->n.d, &f->n.cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        for (i = 0; i < n; i++) {
            if (all[i].n.d) {
                qtest_clock_step(all[i].n.d->qts, 100000);
            }
        }
        g_usleep(200);
    }
    f->n.cq[cqn].ci++;
    chpp_cq_db(f->n.d, UAR, cqn, CHPP_CQ_DB_SET_CI, f->n.cq[cqn].ci);
}

static void expect_all(Fab *f, Fab *all, unsigned n, uint64_t wr_id,
                       uint8_t opcode, uint8_t status, uint32_t len)
{
    struct chpp_cqe cqe;

    poll_all(f, all, n, SCQ, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    if (!status) {
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    }
}

/*
 * @x PUTs @len bytes of pattern @pat into @y's buffer (at @y's slot for
 * @x), then GETs them back into the second half of its own: bytes checked.
 */
static void put_get(Fab *x, Fab *y, Fab *all, unsigned n, uint32_t len,
                    uint8_t pat)
{
    uint64_t slot = (uint64_t)x->n.id * (BUF / (NODES + 1));
    ChppWqeBuf *w;

    g_assert_cmpuint(len, <=, BUF / (NODES + 1));
    use_qp(x, y->n.id);
    chpp_fill(x->n.d, x->buf, len, pat);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, y->buf + slot, y->key);
    chpp_wqe_sge(w, x->buf, len, x->key);
    chpp_post_send(x->n.d, &x->n.qp, w, true);
    expect_all(x, all, n, 1, CHPP_CQE_OP_RDMA_WRITE, 0, len);
    chpp_check(y->n.d, y->buf + slot, len, pat);
    w = chpp_wqe_new(CHPP_WQE_GET, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_raddr(w, y->buf + slot, y->key);
    chpp_wqe_sge(w, x->buf + BUF, len, x->key);
    chpp_post_send(x->n.d, &x->n.qp, w, true);
    expect_all(x, all, n, 2, CHPP_CQE_OP_RDMA_READ, 0, len);
    chpp_check(x->n.d, x->buf + BUF, len, pat);
    keep_qp(x, y->n.id);
}

/* A SEND (NAP) from @x to @y, received with @x as its source. */
static void nap(Fab *x, Fab *y, Fab *all, unsigned n, uint32_t len,
                uint8_t pat)
{
    ChppTSge rs = { y->buf + BUF, len, y->key };
    struct chpp_cqe cqe;
    ChppWqeBuf *w;

    use_qp(y, x->n.id);
    chpp_post_recv_sges(y->n.d, &y->n.qp, 3, &rs, 1);
    keep_qp(y, x->n.id);
    use_qp(x, y->n.id);
    chpp_fill(x->n.d, x->buf, len, pat);
    w = chpp_wqe_new(CHPP_WQE_SEND, CHPP_WQE_SIGNALED, 4, 0);
    chpp_wqe_sge(w, x->buf, len, x->key);
    chpp_post_send(x->n.d, &x->n.qp, w, true);
    keep_qp(x, y->n.id);
    expect_all(x, all, n, 4, CHPP_CQE_OP_SEND, 0, len);
    poll_all(y, all, n, RCQ, &cqe);
    g_assert_cmpuint(cqe.status, ==, 0);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, x->n.id);
    chpp_check(y->n.d, y->buf + BUF, len, pat);
}

static void fab_stop(Fab *f, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (f[i].n.d) {
            chpp_stop(f[i].n.d);
            f[i].n.d = NULL;
        }
    }
}

/* ---- tests -------------------------------------------------------------- */

/* Three nodes meet; PUT, GET and SEND between every pair, both ways. */
static void test_three_nodes(void)
{
    Fab f[3];
    unsigned i, j;

    new_segment();
    for (i = 0; i < 3; i++) {
        fab_start(&f[i], i + 1);
    }
    wait_all(f, 3);
    /* CHPP_REG_LINK: up, the lowest peer that is up. */
    g_assert_cmphex(chpp_rd(f[0].n.d, CHPP_REG_LINK), ==,
                    CHPP_LINK_UP | CHPP_LINK_ATTACHED |
                    2 << CHPP_LINK_PEER_SHIFT);
    g_assert_cmphex(chpp_rd(f[2].n.d, CHPP_REG_LINK) >> CHPP_LINK_PEER_SHIFT,
                    ==, 1);
    for (i = 0; i < 3; i++) {
        for (j = i + 1; j < 3; j++) {
            fab_connect(&f[i], &f[j], 14, 7);
        }
    }
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 3; j++) {
            if (i != j) {
                put_get(&f[i], &f[j], f, 3, 40000, 16 * i + j);
                nap(&f[i], &f[j], f, 3, 3000, 0x80 + 16 * i + j);
            }
        }
    }
    for (i = 0; i < 3; i++) {
        g_assert_cmpuint(chpp_counter(f[i].n.d, CHPP_CNT_LINK_CREDIT_ERRORS),
                         ==, 0);
        g_assert_cmpuint(chpp_counter(f[i].n.d, CHPP_CNT_LINK_SPOOFED), ==,
                         0);
        g_assert_cmpuint(chpp_counter(f[i].n.d, CHPP_CNT_LINK_BAD_RECORDS),
                         ==, 0);
        /* The PF's frames went to both peers. */
        for (j = 0; j < 3; j++) {
            if (i != j) {
                g_assert_cmpint(peer_u64(&f[i], j + 1, "tx-frames"), >, 0);
                g_assert_cmpint(peer_u64(&f[i], j + 1, "rx-frames"), >, 0);
            }
        }
        g_assert_cmpuint(link_u64(&f[i], "eth-rx"), >, 0);
    }
    fab_stop(f, 3);
}

/*
 * Node 3 quits: only the QPs towards it fail (RETRY_EXC_ERR), 1 and 2 keep
 * working.  A new QEMU with node id 3 joins (a new epoch): the others drop
 * what they held of the old one, and new QPs work.
 */
static void test_peer_restart(void)
{
    Fab f[3];
    unsigned i;

    new_segment();
    for (i = 0; i < 3; i++) {
        fab_start(&f[i], i + 1);
    }
    wait_all(f, 3);
    fab_connect(&f[0], &f[1], 12, 3);
    fab_connect(&f[0], &f[2], 12, 3);
    fab_connect(&f[1], &f[2], 12, 3);
    put_get(&f[0], &f[2], f, 3, 8192, 1);
    put_get(&f[1], &f[2], f, 3, 8192, 2);
    g_assert_cmpuint(peer_u64(&f[0], 3, "epoch"), >, 0);

    chpp_stop(f[2].n.d);
    f[2].n.d = NULL;
    /* Work for the gone node fails after its retries... */
    use_qp(&f[0], 3);
    {
        ChppWqeBuf *w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 9, 0);

        chpp_wqe_raddr(w, 0x1000, 0x100);
        chpp_wqe_sge(w, f[0].buf, 64, f[0].key);
        chpp_post_send(f[0].n.d, &f[0].n.qp, w, true);
    }
    keep_qp(&f[0], 3);
    expect_all(&f[0], f, 3, 9, CHPP_CQE_OP_RDMA_WRITE,
               CHPP_WC_RETRY_EXC_ERR, 0);
    /* ... while 1 and 2 keep talking, before and after 3 is lost. */
    put_get(&f[0], &f[1], f, 3, 20000, 3);
    wait_peer(&f[0], 3, false);
    wait_peer(&f[1], 3, false);
    g_assert(chpp_rd(f[0].n.d, CHPP_REG_LINK) & CHPP_LINK_UP);
    put_get(&f[1], &f[0], f, 3, 20000, 4);

    /* Node 3 again: new epoch, new QPs. */
    fab_start(&f[2], 3);
    wait_all(f, 3);
    fab_reset_qp(&f[0], 3);
    fab_reset_qp(&f[1], 3);
    fab_connect(&f[0], &f[2], 12, 3);
    fab_connect(&f[1], &f[2], 12, 3);
    put_get(&f[0], &f[2], f, 3, 30000, 5);
    put_get(&f[2], &f[1], f, 3, 30000, 6);
    put_get(&f[1], &f[0], f, 3, 30000, 7);
    fab_stop(f, 3);
}

/*
 * Loss on the wire (fault-drop-percent on Ethernet: frames leave with
 * their credit and sequence number, and vanish): RC recovers every byte,
 * the receiver counts the gaps, and the credits stay whole.
 */
static void test_loss(void)
{
    Fab f[3];
    unsigned i, r;
    QDict *rsp;

    new_segment();
    for (i = 0; i < 3; i++) {
        fab_start(&f[i], i + 1);
    }
    wait_all(f, 3);
    fab_connect(&f[0], &f[1], 10, 7);
    fab_connect(&f[0], &f[2], 10, 7);
    rsp = qtest_qmp(f[0].n.d->qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': %s, 'property': 'fault-drop-percent', "
                    "'value': 10}}", DEV_PATH);
    qobject_unref(rsp);
    for (r = 0; r < 4; r++) {
        put_get(&f[0], &f[1], f, 3, 50000, r);
        put_get(&f[0], &f[2], f, 3, 50000, 0x40 + r);
    }
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_FAULT_DROPS), >, 0);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_RETRANSMITS), >, 0);
    g_assert_cmpint(peer_u64(&f[1], 1, "lost") + peer_u64(&f[2], 1, "lost"),
                    >, 0);
    rsp = qtest_qmp(f[0].n.d->qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': %s, 'property': 'fault-drop-percent', "
                    "'value': 0}}", DEV_PATH);
    qobject_unref(rsp);
    /* The grant is whole again once everything was consumed. */
    put_get(&f[0], &f[1], f, 3, 50000, 9);
    for (i = 1; i < 3; i++) {
        g_assert_cmpuint(chpp_counter(f[i].n.d, CHPP_CNT_LINK_CREDIT_ERRORS),
                         ==, 0);
    }
    fab_stop(f, 3);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/fabric/three-nodes", test_three_nodes);
    qtest_add_func("/chpp-hca/fabric/peer-restart", test_peer_restart);
    qtest_add_func("/chpp-hca/fabric/loss", test_loss);
    return g_test_run();
}
