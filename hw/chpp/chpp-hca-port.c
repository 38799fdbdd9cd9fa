/*
 * chpp-hca: the port (one per function), its commands and its link state.
 *
 * The port is ACTIVE when the driver opened it (INIT_PORT) and its physical
 * link is up.  Without a link (no chardev) the port loops packets back to
 * this device, so its link is always up.  With a link it is up while the
 * handshake with the peer holds.  Every change of the port state posts a
 * PORT_CHANGE event.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "chpp-hca.h"
#include "trace.h"

static bool chpp_phys_up(ChppHcaState *s)
{
    return !chpp_link_attached(s) || (chpp_link_status(s) & CHPP_LINK_UP);
}

static uint8_t chpp_port_want(ChppHcaState *s, unsigned i)
{
    return s->port_open[i] && chpp_phys_up(s) ? CHPP_PORT_ACTIVE
                                              : CHPP_PORT_DOWN;
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

uint8_t chpp_cmd_init_port(ChppHcaState *s, uint32_t port)
{
    uint8_t status = chpp_port_check(s, port);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (s->port_open[port - 1]) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "port %u already initialised", port);
    }
    s->port_open[port - 1] = true;
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

    if (status != CHPP_STAT_OK) {
        return status;
    }
    info = (struct chpp_port_info) {
        .state = s->port_state[port - 1],
        .phys_state = chpp_phys_up(s) ? CHPP_PORT_PHYS_LINK_UP
                                      : CHPP_PORT_PHYS_POLLING,
        .max_mtu = CHPP_MTU_4096,
        .active_mtu = CHPP_MTU_4096,
        .link_width = 1,
        .link_speed = 1,
        .lid = cpu_to_le16(CHPP_LID(s->params.node_id, s->func)),
        .gid_tbl_len = cpu_to_le32(1),
        .pkey_tbl_len = cpu_to_le32(1),
        .max_msg_size = cpu_to_le32(CHPP_MAX_MSG_SIZE),
        .port_guid = cpu_to_le64(CHPP_PORT_GUID(s->params.node_id, s->func)),
        .gid_prefix = cpu_to_le64(0xfe80000000000000ull),
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
