/*
 * chpp-hca device ABI: register offsets, command opcodes, status codes and
 * the little-endian layouts of mailboxes and queue entries.
 *
 * This header is the single source of truth shared by the QEMU device model,
 * the qtests, the guest kernel driver and the guest user-space provider.  It
 * depends only on fixed-width integer types.  Every multi-byte field is
 * little-endian; convert with le*_to_cpu()/cpu_to_le*() on big-endian hosts.
 * docs/ explains the semantics of everything defined here.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
 */
#ifndef CHPP_HCA_ABI_H
#define CHPP_HCA_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define CHPP_ABI_ASSERT_SIZE(type, size) \
    _Static_assert(sizeof(type) == (size), #type " must be " #size " bytes")

/* ABI version, reported by CHPP_REG_ABI_VERSION and QUERY_FW. */
#define CHPP_ABI_VERSION_MAJOR      1
#define CHPP_ABI_VERSION_MINOR      0
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

#define CHPP_MAGIC                  0x50504843u /* "CHPP" in memory order */

#define CHPP_CAP_CMD_EVENTS         (1u << 0) /* HCR e bit supported */
#define CHPP_CAP_VF                 (1u << 1) /* this function is a VF */

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

/* Counters: read-only, 32-bit, wrap, cleared by reset. */
#define CHPP_REG_CNT_BASE           0x0800
#define CHPP_REG_CNT(idx)           (CHPP_REG_CNT_BASE + 4 * (idx))
enum chpp_counter {
    CHPP_CNT_CMDS = 0,          /* commands executed */
    CHPP_CNT_CMD_ERRORS,        /* commands completed with status != OK */
    CHPP_CNT_CMD_REJECTED,      /* go written while a command was running */
    CHPP_CNT_GUEST_ERRORS,      /* every logged guest error */
    CHPP_CNT_EVENTS,            /* EQEs written */
    CHPP_CNT_EVENTS_DROPPED,    /* events lost: no EQ, EQ overrun, DMA */
    CHPP_CNT_IRQS,              /* MSI-X messages sent */
    CHPP_CNT_IRQS_MASKED,       /* interrupts not sent: MSI-X disabled */
    CHPP_CNT_DB_ERRORS,         /* malformed doorbells */
    CHPP_CNT_DMA_ERRORS,        /* DMA accesses that failed */
    CHPP_CNT_NUM
};

/* MSI-X table and PBA live in BAR0. */
#define CHPP_MSIX_TABLE_OFFSET      0x2000
#define CHPP_MSIX_PBA_OFFSET        0x3000
#define CHPP_MAX_MSIX_VECTORS       64

/*
 * BAR2: UAR pages, one per user context, CHPP_UAR_PAGE_SIZE each.  The
 * doorbells inside a page are defined by the datapath; until then every
 * access is accepted, reads return 0 and writes are ignored.
 */
#define CHPP_UAR_PAGE_SHIFT         12
#define CHPP_UAR_PAGE_SIZE          (1u << CHPP_UAR_PAGE_SHIFT)
#define CHPP_MAX_UAR_PAGES          1024

/*
 * Commands.
 */
enum chpp_opcode {
    CHPP_CMD_QUERY_DEV_CAP  = 0x003,
    CHPP_CMD_QUERY_FW       = 0x004,
    CHPP_CMD_INIT_HCA       = 0x007,
    CHPP_CMD_CLOSE_HCA      = 0x008,
    CHPP_CMD_INIT_PORT      = 0x009,
    CHPP_CMD_CLOSE_PORT     = 0x00a,
    CHPP_CMD_MAP_EQ         = 0x012,
    CHPP_CMD_SW2HW_EQ       = 0x013,
    CHPP_CMD_HW2SW_EQ       = 0x014,
    CHPP_CMD_QUERY_EQ       = 0x015,
    CHPP_CMD_NOP            = 0x031,
    CHPP_CMD_QUERY_PORT     = 0x043,
};

/* Status codes in HCR bits 31:24 and in command-completion EQEs. */
enum chpp_status {
    CHPP_STAT_OK            = 0x00,
    CHPP_STAT_INTERNAL_ERR  = 0x01, /* device model failure */
    CHPP_STAT_BAD_OP        = 0x02, /* unknown opcode or bad opmod */
    CHPP_STAT_BAD_PARAM     = 0x03, /* a field has an invalid value */
    CHPP_STAT_BAD_SYS_STATE = 0x04, /* wrong HCA state (INIT_HCA) */
    CHPP_STAT_BAD_RESOURCE  = 0x05, /* resource does not exist */
    CHPP_STAT_RESOURCE_BUSY = 0x06, /* resource still in use */
    CHPP_STAT_EXCEED_LIM    = 0x08, /* over a device limit */
    CHPP_STAT_BAD_RES_STATE = 0x09, /* resource in the wrong state */
    CHPP_STAT_BAD_INDEX     = 0x0a, /* index out of range */
    CHPP_STAT_BAD_QP_STATE  = 0x10, /* illegal QP transition */
    CHPP_STAT_BAD_SIZE      = 0x40, /* queue size invalid */
    CHPP_STAT_BAD_MAILBOX   = 0x41, /* mailbox address unaligned */
    CHPP_STAT_DMA_ERR       = 0x42, /* mailbox DMA failed */
};

/* Mailboxes: one page of guest memory, naturally aligned. */
#define CHPP_MAILBOX_SIZE           4096
#define CHPP_MAILBOX_ALIGN          4096

/* QUERY_FW: out_param = output mailbox. */
struct chpp_fw_info {
    uint16_t fw_major;
    uint16_t fw_minor;
    uint16_t fw_subminor;
    uint16_t reserved0;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t reserved1[5];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_fw_info, 32);

/* QUERY_DEV_CAP: out_param = output mailbox. */
#define CHPP_DEV_CAP_FLAG_CMD_EVENTS    (1u << 0)
#define CHPP_DEV_CAP_FLAG_VF            (1u << 1)

struct chpp_dev_cap {
    uint32_t flags;             /* CHPP_DEV_CAP_FLAG_* */
    uint16_t func;              /* 0 = PF */
    uint16_t node_id;
    uint8_t  num_ports;
    uint8_t  log_uar_page_size;
    uint16_t reserved0;
    uint32_t num_uar_pages;
    uint32_t num_msix;
    uint32_t max_eqs;
    uint32_t max_eq_entries;
    uint32_t max_cqs;
    uint32_t max_cq_entries;
    uint32_t max_qps;
    uint32_t max_qp_wqes;
    uint32_t max_mpts;
    uint32_t max_mtt_entries;
    uint32_t max_pds;
    uint32_t max_srqs;
    uint32_t max_sge;
    uint32_t max_inline;
    uint32_t max_msg_size;
    uint32_t reserved1;
    uint64_t page_size_cap;     /* bit n set: pages of 2^n bytes */
    uint32_t reserved2[10];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_dev_cap, 128);

/* INIT_HCA: in_modifier = CHPP_ABI_VERSION_MAJOR the driver speaks. */

/* Ports. */
#define CHPP_NUM_PORTS              1
enum chpp_port_state {          /* InfiniBand PortState values */
    CHPP_PORT_DOWN      = 1,
    CHPP_PORT_INIT      = 2,
    CHPP_PORT_ARMED     = 3,
    CHPP_PORT_ACTIVE    = 4,
};
enum chpp_port_phys_state {     /* InfiniBand PortPhysicalState values */
    CHPP_PORT_PHYS_POLLING  = 2,
    CHPP_PORT_PHYS_DISABLED = 3,
    CHPP_PORT_PHYS_LINK_UP  = 5,
};
#define CHPP_MTU_4096               5   /* InfiniBand MTU enum */
#define CHPP_PORT_GUID_BASE         0x4348505000000000ull

/* QUERY_PORT: in_modifier = port (1), out_param = output mailbox. */
struct chpp_port_info {
    uint8_t  state;             /* enum chpp_port_state */
    uint8_t  phys_state;        /* enum chpp_port_phys_state */
    uint8_t  max_mtu;           /* InfiniBand MTU enum */
    uint8_t  active_mtu;
    uint8_t  link_width;        /* InfiniBand width enum: 1 = 1x */
    uint8_t  link_speed;        /* InfiniBand speed enum: 1 = SDR */
    uint16_t lid;               /* node-id + 1 */
    uint32_t gid_tbl_len;
    uint32_t pkey_tbl_len;
    uint32_t max_msg_size;
    uint32_t reserved0;
    uint64_t port_guid;         /* CHPP_PORT_GUID_BASE | node-id */
    uint64_t gid_prefix;
    uint32_t reserved1[6];
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
    uint64_t base_addr;         /* DMA address of the ring */
    uint32_t num_entries;       /* power of two */
    uint16_t msix_vector;
    uint8_t  state;             /* QUERY_EQ: enum chpp_eq_state */
    uint8_t  flags;             /* SW2HW_EQ: CHPP_EQ_FLAG_* */
    uint32_t producer_index;    /* QUERY_EQ */
    uint32_t consumer_index;    /* QUERY_EQ */
    uint32_t dropped;           /* QUERY_EQ: events lost on this EQ */
    uint32_t reserved[9];
};
CHPP_ABI_ASSERT_SIZE(struct chpp_eq_context, 64);

/* MAP_EQ: in_param = mask of event types, in_modifier = eqn | UNMAP. */
#define CHPP_MAP_EQ_UNMAP           (1u << 31)
#define CHPP_MAP_EQ_EQN_MASK        0xffffu

/* Event types (EQE type field; bit n of the MAP_EQ mask). */
enum chpp_event_type {
    CHPP_EVENT_COMP             = 0x00, /* routed by the CQ, not MAP_EQ */
    CHPP_EVENT_PATH_MIG         = 0x01,
    CHPP_EVENT_COMM_EST         = 0x02,
    CHPP_EVENT_SQ_DRAINED       = 0x03,
    CHPP_EVENT_CQ_ERROR         = 0x04,
    CHPP_EVENT_WQ_CATAS_ERROR   = 0x05,
    CHPP_EVENT_LOCAL_CATAS      = 0x08,
    CHPP_EVENT_PORT_CHANGE      = 0x09,
    CHPP_EVENT_CMD              = 0x0a,
    CHPP_EVENT_EQ_OVERFLOW      = 0x0f,
    CHPP_EVENT_WQ_INVAL_REQ     = 0x10,
    CHPP_EVENT_WQ_ACCESS_ERROR  = 0x11,
    CHPP_EVENT_SRQ_CATAS_ERROR  = 0x12,
    CHPP_EVENT_LAST_WQE_REACHED = 0x13,
    CHPP_EVENT_SRQ_LIMIT        = 0x14,
    CHPP_EVENT_DOORBELL_ERROR   = 0x18,
    CHPP_EVENT_NUM_TYPES        = 64
};
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
     (1ull << CHPP_EVENT_DOORBELL_ERROR))

/*
 * EQE: 32 bytes.  The device writes bytes 0..27 first, then the owner word.
 * Entry i of the ring (index & (num_entries - 1)) is valid for software when
 * its owner bit equals ((index / num_entries) & 1) ^ 1: 1 on the first pass
 * over a zeroed ring, 0 on the second, and so on.
 */
#define CHPP_EQE_SIZE               32
#define CHPP_EQE_OWNER              (1u << 31)

struct chpp_eqe_cmd {
    uint16_t token;
    uint8_t  status;            /* enum chpp_status */
    uint8_t  reserved0;
    uint32_t out_param_lo;      /* HCR out_param at completion */
    uint32_t out_param_hi;
    uint32_t reserved1[3];
};

struct chpp_eqe_port {
    uint32_t port;
    uint32_t reserved[5];
};

struct chpp_eqe_eq_overflow {
    uint32_t eqn;               /* the EQ that overran */
    uint32_t reserved[5];
};

struct chpp_eqe_doorbell_error {
    uint32_t offset;            /* BAR offset of the bad doorbell */
    uint32_t value;             /* the value written */
    uint32_t reserved[4];
};

struct chpp_eqe {
    uint8_t  type;              /* enum chpp_event_type */
    uint8_t  subtype;           /* PORT_CHANGE: new port state */
    uint16_t reserved0;
    union {
        struct chpp_eqe_cmd cmd;
        struct chpp_eqe_port port;
        struct chpp_eqe_eq_overflow eq_overflow;
        struct chpp_eqe_doorbell_error db_error;
        uint32_t raw[6];
    } event;
    uint32_t owner;             /* bit 31: CHPP_EQE_OWNER */
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

#endif /* CHPP_HCA_ABI_H */
