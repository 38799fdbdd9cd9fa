/*
 * chpp-hca: the port (one per function) and its commands.
 *
 * Without a link the port loops packets back to this device, so its
 * physical link is always up: INIT_PORT makes it ACTIVE and CLOSE_PORT takes
 * it DOWN, each with a PORT_CHANGE event.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "chpp-hca.h"
#include "trace.h"

static uint8_t chpp_port_check(ChppHcaState *s, uint32_t port)
{
    if (port < 1 || port > CHPP_NUM_PORTS) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX, "port %u does not exist",
                             port);
    }
    return CHPP_STAT_OK;
}

static void chpp_port_set_state(ChppHcaState *s, uint32_t port, uint8_t state)
{
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_PORT_CHANGE,
        .subtype = state,
        .event.port.port = cpu_to_le32(port),
    };

    trace_chpp_hca_port_state(port, s->port_state[port - 1], state);
    s->port_state[port - 1] = state;
    chpp_event_post(s, &eqe);
}

uint8_t chpp_cmd_init_port(ChppHcaState *s, uint32_t port)
{
    uint8_t status = chpp_port_check(s, port);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (s->port_state[port - 1] != CHPP_PORT_DOWN) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "port %u already initialised", port);
    }
    chpp_port_set_state(s, port, CHPP_PORT_ACTIVE);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_close_port(ChppHcaState *s, uint32_t port)
{
    uint8_t status = chpp_port_check(s, port);

    if (status != CHPP_STAT_OK) {
        return status;
    }
    if (s->port_state[port - 1] == CHPP_PORT_DOWN) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "port %u is not initialised", port);
    }
    chpp_port_set_state(s, port, CHPP_PORT_DOWN);
    return CHPP_STAT_OK;
}

uint8_t chpp_cmd_query_port(ChppHcaState *s, uint32_t port, uint64_t mailbox)
{
    uint8_t status = chpp_port_check(s, port);
    uint8_t state;
    struct chpp_port_info info;

    if (status != CHPP_STAT_OK) {
        return status;
    }
    state = s->port_state[port - 1];
    info = (struct chpp_port_info) {
        .state = state,
        .phys_state = state == CHPP_PORT_DOWN ? CHPP_PORT_PHYS_POLLING
                                              : CHPP_PORT_PHYS_LINK_UP,
        .max_mtu = CHPP_MTU_4096,
        .active_mtu = CHPP_MTU_4096,
        .link_width = 1,
        .link_speed = 1,
        .lid = cpu_to_le16(s->params.node_id + 1),
        .gid_tbl_len = cpu_to_le32(1),
        .pkey_tbl_len = cpu_to_le32(1),
        .max_msg_size = cpu_to_le32(1u << 31),
        .port_guid = cpu_to_le64(CHPP_PORT_GUID_BASE | s->params.node_id),
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
        s->port_state[i] = CHPP_PORT_DOWN;
    }
}
