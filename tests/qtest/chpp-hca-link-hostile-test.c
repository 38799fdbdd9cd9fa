/*
 * chpp-hca link tests against a hostile peer: this program speaks the
 * link protocol on the device's socket (as a third-party peer would) and
 * does what a well-behaved peer never does.  Every bound the device keeps
 * (docs/link.md, "Memory bounds") is asserted by counting what it holds,
 * through the counters and the QOM `state` property, never by timing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include <sys/ioctl.h>
#include <sys/un.h>
#include "qemu/atomic.h"
#include "qemu/host-utils.h"
#include "qemu/memfd.h"
#include <sys/eventfd.h>
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"
#include "hw/chpp/chpp-wire.h"

#define DEV_PATH    "/machine/peripheral/hca"
#define NODE        1           /* the device's node */
#define PEER        9           /* this program's node */
#define PEER_QPN    5
#define QP_PSN      0x500       /* rq_psn/sq_psn of chpp_node_connect() */

static char *tmpdir;
/* Extra device properties: ",link-thread=off" for QEMU's chardev path. */
static const char *node_props = "";

/* ---- the peer's socket ------------------------------------------------ */

typedef struct Peer {
    int listen_fd;
    int fd;
    char *path;
} Peer;

/* Listen first: the device connects (reconnect=1) and keeps reconnecting. */
static void peer_listen(Peer *p, const char *name)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };

    p->path = g_strdup_printf("%s/%s", tmpdir, name);
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    p->fd = -1;
    g_assert(p->listen_fd >= 0);
    pstrcpy(un.sun_path, sizeof(un.sun_path), p->path);
    g_assert(bind(p->listen_fd, (void *)&un, sizeof(un)) == 0);
    g_assert(listen(p->listen_fd, 1) == 0);
}

static char *peer_chardev(Peer *p)
{
    return g_strdup_printf("-chardev socket,id=lnk,path=%s,reconnect=1",
                           p->path);
}

static void peer_accept(Peer *p)
{
    p->fd = accept(p->listen_fd, NULL, NULL);
    g_assert(p->fd >= 0);
}

static void peer_close(Peer *p)
{
    if (p->fd >= 0) {
        close(p->fd);
    }
    close(p->listen_fd);
    unlink(p->path);
    g_free(p->path);
}

/*
 * Write all of @buf.  The device may cut the connection meanwhile (that
 * is often what a test waits for): then the rest is lost, without the
 * SIGPIPE that would end this program.
 */
static void peer_write(Peer *p, const void *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = send(p->fd, (const uint8_t *)buf + done, len - done,
                         MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            g_assert(errno == EPIPE || errno == ECONNRESET);
            return;
        }
        done += n;
    }
}

static void peer_rec(Peer *p, uint8_t type, uint8_t vc, const void *data,
                     uint32_t len)
{
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = type, .vc = vc,
        .len = cpu_to_le32(len),
    };

    peer_write(p, &rec, sizeof(rec));
    if (len) {
        peer_write(p, data, len);
    }
}

/* Append frame @f as a record to @out, to be written in one go. */
static void peer_frame_to(GByteArray *out, const ChppFrm *f)
{
    GByteArray *ba = chpp_frm_build(f);
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = CHPP_LINK_FRAME,
        .vc = f->vc, .len = cpu_to_le32(ba->len),
    };

    g_byte_array_append(out, (const uint8_t *)&rec, sizeof(rec));
    g_byte_array_append(out, ba->data, ba->len);
    g_byte_array_unref(ba);
}

/* Read exactly @len bytes (bounded wait); false at end of stream. */
static bool peer_read(Peer *p, void *buf, size_t len)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    size_t got = 0;

    while (got < len) {
        GPollFD pfd = { .fd = p->fd, .events = G_IO_IN };
        ssize_t n;

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (g_poll(&pfd, 1, 100) <= 0) {
            continue;
        }
        n = read(p->fd, (uint8_t *)buf + got, len - got);
        if (n <= 0) {
            return false;
        }
        got += n;
    }
    return true;
}

/* The next record's type (its body in @buf), 0 at end of stream. */
static uint8_t peer_read_rec(Peer *p, void *buf, uint32_t max)
{
    struct chpp_link_rec rec;
    uint32_t len;

    if (!peer_read(p, &rec, sizeof(rec))) {
        return 0;
    }
    g_assert_cmphex(le32_to_cpu(rec.magic), ==, CHPP_LINK_MAGIC);
    len = le32_to_cpu(rec.len);
    g_assert_cmpuint(len, <=, max);
    if (!peer_read(p, buf, len)) {
        return 0;
    }
    return rec.type;
}

/* True once the device closed the connection (bounded wait). */
static bool peer_sees_eof(Peer *p)
{
    uint8_t buf[CHPP_WIRE_FRAME_MAX];

    while (peer_read_rec(p, buf, sizeof(buf))) {
        /* skip what the device wrote before it cut */
    }
    return true;
}

static void peer_hello(Peer *p, uint16_t node, uint32_t credits)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .node_id = cpu_to_le16(node),
        .credits = { cpu_to_le32(credits), cpu_to_le32(credits) },
    };

    peer_rec(p, CHPP_LINK_HELLO, 0, &h, sizeof(h));
}

static void peer_credit(Peer *p, uint8_t vc, uint32_t count)
{
    struct chpp_link_credit c = { .count = cpu_to_le32(count) };

    peer_rec(p, CHPP_LINK_CREDIT, vc, &c, sizeof(c));
}

/* The device listens (server=on): connect to it. */
static void peer_connect(Peer *p)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    pstrcpy(un.sun_path, sizeof(un.sun_path), p->path);
    for (;;) {
        p->fd = socket(AF_UNIX, SOCK_STREAM, 0);
        g_assert(p->fd >= 0);
        if (connect(p->fd, (void *)&un, sizeof(un)) == 0) {
            return;
        }
        close(p->fd);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Accept the device's connection and answer its HELLO as node @node. */
static void peer_handshake(Peer *p, uint16_t node, uint32_t credits)
{
    uint8_t buf[CHPP_WIRE_FRAME_MAX];

    peer_accept(p);
    g_assert_cmpuint(peer_read_rec(p, buf, sizeof(buf)), ==,
                     CHPP_LINK_HELLO);
    peer_hello(p, node, credits);
}

/* ---- frames as the wire carries them (docs/wire-format.md) ------------ */

static void peer_frame(Peer *p, const ChppFrm *f)
{
    GByteArray *ba = chpp_frm_build(f);

    peer_rec(p, CHPP_LINK_FRAME, f->vc, ba->data, ba->len);
    g_byte_array_unref(ba);
}

/* A frame from the peer's QP PEER_QPN that the device will decode. */
static ChppFrm peer_frm(uint8_t op, uint8_t dst_vf, uint32_t dst_qpn,
                    uint8_t magic, uint32_t psn)
{
    return (ChppFrm) {
        .op = op, .flags = CHPP_WIRE_F_FIRST | CHPP_WIRE_F_LAST,
        .magic = magic, .dst_vf = dst_vf, .src_node = PEER,
        .dst_node = NODE, .psn = psn, .src_qpn = PEER_QPN,
        .dst_qpn = dst_qpn,
        .vc = op == CHPP_OP_READ_REQ ? CHPP_VC_GET : CHPP_VC_DATA,
    };
}

/* The node's QP 2 (magic 0x33) connected to the peer's QP PEER_QPN. */
static void peer_qp_up(ChppNode *a)
{
    ChppNode peer = { .id = PEER, .qp = { .qpn = PEER_QPN } };

    chpp_node_qp(a, 2, 0x33, 6, 9);
    chpp_node_connect(a, &peer, 14, 7);
}

/* @len bytes of the node's memory registered for @access; its rkey. */
static uint32_t peer_mr(ChppDev *d, uint32_t len, uint32_t access,
                        uint64_t *buf)
{
    *buf = guest_alloc(&d->qs->alloc, len);
    return chpp_create_mr(d, 0, CHPP_NODE_PD, *buf, len, access);
}

/* ---- the device's view ------------------------------------------------ */

static QDict *state_get(ChppDev *d, QDict **rsp)
{
    *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                     "{'path': %s, 'property': 'state'}}", DEV_PATH);
    g_assert(qdict_haskey(*rsp, "return"));
    return qdict_get_qdict(*rsp, "return");
}

static uint64_t link_state(ChppDev *d, const char *key)
{
    QDict *rsp;
    QDict *link = qdict_get_qdict(state_get(d, &rsp), "link");
    uint64_t v;

    g_assert(qdict_haskey(link, key));
    v = qdict_get_int(link, key);
    qobject_unref(rsp);
    return v;
}

static bool link_state_up(ChppDev *d)
{
    QDict *rsp;
    bool up = qdict_get_bool(qdict_get_qdict(state_get(d, &rsp), "link"),
                             "up");

    qobject_unref(rsp);
    return up;
}

/* A counter by name, from QOM: readable whatever the BARs are. */
static uint64_t state_counter(ChppDev *d, const char *name)
{
    QDict *rsp;
    QDict *cnt = qdict_get_qdict(state_get(d, &rsp), "counters");
    uint64_t v;

    g_assert(qdict_haskey(cnt, name));
    v = qdict_get_int(cnt, name);
    qobject_unref(rsp);
    return v;
}

static bool link_up(ChppDev *d)
{
    return chpp_rd(d, CHPP_REG_LINK) & CHPP_LINK_UP;
}

static void wait_link(ChppDev *d, bool up)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (link_up(d) != up) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Wait (bounded) until the link's state @key reads @want. */
static void wait_link_state(ChppDev *d, const char *key, uint64_t want)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint64_t v;

    while ((v = link_state(d, key)) != want) {
        if (g_get_monotonic_time() > end) {
            g_test_message("link.%s = %" PRIu64 ", expected %" PRIu64, key,
                           v, want);
            g_assert_cmpuint(v, ==, want);
        }
        g_usleep(1000);
    }
}

/* Wait (bounded) until counter @c of @d reaches @at_least. */
static uint32_t wait_counter(ChppDev *d, int c, uint32_t at_least)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint32_t v;

    while ((v = chpp_counter(d, c)) < at_least) {
        if (g_get_monotonic_time() > end) {
            g_assert_cmpuint(v, >=, at_least);
        }
        g_usleep(1000);
    }
    return v;
}

/* ---- 7: frames a VF had queued return their credits ------------------- */

static void vf_flr(ChppDev *vf)
{
    uint16_t devctl = qpci_config_readw(vf->pdev,
                                        CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL);

    qpci_config_writew(vf->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
}

/* @n frames for VF 1, waiting in its queue: its engine has not run. */
static void queue_for_vf(Peer *p, ChppPf *pf, uint32_t n)
{
    ChppFrm f = peer_frm(CHPP_OP_SEND, 1, 0, 0x44, QP_PSN);
    uint32_t i;

    for (i = 0; i < n; i++) {
        peer_frame(p, &f);
    }
    wait_link_state(pf->d, "rx-queued-vc0", n);
}

/*
 * The PF counts the peer's frames every function holds against the
 * credits it granted.  A VF that goes away (VF Enable cleared, FLR, a
 * reset of the PF) must give its frames' credits back, or the PF drops
 * every frame of the peer once enough have leaked.  Engines run only
 * when the clock is stepped, so the frames wait in VF 1's queue.
 */
static void test_vf_teardown_returns_credits(void)
{
    g_autofree char *chr = NULL;
    Peer p;
    ChppPf *pf;
    uint32_t i, n = CHPP_LINK_CREDITS / 2;

    peer_listen(&p, "vf-credits");
    chr = peer_chardev(&p);
    pf = chpp_pf_start("id=hca,node-id=1,chardev=lnk,"
                       "engine-delay-ns=1000000", chr);
    peer_handshake(&p, PEER, 64);
    wait_link(pf->d, true);

    /* VF Enable cleared: the VF is unrealized with its queue. */
    chpp_pf_vfs_set(pf, 1);
    queue_for_vf(&p, pf, n);
    chpp_pf_vfs_set(pf, 0);
    g_assert_cmpuint(link_state(pf->d, "rx-queued-vc0"), ==, 0);

    /* FLR of the VF. */
    chpp_pf_vfs_set(pf, 1);
    queue_for_vf(&p, pf, n);
    vf_flr(pf->vf[1]);
    g_assert_cmpuint(link_state(pf->d, "rx-queued-vc0"), ==, 0);

    /* A reset of the PF, which takes the VFs away. */
    queue_for_vf(&p, pf, n);
    qtest_qmp_assert_success(pf->d->qts, "{'execute': 'system_reset'}");
    wait_link_state(pf->d, "rx-queued-vc0", 0);
    g_assert(link_state_up(pf->d));

    /*
     * The grant is whole again: a window of frames for the PF is taken
     * (the reset unmapped the BARs: counters are read from QOM).
     */
    for (i = 0; i < CHPP_LINK_CREDITS; i++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 0, 0x44, QP_PSN);

        peer_frame(&p, &f);
    }
    wait_link_state(pf->d, "rx-queued-vc0", CHPP_LINK_CREDITS);
    g_assert_cmpuint(state_counter(pf->d, "link-credit-errors"), ==, 0);
    peer_close(&p);
    chpp_pf_stop(pf);
}

/* ---- 4: the peer cannot pose as another node -------------------------- */

/* Node NODE (EQ, CQs 0 and 1, port up) linked to this program. */
static ChppDev *node_start(Peer *p, const char *name, const char *props,
                           ChppNode *n, uint32_t peer_credits)
{
    g_autofree char *chr = NULL;
    g_autofree char *all = g_strdup_printf("id=hca,node-id=%u,chardev=lnk%s%s",
                                           NODE, props, node_props);
    ChppDev *d;

    peer_listen(p, name);
    chr = peer_chardev(p);
    d = chpp_start(all, chr);
    chpp_node_setup(n, d, NODE, 0);
    peer_handshake(p, PEER, peer_credits);
    wait_link(d, true);
    return d;
}

/* Post one receive of 4 KiB on @n's QP. */
static void node_recv(ChppNode *n, uint64_t wr_id)
{
    uint64_t buf = guest_alloc(&n->d->qs->alloc, 4096);
    ChppTSge sge = {
        buf, 4096, chpp_create_mr(n->d, n->next_mr++, CHPP_NODE_PD, buf,
                                  4096, CHPP_MPT_LOCAL_WRITE),
    };

    chpp_post_recvs(n->d, &n->qp, wr_id, &sge, 1, 1);
}

/* Every frame sent so far was read and processed. */
static void wait_processed(ChppDev *d, uint32_t frames)
{
    wait_counter(d, CHPP_CNT_LINK_RX_FRAMES, frames);
    wait_link_state(d, "rx-queued-vc0", 0);
    wait_link_state(d, "rx-queued-vc1", 0);
}

/*
 * QPs 0 and 1 of the node are connected to each other (loopback).  The
 * peer sends SENDs to QP 1 that claim to come from QP 0 of this node,
 * with each of the 256 magics: before the fix one matched, and its
 * message completed in QP 1's receive queue.  Frames from the wire must
 * carry the node the peer announced, and be for this node.
 */
static void test_spoofed_source(void)
{
    Peer p;
    ChppNode a, b;
    ChppDev *d = node_start(&p, "spoof", "", &a, 64);
    struct chpp_cqe cqe;
    uint32_t m, sent = 0;

    b = a;
    chpp_node_qp(&a, 0, 0x10, 6, 9);
    chpp_node_qp(&b, 1, 0x21, 6, 9);
    chpp_node_connect(&a, &b, 14, 7);
    chpp_node_connect(&b, &a, 14, 7);
    node_recv(&b, 0x77);
    for (m = 0; m < 256; m++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 1, m, QP_PSN);

        f.src_node = NODE;
        f.src_qpn = 0;
        f.flags |= CHPP_WIRE_F_ACK_REQ;
        f.len = 8;
        f.msg_len = 8;
        peer_frame(&p, &f);
        /* Paced within the credits granted. */
        if (++sent % 32 == 0) {
            wait_processed(d, sent);
        }
    }
    /* From the peer's node, but for another node. */
    for (m = 0; m < 4; m++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 1, 0x21, QP_PSN);

        f.dst_node = 7;
        peer_frame(&p, &f);
        sent++;
    }
    wait_processed(d, sent);
    /* Nothing reached QP 1, nor QP 0 (the ACKs it would have had). */
    g_assert_false(chpp_cqe_valid(d, &b.cq[1], &cqe));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_CQES), ==, 0);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_SPOOFED), ==, 260);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_MAGIC_DROPS), ==, 0);
    /* Dropped within the credits: the grant is returned, no credit error. */
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_CREDIT_ERRORS), ==, 0);
    g_assert(link_up(d));

    /* A second HELLO, to become another node, breaks the protocol. */
    peer_hello(&p, 2, 64);
    g_assert(peer_sees_eof(&p));
    wait_link(d, false);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 1);
    peer_close(&p);
    chpp_stop(d);
}

/*
 * MADs from the peer (docs/management-datagrams.md): QP 1 is the GSI QP.
 * Frames a genuine MAD never is are dropped and counted, the receive WQE
 * stays, and the next MAD lands in it.
 */
static void test_mad_frames(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "mad", "", &a, 64);
    struct chpp_qp_context c = {
        .type = CHPP_QPT_GSI, .port = 1, .pd = cpu_to_le32(CHPP_NODE_PD),
        .send_cqn = cpu_to_le32(0), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = 4, .log_sq_stride = 7,
        .log_rq_size = 4, .log_rq_stride = 7,
        .uar = cpu_to_le16(CHPP_NODE_UAR),
        .qkey = cpu_to_le32(CHPP_QP1_QKEY),
    };
    struct chpp_cqe cqe;
    uint32_t drops = chpp_counter(d, CHPP_CNT_PKTS_DROPPED), sent = 0;
    ChppFrm f;

    a.qp = (ChppTQp) {
        .qpn = 1, .type = CHPP_QPT_GSI, .log_sq = 4, .log_rq = 4,
        .stride = 7, .uar = CHPP_NODE_UAR,
    };
    chpp_qp_alloc_rings(d, &c, &a.qp.sq, &a.qp.rq);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, 1,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_QKEY, &c), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_INIT2RTR_QP, 1, 0, &c), ==,
                    CHPP_STAT_OK);
    node_recv(&a, 0x55);

    /* An RDMA write to QP 1. */
    f = peer_frm(CHPP_OP_WRITE, 0, 1, 0, 0);
    f.len = f.msg_len = CHPP_MAD_SIZE;
    f.qkey = CHPP_QP1_QKEY;
    peer_frame(&p, &f);
    /* A SEND that is not 256 bytes, short and long. */
    f = peer_frm(CHPP_OP_SEND, 0, 1, 0, 0);
    f.qkey = CHPP_QP1_QKEY;
    f.len = f.msg_len = 100;
    peer_frame(&p, &f);
    f.len = f.msg_len = 4096;
    peer_frame(&p, &f);
    /* A MAD with another Q_Key. */
    f.len = f.msg_len = CHPP_MAD_SIZE;
    f.qkey = 0x1234;
    peer_frame(&p, &f);
    /* To QP 0, which is in RESET. */
    f.qkey = CHPP_QP1_QKEY;
    f.dst_qpn = 0;
    peer_frame(&p, &f);
    /* To a VF that does not exist. */
    f.dst_qpn = 1;
    f.dst_vf = 3;
    peer_frame(&p, &f);
    sent = 6;
    wait_processed(d, sent);
    g_assert_false(chpp_cqe_valid(d, &a.cq[1], &cqe));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_PKTS_DROPPED), ==, drops + 6);

    /* A genuine MAD lands in the receive that was kept. */
    f.dst_vf = 0;
    peer_frame(&p, &f);
    wait_processed(d, ++sent);
    chpp_poll_cq(d, &a.cq[1], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x55);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==,
                     CHPP_UD_GRH_SIZE + CHPP_MAD_SIZE);
    g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, PEER);
    g_assert_cmpuint(le32_to_cpu(cqe.src_qp), ==, PEER_QPN);
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/*
 * Multicast datagrams from the peer (docs/management-datagrams.md): QP 2 is
 * a UD QP attached to MLID 0xc005.  Frames for another MLID, an RDMA write
 * to the multicast QPN and a datagram with the wrong Q_Key are dropped and
 * counted; a good one lands, whatever its QP magic.
 */
static void test_mcast_frames(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "mcast", "", &a, 64);
    struct chpp_qp_context c = {
        .type = CHPP_QPT_UD, .port = 1, .pd = cpu_to_le32(CHPP_NODE_PD),
        .send_cqn = cpu_to_le32(0), .recv_cqn = cpu_to_le32(1),
        .log_sq_size = 4, .log_sq_stride = 7,
        .log_rq_size = 4, .log_rq_stride = 7,
        .uar = cpu_to_le16(CHPP_NODE_UAR), .qkey = cpu_to_le32(0x77),
        .magic = 1,
    };
    struct chpp_mcg_attach m = { .mgid = { 0xff, 0x12 },
                                 .mlid = cpu_to_le16(0xc005) };
    struct chpp_cqe cqe;
    uint32_t drops = chpp_counter(d, CHPP_CNT_PKTS_DROPPED);
    ChppFrm f;

    a.qp = (ChppTQp) {
        .qpn = 2, .type = CHPP_QPT_UD, .log_sq = 4, .log_rq = 4,
        .stride = 7, .uar = CHPP_NODE_UAR, .magic = 1,
    };
    chpp_qp_alloc_rings(d, &c, &a.qp.sq, &a.qp.rq);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, 2,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT | CHPP_QP_ATTR_QKEY,
                                   &c), ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_INIT2RTR_QP, 2, 0, &c), ==,
                    CHPP_STAT_OK);
    qtest_memwrite(d->qts, d->mbox_in, &m, sizeof(m));
    g_assert_cmphex(chpp_cmd(d, CHPP_CMD_ATTACH_MCG, d->mbox_in, 2, 0), ==,
                    CHPP_STAT_OK);
    node_recv(&a, 0x66);

    f = peer_frm(CHPP_OP_SEND, 0, CHPP_MCAST_QPN, 0x99, 0);
    f.len = f.msg_len = 64;
    f.qkey = 0x77;
    f.mlid = 0xc006;                    /* no such group */
    peer_frame(&p, &f);
    f.mlid = 0xc005;
    f.qkey = 0x78;                      /* wrong Q_Key */
    peer_frame(&p, &f);
    f.qkey = 0x77;
    f.op = CHPP_OP_WRITE;               /* not a datagram */
    peer_frame(&p, &f);
    wait_processed(d, 3);
    g_assert_false(chpp_cqe_valid(d, &a.cq[1], &cqe));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_PKTS_DROPPED), ==, drops + 3);
    f.op = CHPP_OP_SEND;
    peer_frame(&p, &f);
    wait_processed(d, 4);
    chpp_poll_cq(d, &a.cq[1], &cqe);
    g_assert_cmpuint(cqe.status, ==, CHPP_WC_SUCCESS);
    g_assert_cmphex(le64_to_cpu(cqe.wr_id), ==, 0x66);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, CHPP_UD_GRH_SIZE + 64);
    g_assert_cmpuint(le16_to_cpu(cqe.src_node), ==, PEER);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_MAGIC_DROPS), ==, 0);
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/*
 * QP 2 is connected to the peer's QP PEER_QPN.  A stale peer QP repeats
 * one wrong magic, which is dropped and counted; a peer trying new magics
 * is cut after CHPP_LINK_MAGIC_GUESS_MAX of them within the window
 * (virtual time: it only moves when this test steps it).
 */
static void test_magic_guessing(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "magic", "", &a, 64);
    uint32_t i, sent = 0;

    peer_qp_up(&a);

    /* The same wrong magic again and again: not a guess. */
    for (i = 0; i < 3 * CHPP_LINK_MAGIC_GUESS_MAX; i++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 2, 0x32, QP_PSN);

        peer_frame(&p, &f);
        sent++;
    }
    wait_processed(d, sent);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_MAGIC_DROPS), ==, sent);
    g_assert(link_up(d));

    /* New magics, but fewer than the bound per window. */
    for (i = 0; i < CHPP_LINK_MAGIC_GUESS_MAX - 2; i++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 2, 0x40 + i, QP_PSN);

        peer_frame(&p, &f);
        sent++;
    }
    wait_processed(d, sent);
    g_assert(link_up(d));
    qtest_clock_step(d->qts, CHPP_LINK_MAGIC_WINDOW_MS * 1000000ll);
    for (i = 0; i < CHPP_LINK_MAGIC_GUESS_MAX - 2; i++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 2, 0x80 + i, QP_PSN);

        peer_frame(&p, &f);
        sent++;
    }
    wait_processed(d, sent);
    g_assert(link_up(d));
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_MAGIC_CUTS), ==, 0);

    /* A run of guesses within one window cuts the connection. */
    for (i = 0; i < 2 * CHPP_LINK_MAGIC_GUESS_MAX; i++) {
        ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 2, 0xc0 + i, QP_PSN);

        peer_frame(&p, &f);
    }
    g_assert(peer_sees_eof(&p));
    wait_link(d, false);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_MAGIC_CUTS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_MAGIC_DROPS), <=,
                     sent + CHPP_LINK_MAGIC_GUESS_MAX);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    peer_close(&p);
    chpp_stop(d);
}

/* ---- 3: every queue of the link is bounded ---------------------------- */

/* The largest record the device writes. */
#define REC_MAX     (sizeof(struct chpp_link_rec) + CHPP_WIRE_FRAME_MAX)

/* Read and discard what the device wrote, for up to @ms. */
static size_t peer_drain(Peer *p, int ms)
{
    static uint8_t buf[1 << 20];
    GPollFD pfd = { .fd = p->fd, .events = G_IO_IN };
    size_t total = 0;
    ssize_t n;

    while (g_poll(&pfd, 1, ms) > 0 &&
           (n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        total += n;
    }
    return total;
}

/* Drain the socket until the device has nothing left to write. */
static void peer_drain_all(Peer *p, ChppDev *d)
{
    int64_t end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (link_state(d, "out-queue-bytes") ||
           link_state(d, "backlog-vc0") || link_state(d, "backlog-vc1") ||
           link_state(d, "rx-queued-vc0") || link_state(d, "rx-queued-vc1")) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        peer_drain(p, 10);
    }
}

/*
 * (a) The peer grants no credits and repeats an RC request that asks for
 * an ACK: every duplicate is answered, and the answers wait for credits.
 * Before the fix they piled up without end.  At CHPP_LINK_BACKLOG_MAX
 * waiting frames the device stops taking the peer's frames (back-pressure):
 * they wait within the grant, and what the peer sends beyond it is dropped.
 */
static void test_zero_credit_duplicates(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "zero-credit", "", &a, 0);
    uint32_t sent = 0, total = CHPP_LINK_BACKLOG_MAX + 2 * CHPP_LINK_CREDITS;

    peer_qp_up(&a);
    while (sent < total) {
        ChppFrm f = peer_frm(CHPP_OP_WRITE, 0, 2, 0x33, QP_PSN - 1);
        int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        uint32_t i;

        f.flags |= CHPP_WIRE_F_ACK_REQ;
        for (i = 0; i < 64; i++) {
            peer_frame(&p, &f);
        }
        sent += 64;
        /* Read, then processed or held back. */
        while (chpp_counter(d, CHPP_CNT_LINK_RX_FRAMES) +
               chpp_counter(d, CHPP_CNT_LINK_CREDIT_ERRORS) < sent ||
               (link_state(d, "rx-queued-vc0") &&
                link_state(d, "backlog-vc0") < CHPP_LINK_BACKLOG_MAX)) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(1000);
        }
    }
    g_assert_cmpuint(link_state(d, "backlog-vc0"), <=, CHPP_LINK_BACKLOG_MAX);
    g_assert_cmpuint(link_state(d, "rx-queued-vc0"), <=, CHPP_LINK_CREDITS);
    g_assert_cmpuint(link_state(d, "out-queue-bytes"), <=,
                     CHPP_LINK_OUTQ_MAX + REC_MAX);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_RX_PAUSES), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_CREDIT_ERRORS), >, 0);
    g_assert(link_up(d));

    /* Credits at last: the answers leave, the held frames are answered. */
    peer_credit(&p, 0, 4096);
    peer_drain_all(&p, d);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_TX_FRAMES), ==,
                     chpp_counter(d, CHPP_CNT_LINK_RX_FRAMES));
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/*
 * One QP's requests travel on two VCs (READs on the GET VC, the rest on a
 * data VC) and must reach its responder in PSN order all the same
 * (docs/link.md, "Virtual channels"): the peer writes, in one go, a READ
 * and the WRITE after it.  Before the fix the device served its data VCs
 * first: the WRITE came "out of sequence", was dropped and NAKed, and the
 * requester had to go back N (Open MPI's 1 MiB messages: 15 MB/s).
 */
static void test_requests_across_vcs(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "across-vcs", "", &a, 4096);
    g_autoptr(GByteArray) out = g_byte_array_new();
    uint64_t buf;
    uint32_t rkey = peer_mr(d, 4096, CHPP_MPT_LOCAL_WRITE |
                            CHPP_MPT_REMOTE_READ | CHPP_MPT_REMOTE_WRITE,
                            &buf);
    ChppFrm rd = peer_frm(CHPP_OP_READ_REQ, 0, 2, 0x33, QP_PSN);
    ChppFrm wr = peer_frm(CHPP_OP_WRITE, 0, 2, 0x33, QP_PSN + 1);
    bool resp = false, acked = false;
    uint8_t rec[REC_MAX];
    int64_t end;

    peer_qp_up(&a);
    rd.va = buf;
    rd.rkey = rkey;
    rd.msg_len = 64;
    wr.flags |= CHPP_WIRE_F_ACK_REQ;
    wr.va = buf + 64;
    wr.rkey = rkey;
    wr.len = wr.msg_len = 8;
    peer_frame_to(out, &rd);
    peer_frame_to(out, &wr);
    peer_write(&p, out->data, out->len);
    wait_counter(d, CHPP_CNT_LINK_RX_FRAMES, 2);
    /* The READ's response and the WRITE's ACK; no NAK. */
    end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (!resp || !acked) {
        uint8_t type = peer_read_rec(&p, rec, sizeof(rec));
        uint8_t op;

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (type != CHPP_LINK_FRAME) {
            g_assert_cmpuint(type, ==, CHPP_LINK_CREDIT);
            continue;
        }
        op = rec[CHPP_WIRE_HDR_SIZE + offsetof(struct chpp_wire_ext, op)];
        g_assert_cmpuint(op, !=, CHPP_OP_NAK);
        resp |= op == CHPP_OP_READ_RESP;
        acked |= op == CHPP_OP_ACK &&
                 ldl_le_p(rec + CHPP_WIRE_HDR_SIZE +
                          offsetof(struct chpp_wire_ext, psn)) == QP_PSN + 1;
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/*
 * (c) ACKs coalesce per engine run with one entry per QP in the run's list
 * (num_qps entries): the peer writes, in one go, 100 new WRITEs that ask
 * for an ACK, each followed by its duplicate, whose ACK is sent at once
 * and takes the owed one along.  Before the fix the QP was listed again
 * after each such answer, past the end of the list (ASan: heap overflow).
 * Every WRITE is executed once, and the peer's last ACK covers the last.
 */
static void test_ack_owed_duplicates(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "ack-dup", "", &a, 4096);
    g_autoptr(GByteArray) out = g_byte_array_new();
    uint64_t buf;
    uint32_t rkey = peer_mr(d, 4096, CHPP_MPT_LOCAL_WRITE |
                            CHPP_MPT_REMOTE_WRITE, &buf);
    uint32_t i, n = 100, last = 0;
    uint8_t rec[REC_MAX];
    int64_t end;

    peer_qp_up(&a);
    for (i = 0; i < 2 * n; i++) {
        ChppFrm f = peer_frm(CHPP_OP_WRITE, 0, 2, 0x33, QP_PSN + i / 2);

        f.flags |= CHPP_WIRE_F_ACK_REQ;
        f.va = buf;
        f.rkey = rkey;
        f.len = f.msg_len = 8;
        peer_frame_to(out, &f);
    }
    peer_write(&p, out->data, out->len);
    wait_counter(d, CHPP_CNT_LINK_RX_FRAMES, 2 * n);
    wait_link_state(d, "rx-queued-vc0", 0);
    /* The answers: ACKs only, the last for the last WRITE. */
    end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (last != QP_PSN + n - 1) {
        uint8_t type = peer_read_rec(&p, rec, sizeof(rec));

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (type == CHPP_LINK_FRAME) {
            g_assert_cmpuint(rec[CHPP_WIRE_HDR_SIZE +
                                 offsetof(struct chpp_wire_ext, op)], ==,
                             CHPP_OP_ACK);
            last = ldl_le_p(rec + CHPP_WIRE_HDR_SIZE +
                            offsetof(struct chpp_wire_ext, psn));
        } else {
            g_assert_cmpuint(type, ==, CHPP_LINK_CREDIT);
        }
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/*
 * (b) The peer grants credits but never reads its socket, and asks for the
 * same 1 MiB GET again and again (each duplicate is answered anew).
 * Before the fix every answer went to the write queue (8 MiB here).  It
 * holds CHPP_LINK_OUTQ_MAX bytes; beyond that frames wait in the backlog,
 * the senders pause, and the credits owed to the peer are held back.
 */
static void test_peer_never_reads(void)
{
    Peer p;
    ChppNode a;
    ChppDev *d = node_start(&p, "never-reads", "", &a, 4096);
    uint32_t len = 1 << 20, i, n = 8;
    uint64_t buf;
    uint32_t rkey = peer_mr(d, len, CHPP_MPT_REMOTE_READ, &buf);

    peer_qp_up(&a);
    for (i = 0; i < n; i++) {
        ChppFrm f = peer_frm(CHPP_OP_READ_REQ, 0, 2, 0x33, QP_PSN);

        f.va = buf;
        f.rkey = rkey;
        f.msg_len = len;
        peer_frame(&p, &f);
    }
    wait_counter(d, CHPP_CNT_LINK_RX_FRAMES, n);
    wait_link_state(d, "rx-queued-vc1", 0);
    g_assert_cmpuint(link_state(d, "out-queue-bytes"), <=,
                     CHPP_LINK_OUTQ_MAX + REC_MAX);
    g_assert_cmpuint(link_state(d, "backlog-vc0"), <=, CHPP_LINK_BACKLOG_MAX);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_OUTQ_FULL), >=, 1);

    /* Frames to consume but no room to say so: the credits wait. */
    for (i = 0; i < 3 * CHPP_LINK_CREDITS / 4; i++) {
        ChppFrm f = peer_frm(CHPP_OP_WRITE, 0, 2, 0x33, QP_PSN - 1);

        peer_frame(&p, &f);
    }
    wait_counter(d, CHPP_CNT_LINK_RX_FRAMES, n + 3 * CHPP_LINK_CREDITS / 4);
    wait_link_state(d, "rx-queued-vc0", 0);
    g_assert_cmpuint(link_state(d, "owed-vc0"), ==,
                     3 * CHPP_LINK_CREDITS / 4);
    g_assert_cmpuint(link_state(d, "out-queue-bytes"), <=,
                     CHPP_LINK_OUTQ_MAX + REC_MAX);

    /* The peer reads at last: everything leaves, the credits too. */
    peer_drain_all(&p, d);
    g_assert_cmpuint(link_state(d, "owed-vc0"), <, CHPP_LINK_CREDITS / 4);
    g_assert(link_up(d));
    peer_close(&p);
    chpp_stop(d);
}

/* ---- 6: the peer's text in the log ------------------------------------ */

static void peer_refuse(Peer *p, const char *text)
{
    struct chpp_link_refuse r = {
        .reason = cpu_to_le32(CHPP_LINK_REFUSE_PROTOCOL),
    };

    memcpy(r.text, text, MIN(strlen(text), sizeof(r.text)));
    peer_rec(p, CHPP_LINK_REFUSE, 0, &r, sizeof(r));
}

/* Connect to the listening device and read its HELLO. */
static void peer_open(Peer *p)
{
    uint8_t buf[CHPP_WIRE_FRAME_MAX];

    peer_connect(p);
    g_assert_cmpuint(peer_read_rec(p, buf, sizeof(buf)), ==,
                     CHPP_LINK_HELLO);
}

static void peer_hang_up(Peer *p)
{
    g_assert(peer_sees_eof(p));
    close(p->fd);
    p->fd = -1;
}

/* Lines of @log holding @what; fails on a line that starts with @forged. */
static unsigned log_lines(const char *log, const char *what,
                          const char *forged)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    unsigned i, n = 0;

    g_assert(g_file_get_contents(log, &text, NULL, NULL));
    g_assert_null(strchr(text, '\033'));
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        g_assert_false(g_str_has_prefix(lines[i], forged));
        n += strstr(lines[i], what) != NULL;
    }
    return n;
}

/*
 * REFUSE text is the peer's: it reaches the log printable only, bounded,
 * and rate-limited; a REFUSE cuts the connection at once, and one before
 * the peer's HELLO breaks the protocol.  Before the fix each of a hundred
 * REFUSE records of one connection was logged verbatim, newline and
 * escape sequence included.
 */
static void test_refuse_text(void)
{
    g_autofree char *log = g_strdup_printf("%s/refuse.log", tmpdir);
    g_autofree char *path = g_strdup_printf("%s/refuse", tmpdir);
    g_autofree char *args = g_strdup_printf(
        "-chardev socket,id=lnk,path=%s,server=on,wait=off 2>%s", path, log);
    g_autofree char *props = NULL;
    const char *forged = "qemu-system-x86_64: forged";
    const char *what = "the peer refused the link";
    Peer p = { .path = path, .fd = -1 };
    ChppDev *d;
    unsigned i, n = 60, logged;

    /* QEMU's stderr goes to @log: libqtest runs its command in a shell. */
    props = g_strdup_printf("id=hca,node-id=%u,chardev=lnk%s", NODE,
                            node_props);
    d = chpp_start(props, args);

    /* After HELLO: a hundred refusals with a forged line. */
    peer_open(&p);
    peer_hello(&p, PEER, 64);
    for (i = 0; i < 100; i++) {
        peer_refuse(&p, "bye\nqemu-system-x86_64: forged line\033[2J");
    }
    wait_counter(d, CHPP_CNT_LINK_REFUSED, 1);
    g_assert_cmpuint(log_lines(log, what, forged), ==, 1);
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_REFUSED), ==, 1);

    /* Before HELLO: a protocol error, nothing logged. */
    peer_open(&p);
    peer_refuse(&p, "who asked");
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_REFUSED), ==, 1);

    /* Refusing again and again: the log gets the 1st-4th, 8th, 16th... */
    for (i = 0; i < n; i++) {
        peer_open(&p);
        peer_hello(&p, PEER, 64);
        peer_refuse(&p, "again");
        peer_hang_up(&p);
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_REFUSED), ==, n + 1);
    logged = log_lines(log, what, forged);
    g_test_message("%u refusals, %u logged", n + 1, logged);
    g_assert_cmpuint(logged, ==, CHPP_LINK_REFUSE_LOG_FIRST + 3);
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    chpp_stop(d);
    unlink(log);
}

/* ---- 8: shared rings (docs/link.md, "Shared memory") ------------------ */

typedef struct PeerRing {
    struct chpp_link_shm_hdr *hdr;
    uint8_t *data;
    uint32_t size;
    size_t len;
    int mem;                /* the memfd, until offered */
    int sig;                /* this program's end of the signal socket */
    int give;               /* the other end, until offered */
} PeerRing;

#define PEER_RING   (16u << 10)

/*
 * A ring as a peer makes it: a memfd of @len bytes with @seals, and a
 * socket pair left blocking (the device's recv() and send() must not
 * depend on the flags of descriptions a peer shares).
 */
static void ring_make(PeerRing *r, size_t len, unsigned seals)
{
    int sv[2];

    r->mem = memfd_create("peer-ring", MFD_ALLOW_SEALING | MFD_CLOEXEC);
    g_assert(r->mem >= 0);
    g_assert(ftruncate(r->mem, len) == 0);
    g_assert(fcntl(r->mem, F_ADD_SEALS, seals) == 0);
    r->len = len;
    r->size = PEER_RING;
    r->hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->mem, 0);
    g_assert(r->hdr != MAP_FAILED);
    r->data = (uint8_t *)r->hdr + CHPP_LINK_SHM_DATA_OFF;
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    r->sig = sv[0];
    r->give = sv[1];
}

static void ring_good(PeerRing *r)
{
    ring_make(r, CHPP_LINK_SHM_DATA_OFF + PEER_RING,
              F_SEAL_SHRINK | F_SEAL_GROW);
}

/* 0 is a ring never made (PeerRing {} initialised), not stdin to close. */
static void fd_close(int *fd)
{
    if (*fd > 0) {
        close(*fd);
    }
    *fd = -1;
}

static void ring_free(PeerRing *r)
{
    if (r->hdr) {
        munmap(r->hdr, r->len);
    }
    fd_close(&r->mem);
    fd_close(&r->sig);
    fd_close(&r->give);
    memset(r, 0, sizeof(*r));
}

/* Bytes with @nfds descriptors, in one message. */
static void peer_send_fds(Peer *p, const void *buf, size_t len,
                          const int *fds, int nfds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } control = {};
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *c;

    if (nfds) {
        msg.msg_control = &control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    g_assert_cmpint(sendmsg(p->fd, &msg, MSG_NOSIGNAL), ==, len);
}

/* A CHPP_LINK_SHM record for a ring of @size, with @nfds of @fds. */
static void peer_offer(Peer *p, uint32_t size, const int *fds, int nfds)
{
    struct {
        struct chpp_link_rec rec;
        struct chpp_link_shm shm;
    } QEMU_PACKED m = {
        .rec = {
            .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = CHPP_LINK_SHM,
            .len = cpu_to_le32(sizeof(m.shm)),
        },
        .shm = {
            .ring_size = cpu_to_le32(size),
            .data_off = cpu_to_le32(CHPP_LINK_SHM_DATA_OFF),
        },
    };

    peer_send_fds(p, &m, sizeof(m), fds, nfds);
}

/* Offer @r as a ring of @size; its memfd and the end given are closed. */
static void ring_offer_size(Peer *p, PeerRing *r, uint32_t size)
{
    int fds[CHPP_LINK_SHM_FDS] = { r->mem, r->give };

    peer_offer(p, size, fds, CHPP_LINK_SHM_FDS);
    fd_close(&r->mem);
    fd_close(&r->give);
}

static void ring_offer(Peer *p, PeerRing *r)
{
    ring_offer_size(p, r, PEER_RING);
}

/* Connect to the listening device; its HELLO offers to take a ring. */
static void peer_open_shm(Peer *p)
{
    struct chpp_link_hello h;

    peer_connect(p);
    g_assert_cmpuint(peer_read_rec(p, &h, sizeof(h)), ==, CHPP_LINK_HELLO);
    g_assert_cmphex(le32_to_cpu(h.caps) & CHPP_LINK_CAP_SHM, ==,
                    CHPP_LINK_CAP_SHM);
}

/* HELLO taking a ring; the device's CHPP_LINK_SHM answers, mapped in @r. */
static void peer_take_ring(Peer *p, PeerRing *r)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .node_id = cpu_to_le16(PEER),
        .caps = cpu_to_le32(CHPP_LINK_CAP_SHM),
        .credits = { cpu_to_le32(64), cpu_to_le32(64) },
    };
    struct {
        struct chpp_link_rec rec;
        struct chpp_link_shm shm;
    } QEMU_PACKED m;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CHPP_LINK_SHM_FDS)];
    } control;
    struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = &control, .msg_controllen = sizeof(control),
    };
    GPollFD pfd = { .fd = p->fd, .events = G_IO_IN };
    struct cmsghdr *c;

    peer_rec(p, CHPP_LINK_HELLO, 0, &h, sizeof(h));
    g_assert_cmpint(g_poll(&pfd, 1, 10000), ==, 1);
    g_assert_cmpint(recvmsg(p->fd, &msg, MSG_WAITALL), ==, sizeof(m));
    g_assert_cmpuint(m.rec.type, ==, CHPP_LINK_SHM);
    g_assert_cmpuint(le32_to_cpu(m.rec.len), ==, sizeof(m.shm));
    g_assert_cmpuint(le32_to_cpu(m.shm.data_off), ==, CHPP_LINK_SHM_DATA_OFF);
    r->size = le32_to_cpu(m.shm.ring_size);
    g_assert(is_power_of_2(r->size));
    c = CMSG_FIRSTHDR(&msg);
    g_assert(c && c->cmsg_type == SCM_RIGHTS);
    g_assert_cmpuint(c->cmsg_len, ==, CMSG_LEN(sizeof(int) * 2));
    memcpy(&r->mem, CMSG_DATA(c), sizeof(int));
    memcpy(&r->sig, CMSG_DATA(c) + sizeof(int), sizeof(int));
    r->give = -1;
    /* The device's memfd cannot shrink under this mapping. */
    g_assert(fcntl(r->mem, F_GET_SEALS) & F_SEAL_SHRINK);
    r->len = CHPP_LINK_SHM_DATA_OFF + r->size;
    r->hdr = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
                  r->mem, 0);
    g_assert(r->hdr != MAP_FAILED);
    fd_close(&r->mem);
    r->data = (uint8_t *)r->hdr + CHPP_LINK_SHM_DATA_OFF;
}

/* Write @len bytes into the peer's ring; signal the device if it sleeps. */
static void ring_put(PeerRing *r, const void *buf, size_t len)
{
    uint32_t tail = r->hdr->tail;
    size_t i;

    g_assert_cmpuint(len, <=, r->size - (tail - qatomic_read(&r->hdr->head)));
    for (i = 0; i < len; i++) {
        r->data[(tail + i) & (r->size - 1)] = ((const uint8_t *)buf)[i];
    }
    qatomic_store_release(&r->hdr->tail, tail + len);
    /* Tail before the flag, as the device sets the flag before the tail. */
    smp_mb();
    if (qatomic_xchg(&r->hdr->reader_sleeping, 0)) {
        g_assert_cmpint(send(r->sig, "", 1, MSG_NOSIGNAL), ==, 1);
    }
}

static void ring_rec(PeerRing *r, uint8_t type, uint8_t vc, const void *data,
                     uint32_t len)
{
    struct chpp_link_rec rec = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = type, .vc = vc,
        .len = cpu_to_le32(len),
    };

    ring_put(r, &rec, sizeof(rec));
    ring_put(r, data, len);
}

/* Take @len bytes from the device's ring (bounded wait). */
static void ring_get(PeerRing *r, void *buf, size_t len)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint32_t head = r->hdr->head;
    size_t i;

    while (qatomic_load_acquire(&r->hdr->tail) - head < len) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
    for (i = 0; i < len; i++) {
        ((uint8_t *)buf)[i] = r->data[(head + i) & (r->size - 1)];
    }
    qatomic_store_release(&r->hdr->head, head + len);
}

/* The next record in the device's ring: its type, its body in @buf. */
static uint8_t ring_read_rec(PeerRing *r, void *buf, uint32_t max)
{
    struct chpp_link_rec rec;

    ring_get(r, &rec, sizeof(rec));
    g_assert_cmphex(le32_to_cpu(rec.magic), ==, CHPP_LINK_MAGIC);
    g_assert_cmpuint(le32_to_cpu(rec.len), <=, max);
    ring_get(r, buf, le32_to_cpu(rec.len));
    return rec.type;
}

static bool link_flag(ChppDev *d, const char *key)
{
    QDict *rsp;
    bool v = qdict_get_bool(qdict_get_qdict(state_get(d, &rsp), "link"), key);

    qobject_unref(rsp);
    return v;
}

static void wait_link_flag(ChppDev *d, const char *key)
{
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (!link_flag(d, key)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* A device listening on a unix socket, as the other QEMU of a pair. */
static ChppDev *shm_node_start(Peer *p, const char *name, const char *more)
{
    g_autofree char *props = g_strdup_printf("id=hca,node-id=%u,chardev=lnk%s",
                                             NODE, more);
    g_autofree char *args = NULL;

    p->path = g_strdup_printf("%s/%s", tmpdir, name);
    p->fd = -1;
    args = g_strdup_printf("-chardev socket,id=lnk,path=%s,server=on,"
                           "wait=off", p->path);
    return chpp_start(props, args);
}

/* 64 frames the device drops (no such QP): a quarter of its grant. */
static void ring_junk_frames(PeerRing *r)
{
    ChppFrm f = peer_frm(CHPP_OP_SEND, 0, 77, 0x44, 0);
    GByteArray *ba = chpp_frm_build(&f);
    int i;

    for (i = 0; i < CHPP_LINK_CREDITS / 4; i++) {
        ring_rec(r, CHPP_LINK_FRAME, CHPP_VC_DATA, ba->data, ba->len);
    }
    g_byte_array_unref(ba);
}

/*
 * Both halves of the stream move to shared rings, as between two QEMUs:
 * what the peer writes to its ring is parsed (frames, a REFUSE), what the
 * device writes goes to its own (the credits those frames return), the
 * socket carries nothing after the offers, and descriptors sent with any
 * other record are closed at once.
 */
static void test_shm_rings(void)
{
    Peer p;
    ChppDev *d = shm_node_start(&p, "shm", "");
    PeerRing dev = {}, mine = {};
    struct chpp_link_credit c;
    uint8_t buf[CHPP_WIRE_FRAME_MAX];
    GPollFD pfd;
    int i, efd = eventfd(0, EFD_CLOEXEC);
    int stray[3] = { efd, efd, efd };
    uint8_t type;

    peer_open_shm(&p);
    /*
     * Sets of descriptors that cannot be an offer's, with CREDIT records
     * before the HELLO: closed, counted.
     */
    for (i = 0; i < 10; i++) {
        struct chpp_link_rec rec = {
            .magic = cpu_to_le32(CHPP_LINK_MAGIC), .type = CHPP_LINK_CREDIT,
        };

        peer_send_fds(&p, &rec, sizeof(rec), stray, i % 2 ? 3 : 1);
    }
    close(efd);
    wait_link_state(d, "stray-fds", 20);

    peer_take_ring(&p, &dev);
    ring_good(&mine);
    ring_offer(&p, &mine);
    wait_link_flag(d, "shm-rx");
    wait_link_flag(d, "shm-tx");
    g_assert(link_up(d));

    /* The device's answer to the peer's frames comes in its ring. */
    ring_junk_frames(&mine);
    while ((type = ring_read_rec(&dev, buf, sizeof(buf))) != CHPP_LINK_CREDIT) {
        g_assert_cmpuint(type, ==, CHPP_LINK_FRAME);
    }
    memcpy(&c, buf, sizeof(c));
    g_assert_cmpuint(le32_to_cpu(c.count), ==, CHPP_LINK_CREDITS / 4);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_RX_FRAMES), ==,
                     CHPP_LINK_CREDITS / 4);
    /* Nothing came on the socket since the device's offer. */
    pfd = (GPollFD) { .fd = p.fd, .events = G_IO_IN };
    g_assert_cmpint(g_poll(&pfd, 1, 0), ==, 0);

    /* A REFUSE in the ring is parsed like one on the socket. */
    {
        struct chpp_link_refuse rf = {
            .reason = cpu_to_le32(CHPP_LINK_REFUSE_PROTOCOL),
        };

        ring_rec(&mine, CHPP_LINK_REFUSE, 0, &rf, sizeof(rf));
    }
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_REFUSED), ==, 1);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 0);
    ring_free(&dev);
    ring_free(&mine);
    g_free(p.path);
    chpp_stop(d);
}

/*
 * A peer that moves to its ring, writes its REFUSE there and hangs up at
 * once: the device must hear it, whether its reader thread or the
 * chardev's hang-up gets there first (the records after the offer are in
 * memory the socket's last words do not hold).
 */
static void test_shm_last_words(void)
{
    Peer p;
    ChppDev *d = shm_node_start(&p, "shm-last", "");
    struct chpp_link_refuse rf = {
        .reason = cpu_to_le32(CHPP_LINK_REFUSE_PROTOCOL),
    };
    int i, n = 20;

    for (i = 0; i < n; i++) {
        PeerRing dev = {}, mine = {};

        peer_open_shm(&p);
        peer_take_ring(&p, &dev);
        ring_good(&mine);
        ring_offer(&p, &mine);
        ring_rec(&mine, CHPP_LINK_REFUSE, 0, &rf, sizeof(rf));
        close(p.fd);
        p.fd = -1;
        wait_counter(d, CHPP_CNT_LINK_REFUSED, i + 1);
        ring_free(&dev);
        ring_free(&mine);
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_REFUSED), ==, n);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 0);
    g_free(p.path);
    chpp_stop(d);
}

typedef enum {
    SHM_NO_FDS, SHM_THREE_FDS, SHM_UNSEALED, SHM_SHORT_MEMFD, SHM_HUGE_RING,
    SHM_PIPE, SHM_EVENTFD, SHM_LISTENING, SHM_DGRAM, SHM_BEFORE_HELLO,
    SHM_SECOND, SHM_BAD_TAIL, SHM_SOCKET_BYTES, SHM_BAD_HEAD, SHM_FLOOD,
    SHM_CASES
} ShmCase;

static const char *const shm_case_names[SHM_CASES] = {
    "no descriptors", "three descriptors (the withdrawn eventfd offer)",
    "memfd not sealed", "memfd shorter than its ring", "ring of 128 MiB",
    "a pipe for the signal socket", "an eventfd for the signal socket",
    "a listening socket for the signal socket",
    "a datagram socket for the signal socket", "offer before HELLO",
    "second offer, in the ring", "impossible tail",
    "bytes on the socket after the offer", "impossible head",
    "a flood of signals",
};

/* Give @fd instead of the signal socket's other end. */
static void ring_give(PeerRing *r, int fd)
{
    fd_close(&r->give);
    r->give = fd;
}

/* A unix stream socket that listens (bound to an automatic address). */
static int listening_socket(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert(fd >= 0);
    g_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa_family_t)) == 0);
    g_assert(listen(fd, 1) == 0);
    return fd;
}

/* Still a working device, and a working link; then stop it. */
static void shm_node_works(ChppDev *d, Peer *p)
{
    g_assert_cmphex(chpp_rd(d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    peer_open_shm(p);
    peer_hello(p, PEER, 64);
    wait_link(d, true);
    g_free(p->path);
    chpp_stop(d);
}

/* One connection that does @what wrong; the device must cut it. */
static void shm_bad(ChppDev *d, Peer *p, ShmCase what)
{
    PeerRing dev = {}, mine = {};
    struct chpp_link_shm m = {};
    static uint8_t flood[8192];
    int pipefd[2], sv[2];

    peer_open_shm(p);
    if (what != SHM_BEFORE_HELLO) {
        peer_take_ring(p, &dev);
    }
    switch (what) {
    case SHM_NO_FDS:
        peer_offer(p, PEER_RING, NULL, 0);
        break;
    case SHM_UNSEALED:
        ring_make(&mine, CHPP_LINK_SHM_DATA_OFF + PEER_RING, 0);
        ring_offer(p, &mine);
        break;
    case SHM_SHORT_MEMFD:
        ring_make(&mine, CHPP_LINK_SHM_DATA_OFF + PEER_RING / 2,
                  F_SEAL_SHRINK | F_SEAL_GROW);
        ring_offer(p, &mine);
        break;
    case SHM_HUGE_RING:
        ring_good(&mine);
        ring_offer_size(p, &mine, 128u << 20);
        break;
    case SHM_THREE_FDS:
        ring_good(&mine);
        peer_offer(p, PEER_RING, (int[]) { mine.mem, mine.give, mine.sig },
                   3);
        break;
    case SHM_PIPE:
        ring_good(&mine);
        g_assert(pipe(pipefd) == 0);
        close(pipefd[1]);
        ring_give(&mine, pipefd[0]);
        ring_offer(p, &mine);
        break;
    case SHM_EVENTFD:
        ring_good(&mine);
        ring_give(&mine, eventfd(0, EFD_CLOEXEC));
        ring_offer(p, &mine);
        break;
    case SHM_LISTENING:
        ring_good(&mine);
        ring_give(&mine, listening_socket());
        ring_offer(p, &mine);
        break;
    case SHM_DGRAM:
        ring_good(&mine);
        g_assert(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
        close(sv[1]);
        ring_give(&mine, sv[0]);
        ring_offer(p, &mine);
        break;
    case SHM_BEFORE_HELLO:
        ring_good(&mine);
        ring_offer(p, &mine);
        break;
    default:
        ring_good(&mine);
        ring_offer(p, &mine);
        wait_link_flag(d, "shm-rx");
        wait_link_flag(d, "shm-tx");
        break;
    }
    switch (what) {
    case SHM_SECOND:
        m.ring_size = cpu_to_le32(PEER_RING);
        m.data_off = cpu_to_le32(CHPP_LINK_SHM_DATA_OFF);
        ring_rec(&mine, CHPP_LINK_SHM, 0, &m, sizeof(m));
        break;
    case SHM_BAD_TAIL:
        /*
         * More bytes than the ring holds: copied, they would run past the
         * mapping (the device's own ring has room for 1 MiB).
         */
        qatomic_set(&mine.hdr->tail, 1u << 24);
        g_assert_cmpint(send(mine.sig, "", 1, MSG_NOSIGNAL), ==, 1);
        break;
    case SHM_SOCKET_BYTES:
        peer_credit(p, 0, 1);
        break;
    case SHM_BAD_HEAD:
        /* The device's ring claims to have been read past its tail. */
        qatomic_set(&dev.hdr->head, dev.hdr->tail + 12345);
        ring_junk_frames(&mine);
        break;
    case SHM_FLOOD:
        /* A genuine peer leaves a few signal bytes waiting, not 8 KiB. */
        g_assert_cmpint(send(mine.sig, flood, sizeof(flood), MSG_NOSIGNAL),
                        ==, sizeof(flood));
        break;
    default:
        break;
    }
    peer_hang_up(p);
    ring_free(&dev);
    ring_free(&mine);
}

/*
 * A peer's ring is checked before it is mapped (a memfd that could shrink
 * would fault QEMU, a pipe would block or spin its threads), and its
 * indexes before any byte moves: each mistake cuts the connection, is
 * counted as a bad record, and the next connection works.
 */
static void test_shm_bad_rings(void)
{
    Peer p;
    ChppDev *d = shm_node_start(&p, "shm-bad", "");
    uint64_t bad = 0;
    ShmCase i;

    for (i = 0; i < SHM_CASES; i++) {
        g_test_message("%s", shm_case_names[i]);
        shm_bad(d, &p, i);
        g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==,
                         ++bad);
    }
    /* Still a working device, and a working link. */
    shm_node_works(d, &p);
}

/* A connection whose two rings are up: the device's and the peer's. */
static void shm_rings_up(ChppDev *d, Peer *p, PeerRing *dev, PeerRing *mine)
{
    peer_open_shm(p);
    peer_take_ring(p, dev);
    ring_good(mine);
    ring_offer(p, mine);
    wait_link_flag(d, "shm-rx");
    wait_link_flag(d, "shm-tx");
}

/* The peer's GET of @len bytes at @va, through its ring (frame @f's QP). */
static void ring_get_req(PeerRing *mine, ChppFrm f, uint64_t va,
                         uint32_t rkey, uint32_t len)
{
    GByteArray *ba;

    f.va = va;
    f.rkey = rkey;
    f.msg_len = len;
    ba = chpp_frm_build(&f);
    ring_rec(mine, CHPP_LINK_FRAME, f.vc, ba->data, ba->len);
    g_byte_array_unref(ba);
}

/*
 * The signal sockets against a peer that misuses them.  (a) It leaves the
 * end it gave blocking and never reads its own, while it asks for a
 * wake-up before each batch of frames: the device's signals fill the
 * socket and are dropped, the device never blocks (its small SO_SNDBUF
 * bounds what such a peer pins).  (b) It closes its end of the device's
 * ring while the device waits for room: the end of the connection, as a
 * hang-up.  (c) It closes its own ring's end: the same.  Neither breaks
 * the protocol.  (d) It floods its end of the device's ring while the
 * device waits for room: a broken protocol, cut and counted.  The next
 * connection works.
 */
static void test_shm_signals(void)
{
    Peer p;
    ChppDev *d = shm_node_start(&p, "shm-signals", ",x-link-ring-size=16384");
    ChppNode a, peer = { .id = PEER, .qp = { .qpn = PEER_QPN } };
    PeerRing dev = {}, mine = {};
    uint8_t buf[CHPP_WIRE_FRAME_MAX];
    uint32_t len = 64 << 10;
    uint64_t mem = guest_alloc(&d->qs->alloc, len);
    uint32_t rkey;
    static uint8_t flood[8192];
    int i, waiting, rounds = 40;

    chpp_node_setup(&a, d, NODE, 0);
    rkey = chpp_create_mr(d, 0, CHPP_NODE_PD, mem, len, CHPP_MPT_REMOTE_READ);
    chpp_node_qp(&a, 2, 0x33, 6, 9);
    chpp_node_connect(&a, &peer, 14, 7);

    /* (a) */
    shm_rings_up(d, &p, &dev, &mine);
    for (i = 0; i < rounds; i++) {
        qatomic_set(&dev.hdr->reader_sleeping, 1);
        ring_junk_frames(&mine);
        while (ring_read_rec(&dev, buf, sizeof(buf)) != CHPP_LINK_CREDIT) {
            /* frames before the credit: none expected, none harmful */
        }
    }
    g_assert_cmpint(ioctl(dev.sig, FIONREAD, &waiting), ==, 0);
    g_test_message("%d of %d signals wait", waiting, rounds);
    g_assert_cmpint(waiting, >, 0);
    g_assert_cmpint(waiting, <, rounds);
    g_assert(link_up(d));

    /* (b): 64 KiB to answer through a 16 KiB ring nobody reads. */
    fd_close(&dev.sig);
    ring_get_req(&mine, peer_frm(CHPP_OP_READ_REQ, 0, 2, 0x33, QP_PSN), mem,
                 rkey, len);
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 0);
    ring_free(&dev);
    ring_free(&mine);

    /* (c) */
    shm_rings_up(d, &p, &dev, &mine);
    fd_close(&mine.sig);
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 0);
    ring_free(&dev);
    ring_free(&mine);

    /* (d): the same GET on a fresh QP, its room signals flooded. */
    shm_rings_up(d, &p, &dev, &mine);
    chpp_node_qp(&a, 3, 0x34, 6, 9);
    chpp_node_connect(&a, &peer, 14, 7);
    g_assert_cmpint(send(dev.sig, flood, sizeof(flood), MSG_NOSIGNAL), ==,
                    sizeof(flood));
    ring_get_req(&mine, peer_frm(CHPP_OP_READ_REQ, 0, 3, 0x34, QP_PSN), mem,
                 rkey, len);
    peer_hang_up(&p);
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_LINK_BAD_RECORDS), ==, 1);
    ring_free(&dev);
    ring_free(&mine);

    shm_node_works(d, &p);
}

/* The same through QEMU's chardev read path instead of the reader thread. */
static void test_chardev_path(gconstpointer test)
{
    node_props = ",link-thread=off";
    ((GTestFunc)test)();
    node_props = "";
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    tmpdir = g_dir_make_tmp("chpp-hostile-XXXXXX", NULL);
    g_assert(tmpdir);
    qtest_add_func("/chpp-hca/link-hostile/vf-teardown-returns-credits",
                   test_vf_teardown_returns_credits);
    qtest_add_func("/chpp-hca/link-hostile/spoofed-source",
                   test_spoofed_source);
    qtest_add_func("/chpp-hca/link-hostile/magic-guessing",
                   test_magic_guessing);
    qtest_add_func("/chpp-hca/link-hostile/zero-credit-duplicates",
                   test_zero_credit_duplicates);
    qtest_add_func("/chpp-hca/link-hostile/ack-owed-duplicates",
                   test_ack_owed_duplicates);
    qtest_add_func("/chpp-hca/link-hostile/requests-across-vcs",
                   test_requests_across_vcs);
    qtest_add_func("/chpp-hca/link-hostile/peer-never-reads",
                   test_peer_never_reads);
    qtest_add_func("/chpp-hca/link-hostile/refuse-text", test_refuse_text);
    qtest_add_func("/chpp-hca/link-hostile/mad-frames", test_mad_frames);
    qtest_add_func("/chpp-hca/link-hostile/mcast-frames", test_mcast_frames);
    qtest_add_func("/chpp-hca/link-hostile/shm/rings", test_shm_rings);
    qtest_add_func("/chpp-hca/link-hostile/shm/bad-rings", test_shm_bad_rings);
    qtest_add_func("/chpp-hca/link-hostile/shm/signals", test_shm_signals);
    qtest_add_func("/chpp-hca/link-hostile/shm/last-words",
                   test_shm_last_words);
    qtest_add_data_func("/chpp-hca/link-hostile/chardev-path/spoofed-source",
                        test_spoofed_source, test_chardev_path);
    qtest_add_data_func("/chpp-hca/link-hostile/chardev-path/magic-guessing",
                        test_magic_guessing, test_chardev_path);
    qtest_add_data_func("/chpp-hca/link-hostile/chardev-path/"
                        "zero-credit-duplicates",
                        test_zero_credit_duplicates, test_chardev_path);
    qtest_add_data_func("/chpp-hca/link-hostile/chardev-path/peer-never-reads",
                        test_peer_never_reads, test_chardev_path);
    qtest_add_data_func("/chpp-hca/link-hostile/chardev-path/refuse-text",
                        test_refuse_text, test_chardev_path);
    ret = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}
