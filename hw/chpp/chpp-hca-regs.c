/*
 * chpp-hca: BAR0 register decode and BAR2 (UAR) pages.
 *
 * Handlers only latch values and schedule work; nothing here touches guest
 * memory on a successful path.  UAR doorbells are decoded by the engine.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "chpp-hca.h"
#include "trace.h"

static bool chpp_reg_access_ok(ChppHcaState *s, hwaddr addr, unsigned size,
                               bool write)
{
    if (size == 4 && !(addr & 3)) {
        return true;
    }
    chpp_guest_error(s, "%u-byte %s at BAR0+0x%" HWADDR_PRIx
                     ": registers take aligned 32-bit accesses", size,
                     write ? "write" : "read", addr);
    return false;
}

static bool chpp_is_eq_db(hwaddr addr)
{
    return addr >= CHPP_REG_EQ_DB_BASE &&
           addr < CHPP_REG_EQ_DB(CHPP_MAX_EQS);
}

static bool chpp_is_counter(hwaddr addr)
{
    return addr >= CHPP_REG_CNT_BASE && addr < CHPP_REG_CNT(CHPP_CNT_NUM);
}

static bool chpp_is_hcr(hwaddr addr)
{
    return addr >= CHPP_REG_HCR && addr < CHPP_REG_HCR + CHPP_HCR_SIZE;
}

static uint64_t chpp_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    ChppHcaState *s = opaque;
    uint32_t val = 0;

    if (!chpp_reg_access_ok(s, addr, size, false)) {
        return 0;
    }
    if (chpp_is_hcr(addr)) {
        val = s->hcr[(addr - CHPP_REG_HCR) / 4];
    } else if (chpp_is_eq_db(addr)) {
        val = chpp_eq_doorbell_read(s, (addr - CHPP_REG_EQ_DB_BASE) / 4);
    } else if (chpp_is_counter(addr)) {
        val = s->counters[(addr - CHPP_REG_CNT_BASE) / 4];
    } else {
        switch (addr) {
        case CHPP_REG_MAGIC:
            val = CHPP_MAGIC;
            break;
        case CHPP_REG_ABI_VERSION:
            val = CHPP_ABI_VERSION;
            break;
        case CHPP_REG_CAPS:
            val = CHPP_CAP_CMD_EVENTS |
                  (chpp_link_attached(s) ? CHPP_CAP_LINK : 0) |
                  (s->func ? CHPP_CAP_VF : 0);
            break;
        case CHPP_REG_LINK:
            val = chpp_link_status(s);
            break;
        case CHPP_REG_FUNC:
            val = s->func;
            break;
        case CHPP_REG_NODE_ID:
            val = s->params.node_id;
            break;
        case CHPP_REG_STATUS:
            val = (s->hca_init ? CHPP_STATUS_HCA_INIT : 0) |
                  (s->hcr[CHPP_HCR_CTRL / 4] & CHPP_HCR_GO ?
                   CHPP_STATUS_CMD_BUSY : 0);
            break;
        case CHPP_REG_UAR_INFO:
            val = s->params.uar_pages |
                  CHPP_UAR_PAGE_SHIFT << CHPP_UAR_INFO_SHIFT_SHIFT;
            break;
        case CHPP_REG_MSIX_INFO:
            val = s->params.msix_vectors;
            break;
        case CHPP_REG_RESET:
            break;
        case CHPP_REG_SCRATCH:
            val = s->scratch;
            break;
        default:
            chpp_guest_error(s, "read of undefined register BAR0+0x%"
                             HWADDR_PRIx, addr);
        }
    }
    trace_chpp_hca_reg_read(s->func, addr, val);
    return val;
}

static void chpp_regs_write(void *opaque, hwaddr addr, uint64_t val64,
                            unsigned size)
{
    ChppHcaState *s = opaque;
    uint32_t val = val64;

    if (!chpp_reg_access_ok(s, addr, size, true)) {
        return;
    }
    trace_chpp_hca_reg_write(s->func, addr, val);
    if (chpp_is_hcr(addr)) {
        chpp_hcr_write(s, (addr - CHPP_REG_HCR) / 4, val);
    } else if (chpp_is_eq_db(addr)) {
        const char *why = chpp_eq_doorbell(s, (addr - CHPP_REG_EQ_DB_BASE) / 4,
                                           val);

        /* In the MMIO handler: the event is queued, not written. */
        if (why) {
            chpp_count(s, CHPP_CNT_DB_ERRORS);
            chpp_guest_error(s, "doorbell 0x%x = 0x%08x: %s",
                             (unsigned)addr, (uint32_t)val, why);
            chpp_doorbell_refused(s, CHPP_DB_ERR_BAD_VALUE,
                                  CHPP_DB_ERR_UAR_NONE, addr, val);
        }
    } else if (addr == CHPP_REG_SCRATCH) {
        s->scratch = val;
    } else if (addr == CHPP_REG_RESET) {
        if (val == CHPP_RESET_MAGIC) {
            chpp_hca_soft_reset(s);
        } else {
            chpp_guest_error(s, "reset register written with 0x%08x", val);
        }
    } else {
        chpp_guest_error(s, "write of 0x%08x to %s register BAR0+0x%"
                         HWADDR_PRIx, val,
                         addr <= CHPP_REG_MSIX_INFO || chpp_is_counter(addr) ?
                         "read-only" : "undefined", addr);
    }
}

const MemoryRegionOps chpp_hca_regs_ops = {
    .read = chpp_regs_read,
    .write = chpp_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* Accept every access and judge it ourselves: bad ones are logged. */
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

static uint64_t chpp_uar_read(void *opaque, hwaddr addr, unsigned size)
{
    ChppHcaState *s = opaque;
    uint32_t uar = addr >> CHPP_UAR_PAGE_SHIFT;

    trace_chpp_hca_uar_read(s->func, addr, size);
    /*
     * A poll says the guest works too; counted as a doorbell, since in
     * timing mode a poll reads nothing from the link (no last_pull).
     */
    chpp_link_doorbell(chpp_pf(s));
    if ((addr & (CHPP_UAR_PAGE_SIZE - 1)) == CHPP_UAR_DB_STATUS &&
        uar < s->params.uar_pages) {
        return chpp_uar_db_status(s, uar);
    }
    return 0;
}

static void chpp_uar_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    ChppHcaState *s = opaque;

    trace_chpp_hca_uar_write(s->func, addr, val, size);
    /* Any doorbell, of any function, says the guest works. */
    chpp_link_doorbell(chpp_pf(s));
    chpp_uar_doorbell(s, addr >> CHPP_UAR_PAGE_SHIFT,
                      addr & (CHPP_UAR_PAGE_SIZE - 1), val, size);
}

const MemoryRegionOps chpp_hca_uar_ops = {
    .read = chpp_uar_read,
    .write = chpp_uar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
};
