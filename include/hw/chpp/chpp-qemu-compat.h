/*
 * chpp-hca: the differences between the QEMU versions the device, its
 * qtests and fuzz targets build into (7.2, Debian 12's; 10.0, its
 * backports suite's), in one place (docs/build.md).  The rest of the
 * sources include this header and use its names; no other file tests the
 * QEMU version.
 *
 * The version is QEMU's own, QEMU_VERSION_MAJOR of config-host.h (included
 * by qemu/osdep.h, which comes first in every file).
 *
 * A qtest includes it with CHPP_QEMU_COMPAT_QTEST defined (tests/qtest/
 * chpp-hca-qtest.h does): it gets the QObject headers only, none of the
 * device's, which a qtest program cannot link with.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_QEMU_COMPAT_H
#define HW_CHPP_QEMU_COMPAT_H

#ifndef QEMU_VERSION_MAJOR
#error "include qemu/osdep.h first"
#endif

#if QEMU_VERSION_MAJOR != 7 && QEMU_VERSION_MAJOR != 10
#error "chpp-hca builds into QEMU 7.2 and 10.0 only (docs/build.md)"
#endif

#define CHPP_QEMU_10 (QEMU_VERSION_MAJOR >= 10)

/* QObject: qapi/qmp/ became qobject/ (QEMU 9.2). */
#if CHPP_QEMU_10
#include "qobject/qbool.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qstring.h"
#else
#include "qapi/qmp/qbool.h"
#include "qapi/qmp/qdict.h"
#include "qapi/qmp/qlist.h"
#include "qapi/qmp/qstring.h"
#endif

/*
 * qtest's clock_step: 7.2 answers a step of 0 with the virtual time; 10.0
 * refuses any step that does not advance the clock.  A test reads the
 * clock by stepping this much, and counts it.
 */
#define CHPP_QTEST_CLOCK_PROBE_NS (CHPP_QEMU_10 ? 1 : 0)

#endif /* HW_CHPP_QEMU_COMPAT_H */

/* The device's part, included by a device file or a fuzz target. */
#if !defined(CHPP_QEMU_COMPAT_QTEST) && !defined(HW_CHPP_QEMU_COMPAT_DEVICE)
#define HW_CHPP_QEMU_COMPAT_DEVICE

#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/qdev-core.h"

/*
 * sysemu/ became system/ (QEMU 9.0); PCIDevice's definition left
 * hw/pci/pci.h for hw/pci/pci_device.h (QEMU 8.0).
 */
#if CHPP_QEMU_10
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "system/runstate.h"
#else
#include "sysemu/dma.h"
#include "sysemu/runstate.h"
#endif

/*
 * Properties: 7.2 walks the array to its terminator, 10.0 counts it and
 * has no terminator (its device_class_set_props refuses one).  The array
 * ends with 7.2's terminator, which 10.0 is not given.
 */
#if CHPP_QEMU_10
#define DEFINE_PROP_END_OF_LIST() {}
#define chpp_device_class_set_props(dc, props) \
    device_class_set_props_n((dc), (props), ARRAY_SIZE(props) - 1)
#else
#define chpp_device_class_set_props(dc, props) \
    device_class_set_props((dc), (props))
#endif

/* The DeviceClass reset method: 10.0 names it legacy (Resettable wraps it). */
#if !CHPP_QEMU_10
static inline void device_class_set_legacy_reset(DeviceClass *dc,
                                                 DeviceReset fn)
{
    dc->reset = fn;
}
#endif

/*
 * ARI: 10.0 dropped the Next Function Number argument.  This device's is
 * 0, as 7.2 wrote it; 10.0 takes 1 for machine types before 8.1 (its
 * x-pcie-ari-nextfn-1 compat property, for the devices that had 1), which
 * would make the config space of a 7.2 stream fail to load.
 */
static inline void chpp_compat_ari_init(PCIDevice *pdev, uint16_t offset)
{
#if CHPP_QEMU_10
    pdev->cap_present &= ~QEMU_PCIE_ARI_NEXTFN_1;
    pcie_ari_init(pdev, offset);
#else
    pcie_ari_init(pdev, offset, 0);
#endif
}

/*
 * The SR-IOV capability.  7.2 creates the VF devices when the guest sets
 * VF Enable and cannot fail here; 10.0 creates (realizes) all TotalVFs
 * of them now, with the PF, and reports a VF that fails to realize.
 */
static inline bool chpp_compat_sriov_pf_init(PCIDevice *pdev, uint16_t offset,
                                             const char *vfname,
                                             uint16_t vf_dev_id,
                                             uint16_t init_vfs,
                                             uint16_t total_vfs,
                                             uint16_t vf_offset,
                                             uint16_t vf_stride, Error **errp)
{
#if CHPP_QEMU_10
    return pcie_sriov_pf_init(pdev, offset, vfname, vf_dev_id, init_vfs,
                              total_vfs, vf_offset, vf_stride, errp);
#else
    pcie_sriov_pf_init(pdev, offset, vfname, vf_dev_id, init_vfs, total_vfs,
                       vf_offset, vf_stride);
    return true;
#endif
}

/*
 * A PCI-level reset of the PF clears VF Enable: 10.0's PCI core does it
 * before the device's reset (pcie_sriov_pf_reset), 7.2 leaves it to the
 * device.
 */
static inline void chpp_compat_sriov_pf_reset(PCIDevice *pdev)
{
#if !CHPP_QEMU_10
    pcie_sriov_pf_disable_vfs(pdev);
#endif
}

#endif /* the device's part */
