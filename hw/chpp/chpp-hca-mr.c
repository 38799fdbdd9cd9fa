/*
 * chpp-hca: memory regions (PLACEHOLDER, replaced by the MR/CQ work).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

void chpp_mr_reset(ChppHcaState *s)
{
    memset(s->mpts, 0, sizeof(ChppMpt) * s->params.num_mpts);
    memset(s->mtt, 0, sizeof(uint64_t) * s->params.num_mtts);
}

bool chpp_mr_post_load(ChppHcaState *s)
{
    return true;
}

uint8_t chpp_cmd_sw2hw_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_hw2sw_mpt(ChppHcaState *s, uint32_t idx)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_query_mpt(ChppHcaState *s, uint32_t idx, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

uint8_t chpp_cmd_write_mtt(ChppHcaState *s, uint32_t count, uint64_t mailbox)
{
    return CHPP_STAT_BAD_OP;
}

const ChppMpt *chpp_mr_lookup(ChppHcaState *s, uint32_t key, uint32_t pd,
                              uint64_t va, uint64_t len, uint32_t need,
                              uint8_t *verr)
{
    *verr = CHPP_VERR_BAD_LKEY;
    return NULL;
}

bool chpp_mr_rw(ChppHcaState *s, const ChppMpt *mr, uint64_t va, void *buf,
                uint64_t len, DMADirection dir)
{
    return false;
}

bool chpp_ring_check(ChppHcaState *s, const ChppRing *ring, uint64_t size)
{
    return false;
}

bool chpp_ring_rw(ChppHcaState *s, const ChppRing *ring, uint64_t offset,
                  void *buf, uint64_t len, DMADirection dir)
{
    return false;
}

const VMStateDescription vmstate_chpp_mpt = {
    .name = "chpp-hca-mpt",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(hw, ChppMpt),
        VMSTATE_END_OF_LIST()
    }
};
