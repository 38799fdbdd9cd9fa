/*
 * chpp-hca device ABI: register offsets, command opcodes, status codes and
 * the little-endian layouts of mailboxes and queue entries.
 *
 * This header is the single source of truth shared by the QEMU device model,
 * the qtests, the guest kernel driver and the guest user-space provider.  It
 * depends only on fixed-width integer types.  Every multi-byte field of its
 * structures is little-endian, and typed so (below).
 * docs/ explains the semantics of everything defined here.  The protocol
 * between adapters (frames and the link), which no guest sees, is in
 * chpp-wire.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
 */
#ifndef CHPP_HCA_ABI_H
#define CHPP_HCA_ABI_H

/*
 * Byte order.  The multi-byte fields of the mailboxes, queue entries,
 * contexts and wire records below are chpp_le16, chpp_le32 and chpp_le64:
 *
 * - Linux, kernel and user space: __le16, __le32 and __le64 of
 *   <linux/types.h>, the types sparse checks (make C=2, the 'sparse' lint).
 *   Read a field with le32_to_cpu() (kernel) or le32toh() (user space),
 *   write it with cpu_to_le32() or htole32(); likewise 16 and 64.
 * - QEMU (qemu/osdep.h comes first in every QEMU source, qtests included)
 *   and any other host: plain uint16_t, uint32_t and uint64_t, the types
 *   QEMU's le32_to_cpu(), cpu_to_le32(), ldl_le_p() and stl_le_p() take.
 *
 * The layout is the same either way; only the checking differs.
 */
#if defined(__KERNEL__)
#include <linux/types.h>
#define CHPP_ABI_LINUX_TYPES        1
#elif defined(__linux__) && !defined(QEMU_OSDEP_H)
#include <stdint.h>
#include <linux/types.h>
#define CHPP_ABI_LINUX_TYPES        1
#else
#include <stdint.h>
#endif

#ifdef CHPP_ABI_LINUX_TYPES
typedef __le16 chpp_le16;
typedef __le32 chpp_le32;
typedef __le64 chpp_le64;
#else
typedef uint16_t chpp_le16;
typedef uint32_t chpp_le32;
typedef uint64_t chpp_le64;
#endif

#define CHPP_ABI_ASSERT_SIZE(type, size) \
    _Static_assert(sizeof(type) == (size), #type " must be " #size " bytes")

/* ABI version, reported by CHPP_REG_ABI_VERSION and QUERY_FW. */
#define CHPP_ABI_VERSION_MAJOR      1
#define CHPP_ABI_VERSION_MINOR      6   /* 1.6: MADs, multicast, fast reg. */
#define CHPP_ABI_VERSION \
    ((CHPP_ABI_VERSION_MAJOR << 16) | CHPP_ABI_VERSION_MINOR)

/* Firmware revision reported by QUERY_FW (the model's own release). */
#define CHPP_FW_VER_MAJOR           0
#define CHPP_FW_VER_MINOR           1
#define CHPP_FW_VER_SUBMINOR        0

/*
 * PCI identity (defaults of the vendor-id/device-id/vf-device-id properties:
 * placeholders until the silicon IDs are assigned).
 */
#define CHPP_PCI_VENDOR_ID          0x1234
#define CHPP_PCI_DEVICE_ID_PF       0xc4a1
#define CHPP_PCI_DEVICE_ID_VF       0xc4a2
#define CHPP_PCI_CLASS_CODE         0x0207  /* network: InfiniBand */
#define CHPP_PCI_REVISION           0x01

/* Config space capability offsets. */
#define CHPP_PCI_CAP_PM             0x40
#define CHPP_PCI_CAP_MSIX           0x50
#define CHPP_PCI_CAP_EXP            0x60
/* Extended capabilities: reserved now, filled by the SR-IOV work. */
#define CHPP_PCI_EXT_CAP_ARI        0x100
#define CHPP_PCI_EXT_CAP_SRIOV      0x110
#define CHPP_PCI_EXT_CAP_ACS        0x150

/* BARs (both 64-bit memory BARs). */
#define CHPP_BAR_REGS               0       /* BAR0: registers, MSI-X */
#define CHPP_BAR_UAR                2       /* BAR2: UAR pages */
#define CHPP_BAR0_SIZE              0x4000

/*
 * SR-IOV: up to CHPP_MAX_VFS virtual functions (seed 004: 1 PF + 7 VFs),
 * at PF devfn + 1, + 2, ...  Each VF has BAR0 (CHPP_BAR0_SIZE, registers
 * and MSI-X) and BAR2 (CHPP_VF_UAR_PAGES UAR pages).
 */
#define CHPP_MAX_VFS                7
#define CHPP_VF_OFFSET              1
#define CHPP_VF_STRIDE              1
#define CHPP_VF_UAR_PAGES           4

/*
 * BAR0 register map.  Every register is 32 bits wide and must be accessed
 * with naturally aligned 32-bit loads and stores.  Other accesses, and
 * accesses to offsets not listed here, read as 0 and ignore writes; each
 * is logged as a guest error and counted in CHPP_CNT_GUEST_ERRORS.
 */
#define CHPP_REG_MAGIC              0x0000  /* RO: CHPP_MAGIC */
#define CHPP_REG_ABI_VERSION        0x0004  /* RO: CHPP_ABI_VERSION */
#define CHPP_REG_CAPS               0x0008  /* RO: CHPP_CAP_* */
#define CHPP_REG_FUNC               0x000c  /* RO: 0 = PF, 1..n = VF n */
#define CHPP_REG_NODE_ID            0x0010  /* RO: node-id property */
#define CHPP_REG_STATUS             0x0014  /* RO: CHPP_STATUS_* */
#define CHPP_REG_UAR_INFO           0x0018  /* RO: see CHPP_UAR_INFO_* */
#define CHPP_REG_MSIX_INFO          0x001c  /* RO: number of MSI-X vectors */
#define CHPP_REG_RESET              0x0020  /* WO: write CHPP_RESET_MAGIC */
#define CHPP_REG_SCRATCH            0x0030  /* RW: no effect, 0 at reset */
#define CHPP_REG_LINK               0x0040  /* RO: CHPP_LINK_* */

#define CHPP_MAGIC                  0x50504843u /* "CHPP" in memory order */

#define CHPP_CAP_CMD_EVENTS         (1u << 0) /* HCR e bit supported */
#define CHPP_CAP_VF                 (1u << 1) /* this function is a VF */
#define CHPP_CAP_LINK               (1u << 2) /* a link (chardev) is attached */

#define CHPP_LINK_UP                (1u << 0) /* handshake done, peer known */
#define CHPP_LINK_ATTACHED          (1u << 1) /* chardev present */
#define CHPP_LINK_PEER_SHIFT        16        /* bits 31:16: peer node id */

#define CHPP_STATUS_HCA_INIT        (1u << 0) /* INIT_HCA done */
#define CHPP_STATUS_CMD_BUSY        (1u << 1) /* mirror of HCR go */

#define CHPP_UAR_INFO_PAGES_MASK    0xffffu   /* bits 15:0: UAR pages */
#define CHPP_UAR_INFO_SHIFT_SHIFT   16        /* bits 23:16: log2 page */

#define CHPP_RESET_MAGIC            0x00000001u

/* HCR: the command register block (seed 000 / mlx4 field order). */
#define CHPP_REG_HCR                0x0100
#define CHPP_HCR_IN_PARAM_H         0x00
#define CHPP_HCR_IN_PARAM_L         0x04
#define CHPP_HCR_IN_MODIFIER        0x08
#define CHPP_HCR_OUT_PARAM_H        0x0c
#define CHPP_HCR_OUT_PARAM_L        0x10
#define CHPP_HCR_TOKEN              0x14    /* token in bits 31:16 */
#define CHPP_HCR_CTRL               0x18    /* status/go/e/t/opmod/opcode */
#define CHPP_HCR_SIZE               0x1c
#define CHPP_HCR_DWORDS             (CHPP_HCR_SIZE / 4)

#define CHPP_HCR_TOKEN_SHIFT        16
#define CHPP_HCR_STATUS_SHIFT       24
#define CHPP_HCR_STATUS_MASK        (0xffu << CHPP_HCR_STATUS_SHIFT)
#define CHPP_HCR_GO                 (1u << 23)
#define CHPP_HCR_E                  (1u << 22)
#define CHPP_HCR_T                  (1u << 21)
#define CHPP_HCR_OPMOD_SHIFT        12
#define CHPP_HCR_OPMOD_MASK         (0xfu << CHPP_HCR_OPMOD_SHIFT)
#define CHPP_HCR_OPCODE_MASK        0xfffu

/* EQ doorbells: one register per EQ, write (consumer index | ARM). */
#define CHPP_REG_EQ_DB_BASE         0x0400
#define CHPP_REG_EQ_DB(eqn)         (CHPP_REG_EQ_DB_BASE + 4 * (eqn))
#define CHPP_EQ_DB_CI_MASK          0x00ffffffu
#define CHPP_EQ_DB_ARM              (1u << 31)

/*
 * Names.  The lists below (counters, commands, status codes, port states,
 * event types, QP states and types) are X-macro lists: X(NAME, value)
 * gives the enumerator CHPP_<kind>_NAME = value and the name "NAME" that
 * chpp_*_name() returns, so the device, the driver, the provider, the
 * tests and the gdb helper print the same names and state them nowhere
 * else.  scripts/gdb/chpp_abi.py parses them too: keep one X() per line.
 */
/* Builders of the enums and name lookups from the lists. */
#define CHPP_ABI_ENUM_CMD(name, val)    CHPP_CMD_##name = (val),
#define CHPP_ABI_ENUM_STAT(name, val)   CHPP_STAT_##name = (val),
#define CHPP_ABI_ENUM_EVENT(name, val)  CHPP_EVENT_##name = (val),
#define CHPP_ABI_ENUM_QPS(name, val)    CHPP_QPS_##name = (val),
#define CHPP_ABI_ENUM_QPT(name, val)    CHPP_QPT_##name = (val),
#define CHPP_ABI_ENUM_PORT(name, val)   CHPP_PORT_##name = (val),
#define CHPP_ABI_ENUM_CNT(name, val)    CHPP_CNT_##name = (val),
#define CHPP_ABI_NAME_CASE(name, val)   case (val): return #name;
#define CHPP_ABI_COUNT(name, val)       + 1
/*
 * chpp_<kind>_name(value): the name, or NULL for a value not in the list
 * (the caller picks its own fallback).  A switch, so a value listed twice
 * fails to compile.
 */
#define CHPP_ABI_NAME_FN(fn, list) \
    static inline const char *fn(unsigned int value) \
    { \
        switch (value) { \
        list(CHPP_ABI_NAME_CASE) \
        } \
        return (void *)0; \
    }

/* Counters: read-only, 32-bit, wrap, cleared by reset. */
#define CHPP_REG_CNT_BASE           0x0800
#define CHPP_REG_CNT(idx)           (CHPP_REG_CNT_BASE + 4 * (idx))
#define CHPP_CNT_LIST(X) \
    X(CMDS, 0)                  /* commands executed */ \
    X(CMD_ERRORS, 1)            /* commands completed with status != OK */ \
    X(CMD_REJECTED, 2)          /* go written while a command was running */ \
    X(GUEST_ERRORS, 3)          /* every logged guest error */ \
    X(EVENTS, 4)                /* EQEs written */ \
    X(EVENTS_DROPPED, 5)        /* events lost: no EQ, EQ overrun, DMA */ \
    X(IRQS, 6)                  /* MSI-X messages sent */ \
    X(IRQS_MASKED, 7)           /* interrupts not sent: MSI-X disabled */ \
    X(DB_ERRORS, 8)             /* malformed doorbells */ \
    X(DMA_ERRORS, 9)            /* DMA accesses that failed */ \
    X(DB_FIFO_OVERFLOW, 10)     /* SQ doorbells lost: FIFO full */ \
    X(CQES, 11)                 /* CQEs written */ \
    X(CQES_DROPPED, 12)         /* CQEs lost: CQ overrun or stopped */ \
    X(WQES, 13)                 /* send WQEs started */ \
    X(PKTS_TX, 14)              /* packets sent (loopback included) */ \
    X(PKTS_RX, 15)              /* packets received */ \
    X(PKTS_DROPPED, 16)         /* received packets dropped, any reason */ \
    X(MAGIC_DROPS, 17)          /* ... of which: QP Magic mismatch */ \
    X(RETRANSMITS, 18)          /* requests sent again (timeout, NAK) */ \
    X(RNR_NAKS, 19)             /* RNR NAKs received */ \
    X(PKTS_MALFORMED, 20)       /* received frames that failed decoding */ \
    X(LINK_TX_FRAMES, 21)       /* frames written to the link */ \
    X(LINK_RX_FRAMES, 22)       /* frames read from the link */ \
    X(LINK_DOWN_DROPS, 23)      /* frames for the peer, link down */ \
    X(LINK_BAD_RECORDS, 24)     /* link protocol errors (connection cut) */ \
    X(LINK_CREDIT_ERRORS, 25)   /* frames beyond the credits we granted */ \
    X(LINK_REFUSED, 26)         /* handshakes refused (either side) */ \
    X(LINK_UPS, 27)             /* link up transitions */ \
    X(LINK_DOWNS, 28)           /* link down transitions */ \
    X(FAULT_DROPS, 29)          /* frames dropped by fault injection */ \
    X(FAULT_CORRUPTS, 30)       /* frames corrupted by fault injection */ \
    X(FAULT_DUPS, 31)           /* frames duplicated by fault injection */ \
    X(FAULT_DELAYS, 32)         /* frames delayed by fault injection */ \
    /* ABI 1.4 */ \
    X(DMA_REFUSED, 33)          /* DMA/MSI-X to non-RAM targets refused */ \
    /* the link's defences against a hostile peer */ \
    X(LINK_SPOOFED, 34)         /* frames not from or for the peer, dropped */ \
    X(LINK_MAGIC_CUTS, 35)      /* connections cut: QP magics guessed */ \
    X(LINK_RX_PAUSES, 36)       /* backlog full: peer's frames held back */ \
    X(LINK_OUTQ_FULL, 37)       /* write queue full: frames, credits wait */

enum chpp_counter {
    CHPP_CNT_LIST(CHPP_ABI_ENUM_CNT)
    CHPP_CNT_NUM
};
#define CHPP_CNT_COUNT              (0 CHPP_CNT_LIST(CHPP_ABI_COUNT))
CHPP_ABI_NAME_FN(chpp_counter_name, CHPP_CNT_LIST)
/* Dense 0..NUM - 1: a counter indexes the registers and QUERY_STATS. */
_Static_assert(CHPP_CNT_COUNT == CHPP_CNT_NUM, "counters are 0..NUM - 1");

/* MSI-X table and PBA live in BAR0. */
#define CHPP_MSIX_TABLE_OFFSET      0x2000
#define CHPP_MSIX_PBA_OFFSET        0x3000
#define CHPP_MAX_MSIX_VECTORS       64

/*
 * BAR2: UAR pages, one per user context, CHPP_UAR_PAGE_SIZE each; the
 * doorbells inside a page are at CHPP_UAR_*_DB.  Reads return 0.
 */
#define CHPP_UAR_PAGE_SHIFT         12
#define CHPP_UAR_PAGE_SIZE          (1u << CHPP_UAR_PAGE_SHIFT)
#define CHPP_MAX_UAR_PAGES          1024

/* Commands (an X-macro list, see "Names" above). */
#define CHPP_CMD_LIST(X) \
    X(QUERY_DEV_CAP,    0x003) \
    X(QUERY_FW,         0x004) \
    X(INIT_HCA,         0x007) \
    X(CLOSE_HCA,        0x008) \
    X(INIT_PORT,        0x009) \
    X(CLOSE_PORT,       0x00a) \
    X(MAP_EQ,           0x012) \
    X(SW2HW_EQ,         0x013) \
    X(HW2SW_EQ,         0x014) \
    X(QUERY_EQ,         0x015) \
    X(SW2HW_MPT,        0x00d) \
    X(QUERY_MPT,        0x00e) \
    X(HW2SW_MPT,        0x00f) \
    X(WRITE_MTT,        0x011) \
    X(SW2HW_CQ,         0x016) \
    X(HW2SW_CQ,         0x017) \
    X(QUERY_CQ,         0x018) \
    X(RESIZE_CQ,        0x02c) \
    X(RST2INIT_QP,      0x019) \
    X(INIT2RTR_QP,      0x01a) \
    X(RTR2RTS_QP,       0x01b) \
    X(RTS2RTS_QP,       0x01c) \
    X(SQERR2RTS_QP,     0x01d) \
    X(2ERR_QP,          0x01e) \
    X(RTS2SQD_QP,       0x01f) \
    X(SQD2RTS_QP,       0x020) \
    X(2RST_QP,          0x021) \
    X(QUERY_QP,         0x022) \
    X(RING_SQ,          0x023)      /* ABI 1.3 */ \
    X(QUERY_DB_LOST,    0x024)      /* ABI 1.4 */ \
    X(SW2HW_SRQ,        0x035)      /* ABI 1.5 */ \
    X(HW2SW_SRQ,        0x036)      /* ABI 1.5 */ \
    X(QUERY_SRQ,        0x037)      /* ABI 1.5 */ \
    X(ARM_SRQ,          0x040)      /* ABI 1.5 */ \
    X(INIT2INIT_QP,     0x02d) \
    X(SQD2SQD_QP,       0x038) \
    X(NOP,              0x031) \
    X(QUERY_PORT,       0x043) \
    X(QUERY_STATS,      0x060) \
    X(SET_VF_RES,       0x061)      /* PF only */ \
    X(QUERY_VF_RES,     0x062)      /* PF only */ \
    X(MAD_IFC,          0x070)      /* ABI 1.6 */ \
    X(ATTACH_MCG,       0x071)      /* ABI 1.6 */ \
    X(DETACH_MCG,       0x072)      /* ABI 1.6 */

enum chpp_opcode {
    CHPP_CMD_LIST(CHPP_ABI_ENUM_CMD)
};
#define CHPP_CMD_COUNT              (0 CHPP_CMD_LIST(CHPP_ABI_COUNT))
CHPP_ABI_NAME_FN(chpp_cmd_name, CHPP_CMD_LIST)

/* Status codes in HCR bits 31:24 and in command-completion EQEs. */
#define CHPP_STAT_LIST(X) \
    X(OK,               0x00) \
    X(INTERNAL_ERR,     0x01)   /* device model failure */ \
    X(BAD_OP,           0x02)   /* unknown opcode or bad opmod */ \
    X(BAD_PARAM,        0x03)   /* a field has an invalid value */ \
    X(BAD_SYS_STATE,    0x04)   /* wrong HCA state (INIT_HCA) */ \
    X(BAD_RESOURCE,     0x05)   /* resource does not exist */ \
    X(RESOURCE_BUSY,    0x06)   /* resource still in use */ \
    X(EXCEED_LIM,       0x08)   /* over a device limit */ \
    X(BAD_RES_STATE,    0x09)   /* resource in the wrong state */ \
    X(BAD_INDEX,        0x0a)   /* index out of range */ \
    X(BAD_QP_STATE,     0x10)   /* illegal QP transition */ \
    X(BAD_SIZE,         0x40)   /* queue size invalid */ \
    X(BAD_MAILBOX,      0x41)   /* mailbox address unaligned */ \
    X(DMA_ERR,          0x42)   /* mailbox DMA failed */ \
    X(PF_ONLY,          0x50)   /* command reserved to the PF */

enum chpp_status {
    CHPP_STAT_LIST(CHPP_ABI_ENUM_STAT)
};
#define CHPP_STAT_COUNT             (0 CHPP_STAT_LIST(CHPP_ABI_COUNT))
CHPP_ABI_NAME_FN(chpp_status_name, CHPP_STAT_LIST)

/* Mailboxes: one page of guest memory, naturally aligned. */
#define CHPP_MAILBOX_SIZE           4096
#define CHPP_MAILBOX_ALIGN          4096

/* QUERY_FW: out_param = output mailbox. */
struct chpp_fw_info {
    chpp_le16 fw_major;
    chpp_le16 fw_minor;
    chpp_le16 fw_subminor;
    chpp_le16 reserved0;
    chpp_le16 abi_major;
    chpp_le16 abi_minor;
    chpp_le32 reserved1[5];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_fw_info, 32);

/* QUERY_DEV_CAP: out_param = output mailbox. */
#define CHPP_DEV_CAP_FLAG_CMD_EVENTS    (1u << 0)
#define CHPP_DEV_CAP_FLAG_VF            (1u << 1)
/* ABI 1.6: fast registration (CHPP_MPT_FAST_REG, REG_MR, invalidation) */
#define CHPP_DEV_CAP_FLAG_FAST_REG      (1u << 2)

struct chpp_dev_cap {
    chpp_le32 flags;             /* CHPP_DEV_CAP_FLAG_* */
    chpp_le16 func;              /* 0 = PF */
    chpp_le16 node_id;
    uint8_t  num_ports;
    uint8_t  log_uar_page_size;
    chpp_le16 reserved0;
    chpp_le32 num_uar_pages;
    chpp_le32 num_msix;
    chpp_le32 max_eqs;
    chpp_le32 max_eq_entries;
    chpp_le32 max_cqs;
    chpp_le32 max_cq_entries;
    chpp_le32 max_qps;
    chpp_le32 max_qp_wqes;
    chpp_le32 max_mpts;
    chpp_le32 max_mtt_entries;
    chpp_le32 max_pds;
    chpp_le32 max_srqs;          /* ABI 1.5: num-srqs (0 before) */
    chpp_le32 max_sge;
    chpp_le32 max_inline;
    chpp_le32 max_msg_size;
    chpp_le32 reserved1;
    chpp_le64 page_size_cap;     /* bit n set: pages of 2^n bytes */
    chpp_le32 max_srq_wqes;      /* ABI 1.5: CHPP_MAX_SRQ_WQES */
    chpp_le32 max_srq_sge;       /* ABI 1.5: CHPP_MAX_SGE */
    chpp_le32 reserved2[7];
    chpp_le32 max_fr_pages;      /* ABI 1.6: CHPP_MAX_FR_PAGES */
};
CHPP_ABI_ASSERT_SIZE(struct chpp_dev_cap, 128);

/* INIT_HCA: in_modifier = CHPP_ABI_VERSION_MAJOR the driver speaks. */

/*
 * SET_VF_RES / QUERY_VF_RES (PF only): in_modifier = function (0 = PF for
 * the arbitration fields, 1..7 = VF), in/out_param = mailbox.  Resource
 * counts apply when the VFs are next enabled; arbitration at once.
 */
#define CHPP_VF_DEFAULT_QPS         4
#define CHPP_VF_DEFAULT_CQS         8
#define CHPP_VF_DEFAULT_EQS         4
#define CHPP_VF_DEFAULT_MPTS        64
#define CHPP_VF_DEFAULT_PDS         16
#define CHPP_VF_DEFAULT_MTTS        4096
#define CHPP_VF_DEFAULT_MSIX        4
#define CHPP_VF_DEFAULT_SRQS        2   /* ABI 1.5 */
#define CHPP_ARB_MAX_WEIGHT         255
#define CHPP_ARB_MAX_PRIORITY       7

struct chpp_vf_res {
    chpp_le32 num_qps;
    chpp_le32 num_cqs;
    chpp_le32 num_eqs;
    chpp_le32 num_mpts;
    chpp_le32 num_pds;
    chpp_le32 num_mtts;
    chpp_le32 msix_vectors;
    uint8_t  weight;            /* doorbell FIFO arbitration, 1..255 */
    uint8_t  priority;          /* 0..7, higher served first */
    chpp_le16 reserved0;
    /*
     * ABI 1.5: shared receive queues, 0..the PF's num-srqs; SET_VF_RES
     * with 0 (what an ABI 1.4 driver leaves in the reserved word) gives
     * the default, MIN(CHPP_VF_DEFAULT_SRQS, the PF's own).
     */
    chpp_le32 num_srqs;
    chpp_le32 reserved1[7];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_vf_res, 64);

/*
 * QUERY_STATS: out_param = mailbox, in_modifier = CHPP_STATS_CLEAR to zero
 * the counters after reading them.  Counter i = enum chpp_counter i, the
 * same values as the registers at CHPP_REG_CNT(i).
 */
#define CHPP_STATS_CLEAR            (1u << 0)
#define CHPP_STATS_MAX              ((CHPP_MAILBOX_SIZE - 16) / 4)
struct chpp_stats {
    chpp_le32 num_counters;      /* CHPP_CNT_NUM of this device */
    chpp_le32 reserved[3];
    chpp_le32 counters[CHPP_STATS_MAX];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_stats, CHPP_MAILBOX_SIZE);

/* Ports. */
#define CHPP_NUM_PORTS              1
#define CHPP_PORT_LIST(X) \
    X(DOWN,             1) \
    X(INIT,             2) \
    X(ARMED,            3) \
    X(ACTIVE,           4)

enum chpp_port_state {          /* InfiniBand PortState values */
    CHPP_PORT_LIST(CHPP_ABI_ENUM_PORT)
};
CHPP_ABI_NAME_FN(chpp_port_state_name, CHPP_PORT_LIST)
enum chpp_port_phys_state {     /* InfiniBand PortPhysicalState values */
    CHPP_PORT_PHYS_POLLING  = 2,
    CHPP_PORT_PHYS_DISABLED = 3,
    CHPP_PORT_PHYS_LINK_UP  = 5,
};
#define CHPP_MTU_4096               5   /* InfiniBand MTU enum */
#define CHPP_PORT_GUID_BASE         0x4348505000000000ull

/*
 * Addressing: every function has its own LID, (function << CHPP_LID_FN_SHIFT
 * | node id) + 1, so verbs address handles name a node and a function (the
 * packet's DST-VF). Node ids are therefore limited to CHPP_MAX_NODE_ID.
 * The port GUID is CHPP_PORT_GUID_BASE | function << 16 | node id.
 */
#define CHPP_LID_FN_SHIFT           12
#define CHPP_MAX_NODE_ID            ((1u << CHPP_LID_FN_SHIFT) - 1)
#define CHPP_LID(node, fn)          ((((fn) << CHPP_LID_FN_SHIFT) | (node)) + 1)
#define CHPP_LID_NODE(lid)          (((lid) - 1) & CHPP_MAX_NODE_ID)
#define CHPP_LID_FN(lid)            (((lid) - 1) >> CHPP_LID_FN_SHIFT)
#define CHPP_PORT_GUID(node, fn)    \
    (CHPP_PORT_GUID_BASE | (uint64_t)(fn) << 16 | (node))

/* QUERY_PORT: in_modifier = port (1), out_param = output mailbox. */
struct chpp_port_info {
    uint8_t  state;             /* enum chpp_port_state */
    uint8_t  phys_state;        /* enum chpp_port_phys_state */
    uint8_t  max_mtu;           /* InfiniBand MTU enum */
    uint8_t  active_mtu;
    uint8_t  link_width;        /* InfiniBand width enum: 1 = 1x */
    uint8_t  link_speed;        /* InfiniBand speed enum: 1 = SDR */
    chpp_le16 lid;               /* CHPP_LID(node-id, function), or the SM's */
    chpp_le32 gid_tbl_len;
    chpp_le32 pkey_tbl_len;
    chpp_le32 max_msg_size;
    chpp_le16 sm_lid;            /* ABI 1.6: PortInfo:MasterSMLID (0: none) */
    uint8_t  sm_sl;             /* ABI 1.6: PortInfo:MasterSMSL */
    uint8_t  lmc;               /* ABI 1.6: PortInfo:LMC (always 0) */
    chpp_le64 port_guid;         /* CHPP_PORT_GUID(node-id, function) */
    chpp_le64 gid_prefix;        /* PortInfo:GidPrefix (ABI 1.6: the SM's) */
    chpp_le32 cap_mask;          /* ABI 1.6: PortInfo:CapabilityMask */
    chpp_le16 pkey;              /* ABI 1.6: P_Key table entry 0 */
    uint8_t  subnet_timeout;    /* ABI 1.6: PortInfo:SubnetTimeOut */
    uint8_t  reserved0;
    chpp_le32 reserved1[4];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_port_info, 64);

/*
 * Event queues.
 */
#define CHPP_MAX_EQS                64
#define CHPP_MAX_EQ_ENTRIES         65536
#define CHPP_EQ_MIN_ENTRIES         2
#define CHPP_EQ_BASE_ALIGN          64

enum chpp_eq_state {
    CHPP_EQ_STATE_SW        = 0,    /* software owned (not created) */
    CHPP_EQ_STATE_ARMED     = 1,    /* next EQE raises the vector */
    CHPP_EQ_STATE_FIRED     = 2,    /* vector raised; re-arm to get more */
    CHPP_EQ_STATE_OVERRUN   = 3,    /* was full: events dropped */
    CHPP_EQ_STATE_ERROR     = 4,    /* an EQE write failed (DMA) */
};

#define CHPP_EQ_FLAG_ARMED          (1u << 0)   /* SW2HW: start armed */

/* SW2HW_EQ: in_modifier = eqn, in_param = mailbox; QUERY_EQ output. */
struct chpp_eq_context {
    chpp_le64 base_addr;         /* DMA address of the ring */
    chpp_le32 num_entries;       /* power of two */
    chpp_le16 msix_vector;
    uint8_t  state;             /* QUERY_EQ: enum chpp_eq_state */
    uint8_t  flags;             /* SW2HW_EQ: CHPP_EQ_FLAG_* */
    chpp_le32 producer_index;    /* QUERY_EQ */
    chpp_le32 consumer_index;    /* QUERY_EQ */
    chpp_le32 dropped;           /* QUERY_EQ: events lost on this EQ */
    chpp_le32 reserved[9];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_eq_context, 64);

/* MAP_EQ: in_param = mask of event types, in_modifier = eqn | UNMAP. */
#define CHPP_MAP_EQ_UNMAP           (1u << 31)
#define CHPP_MAP_EQ_EQN_MASK        0xffffu

/* Event types (EQE type field; bit n of the MAP_EQ mask). */
#define CHPP_EVENT_LIST(X) \
    X(COMP,             0x00)   /* routed by the CQ, not MAP_EQ */ \
    X(PATH_MIG,         0x01) \
    X(COMM_EST,         0x02) \
    X(SQ_DRAINED,       0x03) \
    X(CQ_ERROR,         0x04) \
    X(WQ_CATAS_ERROR,   0x05) \
    X(LOCAL_CATAS,      0x08) \
    X(PORT_CHANGE,      0x09) \
    X(CMD,              0x0a) \
    X(EQ_OVERFLOW,      0x0f) \
    X(WQ_INVAL_REQ,     0x10) \
    X(WQ_ACCESS_ERROR,  0x11) \
    X(SRQ_CATAS_ERROR,  0x12) \
    X(LAST_WQE_REACHED, 0x13) \
    X(SRQ_LIMIT,        0x14) \
    X(DOORBELL_ERROR,   0x18) \
    X(VF_FLR,           0x19)   /* PF: a VF was reset by FLR */

enum chpp_event_type {
    CHPP_EVENT_LIST(CHPP_ABI_ENUM_EVENT)
    CHPP_EVENT_NUM_TYPES        = 64
};
#define CHPP_EVENT_COUNT            (0 CHPP_EVENT_LIST(CHPP_ABI_COUNT))
CHPP_ABI_NAME_FN(chpp_event_name, CHPP_EVENT_LIST)
/* Event types MAP_EQ accepts. */
#define CHPP_EVENT_MAPPABLE_MASK \
    ((1ull << CHPP_EVENT_PATH_MIG) | (1ull << CHPP_EVENT_COMM_EST) | \
     (1ull << CHPP_EVENT_SQ_DRAINED) | (1ull << CHPP_EVENT_CQ_ERROR) | \
     (1ull << CHPP_EVENT_WQ_CATAS_ERROR) | (1ull << CHPP_EVENT_LOCAL_CATAS) | \
     (1ull << CHPP_EVENT_PORT_CHANGE) | (1ull << CHPP_EVENT_CMD) | \
     (1ull << CHPP_EVENT_EQ_OVERFLOW) | (1ull << CHPP_EVENT_WQ_INVAL_REQ) | \
     (1ull << CHPP_EVENT_WQ_ACCESS_ERROR) | \
     (1ull << CHPP_EVENT_SRQ_CATAS_ERROR) | \
     (1ull << CHPP_EVENT_LAST_WQE_REACHED) | (1ull << CHPP_EVENT_SRQ_LIMIT) | \
     (1ull << CHPP_EVENT_DOORBELL_ERROR) | (1ull << CHPP_EVENT_VF_FLR))

/*
 * EQE: 32 bytes.  The device writes bytes 0..27 first, then the owner word.
 * Entry i of the ring (index & (num_entries - 1)) is valid for software when
 * its owner bit equals ((index / num_entries) & 1) ^ 1: 1 on the first pass
 * over a zeroed ring, 0 on the second, and so on.
 */
#define CHPP_EQE_SIZE               32
#define CHPP_EQE_OWNER              (1u << 31)

struct chpp_eqe_cmd {
    chpp_le16 token;
    uint8_t  status;            /* enum chpp_status */
    uint8_t  reserved0;
    chpp_le32 out_param_lo;      /* HCR out_param at completion */
    chpp_le32 out_param_hi;
    chpp_le32 reserved1[3];
};

struct chpp_eqe_port {
    chpp_le32 port;
    chpp_le32 reserved[5];
};

struct chpp_eqe_eq_overflow {
    chpp_le32 eqn;               /* the EQ that overran */
    chpp_le32 reserved[5];
};

/* DOORBELL_ERROR subtypes. */
#define CHPP_DB_ERR_BAD_VALUE       0   /* malformed or not allowed */
#define CHPP_DB_ERR_FIFO_OVERFLOW   1   /* the doorbell FIFO was full */
#define CHPP_DB_ERR_UAR_NONE        0xffffffffu /* doorbell was in BAR0 */

/*
 * At most CHPP_DB_ERR_QUEUE_DEPTH refused doorbells of a function wait for
 * their DOORBELL_ERROR event; the event of one more is dropped (counted in
 * CHPP_CNT_EVENTS_DROPPED).  A FIFO_OVERFLOW event is never dropped (ABI
 * 1.4): at most one waits, see struct chpp_db_lost.
 */
#define CHPP_DB_ERR_QUEUE_DEPTH     64

struct chpp_eqe_doorbell_error {
    chpp_le32 offset;            /* offset of the doorbell (BAR0 or UAR) */
    chpp_le32 value;             /* the value written, bits 31:0 */
    chpp_le32 uar;               /* UAR page, or 0xffffffff for BAR0 */
    chpp_le32 value_hi;          /* ABI 1.2: bits 63:32 (0: 32-bit write) */
    chpp_le32 reserved[2];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_eqe_doorbell_error, 24);

/* VF_FLR event (to the PF). */
struct chpp_eqe_vf {
    chpp_le32 vf;                /* 1..7 */
    chpp_le32 reserved[5];
};

/* COMP and CQ_ERROR events. */
struct chpp_eqe_cq {
    chpp_le32 cqn;
    chpp_le32 reserved[5];
};

/* QP affiliated events (COMM_EST, SQ_DRAINED, WQ_*, LAST_WQE_REACHED). */
struct chpp_eqe_qp {
    chpp_le32 qpn;
    chpp_le32 reserved[5];
};

/* SRQ_LIMIT and SRQ_CATAS_ERROR events (ABI 1.5). */
struct chpp_eqe_srq {
    chpp_le32 srqn;
    chpp_le32 reserved[5];
};

struct chpp_eqe {
    uint8_t  type;              /* enum chpp_event_type */
    uint8_t  subtype;           /* PORT_CHANGE: new port state */
    chpp_le16 reserved0;
    union {
        struct chpp_eqe_cmd cmd;
        struct chpp_eqe_port port;
        struct chpp_eqe_eq_overflow eq_overflow;
        struct chpp_eqe_doorbell_error db_error;
        struct chpp_eqe_cq cq;
        struct chpp_eqe_qp qp;
        struct chpp_eqe_vf vf;
        struct chpp_eqe_srq srq;
        chpp_le32 raw[6];
    } event;
    chpp_le32 owner;             /* bit 31: CHPP_EQE_OWNER */
};
CHPP_ABI_ASSERT_SIZE(struct chpp_eqe_cmd, 24);
CHPP_ABI_ASSERT_SIZE(struct chpp_eqe, CHPP_EQE_SIZE);

/*
 * Resource limits: defaults are the FPGA's, maxima bound the properties.
 */
#define CHPP_DEFAULT_QPS            4
#define CHPP_MAX_QPS                4096
#define CHPP_DEFAULT_CQS            8
#define CHPP_MAX_CQS                4096
#define CHPP_DEFAULT_EQS            4
#define CHPP_DEFAULT_MPTS           64
#define CHPP_MAX_MPTS               65536
#define CHPP_DEFAULT_PDS            16
#define CHPP_MAX_PDS                65536
#define CHPP_DEFAULT_MSIX_VECTORS   8
#define CHPP_DEFAULT_UAR_PAGES      16
#define CHPP_DEFAULT_MTTS           16384
#define CHPP_MAX_MTTS               (1u << 20)

/*
 * QUERY_DB_LOST (ABI 1.4): the QPs whose SQ doorbell the doorbell FIFO lost
 * and that were not recovered since (by RING_SQ, by QUERY_DB_LOST, or by a
 * reset of the QP).  Bit n of qps[] (byte n / 8, bit n % 8) is QP n.  The
 * command clears what it reports.  One DOORBELL_ERROR event with subtype
 * FIFO_OVERFLOW names one of these QPs at a time; the next is raised once
 * the driver answers it (RING_SQ of the QP it named, or QUERY_DB_LOST).
 */
struct chpp_db_lost {
    chpp_le32 count;             /* QPs set in qps[] */
    chpp_le32 num_qps;           /* bits of qps[] that are QPs */
    chpp_le32 reserved[2];
    uint8_t  qps[CHPP_MAX_QPS / 8];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_db_lost, 16 + CHPP_MAX_QPS / 8);

/*
 * Memory regions: MPT entries and the MTT (page translation table).
 *
 * PD numbers are chosen by the driver (0 .. num-pds - 1); the device only
 * checks that a region and the QP using it name the same PD.
 * A key is (MPT index << 8) | tag: the index selects the entry, the whole
 * key must match the key the entry was created with.
 */
#define CHPP_KEY_INDEX_SHIFT        8
#define CHPP_KEY_TAG_MASK           0xffu

#define CHPP_MPT_LOCAL_WRITE        (1u << 0)
#define CHPP_MPT_REMOTE_READ        (1u << 1)
#define CHPP_MPT_REMOTE_WRITE       (1u << 2)
#define CHPP_MPT_REMOTE_ATOMIC      (1u << 3)
#define CHPP_MPT_PHYS               (1u << 8)   /* no MTT: iova = DMA addr */
/*
 * ABI 1.6: a fast-registration region (docs/memory-regions.md#fast-
 * registration): SW2HW_MPT reserves max_pages MTT entries from mtt_base
 * and leaves it free (no access, QUERY_MPT state CHPP_RES_FREE); a REG_MR
 * WQE gives it pages, an address range, rights and a key; LOCAL_INV, or a
 * SEND_INV from the peer, frees it again.
 */
#define CHPP_MPT_FAST_REG           (1u << 9)
#define CHPP_MPT_FLAGS_MASK         0x30fu
#define CHPP_MAX_FR_PAGES           512

#define CHPP_MIN_PAGE_SHIFT         12
#define CHPP_MAX_PAGE_SHIFT         30

enum chpp_res_state {
    CHPP_RES_SW = 0,            /* not in hardware ownership */
    CHPP_RES_HW = 1,            /* valid */
    CHPP_RES_ERROR = 2,         /* CQ: overrun or DMA error, stopped */
    CHPP_RES_FREE = 3,          /* ABI 1.6: fast-reg region, not registered */
};

/* SW2HW_MPT: in_modifier = MPT index, in_param = mailbox; QUERY_MPT out. */
struct chpp_mpt_context {
    chpp_le32 flags;             /* CHPP_MPT_* */
    chpp_le32 key;
    chpp_le32 pd;
    uint8_t  log_page_size;     /* 12..30; ignored with CHPP_MPT_PHYS */
    uint8_t  state;             /* QUERY_MPT: enum chpp_res_state */
    chpp_le16 reserved0;
    chpp_le64 start;             /* I/O virtual address of byte 0 */
    chpp_le64 length;
    chpp_le32 mtt_base;          /* MTT entry of the page holding 'start' */
    chpp_le32 max_pages;         /* ABI 1.6: CHPP_MPT_FAST_REG: 1..512 */
    chpp_le32 reserved1[6];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_mpt_context, 64);

/*
 * WRITE_MTT: in_param = mailbox, in_modifier = number of entries (1..
 * CHPP_MTT_PER_MAILBOX).  Entry = DMA address of a page | CHPP_MTT_VALID.
 */
#define CHPP_MTT_VALID              1ull
#define CHPP_MTT_ADDR_MASK          (~0xfffull)
#define CHPP_MTT_PER_MAILBOX        ((CHPP_MAILBOX_SIZE - 16) / 8)
struct chpp_write_mtt {
    chpp_le64 first_index;
    chpp_le64 reserved;
    chpp_le64 entries[CHPP_MTT_PER_MAILBOX];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_write_mtt, CHPP_MAILBOX_SIZE);

/*
 * Completion queues.  The ring is num_entries CQEs of 32 bytes, mapped by
 * MTT entries mtt_base.. (pages of 2^log_page_size bytes, the ring starts at
 * offset 0 of the first page).  Owner bit rule as for EQs.
 */
#define CHPP_MAX_CQ_ENTRIES         65536
#define CHPP_CQ_MIN_ENTRIES         2

struct chpp_cq_context {
    chpp_le32 mtt_base;
    uint8_t  log_page_size;
    uint8_t  state;             /* QUERY_CQ: enum chpp_res_state */
    uint8_t  arm;               /* QUERY_CQ: 0, CHPP_CQ_DB_ARM_NEXT/_SOL */
    uint8_t  reserved0;
    chpp_le32 num_entries;       /* power of two */
    chpp_le32 eqn;               /* EQ of its completion events */
    chpp_le32 producer_index;    /* QUERY_CQ */
    chpp_le32 consumer_index;    /* QUERY_CQ */
    chpp_le16 uar;               /* UAR page allowed to ring its doorbell */
    chpp_le16 reserved1;
    chpp_le32 dropped;           /* QUERY_CQ: CQEs lost after an overrun */
    chpp_le32 reserved2[8];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_cq_context, 64);

/* CQE: 32 bytes, owner in bit 7 of byte 31. */
#define CHPP_CQE_SIZE               32
#define CHPP_CQE_OWNER              0x80u

enum chpp_cqe_opcode {          /* values of enum ib_wc_opcode */
    CHPP_CQE_OP_SEND            = 0,
    CHPP_CQE_OP_RDMA_WRITE      = 1,
    CHPP_CQE_OP_RDMA_READ       = 2,
    CHPP_CQE_OP_COMP_SWAP       = 3,
    CHPP_CQE_OP_FETCH_ADD       = 4,
    CHPP_CQE_OP_LOCAL_INV       = 6,    /* ABI 1.6 */
    CHPP_CQE_OP_REG_MR          = 8,    /* ABI 1.6 */
    CHPP_CQE_OP_RECV            = 128,
    CHPP_CQE_OP_RECV_RDMA_IMM   = 129,
};

enum chpp_wc_status {           /* values of enum ib_wc_status */
    CHPP_WC_SUCCESS             = 0,
    CHPP_WC_LOC_LEN_ERR         = 1,
    CHPP_WC_LOC_QP_OP_ERR       = 2,
    CHPP_WC_LOC_PROT_ERR        = 4,
    CHPP_WC_WR_FLUSH_ERR        = 5,
    CHPP_WC_MW_BIND_ERR         = 6,
    CHPP_WC_BAD_RESP_ERR        = 7,
    CHPP_WC_LOC_ACCESS_ERR      = 8,
    CHPP_WC_REM_INV_REQ_ERR     = 9,
    CHPP_WC_REM_ACCESS_ERR      = 10,
    CHPP_WC_REM_OP_ERR          = 11,
    CHPP_WC_RETRY_EXC_ERR       = 12,
    CHPP_WC_RNR_RETRY_EXC_ERR   = 13,
    CHPP_WC_GENERAL_ERR         = 21,
};

#define CHPP_CQE_FLAG_IMM           (1u << 0)   /* imm is valid */
#define CHPP_CQE_FLAG_SEND          (1u << 1)   /* send-queue completion */
#define CHPP_CQE_FLAG_SOLICITED     (1u << 2)   /* SE bit of the message */
/* ABI 1.6: a SEND_INV invalidated the region whose key is in imm. */
#define CHPP_CQE_FLAG_INV           (1u << 3)

struct chpp_cqe {
    chpp_le64 wr_id;
    chpp_le32 byte_len;
    chpp_le32 imm;
    chpp_le32 qpn;               /* local QP */
    chpp_le32 src_qp;            /* receive: sender's QPN; send: WQE index */
    chpp_le16 src_node;          /* receive: sender's node id */
    uint8_t  src_vf;
    uint8_t  vendor_err;        /* enum chpp_vendor_err for errors */
    uint8_t  opcode;            /* enum chpp_cqe_opcode */
    uint8_t  status;            /* enum chpp_wc_status */
    uint8_t  flags;             /* CHPP_CQE_FLAG_* */
    uint8_t  owner;             /* bit 7: CHPP_CQE_OWNER */
};
CHPP_ABI_ASSERT_SIZE(struct chpp_cqe, CHPP_CQE_SIZE);

/* Reasons behind error CQEs, in chpp_cqe.vendor_err. */
enum chpp_vendor_err {
    CHPP_VERR_NONE = 0,
    CHPP_VERR_BAD_OPCODE,       /* opcode unknown or not for this QP type */
    CHPP_VERR_BAD_SGE_COUNT,    /* more segments than fit the stride */
    CHPP_VERR_INLINE_TOO_LONG,
    CHPP_VERR_LENGTH_OVERFLOW,  /* message longer than max_msg_size */
    CHPP_VERR_NAP_TOO_LONG,     /* NAP payload over CHPP_NAP_MAX_PAYLOAD */
    CHPP_VERR_BAD_LKEY,
    CHPP_VERR_LKEY_PD,
    CHPP_VERR_LKEY_RIGHTS,
    CHPP_VERR_LKEY_BOUNDS,
    CHPP_VERR_DMA,              /* translated address not backed */
    CHPP_VERR_RECV_TOO_SMALL,   /* receive WQE shorter than the message */
    CHPP_VERR_RKEY,             /* remote: bad key, rights or bounds */
    CHPP_VERR_REMOTE_INVALID,   /* remote: request not valid for the QP */
    CHPP_VERR_RNR,              /* remote had no receive WQE */
    CHPP_VERR_TIMEOUT,          /* no response within the retries */
    CHPP_VERR_FLUSH,
    CHPP_VERR_ATOMIC_ALIGN,     /* target log only: atomic not aligned */
    CHPP_VERR_NO_ROUTE,         /* destination not reachable */
    CHPP_VERR_BAD_RESPONSE,     /* GET response not of our path MTU */
};

/*
 * UAR page layout (offsets inside each 4 KiB page).  A QP or CQ accepts
 * doorbells only through the UAR page named in its context.
 */
#define CHPP_UAR_SQ_DB              0x00    /* 32-bit: qpn << 16 | sq pi */
#define CHPP_UAR_RQ_DB              0x08    /* 32-bit: qpn << 16 | rq pi */
#define CHPP_UAR_CQ_DB              0x10    /* 64-bit, see below */
#define CHPP_UAR_SRQ_DB             0x18    /* ABI 1.5: srqn << 16 | pi */
#define CHPP_UAR_DB_QPN_SHIFT       16
#define CHPP_UAR_DB_PI_MASK         0xffffu
/*
 * ABI 1.4, read-only (a write is refused): the doorbell FIFO as the owner
 * of this UAR page sees it, for software flow control.  Bits 7:0 entries
 * waiting in the function's FIFO for QPs of this page, 15:8 entries
 * waiting in all, 23:16 CHPP_DB_FIFO_DEPTH.
 */
#define CHPP_UAR_DB_STATUS          0x20
#define CHPP_UAR_DB_STATUS_MINE(v)  ((v) & 0xffu)
#define CHPP_UAR_DB_STATUS_FILL(v)  (((v) >> 8) & 0xffu)
#define CHPP_UAR_DB_STATUS_DEPTH(v) (((v) >> 16) & 0xffu)
/* CQ doorbell: bits 23:0 cqn, 27:24 command, 55:32 consumer index. */
#define CHPP_CQ_DB_CQN_MASK         0x00ffffffu
#define CHPP_CQ_DB_CMD_SHIFT        24
#define CHPP_CQ_DB_CMD_MASK         (0xfu << CHPP_CQ_DB_CMD_SHIFT)
#define CHPP_CQ_DB_CI_SHIFT         32
#define CHPP_CQ_DB_CI_MASK          0x00ffffffu
enum chpp_cq_db_cmd {
    CHPP_CQ_DB_SET_CI           = 0,    /* only update the consumer index */
    CHPP_CQ_DB_ARM_NEXT         = 1,    /* event on the next CQE */
    CHPP_CQ_DB_ARM_SOL          = 2,    /* event on solicited or error CQE */
};

/* Doorbell FIFO of the function (seed 004: 32 entries per function). */
#define CHPP_DB_FIFO_DEPTH          32

/*
 * Queue pairs.  QPN = index, 0 .. num-qps - 1; every QP exists, in RESET,
 * until RST2INIT gives it its queues.
 */
#define CHPP_QPS_LIST(X) \
    X(RESET,            0) \
    X(INIT,             1) \
    X(RTR,              2) \
    X(RTS,              3) \
    X(SQD,              4) \
    X(SQE,              5) \
    X(ERR,              6)

enum chpp_qp_state {            /* values of enum ib_qp_state */
    CHPP_QPS_LIST(CHPP_ABI_ENUM_QPS)
};
#define CHPP_QPS_COUNT              (0 CHPP_QPS_LIST(CHPP_ABI_COUNT))
CHPP_ABI_NAME_FN(chpp_qp_state_name, CHPP_QPS_LIST)
/* Dense 0..ERR, so a state indexes tables (QP_STATES in the gdb helper). */
_Static_assert(CHPP_QPS_COUNT == CHPP_QPS_ERR + 1, "QP states are 0..ERR");

#define CHPP_QPT_LIST(X) \
    X(RC,               0) \
    X(UC,               1) \
    X(UD,               2) \
    X(SMI,              0x10)       /* ABI 1.6: QPN 0 only */ \
    X(GSI,              0x11)       /* ABI 1.6: QPN 1 only */

enum chpp_qp_type {
    CHPP_QPT_LIST(CHPP_ABI_ENUM_QPT)
};
CHPP_ABI_NAME_FN(chpp_qp_type_name, CHPP_QPT_LIST)

/* Attribute mask of modify-QP commands (= enum ib_qp_attr_mask bits). */
#define CHPP_QP_ATTR_STATE          (1u << 0)   /* never set: implied */
#define CHPP_QP_ATTR_CUR_STATE      (1u << 1)
#define CHPP_QP_ATTR_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define CHPP_QP_ATTR_ACCESS_FLAGS   (1u << 3)
#define CHPP_QP_ATTR_PKEY_INDEX     (1u << 4)
#define CHPP_QP_ATTR_PORT           (1u << 5)
#define CHPP_QP_ATTR_QKEY           (1u << 6)
#define CHPP_QP_ATTR_AV             (1u << 7)   /* dest node/vf, magic */
#define CHPP_QP_ATTR_PATH_MTU       (1u << 8)
#define CHPP_QP_ATTR_TIMEOUT        (1u << 9)
#define CHPP_QP_ATTR_RETRY_CNT      (1u << 10)
#define CHPP_QP_ATTR_RNR_RETRY      (1u << 11)
#define CHPP_QP_ATTR_RQ_PSN         (1u << 12)
#define CHPP_QP_ATTR_MAX_QP_RD_ATOMIC (1u << 13)
#define CHPP_QP_ATTR_ALT_PATH       (1u << 14)  /* not supported */
#define CHPP_QP_ATTR_MIN_RNR_TIMER  (1u << 15)
#define CHPP_QP_ATTR_SQ_PSN         (1u << 16)
#define CHPP_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define CHPP_QP_ATTR_PATH_MIG_STATE (1u << 18)  /* accepted, ignored */
#define CHPP_QP_ATTR_CAP            (1u << 19)  /* not supported */
#define CHPP_QP_ATTR_DEST_QPN       (1u << 20)

/* Access flags (QP and WQE rights), values of enum ib_access_flags. */
#define CHPP_ACCESS_LOCAL_WRITE     (1u << 0)   /* accepted, no effect */
#define CHPP_ACCESS_REMOTE_WRITE    (1u << 1)
#define CHPP_ACCESS_REMOTE_READ     (1u << 2)
#define CHPP_ACCESS_REMOTE_ATOMIC   (1u << 3)

#define CHPP_QP_FLAG_SQ_SIG_ALL     (1u << 0)   /* every send WQE signals */
/*
 * ABI 1.5: the QP takes its receive WQEs from the SRQ srqn; its RQ fields
 * (rq_mtt_base, log_rq_size, log_rq_stride, rq_log_page_size) are ignored
 * and its RQ doorbells refused.
 */
#define CHPP_QP_FLAG_SRQ            (1u << 1)

#define CHPP_MIN_WQE_SHIFT          6           /* 64-byte WQEs */
#define CHPP_MAX_WQE_SHIFT          11          /* 2 KiB WQEs */
#define CHPP_MAX_QP_WQES            32768
#define CHPP_MAX_SGE                32
#define CHPP_MAX_RD_ATOMIC          16
#define CHPP_MAX_MSG_SIZE           (1u << 31)
/*
 * Inline data of a send WQE follows at most 48 bytes: the control segment,
 * then the UD segment (UD SEND) or the remote address (RDMA WRITE; UD has
 * none), then the inline segment.  The opcodes that carry inline data
 * (SEND, PUT, their _IMM and _INV forms, NAP) have no atomic segment, so a
 * stride S holds S - CHPP_WQE_INLINE_HDR bytes of it for every one of them.
 */
#define CHPP_WQE_INLINE_HDR         48
/* Inline data that fits the largest WQE. */
#define CHPP_MAX_INLINE             ((1u << CHPP_MAX_WQE_SHIFT) - \
                                     CHPP_WQE_INLINE_HDR)

/*
 * Modify-QP mailbox: the attribute mask, then the QP context.  RST2INIT
 * also reads the creation fields (type, pd, CQs, queues, uar, magic,
 * flags); later commands read only the fields their mask names.
 */
struct chpp_qp_context {
    uint8_t  state;             /* QUERY_QP: enum chpp_qp_state */
    uint8_t  type;              /* enum chpp_qp_type */
    uint8_t  port;              /* 1 */
    uint8_t  path_mtu;          /* InfiniBand MTU enum 1..5 (256..4096) */
    chpp_le32 pd;
    chpp_le32 send_cqn;
    chpp_le32 recv_cqn;
    chpp_le32 sq_mtt_base;
    chpp_le32 rq_mtt_base;
    uint8_t  log_sq_size;       /* number of WQEs = 2^log_sq_size */
    uint8_t  log_sq_stride;     /* WQE size = 2^log_sq_stride bytes */
    uint8_t  log_rq_size;
    uint8_t  log_rq_stride;
    uint8_t  sq_log_page_size;
    uint8_t  rq_log_page_size;
    chpp_le16 uar;               /* UAR page of its doorbells */
    chpp_le32 access_flags;      /* CHPP_ACCESS_* */
    chpp_le32 qkey;
    chpp_le32 dest_node;         /* AV: destination node id */
    chpp_le32 dest_qpn;
    chpp_le32 sq_psn;            /* next PSN to send (24 bits) */
    chpp_le32 rq_psn;            /* next PSN expected (24 bits) */
    uint8_t  timeout;           /* local ACK timeout: 4.096 us * 2^n, 0 = inf */
    uint8_t  retry_cnt;         /* 0..7 */
    uint8_t  rnr_retry;         /* 0..7, 7 = infinite */
    uint8_t  min_rnr_timer;     /* IB RNR timer encoding 0..31 */
    uint8_t  max_rd_atomic;     /* initiator depth */
    uint8_t  max_dest_rd_atomic;
    uint8_t  magic;             /* inbound packets must carry this */
    uint8_t  dest_magic;        /* AV: magic of the remote QP */
    chpp_le16 pkey_index;
    uint8_t  dest_vf;           /* AV: destination function */
    uint8_t  flags;             /* CHPP_QP_FLAG_* */
    chpp_le32 sq_pi;             /* QUERY_QP: doorbell producer indexes */
    chpp_le32 sq_ci;             /* QUERY_QP: next send WQE to start */
    chpp_le32 rq_pi;
    chpp_le32 rq_ci;             /* QUERY_QP: next receive WQE to use */
    chpp_le32 sq_inflight;       /* QUERY_QP: WQEs started, not completed */
    uint8_t  sq_draining;       /* QUERY_QP: SQD not yet drained */
    uint8_t  en_sqd_async_notify;
    uint8_t  reserved0[2];
    chpp_le32 srqn;              /* ABI 1.5: with CHPP_QP_FLAG_SRQ */
    chpp_le32 reserved1[8];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_qp_context, 128);

struct chpp_qp_modify {
    chpp_le32 attr_mask;         /* CHPP_QP_ATTR_* */
    chpp_le32 reserved[3];
    struct chpp_qp_context ctx;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_qp_modify, 144);

/*
 * Work queue entries.  Send WQE: control segment, then by opcode a UD
 * segment (UD QPs), a remote-address segment (PUT/GET/atomics), an atomic
 * segment (atomics), then either num_sge data segments or one inline
 * segment.  Everything must fit in the QP's send stride.
 */
enum chpp_wqe_opcode {
    CHPP_WQE_SEND           = 0x00, /* verbs SEND, segmented by path MTU */
    CHPP_WQE_SEND_IMM       = 0x01,
    CHPP_WQE_NAP            = 0x02, /* native NAP: one packet, <= 2 KiB */
    CHPP_WQE_PUT            = 0x08, /* RDMA write */
    CHPP_WQE_PUT_IMM        = 0x09, /* RDMA write with notification */
    CHPP_WQE_GET            = 0x10, /* RDMA read */
    CHPP_WQE_ATOMIC_CS      = 0x11, /* compare and swap, 8 bytes */
    CHPP_WQE_ATOMIC_FA      = 0x12, /* fetch and add, 8 bytes */
    /* ABI 1.6: fast registration (docs/memory-regions.md) */
    CHPP_WQE_SEND_INV       = 0x03, /* SEND; the responder frees rkey imm */
    CHPP_WQE_LOCAL_INV      = 0x20, /* free the fast-reg region of key imm */
    CHPP_WQE_REG_MR         = 0x21, /* register: struct chpp_wqe_reg */
};

#define CHPP_WQE_SIGNALED           (1u << 0)
#define CHPP_WQE_SOLICITED          (1u << 1)
#define CHPP_WQE_FENCE              (1u << 2)
#define CHPP_WQE_INLINE             (1u << 3)

#define CHPP_NAP_MAX_PAYLOAD        2048

struct chpp_wqe_ctrl {
    uint8_t  opcode;            /* enum chpp_wqe_opcode */
    uint8_t  flags;             /* CHPP_WQE_* */
    uint8_t  num_sge;
    uint8_t  reserved;
    chpp_le32 imm;               /* SEND_IMM, PUT_IMM */
    chpp_le64 wr_id;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_ctrl, 16);

struct chpp_wqe_ud {
    chpp_le32 dest_node;
    chpp_le32 dest_qpn;
    chpp_le32 qkey;
    uint8_t  dest_vf;
    uint8_t  dest_magic;
    uint8_t  flags;             /* ABI 1.6: CHPP_WQE_UD_* */
    uint8_t  reserved;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_ud, 16);

/* REG_MR (ABI 1.6): after the control segment, 32 bytes. */
struct chpp_wqe_reg {
    chpp_le64 iova;              /* the region's start */
    chpp_le64 length;
    chpp_le64 page_list;         /* DMA address of npages page addresses */
    chpp_le32 key;               /* new key: this MPT's index, any tag */
    chpp_le16 npages;            /* 1..the region's max_pages */
    uint8_t  log_page_size;     /* 12..30 */
    uint8_t  access;            /* CHPP_MPT_LOCAL_WRITE .. _REMOTE_ATOMIC */
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_reg, 32);

struct chpp_wqe_raddr {
    chpp_le64 raddr;
    chpp_le32 rkey;
    chpp_le32 reserved;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_raddr, 16);

struct chpp_wqe_atomic {
    chpp_le64 swap_add;          /* CS: swap value; FA: addend */
    chpp_le64 compare;           /* CS only */
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_atomic, 16);

struct chpp_wqe_sge {
    chpp_le32 length;
    chpp_le32 lkey;
    chpp_le64 addr;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_sge, 16);

/* Inline segment: the byte count, then the data (padded to 16 bytes). */
struct chpp_wqe_inline {
    chpp_le32 length;
    chpp_le32 reserved[3];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_wqe_inline, 16);

/* Receive WQE: header, then num_sge data segments. */
struct chpp_rwqe_hdr {
    chpp_le64 wr_id;
    chpp_le32 num_sge;
    chpp_le32 reserved;
};
CHPP_ABI_ASSERT_SIZE(struct chpp_rwqe_hdr, 16);

/* UD receives: the first 40 bytes of the buffer are the (zeroed) GRH. */
#define CHPP_UD_GRH_SIZE            40

/*
 * Management datagrams (ABI 1.6, docs/management-datagrams.md).
 *
 * Special QPs: QPN 0 of a function may be created (RST2INIT) with type
 * CHPP_QPT_SMI and QPN 1 with CHPP_QPT_GSI.  Both are UD QPs whose messages
 * are MADs of at most CHPP_MAD_SIZE bytes, sent to the QP0 or QP1 of the
 * destination with magic 0.  A GSI QP accepts only Q_Key CHPP_QP1_QKEY; an
 * SMI QP ignores the Q_Key.
 *
 * UD segment flag CHPP_WQE_UD_PEER (SMI and GSI QPs): dest_node and
 * dest_vf are ignored, the message goes to the PF of the node at the
 * other end of the port's link (a directed-route SMP to the permissive
 * LID); without a link it is dropped.
 */
#define CHPP_WQE_UD_PEER            (1u << 0)
/*
 * UD segment flag CHPP_WQE_UD_MCAST (UD QPs): a multicast datagram to the
 * group whose MLID is in dest_node (CHPP_MLID_MIN..CHPP_MLID_MAX); dest_vf,
 * dest_qpn and dest_magic are ignored.  Every UD QP attached to the MLID
 * (ATTACH_MCG) on every function of this node and of the peer's receives
 * it, the sender's own QP included.
 */
#define CHPP_WQE_UD_MCAST           (1u << 1)
#define CHPP_MCAST_QPN              0xffffffu
#define CHPP_MLID_MIN               0xc000u
#define CHPP_MLID_MAX               0xfffeu
#define CHPP_MAD_SIZE               256
#define CHPP_QP1_QKEY               0x80010000u
#define CHPP_LID_PERMISSIVE         0xffffu

/*
 * MAD_IFC: in_param = mailbox holding the MAD (CHPP_MAD_SIZE bytes, in
 * network byte order as on the wire), out_param = mailbox the device
 * writes struct chpp_mad_ifc_out to, in_modifier = port (bits 7:0) |
 * CHPP_MAD_IFC_LOCAL.  The port's subnet management agent (SMA: classes
 * 0x01 and 0x81) or performance management agent (PMA: class 0x04)
 * processes it.
 */
#define CHPP_MAD_IFC_PORT_MASK      0xffu
/*
 * The MAD comes from the driver itself, not from the wire: it may also
 * set PortInfo:CapabilityMask (IsSM when an SM opens the port) and
 * NodeDescription.
 */
#define CHPP_MAD_IFC_LOCAL          (1u << 16)

/* chpp_mad_ifc_out.flags */
#define CHPP_MAD_IFC_REPLY          (1u << 0)   /* mad[] is to be sent back */
#define CHPP_MAD_IFC_LID_CHANGE     (1u << 1)   /* Set changed LID or LMC */
#define CHPP_MAD_IFC_SM_CHANGE      (1u << 2)   /* ... the SM LID or SL */
#define CHPP_MAD_IFC_CLIENT_REREG   (1u << 3)   /* ... asked to re-register */
#define CHPP_MAD_IFC_PKEY_CHANGE    (1u << 4)   /* ... the P_Key table */
#define CHPP_MAD_IFC_GID_CHANGE     (1u << 5)   /* ... the GID prefix */
#define CHPP_MAD_IFC_CAP_CHANGE     (1u << 6)   /* ... the capability mask */

struct chpp_mad_ifc_out {
    uint8_t  mad[CHPP_MAD_SIZE]; /* the response (big-endian, a MAD) */
    chpp_le32 flags;             /* CHPP_MAD_IFC_* */
    chpp_le32 reserved[3];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_mad_ifc_out, CHPP_MAD_SIZE + 16);

/*
 * ATTACH_MCG / DETACH_MCG: in_modifier = QPN (a UD QP out of RESET),
 * in_param = mailbox with struct chpp_mcg_attach.  A function has
 * CHPP_MAX_MCGS groups (by MGID) of at most CHPP_MCG_MAX_QPS QPs each.
 */
#define CHPP_MAX_MCGS               64
#define CHPP_MCG_MAX_QPS            8
struct chpp_mcg_attach {
    uint8_t  mgid[16];          /* network byte order, as in a GID */
    chpp_le16 mlid;              /* CHPP_MLID_MIN..CHPP_MLID_MAX */
    chpp_le16 reserved0;
    chpp_le32 reserved1[3];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_mcg_attach, 32);

/*
 * INIT_PORT in_modifier flag: the port's logical state stops at INIT when
 * its link comes up, until a subnet manager moves it to ARMED and ACTIVE
 * (PortInfo:PortState).  Without it the port goes ACTIVE at once, as if a
 * subnet manager had configured it.
 */
#define CHPP_INIT_PORT_WAIT_SM      (1u << 16)

/*
 * GUIDs: node GUID = port GUID = CHPP_PORT_GUID(node, function); the
 * system image GUID is the PF's, CHPP_PORT_GUID(node, 0).  The IB vendor
 * id (an OUI) of NodeInfo.
 */
#define CHPP_NODE_GUID(node, fn)    CHPP_PORT_GUID(node, fn)
#define CHPP_IB_VENDOR_ID           0x001234u
/*
 * Shared receive queues (ABI 1.5, docs/shared-receive-queues.md).  SRQN =
 * index, 0 .. num-srqs - 1.  The ring is 2^log_size receive WQEs (the RQ's
 * format) of 2^log_stride bytes, mapped by MTT entries mtt_base.. like an
 * RQ, followed at byte 2^(log_size + log_stride) by the consumer record
 * (struct chpp_srq_record), which the device writes.
 */
#define CHPP_MAX_SRQ_WQES           32768
#define CHPP_DEFAULT_SRQS           8
#define CHPP_MAX_SRQS               4096

/* SW2HW_SRQ: in_modifier = srqn, in_param = mailbox; QUERY_SRQ output. */
struct chpp_srq_context {
    chpp_le32 pd;                /* the PD of the WQEs' lkeys */
    chpp_le32 mtt_base;          /* MTT entry of the ring's first page */
    uint8_t  log_size;          /* 2^log_size WQEs, 0..15 */
    uint8_t  log_stride;        /* WQE size 2^log_stride bytes, 6..11 */
    uint8_t  log_page_size;     /* 12..30 */
    uint8_t  state;             /* QUERY_SRQ: enum chpp_res_state */
    chpp_le16 uar;               /* UAR page allowed to ring its doorbell */
    chpp_le16 reserved0;
    chpp_le32 limit;             /* QUERY_SRQ: armed limit, 0 = not armed */
    chpp_le32 pi;                /* QUERY_SRQ: producer index (doorbell) */
    chpp_le32 ci;                /* QUERY_SRQ: next WQE to take */
    chpp_le32 free;              /* QUERY_SRQ: the record's free index */
    chpp_le32 num_qps;           /* QUERY_SRQ: QPs attached */
    chpp_le32 reserved1[7];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_srq_context, 64);

/*
 * The consumer record after the ring, written by the device after each WQE
 * it takes and each message that lets a WQE go.  Every WQE before index
 * free (16-bit counter, like the producer index) is done with: its slot
 * may be posted again.  WQEs from free to ci were taken and some of them
 * (a message arriving in several packets) are still being filled.
 */
struct chpp_srq_record {
    chpp_le32 free;
    chpp_le32 ci;                /* next WQE the device takes */
    chpp_le32 reserved[2];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_srq_record, 16);

/* ARM_SRQ: in_modifier = srqn, in_param = limit (0 disarms, <= size). */

#endif /* CHPP_HCA_ABI_H */
