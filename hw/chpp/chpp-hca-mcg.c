/*
 * chpp-hca: multicast groups (ABI 1.6, docs/management-datagrams.md):
 * which UD QPs of a function a datagram to a multicast LID reaches.
 * ATTACH_MCG and DETACH_MCG keep the table (mlx4's MCG table, per
 * function); the responder asks it for the QPs of a group's MLID, and a
 * QP that goes to RESET leaves every group.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "migration/vmstate.h"
#include "chpp-hca.h"
#include "trace.h"

void chpp_mcg_reset(ChppHcaState *s)
{
    memset(s->mcgs, 0, sizeof(s->mcgs));
}

static ChppMcg *chpp_mcg_find(ChppHcaState *s, const uint8_t *mgid)
{
    unsigned i;

    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        if (s->mcgs[i].num_qps && !memcmp(s->mcgs[i].mgid, mgid, 16)) {
            return &s->mcgs[i];
        }
    }
    return NULL;
}

static int chpp_mcg_index(const ChppMcg *g, uint32_t qpn)
{
    unsigned i;

    for (i = 0; i < g->num_qps; i++) {
        if (g->qpn[i] == qpn) {
            return i;
        }
    }
    return -1;
}

static void chpp_mcg_remove(ChppMcg *g, int i)
{
    g->num_qps--;
    g->qpn[i] = g->qpn[g->num_qps];
    g->qpn[g->num_qps] = 0;
    if (!g->num_qps) {
        memset(g, 0, sizeof(*g));
    }
}

uint8_t chpp_cmd_mcg(ChppHcaState *s, bool attach, uint32_t qpn,
                     uint64_t mailbox)
{
    struct chpp_mcg_attach m;
    uint8_t status = CHPP_STAT_OK;
    ChppQp *qp = chpp_qp_lookup(s, qpn);
    ChppMcg *g;
    uint16_t mlid;
    int i;

    if (!qp) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_INDEX, "MCG: QP %u out of "
                             "range (%u QPs)", qpn, s->params.num_qps);
    }
    if (!chpp_mailbox_read(s, mailbox, &m, sizeof(m), &status)) {
        return status;
    }
    mlid = le16_to_cpu(m.mlid);
    if (m.reserved0 || m.reserved1[0] || m.reserved1[1] || m.reserved1[2]) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "MCG: reserved fields not 0");
    }
    if (mlid < CHPP_MLID_MIN || mlid > CHPP_MLID_MAX) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "MCG: 0x%x is no multicast LID", mlid);
    }
    g = chpp_mcg_find(s, m.mgid);
    if (!attach) {
        i = g ? chpp_mcg_index(g, qpn) : -1;
        if (i < 0 || g->mlid != mlid) {
            return chpp_cmd_fail(s, CHPP_STAT_BAD_RESOURCE, "MCG: QP %u is "
                                 "not attached to that group and MLID", qpn);
        }
        chpp_mcg_remove(g, i);
        trace_chpp_hca_mcg(s->func, false, qpn, mlid);
        return CHPP_STAT_OK;
    }
    if (qp->type != CHPP_QPT_UD || qp->state == CHPP_QPS_RESET) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE, "MCG: QP %u is not "
                             "a UD QP out of RESET", qpn);
    }
    if (g && g->mlid != mlid) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM, "MCG: the group has "
                             "MLID 0x%x, not 0x%x", g->mlid, mlid);
    }
    if (g && chpp_mcg_index(g, qpn) >= 0) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_RES_STATE,
                             "MCG: QP %u is attached already", qpn);
    }
    if (!g) {
        for (i = 0; i < CHPP_MAX_MCGS && s->mcgs[i].num_qps; i++) {
            /* the first free entry */
        }
        if (i == CHPP_MAX_MCGS) {
            return chpp_cmd_fail(s, CHPP_STAT_EXCEED_LIM,
                                 "MCG: all %u groups in use", CHPP_MAX_MCGS);
        }
        g = &s->mcgs[i];
        memcpy(g->mgid, m.mgid, sizeof(g->mgid));
        g->mlid = mlid;
    }
    if (g->num_qps == CHPP_MCG_MAX_QPS) {
        return chpp_cmd_fail(s, CHPP_STAT_EXCEED_LIM, "MCG: the group has "
                             "%u QPs already", CHPP_MCG_MAX_QPS);
    }
    g->qpn[g->num_qps++] = qpn;
    trace_chpp_hca_mcg(s->func, true, qpn, mlid);
    return CHPP_STAT_OK;
}

void chpp_mcg_detach_qp(ChppHcaState *s, uint32_t qpn)
{
    unsigned i;
    int j;

    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        j = s->mcgs[i].num_qps ? chpp_mcg_index(&s->mcgs[i], qpn) : -1;
        if (j >= 0) {
            chpp_mcg_remove(&s->mcgs[i], j);
        }
    }
}

unsigned chpp_mcg_qps(ChppHcaState *s, uint16_t mlid, uint32_t *qpn,
                      unsigned max)
{
    unsigned i, j, k, n = 0;

    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        const ChppMcg *g = &s->mcgs[i];

        if (!g->num_qps || g->mlid != mlid) {
            continue;
        }
        for (j = 0; j < g->num_qps && n < max; j++) {
            for (k = 0; k < n && qpn[k] != g->qpn[j]; k++) {
                /* attached to two groups of this MLID: once */
            }
            if (k == n) {
                qpn[n++] = g->qpn[j];
            }
        }
    }
    return n;
}

static bool chpp_mcg_needed(void *opaque)
{
    ChppHcaState *s = opaque;
    unsigned i;

    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        if (s->mcgs[i].num_qps) {
            return true;
        }
    }
    return false;
}

/* Each group: a UD QP out of RESET at most once, a multicast LID. */
static int chpp_mcg_post_load(void *opaque, int version_id)
{
    ChppHcaState *s = opaque;
    unsigned i, j;

    for (i = 0; i < CHPP_MAX_MCGS; i++) {
        ChppMcg *g = &s->mcgs[i];

        if (!g->num_qps) {
            if (!buffer_is_zero(g, sizeof(*g))) {
                return chpp_refuse(s, "MCG %u: free but not empty", i);
            }
            continue;
        }
        if (g->num_qps > CHPP_MCG_MAX_QPS || g->mlid < CHPP_MLID_MIN ||
            g->mlid > CHPP_MLID_MAX) {
            return chpp_refuse(s, "MCG %u: %u QPs, MLID 0x%x", i, g->num_qps,
                               g->mlid);
        }
        for (j = 0; j < g->num_qps; j++) {
            ChppQp *qp = chpp_qp_lookup(s, g->qpn[j]);

            if (!qp || qp->type != CHPP_QPT_UD ||
                qp->state == CHPP_QPS_RESET ||
                chpp_mcg_index(g, g->qpn[j]) != (int)j) {
                return chpp_refuse(s, "MCG %u: QP %u", i, g->qpn[j]);
            }
        }
    }
    return 0;
}

static const VMStateDescription vmstate_chpp_mcg_entry = {
    .name = "chpp-hca-mcg-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT8_ARRAY(mgid, ChppMcg, 16),
        VMSTATE_UINT16(mlid, ChppMcg),
        VMSTATE_UINT16(num_qps, ChppMcg),
        VMSTATE_UINT32_ARRAY(qpn, ChppMcg, CHPP_MCG_MAX_QPS),
        VMSTATE_END_OF_LIST()
    }
};

/* Sent only while a QP is attached to a group. */
const VMStateDescription vmstate_chpp_mcg = {
    .name = "chpp-hca-function/mcg",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = chpp_mcg_needed,
    .post_load = chpp_mcg_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(mcgs, ChppHcaState, CHPP_MAX_MCGS, 1,
                             vmstate_chpp_mcg_entry, ChppMcg),
        VMSTATE_END_OF_LIST()
    }
};
