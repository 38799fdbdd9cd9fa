/*
 * chpp-hca: the FPGA timing model (docs/timing-model.md).  Types used by
 * the device state (chpp-hca.h includes this header); the model's
 * interface is in chpp-hca-datapath.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_TIMING_H
#define HW_CHPP_HCA_TIMING_H

/*
 * The model's parameters: the "timing" and "timing-*" properties, with
 * the defaults of seed 004 (docs/timing-model.md says where each comes
 * from) and the bounds of docs/properties.md.
 */
typedef struct ChppTimingParams {
    bool on;
    uint32_t clock_mhz;         /* engine clock */
    uint32_t bus_bytes;         /* internal bus width */
    uint32_t mtu;               /* largest TLP / network packet payload */
    uint32_t read_req;          /* largest memory read request */
    uint32_t host_mps;          /* largest TLP payload the host takes */
    uint32_t tags;              /* PCIe read tags */
    uint32_t mem_cycles;        /* read request to first data */
    uint32_t xbar_cycles;       /* crossbar traversal */
    uint32_t nap_imm_cycles;    /* processing of one WQE, per primitive */
    uint32_t nap_ind_cycles;
    uint32_t put_cycles;
    uint32_t get_cycles;
    uint32_t link_ns;           /* host <-> adapter, one way */
} ChppTimingParams;

#define CHPP_TIMING_DEF_CLOCK_MHZ       250
#define CHPP_TIMING_DEF_BUS_BYTES       16
#define CHPP_TIMING_DEF_MTU             128
#define CHPP_TIMING_DEF_READ_REQ        128
#define CHPP_TIMING_DEF_HOST_MPS        128
#define CHPP_TIMING_DEF_TAGS            32
#define CHPP_TIMING_DEF_MEM_CYCLES      130
#define CHPP_TIMING_DEF_XBAR_CYCLES     8
#define CHPP_TIMING_DEF_NAP_IMM_CYCLES  35
#define CHPP_TIMING_DEF_NAP_IND_CYCLES  57
#define CHPP_TIMING_DEF_PUT_CYCLES      48
#define CHPP_TIMING_DEF_GET_CYCLES      9
#define CHPP_TIMING_DEF_LINK_NS         230

/* Property bounds (docs/properties.md). */
#define CHPP_MAX_TIMING_CLOCK_MHZ       4000
#define CHPP_MIN_TIMING_BUS_BYTES       4
#define CHPP_MAX_TIMING_BUS_BYTES       256
#define CHPP_MIN_TIMING_PAYLOAD         16      /* mtu, read-req, host-mps */
#define CHPP_MAX_TIMING_PAYLOAD         4096
#define CHPP_MAX_TIMING_TAGS            256     /* extended tags */
#define CHPP_MAX_TIMING_CYCLES          100000  /* any *-cycles */
#define CHPP_MAX_TIMING_LINK_NS         1000000

/*
 * The model's schedule of one message (a send WQE, the responses of a
 * GET): when its data starts to stream, from which the time each of its
 * packets is in the target's memory follows.  Kept beside the engine
 * state of the WQE, never migrated: a VM stop finishes every packet.
 */
typedef struct ChppTimingMsg {
    int64_t t_data;             /* ps; 0: not scheduled yet */
    int64_t t_last;             /* ns: the last byte is in the target */
    uint32_t len;
    uint8_t kind;               /* chpp-hca-timing.c */
} ChppTimingMsg;

/* Descriptors the fetch module holds ahead of the processing stage. */
#define CHPP_TIMING_DESC_AHEAD  4

/* The model's resources (the PF's: one engine per adapter), in ps. */
typedef struct ChppTimingModel {
    int64_t slot_free[CHPP_TIMING_DESC_AHEAD];
    uint32_t slot_next;
    int64_t eng_free;           /* processing stage */
    int64_t read_free;          /* data read module */
    int64_t last_taken;         /* ns: a FIFO entry taken (engine-delay) */
    bool bypass;                /* VM stopping: everything goes at once */
} ChppTimingModel;

#endif
