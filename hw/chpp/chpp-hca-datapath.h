/*
 * chpp-hca: the data path's types (packets, WQEs, in-flight entries) and
 * the interfaces between its parts: requester, responder, completer, the
 * wire format and routing, and the engine that schedules them.  Private to
 * hw/chpp.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_DATAPATH_H
#define HW_CHPP_HCA_DATAPATH_H

#include "chpp-hca.h"

/* WQE indexes (producer, consumer) are 16-bit counters: the doorbell's PI. */
#define CHPP_IDX_MASK CHPP_UAR_DB_PI_MASK

/* GET and atomics: the WQEs that wait for response data. */
static inline bool chpp_wqe_is_rd_atomic(uint8_t op)
{
    return op == CHPP_WQE_GET || op == CHPP_WQE_ATOMIC_CS ||
           op == CHPP_WQE_ATOMIC_FA;
}

/* Local operations (ABI 1.6): executed on the adapter, no packet. */
static inline bool chpp_wqe_is_local(uint8_t op)
{
    return op == CHPP_WQE_REG_MR || op == CHPP_WQE_LOCAL_INV;
}

/* The opcodes whose WQEs have a remote-address segment. */
static inline bool chpp_wqe_has_raddr(uint8_t op)
{
    return op == CHPP_WQE_PUT || op == CHPP_WQE_PUT_IMM ||
           op == CHPP_WQE_GET || op == CHPP_WQE_ATOMIC_CS ||
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
    uint16_t mlid;              /* dst_qpn CHPP_MCAST_QPN: the group's LID */
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
    uint64_t rx_seq;            /* link: order of arrival on this function */
    int64_t due;                /* timing mode: virtual ns it arrives */
} ChppPkt;

/* A parsed, validated send WQE. */
typedef struct ChppWqe {
    uint32_t idx;
    struct chpp_wqe_ctrl ctrl;  /* host order */
    struct chpp_wqe_ud ud;
    struct chpp_wqe_raddr raddr;
    struct chpp_wqe_atomic atomic;
    struct chpp_wqe_reg reg;    /* REG_MR (ABI 1.6) */
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

/*
 * chpp-hca-timing.c: the timing model (docs/timing-model.md).  Nothing
 * but timing changes with it: the engine asks when a step completes.
 */
int64_t chpp_timing_now(void);
/* Timing mode on, and the VM not stopping (which finishes all at once)? */
bool chpp_timing_active(ChppHcaState *s);
/*
 * Schedule a send WQE starting now: @opcode, inline data or not, its
 * descriptor's @wqe_bytes and @len message bytes.  Takes the model's
 * resources (descriptor fetch, processing, data read) in turn.
 */
void chpp_timing_send(ChppHcaState *s, ChppTimingMsg *m, uint8_t opcode,
                      bool inl, uint32_t wqe_bytes, uint32_t len);
/* Schedule the responses of a GET of @len bytes that arrived now. */
void chpp_timing_get_resp(ChppHcaState *s, ChppTimingMsg *m, uint32_t len);
/*
 * Virtual ns at which bytes [0, @end) of @m are in the target's memory
 * (a GET/atomic request: when it reaches the responder).
 */
int64_t chpp_timing_due(ChppHcaState *s, const ChppTimingMsg *m,
                        uint32_t end);
/* Due times of an ACK/NAK and of an atomic's response sent now. */
int64_t chpp_timing_ack_due(ChppHcaState *s);
int64_t chpp_timing_atomic_due(ChppHcaState *s);
/* PF: when the next doorbell FIFO entry may be taken (INT64_MAX: idle). */
int64_t chpp_timing_intake(ChppHcaState *pf, bool fifo_busy);
void chpp_timing_intake_taken(ChppHcaState *pf);
/* PF: the model idle again (reset, VM resumed after finishing all). */
void chpp_timing_reset(ChppHcaState *pf);
void chpp_timing_set_bypass(ChppHcaState *pf, bool bypass);
/* Loopback frames held until due (per receiving function). */
void chpp_timing_rx_push(ChppHcaState *to, uint8_t vc, GByteArray *frame,
                         int64_t due);
/* The oldest frame due by @now (INT64_MAX: any), with its VC; or NULL. */
GByteArray *chpp_timing_rx_pop(ChppHcaState *s, int64_t now, uint8_t *vc);
int64_t chpp_timing_rx_next(ChppHcaState *s);

/* chpp-hca-sq.c: send WQEs, the in-flight list, send completions */
/* Copy WQE @idx of @qp's SQ and check it; false with *status, *verr. */
bool chpp_wqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx, ChppWqe *w,
                    uint8_t *status, uint8_t *verr);
/* Does a QP of @type (CHPP_QPT_*) take WQE opcode @op? */
bool chpp_wqe_opcode_ok(uint8_t type, uint8_t op);
uint8_t chpp_cqe_send_opcode(uint8_t wqe_opcode);
/* The send CQE of WQE sq_comp of @qp. */
bool chpp_send_cqe(ChppHcaState *s, ChppQp *qp, uint64_t wr_id,
                   uint8_t opcode, uint8_t status, uint8_t verr,
                   uint32_t byte_len);
/* In-flight entry @i (0 = oldest) of @qp. */
ChppInflight *chpp_sq_infl(ChppQp *qp, uint32_t i);
/* The oldest in-flight entry, or NULL. */
ChppInflight *chpp_sq_head(ChppQp *qp);
/* Drop the oldest entry: WQE sq_comp is complete. */
void chpp_sq_pop(ChppQp *qp);
/* The oldest entry completes successfully (CQE if signaled). */
void chpp_sq_success(ChppHcaState *s, ChppQp *qp);
/* The oldest entry completes with @status and the QP fails. */
void chpp_sq_fail_head(ChppHcaState *s, ChppQp *qp, uint8_t status,
                       uint8_t verr);
/*
 * Complete in-flight WQEs acknowledged by @psn (before it, or at it if
 * @inclusive), in order; a queued error reaching the head fails the QP.
 */
void chpp_sq_complete(ChppHcaState *s, ChppQp *qp, uint32_t psn,
                      bool inclusive);

/* chpp-hca-req.c */
void chpp_req_run(ChppHcaState *s, ChppQp *qp);
void chpp_req_retransmit(ChppHcaState *s, ChppQp *qp);
void chpp_req_flush(ChppHcaState *s, ChppQp *qp);
/* Timing mode, UC/UD: the QP timer says the oldest WQE is sent. */
void chpp_req_sent(ChppHcaState *s, ChppQp *qp);
/* The local ACK timeout to arm now (timing mode: after the last send). */
int64_t chpp_req_ack_wait(ChppHcaState *s, ChppQp *qp);
/* Incoming state: the WQEs in flight of @qp (0 or chpp_refuse()). */
int chpp_req_check_load(ChppHcaState *s, ChppQp *qp);

/* chpp-hca-resp.c */
void chpp_resp_pump(ChppHcaState *s, ChppQp *qp);
void chpp_resp_packet(ChppHcaState *s, ChppPkt *pkt);
void chpp_resp_flush(ChppHcaState *s, ChppQp *qp);
/* The end of an engine run: send the ACKs its requests owe, one per QP. */
void chpp_resp_acks_send(ChppHcaState *s);
bool chpp_rwqe_fetch(ChppHcaState *s, ChppQp *qp, uint32_t idx,
                     uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                     uint32_t *capacity);
/* Incoming state: the GET responses of @qp (0 or chpp_refuse()). */
int chpp_resp_check_load(ChppHcaState *s, ChppQp *qp);

/* chpp-hca-comp.c */
void chpp_comp_packet(ChppHcaState *s, ChppPkt *pkt);
void chpp_comp_timeout(ChppHcaState *s, ChppQp *qp);

/* chpp-hca-wire.c: the wire format */
void chpp_pkt_free(ChppPkt *pkt);
/* Encoded length of @pkt (headers + payload). */
size_t chpp_wire_len(const ChppPkt *pkt);
/* Encode into @buf, chpp_wire_len() bytes. */
void chpp_wire_encode_to(const ChppPkt *pkt, uint8_t *buf);
uint8_t *chpp_wire_encode(const ChppPkt *pkt, size_t *len);
/* Bytes before the frame: room for the link's record header. */
size_t chpp_wire_headroom(ChppHcaState *s, const ChppPkt *pkt);
/*
 * Room for @len payload bytes inside the frame chpp_route_send() will send
 * (pkt->frame): filling it, e.g. by DMA, saves a copy.  Set pkt's
 * destination first.  chpp_route_send() takes the frame; g_free() it if
 * the packet is not sent.
 */
uint8_t *chpp_wire_payload(ChppHcaState *s, ChppPkt *pkt, uint32_t len);
/* Frame bytes -> packet; NULL (counted) if malformed. */
ChppPkt *chpp_wire_decode(ChppHcaState *s, const uint8_t *buf, size_t len);
/* The same, the payload left in @keep's bytes (@keep referenced). */
ChppPkt *chpp_wire_decode_keep(ChppHcaState *s, const uint8_t *buf,
                               size_t len, GByteArray *keep);

/* chpp-hca-route.c: loopback or link, and received frames */
/* Encode and send; false if the destination is unreachable. */
bool chpp_route_send(ChppHcaState *s, ChppPkt *pkt);
/*
 * A multicast datagram the PF @s received from the link: a copy for each
 * of its VFs (loopback frames that keep the peer as sender).
 */
void chpp_route_fan_out(ChppHcaState *s, ChppPkt *pkt);
/* Take one received frame (VC0 first); NULL when idle. */
ChppPkt *chpp_route_next(ChppHcaState *s);
void chpp_route_reset(ChppHcaState *s);

#endif
