/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * The user-space data path of a chpp-hca, shared by libchpp-user (the bare
 * uverbs library of chpp-uverbs-test), the libibverbs provider
 * (guest-driver/provider) and the VFIO test (tests/vfio): ring geometry,
 * building send and receive WQEs, the UAR doorbells and reading CQEs, with
 * the ABI's little-endian fields converted here. Nothing here makes a
 * system call. Formats: include/hw/chpp/chpp-hca-abi.h,
 * docs/work-requests.md.
 */
#ifndef CHPP_DATAPATH_H
#define CHPP_DATAPATH_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "hw/chpp/chpp-hca-abi.h"

/*
 * The ABI's fields are __le16/__le32/__le64 (chpp-hca-abi.h): read them
 * with le32toh(), write them with htole32(). For sparse (the 'sparse'
 * lint) these conversions are casts between the __le types and CPU-order
 * integers, so that a field used without its conversion is reported as in
 * the kernel driver. CHPP_FORCE marks a deliberate reinterpretation.
 */
#ifdef __CHECKER__
#define CHPP_FORCE __attribute__((force))
#undef le16toh
#undef le32toh
#undef le64toh
#undef htole16
#undef htole32
#undef htole64
#define le16toh(x) ((CHPP_FORCE uint16_t)(__le16)(x))
#define le32toh(x) ((CHPP_FORCE uint32_t)(__le32)(x))
#define le64toh(x) ((CHPP_FORCE uint64_t)(__le64)(x))
#define htole16(x) ((CHPP_FORCE __le16)(uint16_t)(x))
#define htole32(x) ((CHPP_FORCE __le32)(uint32_t)(x))
#define htole64(x) ((CHPP_FORCE __le64)(uint64_t)(x))
#else
#define CHPP_FORCE
#endif

#define CHPP_SEG 16	/* every WQE segment is 16 bytes */

/* One work queue ring in process memory: n WQEs of 2^shift bytes. */
struct chpp_uwq {
	void *ring;
	uint32_t n, shift, head;
};

struct chpp_usge {
	uint64_t addr;
	uint32_t length, lkey;
};

/* One send work request (the fields a WQE can carry). */
struct chpp_usend {
	uint8_t opcode;			/* enum chpp_wqe_opcode */
	uint8_t flags;			/* CHPP_WQE_* (INLINE copies the sges) */
	uint32_t imm;
	uint64_t wr_id;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add, compare;
	const struct chpp_usge *sg;
	int num_sge;
	/* UD QPs: the destination, as verbs name it. */
	uint16_t dlid;
	uint32_t remote_qp_num;
	uint32_t remote_qkey;
};

/*
 * Doorbell stores: one little-endian store of exactly this width (the page
 * is uncached).
 */
static inline void chpp_mmio_write32(uint8_t *addr, uint32_t val)
{
	__atomic_store_n((uint32_t *)addr, (CHPP_FORCE uint32_t)htole32(val),
			 __ATOMIC_RELEASE);
}

static inline void chpp_mmio_write64(uint8_t *addr, uint64_t val)
{
	__atomic_store_n((uint64_t *)addr, (CHPP_FORCE uint64_t)htole64(val),
			 __ATOMIC_RELEASE);
}

/* A register of the UAR page (CHPP_UAR_DB_STATUS): one 32-bit load. */
static inline uint32_t chpp_mmio_read32(uint8_t *addr)
{
	return le32toh((CHPP_FORCE chpp_le32)__atomic_load_n((uint32_t *)addr,
							      __ATOMIC_ACQUIRE));
}

int chpp_log2_up(uint32_t v);
/* Zeroed, page-aligned memory for a ring (free() it). */
void *chpp_ring_alloc(size_t size);
/*
 * Bytes a send WQE of a QP of @qp_type (enum chpp_qp_type) needs for
 * @sges gather entries or @inline_len bytes of inline data, and a receive
 * WQE for @sges entries; the kernel checks the strides against the same sums.
 */
uint32_t chpp_sq_wqe_bytes(uint8_t qp_type, uint32_t sges, uint32_t inline_len);
uint32_t chpp_rq_wqe_bytes(uint32_t sges);
/* log2 of the stride for @bytes: at least CHPP_MIN_WQE_SHIFT. */
uint32_t chpp_wqe_shift(uint32_t bytes);

/*
 * Write the send WQE for @wr into slot wq->head (head is not advanced).
 * @wqe_id goes to the control segment's wr_id, which the device copies to
 * the CQE. -EINVAL when the gather list or inline data do not fit.
 */
int chpp_write_send_wqe(struct chpp_uwq *wq, uint8_t qp_type,
			uint32_t qpn_bits, const struct chpp_usend *wr,
			uint64_t wqe_id);
int chpp_write_recv_wqe(struct chpp_uwq *wq, uint64_t wqe_id,
			const struct chpp_usge *sg, int num_sge);

/* Doorbells on a UAR page: the new producer index of a QP's SQ or RQ. */
void chpp_ring_sq(uint8_t *uar, uint32_t qpn, uint32_t head);
void chpp_ring_rq(uint8_t *uar, uint32_t qpn, uint32_t head);
/* ABI 1.5: the new producer index of an SRQ. */
void chpp_ring_srq(uint8_t *uar, uint32_t srqn, uint32_t head);
/*
 * The free index of an SRQ's consumer record (the record follows the
 * 2^log_size WQEs of the ring): WQEs before it may be posted again.
 */
static inline uint32_t chpp_srq_free(const struct chpp_uwq *wq)
{
	const struct chpp_srq_record *r = (const void *)
		((const uint8_t *)wq->ring + ((size_t)wq->n << wq->shift));

	return le32toh((CHPP_FORCE chpp_le32)
		       __atomic_load_n((const uint32_t *)&r->free,
				       __ATOMIC_ACQUIRE));
}
/* CQ doorbell: @cmd is enum chpp_cq_db_cmd, @ci the consumer index. */
void chpp_ring_cq(uint8_t *uar, uint32_t cqn, uint32_t cmd, uint32_t ci);

/* A CQE in CPU byte order (chpp_cqe_read()); the fields of struct chpp_cqe. */
struct chpp_ucqe {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;
	uint32_t qpn;
	uint32_t src_qp;
	uint16_t src_node;
	uint8_t src_vf;
	uint8_t vendor_err;
	uint8_t opcode;			/* enum chpp_cqe_opcode */
	uint8_t status;			/* enum chpp_wc_status */
	uint8_t flags;			/* CHPP_CQE_FLAG_* */
};

/*
 * The CQE at consumer index @ci of a ring of @n entries if the device has
 * written it, else NULL. Its fields may be read after this returns.
 */
const struct chpp_cqe *chpp_cqe_at(const struct chpp_cqe *ring, uint32_t n,
				   uint32_t ci);
/* Read a valid CQE (from chpp_cqe_at()) into @out, in CPU byte order. */
void chpp_cqe_read(const struct chpp_cqe *e, struct chpp_ucqe *out);
/* Device QPN of a valid CQE. */
static inline uint32_t chpp_cqe_qpn(const struct chpp_cqe *e)
{
	return le32toh(e->qpn);
}

#endif /* CHPP_DATAPATH_H */
