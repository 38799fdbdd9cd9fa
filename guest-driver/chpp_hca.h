/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chpp-hca guest driver: shared definitions.
 *
 * Written from docs/ and include/hw/chpp/chpp-hca-abi.h only.
 */
#ifndef CHPP_HCA_H
#define CHPP_HCA_H

#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/completion.h>
#include <linux/xarray.h>
#include <linux/idr.h>
#include <rdma/ib_verbs.h>
#include <linux/workqueue.h>

#include "hw/chpp/chpp-hca-abi.h"
#include "chpp_uverbs_abi.h"

#define DRV_NAME "chpp_hca"

/* qp_num exported to ib_core = magic << 12 | device QPN (see docs/guest-driver.md). */
#define CHPP_QPN_BITS		12
#define CHPP_QPN_MASK		((1u << CHPP_QPN_BITS) - 1)
#define CHPP_IBQPN(magic, idx)	(((u32)(magic) << CHPP_QPN_BITS) | (idx))
#define CHPP_KERNEL_UAR		0
#define CHPP_EQ_ENTRIES		256
#define CHPP_CMD_TIMEOUT_MS	10000
/*
 * Device counters shown as hw_counters (chpp_ib.c); the names of
 * CHPP_CNT_LIST are at most 18 characters.
 */
#define CHPP_NUM_HW_STATS	5
#define CHPP_HW_STAT_NAME_LEN	32

struct chpp_mbox {
	void *buf;
	dma_addr_t dma;
};

/*
 * A ring mapped by consecutive 4 KiB MTT entries: DMA-contiguous kernel
 * memory (va, dma), or pinned user memory (umem).
 */
struct chpp_buf {
	void *va;
	dma_addr_t dma;
	struct ib_umem *umem;
	size_t size;		/* rounded up to PAGE_SIZE */
	u32 mtt_base;
	u32 npages;
};

struct chpp_eq {
	struct chpp_eqe *ring;
	dma_addr_t dma;
	u32 n;
	u32 ci;
	u32 eqn;
	spinlock_t lock;
};

/*
 * QUERY_FW and QUERY_DEV_CAP as the driver uses them: the mailboxes'
 * little-endian fields in CPU byte order (chpp_query_caps()).
 */
struct chpp_fw {
	u16 fw_major, fw_minor, fw_subminor;
	u16 abi_major, abi_minor;
};

struct chpp_caps {
	u32 flags;		/* CHPP_DEV_CAP_FLAG_* */
	u16 func, node_id;
	u8 num_ports;
	u32 num_uar_pages, num_msix;
	u32 max_eqs, max_cqs, max_cq_entries, max_qps, max_qp_wqes;
	u32 max_mpts, max_mtt_entries, max_pds, max_sge, max_inline;
	u64 page_size_cap;
	u32 max_srqs, max_srq_wqes, max_srq_sge;	/* ABI 1.5, else 0 */
	u32 max_fr_pages;	/* ABI 1.6, with CHPP_DEV_CAP_FLAG_FAST_REG */
};

struct chpp_dev {
	struct ib_device ibdev;
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0 */
	void __iomem *uar_base;		/* BAR2 */
	void __iomem *uar;		/* BAR2, kernel UAR page */
	resource_size_t uar_phys;	/* BAR2 start */
	struct chpp_caps caps;
	struct chpp_fw fw;
	u16 node_id;
	u64 port_guid;
	/*
	 * ABI 1.6: the device has the SMA (MAD_IFC) and the special QPs, and
	 * the driver declares MADs to ib_core (docs/management-datagrams.md).
	 */
	bool mad;
	/* The port as QUERY_PORT and the SMA last showed it (chpp_ib.c). */
	struct {
		u16 lid, sm_lid, pkey;
		u8 sm_sl, state;
		u32 cap_mask;
		u64 gid_prefix;
	} port;
	u32 sm_cap_refs;	/* modify_port(IB_PORT_SM) set, not cleared */
	struct mutex port_mutex;	/* modify_port */
	bool ib_registered;
	bool hca_init;
	bool port_open;

	/* HCR commands */
	struct mutex cmd_mutex;
	bool cmd_events;		/* completion by EQE */
	u8 cmd_toggle;			/* next t bit */
	u16 cmd_token;
	struct completion cmd_done;
	u8 cmd_status;
	u64 cmd_out;
	atomic_t cmd_event_count;

	/* the event queue (one, for async events, commands and completions) */
	struct chpp_eq eq;
	bool eq_hw;
	bool irq_requested;
	atomic_t irq_count;

	/* resources */
	struct ida pd_ida, mpt_ida, cq_ida, qp_ida, uar_ida, srq_ida;
	spinlock_t mtt_lock;
	unsigned long *mtt_bitmap;
	u8 *mpt_tag;
	u8 next_magic;
	struct xarray cq_xa;		/* cqn -> chpp_cq */
	struct xarray qp_xa;		/* device qpn -> chpp_qp */
	struct xarray srq_xa;		/* srqn -> chpp_srq */
	spinlock_t db_lock;		/* 64-bit CQ doorbells are single writeq */
	/* doorbells the FIFO lost: QUERY_DB_LOST, then RING_SQ per QP */
	struct work_struct db_lost_work;
	struct dentry *dbg;
	/* hw_counters: the device counters' names, in lower case */
	char stat_name[CHPP_NUM_HW_STATS][CHPP_HW_STAT_NAME_LEN];
	struct rdma_stat_desc stat_desc[CHPP_NUM_HW_STATS];
};

struct chpp_ucontext {
	struct ib_ucontext ibuc;
	u32 uar;			/* its UAR page */
	struct rdma_user_mmap_entry *uar_entry;
};

struct chpp_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct chpp_mr {
	struct ib_mr ibmr;
	u32 mpt;
	struct ib_umem *umem;
	u32 mtt_base;
	u32 npages;
	/* fast registration (alloc_mr): the page list REG_MR points at */
	__le64 *pl;
	dma_addr_t pl_dma;
	u32 pl_max, pl_n;
};

struct chpp_ah {
	struct ib_ah ibah;
	u16 dest_node;
	u8 dest_vf;		/* function: LID = CHPP_LID(node, function) */
	u8 ud_flags;		/* CHPP_WQE_UD_PEER: the permissive LID */
	/* as created, for query_ah (ib_mad matches responses with it) */
	u16 dlid;
	u8 sl, path_bits, static_rate;
};

struct chpp_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 n;
	u32 ci;
	struct chpp_buf buf;
	spinlock_t lock;
	bool hw;
	bool user;		/* ring in user memory, polled by the process */
	u16 uar;
};

struct chpp_wq {
	struct chpp_buf buf;
	u32 n;			/* WQEs, power of two */
	u32 shift;		/* log2 of the stride */
	u32 head;		/* next WQE to write (driver counter) */
	u32 tail;		/* oldest WQE not completed */
	u32 max_sge;
	u64 *wrid;
};

/* A shared receive queue (chpp_srq.c, docs/shared-receive-queues.md). */
struct chpp_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	u32 n;			/* WQEs, power of two */
	u32 shift;		/* log2 of the stride */
	u32 head;		/* next WQE to write (driver counter) */
	u32 max_sge;
	struct chpp_buf buf;	/* the ring, then the consumer record */
	struct chpp_srq_record *rec;	/* kernel SRQ: in buf, after the ring */
	spinlock_t lock;
	bool user;		/* ring in user memory, posted by the process */
	u16 uar;
};

struct chpp_qp {
	struct ib_qp ibqp;
	u32 idx;		/* device QPN */
	u8 magic;
	u8 type;		/* enum chpp_qp_type */
	u8 sig_all;
	u32 max_inline;
	enum ib_qp_state state;
	struct mutex mutex;	/* modify/query/destroy */
	spinlock_t sq_lock, rq_lock;
	struct chpp_wq sq, rq;	/* no rq with an SRQ (ibqp.srq) */
	u32 dest_ibqpn;		/* remote qp_num (RC/UC), with its magic */
	u32 qkey;
	bool user;		/* rings in user memory, posted by the process */
	u16 uar;
	struct work_struct redb_work;	/* RING_SQ after a doorbell FIFO loss */
};

/* UD and the special QPs, which are UD QPs for MADs (ABI 1.6). */
static inline bool chpp_qpt_is_ud(u8 type)
{
	return type == CHPP_QPT_UD || type == CHPP_QPT_SMI ||
	       type == CHPP_QPT_GSI;
}

static inline struct chpp_dev *to_cdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct chpp_dev, ibdev);
}

static inline struct chpp_ucontext *to_cuc(struct ib_ucontext *uc)
{
	return container_of(uc, struct chpp_ucontext, ibuc);
}

static inline struct chpp_pd *to_cpd(struct ib_pd *pd)
{
	return container_of(pd, struct chpp_pd, ibpd);
}

static inline struct chpp_mr *to_cmr(struct ib_mr *mr)
{
	return container_of(mr, struct chpp_mr, ibmr);
}

static inline struct chpp_cq *to_ccq(struct ib_cq *cq)
{
	return container_of(cq, struct chpp_cq, ibcq);
}

static inline struct chpp_qp *to_cqp(struct ib_qp *qp)
{
	return container_of(qp, struct chpp_qp, ibqp);
}

static inline struct chpp_srq *to_csrq(struct ib_srq *srq)
{
	return container_of(srq, struct chpp_srq, ibsrq);
}

static inline struct chpp_ah *to_cah(struct ib_ah *ah)
{
	return container_of(ah, struct chpp_ah, ibah);
}

static inline u32 chpp_rd(struct chpp_dev *dev, u32 off)
{
	return readl(dev->regs + off);
}

static inline void chpp_wr(struct chpp_dev *dev, u32 off, u32 val)
{
	writel(val, dev->regs + off);
}

/* chpp_cmd.c */
int chpp_cmd(struct chpp_dev *dev, u16 op, u64 in, u32 mod, u64 out, u64 *out_imm);
int chpp_mbox_alloc(struct chpp_dev *dev, struct chpp_mbox *mb);
void chpp_mbox_free(struct chpp_dev *dev, struct chpp_mbox *mb);
void chpp_cmd_event(struct chpp_dev *dev, const struct chpp_eqe *eqe);
int chpp_cmd_query(struct chpp_dev *dev, u16 op, u32 mod, void *out, size_t len);
int chpp_cmd_in(struct chpp_dev *dev, u16 op, u32 mod, const void *in, size_t len);

/* chpp_eq.c */
int chpp_eq_init(struct chpp_dev *dev);
void chpp_eq_cleanup(struct chpp_dev *dev);
int chpp_nop_selftest(struct chpp_dev *dev);

/* chpp_res.c */
int chpp_mtt_alloc(struct chpp_dev *dev, u32 n, u32 *base);
void chpp_mtt_free(struct chpp_dev *dev, u32 base, u32 n);
int chpp_write_mtt(struct chpp_dev *dev, u32 first, const u64 *entries, u32 n);
int chpp_buf_alloc(struct chpp_dev *dev, size_t size, struct chpp_buf *buf);
void chpp_buf_free(struct chpp_dev *dev, struct chpp_buf *buf);
int chpp_res_init(struct chpp_dev *dev);
void chpp_res_cleanup(struct chpp_dev *dev);

/* chpp_uverbs.c */
int chpp_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void chpp_dealloc_ucontext(struct ib_ucontext *ibuc);
int chpp_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void chpp_mmap_free(struct rdma_user_mmap_entry *rdma);
int chpp_umem_map(struct chpp_dev *dev, struct ib_umem *umem,
		  unsigned long pgsz, u32 *mtt_base, u32 *npages);
int chpp_ubuf_get(struct chpp_dev *dev, u64 addr, size_t size,
		  struct chpp_buf *buf);
void chpp_qp_redoorbell_work(struct work_struct *work);

/* chpp_sriov.c */
int chpp_sriov_configure(struct pci_dev *pdev, int num_vfs);
void chpp_sriov_disable(struct chpp_dev *dev);
void chpp_vf_flr_event(struct chpp_dev *dev, u32 vf);

/* chpp_ib.c */
int chpp_ib_register(struct chpp_dev *dev);
void chpp_ib_unregister(struct chpp_dev *dev);
void chpp_port_event(struct chpp_dev *dev, u8 state);
/* Read QUERY_PORT into dev->port. */
int chpp_port_refresh(struct chpp_dev *dev);
/* The LID a receive CQE's sender has, as ib_core's wc.slid. */
u16 chpp_src_lid(struct chpp_dev *dev, u16 node, u8 fn);
int chpp_dlid_route(struct chpp_dev *dev, u16 dlid, u16 *node, u8 *fn,
		    u8 *ud_flags);
u8 chpp_mr_access(int acc);
extern const struct ib_device_ops chpp_dev_ops;

/* chpp_cq.c */
int chpp_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
int chpp_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int chpp_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int chpp_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void chpp_cq_clean(struct chpp_cq *cq, u32 qpn);
void chpp_cq_event(struct chpp_dev *dev, u32 cqn, bool error);

/* chpp_srq.c */
int chpp_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata);
int chpp_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int chpp_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int chpp_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int chpp_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad);
void chpp_srq_event(struct chpp_dev *dev, u32 srqn, u8 type);

/* chpp_qp.c */
int chpp_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata);
int chpp_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int chpp_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init);
int chpp_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int chpp_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad);
int chpp_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad);
void chpp_qp_event(struct chpp_dev *dev, u32 qpn, u8 type);
void chpp_qp_sq_redoorbell(struct chpp_dev *dev, u32 qpn);
void chpp_db_lost_work(struct work_struct *work);

#include "chpp_compat.h"

#endif /* CHPP_HCA_H */
