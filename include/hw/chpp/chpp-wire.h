/*
 * chpp-hca wire protocol: what two adapters (or an adapter and a packet
 * generator or a co-simulated RTL model) exchange, never what a guest sees.
 * The frame of a packet (the cHPP header of seed 004 figure 6, the
 * versioned extension, the payload) and the link protocol that carries
 * frames over a byte stream (records, HELLO, credits, REFUSE).
 *
 * The device model's wire and link code and the tests and fuzz targets
 * that build frames include this header; guests include only
 * chpp-hca-abi.h.  It depends only on fixed-width integer types.  Every
 * multi-byte field of the extension and the link records is little-endian;
 * the figure 6 header is four big-endian dwords.  docs/wire-format.md and
 * docs/link.md explain the semantics of everything defined here.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
 */
#ifndef CHPP_WIRE_H
#define CHPP_WIRE_H

#include <stdint.h>

#define CHPP_WIRE_ASSERT_SIZE(type, size) \
    _Static_assert(sizeof(type) == (size), #type " must be " #size " bytes")

/*
 * Wire format of a packet (docs/wire-format.md): the 16-byte cHPP header of
 * seed 004 figure 6, the 80-byte versioned extension, then the payload.
 * The loopback path and the link carry exactly these bytes.
 */
#define CHPP_WIRE_HDR_SIZE          16
#define CHPP_WIRE_EXT_VERSION       1
#define CHPP_WIRE_MAX_PAYLOAD       4096

/*
 * Virtual channels (docs/fabric.md, "Virtual channels"): a link has 1, 2
 * or 4 data VCs (NAP, PUT, all responses; the packets for node d on VC
 * d mod data VCs, "Dest-Mod") and one GET VC after them (index = data
 * VCs).  The default layout, one data VC: VC0 data, VC1 GET.  The
 * engine builds packets of a class (CHPP_VC_DATA or CHPP_VC_GET), routing
 * places them on a channel.
 */
#define CHPP_VC_DATA                0   /* NAP, PUT, all responses */
#define CHPP_VC_GET                 1   /* GET requests */
#define CHPP_DATA_VCS_MAX           4
#define CHPP_NUM_VCS                (CHPP_DATA_VCS_MAX + 1)

enum chpp_pkt_type {            /* header byte 2, bits 7:2 */
    CHPP_PKT_NAP    = 1,        /* SEND, SEND_IMM, NAP, UD sends */
    CHPP_PKT_PUT    = 2,        /* WRITE, WRITE_IMM, GET responses */
    CHPP_PKT_GET    = 3,        /* GET requests */
    CHPP_PKT_ATOMIC = 4,        /* atomic requests */
    CHPP_PKT_ACK    = 5,        /* ACK, NAK, atomic responses */
};

enum chpp_wire_op {
    CHPP_OP_SEND        = 0,
    CHPP_OP_SEND_IMM    = 1,
    CHPP_OP_NAP         = 2,
    CHPP_OP_WRITE       = 3,
    CHPP_OP_WRITE_IMM   = 4,
    CHPP_OP_READ_REQ    = 5,
    CHPP_OP_READ_RESP   = 6,
    CHPP_OP_ATOMIC_CS   = 7,
    CHPP_OP_ATOMIC_FA   = 8,
    CHPP_OP_ACK         = 9,
    CHPP_OP_NAK         = 10,
    CHPP_OP_ATOMIC_ACK  = 11,
    CHPP_OP_MAX         = CHPP_OP_ATOMIC_ACK,
};

#define CHPP_WIRE_F_FIRST           (1u << 0)   /* first packet of message */
#define CHPP_WIRE_F_LAST            (1u << 1)   /* last packet of message */
#define CHPP_WIRE_F_ACK_REQ         (1u << 2)   /* responder must ACK */
#define CHPP_WIRE_F_SOLICITED       (1u << 3)
#define CHPP_WIRE_F_IMM             (1u << 4)   /* imm valid */
#define CHPP_WIRE_F_INV             (1u << 5)   /* SEND_INV: free rkey */
#define CHPP_WIRE_F_MASK            0x3fu

enum chpp_wire_syndrome {       /* NAK reasons */
    CHPP_NAK_PSN_SEQ    = 0,
    CHPP_NAK_INV_REQ    = 1,
    CHPP_NAK_REM_ACCESS = 2,
    CHPP_NAK_REM_OP     = 3,
    CHPP_NAK_RNR        = 4,
};

struct chpp_wire_ext {
    uint8_t  version;           /* CHPP_WIRE_EXT_VERSION */
    uint8_t  op;                /* enum chpp_wire_op */
    uint8_t  flags;             /* CHPP_WIRE_F_* */
    uint8_t  syndrome;          /* NAK: enum chpp_wire_syndrome */
    uint32_t psn;               /* 24 bits */
    uint32_t src_qpn;
    uint32_t dst_qpn;
    uint16_t src_node;
    uint16_t dst_node;
    uint8_t  src_vf;
    uint8_t  dst_vf;
    uint8_t  magic;             /* = header QP Magic */
    uint8_t  rnr_timer;         /* RNR NAK: IB timer code */
    uint32_t rkey;
    uint32_t imm;
    uint64_t va;                /* WRITE: target address of this payload */
    uint32_t msg_len;           /* bytes of the whole message / GET */
    uint32_t offset;            /* offset of this payload in the message */
    uint32_t payload_len;       /* bytes after the extension */
    uint32_t qkey;              /* UD */
    uint64_t atomic0;           /* swap/add; ATOMIC_ACK: original value */
    uint64_t atomic1;           /* compare */
    uint16_t mlid;              /* multicast (dst_qpn 0xffffff): the group */
    uint16_t reserved0;
    uint32_t reserved1;
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_wire_ext, 80);

/*
 * Shared-memory rings (docs/link.md, "Shared memory"): on a unix socket,
 * each side may move its half of the stream into a memfd it creates and
 * passes with a CHPP_LINK_SHM record (SCM_RIGHTS: the memfd, then one end
 * of a unix stream socket pair whose other end it keeps: a byte each way
 * wakes the other side, bytes wait or room came).  The record is the last
 * of that direction on the socket.  The memfd holds
 * this header, then the ring at data_off.  Indexes run free modulo 2^32 in
 * the host's byte order (both ends share one host); each line has one
 * writer but for the flags, which the other side clears.
 */
#define CHPP_LINK_SHM_DATA_OFF      4096
#define CHPP_LINK_SHM_FDS           2

struct chpp_link_shm {          /* body of a CHPP_LINK_SHM record */
    uint32_t ring_size;         /* a power of two, 16 KiB to 64 MiB */
    uint32_t data_off;          /* CHPP_LINK_SHM_DATA_OFF */
    uint32_t reserved[2];
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_link_shm, 16);

struct chpp_link_shm_hdr {
    uint32_t tail;              /* sender: bytes written */
    uint32_t writer_waiting;    /* sender sets when full; receiver clears */
    uint32_t pad0[14];
    uint32_t head;              /* receiver: bytes consumed */
    uint32_t reader_sleeping;   /* receiver sets before it sleeps */
    uint32_t pad1[14];
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_link_shm_hdr, 128);

/*
 * Link protocol (docs/link.md): on a byte stream (a QEMU chardev socket)
 * every message is a record: header, then len bytes.  FRAME records carry
 * one wire frame; HELLO opens the link; CREDIT returns frame credits.
 */
#define CHPP_LINK_MAGIC             0x4b4e4c43u /* "CLNK" in memory order */
#define CHPP_LINK_VERSION_MAJOR     1
#define CHPP_LINK_VERSION_MINOR     1
#define CHPP_LINK_CREDITS           256         /* frames per VC granted */
/* Ethernet: frames per (peer, VC) granted by default (docs/fabric.md) */
#define CHPP_LINK_ETH_CREDITS       16
/* Ethernet: peers one device keeps state for (docs/fabric.md, "Limits") */
#define CHPP_LINK_PEERS_MAX         64
/*
 * What this device tolerates from a peer (docs/link.md, "Memory bounds"
 * and "A hostile peer"); policy, not wire format.
 */
#define CHPP_LINK_BACKLOG_MAX       1024        /* frames waiting, all VCs */
#define CHPP_LINK_OUTQ_MAX          (1u << 20)  /* bytes waiting to be sent */
#define CHPP_LINK_MAGIC_GUESS_MAX   16  /* new wrong QP magics per window */
#define CHPP_LINK_MAGIC_WINDOW_MS   1000        /* virtual time */
/* Refusals logged: the first ones, then the 8th, 16th, 32nd... */
#define CHPP_LINK_REFUSE_LOG_FIRST  4

enum chpp_link_rec_type {
    CHPP_LINK_HELLO     = 1,
    CHPP_LINK_FRAME     = 2,
    CHPP_LINK_CREDIT    = 3,
    CHPP_LINK_REFUSE    = 4,
    CHPP_LINK_PROBE     = 5,    /* 1.1, Ethernet: sender blocked on credits */
    CHPP_LINK_SHM       = 6,    /* 1.1, unix socket: my bytes go to memory */
};

struct chpp_link_rec {
    uint32_t magic;             /* CHPP_LINK_MAGIC */
    uint8_t  type;              /* enum chpp_link_rec_type */
    uint8_t  vc;                /* FRAME, CREDIT: virtual channel */
    uint16_t seq;               /* Ethernet FRAME, PROBE: per (peer, vc) */
    uint32_t len;               /* bytes that follow */
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_link_rec, 12);

#define CHPP_LINK_CAP_GET_VC        (1u << 0)   /* separate GET channel */
/* bit 1: withdrawn (rings signalled with eventfds); never set, ignored */
#define CHPP_LINK_CAP_SHM           (1u << 2)   /* takes a CHPP_LINK_SHM */

/* HELLO flags (1.1, Ethernet unicast HELLOs; broadcast ones carry 0) */
#define CHPP_LINK_HELLO_F_NEW       (1u << 0)   /* I made fresh state for you */
#define CHPP_LINK_HELLO_F_ACK       (1u << 1)   /* answer to F_NEW */

struct chpp_link_hello {
    uint16_t version_major;
    uint16_t version_minor;
    uint16_t node_id;
    uint8_t  data_vcs;          /* 1.1: data VCs; 0 (1.0) means 1 */
    uint8_t  flags;             /* 1.1: CHPP_LINK_HELLO_F_* */
    uint32_t caps;              /* CHPP_LINK_CAP_* */
    uint32_t credits[2];        /* [0] each data VC, [1] the GET VC */
    uint32_t epoch;             /* 1.1, Ethernet: random per link start */
    uint32_t peer_epoch;        /* 1.1, Ethernet unicast: receiver's epoch */
    uint32_t reserved1;
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_link_hello, 32);

struct chpp_link_credit {
    uint32_t count;             /* frames the sender may send again */
    /*
     * 1.1, Ethernet only (len 8): frames credited on this (peer, VC) since
     * the pair came up, modulo 2^32; the sender uses the difference to the
     * last total it saw, so a lost CREDIT record loses no credit.
     */
    uint32_t total;
};

enum chpp_link_refusal {
    CHPP_LINK_REFUSE_VERSION    = 1,
    CHPP_LINK_REFUSE_SAME_NODE  = 2,
    CHPP_LINK_REFUSE_PROTOCOL   = 3,
    CHPP_LINK_REFUSE_VCS        = 4,    /* 1.1: data VC counts differ */
};

struct chpp_link_refuse {
    uint32_t reason;            /* enum chpp_link_refusal */
    char     text[60];          /* NUL-terminated explanation */
};
CHPP_WIRE_ASSERT_SIZE(struct chpp_link_refuse, 64);

/*
 * The link over Ethernet (docs/fabric.md): each record above travels as
 * the payload of one Ethernet frame of EtherType CHPP_ETH_TYPE (IEEE 802
 * local experimental EtherType 1), padded to the Ethernet minimum; the
 * record's len says where it ends.  Addresses are locally administered
 * unicast MACs 02:63:68:<fn>:<node 15:8>:<node 7:0> ("ch"): the sender's
 * as source, the receiving node's as destination (fn 0 for link records,
 * the frame's dst_vf/src_vf for FRAME), broadcast for HELLO discovery.
 * Captures of a chardev link use the same framing.
 */
#define CHPP_ETH_TYPE               0x88b5
#define CHPP_ETH_HDR_SIZE           14
#define CHPP_ETH_MAC_OUI0           0x02
#define CHPP_ETH_MAC_OUI1           0x63
#define CHPP_ETH_MAC_OUI2           0x68

static inline void chpp_eth_mac(uint8_t mac[6], uint16_t node, uint8_t fn)
{
    mac[0] = CHPP_ETH_MAC_OUI0;
    mac[1] = CHPP_ETH_MAC_OUI1;
    mac[2] = CHPP_ETH_MAC_OUI2;
    mac[3] = fn;
    mac[4] = node >> 8;
    mac[5] = node & 0xff;
}

#define CHPP_WIRE_FRAME_MAX \
    (CHPP_WIRE_HDR_SIZE + sizeof(struct chpp_wire_ext) + CHPP_WIRE_MAX_PAYLOAD)

#endif /* CHPP_WIRE_H */
