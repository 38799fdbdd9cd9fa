/*
 * chpp-hca: the link protocol's parts its Ethernet discovery
 * (chpp-hca-link-fabric.c) builds on; chpp-hca-link.c has them.  Main
 * loop, BQL held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_LINK_H
#define HW_CHPP_HCA_LINK_H

#include "qemu/bswap.h"
#include "chpp-hca.h"

/* Send to every node of the segment (Ethernet broadcast). */
#define CHPP_LINK_TO_ALL UINT32_MAX
/* Ethernet: a sender blocked on credits probes this often. */
#define CHPP_LINK_PROBE_MS 100
/* Ethernet: a peer's epoch silent this many HELLO periods may be replaced. */
#define CHPP_LINK_EPOCH_HELLOS 3

/* Frames granted per (peer, VC): what our HELLO announces. */
static inline uint32_t chpp_link_grant(ChppLink *l)
{
    return l->eth ? l->eth_credits : CHPP_LINK_CREDITS;
}

/* A queued frame (with its headroom): where it goes. */
static inline uint16_t chpp_frame_u16(GByteArray *f, size_t field)
{
    return lduw_le_p(f->data + CHPP_LINK_HEADROOM + CHPP_WIRE_HDR_SIZE +
                     field);
}

static inline uint8_t chpp_frame_u8(GByteArray *f, size_t field)
{
    return f->data[CHPP_LINK_HEADROOM + CHPP_WIRE_HDR_SIZE + field];
}

#define chpp_frame_dst(f) \
    chpp_frame_u16(f, offsetof(struct chpp_wire_ext, dst_node))

ChppPeer *chpp_peer_find(ChppLink *l, uint16_t node);
/* State for node @node, credits as its HELLO @h grants; NULL: table full. */
ChppPeer *chpp_link_peer_new(ChppHcaState *s, uint16_t node, uint32_t epoch,
                             const struct chpp_link_hello *h);
void chpp_link_peer_up(ChppHcaState *s, ChppPeer *p);
/* Everything of @p goes, as when a chardev connection closes. */
void chpp_link_peer_down(ChppHcaState *s, ChppPeer *p, const char *why);
/* Send a record (@buf: room for the headers, then the body) to node @to. */
void chpp_link_out(ChppHcaState *s, uint32_t to, uint8_t type, uint8_t vc,
                   uint16_t seq, GByteArray *buf);
void chpp_link_send_hello(ChppHcaState *s, uint32_t to, uint8_t flags,
                          uint32_t peer_epoch);
/* Can we talk to the sender of @h?  If not, refused, and false. */
bool chpp_link_hello_ok(ChppHcaState *s, uint32_t to,
                        const struct chpp_link_hello *h, uint32_t len);
void chpp_link_log_refusal(ChppHcaState *s, uint16_t node, const uint8_t *p,
                           uint32_t len);
/* Return the credits owed to @p (@now: even below the batch, even 0). */
void chpp_link_give_credits(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                            bool now);
void chpp_link_credit(ChppHcaState *s, ChppPeer *p, uint8_t vc,
                      const uint8_t *b, uint32_t len);
/* A FRAME record's @len bytes at @p, from @peer, on @vc. */
void chpp_link_frame(ChppHcaState *s, ChppPeer *peer, uint8_t vc,
                     const uint8_t *p, uint32_t len);

#endif
