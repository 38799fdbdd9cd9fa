/*
 * chpp-hca migration with SR-IOV VFs enabled: the VFs are re-created on
 * the destination with their BARs, tables, queues, counters and work in
 * progress, and traffic between VFs and with the PF resumes with every
 * byte checked, nothing lost and nothing done twice.  A stream whose VF
 * state is corrupt or inconsistent is refused without a crash.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define SRIOV       CHPP_PCI_EXT_CAP_SRIOV
#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)
#define SCQ         0
#define RCQ         1
#define NVFS        3
#define SCRATCH(fn) (0x5ca1ab10u + (fn))

/* A buffer of @len bytes registered on @n's function. */
static uint64_t buf_mr(ChppNode *n, size_t len, uint32_t *key)
{
    uint64_t addr = guest_alloc(&n->d->qs->alloc, len);

    qtest_memset(n->d->qts, addr, 0, len);
    *key = chpp_create_mr(n->d, n->next_mr++, CHPP_NODE_PD, addr, len,
                          MR_ALL);
    return addr;
}

typedef struct Snap {
    uint32_t counters[1 + NVFS][CHPP_CNT_NUM];
    struct chpp_qp_context qp[1 + NVFS];
    struct chpp_cq_context cq[1 + NVFS][2];
} Snap;

/* Counters last: the SNAP_CMDS queries are commands and count. */
#define SNAP_CMDS   3
static void snap_take(ChppNode *fn, Snap *s)
{
    int i, c;

    for (i = 0; i <= NVFS; i++) {
        g_assert_cmphex(chpp_query_qp(fn[i].d, 0, &s->qp[i]), ==,
                        CHPP_STAT_OK);
        for (c = 0; c < 2; c++) {
            g_assert_cmphex(chpp_query_cq(fn[i].d, c, &s->cq[i][c]), ==,
                            CHPP_STAT_OK);
        }
    }
    for (i = 0; i <= NVFS; i++) {
        for (c = 0; c < CHPP_CNT_NUM; c++) {
            s->counters[i][c] = chpp_counter(fn[i].d, c);
        }
    }
}

static void set_vf_res(ChppPf *p, int fn, uint32_t qps, uint8_t weight)
{
    struct chpp_vf_res r = {
        .num_qps = cpu_to_le32(qps), .num_cqs = cpu_to_le32(8),
        .num_eqs = cpu_to_le32(4), .num_mpts = cpu_to_le32(64),
        .num_pds = cpu_to_le32(16), .num_mtts = cpu_to_le32(4096),
        .msix_vectors = cpu_to_le32(4), .weight = weight,
    };

    qtest_memwrite(p->d->qts, p->d->mbox_in, &r, sizeof(r));
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_SET_VF_RES, p->d->mbox_in, fn,
                             0), ==, CHPP_STAT_OK);
}

/*
 * PF + 3 VFs.  VF1 QP0 <-> VF2 QP0 and VF3 QP0 <-> PF QP0, then at the
 * moment of migration: a SEND VF2 -> VF1 waiting out RNR NAKs (VF1 has no
 * receive yet; its RNR timer runs), a completion on VF3 not yet polled, a
 * PUT written on VF1's SQ but not rung, a receive posted on the PF.
 */
static void test_migrate_vfs(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-mig-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppNode fn[1 + NVFS];
    uint64_t buf[1 + NVFS];
    uint32_t key[1 + NVFS];
    struct chpp_vf_res res;
    struct chpp_dev_cap cap;
    struct chpp_cqe cqe;
    ChppTSge sge;
    Snap before, after;
    ChppDev *dst;
    int i;

    set_vf_res(p, 2, 3, 3);
    chpp_pf_vfs_set(p, NVFS);
    for (i = 0; i <= NVFS; i++) {
        chpp_node_setup(&fn[i], i ? p->vf[i] : p->d, 0, i);
        chpp_node_qp(&fn[i], 0, 0x30 + i, 4, 8);
        buf[i] = buf_mr(&fn[i], 65536, &key[i]);
        chpp_wr(fn[i].d, CHPP_REG_SCRATCH, SCRATCH(i));
    }
    chpp_node_connect(&fn[1], &fn[2], 14, 3);
    chpp_node_connect(&fn[2], &fn[1], 14, 3);
    chpp_node_connect(&fn[3], &fn[0], 14, 3);
    chpp_node_connect(&fn[0], &fn[3], 14, 3);

    /* Completed traffic: PUT VF1 -> VF2, GET VF3 <- PF. */
    chpp_fill(fn[1].d, buf[1], 8192, 1);
    chpp_node_post(&fn[1], CHPP_WQE_PUT, 1, buf[1], 8192, key[1], buf[2],
                   key[2], true);
    chpp_node_expect(&fn[1], SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_check(fn[2].d, buf[2], 8192, 1);
    chpp_fill(fn[0].d, buf[0], 8192, 2);
    chpp_node_post(&fn[3], CHPP_WQE_GET, 2, buf[3], 8192, key[3], buf[0],
                   key[0], true);
    chpp_node_expect(&fn[3], SCQ, 2, CHPP_CQE_OP_RDMA_READ, 8192);
    chpp_check(fn[3].d, buf[3], 8192, 2);

    /* Work in progress at the migration. */
    chpp_fill(fn[2].d, buf[2] + 16384, 4096, 3);
    chpp_node_post(&fn[2], CHPP_WQE_SEND, 3, buf[2] + 16384, 4096, key[2], 0,
                   0, true);
    for (i = 0; i < 20 && !chpp_counter(fn[2].d, CHPP_CNT_RNR_NAKS); i++) {
        qtest_clock_step(p->d->qts, 100000);
    }
    g_assert_cmpuint(chpp_counter(fn[2].d, CHPP_CNT_RNR_NAKS), >=, 1);
    g_assert_false(chpp_cqe_valid(fn[2].d, &fn[2].cq[SCQ], &cqe));

    chpp_fill(fn[3].d, buf[3] + 16384, 2048, 4);
    chpp_node_post(&fn[3], CHPP_WQE_PUT, 4, buf[3] + 16384, 2048, key[3],
                   buf[0] + 16384, key[0], true);
    for (i = 0; i < 100 && !chpp_cqe_valid(fn[3].d, &fn[3].cq[SCQ], &cqe);
         i++) {
        qtest_clock_step(p->d->qts, 100000);
    }
    g_assert(chpp_cqe_valid(fn[3].d, &fn[3].cq[SCQ], &cqe));

    chpp_fill(fn[1].d, buf[1] + 16384, 3000, 5);
    chpp_node_post(&fn[1], CHPP_WQE_PUT, 5, buf[1] + 16384, 3000, key[1],
                   buf[2] + 32768, key[2], false);

    sge = (ChppTSge) { buf[0] + 32768, 4096, key[0] };
    chpp_post_recvs(fn[0].d, &fn[0].qp, 6, &sge, 1, 1);
    snap_take(fn, &before);

    dst = chpp_start_incoming(NULL, uri);
    migrate(p->d->qs, dst->qs, uri);
    p = chpp_pf_adopt_migrated(dst, p);
    for (i = 0; i <= NVFS; i++) {
        fn[i].d = i ? p->vf[i] : p->d;
    }

    /* The same VFs, at the same BARs, with the same state. */
    g_assert_cmpuint(chpp_pf_cfg_rd(p, 0, SRIOV + PCI_SRIOV_NUM_VF) & 0xffff,
                     ==, NVFS);
    for (i = 1; i <= NVFS; i++) {
        g_assert_cmphex(chpp_pf_cfg_rd(p, i, PCI_VENDOR_ID), ==, 0xffffffff);
        g_assert_cmphex(chpp_rd(fn[i].d, CHPP_REG_MAGIC), ==, CHPP_MAGIC);
        g_assert_cmpuint(chpp_rd(fn[i].d, CHPP_REG_FUNC), ==, i);
    }
    g_assert_cmphex(chpp_pf_cfg_rd(p, NVFS + 1, CHPP_PCI_CAP_EXP), ==,
                    0xffffffff);
    for (i = 0; i <= NVFS; i++) {
        g_assert_cmphex(chpp_rd(fn[i].d, CHPP_REG_SCRATCH), ==, SCRATCH(i));
    }
    snap_take(fn, &after);
    for (i = 0; i <= NVFS; i++) {
        /* Only the destination's own three queries were added. */
        before.counters[i][CHPP_CNT_CMDS] += SNAP_CMDS;
    }
    g_assert(memcmp(before.counters, after.counters,
                    sizeof(before.counters)) == 0);
    g_assert(memcmp(before.qp, after.qp, sizeof(before.qp)) == 0);
    g_assert(memcmp(before.cq, after.cq, sizeof(before.cq)) == 0);
    g_assert_cmpuint(after.qp[1].state, ==, CHPP_QPS_RTS);
    /* Quotas and weights came along; VF2 was created with them. */
    g_assert_cmphex(chpp_cmd(p->d, CHPP_CMD_QUERY_VF_RES, 0, 2,
                             p->d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, p->d->mbox_out, &res, sizeof(res));
    g_assert_cmpuint(le32_to_cpu(res.num_qps), ==, 3);
    g_assert_cmpuint(res.weight, ==, 3);
    g_assert_cmphex(chpp_cmd(fn[2].d, CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                             fn[2].d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, fn[2].d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==, 3);

    /* The completion VF3 had not polled is there, once. */
    chpp_node_expect(&fn[3], SCQ, 4, CHPP_CQE_OP_RDMA_WRITE, 2048);
    chpp_check(fn[0].d, buf[0] + 16384, 2048, 4);
    /* VF1 posts the receive VF2's SEND was waiting for. */
    sge = (ChppTSge) { buf[1] + 32768, 4096, key[1] };
    chpp_post_recvs(fn[1].d, &fn[1].qp, 7, &sge, 1, 1);
    chpp_node_expect(&fn[2], SCQ, 3, CHPP_CQE_OP_SEND, 4096);
    chpp_node_expect(&fn[1], RCQ, 7, CHPP_CQE_OP_RECV, 4096);
    chpp_check(fn[1].d, buf[1] + 32768, 4096, 3);
    /* VF1's PUT that was written but not rung. */
    chpp_sq_db(fn[1].d, CHPP_NODE_UAR, 0, fn[1].qp.sq_pi);
    chpp_node_expect(&fn[1], SCQ, 5, CHPP_CQE_OP_RDMA_WRITE, 3000);
    chpp_check(fn[2].d, buf[2] + 32768, 3000, 5);
    /* VF3 SENDs into the receive the PF posted before; PF PUTs to VF3. */
    chpp_fill(fn[3].d, buf[3] + 49152, 4096, 6);
    chpp_node_post(&fn[3], CHPP_WQE_SEND, 8, buf[3] + 49152, 4096, key[3], 0,
                   0, true);
    chpp_node_expect(&fn[3], SCQ, 8, CHPP_CQE_OP_SEND, 4096);
    chpp_node_expect(&fn[0], RCQ, 6, CHPP_CQE_OP_RECV, 4096);
    chpp_check(fn[0].d, buf[0] + 32768, 4096, 6);
    chpp_fill(fn[0].d, buf[0] + 49152, 8192, 7);
    chpp_node_post(&fn[0], CHPP_WQE_PUT, 9, buf[0] + 49152, 8192, key[0],
                   buf[3] + 49152, key[3], true);
    chpp_node_expect(&fn[0], SCQ, 9, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_check(fn[3].d, buf[3] + 49152, 8192, 7);

    for (i = 0; i <= NVFS; i++) {
        chpp_node_expect_none(&fn[i], SCQ);
        chpp_node_expect_none(&fn[i], RCQ);
        g_assert_cmpuint(chpp_counter(fn[i].d, CHPP_CNT_PKTS_DROPPED), ==, 0);
    }
    /* One WQE each started after the migration, none started again. */
    g_assert_cmpuint(chpp_counter(fn[1].d, CHPP_CNT_WQES) -
                     before.counters[1][CHPP_CNT_WQES], ==, 1);
    g_assert_cmpuint(chpp_counter(fn[3].d, CHPP_CNT_WQES) -
                     before.counters[3][CHPP_CNT_WQES], ==, 1);
    g_assert_cmpuint(chpp_counter(fn[0].d, CHPP_CNT_WQES) -
                     before.counters[0][CHPP_CNT_WQES], ==, 1);

    /* They are ordinary VFs: disabling and enabling again works. */
    chpp_pf_vfs_set(p, 1);
    g_assert_cmphex(chpp_rd(p->vf[1], CHPP_REG_MAGIC), ==, CHPP_MAGIC);
    g_assert_cmphex(chpp_pf_cfg_rd(p, 2, CHPP_PCI_CAP_EXP), ==, 0xffffffff);
    chpp_pf_stop(p);
    unlink(sock);
    rmdir(tmpdir);
}

/*
 * With engine-delay-ns the engine only runs when the virtual clock moves,
 * so a PUT VF1 -> VF2 rung just before the migration is still in VF1's
 * doorbell FIFO when the VM stops.  The stop finishes it, across both
 * functions, before RAM is saved: on the destination the completion and
 * the data are there, and nothing had to be sent again.
 */
static void test_migrate_vf_work_in_flight(void)
{
    g_autofree char *tmpdir = g_dir_make_tmp("chpp-mig-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig", tmpdir);
    g_autofree char *sock = g_strdup_printf("%s/mig", tmpdir);
    const char *props = "engine-delay-ns=100000";
    ChppPf *p = chpp_pf_start(props, NULL);
    ChppNode v[3];
    uint64_t buf[3];
    uint32_t key[3];
    struct chpp_cqe cqe;
    ChppDev *dst;
    int i;

    chpp_pf_vfs_set(p, 2);
    for (i = 1; i <= 2; i++) {
        chpp_node_setup(&v[i], p->vf[i], 0, i);
        chpp_node_qp(&v[i], 0, 0x50 + i, 4, 8);
        buf[i] = buf_mr(&v[i], 16384, &key[i]);
    }
    chpp_node_connect(&v[1], &v[2], 14, 3);
    chpp_node_connect(&v[2], &v[1], 14, 3);
    chpp_fill(v[1].d, buf[1], 12000, 21);
    chpp_node_post(&v[1], CHPP_WQE_PUT, 1, buf[1], 12000, key[1], buf[2],
                   key[2], true);
    g_assert_false(chpp_cqe_valid(v[1].d, &v[1].cq[SCQ], &cqe));
    g_assert_cmpuint(chpp_counter(v[1].d, CHPP_CNT_WQES), ==, 0);

    dst = chpp_start_incoming(props, uri);
    migrate(p->d->qs, dst->qs, uri);
    p = chpp_pf_adopt_migrated(dst, p);
    for (i = 1; i <= 2; i++) {
        v[i].d = p->vf[i];
    }
    /* Done during the stop: no clock step needed, no retransmission. */
    g_assert(chpp_cqe_valid(v[1].d, &v[1].cq[SCQ], &cqe));
    chpp_node_expect(&v[1], SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 12000);
    chpp_check(v[2].d, buf[2], 12000, 21);
    chpp_node_expect_none(&v[1], SCQ);
    g_assert_cmpuint(chpp_counter(v[1].d, CHPP_CNT_WQES), ==, 1);
    g_assert_cmpuint(chpp_counter(v[1].d, CHPP_CNT_RETRANSMITS), ==, 0);
    chpp_pf_stop(p);
    unlink(sock);
    rmdir(tmpdir);
}

/* ---- refused streams ---------------------------------------------------- */

/* The device of these tests has the default properties. */
static void load_stream(const char *stream, const char *log, bool good)
{
    chpp_load_stream(NULL, stream, log, good);
}

static void load_corrupted(const uint8_t *data, size_t len, const char *dir,
                           const char *what, size_t at, uint8_t value,
                           const char *trace)
{
    chpp_load_corrupted(NULL, data, len, dir, what, at, value, trace);
}

typedef struct Corruption {
    const char *what;
    /* Offset of the byte to change, in a stream of VF1..NVFS. */
    size_t (*where)(const uint8_t *data, size_t len);
    uint8_t value;
    const char *trace;  /* expected trace line, NULL: refused elsewhere */
} Corruption;

/* VF1's port state: the fields before its scratch register. */
static size_t at_vf1_port_state(const uint8_t *data, size_t len)
{
    uint32_t marker = cpu_to_be32(SCRATCH(1));

    return chpp_stream_find(data, len, &marker, 4) - 2 * CHPP_NUM_PORTS;
}

/*
 * The header of subsection "chpp-hca/vfs" in the stream: QEMU_VM_SUBSECTION,
 * the name's length, the name, then a 32-bit version.  (The name alone
 * appears again in the JSON description at the end of the stream.)
 */
static const char vfs_header[] = "\x05\x0c" "chpp-hca/vfs";

/* The first byte of VF1's state: its VF number. */
static size_t at_vf1_number(const uint8_t *data, size_t len)
{
    return chpp_stream_find(data, len, vfs_header, strlen(vfs_header)) +
           strlen(vfs_header) + 4;
}

/* The number of VFs, the last byte of "chpp-hca/sriov" just before. */
static size_t at_num_vfs(const uint8_t *data, size_t len)
{
    return chpp_stream_find(data, len, vfs_header, strlen(vfs_header)) - 1;
}

/*
 * The low byte of VF1's num_qps quota (be32) in "chpp-hca/sriov": after its
 * header and version, function 0's quotas (7 counts, weight, priority).
 */
static const char sriov_header[] = "\x05\x0e" "chpp-hca/sriov";
static size_t at_vf1_num_qps(const uint8_t *data, size_t len)
{
    return chpp_stream_find(data, len, sriov_header, strlen(sriov_header)) +
           strlen(sriov_header) + 4 + 7 * 4 + 2 + 3;
}

static const Corruption corruptions[] = {
    { "port state", at_vf1_port_state, 0x77,
      "chpp_hca_err_vmstate_refused fn 1: port state" },
    { "VF number", at_vf1_number, 2, NULL },
    { "VF count", at_num_vfs, 0, NULL },
    { "VF count above TotalVFs", at_num_vfs, CHPP_MAX_VFS + 1,
      "chpp_hca_err_vmstate_refused fn 0: VF count disagrees" },
    /* The PF has CHPP_DEFAULT_QPS QPs: a VF cannot have more. */
    { "VF quota above the PF's", at_vf1_num_qps, CHPP_DEFAULT_QPS + 1,
      "chpp_hca_err_vmstate_refused fn 0: VF quotas: fn_res[1].num_qps 5 "
      "(1..4, the PF's own)" },
};

static void test_refuse_bad_vf_state(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *data = NULL;
    ChppPf *p = chpp_pf_start(NULL, NULL);
    size_t len;
    unsigned i;

    chpp_pf_vfs_set(p, NVFS);
    for (i = 0; i <= NVFS; i++) {
        ChppNode n;

        chpp_node_setup(&n, i ? p->vf[i] : p->d, 0, i);
        chpp_node_qp(&n, 0, 0x40 + i, 4, 8);
        chpp_wr(n.d, CHPP_REG_SCRATCH, SCRATCH(i));
    }
    chpp_save_to_file(p->d->qts, good);
    chpp_pf_stop(p);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));

    /* The stream as saved loads. */
    load_stream(good, log, true);
    for (i = 0; i < ARRAY_SIZE(corruptions); i++) {
        const Corruption *c = &corruptions[i];

        load_corrupted(data, len, dir, c->what, c->where(data, len),
                       c->value, c->trace);
    }
    unlink(good);
    unlink(log);
    rmdir(dir);
}

/*
 * Subsection "chpp-hca-function/db-errors" (version 2): header as above,
 * CHPP_DEFERRED_DEPTH entries (value be64, UAR be32, offset be32, subtype,
 * type), then head, count and lost (be32).
 */
static const char deferred_header[] = "\x05\x1b" "chpp-hca-function/db-errors";
#define DEFERRED_ENTRY      18
#define DEFERRED_DEPTH      (CHPP_DB_ERR_QUEUE_DEPTH + CHPP_MAX_VFS)

/* Events queued while stopped (VF_FLR of VF 1, then of VF 2) are checked. */
static void test_refuse_bad_deferred_events(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *data = NULL;
    ChppPf *p = chpp_pf_start(NULL, NULL);
    const char *trace =
        "chpp_hca_err_vmstate_refused fn 0: deferred events";
    size_t len, e0;
    int vf;

    chpp_pf_vfs_set(p, 2);
    qtest_qmp_assert_success(p->d->qts, "{ 'execute': 'stop' }");
    for (vf = 1; vf <= 2; vf++) {
        uint16_t devctl = qpci_config_readw(p->vf[vf]->pdev,
                                            CHPP_PCI_CAP_EXP +
                                            PCI_EXP_DEVCTL);

        qpci_config_writew(p->vf[vf]->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                           devctl | PCI_EXP_DEVCTL_BCR_FLR);
    }
    chpp_save_to_file(p->d->qts, good);
    chpp_pf_stop(p);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    e0 = chpp_stream_find(data, len, deferred_header, strlen(deferred_header)) +
         strlen(deferred_header) + 4;
    g_assert_cmpuint(data[e0 + 17], ==, CHPP_EVENT_VF_FLR);

    load_stream(good, log, true);
    load_corrupted(data, len, dir, "event type", e0 + 17, 0x42, trace);
    load_corrupted(data, len, dir, "VF number", e0 + 7, CHPP_MAX_VFS + 1,
                   trace);
    load_corrupted(data, len, dir, "FLR of a VF twice",
                   e0 + DEFERRED_ENTRY + 7, 1, trace);
    load_corrupted(data, len, dir, "count",
                   e0 + DEFERRED_DEPTH * DEFERRED_ENTRY + 7,
                   DEFERRED_DEPTH + 1, trace);
    unlink(good);
    unlink(log);
    rmdir(dir);
}

/* ---- refused queue and engine state ----------------------------------- */

/*
 * Offsets in the stream of a QP's fields ("chpp-hca-qp" and its engine),
 * from its dest_qpn; 44 bytes of fields come before it.
 */
enum {
    QP_HEAD = 44,
    QP_SQ_PSN = 8,
    QP_SQ_PI = 24, QP_SQ_CI = 28, QP_RQ_PI = 32, QP_RQ_CI = 36,
    QP_SQ_COMP = 40, QP_SQ_LIMIT = 44,
    QP_INFL = 48,                           /* 16 entries of 36 bytes */
    QP_INFL_HEAD = 624, QP_INFL_COUNT = 628, QP_RD_ATOMIC = 632,
    QP_RETRY_LEFT = 636, QP_RECV_WQE_IDX = 649,
    QP_RD = 659,                            /* 16 entries of 24 bytes */
    QP_RD_HEAD = 1043, QP_RD_COUNT = 1047,
    QP_SIZE = QP_HEAD + 1065,
};
/* In an in-flight WQE entry and in a GET response entry. */
enum {
    INFL_WQE_IDX = 8, INFL_LENGTH = 20, INFL_SENT = 24, INFL_DONE = 28,
    INFL_OPCODE = 32,
};
enum { RD_SENT = 20 };
/* A CQ: 30 bytes; EQ fields from its base address. */
enum { CQ_SIZE = 30, CQ_HW = 0, CQ_NENT = 8, CQ_PI = 16, CQ_CI = 20 };
enum { EQ_NENT = 8, EQ_PI = 12, EQ_CI = 16 };
#define SEND_LEN    2048

static uint32_t be32_at(const uint8_t *data, size_t at)
{
    return ldl_be_p(data + at);
}

/* Where QP @qpn's dest_qpn is: its dest_qpn, dest_vf, magics and flags. */
static size_t qp_at(const uint8_t *data, size_t len, uint32_t dest_qpn,
                    uint8_t dest_magic, uint8_t magic)
{
    uint8_t marker[8];

    stl_be_p(marker, dest_qpn);
    marker[4] = 0;
    marker[5] = dest_magic;
    marker[6] = magic;
    marker[7] = 0;
    return chpp_stream_find(data, len, marker, sizeof(marker));
}

typedef struct Patch {
    const char *what;
    size_t at[2];
    uint32_t val[2];
    const char *expect;     /* in the refusal's trace line */
    bool byte;              /* the values are bytes, not be32 */
} Patch;

/* Load @data with the values of @p written in: refused as expected. */
static void load_patched(const uint8_t *data, size_t len, const char *dir,
                         const Patch *p)
{
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree char *expect = g_strdup_printf(
        "chpp_hca_err_vmstate_refused fn 0: %s", p->expect);
    g_autofree uint8_t *copy = g_memdup2(data, len);
    g_autofree char *text = NULL;
    int i;

    for (i = 0; i < 2 && p->at[i]; i++) {
        g_test_message("%s: 0x%x -> 0x%x at %zu", p->what,
                       p->byte ? data[p->at[i]] : be32_at(data, p->at[i]),
                       p->val[i], p->at[i]);
        if (p->byte) {
            copy[p->at[i]] = p->val[i];
        } else {
            stl_be_p(copy + p->at[i], p->val[i]);
        }
    }
    g_assert(memcmp(copy, data, len));
    g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
    unlink(log);
    load_stream(bad, log, false);
    g_assert(g_file_get_contents(log, &text, NULL, NULL));
    if (!strstr(text, expect)) {
        g_error("%s: no \"%s\" in the trace:\n%s", p->what, expect, text);
    }
    unlink(bad);
    unlink(log);
}

/* Where the fields of the queue state stream are, and some values. */
typedef struct QueuePos {
    size_t q0, q1, q2;      /* QP 0, 1 and 2 (from dest_qpn) */
    size_t infl, rd;        /* QP 0's WQE in flight, QP 1's GET response */
    size_t eq0, cq0, fifo;  /* EQ 0 (base), CQ 0, the doorbell FIFO */
    uint32_t eq_pi, cq_pi, db_head;
} QueuePos;

/* Load @data with one field at a time put off its ring or table. */
static void refuse_queue_patches(const uint8_t *data, size_t len,
                                 const char *dir, const QueuePos *at)
{
    g_autofree char *fifo_why = g_strdup_printf("db_fifo[%u]: QP 9 of 4",
                                                at->db_head);
    const size_t db_head = at->fifo + 4 * CHPP_DB_FIFO_DEPTH;
    const Patch patches[] = {
        /* QP ring indices */
        { "rq_pi off 16 bits", { at->q1 + QP_RQ_PI }, { 0x10001 },
          "QP 1: rq_pi 0x10001 beyond 16 bits" },
        { "rq_pi past the RQ", { at->q1 + QP_RQ_PI }, { 17 },
          "QP 1: rq_pi 0x11 is more than the RQ's 16 WQEs past rq_ci 0x0" },
        { "sq_pi off 16 bits", { at->q0 + QP_SQ_PI }, { 0x10000 },
          "QP 0: sq_pi 0x10000 beyond 16 bits" },
        { "sq_pi past the SQ", { at->q0 + QP_SQ_PI }, { 17 },
          "QP 0: sq_pi 0x11 is 17 WQEs past eng.sq_comp 0x0" },
        { "sq_ci past sq_pi", { at->q0 + QP_SQ_CI }, { 2 },
          "QP 0: sq_ci 0x2 not from eng.sq_comp 0x0 to sq_pi 0x1" },
        { "sq_limit off 16 bits", { at->q0 + QP_SQ_LIMIT }, { 0x10005 },
          "QP 0: eng.sq_limit 0x10005 beyond 16 bits" },
        { "sq_limit before sq_ci", { at->q0 + QP_SQ_LIMIT }, { 0 },
          "QP 0: eng.sq_limit 0x0 not from sq_ci 0x1" },
        { "sq_comp past the WQE in flight", { at->q0 + QP_SQ_COMP }, { 1 },
          "QP 0: eng.sq_comp 0x1: sq_ci 0x1, but eng.infl_count 1" },
        { "recv_wqe_idx off 16 bits", { at->q1 + QP_RECV_WQE_IDX },
          { 0x10000 }, "QP 1: eng.recv_wqe_idx 0x10000 beyond 16 bits" },
        { "indices of a QP in RESET", { at->q2 + QP_RQ_PI }, { 3 },
          "QP 2: rq_pi 0x3 in RESET" },
        /* engine counters */
        { "infl_count", { at->q0 + QP_INFL_COUNT }, { 17 },
          "QP 0: eng.infl_head 0 or eng.infl_count 17" },
        { "rd_count", { at->q1 + QP_RD_COUNT }, { 17 },
          "QP 1: eng.rd_head 0 or eng.rd_count 17" },
        { "rd_atomic", { at->q0 + QP_RD_ATOMIC }, { 2 },
          "QP 0: eng.rd_atomic 2 of eng.infl_count 1" },
        { "retry_left", { at->q0 + QP_RETRY_LEFT }, { 9 },
          "QP 0: eng.retry_left 9", true },
        /* the WQE in flight, a GET response */
        { "inflight sent", { at->infl + INFL_SENT }, { 2 },
          "QP 0: eng.inflight[0].sent 2 of 1 packets" },
        { "inflight done", { at->infl + INFL_DONE }, { SEND_LEN + 1 },
          "QP 0: eng.inflight[0].done 2049 of 2048 bytes" },
        { "inflight opcode", { at->infl + INFL_OPCODE }, { 0x77 },
          "QP 0: eng.inflight[0].opcode 119", true },
        { "inflight wqe_idx", { at->infl + INFL_WQE_IDX }, { 5 },
          "QP 0: eng.inflight[0].wqe_idx 0x5, not WQE 0x0" },
        { "GET response sent", { at->q1 + QP_RD_COUNT, at->rd + RD_SENT },
          { 1, 1 }, "QP 1: eng.rd[0].sent 1 of 1 packets" },
        /* event and completion queues, the doorbell FIFO */
        { "EQ pi off 24 bits", { at->eq0 + EQ_PI }, { 0x1000000 },
          "EQ 0: pi 0x1000000" },
        { "EQ ci past pi", { at->eq0 + EQ_CI }, { at->eq_pi + 1 },
          "EQ 0: ci 0x" },
        { "CQ ci past pi", { at->cq0 + CQ_CI }, { at->cq_pi + 1 },
          "CQ 0: ci 0x" },
        { "db_head", { db_head }, { 40 }, "db_head 40" },
        { "db_fifo entry", { db_head + 4, at->fifo + 4 * at->db_head },
          { 1, 9 }, fifo_why },
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(patches); i++) {
        load_patched(data, len, dir, &patches[i]);
    }
}

/*
 * Every loaded ring index and counter is checked against its ring or
 * table: a stream with one off is refused, naming it, and the destination
 * ends instead of hanging (rq_pi 0x10001 used to load, and the next
 * 2ERR_QP flushed receives from rq_ci to rq_pi forever with the BQL held).
 * QP 0 (RC, 16-entry rings) has a SEND waiting out RNR NAKs from QP 1,
 * which has no receive; QP 2 is in RESET.
 */
static void test_refuse_bad_queue_state(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *data = NULL;
    ChppDev *d = chpp_start(NULL, NULL);
    uint8_t eq_marker[12];
    ChppNode a, b;
    QueuePos at;
    uint32_t key;
    uint64_t buf;
    size_t len;
    unsigned i;

    chpp_node_setup(&a, d, 0, 0);
    b = a;
    chpp_node_qp(&a, 0, 0xa7, 4, 8);
    chpp_node_qp(&b, 1, 0xb9, 4, 8);
    chpp_node_connect(&a, &b, 14, 3);
    chpp_node_connect(&b, &a, 14, 3);
    buf = buf_mr(&a, 4096, &key);
    chpp_node_post(&a, CHPP_WQE_SEND, 1, buf, SEND_LEN, key, 0, 0, true);
    for (i = 0; i < 20 && !chpp_counter(d, CHPP_CNT_RNR_NAKS); i++) {
        qtest_clock_step(d->qts, 100000);
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_RNR_NAKS), >=, 1);
    stq_be_p(eq_marker, a.eq);
    stl_be_p(eq_marker + 8, 256);
    chpp_save_to_file(d->qts, good);
    chpp_stop(d);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));

    /* Where the fields are, checked against what they hold. */
    at.q0 = qp_at(data, len, 1, 0xb9, 0xa7);
    at.q1 = qp_at(data, len, 0, 0xa7, 0xb9);
    g_assert_cmpuint(at.q1, ==, at.q0 + QP_SIZE);
    at.q2 = at.q1 + QP_SIZE;
    at.infl = at.q0 + QP_INFL;
    at.rd = at.q1 + QP_RD;
    g_assert_cmphex(be32_at(data, at.q0 + QP_SQ_PSN), ==, 0x501);
    g_assert_cmphex(be32_at(data, at.q0 + QP_SQ_PI), ==, 1);
    g_assert_cmphex(be32_at(data, at.q0 + QP_SQ_CI), ==, 1);
    g_assert_cmphex(be32_at(data, at.q0 + QP_SQ_COMP), ==, 0);
    g_assert_cmphex(be32_at(data, at.q0 + QP_SQ_LIMIT), ==, 1);
    g_assert_cmpuint(be32_at(data, at.q0 + QP_INFL_HEAD), ==, 0);
    g_assert_cmpuint(be32_at(data, at.q0 + QP_INFL_COUNT), ==, 1);
    g_assert_cmpuint(be32_at(data, at.infl + INFL_LENGTH), ==, SEND_LEN);
    g_assert_cmpuint(be32_at(data, at.infl + INFL_SENT), ==, 1);
    g_assert_cmpuint(data[at.infl + INFL_OPCODE], ==, CHPP_WQE_SEND);
    g_assert_cmphex(be32_at(data, at.q1 + QP_RQ_PI), ==, 0);
    g_assert_cmpuint(be32_at(data, at.q1 + QP_RD_HEAD), ==, 0);
    g_assert_cmpuint(be32_at(data, at.q1 + QP_RD_COUNT), ==, 0);
    for (i = 0; i < QP_SIZE; i++) {
        g_assert_cmpuint(data[at.q2 - QP_HEAD + i], ==, 0);
    }
    /* The CQs come just before the QPs, the doorbell FIFO after them. */
    at.cq0 = at.q0 - QP_HEAD - CHPP_DEFAULT_CQS * CQ_SIZE;
    g_assert_cmpuint(data[at.cq0 + CQ_HW], ==, 1);
    g_assert_cmpuint(be32_at(data, at.cq0 + CQ_NENT), ==, 256);
    at.cq_pi = be32_at(data, at.cq0 + CQ_PI);
    at.fifo = at.q0 - QP_HEAD + CHPP_DEFAULT_QPS * QP_SIZE;
    at.db_head = be32_at(data, at.fifo + 4 * CHPP_DB_FIFO_DEPTH);
    g_assert_cmpuint(at.db_head, <, CHPP_DB_FIFO_DEPTH);
    g_assert_cmpuint(be32_at(data, at.fifo + 4 * CHPP_DB_FIFO_DEPTH + 4), ==,
                     0);
    at.eq0 = chpp_stream_find(data, len, eq_marker, sizeof(eq_marker));
    at.eq_pi = be32_at(data, at.eq0 + EQ_PI);

    /* The stream as saved loads. */
    load_stream(good, log, true);
    refuse_queue_patches(data, len, dir, &at);
    unlink(good);
    unlink(log);
    rmdir(dir);
}

/*
 * Subsection "chpp-hca-function/db-lost": header, version (be32), the
 * CHPP_MAX_QPS / 8 bytes of marks, then the named QP (be32).
 */
static const char db_lost_header[] = "\x05\x19" "chpp-hca-function/db-lost";

/* QP 3 (of 4) lost a doorbell, its event unanswered; bad marks refused. */
static void test_refuse_bad_db_lost(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-bad-XXXXXX", NULL);
    g_autofree char *good = g_strdup_printf("%s/good", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *data = NULL;
    ChppDev *d = chpp_start(NULL, NULL);
    const char *trace = "chpp_hca_err_vmstate_refused fn 0: lost doorbells";
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC, .port = 1,
        .log_sq_size = 6, .log_sq_stride = 6,
        .log_rq_size = 2, .log_rq_stride = 6,
        .uar = cpu_to_le16(1), .magic = 0x42,
    };
    size_t len, e0, named;
    uint32_t i;

    chpp_init_hca(d);
    chpp_create_eq(d, 0, 64, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_DOORBELL_ERROR,
                                false), ==, CHPP_STAT_OK);
    chpp_create_cq(d, 0, 64, 0, 1);
    chpp_qp_alloc_rings(d, &c, NULL, NULL);
    g_assert_cmphex(chpp_modify_qp(d, CHPP_CMD_RST2INIT_QP, 3,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
    qtest_qmp_assert_success(d->qts, "{ 'execute': 'stop' }");
    for (i = 1; i <= CHPP_DB_FIFO_DEPTH + 1; i++) {
        chpp_sq_db(d, 1, 3, i);
    }
    chpp_save_to_file(d->qts, good);
    chpp_stop(d);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    e0 = chpp_stream_find(data, len, db_lost_header, strlen(db_lost_header)) +
         strlen(db_lost_header) + 4;
    named = e0 + CHPP_MAX_QPS / 8;
    g_assert_cmphex(data[e0], ==, 1 << 3);
    g_assert_cmphex(data[named + 3], ==, 3);

    load_stream(good, log, true);
    load_corrupted(data, len, dir, "mark beyond num-qps", e0, 1 << 3 | 1 << 4,
                   trace);
    load_corrupted(data, len, dir, "named QP not marked", named + 3, 2, trace);
    load_corrupted(data, len, dir, "named QP beyond num-qps", named, 1,
                   trace);
    unlink(good);
    unlink(log);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    qtest_add_func("/chpp-hca/migrate/vfs", test_migrate_vfs);
    qtest_add_func("/chpp-hca/migrate/vf-work-in-flight",
                   test_migrate_vf_work_in_flight);
    qtest_add_func("/chpp-hca/migrate/refuse-bad-vf-state",
                   test_refuse_bad_vf_state);
    qtest_add_func("/chpp-hca/migrate/refuse-bad-deferred-events",
                   test_refuse_bad_deferred_events);
    qtest_add_func("/chpp-hca/migrate/refuse-bad-queue-state",
                   test_refuse_bad_queue_state);
    qtest_add_func("/chpp-hca/migrate/refuse-bad-db-lost",
                   test_refuse_bad_db_lost);
    return g_test_run();
}
