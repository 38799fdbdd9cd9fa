/*
 * chpp-hca: the port (one per function), its commands and its link state.
 *
 * The port is up when the driver opened it (INIT_PORT) and its physical
 * link is up.  Without a link (no chardev) the port loops packets back to
 * this device, so its link is always up.  With a link it is up while the
 * handshake with the peer holds.  An up port is ACTIVE at once, or (INIT_PORT
 * with CHPP_INIT_PORT_WAIT_SM) INIT until a subnet manager moves it to ARMED
 * and ACTIVE through the SMA (chpp-hca-mad.c).  Every change of the port
 * state posts a PORT_CHANGE event.  The SMA's view of the port (LID, SM LID,
 * ...) is kept here with the state, in ChppSma.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

bool chpp_port_phys_up(ChppHcaState *s)
{
    return !chpp_link_attached(s) || (chpp_link_status(s) & CHPP_LINK_UP);
}

/* Down without the driver or the link; once up, where the SM put it. */
static uint8_t chpp_port_want(ChppHcaState *s, unsigned i)
{
    if (!s->port_open[i] || !chpp_port_phys_up(s)) {
        return CHPP_PORT_DOWN;
    }
    if (s->port_state[i] != CHPP_PORT_DOWN) {
        return s->port_state[i];
    }
    return s->sma[i].wait_sm ? CHPP_PORT_INIT : CHPP_PORT_ACTIVE;
}

/* IB capability mask bits (PortInfo:CapabilityMask) the port reports. */
#define CHPP_PORT_CAP_SL_MAP        (1u << 6)
#define CHPP_PORT_CAP_SYS_GUID      (1u << 11)
#define CHPP_PORT_CAP_CM            (1u << 16)
#define CHPP_PORT_CAP_CLIENT_REREG  (1u << 25)

void chpp_sma_defaults(ChppHcaState *s, ChppSma *sma)
{
    memset(sma, 0, sizeof(*sma));
    sma->gid_prefix = 0xfe80000000000000ull;
    sma->lid = CHPP_LID(s->params.node_id, s->func);
    sma->cap_mask = CHPP_PORT_CAP_SL_MAP | CHPP_PORT_CAP_SYS_GUID |
                    CHPP_PORT_CAP_CM | CHPP_PORT_CAP_CLIENT_REREG;
    sma->pkey = 0xffff;
    sma->neighbor_mtu = CHPP_MTU_4096;
    sma->op_vls = 1;
    sma->width_enabled = 1;
    sma->speed_enabled = 1;
    sma->subnet_timeout = 18;
    snprintf((char *)sma->node_desc, sizeof(sma->node_desc),
             "chpp-hca node %u fn %u",
             s->params.node_id, s->func);
}

static uint8_t chpp_port_check(ChppHcaState *s, uint32_t port)
{
    if (port < 1 || port > CHPP_NUM_PORTS) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX, "port %u does not exist",
                             port);
    }
    return CHPP_STAT_OK;
}

/* Bring port_state in line with open/link and report a change. */
static void chpp_port_update(ChppHcaState *s, uint32_t port)
{
    uint8_t state = chpp_port_want(s, port - 1);
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_PORT_CHANGE,
        .subtype = state,
        .event.port.port = cpu_to_le32(port),
    };

    if (s->port_state[port - 1] == state) {
        return;
    }
    trace_chpp_hca_port_state(s->func, port, s->port_state[port - 1], state);
    s->port_state[port - 1] = state;
    chpp_event_post(s, &eqe);
}

void chpp_port_set_state(ChppHcaState *s, uint32_t port, uint8_t state)
{
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_PORT_CHANGE,
        .subtype = state,
        .event.port.port = cpu_to_le32(port),
    };

    if (s->port_state[port - 1] == state) {
        return;
    }
    trace_chpp_hca_port_state(s->func, port, s->port_state[port - 1], state);
    s->port_state[port - 1] = state;
    chpp_event_post(s, &eqe);
}

uint8_t chpp_cmd_init_port(ChppHcaState *s, uint32_t in_mod)
{
    uint32_t port = in_mod & ~CHPP_INIT_PORT_WAIT_SM;
    uint8_t status = chpp_port_check(s, port);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (s->port_open[port - 1]) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "port %u already initialised", port);
    }
    s->port_open[port - 1] = true;
    s->sma[port - 1].wait_sm = in_mod & CHPP_INIT_PORT_WAIT_SM;
    chpp_port_update(s, port);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_close_port(ChppHcaState *s, uint32_t port)
{
    uint8_t status = chpp_port_check(s, port);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (!s->port_open[port - 1]) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "port %u is not initialised", port);
    }
    s->port_open[port - 1] = false;
    chpp_port_update(s, port);
    return CHPP_STAT_OK;
}

void chpp_port_link_changed(ChppHcaState *s)
{
    unsigned i;

    /* A stopped VM's memory is not written: chpp_port_vm_running() will. */
    if (!s->hca_init || s->engine_stopped) {
        return;
    }
    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        chpp_port_update(s, i + 1);
    }
}

uint8_t chpp_cmd_query_port(ChppHcaState *s, uint32_t port, uint64_t mailbox)
{
    uint8_t status = chpp_port_check(s, port);
    struct chpp_port_info info;
    ChppSma *sma;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    sma = &s->sma[port - 1];
    info = (struct chpp_port_info) {
        .state = s->port_state[port - 1],
        .phys_state = chpp_port_phys_up(s) ? CHPP_PORT_PHYS_LINK_UP
                                           : CHPP_PORT_PHYS_POLLING,
        .max_mtu = CHPP_MTU_4096,
        .active_mtu = CHPP_MTU_4096,
        .link_width = 1,
        .link_speed = 1,
        .lid = cpu_to_le16(sma->lid),
        .gid_tbl_len = cpu_to_le32(1),
        .pkey_tbl_len = cpu_to_le32(1),
        .max_msg_size = cpu_to_le32(CHPP_MAX_MSG_SIZE),
        .sm_lid = cpu_to_le16(sma->sm_lid),
        .sm_sl = sma->sm_sl,
        .lmc = sma->lmc,
        .port_guid = cpu_to_le64(CHPP_PORT_GUID(s->params.node_id, s->func)),
        .gid_prefix = cpu_to_le64(sma->gid_prefix),
        .cap_mask = cpu_to_le32(sma->cap_mask),
        .pkey = cpu_to_le16(sma->pkey),
        .subnet_timeout = sma->subnet_timeout,
    };
    chpp_mailbox_write(s, mailbox, &info, sizeof(info), &status);
    return status;
}

/* Ports go down silently: reset and CLOSE_HCA tear the EQs down too. */
void chpp_port_reset(ChppHcaState *s)
{
    unsigned i;

    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        s->port_open[i] = false;
        s->port_state[i] = CHPP_PORT_DOWN;
        chpp_sma_defaults(s, &s->sma[i]);
    }
}

/*
 * The link is not migrated: the port state loaded is the one the guest
 * last saw.  When the VM runs (again), the port follows this side's link,
 * and a difference posts PORT_CHANGE: a migration destination whose link
 * is not up yet reports DOWN, then ACTIVE once the handshake is done.
 */
void chpp_port_vm_running(ChppHcaState *s)
{
    chpp_port_link_changed(s);
}

/*
 * The SMA's state, sent only when a subnet manager (or the driver) changed
 * it or the port waits for one: a stream of an earlier build has none, and
 * its ports keep the defaults.
 */
static bool chpp_sma_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    ChppSma def;
    unsigned i;

    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        chpp_sma_defaults(s, &def);
        def.wait_sm = false;
        if (memcmp(&def, &s->sma[i], sizeof(def)) ||
            s->port_state[i] == CHPP_PORT_INIT ||
            s->port_state[i] == CHPP_PORT_ARMED) {
            return true;
        }
    }
    return false;
}

static int chpp_sma_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    unsigned i;

    for (i = 0; i < CHPP_NUM_PORTS; i++) {
        ChppSma *sma = &s->sma[i];

        if (!sma->lid || sma->lid >= 0xc000 || sma->lmc ||
            sma->neighbor_mtu < 1 || sma->neighbor_mtu > CHPP_MTU_4096 ||
            sma->op_vls > 1 || sma->subnet_timeout > 31 ||
            sma->sm_lid >= 0xc000 || sma->sm_sl > 15) {
            return chpp_refuse(s, "SMA of port %u: lid 0x%x lmc %u mtu %u "
                               "vls %u timeout %u sm_lid 0x%x sm_sl %u", i + 1,
                               sma->lid, sma->lmc, sma->neighbor_mtu,
                               sma->op_vls, sma->subnet_timeout, sma->sm_lid,
                               sma->sm_sl);
        }
        sma->node_desc[CHPP_SMA_NODE_DESC_LEN - 1] = 0;
    }
    return 0;
}

static const VMStateDescription vmstate_chpp_sma_port = {
    .name = "chpp-hca-sma-port",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(mkey, ChppSma),
        VMSTATE_UINT64(gid_prefix, ChppSma),
        VMSTATE_UINT16(lid, ChppSma),
        VMSTATE_UINT16(sm_lid, ChppSma),
        VMSTATE_UINT32(cap_mask, ChppSma),
        VMSTATE_UINT16(mkey_lease, ChppSma),
        VMSTATE_UINT16(pkey, ChppSma),
        VMSTATE_UINT8(sm_sl, ChppSma),
        VMSTATE_UINT8(lmc, ChppSma),
        VMSTATE_UINT8(mkey_protect, ChppSma),
        VMSTATE_UINT8(subnet_timeout, ChppSma),
        VMSTATE_UINT8(neighbor_mtu, ChppSma),
        VMSTATE_UINT8(op_vls, ChppSma),
        VMSTATE_UINT8(vl_high_limit, ChppSma),
        VMSTATE_UINT8(stall_hoq, ChppSma),
        VMSTATE_UINT8(width_enabled, ChppSma),
        VMSTATE_UINT8(speed_enabled, ChppSma),
        VMSTATE_BOOL(wait_sm, ChppSma),
        VMSTATE_UINT8_ARRAY(sl2vl, ChppSma, 8),
        VMSTATE_UINT8_ARRAY(vlarb, ChppSma, CHPP_SMA_VLARB_BYTES),
        VMSTATE_BUFFER(node_desc, ChppSma),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription vmstate_chpp_sma = {
    .name = "chpp-hca-function/sma",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_sma_needed,
    .post_load = chpp_sma_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(sma, ChppHcaState, CHPP_NUM_PORTS, 1,
                             vmstate_chpp_sma_port, ChppSma),
        VMSTATE_END_OF_LIST()
    }
};
