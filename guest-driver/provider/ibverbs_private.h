/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * The part of libibverbs' private provider ABI that this provider uses:
 * symbol version IBVERBS_PRIVATE_34 of Debian 12's libibverbs.so.1
 * (rdma-core 44.0, libibverbs.so.1.14.44.0).
 *
 * libibverbs-dev ships only the public API (infiniband/verbs.h); providers
 * normally build inside rdma-core against its libibverbs/driver.h. This
 * header restates, in our own words, only the structures and functions we
 * call, with the layout facts checked against the binary:
 *  - struct verbs_context_ops: 76 function pointers in alphabetical order.
 *    Disassembly of verbs_set_ops reads ops offsets 0..0x258 in steps of 8
 *    (76 loads) and copies 63 of them into named fields of the public
 *    struct verbs_context / ibv_context_ops; each of those 63 matched the
 *    member name at that index (script in docs/verbs-provider.md).
 *  - struct verbs_device_ops: disassembly of the driver matcher in
 *    libibverbs (the caller of alloc_device) reads name at 0 (error message
 *    of verbs_register_driver_34), min/max ABI at 0x8/0xc, match_table at
 *    0x10, match_device at 0x20 and calls alloc_device at 0x38.
 *  - struct verbs_match_ent: that matcher walks the table in steps of 0x18,
 *    reads kind as a byte at 0x14 and driver_id at 0x8; PCI entries are
 *    matched by fnmatch("pci:v%08Xd%08Xsv*") against device/modalias.
 *  - struct verbs_device: the matcher stores ops at 0x298 (right after the
 *    664-byte struct ibv_device) and sets refcount (0x2a0) to 1; the
 *    device hold/put helpers do lock add/sub on 0x2a0.
 *  - _verbs_init_and_alloc_context(device, cmd_fd, size, offset, driver_id)
 *    callocs size bytes and initialises the verbs_context at that offset.
 *  - verbs_set_ops does not hand our create_cq_ex to applications: it
 *    installs libibverbs' wrapper, which refuses wc_flags beyond
 *    IBV_CREATE_CQ_SUP_WC_FLAGS, calls ours and then verbs_init_cq(cq,
 *    context, channel, cq_context), as ibv_create_cq does after create_cq.
 *    ibv_qp_to_qp_ex reads struct verbs_qp's comp_mask (below).
 *  - The ibv_cmd_* request structs are the uverbs header followed by the
 *    kernel's core request (rdma/ib_user_verbs.h); the driver's udata
 *    follows them. ibv_cmd_create_cq passes 0x28/0x8 as core request and
 *    response sizes, ibv_cmd_create_qp 0x40/0x20, ibv_cmd_get_context
 *    0x10/0x8, ibv_cmd_reg_mr 0x30, ibv_cmd_alloc_pd 0x10,
 *    ibv_cmd_query_qp 0x18, ibv_cmd_create_srq 0x28/0x10,
 *    ibv_cmd_modify_srq and ibv_cmd_query_srq 0x18: the static_asserts
 *    below hold us to them.
 */
#ifndef CHPP_IBVERBS_PRIVATE_H
#define CHPP_IBVERBS_PRIVATE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* Public struct sizes the offsets above were measured with. */
static_assert(sizeof(struct ibv_device) == 0x298, "ibv_device layout");
static_assert(offsetof(struct verbs_context, context) == 0x140,
	      "verbs_context layout");

/* An rdma device found in sysfs; we never look inside. */
struct verbs_sysfs_dev;

/* Kinds of match table entries; a table ends with kind 0. */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

static_assert(sizeof(struct verbs_match_ent) == 0x18, "match entry stride");
static_assert(offsetof(struct verbs_match_ent, kind) == 0x14, "match kind");

/* A PCI entry of a match table, as rdma-core's driver.h spells it. */
#define VERBS_PCI_MATCH(_vendor, _device, _data)			\
	{ .driver_data = (void *)(_data), .vendor = (_vendor),		\
	  .device = (_device), .kind = VERBS_MATCH_PCI }

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

static_assert(offsetof(struct verbs_device_ops, match_min_abi_version) == 0x8,
	      "min abi");
static_assert(offsetof(struct verbs_device_ops, match_table) == 0x10,
	      "match_table");
static_assert(offsetof(struct verbs_device_ops, match_device) == 0x20,
	      "match_device");
static_assert(offsetof(struct verbs_device_ops, alloc_device) == 0x38,
	      "alloc_device");

/* A device: the public ibv_device, then what libibverbs keeps about it. */
struct verbs_device {
	struct ibv_device device;
	const struct verbs_device_ops *ops;
	int refcount;		/* atomic_int in libibverbs */
	struct {
		void *next, *prev;
	} entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

static_assert(offsetof(struct verbs_device, ops) == 0x298, "verbs_device.ops");

static inline struct verbs_device *
verbs_get_device(const struct ibv_device *dev)
{
	return (struct verbs_device *)dev;	/* its first member */
}
static_assert(offsetof(struct verbs_device, refcount) == 0x2a0,
	      "verbs_device.refcount");

struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;
	int access;
};

/*
 * A QP as libibverbs sees it. ibv_qp_to_qp_ex() is "testb $0x2,0x160(%rdi)":
 * it returns the QP itself as an ibv_qp_ex when comp_mask, right after the
 * 0x160-byte struct ibv_qp_ex, has VERBS_QP_EX, else NULL. A provider's QP
 * therefore starts with this, whether it is extended or not.
 */
enum {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;		/* struct verbs_xrcd *: no XRC here */
};

static_assert(sizeof(struct ibv_qp_ex) == 0x160, "ibv_qp_ex layout");
static_assert(offsetof(struct verbs_qp, comp_mask) == 0x160,
	      "verbs_qp.comp_mask");

/*
 * Every operation a provider may implement, in the order of the binary
 * (alphabetical). Unset entries keep libibverbs' defaults (EOPNOTSUPP).
 * Operations we do not implement are reduced to void pointers.
 */

struct verbs_context_ops {
	void *advise_mr;
	void *alloc_dm;
	void *alloc_mw;
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	void *attach_mcast;
	void *bind_mw;
	void *close_xrcd;
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	void *create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	void *create_flow;
	void *create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	void *create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	void *create_srq_ex;
	void *create_wq;
	void *dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow;
	void *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	void *destroy_wq;
	void *detach_mcast;
	void (*free_context)(struct ibv_context *context);
	void *free_dm;
	void *get_srq_num;
	void *import_dm;
	void *import_mr;
	void *import_pd;
	void *modify_cq;
	void *modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	void *modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	void *modify_wq;
	void *open_qp;
	void *open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	void *post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	void *query_qp_data_in_order;
	void *query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	void *read_counters;
	void *reg_dm_mr;
	void *reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	void *rereg_mr;
	void *resize_cq;
	void *set_ece;
	void *unimport_dm;
	void *unimport_mr;
	void *unimport_pd;
};

static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
	      "verbs_context_ops: 76 entries");
static_assert(offsetof(struct verbs_context_ops, alloc_pd) == 5 * 8, "op");
static_assert(offsetof(struct verbs_context_ops, free_context) == 39 * 8, "op");
static_assert(offsetof(struct verbs_context_ops, poll_cq) == 53 * 8, "op");
static_assert(offsetof(struct verbs_context_ops, query_device_ex) == 58 * 8,
	      "op");
static_assert(offsetof(struct verbs_context_ops, query_port) == 60 * 8, "op");
static_assert(offsetof(struct verbs_context_ops, reg_mr) == 68 * 8, "op");

/* Command buffers of the ibv_cmd_* calls: uverbs header + core request. */
#define CHPP_IBV_CMD(name, core)			\
	struct name {					\
		struct ib_uverbs_cmd_hdr hdr;		\
		struct core core;			\
	}

CHPP_IBV_CMD(ibv_get_context, ib_uverbs_get_context);
CHPP_IBV_CMD(ibv_query_port, ib_uverbs_query_port);
CHPP_IBV_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
CHPP_IBV_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
CHPP_IBV_CMD(ibv_create_cq, ib_uverbs_create_cq);
CHPP_IBV_CMD(ibv_create_qp, ib_uverbs_create_qp);
CHPP_IBV_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
CHPP_IBV_CMD(ibv_query_qp, ib_uverbs_query_qp);
CHPP_IBV_CMD(ibv_create_srq, ib_uverbs_create_srq);
CHPP_IBV_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
CHPP_IBV_CMD(ibv_query_srq, ib_uverbs_query_srq);

static_assert(sizeof(struct ibv_get_context) == 0x10, "get_context cmd");
static_assert(sizeof(struct ibv_alloc_pd) == 0x10, "alloc_pd cmd");
static_assert(sizeof(struct ibv_reg_mr) == 0x30, "reg_mr cmd");
static_assert(sizeof(struct ibv_create_cq) == 0x28, "create_cq cmd");
static_assert(sizeof(struct ibv_create_qp) == 0x40, "create_qp cmd");
static_assert(sizeof(struct ibv_query_qp) == 0x18, "query_qp cmd");
static_assert(sizeof(struct ib_uverbs_create_cq_resp) == 0x8, "cq resp");
static_assert(sizeof(struct ib_uverbs_create_qp_resp) == 0x20, "qp resp");
static_assert(sizeof(struct ib_uverbs_get_context_resp) == 0x8, "ctx resp");
static_assert(sizeof(struct ibv_create_srq) == 0x28, "create_srq cmd");
static_assert(sizeof(struct ibv_modify_srq) == 0x18, "modify_srq cmd");
static_assert(sizeof(struct ibv_query_srq) == 0x18, "query_srq cmd");
static_assert(sizeof(struct ib_uverbs_create_srq_resp) == 0x10, "srq resp");

/* Functions of libibverbs.so.1, version IBVERBS_PRIVATE_34. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * The provider registers itself when libibverbs dlopen()s it (from
 * /etc/libibverbs.d/chpp.driver), as driver.h's PROVIDER_DRIVER does.
 */
#define PROVIDER_DRIVER(provider_name, drv_struct)			\
	static void __attribute__((constructor))			\
	provider_name##_register_driver(void)				\
	{								\
		verbs_register_driver_34(&drv_struct);			\
	}
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

#endif /* CHPP_IBVERBS_PRIVATE_H */
