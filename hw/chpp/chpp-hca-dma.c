/*
 * chpp-hca: the device's bus-master accesses, DMA and MSI-X messages.
 *
 * The guest driver chooses every address the device writes to: rings,
 * EQs, mailboxes, MTT entries, data buffers and the MSI-X table.  A driver
 * mistake can point one at something that is not memory: PCIe config space
 * (the ECAM window), a BAR of this or another function, the MSI window.
 * A write there has side effects inside QEMU in the middle of the engine's
 * work (a VF disabled, a function reset) that no real adapter could
 * trigger, since on PCIe such a request ends as an Unsupported Request.
 * So device DMA reaches guest RAM only, and an MSI-X message never lands
 * in PCI config space or a BAR (docs/security.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_host.h"
#include "chpp-hca.h"
#include "trace.h"

/* A region of a PCI function (a BAR) or of a PCI host (the ECAM window)? */
static bool chpp_region_is_pci(MemoryRegion *mr)
{
    Object *owner = memory_region_owner(mr);

    return owner && (object_dynamic_cast(owner, TYPE_PCI_DEVICE) ||
                     object_dynamic_cast(owner, TYPE_PCI_HOST_BRIDGE));
}

/*
 * Is [addr, addr + len) guest RAM the device may access (writable RAM for
 * a write)?  With x-dma-any-target, PCI config space and BARs pass too.
 * If not, names the first region that does not pass in @what.
 */
static bool chpp_dma_target_ok(ChppHcaState *s, dma_addr_t addr,
                               dma_addr_t len, bool is_write,
                               char *what, size_t what_len)
{
    AddressSpace *as = pci_get_address_space(chpp_pci(s));

    if (addr + len < addr) {
        g_strlcpy(what, "address wrap", what_len);
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen,
                                                   is_write,
                                                   MEMTXATTRS_UNSPECIFIED);
        bool ram = memory_region_is_ram(mr) &&
                   !memory_region_is_ram_device(mr) &&
                   !(is_write && mr->readonly);

        if (!plen ||
            !(ram || (s->dma_any_target && chpp_region_is_pci(mr)))) {
            g_strlcpy(what, memory_region_name(mr) ?: "?", what_len);
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

static bool chpp_dma_allowed(ChppHcaState *s, dma_addr_t addr,
                             dma_addr_t len, bool is_write)
{
    char what[64];

    if (s->gone) {
        /* Unrealized under code still on the stack: no bus master left. */
        return false;
    }
    if (chpp_dma_target_ok(s, addr, len, is_write, what, sizeof(what))) {
        return true;
    }
    chpp_count(s, CHPP_CNT_DMA_REFUSED);
    trace_chpp_hca_err_dma_refused(s->func, addr, len, is_write, what);
    chpp_guest_note(s, "DMA %s at 0x%" PRIx64 " + 0x%" PRIx64 " refused: "
                     "%s is not guest RAM", is_write ? "write" : "read",
                     addr, len, what);
    return false;
}

/* Every device DMA goes through these, so failures are counted once. */
bool chpp_dma_read(ChppHcaState *s, dma_addr_t addr, void *buf, dma_addr_t len)
{
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (chpp_dma_allowed(s, addr, len, false)) {
        r = pci_dma_read(chpp_pci(s), addr, buf, len);
    }
    if (r != MEMTX_OK) {
        trace_chpp_hca_err_dma_read(s->func, addr, len, r);
        chpp_count(s, CHPP_CNT_DMA_ERRORS);
        return false;
    }
    trace_chpp_hca_dma_read(s->func, addr, len);
    return true;
}

bool chpp_dma_write(ChppHcaState *s, dma_addr_t addr, const void *buf,
                    dma_addr_t len)
{
    MemTxResult r = MEMTX_DECODE_ERROR;

    if (chpp_dma_allowed(s, addr, len, true)) {
        r = pci_dma_write(chpp_pci(s), addr, buf, len);
    }
    if (r != MEMTX_OK) {
        trace_chpp_hca_err_dma_write(s->func, addr, len, r);
        chpp_count(s, CHPP_CNT_DMA_ERRORS);
        return false;
    }
    trace_chpp_hca_dma_write(s->func, addr, len);
    return true;
}

static bool chpp_mailbox_check(ChppHcaState *s, uint64_t addr, size_t len,
                               uint8_t *status)
{
    assert(len <= CHPP_MAILBOX_SIZE);
    if (addr & (CHPP_MAILBOX_ALIGN - 1)) {
        *status = chpp_cmd_fail(s, CHPP_STAT_BAD_MAILBOX,
                                "mailbox 0x%" PRIx64 " not %u-byte aligned",
                                addr, CHPP_MAILBOX_ALIGN);
        return false;
    }
    return true;
}

bool chpp_mailbox_read(ChppHcaState *s, uint64_t addr, void *buf, size_t len,
                       uint8_t *status)
{
    if (!chpp_mailbox_check(s, addr, len, status)) {
        return false;
    }
    if (!chpp_dma_read(s, addr, buf, len)) {
        *status = chpp_cmd_fail(s, CHPP_STAT_DMA_ERR,
                                "mailbox read at 0x%" PRIx64 " failed", addr);
        return false;
    }
    return true;
}

bool chpp_mailbox_write(ChppHcaState *s, uint64_t addr, const void *buf,
                        size_t len, uint8_t *status)
{
    if (!chpp_mailbox_check(s, addr, len, status)) {
        return false;
    }
    if (!chpp_dma_write(s, addr, buf, len)) {
        *status = chpp_cmd_fail(s, CHPP_STAT_DMA_ERR,
                                "mailbox write at 0x%" PRIx64 " failed", addr);
        return false;
    }
    return true;
}

/*
 * An MSI-X message is a posted write too.  It may go to RAM or to the
 * platform's interrupt controller, but not into config space (a PCI
 * host's ECAM) or a PCI function's BAR.
 */
static bool chpp_msi_target_ok(ChppHcaState *s, uint64_t addr,
                               char *what, size_t what_len)
{
    AddressSpace *as = pci_get_address_space(chpp_pci(s));
    hwaddr xlat, plen = 4;
    MemoryRegion *mr;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(as, addr, &xlat, &plen, true,
                                 MEMTXATTRS_UNSPECIFIED);
    if (!s->dma_any_target && chpp_region_is_pci(mr)) {
        g_strlcpy(what, memory_region_name(mr) ?: "?", what_len);
        return false;
    }
    return true;
}

void chpp_irq(ChppHcaState *s, unsigned vector)
{
    PCIDevice *pdev = chpp_pci(s);
    char what[64];

    if (s->gone) {
        return;
    }
    if (!msix_enabled(pdev)) {
        chpp_count(s, CHPP_CNT_IRQS_MASKED);
        trace_chpp_hca_err_irq_suppressed(s->func, vector);
        return;
    }
    if (!msix_is_masked(pdev, vector)) {
        MSIMessage msg = msix_get_message(pdev, vector);

        if (!chpp_msi_target_ok(s, msg.address, what, sizeof(what))) {
            chpp_count(s, CHPP_CNT_DMA_REFUSED);
            trace_chpp_hca_err_dma_refused(s->func, msg.address, 4, true, what);
            chpp_guest_error(s, "MSI-X vector %u to 0x%" PRIx64 " refused: "
                             "%s is PCI config space or a BAR", vector,
                             msg.address, what);
            return;
        }
    }
    chpp_count(s, CHPP_CNT_IRQS);
    trace_chpp_hca_irq(s->func, vector);
    msix_notify(pdev, vector);
}
