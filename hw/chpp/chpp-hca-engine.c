/*
 * chpp-hca: doorbell FIFO and engines (PLACEHOLDER, being written).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
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

void chpp_uar_doorbell(ChppHcaState *s, uint32_t uar, uint32_t offset,
                       uint64_t val, unsigned size)
{
}

void chpp_uar_doorbell_error(ChppHcaState *s, uint32_t uar, uint32_t offset,
                             uint64_t val, const char *why)
{
}
