/*
 * chpp-hca: the link's Ethernet transport (chpp-hca-link-eth.c,
 * docs/fabric.md).  Everything runs in the main loop with the BQL.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_LINK_ETH_H
#define HW_CHPP_HCA_LINK_ETH_H

#include "net/net.h"
#include "hw/chpp/chpp-wire.h"

typedef struct ChppLinkEth ChppLinkEth;

/* Where a record came from, as its Ethernet header says. */
typedef struct ChppEthSrc {
    uint16_t node;              /* source MAC's node */
    uint8_t src_fn;             /* source MAC's function byte */
    uint8_t dst_fn;             /* destination MAC's function byte */
    bool bcast;                 /* sent to the broadcast address */
} ChppEthSrc;

/*
 * A record for this node, header checked (magic, length within the
 * frame and below the largest frame): @len bytes of body at @body.
 */
typedef void ChppEthRecordFn(void *opaque, const ChppEthSrc *src,
                             const struct chpp_link_rec *rec,
                             const uint8_t *body, uint32_t len);
/* A frame for this node whose record is malformed. */
typedef void ChppEthBadFn(void *opaque, const char *why);

/* Frames seen and ignored: not CHPP_ETH_TYPE, or for another node. */
typedef struct ChppEthStats {
    uint64_t rx;                /* frames handed to the device */
    uint64_t tx;
    uint64_t other_type;
    uint64_t other_dst;
    uint64_t bad;
} ChppEthStats;

/* The device becomes a NIC of node @node on the netdev of @conf. */
ChppLinkEth *chpp_link_eth_new(NICConf *conf, const char *id, uint16_t node,
                               MemReentrancyGuard *guard,
                               ChppEthRecordFn *record, ChppEthBadFn *bad,
                               void *opaque);
void chpp_link_eth_free(ChppLinkEth *e);

/*
 * Send the record at @buf + CHPP_ETH_HDR_SIZE (@len bytes in all, the
 * first CHPP_ETH_HDR_SIZE free for the Ethernet header) to function
 * @dst_fn of node @dst, or to every node if @bcast; @src_fn is ours.
 */
void chpp_link_eth_send(ChppLinkEth *e, uint16_t dst, uint8_t dst_fn,
                        uint8_t src_fn, bool bcast, uint8_t *buf, size_t len);

const ChppEthStats *chpp_link_eth_stats(ChppLinkEth *e);

#endif
