/*
 * chpp-hca: private state of the device model, shared by its files.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_H
#define HW_CHPP_HCA_H

#include "hw/pci/pci.h"
#include "hw/pci/pcie_sriov.h"
#include "qom/object.h"
#include "qemu/timer.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chardev/char-fe.h"
#include "net/net.h"
#include "hw/chpp/chpp-hca-abi.h"
#include "hw/chpp/chpp-wire.h"
#include "chpp-hca-timing.h"

#define TYPE_CHPP_HCA "chpp-hca"
OBJECT_DECLARE_SIMPLE_TYPE(ChppHcaState, CHPP_HCA)
/* The VFs pcie_sriov creates: a chpp-hca whose state the PF migrates. */
#define TYPE_CHPP_HCA_VF "chpp-hca-vf"

/* PSNs (and QPNs on the wire) are 24-bit. */
#define CHPP_PSN_MASK 0xffffffu

/* The EQ that no event type is mapped to. */
#define CHPP_EQN_NONE 0xff

typedef struct ChppHcaParams {
    uint16_t vendor_id;
    uint16_t device_id;
    uint16_t vf_device_id;
    uint16_t node_id;
    uint8_t data_vcs;           /* property vcs: 1, 2 or 4 */
    uint32_t num_qps;
    uint32_t num_cqs;
    uint32_t num_eqs;
    uint32_t num_mpts;
    uint32_t num_pds;
    uint32_t msix_vectors;
    uint32_t uar_pages;
    uint32_t num_mtts;
    uint32_t num_srqs;
    uint64_t cmd_latency_ns;
    uint64_t engine_delay_ns;
    uint8_t sriov_max_vfs;
    ChppTimingParams timing;    /* "timing", "timing-*" (VFs: the PF's) */
} ChppHcaParams;

/* Per-function resources and arbitration, kept by the PF. */
typedef struct ChppFnRes {
    uint32_t num_qps;
    uint32_t num_cqs;
    uint32_t num_eqs;
    uint32_t num_mpts;
    uint32_t num_pds;
    uint32_t num_mtts;
    uint32_t msix_vectors;
    uint8_t weight;
    uint8_t priority;
    uint32_t num_srqs;          /* ABI 1.5; "chpp-hca/srq-quotas" */
} ChppFnRes;

typedef struct ChppEq {
    bool hw;                /* owned by hardware (SW2HW_EQ done) */
    bool armed;
    bool overrun;
    bool error;
    uint64_t base;
    uint32_t nent;
    uint32_t pi;            /* producer index, 24-bit free running */
    uint32_t ci;            /* consumer index from the doorbell */
    uint16_t vector;
    uint32_t dropped;
} ChppEq;

/* Memory region (MPT entry); the MTT is a separate table. */
typedef struct ChppMpt {
    bool hw;
    uint32_t flags;             /* CHPP_MPT_* */
    uint32_t key;
    uint32_t pd;
    uint8_t log_page_size;
    uint64_t start;
    uint64_t length;
    uint32_t mtt_base;
    /*
     * ABI 1.6, CHPP_MPT_FAST_REG: the MTT entries reserved for it (the
     * "chpp-hca-function/frmr" subsection).  Free while length is 0.
     */
    uint32_t fr_max;
} ChppMpt;

/* A ring in guest memory reached through MTT entries (CQs, SQs, RQs). */
typedef struct ChppRing {
    uint32_t mtt_base;
    uint8_t log_page_size;
} ChppRing;

typedef struct ChppCq {
    bool hw;
    bool error;                 /* overrun or DMA error: stopped */
    uint8_t arm;                /* 0, CHPP_CQ_DB_ARM_NEXT or _ARM_SOL */
    ChppRing ring;
    uint32_t nent;
    uint32_t eqn;
    uint32_t pi;                /* 24-bit free running */
    uint32_t ci;
    uint16_t uar;
    uint32_t dropped;
    uint32_t refs;              /* QPs bound to it; rebuilt on load */
} ChppCq;

/*
 * A send WQE the requester started and has not completed yet.  Only what
 * is needed to match responses is kept; the WQE itself stays in the ring
 * (it belongs to the device until its completion) and is fetched again to
 * retransmit or to place GET/atomic results.
 */
#define CHPP_MAX_INFLIGHT 16

typedef struct ChppInflight {
    uint64_t wr_id;
    uint32_t wqe_idx;
    uint32_t first_psn;
    uint32_t last_psn;
    uint32_t length;            /* bytes of the message */
    uint32_t sent;              /* bytes packetized (GET/atomic: 0 or 1) */
    uint32_t done;              /* GET: response bytes placed so far */
    uint8_t opcode;             /* enum chpp_wqe_opcode */
    uint8_t flags;              /* CHPP_WQE_* */
    uint8_t status;             /* != 0: completes with this error */
    uint8_t vendor_err;
    ChppTimingMsg tm;           /* timing mode; not migrated */
} ChppInflight;

enum chpp_qp_timer {
    CHPP_TIMER_NONE = 0,
    CHPP_TIMER_RETRANSMIT,      /* local ACK timeout */
    CHPP_TIMER_RNR,             /* RNR NAK back-off */
    CHPP_TIMER_SENT,            /* timing mode, UC/UD: the head is sent */
};

/* A GET the responder is answering, packet by packet. */
typedef struct ChppReadResp {
    uint64_t va;
    uint32_t rkey;
    uint32_t psn;
    uint32_t len;
    uint32_t sent;
    ChppTimingMsg tm;           /* timing mode; not migrated */
} ChppReadResp;

/* A scatter/gather entry of a WQE. */
typedef struct ChppSge {
    uint32_t lkey;
    uint32_t length;
    uint64_t addr;
} ChppSge;

/* Engine state of a QP: requester, responder, timer.  Fixed size. */
typedef struct ChppQpEngine {
    /* requester (the next PSN to send is ChppQp.sq_psn) */
    uint32_t sq_comp;           /* next send WQE to complete */
    uint32_t sq_limit;          /* end of WQEs served doorbells announced */
    ChppInflight inflight[CHPP_MAX_INFLIGHT];
    uint32_t infl_head;
    uint32_t infl_count;
    uint32_t rd_atomic;         /* GET/atomics in flight */
    uint8_t retry_left;
    uint8_t rnr_left;
    bool sqd_notify;            /* post SQ_DRAINED when drained */
    uint8_t timer_kind;         /* enum chpp_qp_timer */
    int64_t timer_deadline;     /* QEMU_CLOCK_VIRTUAL ns */
    /* responder (the next PSN expected is ChppQp.rq_psn) */
    bool recv_active;           /* a SEND is spreading over packets */
    uint32_t recv_wqe_idx;
    uint32_t recv_len;          /* bytes of the message placed so far */
    /*
     * An SRQ's WQE recv_wqe_idx, copied at the message's first packet so
     * that its slot may be posted again at once (recv_cached)
     */
    bool recv_cached;
    uint32_t recv_num_sge;
    uint64_t recv_wr_id;
    ChppSge recv_sge[CHPP_MAX_SGE];
    bool nak_sent;              /* sequence NAK sent, not yet resolved */
    bool comm_est;              /* COMM_EST posted */
    ChppReadResp rd[CHPP_MAX_RD_ATOMIC];
    uint32_t rd_head;
    uint32_t rd_count;
    bool tx_pending;            /* waits for room in the frame queue */
    bool atomic_valid;          /* last atomic result, for duplicates */
    uint32_t atomic_psn;
    uint64_t atomic_orig;
    /*
     * timing mode: due time of the last request and response frame sent
     * (each stream stays in order); not migrated
     */
    int64_t tx_due[2];
    /*
     * The ACK this QP owes for the requests of the engine's current run
     * (chpp_resp_acks_send()); not migrated: every run sends its ACKs
     */
    bool ack_owed;
    bool ack_listed;            /* in ChppHcaState.acks_owed, this run */
    uint32_t ack_psn;
} ChppQpEngine;

/* Retry counts of a QP (retry_cnt, rnr_retry): 3 bits, 7 = no limit. */
#define CHPP_QP_MAX_RETRY       7

typedef struct ChppQp {
    uint8_t state;              /* enum chpp_qp_state */
    uint8_t type;               /* enum chpp_qp_type */
    uint8_t port;
    uint8_t path_mtu;
    uint32_t pd;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    ChppRing sq;
    ChppRing rq;
    uint8_t log_sq_size;
    uint8_t log_sq_stride;
    uint8_t log_rq_size;
    uint8_t log_rq_stride;
    uint16_t uar;
    uint32_t access_flags;
    uint32_t qkey;
    uint32_t dest_node;
    uint32_t dest_qpn;
    uint8_t dest_vf;
    uint8_t dest_magic;
    uint8_t magic;
    uint8_t flags;              /* CHPP_QP_FLAG_* */
    uint32_t sq_psn;            /* next PSN to send: set by modify, advanced */
    uint32_t rq_psn;            /* next PSN expected: likewise */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint16_t pkey_index;
    uint32_t sq_pi;             /* from doorbells, 16 bits used */
    uint32_t sq_ci;             /* next send WQE to start */
    uint32_t rq_pi;
    uint32_t rq_ci;             /* next receive WQE to use */
    ChppQpEngine eng;
    /* With CHPP_QP_FLAG_SRQ; migrated in "chpp-hca-function/srq". */
    uint32_t srqn;
} ChppQp;

/*
 * UD and the special QPs (ABI 1.6): SMI (QPN 0) and GSI (QPN 1) are UD QPs
 * that carry MADs (docs/management-datagrams.md).
 */
static inline bool chpp_qpt_special(uint8_t type)
{
    return type == CHPP_QPT_SMI || type == CHPP_QPT_GSI;
}

static inline bool chpp_qpt_ud(uint8_t type)
{
    return type == CHPP_QPT_UD || chpp_qpt_special(type);
}

/*
 * The subnet management agent's view of a port (chpp-hca-mad.c): what a
 * subnet manager reads and sets through PortInfo and the other SMP
 * attributes.  chpp_sma_defaults() gives the values without an SM.
 */
#define CHPP_SMA_NODE_DESC_LEN  64
#define CHPP_SMA_VLARB_BYTES    (4 * 64)
typedef struct ChppSma {
    uint64_t mkey;
    uint64_t gid_prefix;
    uint16_t lid;
    uint16_t sm_lid;
    uint32_t cap_mask;
    uint16_t mkey_lease;
    uint16_t pkey;              /* P_Key table entry 0 */
    uint8_t sm_sl;
    uint8_t lmc;                /* 0: the only LMC supported */
    uint8_t mkey_protect;
    uint8_t subnet_timeout;
    uint8_t neighbor_mtu;
    uint8_t op_vls;
    uint8_t vl_high_limit;
    uint8_t stall_hoq;          /* VLStallCount << 5 | HOQLife */
    uint8_t width_enabled;
    uint8_t speed_enabled;
    bool wait_sm;               /* INIT_PORT with CHPP_INIT_PORT_WAIT_SM */
    uint8_t sl2vl[8];
    uint8_t vlarb[CHPP_SMA_VLARB_BYTES];
    uint8_t node_desc[CHPP_SMA_NODE_DESC_LEN];
} ChppSma;

/* A multicast group of a function (chpp-hca-mcg.c): free if no QP. */
typedef struct ChppMcg {
    uint8_t mgid[16];
    uint16_t mlid;
    uint16_t num_qps;
    uint32_t qpn[CHPP_MCG_MAX_QPS];
} ChppMcg;
/*
 * A shared receive queue (chpp-hca-srq.c).  The receive WQEs of the QPs
 * attached to it; a QP that is filling one in several packets keeps its
 * index in eng.recv_wqe_idx, which is why the free index the device
 * writes for the driver is the oldest of those.
 */
typedef struct ChppSrq {
    uint8_t state;              /* enum chpp_res_state */
    uint8_t log_size;
    uint8_t log_stride;
    ChppRing ring;
    uint32_t pd;
    uint16_t uar;
    uint32_t limit;             /* armed limit, 0 = not armed */
    uint32_t pi;                /* from doorbells, 16 bits used */
    uint32_t ci;                /* next WQE to take */
    uint32_t free;              /* last written to the consumer record */
    uint32_t refs;              /* QPs attached; rebuilt on load */
} ChppSrq;

/*
 * An event raised where guest memory must not be written (an MMIO or
 * config space write), not posted yet: a refused doorbell's
 * DOORBELL_ERROR, or (PF only) a VF's VF_FLR.
 */
typedef struct ChppDbErr {
    uint64_t value;             /* the value written; VF_FLR: the VF */
    uint32_t uar;               /* CHPP_DB_ERR_UAR_NONE: BAR0 */
    uint32_t offset;
    uint8_t subtype;            /* CHPP_DB_ERR_* */
    uint8_t type;               /* CHPP_EVENT_DOORBELL_ERROR or _VF_FLR */
} ChppDbErr;

/* Refused doorbells, plus one VF_FLR per VF (FLRs of a VF coalesce). */
#define CHPP_DB_LOST_NONE       UINT32_MAX
#define CHPP_DEFERRED_DEPTH     (CHPP_DB_ERR_QUEUE_DEPTH + CHPP_MAX_VFS)

/*
 * One peer node of the link (chpp-hca-link.c): the connection's peer on a
 * chardev, any node met on the segment over Ethernet (docs/fabric.md).
 */
typedef struct ChppPeer {
    bool used;                  /* the slot holds a node */
    bool up;                    /* handshake done: frames flow */
    uint16_t node;
    uint32_t epoch;             /* Ethernet: the peer's link start */
    int64_t last_seen;          /* Ethernet: realtime ns, its last record */
    int64_t epoch_heard;        /* Ethernet: realtime ns, last HELLO of epoch */
    int64_t last_credit[CHPP_NUM_VCS];  /* realtime ns of its last CREDIT */
    uint32_t credits[CHPP_NUM_VCS];     /* frames we may still send */
    uint32_t owed[CHPP_NUM_VCS];        /* frames consumed, not credited */
    uint32_t queued[CHPP_NUM_VCS];      /* frames in functions' link_rx */
    uint16_t tx_seq[CHPP_NUM_VCS];      /* Ethernet: next FRAME's seq */
    uint16_t rx_seq[CHPP_NUM_VCS];      /* Ethernet: next seq expected */
    uint32_t credited[CHPP_NUM_VCS];    /* Ethernet: credits given, total */
    uint32_t credit_seen[CHPP_NUM_VCS]; /* Ethernet: peer's last total */
    /* Statistics of this peer (state property; not migrated) */
    uint64_t tx_frames;
    uint64_t rx_frames;
    uint64_t lost;              /* seq gaps: frames the segment lost */
    uint64_t late;              /* late or duplicate seq, dropped */
    uint64_t probes;            /* PROBE records sent */
} ChppPeer;

/* Statistics of one virtual channel (state property; not migrated) */
typedef struct ChppVcStats {
    uint64_t tx_frames;
    uint64_t tx_bytes;
    uint64_t credit_stalls;     /* times its head waited for credits */
    uint64_t hol_stalls;        /* ... with frames for others behind it */
    int64_t blocked_since;      /* realtime ns; 0: not blocked */
    bool hol;                   /* this stall counted as HOL already */
    uint64_t blocked_ns;        /* time its head waited, in all */
    uint32_t backlog_max;
} ChppVcStats;

/*
 * HELLOs of a segment dropped (chpp-hca-link-fabric.c, docs/fabric.md "A
 * hostile node"; state property; not migrated)
 */
typedef struct ChppFabricStats {
    uint64_t unmet;             /* from a node without state: no slot taken */
    uint64_t epoch_conflicts;   /* another epoch while the known one speaks */
    uint64_t table_full;        /* handshake done, no free slot */
} ChppFabricStats;

/*
 * A byte-stream link holds plain ACKs and credits up to this long for a
 * request to take them along (property link-ack-hold-us, docs/link.md).
 */
#define CHPP_LINK_ACK_HOLD_US   50
#define CHPP_LINK_ACK_HOLD_MAX_US 1000000      /* tests hold long */
/* Requests rung while software busy-polls wait while fewer bytes queue. */
#define CHPP_LINK_HOLD_REQ_BYTES (64 * 1024)

/*
 * Link to other adapters (chpp-hca-link.c): over a chardev byte stream to
 * one peer, or over a QEMU netdev (chpp-hca-link-eth.c) to a segment.
 */
typedef struct ChppLink {
    CharBackend chr;
    NICConf nic_conf;           /* property netdev */
    struct ChppLinkEth *eth;    /* Ethernet transport, NULL: chardev */
    uint32_t hello_ms;          /* property link-hello-ms */
    uint32_t lost_ms;           /* property link-peer-timeout-ms */
    uint32_t eth_credits;       /* property link-credits (Ethernet) */
    uint32_t epoch;             /* Ethernet: random per link start */
    ChppFabricStats fab;        /* Ethernet: HELLOs dropped */
    QEMUTimer *tick;            /* Ethernet: HELLO, peer loss, probes */
    int64_t next_hello;         /* realtime ns */
    bool use_thread;            /* property link-thread */
    bool use_shm;               /* property link-shm */
    GByteArray *shm_offer;      /* our CHPP_LINK_SHM record, queued */
    uint32_t ring_size;         /* property x-link-ring-size */
    char *capture_path;         /* property capture (chardev) */
    uint64_t capture_max;       /* property capture-max */
    struct ChppCapture *cap;    /* its file, NULL: no capture */
    bool up;                    /* at least one peer up */
    ChppPeer peers[CHPP_LINK_PEERS_MAX];  /* chardev: [0] only */
    ChppVcStats vcs[CHPP_NUM_VCS];
    GQueue *backlog[CHPP_NUM_VCS];      /* frames waiting for credits */
    GQueue *outq;               /* records (GByteArray) not yet written */
    uint32_t out_off;           /* bytes of the first already written */
    size_t out_bytes;           /* bytes in outq not yet written */
    guint watch;                /* chardev path: waiting to write */
    bool fd_watch;              /* reader-thread path: waiting to write */
    QEMUBH *tx_bh;              /* writes the records of a batch */
    bool tx_kicked;             /* tx_bh scheduled, not yet run */
    bool flush_coming;          /* the running path writes outq at its end */
    bool out_urgent;            /* outq holds more than ACKs and credits */
    uint32_t ack_hold_us;       /* property link-ack-hold-us */
    uint32_t poll_idle_us;      /* property x-link-poll-idle-us */
    uint32_t spin_us;           /* property link-spin-us */
    uint32_t spin_guest_us;     /* property x-link-spin-guest-us */
    uint64_t acks_held;         /* batches of ACKs held back */
    uint64_t acks_timed_out;    /* ... that the timer had to write */
    uint64_t requests_held;     /* batches of doorbells' requests held */
    int64_t doorbell_ns;        /* realtime of the last doorbell's flush */
    const struct ChppStreamOps *ops;    /* chpp-hca-link-stream.c */
    struct ChppLinkIo *io;      /* reader thread, NULL: chardev reads */
    QEMUBH *rx_bh;              /* parses what the reader thread read */
    uint32_t gen;               /* bumped when the connection goes */
    bool rx_paused;             /* backlog full: link_rx is not served */
    bool closing;               /* parsing a closed connection's last bytes */
    bool cutting;               /* this side disconnects the chardev */
    uint32_t refusals;          /* handshakes refused, either side, ever */
    bool outq_full;             /* outq reached CHPP_LINK_OUTQ_MAX */
    /* QP magic misses of the peer (chpp_link_magic_miss), any connection */
    uint64_t magic_last;        /* function, QP and magic of the last */
    int64_t magic_window;       /* start of the window, virtual ns */
    uint32_t magic_guesses;     /* new misses in the window */
    uint8_t *rx;                /* one record being reassembled/bounced */
    uint32_t rx_len;
    /* Fault injection (QOM properties, settable at run time) */
    uint32_t drop_next;
    uint32_t drop_every;
    uint32_t drop_percent;
    uint32_t corrupt_next;
    uint32_t dup_next;
    uint64_t delay_ns;
    uint32_t frame_seq;
    uint64_t rand_state;
    QEMUTimer *delay_timer;
    GQueue *delayed;            /* ChppDelayed, in send order */
} ChppLink;

struct ChppHcaState {
    PCIDevice parent_obj;

    MemoryRegion bar0;      /* container: registers + MSI-X */
    MemoryRegion regs;
    MemoryRegion bar2;      /* UAR pages */

    ChppHcaParams params;
    uint8_t func;               /* 0 = PF, n = VF n */
    ChppFnRes fn_res[1 + CHPP_MAX_VFS];  /* PF: quotas, arbitration */
    int32_t arb_current[1 + CHPP_MAX_VFS];

    /* Command interface */
    uint32_t hcr[CHPP_HCR_DWORDS];
    QEMUBH *cmd_bh;
    QEMUTimer *cmd_timer;

    bool hca_init;
    uint8_t port_state[CHPP_NUM_PORTS];
    bool port_open[CHPP_NUM_PORTS];     /* INIT_PORT done */
    ChppSma sma[CHPP_NUM_PORTS];        /* ABI 1.6: the SMA's port state */
    ChppMcg mcgs[CHPP_MAX_MCGS];        /* ABI 1.6: multicast groups */
    uint32_t scratch;
    uint32_t counters[CHPP_CNT_NUM];

    ChppEq eqs[CHPP_MAX_EQS];
    uint8_t event_eq[CHPP_EVENT_NUM_TYPES];  /* EQ per event type */

    /* Datapath resources, sized by the properties */
    ChppMpt *mpts;              /* num_mpts */
    uint64_t *mtt;              /* num_mtts entries */
    ChppCq *cqs;                /* num_cqs */
    ChppQp *qps;                /* num_qps */
    ChppSrq *srqs;              /* num_srqs */

    /* Doorbell FIFO and engine */
    uint32_t db_fifo[CHPP_DB_FIFO_DEPTH];     /* qpn | sq pi << 16 */
    uint32_t db_head;
    uint32_t db_count;
    QEMUBH *engine_bh;
    /* Events waiting to be posted (chpp-hca-db-error.c), in order */
    ChppDbErr db_err[CHPP_DEFERRED_DEPTH];
    uint32_t db_err_head;
    uint32_t db_err_count;
    uint32_t db_err_lost;       /* events dropped: the queue was full */
    /* QPs whose SQ doorbell the FIFO lost, not yet recovered (ABI 1.4) */
    uint8_t db_lost[CHPP_MAX_QPS / 8];
    uint32_t db_lost_qpn;       /* named by the unanswered event, or NONE */
    QEMUBH *db_err_bh;
    bool engine_kicked;         /* engine_bh scheduled, not yet run */
    bool engine_running;        /* chpp_engine_run() is on the stack */
    QEMUTimer *engine_timer;
    QEMUTimer **qp_timers;      /* num_qps, outside ChppQp: QP resets clear */
    uint32_t *acks_owed;        /* num_qps: QPs owing an ACK, this run */
    uint32_t n_acks_owed;
    GQueue *wire_rx[CHPP_NUM_VCS];  /* loopback frames per VC */
    GQueue *link_rx[CHPP_NUM_VCS];  /* decoded ChppPkt from the link per VC */
    uint64_t link_rx_seq;       /* the next link frame's ChppPkt.rx_seq */
    GQueue *timed_rx;           /* timing mode: loopback frames not due yet */
    ChppTimingModel timing;     /* PF: the timing model's resources */
    ChppLink link;
    bool engine_stopped;        /* VM stopped: do not touch guest memory */
    uint32_t tx_queued;         /* PF: frames queued, all functions */
    bool tx_blocked;            /* PF: a sender waits for room */
    VMChangeStateEntry *vmstate_change;
    bool dma_any_target;        /* x-dma-any-target: tests of teardown */
    bool gone;                  /* unrealized: code on the stack unwinds */

    /* PF, migration only (chpp-hca-vmstate.c) */
    uint8_t mig_num_vfs;        /* VFs the source had enabled */
    ChppHcaState *mig_vfs[CHPP_MAX_VFS];
    bool mig_sriov_loaded;
    bool mig_vfs_loaded;
};

/*
 * chpp-hca-base.c: what every file may call (docs/architecture.md).
 * A guest mistake: counted in CHPP_CNT_GUEST_ERRORS, traced, logged with
 * -d guest_errors.
 */
void G_GNUC_PRINTF(2, 3) chpp_guest_error(ChppHcaState *s, const char *fmt,
                                          ...);
/*
 * The same log line, not counted as a guest error: the detail of a
 * mistake whose consequence (a failed command, an error completion) is
 * the guest error.
 */
void G_GNUC_PRINTF(2, 3) chpp_guest_note(ChppHcaState *s, const char *fmt,
                                         ...);
/*
 * Hold @s while device code works on it: a DMA or interrupt it issues may
 * unrealize it (docs/security.md), and its state must outlive the code on
 * the stack.  Every bottom half and timer holds its device.
 */
void chpp_hold(ChppHcaState *s);
void chpp_release(ChppHcaState *s);
/* Run a timer's @fn(@opaque) held and behind @s's re-entrancy guard. */
void chpp_timer_call(ChppHcaState *s, void (*fn)(void *), void *opaque);
/* Fail the running command: a guest error; returns @status. */
uint8_t G_GNUC_PRINTF(3, 4) chpp_cmd_fail(ChppHcaState *s, uint8_t status,
                                          const char *fmt, ...);
/*
 * Refuse incoming state (error message, trace naming the field and its
 * value); returns -EINVAL.
 */
int G_GNUC_PRINTF(2, 3) chpp_refuse(ChppHcaState *s, const char *fmt, ...);

static inline void chpp_count(ChppHcaState *s, enum chpp_counter c)
{
    s->counters[c]++;
}

/* QP @qpn of @s, or NULL. */
static inline ChppQp *chpp_qp_lookup(ChppHcaState *s, uint32_t qpn)
{
    return qpn < s->params.num_qps ? &s->qps[qpn] : NULL;
}

/* @qp's responder takes packets and answers them: RTR, RTS, SQD, SQE. */
static inline bool chpp_qp_receives(const ChppQp *qp)
{
    return qp->state >= CHPP_QPS_RTR && qp->state <= CHPP_QPS_SQE;
}

static inline uint32_t chpp_qpn(ChppHcaState *s, const ChppQp *qp)
{
    return qp - s->qps;
}

/*
 * Upcalls: how a lower layer tells a higher one that something changed,
 * without calling up into it (docs/architecture.md).  chpp-hca-pci.c, at
 * the top, joins them to their handlers.
 */
typedef struct ChppUpcalls {
    /* chpp-hca-link.c -> chpp-hca-port.c: the link went up or down. */
    void (*link_changed)(ChppHcaState *s);
    /* chpp-hca-qp.c -> chpp-hca-engine.c: @qp left @old_state. */
    void (*qp_transition)(ChppHcaState *s, ChppQp *qp, uint8_t old_state);
    /* chpp-hca-vmstate.c -> chpp-hca-pci.c: a load set VF Enable. */
    void (*vfs_enabled)(ChppHcaState *pf);
    /*
     * chpp-hca-link-stream.c -> chpp-hca-engine.c: the reader's bottom
     * half parses records; if rx_begin says so, the engine serves what
     * they queued at rx_end, in the same run (no bottom half of its own).
     */
    bool (*rx_begin)(ChppHcaState *pf);
    void (*rx_end)(ChppHcaState *pf);
} ChppUpcalls;
extern const ChppUpcalls chpp_upcalls;

/*
 * @s as a PCI device and back, without QOM's checked casts: these run for
 * every packet, doorbell and poll, where the casts' type lookups cost
 * more than the work (4 % of a polling vCPU's time in ib_write_lat).
 * Every function of the adapter is a ChppHcaState.
 */
static inline PCIDevice *chpp_pci(ChppHcaState *s)
{
    return &s->parent_obj;
}

static inline ChppHcaState *chpp_of_pci(PCIDevice *dev)
{
    return container_of(dev, ChppHcaState, parent_obj);
}

/* The PF of @s's adapter (@s itself if it is the PF). */
static inline ChppHcaState *chpp_pf(ChppHcaState *s)
{
    PCIDevice *pf = pcie_sriov_get_pf(chpp_pci(s));

    return pf ? chpp_of_pci(pf) : s;
}

/* Virtual channels in use: the data VCs and the GET VC (their last). */
static inline unsigned chpp_num_vcs(ChppHcaState *s)
{
    return chpp_pf(s)->params.data_vcs + 1;
}

/*
 * Bound for walking the functions of @pf's adapter: the PF and its enabled
 * VFs (chpp_function() of any higher number is NULL).  The engine walks
 * them for every doorbell and poll: one look at NumVFs, not one per VF.
 * NumVFs is the guest's register (QEMU 10 reads it back while VF Enable
 * is set): never more than the arrays of 1 + CHPP_MAX_VFS hold.
 */
static inline unsigned chpp_num_functions(ChppHcaState *pf)
{
    return 1 + MIN(pcie_sriov_num_vfs(chpp_pci(pf)), CHPP_MAX_VFS);
}

/* Function @fn (0 = PF) of the adapter whose PF is @pf, if it exists. */
static inline ChppHcaState *chpp_function(ChppHcaState *pf, unsigned fn)
{
    PCIDevice *vf;

    if (fn == 0) {
        return pf;
    }
    if (fn >= chpp_num_functions(pf)) {
        return NULL;
    }
    vf = pcie_sriov_get_vf_at_index(chpp_pci(pf), fn - 1);
    if (!vf || !vf->qdev.realized || chpp_of_pci(vf)->gone) {
        return NULL;
    }
    return chpp_of_pci(vf);
}

/*
 * Schedule @s's engine (chpp-hca-engine.c runs it): how every layer says
 * "work arrived" without calling up into the engine.
 */
void chpp_engine_kick(ChppHcaState *s);
/* Timing mode: have the engine run at virtual time @when_ns at the latest. */
void chpp_engine_kick_at(ChppHcaState *s, int64_t when_ns);

/*
 * Frames the functions of an adapter may have queued (loopback queues and
 * the link backlog) before senders pause: memory stays bounded whatever
 * the message sizes.
 */
#define CHPP_TX_QUEUE_MAX 256
/* Room for one more data frame?  If not, the caller's QP waits. */
bool chpp_tx_room(ChppHcaState *s, ChppQp *qp);
/* A queued frame left the queues: senders resume when they half empty. */
void chpp_tx_dequeued(ChppHcaState *s);

/* chpp-hca-pci.c */
void chpp_hca_soft_reset(ChppHcaState *s);
void chpp_hca_vfs_enabled(ChppHcaState *pf);

/*
 * chpp-hca-dma.c: every DMA and MSI-X message of the device.  DMA reaches
 * guest RAM only; false (counted, logged) otherwise or on a failed access.
 */
bool chpp_dma_read(ChppHcaState *s, dma_addr_t addr, void *buf, dma_addr_t len);
bool chpp_dma_write(ChppHcaState *s, dma_addr_t addr, const void *buf,
                    dma_addr_t len);
/* Command mailboxes: false with *status set (BAD_MAILBOX, DMA_ERR). */
bool chpp_mailbox_read(ChppHcaState *s, uint64_t addr, void *buf,
                       size_t len, uint8_t *status);
bool chpp_mailbox_write(ChppHcaState *s, uint64_t addr, const void *buf,
                        size_t len, uint8_t *status);
/* Raise MSI-X @vector, unless masked or aimed at config space or a BAR. */
void chpp_irq(ChppHcaState *s, unsigned vector);

/*
 * chpp-hca-mr.c: memory regions, the MTT and every data DMA.
 * Nothing else in the device turns a guest-supplied address into a DMA.
 */
void chpp_mr_reset(ChppHcaState *s);
int chpp_mr_post_load(ChppHcaState *s);
uint8_t chpp_cmd_sw2hw_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox);
uint8_t chpp_cmd_hw2sw_mpt(ChppHcaState *s, uint32_t idx);
uint8_t chpp_cmd_query_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox);
uint8_t chpp_cmd_write_mtt(ChppHcaState *s, uint32_t count, uint64_t mailbox);
/*
 * Find the region of @key and check it covers [va, va + len) in @pd with
 * the CHPP_MPT_* rights in @need.  On failure returns NULL and sets *verr
 * (CHPP_VERR_BAD_LKEY, _LKEY_PD, _LKEY_RIGHTS or _LKEY_BOUNDS).
 */
const ChppMpt *chpp_mr_lookup(ChppHcaState *s, uint32_t key, uint32_t pd,
                              uint64_t va, uint64_t len, uint32_t need,
                              uint8_t *verr);
/*
 * Copy @len bytes at message offset @offset between @buf and a scatter/
 * gather list, each piece checked against its region in @qp's PD; false
 * with *verr set (CHPP_VERR_*) otherwise.
 */
bool chpp_sge_rw(ChppHcaState *s, ChppQp *qp, const ChppSge *sge,
                 uint32_t num_sge, uint32_t offset, void *buf, uint32_t len,
                 DMADirection dir, uint8_t *verr);
/*
 * Fast registration (ABI 1.6): REG_MR of @r (host order) for a QP of @pd;
 * LOCAL_INV or a peer's SEND_INV of @key.  0, or a CHPP_WC_* status with
 * *verr set.
 */
uint8_t chpp_mr_fast_reg(ChppHcaState *s, uint32_t pd,
                         const struct chpp_wqe_reg *r, uint8_t *verr);
uint8_t chpp_mr_invalidate(ChppHcaState *s, uint32_t pd, uint32_t key,
                           uint8_t *verr);
void chpp_mr_pre_load(ChppHcaState *s);
extern const VMStateDescription vmstate_chpp_frmr;
/* The same in @pd (an SRQ's WQEs are checked against the SRQ's PD). */
bool chpp_sge_rw_pd(ChppHcaState *s, uint32_t pd, const ChppSge *sge,
                    uint32_t num_sge, uint32_t offset, void *buf,
                    uint32_t len, DMADirection dir, uint8_t *verr);
/* Copy between @buf and a checked region; false on a DMA/MTT fault. */
bool chpp_mr_rw(ChppHcaState *s, const ChppMpt *mr, uint64_t va, void *buf,
                uint64_t len, DMADirection dir);
/* Check a ring of @size bytes is mapped by valid MTT entries. */
bool chpp_ring_check(ChppHcaState *s, const ChppRing *ring, uint64_t size);
/* Copy @len bytes at @offset of a ring (never crossing its end). */
bool chpp_ring_rw(ChppHcaState *s, const ChppRing *ring, uint64_t offset,
                  void *buf, uint64_t len, DMADirection dir);

/* chpp-hca-cq.c: completion queues. */
void chpp_cq_reset(ChppHcaState *s);
int chpp_cq_post_load(ChppHcaState *s);
uint8_t chpp_cmd_sw2hw_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox);
uint8_t chpp_cmd_hw2sw_cq(ChppHcaState *s, uint32_t cqn);
uint8_t chpp_cmd_query_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox);
uint8_t chpp_cmd_resize_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox);
/* Valid CQ in hardware ownership, or NULL. */
ChppCq *chpp_cq_get(ChppHcaState *s, uint32_t cqn);
/*
 * Write @cqe (owner set here) to CQ @cqn, raise its completion event if
 * armed (ARM_SOL: only for @solicited or error CQEs); overrun stops the CQ
 * with a CQ_ERROR event.  Returns false if the CQE was lost.
 */
bool chpp_cq_post(ChppHcaState *s, uint32_t cqn, struct chpp_cqe *cqe,
                  bool solicited);
/* UAR CQ doorbell of page @uar: NULL, or why it is refused. */
const char *chpp_cq_doorbell(ChppHcaState *s, uint32_t uar, uint64_t val);

/* chpp-hca-srq.c: shared receive queues (ABI 1.5). */
void chpp_srq_reset(ChppHcaState *s);
void chpp_srq_pre_load(ChppHcaState *s);
int chpp_srq_post_load(ChppHcaState *s);
uint8_t chpp_cmd_sw2hw_srq(ChppHcaState *s, uint32_t srqn, uint64_t mailbox);
uint8_t chpp_cmd_hw2sw_srq(ChppHcaState *s, uint32_t srqn);
uint8_t chpp_cmd_query_srq(ChppHcaState *s, uint32_t srqn, uint64_t mailbox);
uint8_t chpp_cmd_arm_srq(ChppHcaState *s, uint32_t srqn, uint64_t limit);
/* SRQ @srqn in hardware ownership or in error, or NULL. */
ChppSrq *chpp_srq_get(ChppHcaState *s, uint32_t srqn);
/* UAR SRQ doorbell of page @uar: NULL, or why it is refused. */
const char *chpp_srq_doorbell(ChppHcaState *s, uint32_t uar, uint32_t val);
/* No WQE to take (or the SRQ is in error)? */
bool chpp_srq_empty(const ChppSrq *srq);
/* Take the next WQE (SRQ_LIMIT when the rest falls below the limit). */
bool chpp_srq_take(ChppHcaState *s, ChppSrq *srq, uint32_t *idx);
/*
 * Read WQE @idx: 0, -EINVAL (a bad WQE: too many segments), or -EIO (the
 * ring is not readable: the SRQ is now in error, SRQ_CATAS_ERROR posted).
 */
int chpp_srq_wqe_fetch(ChppHcaState *s, ChppSrq *srq, uint32_t idx,
                       uint64_t *wr_id, ChppSge *sge, uint32_t *num_sge,
                       uint32_t *capacity);
/*
 * Write the consumer record (free index, ci) after a take or a WQE let go;
 * false if the SRQ is in error (now or before).
 */
bool chpp_srq_update(ChppHcaState *s, ChppSrq *srq);
/* Loading: is @idx a WQE @srq handed out and did not free yet? */
bool chpp_srq_in_use(const ChppSrq *srq, uint32_t idx);
bool chpp_srq_wqe_copied(const ChppQp *qp);
/* A receive WQE (RQ or SRQ) in @buf: false if its segments do not fit. */
/* Bytes the segments hold, at most UINT32_MAX. */
uint32_t chpp_sge_capacity(const ChppSge *sge, uint32_t num_sge);
bool chpp_rwqe_parse(const uint8_t *buf, uint32_t stride, uint64_t *wr_id,
                     ChppSge *sge, uint32_t *num_sge, uint32_t *capacity);
extern const VMStateDescription vmstate_chpp_srqs;
extern const VMStateDescription vmstate_chpp_srq_wqes;

/* chpp-hca-qp.c: QP contexts and the modify-QP state machine. */
void chpp_qp_reset(ChppHcaState *s);
int chpp_qp_post_load(ChppHcaState *s);
uint8_t chpp_cmd_modify_qp(ChppHcaState *s, uint16_t opcode, uint32_t qpn,
                           uint64_t mailbox);
uint8_t chpp_cmd_query_qp(ChppHcaState *s, uint32_t qpn, uint64_t mailbox);
/* QP timers (local ACK timeout, RNR back-off); enum chpp_qp_timer. */
void chpp_qp_timer_arm(ChppHcaState *s, ChppQp *qp, uint8_t kind,
                       int64_t delay_ns);
void chpp_qp_timer_stop(ChppHcaState *s, ChppQp *qp);
/* InfiniBand encodings of the local ACK timeout and the RNR timer. */
int64_t chpp_local_ack_timeout_ns(uint8_t timeout);
int64_t chpp_rnr_timer_ns(uint8_t code);
/* SQD: post SQ_DRAINED once nothing is in flight, if it was asked for. */
void chpp_qp_check_drained(ChppHcaState *s, ChppQp *qp);
/* An affiliated async event of @qp (COMM_EST, SQ_DRAINED, WQ_*). */
void chpp_qp_async_event(ChppHcaState *s, ChppQp *qp, uint8_t type);
/* Post @event_type (0: none) and move the QP to @new_state (ERR/SQE). */
void chpp_qp_fail(ChppHcaState *s, ChppQp *qp, uint8_t new_state,
                  uint8_t event_type);
/* Move @qp to ERR or SQE on an error the engine found (async). */
void chpp_qp_set_error(ChppHcaState *s, ChppQp *qp, uint8_t new_state);

/* chpp-hca-doorbell.c: UAR doorbells, the doorbell FIFO, RING_SQ. */
void chpp_uar_doorbell(ChppHcaState *s, uint32_t uar, uint32_t offset,
                       uint64_t val, unsigned size);
/* The CHPP_UAR_DB_STATUS value of UAR page @uar. */
uint32_t chpp_uar_db_status(ChppHcaState *s, uint32_t uar);
/* Report a malformed UAR doorbell (DOORBELL_ERROR event, counters). */
void chpp_uar_doorbell_error(ChppHcaState *s, uint32_t uar, uint32_t offset,
                             uint64_t val, const char *why);
uint8_t chpp_cmd_ring_sq(ChppHcaState *s, uint32_t qpn);

/*
 * chpp-hca-engine.c: scheduling of the requester, responder, completer.
 * chpp-hca-qp.c calls chpp_upcalls.qp_transition (this function) after
 * every state change (commands and chpp_qp_set_error), with the state the
 * QP left.
 */
void chpp_engine_init(ChppHcaState *s);
/* Unrealize: nothing runs or fires any more; chpp_engine_fini() frees. */
void chpp_engine_stop(ChppHcaState *s);
void chpp_engine_fini(ChppHcaState *s);
void chpp_engine_reset(ChppHcaState *s);
int chpp_engine_check_load(ChppHcaState *s);
void chpp_engine_post_load(ChppHcaState *s);
void chpp_engine_qp_transition(ChppHcaState *s, ChppQp *qp,
                               uint8_t old_state);
/* A doorbell FIFO of @pf's functions took an entry: serve it. */
void chpp_engine_doorbell(ChppHcaState *pf);
/* Software polls (CHPP_UAR_DB_STATUS): do what the link delivered. */
void chpp_engine_poll(ChppHcaState *pf);
/* The link's reader bottom half parses records (ChppUpcalls.rx_begin). */
bool chpp_engine_rx_begin(ChppHcaState *pf);
void chpp_engine_rx_end(ChppHcaState *pf);

/*
 * chpp-hca-db-error.c: the events raised by MMIO and config space writes
 * (DOORBELL_ERROR of refused doorbells, VF_FLR), queued there and posted
 * by a bottom half.
 */
void chpp_db_err_init(ChppHcaState *s);
void chpp_db_err_fini(ChppHcaState *s);
void chpp_db_err_reset(ChppHcaState *s);
/* Incoming state replaces the queue, even when it has none. */
void chpp_db_err_pre_load(ChppHcaState *s);
/* Queue the event of a refused doorbell (CHPP_DB_ERR_* @subtype). */
void chpp_doorbell_refused(ChppHcaState *s, uint8_t subtype, uint32_t uar,
                           uint32_t offset, uint64_t val);
/*
 * A doorbell of QP @qpn found the FIFO full: mark the QP and, unless an
 * earlier FIFO_OVERFLOW event is still unanswered, queue one naming it.
 */
void chpp_db_lost_report(ChppHcaState *s, uint32_t qpn, uint32_t uar,
                         uint32_t offset, uint64_t val);
/* QP @qpn's lost work was announced again (RING_SQ) or abandoned (reset). */
void chpp_db_lost_clear(ChppHcaState *s, uint32_t qpn);
uint8_t chpp_cmd_query_db_lost(ChppHcaState *s, uint64_t mailbox);
/*
 * Post an event after the queued DOORBELL_ERROR and VF_FLR events: to the
 * EQ mapped for its type, or to EQ @eqn.
 */
void chpp_event_post(ChppHcaState *s, struct chpp_eqe *eqe);
void chpp_eq_post_to(ChppHcaState *s, unsigned eqn, struct chpp_eqe *eqe);
/* Queue the VF_FLR event of VF @vf on the PF @pf. */
void chpp_vf_flr_queue(ChppHcaState *pf, uint8_t vf);
/* Post the queued events now (before any later event; VM stopping). */
void chpp_db_err_flush(ChppHcaState *s);
/* Schedule the posting of queued events, unless the VM is stopped. */
void chpp_db_err_kick(ChppHcaState *s);
extern const VMStateDescription vmstate_chpp_db_err;
extern const VMStateDescription vmstate_chpp_db_lost;

/* chpp-hca-regs.c */
extern const MemoryRegionOps chpp_hca_regs_ops;
extern const MemoryRegionOps chpp_hca_uar_ops;

/* chpp-hca-cmd.c */
void chpp_cmd_init(ChppHcaState *s);
void chpp_cmd_fini(ChppHcaState *s);
void chpp_cmd_reset(ChppHcaState *s);
void chpp_cmd_post_load(ChppHcaState *s);
void chpp_hcr_write(ChppHcaState *s, unsigned dword, uint32_t val);
/* Resources back to before INIT_HCA (CLOSE_HCA; part of every reset). */
void chpp_hca_reset_state(ChppHcaState *s);

/* chpp-hca-debug.c: QUERY_STATS, the QOM state view. */
uint8_t chpp_cmd_query_stats(ChppHcaState *s, uint32_t flags,
                             uint64_t mailbox);
void chpp_debug_add_properties(Object *obj);
#define CHPP_DEBUG_MAX_DEVICES 16
extern ChppHcaState *chpp_hca_devices[CHPP_DEBUG_MAX_DEVICES];
void chpp_debug_register(ChppHcaState *s, bool add);

/* chpp-hca-sriov.c: SR-IOV functions, quotas and arbitration. */
void chpp_sriov_defaults(ChppHcaState *s);
/* A VF count beyond its PF's own: its name, value (@val) and bound. */
const char *chpp_vf_res_invalid(ChppHcaState *pf, const ChppFnRes *r,
                                uint32_t *val, uint32_t *max);
void chpp_sriov_vf_params(ChppHcaState *s);
bool chpp_sriov_init_pf(ChppHcaState *s, Error **errp);
void chpp_sriov_exit_pf(ChppHcaState *s);
void chpp_sriov_reset_pf(ChppHcaState *s);
void chpp_sriov_vf_flr(ChppHcaState *s);
uint8_t chpp_cmd_vf_res(ChppHcaState *s, bool set, uint32_t fn,
                        uint64_t mailbox);
ChppHcaState *chpp_arb_pick(ChppHcaState *pf);

/* chpp-hca-link-fabric.c: the link on an Ethernet segment (netdev). */
void chpp_link_fabric_realize(ChppHcaState *s, Error **errp);
void chpp_link_fabric_unrealize(ChppHcaState *s);

/* chpp-hca-link.c: the link to peer adapters (chardev or netdev). */
bool chpp_link_realize(ChppHcaState *s, Error **errp);
void chpp_link_unrealize(ChppHcaState *s);
bool chpp_link_capture_open(ChppHcaState *s, Error **errp);
void chpp_link_capture_close(ChppHcaState *s);
void chpp_link_reset(ChppHcaState *s);
void chpp_link_add_properties(Object *obj);
bool chpp_link_attached(ChppHcaState *s);
/*
 * Send an encoded frame (takes ownership); false: no route to @node.  The
 * frame starts CHPP_LINK_HEADROOM bytes into @frame, room for an Ethernet
 * header and the link's record header, so that it is sent without a copy
 * (a byte stream skips the Ethernet header).
 */
#define CHPP_LINK_HEADROOM (CHPP_ETH_HDR_SIZE + sizeof(struct chpp_link_rec))
bool chpp_link_send(ChppHcaState *s, uint16_t node, uint8_t vc,
                    GByteArray *frame);
/* The engine consumed a frame of @vc that came from node @from. */
void chpp_link_consumed(ChppHcaState *s, uint16_t from, uint8_t vc);
/* May functions take the peer's frames (false: back-pressure)? */
bool chpp_link_rx_ready(ChppHcaState *s);
/* A frame from the link for QP @qpn of @s carried the wrong @magic. */
void chpp_link_magic_miss(ChppHcaState *s, uint16_t from, uint32_t qpn,
                          uint8_t magic);
uint32_t chpp_link_status(ChppHcaState *s);
/* Nodes up on the link, lowest first, at most @max; how many there are. */
unsigned chpp_link_nodes_up(ChppHcaState *s, uint16_t *nodes, unsigned max);
/*
 * Write the records queued for the link now, not in the next iteration
 * (@doorbell: a doorbell queued them; while software busy-polls they may
 * wait for its next poll, docs/link.md).
 */
void chpp_link_flush_now(ChppHcaState *s, bool doorbell);
/* Parse what the reader thread received now, not in the bottom half. */
void chpp_link_poll(ChppHcaState *s);
/* The guest rang a doorbell: its link's reader does not spin meanwhile. */
void chpp_link_doorbell(ChppHcaState *s);
/* Software arms a CQ: it stops polling; nothing waits for its polls. */
void chpp_link_poll_end(ChppHcaState *s);

/* chpp-hca-port.c */
void chpp_port_reset(ChppHcaState *s);
void chpp_port_link_changed(ChppHcaState *s);
void chpp_port_vm_running(ChppHcaState *s);
/* The SMA's values of a port without a subnet manager. */
void chpp_sma_defaults(ChppHcaState *s, ChppSma *sma);
/* Is the port's physical link up (or looped back: no link attached)? */
bool chpp_port_phys_up(ChppHcaState *s);
/* A subnet manager moved port @port to @state (PORT_CHANGE posted). */
void chpp_port_set_state(ChppHcaState *s, uint32_t port, uint8_t state);
extern const VMStateDescription vmstate_chpp_sma;
uint8_t chpp_cmd_init_port(ChppHcaState *s, uint32_t port);
uint8_t chpp_cmd_close_port(ChppHcaState *s, uint32_t port);
uint8_t chpp_cmd_query_port(ChppHcaState *s, uint32_t port, uint64_t mailbox);

/* chpp-hca-mcg.c: multicast groups (ATTACH_MCG, DETACH_MCG). */
void chpp_mcg_reset(ChppHcaState *s);
uint8_t chpp_cmd_mcg(ChppHcaState *s, bool attach, uint32_t qpn,
                     uint64_t mailbox);
/* QP @qpn went to RESET: it leaves every group. */
void chpp_mcg_detach_qp(ChppHcaState *s, uint32_t qpn);
/* The QPs attached to @mlid, each once; returns how many (<= @max). */
unsigned chpp_mcg_qps(ChppHcaState *s, uint16_t mlid, uint32_t *qpn,
                      unsigned max);
extern const VMStateDescription vmstate_chpp_mcg;

/* chpp-hca-mad.c: the SMA and PMA behind MAD_IFC. */
uint8_t chpp_cmd_mad_ifc(ChppHcaState *s, uint32_t in_mod, uint64_t in_mb,
                         uint64_t out_mb);

/* chpp-hca-eq.c */
void chpp_eq_reset(ChppHcaState *s);
int chpp_eq_post_load(ChppHcaState *s);
/* EQ doorbell write: NULL, or why it is refused (the caller reports). */
const char *chpp_eq_doorbell(ChppHcaState *s, unsigned eqn, uint32_t val);
uint32_t chpp_eq_doorbell_read(ChppHcaState *s, unsigned eqn);
/*
 * Post to the EQ mapped for eqe->type (async events), or to EQ @eqn
 * (completion events of a CQ), now: callers that must keep the order of
 * the events MMIO writes queued use chpp_event_post()/chpp_eq_post_to().
 */
void chpp_event_post_now(ChppHcaState *s, struct chpp_eqe *eqe);
void chpp_eq_post_to_now(ChppHcaState *s, unsigned eqn,
                         struct chpp_eqe *eqe);
uint8_t chpp_cmd_sw2hw_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox);
uint8_t chpp_cmd_hw2sw_eq(ChppHcaState *s, uint32_t eqn);
uint8_t chpp_cmd_query_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox);
uint8_t chpp_cmd_map_eq(ChppHcaState *s, uint32_t modifier, uint64_t mask);

extern const VMStateDescription vmstate_chpp_hca;
extern const VMStateDescription vmstate_chpp_eq;
extern const VMStateDescription vmstate_chpp_mpt;
extern const VMStateDescription vmstate_chpp_cq;
extern const VMStateDescription vmstate_chpp_qp;
extern const VMStateDescription vmstate_chpp_qp_engine;

#endif /* HW_CHPP_HCA_H */
