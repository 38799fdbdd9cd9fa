/*
 * chpp-hca: private state of the device model, shared by its files.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_H
#define HW_CHPP_HCA_H

#include "hw/pci/pci.h"
#include "qom/object.h"
#include "hw/chpp/chpp-hca-abi.h"

#define TYPE_CHPP_HCA "chpp-hca"
OBJECT_DECLARE_SIMPLE_TYPE(ChppHcaState, CHPP_HCA)

/* The EQ that no event type is mapped to. */
#define CHPP_EQN_NONE 0xff

typedef struct ChppHcaParams {
    uint16_t vendor_id;
    uint16_t device_id;
    uint16_t vf_device_id;
    uint16_t node_id;
    uint32_t num_qps;
    uint32_t num_cqs;
    uint32_t num_eqs;
    uint32_t num_mpts;
    uint32_t num_pds;
    uint32_t msix_vectors;
    uint32_t uar_pages;
    uint64_t cmd_latency_ns;
} ChppHcaParams;

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

struct ChppHcaState {
    PCIDevice parent_obj;

    MemoryRegion bar0;      /* container: registers + MSI-X */
    MemoryRegion regs;
    MemoryRegion bar2;      /* UAR pages */

    ChppHcaParams params;

    /* Command interface */
    uint32_t hcr[CHPP_HCR_DWORDS];
    QEMUBH *cmd_bh;
    QEMUTimer *cmd_timer;

    bool hca_init;
    uint8_t port_state[CHPP_NUM_PORTS];
    uint32_t scratch;
    uint32_t counters[CHPP_CNT_NUM];

    ChppEq eqs[CHPP_MAX_EQS];
    uint8_t event_eq[CHPP_EVENT_NUM_TYPES];  /* EQ per event type */
};

void G_GNUC_PRINTF(2, 3) chpp_guest_error(ChppHcaState *s, const char *fmt,
                                          ...);

static inline void chpp_count(ChppHcaState *s, enum chpp_counter c)
{
    s->counters[c]++;
}

/* chpp-hca.c */
void chpp_hca_soft_reset(ChppHcaState *s);

/* chpp-hca-regs.c */
extern const MemoryRegionOps chpp_hca_regs_ops;
extern const MemoryRegionOps chpp_hca_uar_ops;

/* chpp-hca-cmd.c */
void chpp_cmd_init(ChppHcaState *s);
void chpp_cmd_fini(ChppHcaState *s);
void chpp_cmd_reset(ChppHcaState *s);
void chpp_cmd_post_load(ChppHcaState *s);
void chpp_hcr_write(ChppHcaState *s, unsigned dword, uint32_t val);
uint8_t G_GNUC_PRINTF(3, 4) chpp_cmd_fail(ChppHcaState *s, uint8_t status,
                                          const char *fmt, ...);
bool chpp_mailbox_read(ChppHcaState *s, uint64_t addr, void *buf,
                       size_t len, uint8_t *status);
bool chpp_mailbox_write(ChppHcaState *s, uint64_t addr, const void *buf,
                        size_t len, uint8_t *status);

/* chpp-hca-port.c */
void chpp_port_reset(ChppHcaState *s);
uint8_t chpp_cmd_init_port(ChppHcaState *s, uint32_t port);
uint8_t chpp_cmd_close_port(ChppHcaState *s, uint32_t port);
uint8_t chpp_cmd_query_port(ChppHcaState *s, uint32_t port, uint64_t mailbox);

/* chpp-hca-eq.c */
void chpp_eq_reset(ChppHcaState *s);
bool chpp_eq_post_load(ChppHcaState *s);
void chpp_eq_doorbell(ChppHcaState *s, unsigned eqn, uint32_t val);
uint32_t chpp_eq_doorbell_read(ChppHcaState *s, unsigned eqn);
void chpp_event_post(ChppHcaState *s, struct chpp_eqe *eqe);
uint8_t chpp_cmd_sw2hw_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox);
uint8_t chpp_cmd_hw2sw_eq(ChppHcaState *s, uint32_t eqn);
uint8_t chpp_cmd_query_eq(ChppHcaState *s, uint32_t eqn, uint64_t mailbox);
uint8_t chpp_cmd_map_eq(ChppHcaState *s, uint32_t modifier, uint64_t mask);

extern const VMStateDescription vmstate_chpp_eq;

#endif /* HW_CHPP_HCA_H */
