/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chpp-hca guest driver: the differences between the kernels it supports
 * (Linux 6.1 and 6.12, docs/guest-driver.md), in this file only. Included
 * at the end of chpp_hca.h: its wrappers call the driver's functions.
 */
#ifndef CHPP_COMPAT_H
#define CHPP_COMPAT_H

#include <linux/version.h>

#if KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE
#include <rdma/uverbs_ioctl.h>

/*
 * Since 6.11 create_cq gets the uverbs attribute bundle (NULL for a kernel
 * CQ) instead of its driver_udata.
 */
static inline int chpp_create_cq_op(struct ib_cq *ibcq,
				    const struct ib_cq_init_attr *attr,
				    struct uverbs_attr_bundle *attrs)
{
	return chpp_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}
#else
#define chpp_create_cq_op chpp_create_cq
#endif

#endif /* CHPP_COMPAT_H */
