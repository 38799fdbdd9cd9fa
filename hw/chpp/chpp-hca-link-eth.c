/*
 * chpp-hca: the link's Ethernet transport (docs/fabric.md).  The device is
 * a NIC on a QEMU netdev; each link record travels as one Ethernet frame
 * of EtherType CHPP_ETH_TYPE between the MACs chpp_eth_mac() gives nodes
 * (include/hw/chpp/chpp-wire.h).  This file only frames and unframes: a
 * shared segment carries traffic of other nodes and protocols, which is
 * ignored silently; the link protocol (chpp-hca-link.c) judges records.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include "chpp-hca-link-eth.h"

/* The Ethernet minimum, without FCS: shorter frames are padded. */
#define CHPP_ETH_MIN 60

struct ChppLinkEth {
    NICState *nic;
    uint16_t node;
    ChppEthRecordFn *record;
    ChppEthBadFn *bad;
    void *opaque;
    ChppEthStats stats;
};

static bool chpp_eth_is_ours(const uint8_t *mac, uint16_t *node)
{
    if (mac[0] != CHPP_ETH_MAC_OUI0 || mac[1] != CHPP_ETH_MAC_OUI1 ||
        mac[2] != CHPP_ETH_MAC_OUI2) {
        return false;
    }
    *node = mac[4] << 8 | mac[5];
    return true;
}

static ssize_t chpp_eth_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    ChppLinkEth *e = qemu_get_nic_opaque(nc);
    struct chpp_link_rec rec;
    ChppEthSrc src = {};
    uint16_t dst;
    uint32_t len;

    if (size < CHPP_ETH_HDR_SIZE ||
        lduw_be_p(buf + 12) != CHPP_ETH_TYPE) {
        e->stats.other_type++;
        return size;
    }
    src.bcast = is_broadcast_ether_addr(buf);
    if (!src.bcast && (!chpp_eth_is_ours(buf, &dst) || dst != e->node)) {
        e->stats.other_dst++;
        return size;
    }
    e->stats.rx++;
    src.dst_fn = buf[3];
    if (!chpp_eth_is_ours(buf + 6, &src.node)) {
        e->stats.bad++;
        e->bad(e->opaque, "source MAC is not a node's");
        return size;
    }
    src.src_fn = buf[9];
    if (size < CHPP_ETH_HDR_SIZE + sizeof(rec)) {
        e->stats.bad++;
        e->bad(e->opaque, "frame shorter than a record header");
        return size;
    }
    memcpy(&rec, buf + CHPP_ETH_HDR_SIZE, sizeof(rec));
    len = le32_to_cpu(rec.len);
    if (le32_to_cpu(rec.magic) != CHPP_LINK_MAGIC ||
        len > CHPP_WIRE_FRAME_MAX ||
        len > size - CHPP_ETH_HDR_SIZE - sizeof(rec)) {
        e->stats.bad++;
        e->bad(e->opaque, "bad record header or length");
        return size;
    }
    e->record(e->opaque, &src, &rec, buf + CHPP_ETH_HDR_SIZE + sizeof(rec),
              len);
    return size;
}

static NetClientInfo chpp_eth_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = chpp_eth_receive,
};

ChppLinkEth *chpp_link_eth_new(NICConf *conf, const char *id, uint16_t node,
                               MemReentrancyGuard *guard,
                               ChppEthRecordFn *record, ChppEthBadFn *bad,
                               void *opaque)
{
    ChppLinkEth *e = g_new0(ChppLinkEth, 1);

    e->node = node;
    e->record = record;
    e->bad = bad;
    e->opaque = opaque;
    chpp_eth_mac(conf->macaddr.a, node, 0);
    e->nic = qemu_new_nic(&chpp_eth_info, conf, "chpp-hca", id, guard, e);
    qemu_format_nic_info_str(qemu_get_queue(e->nic), conf->macaddr.a);
    return e;
}

void chpp_link_eth_free(ChppLinkEth *e)
{
    if (e) {
        qemu_del_nic(e->nic);
        g_free(e);
    }
}

void chpp_link_eth_send(ChppLinkEth *e, uint16_t dst, uint8_t dst_fn,
                        uint8_t src_fn, bool bcast, uint8_t *buf, size_t len)
{
    uint8_t pad[CHPP_ETH_MIN] = {};

    if (bcast) {
        memset(buf, 0xff, 6);
    } else {
        chpp_eth_mac(buf, dst, dst_fn);
    }
    chpp_eth_mac(buf + 6, e->node, src_fn);
    stw_be_p(buf + 12, CHPP_ETH_TYPE);
    if (len < CHPP_ETH_MIN) {
        memcpy(pad, buf, len);
        buf = pad;
        len = CHPP_ETH_MIN;
    }
    e->stats.tx++;
    /* A full netdev queue drops: Ethernet may lose frames. */
    qemu_send_packet(qemu_get_queue(e->nic), buf, len);
}

const ChppEthStats *chpp_link_eth_stats(ChppLinkEth *e)
{
    return &e->stats;
}
