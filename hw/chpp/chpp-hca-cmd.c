/*
 * chpp-hca: the HCR command interface.
 *
 * A write of the control dword with go=1 starts a command.  The command runs
 * later, in a bottom half (or after cmd-latency-ns of virtual time), never
 * in the vCPU's MMIO handler; go stays set until it is done.  The handler
 * returns a status; the HCR then gets the status and clears go, and if the
 * e bit was set a command-completion EQE carries the token.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/pci/pci.h"
#include "hw/chpp/chpp-qemu-compat.h"
#include "chpp-hca.h"
#include "trace.h"

/*
 * The commands run before INIT_HCA (docs/commands.md); every other command
 * in the ABI's CHPP_CMD_LIST needs it.  Names come from chpp_cmd_name().
 */
static bool chpp_cmd_needs_init(uint16_t opcode)
{
    switch (opcode) {
    case CHPP_CMD_QUERY_DEV_CAP:
    case CHPP_CMD_QUERY_FW:
    case CHPP_CMD_INIT_HCA:
    case CHPP_CMD_NOP:
    case CHPP_CMD_QUERY_STATS:
    case CHPP_CMD_SET_VF_RES:
    case CHPP_CMD_QUERY_VF_RES:
        return false;
    default:
        return true;
    }
}

static const char *chpp_cmd_str(uint16_t opcode)
{
    return chpp_cmd_name(opcode) ?: "UNKNOWN";
}

static uint8_t chpp_cmd_query_fw(ChppHcaState *s, uint64_t out_mailbox)
{
    struct chpp_fw_info fw = {
        .fw_major = cpu_to_le16(CHPP_FW_VER_MAJOR),
        .fw_minor = cpu_to_le16(CHPP_FW_VER_MINOR),
        .fw_subminor = cpu_to_le16(CHPP_FW_VER_SUBMINOR),
        .abi_major = cpu_to_le16(CHPP_ABI_VERSION_MAJOR),
        .abi_minor = cpu_to_le16(CHPP_ABI_VERSION_MINOR),
    };
    uint8_t status = CHPP_STAT_OK;

    chpp_mailbox_write(s, out_mailbox, &fw, sizeof(fw), &status);
    return status;
}

static uint8_t chpp_cmd_query_dev_cap(ChppHcaState *s, uint64_t out_mailbox)
{
    const ChppHcaParams *p = &s->params;
    struct chpp_dev_cap cap = {
        .flags = cpu_to_le32(CHPP_DEV_CAP_FLAG_CMD_EVENTS |
                             CHPP_DEV_CAP_FLAG_FAST_REG |
                             (s->func ? CHPP_DEV_CAP_FLAG_VF : 0)),
        .func = cpu_to_le16(s->func),
        .node_id = cpu_to_le16(p->node_id),
        .num_ports = CHPP_NUM_PORTS,
        .log_uar_page_size = CHPP_UAR_PAGE_SHIFT,
        .num_uar_pages = cpu_to_le32(p->uar_pages),
        .num_msix = cpu_to_le32(p->msix_vectors),
        .max_eqs = cpu_to_le32(p->num_eqs),
        .max_eq_entries = cpu_to_le32(CHPP_MAX_EQ_ENTRIES),
        .max_cqs = cpu_to_le32(p->num_cqs),
        .max_cq_entries = cpu_to_le32(CHPP_MAX_CQ_ENTRIES),
        .max_qps = cpu_to_le32(p->num_qps),
        .max_qp_wqes = cpu_to_le32(CHPP_MAX_QP_WQES),
        .max_mpts = cpu_to_le32(p->num_mpts),
        .max_mtt_entries = cpu_to_le32(p->num_mtts),
        .max_pds = cpu_to_le32(p->num_pds),
        .max_sge = cpu_to_le32(CHPP_MAX_SGE),
        .max_inline = cpu_to_le32(CHPP_MAX_INLINE),
        .max_msg_size = cpu_to_le32(CHPP_MAX_MSG_SIZE),
        .page_size_cap = cpu_to_le64(MAKE_64BIT_MASK(CHPP_MIN_PAGE_SHIFT,
                                                     CHPP_MAX_PAGE_SHIFT -
                                                     CHPP_MIN_PAGE_SHIFT + 1)),
        .max_srqs = cpu_to_le32(p->num_srqs),
        .max_srq_wqes = cpu_to_le32(p->num_srqs ? CHPP_MAX_SRQ_WQES : 0),
        .max_srq_sge = cpu_to_le32(p->num_srqs ? CHPP_MAX_SGE : 0),
        .max_fr_pages = cpu_to_le32(CHPP_MAX_FR_PAGES),
    };
    uint8_t status = CHPP_STAT_OK;

    chpp_mailbox_write(s, out_mailbox, &cap, sizeof(cap), &status);
    return status;
}

static uint8_t chpp_cmd_init_hca(ChppHcaState *s, uint32_t abi_major)
{
    if (s->hca_init) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SYS_STATE,
                             "HCA already initialised");
    }
    if (abi_major != CHPP_ABI_VERSION_MAJOR) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                             "driver ABI %u, device ABI %u", abi_major,
                             CHPP_ABI_VERSION_MAJOR);
    }
    s->hca_init = true;
    return CHPP_STAT_OK;
}

/*
 * The one teardown of a function's resources, in one order: CLOSE_HCA, and
 * within every device reset and FLR (chpp_hca_soft_reset()).
 */
void chpp_hca_reset_state(ChppHcaState *s)
{
    chpp_engine_reset(s);
    chpp_mcg_reset(s);
    chpp_qp_reset(s);
    chpp_srq_reset(s);
    chpp_cq_reset(s);
    chpp_mr_reset(s);
    chpp_eq_reset(s);
    chpp_port_reset(s);
    s->hca_init = false;
}

static uint8_t chpp_cmd_close_hca(ChppHcaState *s)
{
    if (!s->hca_init) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SYS_STATE,
                             "HCA not initialised");
    }
    chpp_hca_reset_state(s);
    return CHPP_STAT_OK;
}

static uint8_t chpp_cmd_dispatch(ChppHcaState *s, uint16_t opcode,
                                 uint8_t opmod, uint64_t in_param,
                                 uint32_t in_mod, uint64_t *out_param)
{
    if (!chpp_cmd_name(opcode)) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_OP, "unknown opcode 0x%03x",
                             opcode);
    }
    if (opmod) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_OP, "opmod %u not supported",
                             opmod);
    }
    if (chpp_cmd_needs_init(opcode) && !s->hca_init) {
        return chpp_cmd_fail(s, CHPP_STAT_BAD_SYS_STATE,
                             "INIT_HCA has not been run");
    }

    switch (opcode) {
    case CHPP_CMD_QUERY_FW:
        return chpp_cmd_query_fw(s, *out_param);
    case CHPP_CMD_QUERY_DEV_CAP:
        return chpp_cmd_query_dev_cap(s, *out_param);
    case CHPP_CMD_INIT_HCA:
        return chpp_cmd_init_hca(s, in_mod);
    case CHPP_CMD_CLOSE_HCA:
        return chpp_cmd_close_hca(s);
    case CHPP_CMD_INIT_PORT:
        return chpp_cmd_init_port(s, in_mod);
    case CHPP_CMD_CLOSE_PORT:
        return chpp_cmd_close_port(s, in_mod);
    case CHPP_CMD_QUERY_PORT:
        return chpp_cmd_query_port(s, in_mod, *out_param);
    case CHPP_CMD_MAD_IFC:
        return chpp_cmd_mad_ifc(s, in_mod, in_param, *out_param);
    case CHPP_CMD_ATTACH_MCG:
    case CHPP_CMD_DETACH_MCG:
        return chpp_cmd_mcg(s, opcode == CHPP_CMD_ATTACH_MCG, in_mod,
                            in_param);
    case CHPP_CMD_SW2HW_EQ:
        return chpp_cmd_sw2hw_eq(s, in_mod, in_param);
    case CHPP_CMD_HW2SW_EQ:
        return chpp_cmd_hw2sw_eq(s, in_mod);
    case CHPP_CMD_QUERY_EQ:
        return chpp_cmd_query_eq(s, in_mod, *out_param);
    case CHPP_CMD_MAP_EQ:
        return chpp_cmd_map_eq(s, in_mod, in_param);
    case CHPP_CMD_NOP:
        return CHPP_STAT_OK;
    case CHPP_CMD_QUERY_STATS:
        return chpp_cmd_query_stats(s, in_mod, *out_param);
    case CHPP_CMD_SET_VF_RES:
        return chpp_cmd_vf_res(s, true, in_mod, in_param);
    case CHPP_CMD_QUERY_VF_RES:
        return chpp_cmd_vf_res(s, false, in_mod, *out_param);
    case CHPP_CMD_SW2HW_MPT:
        return chpp_cmd_sw2hw_mpt(s, in_mod, in_param);
    case CHPP_CMD_HW2SW_MPT:
        return chpp_cmd_hw2sw_mpt(s, in_mod);
    case CHPP_CMD_QUERY_MPT:
        return chpp_cmd_query_mpt(s, in_mod, *out_param);
    case CHPP_CMD_WRITE_MTT:
        return chpp_cmd_write_mtt(s, in_mod, in_param);
    case CHPP_CMD_SW2HW_CQ:
        return chpp_cmd_sw2hw_cq(s, in_mod, in_param);
    case CHPP_CMD_HW2SW_CQ:
        return chpp_cmd_hw2sw_cq(s, in_mod);
    case CHPP_CMD_QUERY_CQ:
        return chpp_cmd_query_cq(s, in_mod, *out_param);
    case CHPP_CMD_RESIZE_CQ:
        return chpp_cmd_resize_cq(s, in_mod, in_param);
    case CHPP_CMD_QUERY_QP:
        return chpp_cmd_query_qp(s, in_mod, *out_param);
    case CHPP_CMD_RING_SQ:
        return chpp_cmd_ring_sq(s, in_mod);
    case CHPP_CMD_QUERY_DB_LOST:
        if (in_mod) {
            return chpp_cmd_fail(s, CHPP_STAT_BAD_PARAM,
                                 "in_modifier 0x%x is reserved", in_mod);
        }
        return chpp_cmd_query_db_lost(s, *out_param);
    case CHPP_CMD_SW2HW_SRQ:
        return chpp_cmd_sw2hw_srq(s, in_mod, in_param);
    case CHPP_CMD_HW2SW_SRQ:
        return chpp_cmd_hw2sw_srq(s, in_mod);
    case CHPP_CMD_QUERY_SRQ:
        return chpp_cmd_query_srq(s, in_mod, *out_param);
    case CHPP_CMD_ARM_SRQ:
        return chpp_cmd_arm_srq(s, in_mod, in_param);
    case CHPP_CMD_RST2INIT_QP:
    case CHPP_CMD_INIT2RTR_QP:
    case CHPP_CMD_RTR2RTS_QP:
    case CHPP_CMD_RTS2RTS_QP:
    case CHPP_CMD_SQERR2RTS_QP:
    case CHPP_CMD_2ERR_QP:
    case CHPP_CMD_RTS2SQD_QP:
    case CHPP_CMD_SQD2RTS_QP:
    case CHPP_CMD_2RST_QP:
    case CHPP_CMD_INIT2INIT_QP:
    case CHPP_CMD_SQD2SQD_QP:
        return chpp_cmd_modify_qp(s, opcode, in_mod, in_param);
    default:
        /* In the ABI's list but not implemented by the device. */
        return chpp_cmd_fail(s, CHPP_STAT_BAD_OP, "opcode 0x%03x (%s) is not "
                             "implemented", opcode, chpp_cmd_str(opcode));
    }
}

static void chpp_cmd_execute(ChppHcaState *s)
{
    uint32_t *hcr = s->hcr;
    uint32_t ctrl = hcr[CHPP_HCR_CTRL / 4];
    uint16_t opcode = ctrl & CHPP_HCR_OPCODE_MASK;
    uint8_t opmod = (ctrl & CHPP_HCR_OPMOD_MASK) >> CHPP_HCR_OPMOD_SHIFT;
    uint64_t in_param = deposit64(hcr[CHPP_HCR_IN_PARAM_L / 4], 32, 32,
                                  hcr[CHPP_HCR_IN_PARAM_H / 4]);
    uint64_t out_param = deposit64(hcr[CHPP_HCR_OUT_PARAM_L / 4], 32, 32,
                                   hcr[CHPP_HCR_OUT_PARAM_H / 4]);
    uint32_t in_mod = hcr[CHPP_HCR_IN_MODIFIER / 4];
    uint16_t token = hcr[CHPP_HCR_TOKEN / 4] >> CHPP_HCR_TOKEN_SHIFT;
    uint8_t status;

    if (!(ctrl & CHPP_HCR_GO)) {
        return;
    }

    status = chpp_cmd_dispatch(s, opcode, opmod, in_param, in_mod,
                               &out_param);
    trace_chpp_hca_cmd_done(s->func, chpp_cmd_str(opcode), status, out_param);
    chpp_count(s, CHPP_CNT_CMDS);
    if (status != CHPP_STAT_OK) {
        chpp_count(s, CHPP_CNT_CMD_ERRORS);
    }

    hcr[CHPP_HCR_OUT_PARAM_H / 4] = out_param >> 32;
    hcr[CHPP_HCR_OUT_PARAM_L / 4] = out_param;
    ctrl &= ~(CHPP_HCR_GO | CHPP_HCR_STATUS_MASK);
    ctrl |= (uint32_t)status << CHPP_HCR_STATUS_SHIFT;
    hcr[CHPP_HCR_CTRL / 4] = ctrl;

    if (ctrl & CHPP_HCR_E) {
        struct chpp_eqe eqe = {
            .type = CHPP_EVENT_CMD,
            .event.cmd.token = cpu_to_le16(token),
            .event.cmd.status = status,
            .event.cmd.out_param_lo = cpu_to_le32(out_param),
            .event.cmd.out_param_hi = cpu_to_le32(out_param >> 32),
        };
        chpp_event_post(s, &eqe);
    }
}

static void chpp_cmd_bh(void *opaque)
{
    ChppHcaState *s = opaque;

    if (s->gone) {
        return;
    }
    chpp_hold(s);
    chpp_cmd_execute(s);
    chpp_release(s);
}

static void chpp_cmd_timer(void *opaque)
{
    chpp_timer_call(opaque, chpp_cmd_bh, opaque);
}

static void chpp_cmd_kick(ChppHcaState *s)
{
    if (s->gone) {
        return;
    }
    if (s->params.cmd_latency_ns) {
        timer_mod(s->cmd_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  s->params.cmd_latency_ns);
    } else {
        qemu_bh_schedule(s->cmd_bh);
    }
}

void chpp_hcr_write(ChppHcaState *s, unsigned dword, uint32_t val)
{
    uint32_t *ctrl = &s->hcr[CHPP_HCR_CTRL / 4];

    if (*ctrl & CHPP_HCR_GO) {
        if (dword == CHPP_HCR_CTRL / 4 && (val & CHPP_HCR_GO)) {
            chpp_count(s, CHPP_CNT_CMD_REJECTED);
        }
        chpp_guest_error(s, "HCR dword %u written while a command runs",
                         dword);
        return;
    }
    if (dword != CHPP_HCR_CTRL / 4) {
        s->hcr[dword] = val;
        return;
    }
    if (!(val & CHPP_HCR_GO)) {
        chpp_guest_error(s, "HCR control written without go: 0x%08x", val);
        return;
    }
    /* The status byte is the device's; everything else is kept as written. */
    *ctrl = val & ~CHPP_HCR_STATUS_MASK;
    trace_chpp_hca_cmd_issue(s->func,
                             chpp_cmd_str(val & CHPP_HCR_OPCODE_MASK),
                             val & CHPP_HCR_OPCODE_MASK,
                             s->hcr[CHPP_HCR_IN_MODIFIER / 4],
                             !!(val & CHPP_HCR_E),
                             s->hcr[CHPP_HCR_TOKEN / 4] >>
                             CHPP_HCR_TOKEN_SHIFT);
    chpp_cmd_kick(s);
}

void chpp_cmd_init(ChppHcaState *s)
{
    s->cmd_bh = qemu_bh_new_guarded(chpp_cmd_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    s->cmd_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, chpp_cmd_timer, s);
}

void chpp_cmd_fini(ChppHcaState *s)
{
    qemu_bh_delete(s->cmd_bh);
    timer_free(s->cmd_timer);
}

void chpp_cmd_reset(ChppHcaState *s)
{
    qemu_bh_cancel(s->cmd_bh);
    timer_del(s->cmd_timer);
    memset(s->hcr, 0, sizeof(s->hcr));
}

/* A command in flight at migration time completes on the destination. */
void chpp_cmd_post_load(ChppHcaState *s)
{
    if ((s->hcr[CHPP_HCR_CTRL / 4] & CHPP_HCR_GO) &&
        !timer_pending(s->cmd_timer)) {
        qemu_bh_schedule(s->cmd_bh);
    }
}
