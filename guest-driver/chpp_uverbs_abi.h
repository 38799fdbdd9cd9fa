/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * chpp_hca uverbs ABI: the driver-private parts (udata) of the uverbs
 * commands, shared by the kernel driver and user-space libraries.
 * docs/guest-driver.md#user-space-access explains each field. The device
 * formats (WQEs, CQEs, doorbells) are in include/hw/chpp/chpp-hca-abi.h.
 */
#ifndef CHPP_UVERBS_ABI_H
#define CHPP_UVERBS_ABI_H

#include <linux/types.h>

/* Reported by the kernel in chpp_alloc_ucontext_resp.abi_version. */
#define CHPP_UVERBS_ABI_VERSION	1

/*
 * The magic of every UD QP: a UD receive's sender is
 * CHPP_UD_MAGIC << qpn_bits | the CQE's src_qp.
 */
#define CHPP_UD_MAGIC		1

/* GET_CONTEXT response. */
struct chpp_alloc_ucontext_resp {
	__u32 abi_version;	/* CHPP_UVERBS_ABI_VERSION */
	__u32 uar_index;	/* the context's UAR page (QP/CQ contexts name it) */
	__aligned_u64 uar_mmap_offset; /* mmap() offset of that page, 4 KiB */
	__u32 node_id;		/* this adapter's node id (LID - 1) */
	__u32 qpn_bits;		/* ib qp_num = magic << qpn_bits | device QPN */
	__u32 max_qp_wqes;
	__u32 max_cq_entries;
	__u32 max_sge;
	__u32 max_inline;
};

/*
 * CREATE_CQ command: the ring is user memory, page aligned, of
 * entries * CHPP_CQE_SIZE bytes; entries is a power of two.
 */
struct chpp_create_cq_cmd {
	__aligned_u64 buf_addr;
	__u32 entries;
	__u32 reserved;
};

struct chpp_create_cq_resp {
	__u32 cqn;		/* device CQ number (CQ doorbells name it) */
	__u32 entries;
};

/*
 * CREATE_QP command: both rings are user memory, page aligned, of
 * 2^log_size WQEs of 2^log_stride bytes each. A QP with an SRQ has no RQ:
 * rq_buf_addr, log_rq_size and log_rq_stride are ignored.
 */
struct chpp_create_qp_cmd {
	__aligned_u64 sq_buf_addr;
	__aligned_u64 rq_buf_addr;
	__u8 log_sq_size;
	__u8 log_sq_stride;
	__u8 log_rq_size;
	__u8 log_rq_stride;
	__u32 reserved;
};

/*
 * CREATE_SRQ command (ABI 1.5 device): the ring is user memory, page
 * aligned, of 2^log_size WQEs of 2^log_stride bytes, followed by the
 * 16-byte consumer record the device writes (struct chpp_srq_record):
 * buf_addr must map 2^(log_size + log_stride) + 16 bytes.
 */
struct chpp_create_srq_cmd {
	__aligned_u64 buf_addr;
	__u8 log_size;
	__u8 log_stride;
	__u16 reserved0;
	__u32 reserved1;
};

struct chpp_create_srq_resp {
	__u32 srqn;		/* device SRQ number (SRQ doorbells name it) */
	__u32 reserved;
};

struct chpp_create_qp_resp {
	__u32 qpn;		/* device QPN (SQ/RQ doorbells name it) */
	__u32 magic;		/* the QP's magic (high bits of qp_num) */
};

#endif /* CHPP_UVERBS_ABI_H */
