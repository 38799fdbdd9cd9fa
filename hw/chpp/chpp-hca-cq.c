/*
 * chpp-hca: completion queues (PLACEHOLDER, replaced by the MR/CQ work).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

void chpp_cq_reset(ChppHcaState *s)
{
    memset(s->cqs, 0, sizeof(ChppCq) * s->params.num_cqs);
}

bool chpp_cq_post_load(ChppHcaState *s)
{
    return true;
}

uint8_t chpp_cmd_sw2hw_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_hw2sw_cq(ChppHcaState *s, uint32_t cqn)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_query_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_resize_cq(ChppHcaState *s, uint32_t cqn, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

ChppCq *chpp_cq_get(ChppHcaState *s, uint32_t cqn)
{
    return NULL;
}

bool chpp_cq_post(ChppHcaState *s, uint32_t cqn, struct chpp_cqe *cqe,
                  bool solicited)
{
    return false;
}

void chpp_cq_doorbell(ChppHcaState *s, uint32_t uar, uint64_t val)
{
}

const VMStateDescription vmstate_chpp_cq = {
    .name = "chpp-hca-cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(hw, ChppCq),
        VMSTATE_END_OF_LIST()
    }
};
