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

/* The segment's backend: "-netdev socket,mcast=", or "-netdev dgram". */
static bool use_dgram;

static char *fab_netdev(void)
{
    g_autofree char *host = g_strdup(mcast);
    char *colon = strchr(host, ':');

    if (!use_dgram) {
        return g_strdup_printf("-netdev socket,id=fab,mcast=%s,"
                               "localaddr=127.0.0.1", mcast);
    }
    *colon = 0;
    return g_strdup_printf("-netdev dgram,id=fab,remote.type=inet,"
                           "remote.host=%s,remote.port=%s,local.type=inet,"
                           "local.host=127.0.0.1,local.port=0", host,
                           colon + 1);
}

/*
 * Node @id on the segment, a HELLO every @hello_ms, peers lost after
 * @lost_ms, with device properties @more ("" or ",...").
 */
static void fab_start_timed(Fab *f, uint16_t id, unsigned hello_ms,
                            unsigned lost_ms, const char *more)
{
    g_autofree char *props = g_strdup_printf(
        "node-id=%u,netdev=fab,link-hello-ms=%u,link-peer-timeout-ms=%u%s",
        id, hello_ms, lost_ms, more);
    g_autofree char *extra = fab_netdev();

    memset(f, 0, sizeof(*f));
    chpp_node_setup(&f->n, chpp_start(props, extra), id, 0);
    f->buf = guest_alloc(&f->n.d->qs->alloc, 2 * BUF);
    qtest_memset(f->n.d->qts, f->buf, 0, 2 * BUF);
    f->key = chpp_create_mr(f->n.d, f->n.next_mr++, PD, f->buf, 2 * BUF,
                            MR_ALL);
}

static void fab_start_props(Fab *f, uint16_t id, const char *more)
{
    fab_start_timed(f, id, 100, 1000, more);
}

static void fab_start(Fab *f, uint16_t id)
{
    fab_start_props(f, id, "");
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

/* The same over QEMU 7.2's "-netdev dgram" with a multicast remote. */
static void test_three_nodes_dgram(void)
{
    use_dgram = true;
    test_three_nodes();
    use_dgram = false;
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

/* ---- a hostile node on the segment: this program ---------------------- */

typedef struct Rogue {
    int tx, rx;                 /* sockets on the group */
    struct sockaddr_in group;
    uint16_t node;
    uint32_t epoch;
    uint32_t credits;           /* what its HELLOs grant */
} Rogue;

static void rogue_open(Rogue *r, uint16_t node)
{
    g_autofree char *host = g_strdup(mcast);
    char *colon = strchr(host, ':');
    struct ip_mreq mreq = {};
    struct in_addr lo = { .s_addr = htonl(INADDR_LOOPBACK) };
    int one = 1;

    *colon = 0;
    r->node = node;
    r->epoch = 0x5eed0000 | node;
    r->credits = 8;
    r->group.sin_family = AF_INET;
    r->group.sin_port = htons(atoi(colon + 1));
    g_assert(inet_aton(host, &r->group.sin_addr));
    r->tx = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert(r->tx >= 0);
    g_assert(!setsockopt(r->tx, IPPROTO_IP, IP_MULTICAST_IF, &lo,
                         sizeof(lo)));
    r->rx = socket(AF_INET, SOCK_DGRAM, 0);
    g_assert(r->rx >= 0);
    g_assert(!setsockopt(r->rx, SOL_SOCKET, SO_REUSEADDR, &one,
                         sizeof(one)));
    {
        struct sockaddr_in any = r->group;

        g_assert(!bind(r->rx, (struct sockaddr *)&any, sizeof(any)));
    }
    mreq.imr_multiaddr = r->group.sin_addr;
    mreq.imr_interface = lo;
    g_assert(!setsockopt(r->rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
                         sizeof(mreq)));
}

static void rogue_close(Rogue *r)
{
    close(r->tx);
    close(r->rx);
}

/* One Ethernet frame onto the segment, as it is. */
static void rogue_raw(Rogue *r, const void *buf, size_t len)
{
    g_assert_cmpint(sendto(r->tx, buf, len, 0, (struct sockaddr *)&r->group,
                           sizeof(r->group)), ==, len);
}

/*
 * A record from MAC node @src_node (function @src_fn) to node @dst
 * (function @dst_fn; broadcast if @dst is 0xffff), with a record header
 * claiming @len body bytes, and @blen bytes of @body.
 */
static void rogue_rec(Rogue *r, uint16_t src_node, uint8_t src_fn,
                      uint16_t dst, uint8_t dst_fn, uint32_t magic,
                      uint8_t type, uint8_t vc, uint16_t seq, uint32_t len,
                      const void *body, size_t blen)
{
    g_autofree uint8_t *f = g_malloc0(CHPP_ETH_HDR_SIZE + 12 + blen + 64);
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(magic), .type = type, .vc = vc,
        .seq = cpu_to_le16(seq), .len = cpu_to_le32(len),
    };
    size_t n = CHPP_ETH_HDR_SIZE + sizeof(rec) + blen;

    if (dst == 0xffff) {
        memset(f, 0xff, 6);
    } else {
        chpp_eth_mac(f, dst, dst_fn);
    }
    chpp_eth_mac(f + 6, src_node, src_fn);
    stw_be_p(f + 12, CHPP_ETH_TYPE);
    memcpy(f + CHPP_ETH_HDR_SIZE, &rec, sizeof(rec));
    memcpy(f + CHPP_ETH_HDR_SIZE + sizeof(rec), body, blen);
    rogue_raw(r, f, MAX(n, 60));
}

static void rogue_hello(Rogue *r, uint16_t mac_node, uint16_t node,
                        uint16_t major, uint32_t epoch, uint8_t flags,
                        uint16_t to, uint32_t peer_epoch)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(major),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR),
        .node_id = cpu_to_le16(node),
        .data_vcs = 1,
        .flags = flags,
        .credits = { cpu_to_le32(r->credits), cpu_to_le32(r->credits) },
        .epoch = cpu_to_le32(epoch),
        .peer_epoch = cpu_to_le32(peer_epoch),
    };

    rogue_rec(r, mac_node, 0, to, 0, CHPP_LINK_MAGIC, CHPP_LINK_HELLO, 0, 0,
              sizeof(h), &h, sizeof(h));
}

/* A FRAME body: figure 6 header and extension, @src to @dst, no payload. */
static void rogue_frame(Rogue *r, uint16_t mac_node, uint16_t src,
                        uint16_t dst, uint16_t seq, size_t len)
{
    uint8_t b[CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext)] = {};
    struct chpp_wire_ext e = {
        .version = CHPP_WIRE_EXT_VERSION, .op = CHPP_OP_SEND,
        .src_node = cpu_to_le16(src), .dst_node = cpu_to_le16(dst),
        .dst_qpn = cpu_to_le32(77),
    };

    memcpy(b + CHPP_WIRE_HDR_SIZE, &e, sizeof(e));
    rogue_rec(r, mac_node, 0, dst, 0, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0,
              seq, MIN(len, sizeof(b)), b, MIN(len, sizeof(b)));
}

/* The device's epoch, from its broadcast HELLO (bounded wait). */
static uint32_t rogue_learn_epoch(Rogue *r, uint16_t node)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint8_t buf[9000];

    for (;;) {
        ssize_t n = recv(r->rx, buf, sizeof(buf), MSG_DONTWAIT);
        struct chpp_link_hello h;

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (n < 0) {
            g_usleep(1000);
            continue;
        }
        if (n >= CHPP_ETH_HDR_SIZE + 12 + (ssize_t)sizeof(h) &&
            lduw_be_p(buf + 12) == CHPP_ETH_TYPE &&
            buf[CHPP_ETH_HDR_SIZE + 4] == CHPP_LINK_HELLO) {
            memcpy(&h, buf + CHPP_ETH_HDR_SIZE + 12, sizeof(h));
            if (le16_to_cpu(h.node_id) == node) {
                return le32_to_cpu(h.epoch);
            }
        }
    }
}

/* Wait (bounded) until @get(@f, @what) reaches @want. */
static void wait_counter(Fab *f, enum chpp_counter c, uint32_t want)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (chpp_counter(f->n.d, c) < want) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
    g_assert_cmpuint(chpp_counter(f->n.d, c), ==, want);
}

static void wait_link_u64(Fab *f, const char *key, uint64_t want)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (link_u64(f, key) < want) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
}

/* Wait (bounded) until @f's figure @key of node @node reaches @want. */
static void wait_peer_u64(Fab *f, uint16_t node, const char *key,
                          int64_t want)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (peer_u64(f, node, key) < want) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
}

/*
 * Everything a node on the segment can send wrong: each is dropped and
 * counted, none crashes the device, and the real nodes keep working.
 */
static void test_hostile(void)
{
    Fab f[2];
    Rogue r;
    uint32_t epoch, bad, spoof, refused, cerr;
    uint8_t junk[64] = {};
    uint64_t v;

    new_segment();
    fab_start(&f[0], 1);
    fab_start(&f[1], 2);
    wait_all(f, 2);
    fab_connect(&f[0], &f[1], 12, 7);
    rogue_open(&r, 9);
    epoch = rogue_learn_epoch(&r, 1);

    /* Other traffic on the segment: ignored silently. */
    v = link_u64(&f[0], "eth-other-type");
    junk[12] = 0x08;                            /* IPv4 */
    memset(junk, 0xff, 6);
    rogue_raw(&r, junk, sizeof(junk));
    wait_link_u64(&f[0], "eth-other-type", v + 1);
    v = link_u64(&f[0], "eth-other-dst");
    rogue_rec(&r, 9, 0, 7, 0, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, 0, 4,
              junk, 4);
    wait_link_u64(&f[0], "eth-other-dst", v + 1);

    /* Join as node 9: our NEW with its epoch makes us a peer at once. */
    rogue_hello(&r, 9, 9, CHPP_LINK_VERSION_MAJOR, r.epoch,
                CHPP_LINK_HELLO_F_NEW, 1, epoch);
    wait_peer(&f[0], 9, true);

    /* Malformed records: counted, dropped, nothing cut. */
    bad = chpp_counter(f[0].n.d, CHPP_CNT_LINK_BAD_RECORDS);
    rogue_rec(&r, 9, 0, 1, 0, 0xdeadbeef, CHPP_LINK_FRAME, 0, 0, 4, junk, 4);
    rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, 99, 0, 0, 4, junk, 4);
    rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_CREDIT, 7, 0, 8,
              junk, 8);
    /* Truncated: the record claims more than the frame holds. */
    rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, 1, 3000,
              junk, 40);
    /* Oversized: more than the largest frame. */
    rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0, 1,
              CHPP_WIRE_FRAME_MAX + 1, junk, 40);
    /* A frame shorter than a record header, and a non-node source MAC. */
    {
        uint8_t tiny[20] = {};

        chpp_eth_mac(tiny, 1, 0);
        chpp_eth_mac(tiny + 6, 9, 0);
        stw_be_p(tiny + 12, CHPP_ETH_TYPE);
        rogue_raw(&r, tiny, sizeof(tiny));
        tiny[6] = 0x00;
        rogue_raw(&r, tiny, sizeof(tiny));
    }
    /* A REFUSE from a node never met. */
    rogue_rec(&r, 11, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_REFUSE, 0, 0, 4,
              junk, 4);
    wait_counter(&f[0], CHPP_CNT_LINK_BAD_RECORDS, bad + 8);

    /* Spoofing: a HELLO naming another node, a frame claiming node 2. */
    spoof = chpp_counter(f[0].n.d, CHPP_CNT_LINK_SPOOFED);
    rogue_hello(&r, 9, 5, CHPP_LINK_VERSION_MAJOR, r.epoch, 0, 0xffff, 0);
    rogue_frame(&r, 9, 2, 1, 0, 200);
    wait_counter(&f[0], CHPP_CNT_LINK_SPOOFED, spoof + 2);

    /* Sequence games: a repeat is late, a leap beyond the grant refused. */
    rogue_frame(&r, 9, 9, 1, 1, 8);             /* short: malformed */
    rogue_frame(&r, 9, 9, 1, 1, 8);             /* seq 1 again: late */
    wait_peer(&f[0], 9, true);
    wait_peer_u64(&f[0], 9, "late", 1);
    cerr = chpp_counter(f[0].n.d, CHPP_CNT_LINK_CREDIT_ERRORS);
    rogue_frame(&r, 9, 9, 1, 30000, 8);
    wait_counter(&f[0], CHPP_CNT_LINK_CREDIT_ERRORS, cerr + 1);
    /* A FRAME from a node that is not up. */
    rogue_frame(&r, 12, 12, 1, 0, 8);

    /* Refusals: another major version, our own node id. */
    refused = chpp_counter(f[0].n.d, CHPP_CNT_LINK_REFUSED);
    rogue_hello(&r, 13, 13, CHPP_LINK_VERSION_MAJOR + 1, 1, 0, 0xffff, 0);
    rogue_hello(&r, 1, 1, CHPP_LINK_VERSION_MAJOR, epoch + 1, 0, 0xffff, 0);
    wait_counter(&f[0], CHPP_CNT_LINK_REFUSED, refused + 2);

    /* Node 9 goes silent: lost after the timeout; 1 and 2 still work. */
    wait_peer(&f[0], 9, false);
    put_get(&f[0], &f[1], f, 2, 30000, 0x33);
    put_get(&f[1], &f[0], f, 2, 30000, 0x34);
    rogue_close(&r);
    fab_stop(f, 2);
}

/* Nodes in @f's peer table. */
static unsigned peer_count(Fab *f)
{
    QDict *link = link_state(f);
    unsigned n = qlist_size(qdict_get_qlist(link, "peers"));

    qobject_unref(link);
    return n;
}

/*
 * Made-up nodes (docs/fabric.md, "A hostile node").  HELLOs of nodes that
 * do not know node 1's epoch take no slot of its peer table: a real node
 * joins after a flood of them.  HELLOs of other epochs for node 2, while
 * node 2 speaks, drop nothing of it: its QP keeps working.  A node that
 * completes handshakes for made-up ids fills the table: counted, and the
 * peers up stay.
 */
static void test_hostile_nodes(void)
{
    Fab f[3];
    Rogue r;
    uint32_t epoch, epoch2, spoof;
    uint64_t unmet, conflicts, full;
    unsigned i, j, flood = 2 * CHPP_LINK_PEERS_MAX;

    new_segment();
    /* A HELLO every 500 ms: node 2's epoch is live for 1.5 s after each. */
    fab_start_timed(&f[0], 1, 500, 5000, "");
    fab_start_timed(&f[1], 2, 500, 5000, "");
    wait_all(f, 2);
    fab_connect(&f[0], &f[1], 14, 7);
    put_get(&f[0], &f[1], f, 2, 30000, 1);
    rogue_open(&r, 9);
    epoch = rogue_learn_epoch(&r, 1);
    epoch2 = peer_u64(&f[0], 2, "epoch");

    /* Made-up nodes: HELLOs broadcast, and NEWs with a wrong epoch. */
    unmet = link_u64(&f[0], "hello-unmet");
    for (i = 0; i < flood; i += 8) {
        for (j = i; j < i + 8; j++) {
            rogue_hello(&r, 100 + j, 100 + j, CHPP_LINK_VERSION_MAJOR,
                        0x1000 + j, 0, 0xffff, 0);
            rogue_hello(&r, 100 + j, 100 + j, CHPP_LINK_VERSION_MAJOR,
                        0x1000 + j, CHPP_LINK_HELLO_F_NEW, 1, epoch ^ 1);
        }
        wait_link_u64(&f[0], "hello-unmet", unmet + 2 * (i + 8));
    }
    g_assert_cmpuint(peer_count(&f[0]), ==, 1);

    /* Node 2's MAC and id with other epochs: broadcast, and NEW to 1. */
    conflicts = link_u64(&f[0], "hello-epoch-conflicts");
    spoof = chpp_counter(f[0].n.d, CHPP_CNT_LINK_SPOOFED);
    for (i = 0; i < 16; i++) {
        rogue_hello(&r, 2, 2, CHPP_LINK_VERSION_MAJOR, 0x2000 + i, 0,
                    0xffff, 0);
        rogue_hello(&r, 2, 2, CHPP_LINK_VERSION_MAJOR, 0x2000 + i,
                    CHPP_LINK_HELLO_F_NEW, 1, epoch);
    }
    wait_link_u64(&f[0], "hello-epoch-conflicts", conflicts + 32);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_SPOOFED), ==,
                     spoof + 32);

    /* A real node joins; node 2 and its QP are as they were. */
    fab_start_timed(&f[2], 3, 500, 5000, "");
    wait_all(f, 3);
    g_assert_cmpint(peer_u64(&f[0], 2, "epoch"), ==, epoch2);
    g_assert_cmpuint(peer_count(&f[0]), ==, 2);
    put_get(&f[0], &f[1], f, 3, 30000, 2);
    put_get(&f[1], &f[0], f, 3, 30000, 3);
    fab_connect(&f[0], &f[2], 14, 7);
    put_get(&f[0], &f[2], f, 3, 30000, 4);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_DOWNS), ==, 0);

    /* Made-up nodes that answer with node 1's epoch: the table fills. */
    full = link_u64(&f[0], "hello-table-full");
    for (i = 0; i < CHPP_LINK_PEERS_MAX; i += 8) {
        for (j = i; j < i + 8; j++) {
            rogue_hello(&r, 200 + j, 200 + j, CHPP_LINK_VERSION_MAJOR,
                        0x3000 + j, CHPP_LINK_HELLO_F_NEW, 1, epoch);
        }
        wait_link_u64(&f[0], "hello-table-full",
                      full + MAX(2 + i + 8, CHPP_LINK_PEERS_MAX) -
                      CHPP_LINK_PEERS_MAX);
    }
    {
        int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        while (peer_count(&f[0]) < CHPP_LINK_PEERS_MAX) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(2000);
        }
    }
    g_assert_cmpuint(link_u64(&f[0], "hello-table-full"), ==, full + 2);
    put_get(&f[0], &f[1], f, 3, 30000, 5);
    put_get(&f[0], &f[2], f, 3, 30000, 6);
    rogue_close(&r);
    fab_stop(f, 3);
}

/*
 * The meeting's NEW sent twice (both sides answer each other's broadcasts,
 * so a second NEW can come before the answer to the first arrives): the
 * state it made is fresh, so the repeat is only acknowledged, and the pair
 * stays up.  Once a frame has been exchanged, the same NEW says the node
 * dropped what it had of us: the pair starts afresh (a link down).
 */
static void test_repeated_new(void)
{
    Fab f[1];
    Rogue r;
    uint32_t epoch, downs;
    uint64_t unmet;

    new_segment();
    fab_start(&f[0], 1);
    rogue_open(&r, 9);
    epoch = rogue_learn_epoch(&r, 1);
    rogue_hello(&r, 9, 9, CHPP_LINK_VERSION_MAJOR, r.epoch,
                CHPP_LINK_HELLO_F_NEW, 1, epoch);
    wait_peer(&f[0], 9, true);
    downs = chpp_counter(f[0].n.d, CHPP_CNT_LINK_DOWNS);

    /* The same NEW again, then a made-up node's HELLO to know it was read. */
    unmet = link_u64(&f[0], "hello-unmet");
    rogue_hello(&r, 9, 9, CHPP_LINK_VERSION_MAJOR, r.epoch,
                CHPP_LINK_HELLO_F_NEW, 1, epoch);
    rogue_hello(&r, 50, 50, CHPP_LINK_VERSION_MAJOR, 0x50, 0, 0xffff, 0);
    wait_link_u64(&f[0], "hello-unmet", unmet + 1);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_DOWNS), ==, downs);
    g_assert_cmpint(peer_u64(&f[0], 9, "up"), ==, 1);

    /* One frame received on the pair: now the NEW drops it and remakes it. */
    rogue_frame(&r, 9, 9, 1, 0, 8);
    wait_peer_u64(&f[0], 9, "rx-frames", 1);
    rogue_hello(&r, 9, 9, CHPP_LINK_VERSION_MAJOR, r.epoch,
                CHPP_LINK_HELLO_F_NEW, 1, epoch);
    wait_counter(&f[0], CHPP_CNT_LINK_DOWNS, downs + 1);
    wait_peer(&f[0], 9, true);
    g_assert_cmpint(peer_u64(&f[0], 9, "rx-frames"), ==, 0);
    rogue_close(&r);
    fab_stop(f, 1);
}

/*
 * A node sending beyond the credits it was granted (docs/fabric.md,
 * "Memory bounds").  It grants none itself and repeats an RC WRITE that
 * asks for an ACK: the answers wait for its credits, and at
 * CHPP_LINK_BACKLOG_MAX waiting the device stops taking frames, which
 * then wait within its grant; what the node sends beyond the grant is
 * dropped and counted.  Then its credits: everything drains, and the real
 * nodes carry on.
 */
static void test_hostile_credits(void)
{
    Fab f[2];
    Rogue r;
    ChppNode rogue = { .id = 9, .qp = { .qpn = 33 } };
    ChppFrm w = {
        .op = CHPP_OP_WRITE, .magic = 0x39, .src_node = 9, .dst_node = 1,
        .src_qpn = 33, .dst_qpn = 3, .psn = 0x500 - 1,  /* a duplicate */
        .flags = CHPP_WIRE_F_FIRST | CHPP_WIRE_F_LAST | CHPP_WIRE_F_ACK_REQ,
    };
    g_autoptr(GByteArray) ba = chpp_frm_build(&w);
    struct chpp_link_credit c = { cpu_to_le32(4096), cpu_to_le32(4096) };
    uint32_t epoch, sent = 0, i;
    uint32_t total = CHPP_LINK_BACKLOG_MAX + 4 * CHPP_LINK_ETH_CREDITS;
    int64_t end;

    new_segment();
    fab_start(&f[0], 1);
    fab_start(&f[1], 2);
    wait_all(f, 2);
    fab_connect(&f[0], &f[1], 14, 7);
    rogue_open(&r, 9);
    r.credits = 0;
    epoch = rogue_learn_epoch(&r, 1);
    rogue_hello(&r, 9, 9, CHPP_LINK_VERSION_MAJOR, r.epoch,
                CHPP_LINK_HELLO_F_NEW, 1, epoch);
    wait_peer(&f[0], 9, true);
    chpp_node_qp(&f[0].n, 3, 0x39, 6, 9);
    chpp_node_connect(&f[0].n, &rogue, 14, 7);

    while (sent < total) {
        end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        for (i = 0; i < 64; i++, sent++) {
            rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_FRAME, 0,
                      sent, ba->len, ba->data, ba->len);
        }
        /* Taken, or dropped beyond the grant. */
        while (chpp_counter(f[0].n.d, CHPP_CNT_LINK_RX_FRAMES) +
               chpp_counter(f[0].n.d, CHPP_CNT_LINK_CREDIT_ERRORS) < sent ||
               (link_u64(&f[0], "rx-queued-vc0") &&
                link_u64(&f[0], "backlog-vc0") < CHPP_LINK_BACKLOG_MAX)) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(1000);
        }
    }
    g_assert_cmpuint(link_u64(&f[0], "backlog-vc0"), <=,
                     CHPP_LINK_BACKLOG_MAX);
    g_assert_cmpuint(link_u64(&f[0], "rx-queued-vc0"), ==,
                     CHPP_LINK_ETH_CREDITS);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_RX_PAUSES), ==, 1);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_CREDIT_ERRORS), ==,
                     sent - chpp_counter(f[0].n.d, CHPP_CNT_LINK_RX_FRAMES));
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_CREDIT_ERRORS), >,
                     0);
    g_assert_cmpint(peer_u64(&f[0], 9, "up"), ==, 1);

    /* Credits at last: the answers leave, the frames held are answered. */
    rogue_rec(&r, 9, 0, 1, 0, CHPP_LINK_MAGIC, CHPP_LINK_CREDIT, 0, 0,
              sizeof(c), &c, sizeof(c));
    end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (link_u64(&f[0], "backlog-vc0") ||
           link_u64(&f[0], "rx-queued-vc0")) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(2000);
    }
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_LINK_RX_PAUSES), ==, 1);
    put_get(&f[0], &f[1], f, 2, 30000, 7);
    put_get(&f[1], &f[0], f, 2, 30000, 8);
    rogue_close(&r);
    fab_stop(f, 2);
}

/* Every frame of the segment for @f's device goes elsewhere (or back). */
static void fab_deaf(Fab *f, bool deaf)
{
    QDict *rsp;

    if (deaf) {
        rsp = qtest_qmp(f->n.d->qts, "{'execute': 'chardev-add', "
                        "'arguments': {'id': 'sink', 'backend': "
                        "{'type': 'null', 'data': {}}}}");
        g_assert(qdict_haskey(rsp, "return"));
        qobject_unref(rsp);
        /* queue tx: what the netdev sends towards the device. */
        rsp = qtest_qmp(f->n.d->qts, "{'execute': 'object-add', "
                        "'arguments': {'qom-type': 'filter-redirector', "
                        "'id': 'deaf', 'netdev': 'fab', 'queue': 'tx', "
                        "'outdev': 'sink'}}");
    } else {
        rsp = qtest_qmp(f->n.d->qts, "{'execute': 'object-del', "
                        "'arguments': {'id': 'deaf'}}");
    }
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/*
 * One direction lost (docs/fabric.md, "Discovery, failure and rejoin"):
 * node 2 hears nothing of the segment, node 1 still hears node 2.  Node 2
 * loses node 1 after the timeout; node 1 keeps node 2, whose HELLOs
 * arrive.  Once node 2 hears again, it has no state for node 1: its NEW
 * makes node 1 drop the pair's state and start afresh (ACK), both are up,
 * and the QPs, idle meanwhile, carry traffic again.
 */
static void test_one_way_loss(void)
{
    Fab f[2];

    new_segment();
    fab_start(&f[0], 1);
    fab_start(&f[1], 2);
    wait_all(f, 2);
    fab_connect(&f[0], &f[1], 14, 7);
    put_get(&f[0], &f[1], f, 2, 30000, 1);
    g_assert_cmpint(peer_u64(&f[0], 2, "rx-frames"), >, 0);

    fab_deaf(&f[1], true);
    wait_peer(&f[1], 1, false);
    g_assert_cmpint(peer_u64(&f[0], 2, "up"), ==, 1);
    g_assert_cmpint(peer_u64(&f[0], 2, "rx-frames"), >, 0);

    fab_deaf(&f[1], false);
    wait_all(f, 2);
    /* Node 1's state for node 2 is new: nothing received on it yet. */
    g_assert_cmpint(peer_u64(&f[0], 2, "rx-frames"), ==, 0);
    put_get(&f[0], &f[1], f, 2, 30000, 2);
    put_get(&f[1], &f[0], f, 2, 30000, 3);
    fab_stop(f, 2);
}

/*
 * Two data VCs: node 1's packets for node 2 on VC0, for node 3 on VC1
 * (Dest-Mod), GET requests on the GET VC (2) whoever they are for.
 */
static void test_vcs_dest_mod(void)
{
    Fab f[3];
    unsigned i;
    uint64_t before[3];

    new_segment();
    for (i = 0; i < 3; i++) {
        fab_start_props(&f[i], i + 1, ",vcs=2");
    }
    wait_all(f, 3);
    g_assert_cmpuint(link_u64(&f[0], "data-vcs"), ==, 2);
    g_assert_cmpuint(vc_u64(&f[0], 3, "tx-frames"), ==, UINT64_MAX);
    fab_connect(&f[0], &f[1], 14, 7);
    fab_connect(&f[0], &f[2], 14, 7);

    /* PUT and GET to node 2: data on VC 2 mod 2 = 0, the GET on VC2. */
    for (i = 0; i < 3; i++) {
        before[i] = vc_u64(&f[0], i, "tx-frames");
    }
    put_get(&f[0], &f[1], f, 3, 40000, 1);
    g_assert_cmpuint(vc_u64(&f[0], 0, "tx-frames") - before[0], ==, 10);
    g_assert_cmpuint(vc_u64(&f[0], 1, "tx-frames"), ==, before[1]);
    g_assert_cmpuint(vc_u64(&f[0], 2, "tx-frames") - before[2], ==, 1);
    /* Node 2 answers node 1 (1 mod 2 = 1): ACKs and GET data on VC1. */
    g_assert_cmpuint(vc_u64(&f[1], 1, "tx-frames"), >=, 10);
    g_assert_cmpuint(vc_u64(&f[1], 0, "tx-frames"), ==, 0);

    /* To node 3: VC 3 mod 2 = 1. */
    for (i = 0; i < 3; i++) {
        before[i] = vc_u64(&f[0], i, "tx-frames");
    }
    put_get(&f[0], &f[2], f, 3, 40000, 2);
    g_assert_cmpuint(vc_u64(&f[0], 1, "tx-frames") - before[1], ==, 10);
    g_assert_cmpuint(vc_u64(&f[0], 0, "tx-frames"), ==, before[0]);
    g_assert_cmpuint(vc_u64(&f[0], 2, "tx-frames") - before[2], ==, 1);
    fab_stop(f, 3);
}

/* Both ends must agree on the VC count: a REFUSE, and no peer. */
static void test_vcs_mismatch(void)
{
    Fab f[2];

    new_segment();
    fab_start_props(&f[0], 1, ",vcs=2");
    fab_start_props(&f[1], 2, ",vcs=4");
    wait_counter(&f[0], CHPP_CNT_LINK_REFUSED, 1);
    g_usleep(300000);
    g_assert_cmpint(peer_u64(&f[0], 2, "up"), !=, 1);
    g_assert_cmpint(peer_u64(&f[1], 1, "up"), !=, 1);
    g_assert_false(chpp_rd(f[0].n.d, CHPP_REG_LINK) & CHPP_LINK_UP);
    fab_stop(f, 2);
}

/*
 * Head-of-line blocking: node 2 grants one frame per VC.  With one data
 * VC, node 1's frames for node 3 wait behind those for node 2 (HOL
 * stalls); with two, node 3's have a channel of their own.
 */
static void hol(const char *vcs, bool shared)
{
    g_autofree char *slow = g_strdup_printf("%s,link-credits=1", vcs);
    Fab f[3];
    ChppWqeBuf *w;
    uint32_t len = 60000;

    new_segment();
    fab_start_props(&f[0], 1, vcs);
    fab_start_props(&f[1], 2, slow);
    fab_start_props(&f[2], 3, vcs);
    wait_all(f, 3);
    fab_connect(&f[0], &f[1], 14, 7);
    fab_connect(&f[0], &f[2], 14, 7);
    chpp_fill(f[0].n.d, f[0].buf, len, 7);
    /* Both PUTs at once (doorbells rung together), node 2's first. */
    use_qp(&f[0], 2);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 1, 0);
    chpp_wqe_raddr(w, f[1].buf, f[1].key);
    chpp_wqe_sge(w, f[0].buf, len, f[0].key);
    chpp_post_send(f[0].n.d, &f[0].n.qp, w, false);
    keep_qp(&f[0], 2);
    use_qp(&f[0], 3);
    w = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, 2, 0);
    chpp_wqe_raddr(w, f[2].buf, f[2].key);
    chpp_wqe_sge(w, f[0].buf, len, f[0].key);
    chpp_post_send(f[0].n.d, &f[0].n.qp, w, false);
    keep_qp(&f[0], 3);
    chpp_sq_db(f[0].n.d, UAR, 2, f[0].q[2].sq_pi);
    chpp_sq_db(f[0].n.d, UAR, 3, f[0].q[3].sq_pi);
    {
        struct chpp_cqe cqe[2];

        poll_all(&f[0], f, 3, SCQ, &cqe[0]);
        poll_all(&f[0], f, 3, SCQ, &cqe[1]);
        g_assert_cmpuint(cqe[0].status, ==, 0);
        g_assert_cmpuint(cqe[1].status, ==, 0);
    }
    chpp_check(f[1].n.d, f[1].buf, len, 7);
    chpp_check(f[2].n.d, f[2].buf, len, 7);
    g_assert_cmpuint(vc_u64(&f[0], 0, "credit-stalls"), >, 0);
    g_assert_cmpuint(vc_u64(&f[0], 0, "blocked-ns"), >, 0);
    if (shared) {
        g_assert_cmpuint(vc_u64(&f[0], 0, "hol-stalls"), >, 0);
    } else {
        /* VC0 holds node 2's frames only, VC1 node 3's: nothing waits. */
        g_assert_cmpuint(vc_u64(&f[0], 0, "hol-stalls"), ==, 0);
        g_assert_cmpuint(vc_u64(&f[0], 1, "credit-stalls"), ==, 0);
    }
    fab_stop(f, 3);
}

static void test_hol_shared(void)
{
    hol("", true);
}

static void test_hol_dest_mod(void)
{
    hol(",vcs=2", false);
}

/*
 * A whole grant lost on the wire: the receiver sees no gap (nothing
 * arrives after the lost frames) and the sender has no credit left.  Only
 * the credit probe gets the grant back; then RC retransmits the data.
 */
static void test_lost_grant_probe(void)
{
    Fab f[2];
    QDict *rsp;

    new_segment();
    fab_start(&f[0], 1);
    fab_start(&f[1], 2);
    wait_all(f, 2);
    fab_connect(&f[0], &f[1], 12, 7);
    put_get(&f[0], &f[1], f, 2, 8192, 1);
    g_assert_cmpint(peer_u64(&f[0], 2, "probes"), ==, 0);
    rsp = qtest_qmp(f[0].n.d->qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': %s, 'property': 'fault-drop-next', "
                    "'value': %u}}", DEV_PATH, CHPP_LINK_ETH_CREDITS);
    qobject_unref(rsp);
    put_get(&f[0], &f[1], f, 2, 40000, 2);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_FAULT_DROPS), ==,
                     CHPP_LINK_ETH_CREDITS);
    g_assert_cmpint(peer_u64(&f[0], 2, "probes"), >, 0);
    g_assert_cmpint(peer_u64(&f[1], 1, "lost"), >=, CHPP_LINK_ETH_CREDITS);
    g_assert_cmpuint(chpp_counter(f[0].n.d, CHPP_CNT_RETRANSMITS), >, 0);
    g_assert_cmpuint(chpp_counter(f[1].n.d, CHPP_CNT_LINK_CREDIT_ERRORS), ==,
                     0);
    /* The grant is whole: a full window goes through again. */
    put_get(&f[0], &f[1], f, 2, 50000, 3);
    fab_stop(f, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/chpp-hca/fabric/three-nodes", test_three_nodes);
    qtest_add_func("/chpp-hca/fabric/three-nodes-dgram",
                   test_three_nodes_dgram);
    qtest_add_func("/chpp-hca/fabric/peer-restart", test_peer_restart);
    qtest_add_func("/chpp-hca/fabric/loss", test_loss);
    qtest_add_func("/chpp-hca/fabric/lost-grant-probe",
                   test_lost_grant_probe);
    qtest_add_func("/chpp-hca/fabric/hostile", test_hostile);
    qtest_add_func("/chpp-hca/fabric/hostile-nodes", test_hostile_nodes);
    qtest_add_func("/chpp-hca/fabric/repeated-new", test_repeated_new);
    qtest_add_func("/chpp-hca/fabric/hostile-credits", test_hostile_credits);
    qtest_add_func("/chpp-hca/fabric/one-way-loss", test_one_way_loss);
    qtest_add_func("/chpp-hca/fabric/vcs-dest-mod", test_vcs_dest_mod);
    qtest_add_func("/chpp-hca/fabric/vcs-mismatch", test_vcs_mismatch);
    qtest_add_func("/chpp-hca/fabric/hol-shared-vc", test_hol_shared);
    qtest_add_func("/chpp-hca/fabric/hol-dest-mod", test_hol_dest_mod);
    return g_test_run();
}
