/*
 * chpp-hca: QP contexts (PLACEHOLDER, replaced by the QP work).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

void chpp_qp_reset(ChppHcaState *s)
{
    memset(s->qps, 0, sizeof(ChppQp) * s->params.num_qps);
}

bool chpp_qp_post_load(ChppHcaState *s)
{
    return true;
}

uint8_t chpp_cmd_modify_qp(ChppHcaState *s, uint16_t opcode, uint32_t qpn,
                           uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_query_qp(ChppHcaState *s, uint32_t qpn, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

void chpp_qp_set_error(ChppHcaState *s, ChppQp *qp, uint8_t new_state)
{
}

const VMStateDescription vmstate_chpp_qp = {
    .name = "chpp-hca-qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8(state, ChppQp),
        VMSTATE_END_OF_LIST()
    }
};
