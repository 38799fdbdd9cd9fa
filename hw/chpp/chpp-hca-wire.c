/*
 * chpp-hca: the packet wire format, encoding and decoding.
 *
 * Every packet is encoded to the bytes of docs/wire-format.md and decoded
 * again before the receiver sees it, loopback (chpp-hca-route.c) as well
 * as link frames (chpp-hca-link.c), so loopback exercises exactly the
 * code a link peer (or a hostile one) will reach.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "chpp-hca-datapath.h"
#include "trace.h"

#define CHPP_EXT_SIZE sizeof(struct chpp_wire_ext)

void chpp_pkt_free(ChppPkt *pkt)
{
    if (!pkt) {
        return;
    }
    /* A decoded packet's payload is in its frame or its own allocation. */
    if (pkt->keep) {
        g_byte_array_unref(pkt->keep);
    } else if (pkt->payload != (uint8_t *)(pkt + 1)) {
        g_free(pkt->payload);
    }
    g_free(pkt);
}

/* Figure 6, DW2: narrow copies of the routing fields. */
static uint32_t chpp_hdr_dw2(const ChppPkt *pkt)
{
    uint32_t sflag = (pkt->flags & CHPP_WIRE_F_SOLICITED ? 1 : 0) |
                     (pkt->flags & CHPP_WIRE_F_IMM ? 2 : 0) |
                     (pkt->flags & CHPP_WIRE_F_ACK_REQ ? 4 : 0) |
                     (pkt->flags & CHPP_WIRE_F_LAST ? 8 : 0);

    return (pkt->src_node & 0xf) << 28 | (pkt->src_vf & 0x7) << 25 |
           (pkt->src_qpn & 0x7) << 22 | (pkt->dst_node & 0xf) << 18 |
           (pkt->dst_vf & 0x7) << 15 | (pkt->dst_qpn & 0x7) << 12 |
           sflag << 8 | ((pkt->va >> 32) & 0xff);
}

static void chpp_hdr_encode(const ChppPkt *pkt, uint8_t *h)
{
    uint32_t dws = DIV_ROUND_UP(pkt->len, 4);
    uint8_t first_be = pkt->len ? 0xf : 0;
    uint8_t last_be = 0;

    if (pkt->len > 4) {
        last_be = pkt->len % 4 ? (1u << (pkt->len % 4)) - 1 : 0xf;
    } else if (pkt->len) {
        first_be = (1u << pkt->len) - 1;
    }
    h[0] = (pkt->len ? 3 : 1) << 5;             /* Fmt: 4DW, with data? */
    h[1] = (pkt->vc & 0x7) << 4;                /* TC = virtual channel */
    h[2] = (pkt->pkt_type & 0x3f) << 2 | ((dws >> 8) & 0x3);
    h[3] = dws & 0xff;                          /* 1024 DW encodes as 0 */
    stw_be_p(h + 4, pkt->src_vf);               /* Requester ID */
    h[6] = pkt->magic;
    h[7] = last_be << 4 | first_be;
    stl_be_p(h + 8, chpp_hdr_dw2(pkt));
    stl_be_p(h + 12, (uint32_t)pkt->va & ~3u);
}

size_t chpp_wire_len(const ChppPkt *pkt)
{
    return CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE + pkt->len;
}

/* Encode into @buf, chpp_wire_len() bytes. */
void chpp_wire_encode_to(const ChppPkt *pkt, uint8_t *buf)
{
    struct chpp_wire_ext e;

    chpp_hdr_encode(pkt, buf);
    /* Built aside: behind a link record header @buf is not 8-aligned. */
    e = (struct chpp_wire_ext) {
        .version = CHPP_WIRE_EXT_VERSION,
        .op = pkt->op,
        .flags = pkt->flags,
        .syndrome = pkt->syndrome,
        .psn = cpu_to_le32(pkt->psn),
        .src_qpn = cpu_to_le32(pkt->src_qpn),
        .dst_qpn = cpu_to_le32(pkt->dst_qpn),
        .src_node = cpu_to_le16(pkt->src_node),
        .dst_node = cpu_to_le16(pkt->dst_node),
        .src_vf = pkt->src_vf,
        .dst_vf = pkt->dst_vf,
        .magic = pkt->magic,
        .rnr_timer = pkt->rnr_timer,
        .rkey = cpu_to_le32(pkt->rkey),
        .imm = cpu_to_le32(pkt->imm),
        .va = cpu_to_le64(pkt->va),
        .msg_len = cpu_to_le32(pkt->msg_len),
        .offset = cpu_to_le32(pkt->offset),
        .payload_len = cpu_to_le32(pkt->len),
        .qkey = cpu_to_le32(pkt->qkey),
        .atomic0 = cpu_to_le64(pkt->atomic0),
        .atomic1 = cpu_to_le64(pkt->atomic1),
        .mlid = cpu_to_le16(pkt->mlid),
    };
    memcpy(buf + CHPP_WIRE_HDR_SIZE, &e, sizeof(e));
    /* A payload built in place by chpp_wire_payload() is there already. */
    if (pkt->len && pkt->payload != buf + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE) {
        memcpy(buf + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE, pkt->payload,
               pkt->len);
    }
}

uint8_t *chpp_wire_encode(const ChppPkt *pkt, size_t *len)
{
    uint8_t *buf = g_malloc(chpp_wire_len(pkt));

    chpp_wire_encode_to(pkt, buf);
    *len = chpp_wire_len(pkt);
    return buf;
}

static ChppPkt *chpp_wire_bad(ChppHcaState *s, const char *why)
{
    chpp_count(s, CHPP_CNT_PKTS_DROPPED);
    chpp_count(s, CHPP_CNT_PKTS_MALFORMED);
    trace_chpp_hca_err_pkt_malformed(s->func, why);
    return NULL;
}

/*
 * Peers are untrusted: every field is checked before anything uses it.
 * With @keep (a frame buffer holding @buf) the packet reads its payload in
 * the frame and keeps a reference, instead of copying it.
 */
ChppPkt *chpp_wire_decode_keep(ChppHcaState *s, const uint8_t *buf,
                               size_t len, GByteArray *keep)
{
    struct chpp_wire_ext ext;
    const struct chpp_wire_ext *e = &ext;
    ChppPkt *pkt;
    uint8_t hdr[CHPP_WIRE_HDR_SIZE];
    uint32_t plen;

    if (len < CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE) {
        return chpp_wire_bad(s, "frame shorter than its headers");
    }
    /* Copied out: frames parsed in place need not be aligned. */
    memcpy(&ext, buf + CHPP_WIRE_HDR_SIZE, sizeof(ext));
    plen = le32_to_cpu(e->payload_len);
    if (e->version != CHPP_WIRE_EXT_VERSION) {
        return chpp_wire_bad(s, "unknown extension version");
    }
    if (plen > CHPP_WIRE_MAX_PAYLOAD ||
        len != CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE + plen) {
        return chpp_wire_bad(s, "payload length does not match the frame");
    }
    if (e->op > CHPP_OP_MAX || e->flags & ~CHPP_WIRE_F_MASK) {
        return chpp_wire_bad(s, "unknown opcode or flags");
    }

    pkt = g_malloc(sizeof(*pkt) + (keep ? 0 : plen));
    memset(pkt, 0, sizeof(*pkt));
    pkt->vc = (buf[1] >> 4) & 0x7;
    pkt->pkt_type = buf[2] >> 2;
    pkt->op = e->op;
    pkt->flags = e->flags;
    pkt->syndrome = e->syndrome;
    pkt->psn = le32_to_cpu(e->psn);
    pkt->src_qpn = le32_to_cpu(e->src_qpn);
    pkt->dst_qpn = le32_to_cpu(e->dst_qpn);
    pkt->src_node = le16_to_cpu(e->src_node);
    pkt->dst_node = le16_to_cpu(e->dst_node);
    pkt->src_vf = e->src_vf;
    pkt->dst_vf = e->dst_vf;
    pkt->magic = e->magic;
    pkt->rnr_timer = e->rnr_timer;
    pkt->rkey = le32_to_cpu(e->rkey);
    pkt->imm = le32_to_cpu(e->imm);
    pkt->va = le64_to_cpu(e->va);
    pkt->msg_len = le32_to_cpu(e->msg_len);
    pkt->offset = le32_to_cpu(e->offset);
    pkt->qkey = le32_to_cpu(e->qkey);
    pkt->atomic0 = le64_to_cpu(e->atomic0);
    pkt->atomic1 = le64_to_cpu(e->atomic1);
    pkt->mlid = le16_to_cpu(e->mlid);
    pkt->len = plen;

    /* The figure 6 header must agree with the extension. */
    chpp_hdr_encode(pkt, hdr);
    if (memcmp(hdr, buf, CHPP_WIRE_HDR_SIZE) || pkt->vc >= chpp_num_vcs(s) ||
        pkt->psn > CHPP_PSN_MASK) {
        g_free(pkt);
        return chpp_wire_bad(s, "header disagrees with the extension");
    }
    if (keep) {
        pkt->keep = keep;
        pkt->payload = plen ? keep->data + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE
                            : NULL;
    } else if (plen) {
        pkt->payload = (uint8_t *)(pkt + 1);
        memcpy(pkt->payload, buf + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE, plen);
    }
    return pkt;
}

ChppPkt *chpp_wire_decode(ChppHcaState *s, const uint8_t *buf, size_t len)
{
    return chpp_wire_decode_keep(s, buf, len, NULL);
}

/* Bytes before the frame: room for the link's record header. */
size_t chpp_wire_headroom(ChppHcaState *s, const ChppPkt *pkt)
{
    return pkt->dst_node == s->params.node_id ? 0 : CHPP_LINK_HEADROOM;
}

uint8_t *chpp_wire_payload(ChppHcaState *s, ChppPkt *pkt, uint32_t len)
{
    size_t room = chpp_wire_headroom(s, pkt);

    g_free(pkt->frame);
    pkt->len = len;
    pkt->frame = g_malloc(room + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE + len);
    pkt->payload = pkt->frame + room + CHPP_WIRE_HDR_SIZE + CHPP_EXT_SIZE;
    return pkt->payload;
}
