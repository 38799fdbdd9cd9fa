/*
 * chpp-hca SR-IOV across a link: two QEMUs, each a PF with VFs, joined by
 * a unix socket chardev.  A VF of node 1 and a VF of node 2 exchange PUT,
 * GET and NAP with every byte checked, and a packet for a VF the remote
 * node has not enabled is dropped there and counted.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-qtest.h"

#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)
#define SCQ         0
#define RCQ         1

typedef struct Pair {
    char *dir;
    ChppPf *p[2];           /* node 1, node 2 */
    ChppNode pf[2];
} Pair;

/* Node 2's PF gets the properties @props2 (NULL: none) too. */
static void pair_start_props(Pair *t, int nvfs, const char *props2)
{
    g_autofree char *path = NULL;
    int i;

    t->dir = g_dir_make_tmp("chpp-sriov-link-XXXXXX", NULL);
    path = g_strdup_printf("%s/lnk", t->dir);
    for (i = 0; i < 2; i++) {
        g_autofree char *props = g_strdup_printf(
            "node-id=%d,chardev=lnk%s%s", i + 1, i && props2 ? "," : "",
            i && props2 ? props2 : "");
        g_autofree char *extra = g_strdup_printf(
            "-chardev socket,id=lnk,path=%s,%s", path,
            i ? "reconnect=1" : "server=on,wait=off");

        t->p[i] = chpp_pf_start(props, extra);
        chpp_pf_vfs_set(t->p[i], nvfs);
        /* The PF owns the link: its port is what the link needs. */
        chpp_node_setup(&t->pf[i], t->p[i]->d, i + 1, 0);
    }
    chpp_node_wait_link(&t->pf[0], &t->pf[1], true);
}

static void pair_start(Pair *t, int nvfs)
{
    pair_start_props(t, nvfs, NULL);
}

static void pair_stop(Pair *t)
{
    chpp_pf_stop(t->p[0]);
    chpp_pf_stop(t->p[1]);
    rmdir(t->dir);
    g_free(t->dir);
}

/*
 * Wait for a CQE on @n, moving both QEMUs' clocks: either side's timers
 * may be what moves things, and the socket runs in real time.
 */
static void poll2(Pair *t, ChppNode *n, uint32_t cqn, struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (!chpp_cqe_valid(n->d, &n->cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->p[0]->d->qts, 200000);
        qtest_clock_step(t->p[1]->d->qts, 200000);
        g_usleep(200);
    }
    n->cq[cqn].ci++;
    chpp_cq_db(n->d, CHPP_NODE_UAR, cqn, CHPP_CQ_DB_SET_CI, n->cq[cqn].ci);
}

static void expect(Pair *t, ChppNode *n, uint32_t cqn, uint64_t wr_id,
                   uint8_t opcode, uint8_t status, uint32_t len)
{
    struct chpp_cqe cqe;

    poll2(t, n, cqn, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    if (!status) {
        g_assert_cmpuint(cqe.opcode, ==, opcode);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
    }
}

static uint64_t buf_mr(ChppNode *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = chpp_create_mr(n->d, n->next_mr++, CHPP_NODE_PD, addr, len,
                          MR_ALL);
    return addr;
}

static void post(ChppNode *n, uint8_t op, uint8_t flags, uint64_t wr_id,
                 uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
                 uint32_t rkey)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED | flags, wr_id, 0);

    if (op == CHPP_WQE_PUT || op == CHPP_WQE_GET) {
        chpp_wqe_raddr(w, raddr, rkey);
    }
    chpp_wqe_sge(w, laddr, len, lkey);
    chpp_post_send(n->d, &n->qp, w, true);
}

/* VF1 of node 1 and VF2 of node 2: PUT both ways, GET, NAP. */
static void test_vf_to_remote_vf(void)
{
    Pair t;
    ChppNode a, b;
    uint64_t ab, bb;
    uint32_t ak, bk;
    ChppTSge sge;
    int i;

    pair_start(&t, 2);
    chpp_node_setup(&a, t.p[0]->vf[1], 1, 1);
    chpp_node_setup(&b, t.p[1]->vf[2], 2, 2);
    chpp_node_qp(&a, 0, 0x51, 6, 9);
    chpp_node_qp(&b, 0, 0x62, 6, 9);
    chpp_node_connect(&a, &b, 14, 7);
    chpp_node_connect(&b, &a, 14, 7);
    ab = buf_mr(&a, 131072, &ak);
    bb = buf_mr(&b, 131072, &bk);

    /* PUT node 1 VF1 -> node 2 VF2, more than one packet. */
    chpp_fill(a.d, ab, 40000, 11);
    post(&a, CHPP_WQE_PUT, 0, 1, ab, 40000, ak, bb, bk);
    expect(&t, &a, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 0, 40000);
    chpp_check(b.d, bb, 40000, 11);
    /* And back. */
    chpp_fill(b.d, bb + 65536, 20000, 12);
    post(&b, CHPP_WQE_PUT, 0, 2, bb + 65536, 20000, bk, ab + 65536, ak);
    expect(&t, &b, SCQ, 2, CHPP_CQE_OP_RDMA_WRITE, 0, 20000);
    chpp_check(a.d, ab + 65536, 20000, 12);
    /* GET: node 1's VF reads node 2's VF memory. */
    chpp_fill(b.d, bb + 98304, 30000, 13);
    post(&a, CHPP_WQE_GET, 0, 3, ab + 98304, 30000, ak, bb + 98304, bk);
    expect(&t, &a, SCQ, 3, CHPP_CQE_OP_RDMA_READ, 0, 30000);
    chpp_check(a.d, ab + 98304, 30000, 13);
    /* NAP (indirect, 2 KiB) into a posted receive, both ways. */
    for (i = 0; i < 2; i++) {
        ChppNode *from = i ? &b : &a, *to = i ? &a : &b;
        uint64_t fb = i ? bb : ab, tb = i ? ab : bb;
        uint32_t fk = i ? bk : ak, tk = i ? ak : bk;

        sge = (ChppTSge) { tb + 49152, 4096, tk };
        chpp_post_recvs(to->d, &to->qp, 10 + i, &sge, 1, 1);
        chpp_fill(from->d, fb + 45056, 2048, 14 + i);
        post(from, CHPP_WQE_NAP, 0, 20 + i, fb + 45056, 2048, fk, 0, 0);
        expect(&t, from, SCQ, 20 + i, CHPP_CQE_OP_SEND, 0, 2048);
        expect(&t, to, RCQ, 10 + i, CHPP_CQE_OP_RECV, 0, 2048);
        chpp_check(to->d, tb + 49152, 2048, 14 + i);
    }
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(chpp_counter(t.p[i]->d, CHPP_CNT_PKTS_DROPPED), ==,
                         0);
        g_assert_cmpuint(chpp_counter(t.p[i]->d, CHPP_CNT_RETRANSMITS), ==,
                         0);
    }
    /* The traffic was the VFs': the PFs sent nothing of their own. */
    g_assert_cmpuint(chpp_counter(t.p[0]->d, CHPP_CNT_WQES), ==, 0);
    g_assert_cmpuint(chpp_counter(a.d, CHPP_CNT_WQES), ==, 3);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_WQES), ==, 2);
    pair_stop(&t);
}

/* Node 2 has VF1 only: a SEND to its VF3 is dropped there and counted. */
static void test_remote_vf_disabled(void)
{
    Pair t;
    ChppNode a, ghost = { .id = 2, .func = 3, .qp = { .qpn = 0 } };
    uint32_t dropped, ak;
    uint64_t ab;

    pair_start(&t, 1);
    chpp_node_setup(&a, t.p[0]->vf[1], 1, 1);
    chpp_node_qp(&a, 0, 0x51, 6, 9);
    chpp_node_connect(&a, &ghost, 10, 1);
    ab = buf_mr(&a, 4096, &ak);
    dropped = chpp_counter(t.p[1]->d, CHPP_CNT_PKTS_DROPPED);

    post(&a, CHPP_WQE_NAP, 0, 1, ab, 64, ak, 0, 0);
    expect(&t, &a, SCQ, 1, 0, CHPP_WC_RETRY_EXC_ERR, 0);
    /* The first send and its one retry, both dropped by node 2. */
    g_assert_cmpuint(chpp_counter(t.p[1]->d, CHPP_CNT_PKTS_DROPPED) - dropped,
                     ==, 2);
    g_assert_cmpuint(chpp_counter(t.p[1]->vf[1], CHPP_CNT_PKTS_RX), ==, 0);
    pair_stop(&t);
}

/*
 * Frames a VF received but had not processed when the link went down are
 * dropped and counted in that VF, like the PF's: nothing of the old
 * connection is processed afterwards.  Node 2's engine runs only when its
 * clock is stepped, so the frames wait in its VF's queue.
 */
static void test_link_down_drops_vf_frames(void)
{
    Pair t;
    ChppNode a, b;
    uint64_t ab, bb;
    uint32_t ak, bk, pf_dropped;
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    struct chpp_cqe cqe;
    ChppTSge sge;
    QDict *rsp;
    int i;

    pair_start_props(&t, 1, "id=hca,engine-delay-ns=1000000");
    chpp_node_setup(&a, t.p[0]->vf[1], 1, 1);
    chpp_node_setup(&b, t.p[1]->vf[1], 2, 1);
    chpp_node_qp(&a, 0, 0x51, 6, 9);
    chpp_node_qp(&b, 0, 0x62, 6, 9);
    chpp_node_connect(&a, &b, 20, 7);
    chpp_node_connect(&b, &a, 20, 7);
    ab = buf_mr(&a, 4096, &ak);
    bb = buf_mr(&b, 4096, &bk);
    sge = (ChppTSge) { bb, 4096, bk };
    chpp_post_recvs(b.d, &b.qp, 10, &sge, 1, 3);
    for (i = 0; i < 3; i++) {
        post(&a, CHPP_WQE_NAP, 0, 20 + i, ab, 64, ak, 0, 0);
    }
    /* Node 2 decoded them into VF1's queue; its engine has not run. */
    while (chpp_counter(b.d, CHPP_CNT_PKTS_RX) < 3) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_PKTS_RX), ==, 3);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    pf_dropped = chpp_counter(t.p[1]->d, CHPP_CNT_PKTS_DROPPED);

    rsp = qtest_qmp(t.p[1]->d->qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': '/machine/peripheral/hca', "
                    "'property': 'fault-cut', 'value': true}}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_PKTS_DROPPED), ==, 3);
    g_assert_cmpuint(chpp_counter(t.p[1]->d, CHPP_CNT_PKTS_DROPPED), ==,
                     pf_dropped);

    /* Node 2's engine runs: none of them reaches VF1's receive queue. */
    for (i = 0; i < 50; i++) {
        qtest_clock_step(t.p[1]->d->qts, 1000000);
    }
    g_assert_false(chpp_cqe_valid(b.d, &b.cq[RCQ], &cqe));
    g_assert_cmpuint(chpp_counter(b.d, CHPP_CNT_CQES), ==, 0);
    pair_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    qtest_add_func("/chpp-hca/sriov-link/vf-to-remote-vf",
                   test_vf_to_remote_vf);
    qtest_add_func("/chpp-hca/sriov-link/remote-vf-disabled",
                   test_remote_vf_disabled);
    qtest_add_func("/chpp-hca/sriov-link/link-down-drops-vf-frames",
                   test_link_down_drops_vf_frames);
    return g_test_run();
}
