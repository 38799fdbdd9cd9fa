/*
 * chpp-hca link fuzz target: packets from a hostile peer.
 *
 * The generic fuzzer (generic-fuzz-chpp-hca) plays a hostile guest. This
 * target plays a hostile link peer: it boots q35 with one chpp-hca, brings
 * it up once through the HCR like a driver does (an EQ, two CQs, one memory
 * region, RC, UC and UD queue pairs in RTS with receive WQEs posted), and
 * then, in a forked child per input, feeds it frames taken from the input.
 * The frames enter where every received frame enters (the per-VC receive
 * queue read by chpp_route_next(), which decodes them with
 * chpp_wire_decode()) and go on to the responder and completer exactly as
 * loopback and link frames do. No device code is duplicated here.
 *
 * Input: a sequence of records, each one control byte then data:
 *   ctl & 3 == 0   raw frame: u16 length, then that many bytes (any content)
 *   ctl & 3 == 1   structured packet: 48 bytes of fields, then the payload;
 *                  encoded by the device's own chpp_wire_encode(), so the
 *                  header checks pass and the engine sees the fields
 *   ctl & 3 == 2   step the virtual clock to the next timer (ACK timeouts,
 *                  RNR waits, retransmissions)
 *   ctl & 3 == 3   the guest posts a work request (u8 qp, u8 op, u16 len)
 *                  and rings the SQ doorbell, so responses have something
 *                  to answer
 * bit 2 of ctl selects the virtual channel.
 *
 * A second target, chpp-hca-link-stream, plays the peer one layer lower:
 * the link is a chardev the harness feeds (a null chardev, so the device's
 * own writes vanish), brought up by a genuine HELLO from node 1, and every
 * input is bytes of the connection's record stream, parsed by the link's
 * record parser (chpp-hca-link.c: headers, HELLO, CREDIT, FRAME, REFUSE,
 * credit accounting) before the frames reach the same decoder and engine.
 * The queue pairs are connected to node 1 over that link.  Same input
 * format, except:
 *   ctl & 3 == 0   raw stream bytes: u16 length, then that many bytes
 *   ctl & 3 == 1   the structured packet, sent as a FRAME record
 *
 * A third target, chpp-hca-link-eth, plays a node of an Ethernet segment
 * (docs/fabric.md): the device's link is a netdev (a hub port the harness
 * sends from), node 1 met it through the HELLO handshake (unicast NEW with
 * the device's epoch, answered with ACK), and every input is Ethernet
 * frames into the device's NIC: MAC checks, the per-pair records (HELLO
 * with epochs and flags, CREDIT, PROBE, REFUSE, FRAME with sequence
 * numbers) and then the same decoder and engine.  Same input format,
 * except:
 *   ctl & 3 == 0   record bytes (header and body) behind a valid Ethernet
 *                  header from node 1 to node 0; with bit 3 of ctl set, a
 *                  whole Ethernet frame as it is (any MACs, any EtherType)
 *   ctl & 3 == 1   the structured packet, sent as a FRAME record with the
 *                  next sequence number of its channel and MACs naming its
 *                  functions
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "qom/object.h"
#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/pci-pc.h"
#include "tests/qtest/libqos/malloc-pc.h"
#include "tests/qtest/chpp-hca-qtest.h"
#include "chardev/char.h"
#include "net/net.h"
#include "hw/chpp/chpp-hca-datapath.h"
#include "hw/chpp/chpp-hca-link.h"
#include "hw/chpp/chpp-wire.h"
#include "fuzz.h"
#include "fork_fuzz.h"

#define LF_NUM_QPS  4       /* num-qps in lf_cmdline() */
#define LF_UAR      1
#define LF_PD       1
#define LF_SCQ      0
#define LF_RCQ      1
#define LF_CQ_SIZE  64
#define LF_LOG_WQ   4
#define LF_STRIDE   9
#define LF_BUF_LEN  (64 * 1024)
#define LF_NODE     0
#define LF_PEER     1       /* chpp-hca-link-stream: the node at the link */
#define LF_ETH_MIN  60      /* Ethernet's shortest frame, without FCS */

static const uint8_t lf_qp_type[LF_NUM_QPS] = {
    CHPP_QPT_RC, CHPP_QPT_RC, CHPP_QPT_UC, CHPP_QPT_UD,
};
/* RC 0 <-> 1, UC 2 -> itself, UD 3 */
static const uint32_t lf_qp_peer[LF_NUM_QPS] = { 1, 0, 2, 3 };

typedef struct LinkFuzz {
    ChppDev *d;
    Chardev *chr;           /* chpp-hca-link-stream: the link's chardev */
    NetClientState *nc;     /* chpp-hca-link-eth: the netdev we send from */
    uint16_t peer;          /* the node the queue pairs talk to */
    ChppHcaState *hca;
    uint64_t buf;
    uint32_t key;
    uint64_t sq[LF_NUM_QPS];
    uint32_t sq_pi[LF_NUM_QPS];
} LinkFuzz;

static LinkFuzz lf;

static uint8_t lf_magic(uint32_t qpn)
{
    return 0xa0 + qpn;
}

static void lf_qp_up(uint32_t qpn)
{
    uint8_t type = lf_qp_type[qpn];
    uint32_t peer = lf_qp_peer[qpn];
    uint32_t size = (1u << LF_LOG_WQ) << LF_STRIDE;
    uint64_t rq;
    struct chpp_qp_context c = {
        .type = type,
        .port = 1,
        .pd = cpu_to_le32(LF_PD),
        .send_cqn = cpu_to_le32(LF_SCQ),
        .recv_cqn = cpu_to_le32(LF_RCQ),
        .log_sq_size = LF_LOG_WQ,
        .log_sq_stride = LF_STRIDE,
        .log_rq_size = LF_LOG_WQ,
        .log_rq_stride = LF_STRIDE,
        .sq_log_page_size = 12,
        .rq_log_page_size = 12,
        .uar = cpu_to_le16(LF_UAR),
        .access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE |
                                    CHPP_ACCESS_REMOTE_READ |
                                    CHPP_ACCESS_REMOTE_ATOMIC),
        .qkey = cpu_to_le32(0x11111111),
        .magic = lf_magic(qpn),
        .path_mtu = 3,
        .dest_node = cpu_to_le32(lf.peer),
        .dest_qpn = cpu_to_le32(peer),
        .dest_magic = lf_magic(peer),
        .rq_psn = cpu_to_le32(0x100 + peer),
        .sq_psn = cpu_to_le32(0x100 + qpn),
        .max_dest_rd_atomic = 4,
        .max_rd_atomic = 4,
        .min_rnr_timer = 1,
        .timeout = 10,
        .retry_cnt = 3,
        .rnr_retry = 3,
    };
    uint32_t init = CHPP_QP_ATTR_PKEY_INDEX | CHPP_QP_ATTR_PORT |
                    (type == CHPP_QPT_UD ? CHPP_QP_ATTR_QKEY
                                         : CHPP_QP_ATTR_ACCESS_FLAGS);
    uint32_t rtr = 0, rts = CHPP_QP_ATTR_SQ_PSN;
    uint32_t i;

    lf.sq[qpn] = guest_alloc(&lf.d->qs->alloc, size);
    rq = guest_alloc(&lf.d->qs->alloc, size);
    qtest_memset(lf.d->qts, lf.sq[qpn], 0, size);
    qtest_memset(lf.d->qts, rq, 0, size);
    c.sq_mtt_base = cpu_to_le32(chpp_map_pages(lf.d, lf.sq[qpn], size));
    c.rq_mtt_base = cpu_to_le32(chpp_map_pages(lf.d, rq, size));
    g_assert_cmphex(chpp_modify_qp(lf.d, CHPP_CMD_RST2INIT_QP, qpn, init, &c),
                    ==, CHPP_STAT_OK);
    if (type != CHPP_QPT_UD) {
        rtr = CHPP_QP_ATTR_AV | CHPP_QP_ATTR_PATH_MTU |
              CHPP_QP_ATTR_DEST_QPN | CHPP_QP_ATTR_RQ_PSN;
    }
    if (type == CHPP_QPT_RC) {
        rtr |= CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC | CHPP_QP_ATTR_MIN_RNR_TIMER;
        rts |= CHPP_QP_ATTR_TIMEOUT | CHPP_QP_ATTR_RETRY_CNT |
               CHPP_QP_ATTR_RNR_RETRY | CHPP_QP_ATTR_MAX_QP_RD_ATOMIC;
    }
    g_assert_cmphex(chpp_modify_qp(lf.d, CHPP_CMD_INIT2RTR_QP, qpn, rtr, &c),
                    ==, CHPP_STAT_OK);
    g_assert_cmphex(chpp_modify_qp(lf.d, CHPP_CMD_RTR2RTS_QP, qpn, rts, &c),
                    ==, CHPP_STAT_OK);

    /* Receive WQEs, each one SGE of 4 KiB into the memory region. */
    for (i = 0; i < (1u << LF_LOG_WQ) - 1; i++) {
        uint8_t w[1 << LF_STRIDE] = {};

        stq_le_p(w, i);
        stl_le_p(w + 8, 1);
        stl_le_p(w + 16, 4096);
        stl_le_p(w + 20, lf.key);
        stq_le_p(w + 24, lf.buf + (i % 16) * 4096);
        qtest_memwrite(lf.d->qts, rq + ((uint64_t)i << LF_STRIDE), w,
                       sizeof(w));
    }
    chpp_rq_db(lf.d, LF_UAR, qpn, i);
}

static void lf_setup(QTestState *s)
{
    QOSState *qs = g_new0(QOSState, 1);
    ChppDev *d = g_new0(ChppDev, 1);
    uint32_t qpn;

    qs->qts = s;
    pc_alloc_init(&qs->alloc, s, ALLOC_NO_FLAGS);
    qs->pcibus = qpci_new_pc(s, &qs->alloc);
    d->qs = qs;
    d->qts = s;
    d->toggle = true;
    d->pdev = qpci_device_find(qs->pcibus, CHPP_TEST_DEVFN);
    g_assert(d->pdev);
    qpci_device_enable(d->pdev);
    qpci_msix_enable(d->pdev);
    d->bar0 = d->pdev->msix_table_bar;
    d->bar2 = qpci_iomap(d->pdev, CHPP_BAR_UAR, NULL);
    d->mbox_in = guest_alloc(&qs->alloc, CHPP_MAILBOX_SIZE);
    d->mbox_out = guest_alloc(&qs->alloc, CHPP_MAILBOX_SIZE);
    d->msi_page = guest_alloc(&qs->alloc, 4096);
    lf.d = d;
    lf.hca = CHPP_HCA(object_resolve_path_type("", TYPE_CHPP_HCA, NULL));
    g_assert(lf.hca);

    chpp_msix_route(d, 0);
    chpp_init_hca(d);
    chpp_create_eq(d, 0, 256, 0, true);
    g_assert_cmphex(chpp_map_eq(d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    chpp_create_cq(d, LF_SCQ, LF_CQ_SIZE, 0, LF_UAR);
    chpp_create_cq(d, LF_RCQ, LF_CQ_SIZE, 0, LF_UAR);
    lf.buf = guest_alloc(&qs->alloc, LF_BUF_LEN);
    qtest_memset(s, lf.buf, 0x5a, LF_BUF_LEN);
    lf.key = chpp_create_mr(d, 0, LF_PD, lf.buf, LF_BUF_LEN,
                            CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ |
                            CHPP_MPT_REMOTE_WRITE | CHPP_MPT_REMOTE_ATOMIC);
    for (qpn = 0; qpn < LF_NUM_QPS; qpn++) {
        lf_qp_up(qpn);
    }
    flush_events(s);
}

static void lf_pre_fuzz(QTestState *s)
{
    lf.peer = LF_NODE;
    lf_setup(s);
    counter_shm_init();
}

/*
 * Bytes from the peer, as the chardev delivers them: never more than the
 * device can take at once.
 */
static void lf_stream(QTestState *s, const uint8_t *p, size_t len)
{
    while (len) {
        int room = qemu_chr_be_can_write(lf.chr);
        size_t n;

        if (room <= 0) {
            flush_events(s);
            room = qemu_chr_be_can_write(lf.chr);
            if (room <= 0) {
                return;         /* a cut connection reads nothing */
            }
        }
        n = MIN(len, (size_t)room);
        qemu_chr_be_write(lf.chr, (uint8_t *)p, n);
        p += n;
        len -= n;
    }
    flush_events(s);
}

static void lf_stream_record(QTestState *s, uint8_t type, uint8_t vc,
                             const void *payload, uint32_t len)
{
    g_autofree uint8_t *rec = g_malloc(sizeof(struct chpp_link_rec) + len);
    struct chpp_link_rec h = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC),
        .type = type,
        .vc = vc,
        .len = cpu_to_le32(len),
    };

    memcpy(rec, &h, sizeof(h));
    memcpy(rec + sizeof(h), payload, len);
    lf_stream(s, rec, sizeof(h) + len);
}

static void lf_stream_pre_fuzz(QTestState *s)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR),
        .node_id = cpu_to_le16(LF_PEER),
        .caps = cpu_to_le32(CHPP_LINK_CAP_GET_VC),
        .credits = { cpu_to_le32(CHPP_LINK_CREDITS),
                     cpu_to_le32(CHPP_LINK_CREDITS) },
    };

    lf.peer = LF_PEER;
    lf_setup(s);
    lf.chr = qemu_chr_find("lnk");
    g_assert(lf.chr);
    qemu_chr_be_event(lf.chr, CHR_EVENT_OPENED);
    flush_events(s);
    lf_stream_record(s, CHPP_LINK_HELLO, 0, &h, sizeof(h));
    g_assert_cmphex(chpp_rd(lf.d, CHPP_REG_LINK), ==,
                    CHPP_LINK_UP | CHPP_LINK_ATTACHED |
                    LF_PEER << CHPP_LINK_PEER_SHIFT);
    counter_shm_init();
}

/* An Ethernet frame of the segment into the device's NIC, as it is. */
static void lf_eth(QTestState *s, const uint8_t *frame, size_t len)
{
    qemu_send_packet(lf.nc, frame, len);
    flush_events(s);
}

/* Bytes from node 1's function @src_fn to node 0's @dst_fn, as a frame. */
static void lf_eth_from(QTestState *s, uint8_t dst_fn, uint8_t src_fn,
                        const void *p, size_t len)
{
    size_t flen = MAX(CHPP_ETH_HDR_SIZE + len, LF_ETH_MIN);
    g_autofree uint8_t *f = g_malloc0(flen);

    chpp_eth_mac(f, LF_NODE, dst_fn);
    chpp_eth_mac(f + 6, LF_PEER, src_fn);
    stw_be_p(f + 12, CHPP_ETH_TYPE);
    memcpy(f + CHPP_ETH_HDR_SIZE, p, len);
    lf_eth(s, f, flen);
}

/* A record from node 1's function @src_fn to node 0's @dst_fn. */
static void lf_eth_record(QTestState *s, uint8_t type, uint8_t vc,
                          uint16_t seq, uint8_t dst_fn, uint8_t src_fn,
                          const void *body, uint32_t len)
{
    g_autofree uint8_t *rec = g_malloc(sizeof(struct chpp_link_rec) + len);
    struct chpp_link_rec r = {
        .magic = cpu_to_le32(CHPP_LINK_MAGIC),
        .type = type,
        .vc = vc,
        .seq = cpu_to_le16(seq),
        .len = cpu_to_le32(len),
    };

    memcpy(rec, &r, sizeof(r));
    memcpy(rec + sizeof(r), body, len);
    lf_eth_from(s, dst_fn, src_fn, rec, sizeof(r) + len);
}

static void lf_eth_pre_fuzz(QTestState *s)
{
    struct chpp_link_hello h = {
        .version_major = cpu_to_le16(CHPP_LINK_VERSION_MAJOR),
        .version_minor = cpu_to_le16(CHPP_LINK_VERSION_MINOR),
        .node_id = cpu_to_le16(LF_PEER),
        .flags = CHPP_LINK_HELLO_F_NEW,
        .caps = cpu_to_le32(CHPP_LINK_CAP_GET_VC),
        .credits = { cpu_to_le32(CHPP_LINK_CREDITS),
                     cpu_to_le32(CHPP_LINK_CREDITS) },
        .epoch = cpu_to_le32(0x5eed),
    };

    lf.peer = LF_PEER;
    lf_setup(s);
    lf.nc = qemu_find_netdev("n0");
    g_assert(lf.nc);
    /* Node 1 heard the device's broadcast: NEW with its epoch. */
    h.peer_epoch = cpu_to_le32(lf.hca->link.epoch);
    lf_eth_record(s, CHPP_LINK_HELLO, 0, 0, 0, 0, &h, sizeof(h));
    g_assert_cmphex(chpp_rd(lf.d, CHPP_REG_LINK), ==,
                    CHPP_LINK_UP | CHPP_LINK_ATTACHED |
                    LF_PEER << CHPP_LINK_PEER_SHIFT);
    counter_shm_init();
}

/* Hand one frame to the device as if the wire had delivered it. */
static void lf_inject(QTestState *s, unsigned vc, uint8_t *frame, size_t len)
{
    if (lf.chr) {
        lf_stream_record(s, CHPP_LINK_FRAME, vc, frame, len);
        g_free(frame);
        return;
    }
    if (lf.nc) {
        /* The MACs name the functions the frame names (or it is spoofed). */
        size_t ext = CHPP_WIRE_HDR_SIZE;
        uint8_t dst_fn = len > ext + offsetof(struct chpp_wire_ext, dst_vf) ?
                         frame[ext + offsetof(struct chpp_wire_ext, dst_vf)] :
                         0;
        uint8_t src_fn = len > ext + offsetof(struct chpp_wire_ext, src_vf) ?
                         frame[ext + offsetof(struct chpp_wire_ext, src_vf)] :
                         0;
        ChppPeer *p = chpp_peer_find(&lf.hca->link, LF_PEER);

        /* In sequence, whatever the raw records did to it. */
        lf_eth_record(s, CHPP_LINK_FRAME, vc, p ? p->rx_seq[vc] : 0, dst_fn,
                      src_fn, frame, len);
        g_free(frame);
        return;
    }
    g_queue_push_tail(lf.hca->wire_rx[vc % CHPP_NUM_VCS],
                      g_byte_array_new_take(frame, len));
    chpp_engine_kick(lf.hca);
    flush_events(s);
}

/* 48 bytes of fields from the input; the payload follows. */
static size_t lf_structured(QTestState *s, unsigned vc, const uint8_t *p,
                            size_t left)
{
    uint8_t f[48] = {};
    ChppPkt pkt = {};
    uint8_t *frame;
    size_t flen, n = MIN(left, sizeof(f));
    uint32_t plen;

    memcpy(f, p, n);
    pkt.vc = vc;
    pkt.op = f[0] % (CHPP_OP_MAX + 1);
    pkt.flags = f[1] & CHPP_WIRE_F_MASK;
    pkt.syndrome = f[2] % 6;
    pkt.pkt_type = f[3] & 0x3f;
    pkt.dst_qpn = f[4] & 0x80 ? ldl_le_p(f + 8) : f[4] % LF_NUM_QPS;
    pkt.src_qpn = f[5] & 0x80 ? ldl_le_p(f + 12) : f[5] % LF_NUM_QPS;
    /* PSN near what the QP expects unless asked for a raw one. */
    pkt.psn = f[6] & 0x80 ? ldl_le_p(f + 16) & CHPP_PSN_MASK
                          : 0x100 + (pkt.src_qpn & 3) + (int8_t)f[7];
    pkt.psn &= CHPP_PSN_MASK;
    pkt.magic = f[6] & 0x40 ? f[20] : lf_magic(pkt.dst_qpn % LF_NUM_QPS);
    pkt.dst_node = f[6] & 0x20 ? lduw_le_p(f + 22) : LF_NODE;
    pkt.src_node = lf.peer;
    pkt.src_vf = f[21] & 7;
    pkt.dst_vf = f[21] >> 4 & 7;
    pkt.rnr_timer = f[24];
    pkt.rkey = f[25] & 0x80 ? ldl_le_p(f + 26) : lf.key;
    pkt.va = f[25] & 0x40 ? ldq_le_p(f + 30)
                          : lf.buf + lduw_le_p(f + 30) % LF_BUF_LEN;
    pkt.msg_len = f[25] & 0x20 ? ldl_le_p(f + 38) : lduw_le_p(f + 38) % 8192;
    pkt.offset = f[25] & 0x10 ? ldl_le_p(f + 42) : 0;
    pkt.imm = f[46];
    pkt.qkey = f[25] & 0x08 ? 0x11111111 : f[47];
    pkt.atomic0 = ldq_le_p(f + 8);
    pkt.atomic1 = ldq_le_p(f + 16);
    plen = MIN(left - n, lduw_le_p(f + 38) % (CHPP_WIRE_MAX_PAYLOAD + 1));
    pkt.len = plen;
    pkt.payload = plen ? g_memdup2(p + n, plen) : NULL;
    frame = chpp_wire_encode(&pkt, &flen);
    g_free(pkt.payload);
    lf_inject(s, vc, frame, flen);
    return n + plen;
}

static void lf_post(QTestState *s, const uint8_t *a)
{
    static const uint8_t ops[] = {
        CHPP_WQE_SEND, CHPP_WQE_SEND_IMM, CHPP_WQE_NAP, CHPP_WQE_PUT,
        CHPP_WQE_PUT_IMM, CHPP_WQE_GET, CHPP_WQE_ATOMIC_CS,
        CHPP_WQE_ATOMIC_FA,
    };
    uint32_t qpn = a[0] % LF_NUM_QPS;
    uint8_t op = ops[a[1] % ARRAY_SIZE(ops)];
    uint32_t len = lduw_le_p(a + 2) % 8192;
    uint8_t w[1 << LF_STRIDE] = {};
    uint32_t pos = 16, slot = lf.sq_pi[qpn] & ((1u << LF_LOG_WQ) - 1);

    if (op == CHPP_WQE_ATOMIC_CS || op == CHPP_WQE_ATOMIC_FA) {
        len = 8;
    }
    w[0] = op;
    w[1] = CHPP_WQE_SIGNALED;
    w[2] = 1;
    stq_le_p(w + 8, lf.sq_pi[qpn]);
    if (lf_qp_type[qpn] == CHPP_QPT_UD) {
        stl_le_p(w + pos, lf.peer);
        stl_le_p(w + pos + 4, qpn);
        stl_le_p(w + pos + 8, 0x11111111);
        w[pos + 13] = lf_magic(qpn);
        pos += 16;
    }
    if (op >= CHPP_WQE_PUT) {
        stq_le_p(w + pos, lf.buf + 32768);
        stl_le_p(w + pos + 8, lf.key);
        pos += 16;
    }
    if (op == CHPP_WQE_ATOMIC_CS || op == CHPP_WQE_ATOMIC_FA) {
        stq_le_p(w + pos, 1);
        pos += 16;
    }
    stl_le_p(w + pos, len);
    stl_le_p(w + pos + 4, lf.key);
    stq_le_p(w + pos + 8, lf.buf + 16384);
    qtest_memwrite(s, lf.sq[qpn] + ((uint64_t)slot << LF_STRIDE), w,
                   sizeof(w));
    lf.sq_pi[qpn] = (lf.sq_pi[qpn] + 1) & 0xffff;
    chpp_sq_db(lf.d, LF_UAR, qpn, lf.sq_pi[qpn]);
    flush_events(s);
}

/*
 * A source-coverage build (scripts/build-qemu.sh --fuzz-cov) links the
 * profile runtime: write the child's counters before _Exit skips atexit.
 */
int __llvm_profile_write_file(void) __attribute__((weak));

static void lf_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    if (fork() == 0) {
        while (size) {
            uint8_t ctl = *data++;
            unsigned vc = (ctl >> 2) & 1;
            size_t n;

            size--;
            switch (ctl & 3) {
            case 0:
                if (size < 2) {
                    size = 0;
                    break;
                }
                n = MIN(size - 2, lduw_le_p(data) % (CHPP_WIRE_FRAME_MAX + 64));
                if (lf.nc && (ctl & 8)) {
                    lf_eth(s, data + 2, n);
                } else if (lf.nc) {
                    lf_eth_from(s, 0, 0, data + 2, n);
                } else if (lf.chr) {
                    lf_stream(s, data + 2, n);
                } else {
                    lf_inject(s, vc, g_memdup2(data + 2, n), n);
                }
                data += 2 + n;
                size -= 2 + n;
                break;
            case 1:
                n = lf_structured(s, vc, data, size);
                data += n;
                size -= n;
                break;
            case 2:
                qtest_clock_step_next(s);
                flush_events(s);
                break;
            case 3:
                if (size < 4) {
                    size = 0;
                    break;
                }
                lf_post(s, data);
                data += 4;
                size -= 4;
                break;
            }
        }
        if (__llvm_profile_write_file) {
            __llvm_profile_write_file();
        }
        _Exit(0);
    } else {
        flush_events(s);
        wait(0);
    }
}

/*
 * cmd-latency-ns: the helpers wait for commands by stepping the virtual
 * clock, and the in-process qtest runs no main-loop iteration on its own.
 */
static GString *lf_cmdline(FuzzTarget *t)
{
    return g_string_new(TARGET_NAME " -machine q35,accel=qtest -nodefaults "
                        "-display none -m 128M "
                        "-device chpp-hca,addr=04.0,num-qps=4,num-cqs=4,"
                        "num-eqs=2,num-mpts=16,num-pds=4,msix-vectors=4,"
                        "uar-pages=4,num-mtts=256,node-id=0,"
                        "cmd-latency-ns=1000");
}

static GString *lf_stream_cmdline(FuzzTarget *t)
{
    GString *cmd = lf_cmdline(t);

    g_string_append(cmd, ",chardev=lnk -chardev null,id=lnk");
    return cmd;
}

/* The link is a netdev: a hub port with the device as its only peer. */
static GString *lf_eth_cmdline(FuzzTarget *t)
{
    GString *cmd = lf_cmdline(t);

    g_string_append(cmd, ",netdev=n0 -netdev hubport,id=n0,hubid=0");
    return cmd;
}

static void register_chpp_hca_link_fuzz(void)
{
    static const FuzzTarget target = {
        .name = "chpp-hca-link",
        .description = "chpp-hca: frames from a hostile link peer into the "
                       "decoder, responder and completer",
        .get_init_cmdline = lf_cmdline,
        .pre_fuzz = lf_pre_fuzz,
        .fuzz = lf_fuzz,
    };
    static const FuzzTarget stream = {
        .name = "chpp-hca-link-stream",
        .description = "chpp-hca: a hostile link peer's byte stream into "
                       "the link's record parser, then the engine",
        .get_init_cmdline = lf_stream_cmdline,
        .pre_fuzz = lf_stream_pre_fuzz,
        .fuzz = lf_fuzz,
    };

    static const FuzzTarget eth = {
        .name = "chpp-hca-link-eth",
        .description = "chpp-hca: a hostile node's Ethernet frames into "
                       "the segment's protocol, then the engine",
        .get_init_cmdline = lf_eth_cmdline,
        .pre_fuzz = lf_eth_pre_fuzz,
        .fuzz = lf_fuzz,
    };

    fuzz_add_target(&target);
    fuzz_add_target(&stream);
    fuzz_add_target(&eth);
}

fuzz_target_init(register_chpp_hca_link_fuzz);
