/*
 * chpp-hca: doorbell FIFO and engines (PLACEHOLDER, being written).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

void chpp_engine_init(ChppHcaState *s)
{
}

void chpp_engine_fini(ChppHcaState *s)
{
}

void chpp_engine_reset(ChppHcaState *s)
{
}

void chpp_engine_qp_transition(ChppHcaState *s, ChppQp *qp,
                               uint8_t old_state)
{
}

void chpp_uar_doorbell_error(ChppHcaState *s, uint32_t uar, uint32_t offset,
                             uint64_t val, const char *why)
{
    struct chpp_eqe eqe = {
        .type = CHPP_EVENT_DOORBELL_ERROR,
        .subtype = CHPP_DB_ERR_BAD_VALUE,
        .event.db_error.offset = cpu_to_le32(offset),
        .event.db_error.value = cpu_to_le32(val),
        .event.db_error.uar = cpu_to_le32(uar),
    };

    chpp_count(s, CHPP_CNT_DB_ERRORS);
    chpp_guest_error(s, "UAR page %u doorbell 0x%x = 0x%" PRIx64 ": %s", uar,
                     offset, val, why);
    chpp_event_post(s, &eqe);
}

void chpp_uar_doorbell(ChppHcaState *s, uint32_t uar, uint32_t offset,
                       uint64_t val, unsigned size)
{
    if (uar >= s->params.uar_pages) {
        chpp_uar_doorbell_error(s, uar, offset, val, "UAR page not present");
        return;
    }
    switch (offset) {
    case CHPP_UAR_CQ_DB:
        if (size != 8) {
            chpp_uar_doorbell_error(s, uar, offset, val,
                                    "CQ doorbell needs a 64-bit write");
            return;
        }
        chpp_cq_doorbell(s, uar, val);
        return;
    default:
        chpp_uar_doorbell_error(s, uar, offset, val, "not a doorbell");
    }
}

const VMStateDescription vmstate_chpp_qp_engine = {
    .name = "chpp-hca-qp-engine",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32(sq_comp, ChppQpEngine),
        VMSTATE_END_OF_LIST()
    }
};
