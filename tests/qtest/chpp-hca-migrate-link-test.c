/*
 * chpp-hca live migration of one node of a linked pair, with SR-IOV and
 * RC work outstanding in both directions.
 *
 * Node 1 (server side of the link socket) and node 2 (client side), each a
 * PF with two VFs.  VF1 of node 1 talks to VF2 of node 2, and the PFs talk
 * to each other.  When one node is migrated:
 *   - a SEND PF1 -> PF2 waits out RNR NAKs (PF2 has no receive yet);
 *   - node 1 holds every frame it sends (fault-delay-ns), so a long PUT
 *     and a NAP VF2 -> VF1 are executed on node 1 but not acknowledged,
 *     14 GETs VF2 <- VF1 are in flight (their responses held) and 6 more
 *     are rung but not started (16 WQEs in flight at most); a GET and a
 *     PUT VF1 -> VF2 never left node 1 (the held frames die with the link);
 *   - a PUT PF2 -> PF1 is written on PF2's SQ but not rung.
 * The destination takes the source's place on the link socket and the
 * handshake brings the link back.  Then every transfer completes exactly
 * once with its bytes checked on both sides (retransmissions allowed; no
 * WQE started twice, no receive consumed twice, no late duplicate writing
 * memory again), every port goes DOWN and comes back ACTIVE with an event
 * each, and new work runs.  Node 2 (client side) or node 1 (server side)
 * is migrated, with the link's reader thread and with the chardev path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "chpp-hca-qtest.h"

#define DEV_PATH    "/machine/peripheral-anon/device[0]"
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)
#define SCQ         0
#define RCQ         1
#define BUF_LEN     (512 * 1024)
/* Local ACK timeout 2^16 * 4.096 us = 268 ms of virtual time. */
#define QP_TIMEOUT  16
#define QP_RETRY    7
/*
 * Virtual time per step while waiting: well below the ACK timeout (54
 * steps), with a real pause after each, so that on a loaded machine the
 * peers' reader threads and main loops run before the virtual timeouts
 * and retries (8 of them) are used up: 20 ms steps with 0.2 ms pauses
 * ended in RETRY_EXC_ERR under CI's load.
 */
#define STEP_NS     (5 * 1000 * 1000)
#define STEP_US     1000
/* Virtual time well past every timeout and retry of the QPs above. */
#define PAST_NS     (2ll * 1000 * 1000 * 1000)
#define HOLD_NS     (100ll * 1000 * 1000 * 1000)

typedef struct Fn {
    ChppNode n;
    uint64_t buf;
    uint32_t key;
} Fn;

typedef struct Pair {
    char *dir;
    char *path;
    const char *props;      /* extra device properties */
    ChppPf *p[2];           /* node 1, node 2 */
    Fn pf[2];               /* the PFs */
    Fn vf[2];               /* VF1 of node 1, VF2 of node 2 */
} Pair;

static char *link_chardev(const char *path, int node)
{
    return g_strdup_printf("-chardev socket,id=lnk,path=%s,%s", path,
                           node ? "reconnect=1" : "server=on,wait=off");
}

static char *dev_props(Pair *t, int node)
{
    return g_strdup_printf("node-id=%d,chardev=lnk%s", node + 1, t->props);
}

static void fn_buf(Fn *f)
{
    f->buf = guest_alloc(&f->n.d->qs->alloc, BUF_LEN);
    qtest_memset(f->n.d->qts, f->buf, 0, BUF_LEN);
    f->key = chpp_create_mr(f->n.d, f->n.next_mr++, CHPP_NODE_PD, f->buf,
                            BUF_LEN, MR_ALL);
}

static void pair_start(Pair *t, const char *props)
{
    int i;

    t->props = props;
    t->dir = g_dir_make_tmp("chpp-mig-link-XXXXXX", NULL);
    t->path = g_strdup_printf("%s/lnk", t->dir);
    for (i = 0; i < 2; i++) {
        g_autofree char *p = dev_props(t, i);
        g_autofree char *extra = link_chardev(t->path, i);

        t->p[i] = chpp_pf_start(p, extra);
        chpp_pf_vfs_set(t->p[i], 2);
        chpp_node_setup(&t->pf[i].n, t->p[i]->d, i + 1, 0);
        chpp_node_setup(&t->vf[i].n, t->p[i]->vf[i + 1], i + 1, i + 1);
    }
    chpp_node_wait_link(&t->pf[0].n, &t->pf[1].n, true);
    for (i = 0; i < 2; i++) {
        chpp_node_qp(&t->pf[i].n, 0, 0x10 + i, 6, 9);
        chpp_node_qp(&t->vf[i].n, 0, 0x20 + i, 6, 9);
        fn_buf(&t->pf[i]);
        fn_buf(&t->vf[i]);
    }
    for (i = 0; i < 2; i++) {
        chpp_node_connect(&t->pf[i].n, &t->pf[!i].n, QP_TIMEOUT, QP_RETRY);
        chpp_node_connect(&t->vf[i].n, &t->vf[!i].n, QP_TIMEOUT, QP_RETRY);
    }
}

static void pair_stop(Pair *t)
{
    chpp_pf_stop(t->p[0]);
    chpp_pf_stop(t->p[1]);
    unlink(t->path);
    rmdir(t->dir);
    g_free(t->path);
    g_free(t->dir);
}

/* Move both virtual clocks, and let the socket run in real time. */
static void step2(Pair *t, int64_t ns)
{
    qtest_clock_step(t->p[0]->d->qts, ns);
    qtest_clock_step(t->p[1]->d->qts, ns);
    g_usleep(STEP_US);
}

static void poll2(Pair *t, Fn *f, uint32_t cqn, struct chpp_cqe *cqe)
{
    int64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    ChppNode *n = &f->n;

    while (!chpp_cqe_valid(n->d, &n->cq[cqn], cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        step2(t, STEP_NS);
    }
    n->cq[cqn].ci++;
    chpp_cq_db(n->d, CHPP_NODE_UAR, cqn, CHPP_CQ_DB_SET_CI, n->cq[cqn].ci);
}

static void expect(Pair *t, Fn *f, uint32_t cqn, uint64_t wr_id,
                   uint8_t opcode, uint32_t len)
{
    struct chpp_cqe cqe;

    poll2(t, f, cqn, &cqe);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, len);
}

static bool cq_empty(Fn *f, uint32_t cqn)
{
    struct chpp_cqe cqe;

    return !chpp_cqe_valid(f->n.d, &f->n.cq[cqn], &cqe);
}

/* One signaled WQE on @f's QP 0, towards offset @roff of @to's buffer. */
static void post(Fn *f, uint8_t op, uint64_t wr_id, uint32_t loff,
                 uint32_t len, const Fn *to, uint32_t roff, bool ring)
{
    ChppWqeBuf *w = chpp_wqe_new(op, CHPP_WQE_SIGNALED, wr_id, 0);

    if (op == CHPP_WQE_PUT || op == CHPP_WQE_GET) {
        chpp_wqe_raddr(w, to->buf + roff, to->key);
    }
    chpp_wqe_sge(w, f->buf + loff, len, f->key);
    chpp_post_send(f->n.d, &f->n.qp, w, ring);
}

static void post_recv(Fn *f, uint64_t wr_id, uint32_t off, uint32_t count)
{
    ChppTSge sge = { f->buf + off, 4096, f->key };

    chpp_post_recvs(f->n.d, &f->n.qp, wr_id, &sge, 1, count);
}

/* Is the link of @d's QEMU read by the device's reader thread? */
static bool reader_thread(ChppDev *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'state'}}", DEV_PATH);
    QDict *link = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "link");
    bool on = qdict_get_bool(link, "reader-thread");

    qobject_unref(rsp);
    return on;
}

static bool zero(Fn *f, uint32_t off, uint32_t len)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_memread(f->n.d->qts, f->buf + off, b, len);
    return buffer_is_zero(b, len);
}

static void qom_set_u64(ChppDev *d, const char *prop, uint64_t v)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': %s, 'property': %s, 'value': %"
                           PRIu64 "}}", DEV_PATH, prop, v);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/*
 * The PORT_CHANGE events @f's EQ received since the last call, as a
 * string of 'D' (DOWN) and 'A' (ACTIVE); other events are not expected.
 */
static char *port_events(Fn *f)
{
    GString *s = g_string_new("");
    ChppNode *n = &f->n;
    struct chpp_eqe eqe;

    for (;;) {
        chpp_read_eqe(n->d, n->eq, n->eq_ci % 256, &eqe);
        /* First pass over the ring: valid entries have the owner bit. */
        if (!(le32_to_cpu(eqe.owner) & CHPP_EQE_OWNER)) {
            break;
        }
        g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_PORT_CHANGE);
        g_assert_cmpuint(le32_to_cpu(eqe.event.port.port), ==, 1);
        g_string_append_c(s, eqe.subtype == CHPP_PORT_ACTIVE ? 'A' :
                          eqe.subtype == CHPP_PORT_DOWN ? 'D' : '?');
        n->eq_ci++;
        g_assert_cmpuint(n->eq_ci, <, 256);
    }
    chpp_eq_db(n->d, 0, n->eq_ci, false);
    return g_string_free(s, false);
}

static uint8_t port_state(Fn *f)
{
    struct chpp_port_info pi;

    g_assert_cmphex(chpp_cmd(f->n.d, CHPP_CMD_QUERY_PORT, 0, 1,
                             f->n.d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(f->n.d->qts, f->n.d->mbox_out, &pi, sizeof(pi));
    return pi.state;
}

static void assert_linked(Fn *f, uint16_t peer)
{
    g_assert_cmphex(chpp_rd(f->n.d, CHPP_REG_LINK), ==,
                    CHPP_LINK_UP | CHPP_LINK_ATTACHED |
                    (uint32_t)peer << CHPP_LINK_PEER_SHIFT);
    g_assert_cmpuint(port_state(f), ==, CHPP_PORT_ACTIVE);
}

/* Offsets in the buffers, and the lengths of the transfers. */
#define PUT_LONG    300000      /* VF2 -> VF1, 74 frames */
#define O_LONG      0
#define O_SEND      (320 * 1024)
#define O_RECV      (352 * 1024)    /* both receives of a pair land here */
#define O_GET       (384 * 1024)
#define O_PUT       (448 * 1024)
#define O_READS     (416 * 1024)
#define NREADS      20          /* GETs VF2 <- VF1 */
/* WQEs of a QP in flight at most (docs/work-requests.md). */
#define INFLIGHT    16
#define CHUNK       64

#define NFN         4
#define CNT(f, c)   chpp_counter((f)->n.d, (c))

/* @mig: the node migrated, 0 (node 1, server side) or 1 (node 2). */
static void test_migrate_with_work(const char *props, int mig)
{
    Pair t;
    Fn *all[NFN];
    uint32_t wqes[NFN], ups[2], downs[2], held;
    g_autofree char *uri = NULL;
    g_autofree char *extra = NULL;
    g_autofree char *dprops = NULL;
    g_autofree char *dpath = NULL;
    char *ev;
    ChppDev *dst;
    int64_t end;
    int i;

    pair_start(&t, props);
    all[0] = &t.pf[0];
    all[1] = &t.vf[0];
    all[2] = &t.pf[1];
    all[3] = &t.vf[1];

    /* Completed traffic first: PUT VF1 -> VF2 and PF2 -> PF1. */
    chpp_fill(t.vf[0].n.d, t.vf[0].buf + O_PUT, 40000, 1);
    post(&t.vf[0], CHPP_WQE_PUT, 0x11, O_PUT, 40000, &t.vf[1], O_PUT, true);
    expect(&t, &t.vf[0], SCQ, 0x11, CHPP_CQE_OP_RDMA_WRITE, 40000);
    chpp_check(t.vf[1].n.d, t.vf[1].buf + O_PUT, 40000, 1);
    chpp_fill(t.pf[1].n.d, t.pf[1].buf + O_PUT, 20000, 2);
    post(&t.pf[1], CHPP_WQE_PUT, 0x12, O_PUT, 20000, &t.pf[0], O_PUT, true);
    expect(&t, &t.pf[1], SCQ, 0x12, CHPP_CQE_OP_RDMA_WRITE, 20000);
    chpp_check(t.pf[0].n.d, t.pf[0].buf + O_PUT, 20000, 2);
    for (i = 0; i < NFN; i++) {
        g_autofree char *old = port_events(all[i]);

        g_assert_cmpstr(old, ==, "A");
    }

    /* 1. SEND PF1 -> PF2 waiting out RNR NAKs: PF2 has no receive. */
    chpp_fill(t.pf[0].n.d, t.pf[0].buf + O_SEND, 4096, 3);
    post(&t.pf[0], CHPP_WQE_SEND, 0x21, O_SEND, 4096, NULL, 0, true);
    end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (!CNT(&t.pf[0], CHPP_CNT_RNR_NAKS) &&
           g_get_monotonic_time() < end) {
        step2(&t, 10000);
    }
    g_assert_cmpuint(CNT(&t.pf[0], CHPP_CNT_RNR_NAKS), >=, 1);

    /* 2. Node 1 holds what it sends from now on (ACKs, requests). */
    qom_set_u64(t.p[0]->d, "fault-delay-ns", HOLD_NS);
    /* A long PUT VF2 -> VF1, then a NAP (one packet) behind it: a receive. */
    chpp_fill(t.vf[1].n.d, t.vf[1].buf + O_LONG, PUT_LONG, 4);
    chpp_fill(t.vf[1].n.d, t.vf[1].buf + O_SEND, 2048, 5);
    post_recv(&t.vf[0], 0x31, O_RECV, 2);
    post(&t.vf[1], CHPP_WQE_PUT, 0x41, O_LONG, PUT_LONG, &t.vf[0], O_LONG,
         true);
    post(&t.vf[1], CHPP_WQE_NAP, 0x42, O_SEND, 2048, NULL, 0, true);
    /* And GETs: 14 start (16 WQEs in flight at most), 6 rung wait. */
    chpp_fill(t.vf[0].n.d, t.vf[0].buf + O_READS, NREADS * CHUNK, 13);
    for (i = 0; i < NREADS; i++) {
        post(&t.vf[1], CHPP_WQE_GET, 0x100 + i, O_READS + i * CHUNK, CHUNK,
             &t.vf[0], O_READS + i * CHUNK, true);
    }
    /* A GET and a PUT VF1 -> VF2: held on node 1, they never leave. */
    chpp_fill(t.vf[1].n.d, t.vf[1].buf + O_GET, 30000, 6);
    chpp_fill(t.vf[0].n.d, t.vf[0].buf + O_PUT, 50000, 7);
    post(&t.vf[0], CHPP_WQE_GET, 0x51, O_GET, 30000, &t.vf[1], O_GET, true);
    post(&t.vf[0], CHPP_WQE_PUT, 0x52, O_PUT, 50000, &t.vf[1], O_PUT, true);
    /* 3. A PUT PF2 -> PF1 written, not rung. */
    chpp_fill(t.pf[1].n.d, t.pf[1].buf + O_PUT, 8192, 8);
    post(&t.pf[1], CHPP_WQE_PUT, 0x61, O_PUT, 8192, &t.pf[0], O_PUT, false);

    /*
     * Node 1 executed part of the long PUT, and its ACKs are held.  Node 2
     * sent its frames before node 1 parsed them: wait for both counts.
     */
    end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while ((CNT(&t.vf[1], CHPP_CNT_WQES) < INFLIGHT ||
            CNT(&t.vf[0], CHPP_CNT_PKTS_RX) < 10) &&
           g_get_monotonic_time() < end) {
        /*
         * Timing mode (CHPP_QTEST_PROPS): node 2 takes a doorbell only as
         * fast as the prototype's descriptor fetch, in virtual time.
         */
        if (chpp_timing_on()) {
            qtest_clock_step(t.p[1]->d->qts, 1000);
        }
        g_usleep(1000);
    }
    g_assert_cmpuint(CNT(&t.vf[0], CHPP_CNT_PKTS_RX), >=, 10);
    held = CNT(&t.pf[0], CHPP_CNT_FAULT_DELAYS);
    g_assert_cmpuint(held, >=, 2);
    /*
     * Nothing completed on the senders.  VF1 may already have received
     * the NAP (node 2 does not wait for ACKs to send it); its
     * retransmission must then not take VF1's second receive.
     */
    for (i = 0; i < NFN; i++) {
        g_assert_true(cq_empty(all[i], SCQ));
        g_assert_true(all[i] == &t.vf[0] || cq_empty(all[i], RCQ));
        wqes[i] = CNT(all[i], CHPP_CNT_WQES);
    }
    for (i = 0; i < 2; i++) {
        ups[i] = CNT(&t.pf[i], CHPP_CNT_LINK_UPS);
        downs[i] = CNT(&t.pf[i], CHPP_CNT_LINK_DOWNS);
    }
    g_test_message("before: VF1 rx %u pkts, recv done %d; node 1 held %u",
                   CNT(&t.vf[0], CHPP_CNT_PKTS_RX),
                   !cq_empty(&t.vf[0], RCQ), held);
    /* Started: PF1's SEND, VF1's GET and PUT, VF2's PUT, NAP, 14 GETs. */
    g_assert_cmpuint(wqes[0], ==, 1);
    g_assert_cmpuint(wqes[1], ==, 3);
    g_assert_cmpuint(wqes[2], ==, 1);
    g_assert_cmpuint(wqes[3], ==, INFLIGHT);

    /*
     * Migrate to a QEMU with the same chardev.  A client destination
     * connects at once and waits in the server's backlog until the source
     * goes.  A server destination listens on a path of its own, moved to
     * the link's path once the source has quit (a listening QEMU removes
     * its path when it exits); the peer's client reconnects to it.
     */
    uri = g_strdup_printf("unix:%s/mig", t.dir);
    dpath = g_strdup_printf("%s/lnk-dst", t.dir);
    extra = link_chardev(mig ? t.path : dpath, mig);
    dprops = dev_props(&t, mig);
    dst = chpp_start_incoming_extra(dprops, extra, uri);
    migrate(t.p[mig]->d->qs, dst->qs, uri);
    /* Node 1 stops holding frames; the held ones die with the link. */
    qom_set_u64(t.p[0]->d, "fault-delay-ns", 0);
    t.p[mig] = chpp_pf_adopt_migrated(dst, t.p[mig]);   /* source quits */
    t.pf[mig].n.d = t.p[mig]->d;
    t.vf[mig].n.d = t.p[mig]->vf[mig + 1];
    if (!mig) {
        g_assert_cmpint(rename(dpath, t.path), ==, 0);
    }

    /* The link comes back with the destination (no clock moved). */
    chpp_node_wait_link(&t.pf[0].n, &t.pf[1].n, true);
    assert_linked(&t.pf[0], 2);
    assert_linked(&t.vf[0], 2);
    assert_linked(&t.pf[1], 1);
    assert_linked(&t.vf[1], 1);
    /* The peer saw the link go down and up; the destination only up. */
    g_assert_cmpuint(CNT(&t.pf[!mig], CHPP_CNT_LINK_DOWNS), ==,
                     downs[!mig] + 1);
    g_assert_cmpuint(CNT(&t.pf[!mig], CHPP_CNT_LINK_UPS), ==, ups[!mig] + 1);
    g_assert_cmpuint(CNT(&t.pf[mig], CHPP_CNT_LINK_DOWNS), ==, downs[mig]);
    g_assert_cmpuint(CNT(&t.pf[mig], CHPP_CNT_LINK_UPS), ==, ups[mig] + 1);
    for (i = 0; i < 2; i++) {
        g_assert_cmpint(reader_thread(t.p[i]->d), ==, !*props);
    }
    /* Each port went DOWN and came back ACTIVE, with an event each. */
    for (i = 0; i < NFN; i++) {
        ev = port_events(all[i]);
        g_assert_cmpstr(ev, ==, "DA");
        g_free(ev);
    }

    /* PF2 posts two receives: PF1's SEND lands in the first only. */
    post_recv(&t.pf[1], 0x71, O_RECV, 2);
    expect(&t, &t.pf[0], SCQ, 0x21, CHPP_CQE_OP_SEND, 4096);
    expect(&t, &t.pf[1], RCQ, 0x71, CHPP_CQE_OP_RECV, 4096);
    chpp_check(t.pf[1].n.d, t.pf[1].buf + O_RECV, 4096, 3);
    /* The long PUT and the NAP behind it, VF2 -> VF1. */
    expect(&t, &t.vf[1], SCQ, 0x41, CHPP_CQE_OP_RDMA_WRITE, PUT_LONG);
    expect(&t, &t.vf[1], SCQ, 0x42, CHPP_CQE_OP_SEND, 2048);
    expect(&t, &t.vf[0], RCQ, 0x31, CHPP_CQE_OP_RECV, 2048);
    for (i = 0; i < NREADS; i++) {
        expect(&t, &t.vf[1], SCQ, 0x100 + i, CHPP_CQE_OP_RDMA_READ, CHUNK);
    }
    chpp_check(t.vf[1].n.d, t.vf[1].buf + O_READS, NREADS * CHUNK, 13);
    chpp_check(t.vf[0].n.d, t.vf[0].buf + O_LONG, PUT_LONG, 4);
    chpp_check(t.vf[0].n.d, t.vf[0].buf + O_RECV, 2048, 5);
    /* The GET and the PUT VF1 -> VF2 that node 1 had held. */
    expect(&t, &t.vf[0], SCQ, 0x51, CHPP_CQE_OP_RDMA_READ, 30000);
    expect(&t, &t.vf[0], SCQ, 0x52, CHPP_CQE_OP_RDMA_WRITE, 50000);
    chpp_check(t.vf[0].n.d, t.vf[0].buf + O_GET, 30000, 6);
    chpp_check(t.vf[1].n.d, t.vf[1].buf + O_PUT, 50000, 7);
    /* PF2's PUT written before the migration, rung after it. */
    chpp_sq_db(t.pf[1].n.d, CHPP_NODE_UAR, 0, t.pf[1].n.qp.sq_pi);
    expect(&t, &t.pf[1], SCQ, 0x61, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_check(t.pf[0].n.d, t.pf[0].buf + O_PUT, 8192, 8);

    /*
     * Exactly once: wipe what the transfers wrote, let both clocks run
     * well past every timeout, and nothing writes it again or completes.
     */
    qtest_memset(t.vf[0].n.d->qts, t.vf[0].buf + O_LONG, 0, PUT_LONG);
    qtest_memset(t.vf[1].n.d->qts, t.vf[1].buf + O_PUT, 0, 50000);
    qtest_memset(t.pf[0].n.d->qts, t.pf[0].buf + O_PUT, 0, 8192);
    for (i = 0; i < PAST_NS / STEP_NS; i++) {
        step2(&t, STEP_NS);
    }
    g_assert_true(zero(&t.vf[0], O_LONG, PUT_LONG));
    g_assert_true(zero(&t.vf[1], O_PUT, 50000));
    g_assert_true(zero(&t.pf[0], O_PUT, 8192));
    for (i = 0; i < NFN; i++) {
        g_assert_true(cq_empty(all[i], SCQ));
        g_assert_true(cq_empty(all[i], RCQ));
        g_assert_cmpuint(CNT(all[i], CHPP_CNT_CQES_DROPPED), ==, 0);
    }
    /* Every WQE started once: after the migration only the unstarted. */
    g_assert_cmpuint(CNT(&t.pf[0], CHPP_CNT_WQES), ==, wqes[0]);
    g_assert_cmpuint(CNT(&t.vf[0], CHPP_CNT_WQES), ==, wqes[1]);
    g_assert_cmpuint(CNT(&t.pf[1], CHPP_CNT_WQES), ==, wqes[2] + 1);
    g_assert_cmpuint(CNT(&t.vf[1], CHPP_CNT_WQES), ==, 2 + NREADS);
    /* One CQE per completion since the start, whenever it was written. */
    g_assert_cmpuint(CNT(&t.pf[0], CHPP_CNT_CQES), ==, 1);
    g_assert_cmpuint(CNT(&t.vf[0], CHPP_CNT_CQES), ==, 4);
    g_assert_cmpuint(CNT(&t.pf[1], CHPP_CNT_CQES), ==, 3);
    g_assert_cmpuint(CNT(&t.vf[1], CHPP_CNT_CQES), ==, 2 + NREADS);
    /* Lost frames were sent again: the held requests and ACKs. */
    g_assert_cmpuint(CNT(&t.vf[0], CHPP_CNT_RETRANSMITS), >=, 1);
    g_assert_cmpuint(CNT(&t.vf[1], CHPP_CNT_RETRANSMITS), >=, 1);

    g_test_message("retransmits: PF1 %u VF1 %u PF2 %u VF2 %u; link-down "
                   "drops: node 1 %u node 2 %u",
                   CNT(&t.pf[0], CHPP_CNT_RETRANSMITS),
                   CNT(&t.vf[0], CHPP_CNT_RETRANSMITS),
                   CNT(&t.pf[1], CHPP_CNT_RETRANSMITS),
                   CNT(&t.vf[1], CHPP_CNT_RETRANSMITS),
                   CNT(&t.pf[0], CHPP_CNT_LINK_DOWN_DROPS),
                   CNT(&t.pf[1], CHPP_CNT_LINK_DOWN_DROPS));
    /* New work, both ways, on both QP pairs. */
    for (i = 0; i < 2; i++) {
        /* @r has a receive left (the second of its two); @s is its peer. */
        Fn *r = i ? &t.vf[0] : &t.pf[1], *s = i ? &t.vf[1] : &t.pf[0];

        chpp_fill(r->n.d, r->buf + O_GET, 12000, 9 + i);
        post(r, CHPP_WQE_PUT, 0x81 + i, O_GET, 12000, s, O_GET, true);
        expect(&t, r, SCQ, 0x81 + i, CHPP_CQE_OP_RDMA_WRITE, 12000);
        chpp_check(s->n.d, s->buf + O_GET, 12000, 9 + i);
        chpp_fill(s->n.d, s->buf + O_SEND, 3000, 11 + i);
        post(s, CHPP_WQE_SEND, 0x91 + i, O_SEND, 3000, NULL, 0, true);
        expect(&t, s, SCQ, 0x91 + i, CHPP_CQE_OP_SEND, 3000);
        expect(&t, r, RCQ, i ? 0x32 : 0x72, CHPP_CQE_OP_RECV, 3000);
        chpp_check(r->n.d, r->buf + O_RECV, 3000, 11 + i);
    }
    for (i = 0; i < NFN; i++) {
        g_assert_cmpuint(CNT(all[i], CHPP_CNT_PKTS_MALFORMED), ==, 0);
    }
    pair_stop(&t);
}

static void test_client_thread(void)
{
    test_migrate_with_work("", 1);
}

static void test_client_chardev(void)
{
    test_migrate_with_work(",link-thread=off", 1);
}

static void test_server_thread(void)
{
    test_migrate_with_work("", 0);
}

static void test_server_chardev(void)
{
    test_migrate_with_work(",link-thread=off", 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    qtest_add_func("/chpp-hca/migrate-link/client-side",
                   test_client_thread);
    qtest_add_func("/chpp-hca/migrate-link/server-side",
                   test_server_thread);
    qtest_add_func("/chpp-hca/migrate-link/chardev-path/client-side",
                   test_client_chardev);
    qtest_add_func("/chpp-hca/migrate-link/chardev-path/server-side",
                   test_server_chardev);
    return g_test_run();
}
