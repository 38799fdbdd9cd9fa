/*
 * chpp-hca: interfaces between the engine's parts (requester, responder,
 * completer, wire).  Private to hw/chpp/chpp-hca-{engine,req,resp,comp,
 * wire}.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_ENGINE_H
#define HW_CHPP_HCA_ENGINE_H

#include "chpp-hca.h"

/* WQE indexes (producer, consumer) are 16-bit counters: the doorbell's PI. */
#define CHPP_IDX_MASK CHPP_UAR_DB_PI_MASK

/* GET and atomics: the WQEs that wait for response data. */
static inline bool chpp_wqe_is_rd_atomic(uint8_t op)
{
    return op == CHPP_WQE_GET || op == CHPP_WQE_ATOMIC_CS ||
           op == CHPP_WQE_ATOMIC_FA;
}

static inline uint32_t chpp_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & CHPP_PSN_MASK;
}

/* a - b as a signed distance in 24-bit PSN space. */
static inline int32_t chpp_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t chpp_mtu_bytes(uint8_t mtu)
{
    return 128u << MIN(MAX(mtu, 1), 5);
}

/* A packet: the header fields in host order plus its payload. */
typedef struct ChppPkt {
    uint8_t vc;                 /* virtual channel: CHPP_VC_* */
    uint8_t pkt_type;           /* enum chpp_pkt_type */
    uint8_t op;                 /* enum chpp_wire_op */
    uint8_t flags;              /* CHPP_WIRE_F_* */
    uint8_t syndrome;           /* enum chpp_wire_syndrome */
    uint8_t magic;
    uint8_t src_vf;
    uint8_t dst_vf;
    uint8_t rnr_timer;
    uint16_t src_node;
    uint16_t dst_node;
    uint32_t psn;
    uint32_t src_qpn;
    uint32_t dst_qpn;
    uint32_t rkey;
    uint32_t imm;
    uint32_t qkey;
    uint64_t va;
    uint32_t msg_len;
    uint32_t offset;
    uint64_t atomic0;
    uint64_t atomic1;
    uint32_t len;               /* payload bytes */
    uint8_t *payload;           /* len bytes, owned by the packet */
    uint8_t *frame;             /* chpp_wire_payload(): frame being built */
    GByteArray *keep;           /* received frame holding the payload */
    bool from_link;             /* came from the peer, not loopback */
} ChppPkt;

/* A parsed, validated send WQE. */
typedef struct ChppWqe {
    uint32_t idx;
    struct chpp_wqe_ctrl ctrl;  /* host order */
    struct chpp_wqe_ud ud;
    struct chpp_wqe_raddr raddr;
    struct chpp_wqe_atomic atomic;
    uint32_t num_sge;
    ChppSge sge[CHPP_MAX_SGE];
    const ChppMpt *sge_mr[CHPP_MAX_SGE];
    uint32_t inline_len;
    uint8_t inline_data[1 << CHPP_MAX_WQE_SHIFT];
    uint32_t length;            /* message bytes */
} ChppWqe;

/* A doorbell FIFO entry: QPN | SQ producer index << 16. */
#define CHPP_FIFO_QPN(e)    ((e) & 0xffffu)
#define CHPP_FIFO_PI(e)     ((e) >> 16)

/* chpp-hca-engine.c */
void chpp_engine_kick(ChppHcaState *s);

/* chpp-hca-req.c */
void chpp_req_run(ChppHcaState *s, ChppQp *qp);
bool chpp_wqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx, ChppWqe *w,
                    uint8_t *status, uint8_t *verr);
void chpp_req_retransmit(ChppHcaState *s, ChppQp *qp);
void chpp_req_flush(ChppHcaState *s, ChppQp *qp);
uint8_t chpp_cqe_send_opcode(uint8_t wqe_opcode);
/* Incoming state: the WQEs in flight of @qp (0 or chpp_refuse()). */
int chpp_req_check_load(ChppHcaState *s, ChppQp *qp);

/* chpp-hca-resp.c */
void chpp_resp_pump(ChppHcaState *s, ChppQp *qp);
void chpp_resp_packet(ChppHcaState *s, ChppPkt *pkt);
void chpp_resp_flush(ChppHcaState *s, ChppQp *qp);
bool chpp_rwqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx,
                     uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                     uint32_t *capacity);
/* Incoming state: the GET responses of @qp (0 or chpp_refuse()). */
int chpp_resp_check_load(ChppHcaState *s, ChppQp *qp);

/* chpp-hca-comp.c */
/* The send CQE of WQE sq_comp of @qp. */
bool chpp_send_cqe(ChppHcaState *s, ChppQp *qp, uint64_t wr_id,
                   uint8_t opcode, uint8_t status, uint8_t verr,
                   uint32_t byte_len);
void chpp_comp_packet(ChppHcaState *s, ChppPkt *pkt);
void chpp_comp_complete(ChppHcaState *s, ChppQp *qp, uint32_t upto_psn,
                        bool inclusive);
void chpp_comp_timeout(ChppHcaState *s, ChppQp *qp);

/*
 * Frames the functions of an adapter may have queued (loopback queues and
 * the link backlog) before senders pause: memory stays bounded whatever
 * the message sizes.
 */
#define CHPP_TX_QUEUE_MAX 256

/* chpp-hca-wire.c */
/* Room for one more data frame?  If not, the caller's QP waits. */
bool chpp_wire_room(ChppHcaState *s, ChppQp *qp);
/* A queued frame left the queues. */
void chpp_wire_dequeued(ChppHcaState *s);
void chpp_pkt_free(ChppPkt *pkt);
/*
 * Room for @len payload bytes inside the frame chpp_wire_send() will send
 * (pkt->frame): filling it, e.g. by DMA, saves a copy.  Set pkt's
 * destination first.  chpp_wire_send() takes the frame; g_free() it if
 * the packet is not sent.
 */
uint8_t *chpp_wire_payload(ChppHcaState *s, ChppPkt *pkt, uint32_t len);
/* Encode and send; false if the destination is unreachable. */
bool chpp_wire_send(ChppHcaState *s, ChppPkt *pkt);
/* Take one received frame (VC0 first); NULL when idle. */
ChppPkt *chpp_wire_next(ChppHcaState *s);
void chpp_wire_reset(ChppHcaState *s);
/* Frame bytes -> packet; NULL (counted) if malformed. */
ChppPkt *chpp_wire_decode(ChppHcaState *s, const uint8_t *buf, size_t len);
uint8_t *chpp_wire_encode(const ChppPkt *pkt, size_t *len);

#endif
