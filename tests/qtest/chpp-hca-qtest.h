/*
 * Helpers shared by the chpp-hca qtests: boot a machine with the device,
 * drive the HCR, build queues in guest memory and observe MSI-X.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef CHPP_HCA_QTEST_H
#define CHPP_HCA_QTEST_H

#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "hw/chpp/chpp-hca-abi.h"
/* The QObject headers, where this QEMU has them. */
#define CHPP_QEMU_COMPAT_QTEST
#include "hw/chpp/chpp-qemu-compat.h"
#undef CHPP_QEMU_COMPAT_QTEST

/* Where the tests put the device: an integrated endpoint on q35's root. */
#define CHPP_TEST_DEVFN     QPCI_DEVFN(4, 0)

typedef struct ChppDev {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *pdev;
    QPCIBar bar0;
    QPCIBar bar2;
    uint64_t mbox_in;
    uint64_t mbox_out;
    uint64_t msi_page;      /* MSI-X messages land here: 4 bytes/vector */
    bool toggle;            /* t bit of the next command */
    uint32_t next_mtt;      /* bump allocator of MTT entries */
} ChppDev;

/* CHPP_QTEST_PROPS: properties every device the helpers start gets; NULL. */
const char *chpp_env_props(void);
/* Do those properties turn the timing mode on (docs/timing-model.md)? */
bool chpp_timing_on(void);
/* Boot q35 with "-device chpp-hca,addr=04.0<props>" plus extra args. */
ChppDev *chpp_start(const char *props, const char *extra);
/* Same, for an incoming migration from @uri; takes state from @src. */
ChppDev *chpp_start_incoming(const char *props, const char *uri);
ChppDev *chpp_start_incoming_extra(const char *props, const char *extra,
                                   const char *uri);
void chpp_adopt_migrated(ChppDev *dst, const ChppDev *src);
void chpp_stop(ChppDev *d);

uint32_t chpp_rd(ChppDev *d, uint32_t off);
void chpp_wr(ChppDev *d, uint32_t off, uint32_t val);
uint32_t chpp_counter(ChppDev *d, enum chpp_counter c);

/* HCR */
void chpp_cmd_post(ChppDev *d, uint16_t opcode, uint64_t in_param,
                   uint32_t in_mod, uint64_t out_param, bool event,
                   uint16_t token);
/* Wait (stepping the virtual clock) for go to clear; returns the status. */
uint8_t chpp_cmd_wait(ChppDev *d, uint64_t *out_param);
/* Post and wait, polling mode. */
uint8_t chpp_cmd(ChppDev *d, uint16_t opcode, uint64_t in_param,
                 uint32_t in_mod, uint64_t out_param);
void chpp_init_hca(ChppDev *d);

/* Event queues: the ring is allocated and zeroed here. */
uint64_t chpp_eq_alloc(ChppDev *d, uint32_t nent);
uint8_t chpp_sw2hw_eq(ChppDev *d, uint32_t eqn, uint64_t base, uint32_t nent,
                      uint16_t vector, uint8_t flags);
uint64_t chpp_create_eq(ChppDev *d, uint32_t eqn, uint32_t nent,
                        uint16_t vector, bool armed);
uint8_t chpp_map_eq(ChppDev *d, uint32_t eqn, uint64_t mask, bool unmap);
uint8_t chpp_query_eq(ChppDev *d, uint32_t eqn, struct chpp_eq_context *ctx);
void chpp_read_eqe(ChppDev *d, uint64_t ring, uint32_t slot,
                   struct chpp_eqe *eqe);
void chpp_eq_db(ChppDev *d, uint32_t eqn, uint32_t ci, bool arm);

/* Memory regions: MTT entries for a contiguous buffer of 4 KiB pages. */
uint32_t chpp_map_pages(ChppDev *d, uint64_t addr, uint64_t len);
void chpp_write_mtt(ChppDev *d, uint32_t first, const uint64_t *entries,
                    uint32_t n);
uint8_t chpp_sw2hw_mpt(ChppDev *d, uint32_t idx,
                       const struct chpp_mpt_context *ctx);
/* Register [addr, addr + len) as MR @idx (4 KiB pages); returns the key. */
uint32_t chpp_create_mr(ChppDev *d, uint32_t idx, uint32_t pd, uint64_t addr,
                        uint64_t len, uint32_t flags);

/* Completion queues: ring allocated, zeroed and mapped here. */
uint8_t chpp_sw2hw_cq(ChppDev *d, uint32_t cqn,
                      const struct chpp_cq_context *ctx);
uint64_t chpp_create_cq(ChppDev *d, uint32_t cqn, uint32_t nent, uint32_t eqn,
                        uint16_t uar);
void chpp_read_cqe(ChppDev *d, uint64_t ring, uint32_t slot,
                   struct chpp_cqe *cqe);
/* UAR doorbells. */
void chpp_cq_db(ChppDev *d, uint16_t uar, uint32_t cqn, uint32_t cmd,
                uint32_t ci);
void chpp_sq_db(ChppDev *d, uint16_t uar, uint32_t qpn, uint32_t pi);
void chpp_rq_db(ChppDev *d, uint16_t uar, uint32_t qpn, uint32_t pi);

/* Queue pairs. */
uint8_t chpp_modify_qp(ChppDev *d, uint16_t opcode, uint32_t qpn,
                       uint32_t mask, const struct chpp_qp_context *ctx);
uint8_t chpp_query_qp(ChppDev *d, uint32_t qpn, struct chpp_qp_context *ctx);
/* An RC QP in INIT to RTR and RTS with @c's path, PSNs, limits and timers. */
void chpp_rc_qp_connect(ChppDev *d, uint32_t qpn,
                        const struct chpp_qp_context *c);

/* Data path: a CQ and a QP as the test sees them, and work requests. */
typedef struct ChppTCq {
    uint32_t cqn;
    uint64_t ring;
    uint32_t nent;
    uint32_t ci;
    uint16_t uar;
} ChppTCq;

typedef struct ChppTQp {
    uint32_t qpn;
    uint8_t type;
    uint64_t sq;
    uint64_t rq;
    uint32_t sq_pi;
    uint32_t rq_pi;
    uint8_t log_sq;
    uint8_t log_rq;
    uint8_t stride;         /* log2 of both strides */
    uint8_t magic;
    uint16_t uar;
} ChppTQp;

typedef struct ChppTSge {
    uint64_t addr;
    uint32_t len;
    uint32_t key;
} ChppTSge;

typedef struct ChppWqeBuf {
    uint8_t buf[1 << CHPP_MAX_WQE_SHIFT];
    uint32_t pos;
} ChppWqeBuf;

ChppWqeBuf *chpp_wqe_new(uint8_t opcode, uint8_t flags, uint64_t wr_id,
                         uint32_t imm);
void chpp_wqe_raddr(ChppWqeBuf *w, uint64_t raddr, uint32_t rkey);
void chpp_wqe_atomic(ChppWqeBuf *w, uint64_t swap_add, uint64_t compare);
void chpp_wqe_ud(ChppWqeBuf *w, uint32_t node, uint32_t qpn, uint32_t qkey,
                 uint8_t magic);
void chpp_wqe_sge(ChppWqeBuf *w, uint64_t addr, uint32_t len, uint32_t lkey);
void chpp_wqe_inline(ChppWqeBuf *w, const void *data, uint32_t len);
/* Write @w (freed) at the SQ producer index; ring the doorbell if @ring. */
void chpp_post_send(ChppDev *d, ChppTQp *q, ChppWqeBuf *w, bool ring);
/* The same for @n WQEs (all freed) in one or two writes, one doorbell. */
void chpp_post_sends(ChppDev *d, ChppTQp *q, ChppWqeBuf **w, uint32_t n,
                     bool ring);
/*
 * @count receives with wr_id @wr_id, @wr_id + 1, ..., each with the same
 * @nsge SGEs, in one or two writes, and one RQ doorbell.
 */
void chpp_post_recvs(ChppDev *d, ChppTQp *q, uint64_t wr_id,
                     const ChppTSge *sge, uint32_t nsge, uint32_t count);
void chpp_post_recv_sges(ChppDev *d, ChppTQp *q, uint64_t wr_id,
                         const ChppTSge *sge, uint32_t n);
bool chpp_cqe_valid(ChppDev *d, ChppTCq *cq, struct chpp_cqe *cqe);
/* Wait (bounded) for the next CQE, consume it and update the CQ's CI. */
void chpp_poll_cq(ChppDev *d, ChppTCq *cq, struct chpp_cqe *cqe);
/* A recognisable byte pattern, and its check (fails the test). */
void chpp_fill(ChppDev *d, uint64_t addr, size_t len, uint8_t seed);
void chpp_check(ChppDev *d, uint64_t addr, size_t len, uint8_t seed);

/* MSI-X: route @vector to guest memory so each message can be seen. */
void chpp_msix_route(ChppDev *d, uint16_t vector);
void chpp_msix_mask(ChppDev *d, uint16_t vector, bool mask);
/* True if @vector sent a message since the last call (and clears it). */
bool chpp_msix_fired(ChppDev *d, uint16_t vector);

/*
 * Shared receive queues (ABI 1.5): an SRQ as the test sees it.  Its ring
 * (then the consumer record) is allocated, filled with 0xee and mapped by
 * chpp_create_srq().
 */
typedef struct ChppTSrq {
    uint32_t srqn;
    uint64_t ring;
    uint32_t pi;
    uint8_t log_size;
    uint8_t stride;
    uint16_t uar;
} ChppTSrq;

uint8_t chpp_sw2hw_srq(ChppDev *d, uint32_t srqn,
                       const struct chpp_srq_context *ctx);
uint8_t chpp_query_srq(ChppDev *d, uint32_t srqn,
                       struct chpp_srq_context *ctx);
uint8_t chpp_create_srq(ChppDev *d, ChppTSrq *q, uint32_t srqn, uint32_t pd,
                        uint8_t log_size, uint8_t stride, uint16_t uar);
void chpp_srq_db(ChppDev *d, uint16_t uar, uint32_t srqn, uint32_t pi);
/* As chpp_post_recvs(), into the SRQ, and one SRQ doorbell. */
void chpp_post_srq_recvs(ChppDev *d, ChppTSrq *q, uint64_t wr_id,
                         const ChppTSge *sge, uint32_t nsge, uint32_t count);
/* The consumer record the device wrote behind the ring. */
void chpp_srq_record(ChppDev *d, const ChppTSrq *q, uint32_t *free,
                     uint32_t *ci);

/* Memory regions and CQs: raw commands returning the status. */
uint8_t chpp_query_mpt(ChppDev *d, uint32_t idx, struct chpp_mpt_context *ctx);
uint8_t chpp_write_mtt_status(ChppDev *d, uint64_t first,
                              const uint64_t *entries, uint32_t n);
uint8_t chpp_query_cq(ChppDev *d, uint32_t cqn, struct chpp_cq_context *ctx);
uint8_t chpp_resize_cq(ChppDev *d, uint32_t cqn,
                       const struct chpp_cq_context *ctx);
/* A command that fails is also one guest error and one command error. */
void chpp_assert_cmd_fails(ChppDev *d, uint8_t status, uint16_t opcode,
                           uint64_t in, uint32_t mod, uint64_t out);
/*
 * QP rings: allocate, zero and map the SQ and RQ of @ctx (sizes and strides
 * already set in it; 4 KiB pages), fill its MTT bases and page sizes and
 * return the DMA addresses.
 */
void chpp_qp_alloc_rings(ChppDev *d, struct chpp_qp_context *ctx,
                         uint64_t *sq, uint64_t *rq);
/* HW2SW_CQ. */
uint8_t chpp_hw2sw_cq(ChppDev *d, uint32_t cqn);

/*
 * Two nodes joined by a link (docs/link.md): one QEMU each, a device with
 * node id @id on "-chardev socket,id=lnk,@chardev", an EQ, CQs 0 (send) and
 * 1 (receive) of 256 entries on UAR CHPP_NODE_UAR, port 1 opened.
 */
#define CHPP_NODE_UAR   1
#define CHPP_NODE_PD    2
typedef struct ChppNode {
    ChppDev *d;
    uint16_t id;
    uint8_t func;           /* 0 = PF, n = VF n */
    uint64_t eq;
    uint32_t eq_ci;
    ChppTCq cq[2];
    ChppTQp qp;
    uint32_t next_mr;
} ChppNode;

void chpp_node_start(ChppNode *n, uint16_t id, const char *chardev);
/* The same set-up (EQ, CQs, port) on function @func of a running device. */
void chpp_node_setup(ChppNode *n, ChppDev *d, uint16_t id, uint8_t func);
bool chpp_node_link_up(ChppNode *n);
/* Wait (real time, bounded) until both links (@b may be NULL) are @up. */
void chpp_node_wait_link(ChppNode *a, ChppNode *b, bool up);
/* RC QP @qpn in INIT, 2^@log_q WQEs of 2^@stride bytes per ring. */
void chpp_node_qp(ChppNode *n, uint32_t qpn, uint8_t magic, uint8_t log_q,
                  uint8_t stride);
/* INIT -> RTR -> RTS towards @peer's QP (MTU 4096, depth 16). */
void chpp_node_connect(ChppNode *n, const ChppNode *peer, uint8_t timeout,
                       uint8_t retry);
/* A signaled WQE of @op (PUT, GET, SEND...) with one gather entry. */
void chpp_node_post(ChppNode *n, uint8_t op, uint64_t wr_id, uint64_t laddr,
                    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                    bool ring);
/* The next CQE of CQ @cq is a success for @wr_id, @opcode, @len bytes. */
void chpp_node_expect(ChppNode *n, uint32_t cq, uint64_t wr_id,
                      uint8_t opcode, uint32_t len);
/* Nothing more on the CQ after 10 ms of virtual time: nothing came twice. */
void chpp_node_expect_none(ChppNode *n, uint32_t cq);

/*
 * SR-IOV: a PF and test handles for its VFs.  The SR-IOV capability lies
 * beyond the 256 bytes libqos config accessors reach, so q35's ECAM window
 * is enabled and used; the VF BARs are placed below libqos's PCI window.
 */
#define CHPP_TEST_ECAM_BASE 0xb0000000ull
#define CHPP_TEST_VF_BAR0   0xd0000000ull
#define CHPP_TEST_VF_BAR2   0xd0100000ull
typedef struct ChppPf {
    ChppDev *d;
    ChppDev *vf[CHPP_MAX_VFS + 1];      /* [n] = VF n, NULL if disabled */
} ChppPf;

ChppPf *chpp_pf_start(const char *props, const char *extra);
/* The ECAM address of byte @off of the config space of @devfn (bus 0). */
uint64_t chpp_ecam(int devfn, int off);
/* Config space of function @fn (0 = PF) through ECAM. */
uint32_t chpp_pf_cfg_rd(ChppPf *p, int fn, int off);
void chpp_pf_cfg_wr16(ChppPf *p, int fn, int off, uint16_t v);
/* Disable the VFs, then enable @n of them (0: leave them disabled). */
void chpp_pf_vfs_set(ChppPf *p, int n);
/* A handle for VF @fn; enables its memory space, bus mastering, MSI-X. */
ChppDev *chpp_vf_handle(ChppPf *p, int fn);
void chpp_vf_free(ChppDev *vf);
void chpp_pf_stop(ChppPf *p);
/*
 * After migrating @src's QEMU to @dst: a ChppPf for @dst whose handles are
 * @src's (same BARs, mailboxes, MSI-X routes, HCR toggles); @src's VF
 * handles are freed and @src->d is stopped.
 */
ChppPf *chpp_pf_adopt_migrated(ChppDev *dst, ChppPf *src);

/* Benchmark helpers. */
/*
 * A QEMU child of this process (libqtest execs it), other than @except:
 * the youngest live one.
 */
int chpp_find_qemu_pid(int except);
/* CPU time (ns) of all threads of @pid (0: this process), from schedstat. */
uint64_t chpp_cpu_ns(int pid);
/* Sorts @v and returns its median and 99th percentile. */
void chpp_med_p99(int64_t *v, uint32_t n, double *med, double *p99);
/* "64 B", "4 KiB", "1 MiB" (a few static buffers in rotation). */
const char *chpp_size_str(uint32_t size);

/*
 * Migration streams as files, for tests of streams the device refuses.
 * chpp_qmp_uri: a QMP command taking a 'uri' argument, which must succeed.
 * chpp_save_to_file: the running VM's state into @path (it ends stopped).
 * chpp_stream_find: the offset of the one place @what is in @data.
 * chpp_load_stream: start a destination (device @props) that loads
 * @stream, tracing chpp_hca_*vmstate_* into @log; a stream that loads
 * leaves it running or paused (@good), a refused one makes it exit with
 * status 1, not by a signal (QEMU 7.2 exits when an incoming migration
 * fails).
 * chpp_load_corrupted: data[@at] (!= @value now) set to @value, loaded
 * from a file in @dir: refused, with @trace in the trace if not NULL.
 */
void chpp_qmp_uri(QTestState *qts, const char *cmd, const char *arg);
void chpp_save_to_file(QTestState *qts, const char *path);
size_t chpp_stream_find(const uint8_t *data, size_t len, const void *what,
                        size_t wlen);
void chpp_load_stream(const char *props, const char *stream, const char *log,
                      bool good);
void chpp_load_corrupted(const char *props, const uint8_t *data, size_t len,
                         const char *dir, const char *what, size_t at,
                         uint8_t value, const char *trace);

/* A packet as the wire carries it (docs/wire-format.md), for a peer. */
typedef struct ChppFrm {
    uint8_t op;
    uint8_t flags;
    uint8_t magic;
    uint8_t src_vf;
    uint8_t dst_vf;
    uint8_t vc;
    uint16_t src_node;
    uint16_t dst_node;
    uint32_t psn;
    uint32_t src_qpn;
    uint32_t dst_qpn;
    uint32_t rkey;
    uint32_t msg_len;
    uint32_t len;               /* payload bytes (zeros) */
    uint64_t va;
    uint32_t qkey;
    uint16_t mlid;
} ChppFrm;

/* The header of figure 6, the extension, @len zero bytes: as encoded. */
GByteArray *chpp_frm_build(const ChppFrm *f);

#endif
