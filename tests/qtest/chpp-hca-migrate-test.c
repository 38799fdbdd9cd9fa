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
#include "qapi/qmp/qdict.h"
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

    set_vf_res(p, 2, 6, 3);
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
    g_assert_cmpuint(le32_to_cpu(res.num_qps), ==, 6);
    g_assert_cmpuint(res.weight, ==, 3);
    g_assert_cmphex(chpp_cmd(fn[2].d, CHPP_CMD_QUERY_DEV_CAP, 0, 0,
                             fn[2].d->mbox_out), ==, CHPP_STAT_OK);
    qtest_memread(p->d->qts, fn[2].d->mbox_out, &cap, sizeof(cap));
    g_assert_cmpuint(le32_to_cpu(cap.max_qps), ==, 6);

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

static void qmp_ok(QTestState *qts, const char *cmd, const char *arg)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': %s, 'arguments': "
                           "{ 'uri': %s } }", cmd, arg);

    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* Save the running VM's state into @path (the VM ends up stopped). */
static void save_to_file(QTestState *qts, const char *path)
{
    g_autofree char *uri = g_strdup_printf("exec:cat > %s", path);

    qmp_ok(qts, "migrate", uri);
    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        const char *st = qdict_get_str(qdict_get_qdict(rsp, "return"),
                                       "status");

        if (!strcmp(st, "completed")) {
            qobject_unref(rsp);
            return;
        }
        g_assert(strcmp(st, "failed") && strcmp(st, "cancelled"));
        qobject_unref(rsp);
        g_usleep(5000);
    }
}

static size_t find(const uint8_t *data, size_t len, const void *what,
                   size_t wlen)
{
    const uint8_t *hit = memmem(data, len, what, wlen);

    g_assert(hit);
    /* Exactly one place. */
    g_assert(!memmem(hit + 1, data + len - hit - 1, what, wlen));
    return hit - data;
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

    return find(data, len, &marker, 4) - 2 * CHPP_NUM_PORTS;
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
    return find(data, len, vfs_header, strlen(vfs_header)) +
           strlen(vfs_header) + 4;
}

/* The number of VFs, the last byte of "chpp-hca/sriov" just before. */
static size_t at_num_vfs(const uint8_t *data, size_t len)
{
    return find(data, len, vfs_header, strlen(vfs_header)) - 1;
}

static const Corruption corruptions[] = {
    { "port state", at_vf1_port_state, 0x77,
      "chpp_hca_vmstate_refused function 1: port state" },
    { "VF number", at_vf1_number, 2, NULL },
    { "VF count", at_num_vfs, 0, NULL },
    { "VF count above TotalVFs", at_num_vfs, CHPP_MAX_VFS + 1,
      "chpp_hca_vmstate_refused function 0: VF count disagrees" },
};

/*
 * Start a destination that loads @stream.  A stream that loads leaves it
 * running (paused if the source was stopped); a refused one makes it exit
 * with status 1, not by a signal
 * (QEMU 7.2 exits when an incoming migration fails).  Only QMP is used
 * while it cannot exit, so the test never races with its exit.
 */
static void load_stream(const char *stream, const char *log, bool good)
{
    g_autofree char *extra = g_strdup_printf(
        "-trace 'chpp_hca_vmstate_*' -D %s", log);
    g_autofree char *uri = g_strdup_printf("exec:cat %s", stream);
    ChppDev *d = chpp_start_incoming_extra(NULL, extra, "defer");
    int64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    qmp_ok(d->qts, "migrate-incoming", uri);
    if (!good) {
        while (qtest_probe_child(d->qts)) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(10000);
        }
        qtest_set_expected_status(d->qts, 1);
        chpp_stop(d);
        return;
    }
    for (;;) {
        QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-status' }");
        g_autofree char *st = g_strdup(qdict_get_str(
                                  qdict_get_qdict(rsp, "return"), "status"));

        qobject_unref(rsp);
        if (strcmp(st, "inmigrate")) {
            if (strcmp(st, "running")) {
                g_assert_cmpstr(st, ==, "paused");
            }
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    chpp_stop(d);
}

/* Corrupt data[@at] (!= @value now), load it: refused with @trace. */
static void load_corrupted(const uint8_t *data, size_t len, const char *dir,
                           const char *what, size_t at, uint8_t value,
                           const char *trace)
{
    g_autofree char *bad = g_strdup_printf("%s/bad", dir);
    g_autofree char *log = g_strdup_printf("%s/log", dir);
    g_autofree uint8_t *copy = g_memdup2(data, len);
    g_autofree char *text = NULL;

    g_test_message("corrupt %s at %zu: 0x%02x -> 0x%02x", what, at,
                   data[at], value);
    g_assert_cmphex(data[at], !=, value);
    copy[at] = value;
    g_assert(g_file_set_contents(bad, (char *)copy, len, NULL));
    unlink(log);
    load_stream(bad, log, false);
    if (trace) {
        g_assert(g_file_get_contents(log, &text, NULL, NULL));
        if (!strstr(text, trace)) {
            g_error("%s: no \"%s\" in the trace:\n%s", what, trace, text);
        }
    }
    unlink(bad);
    unlink(log);
}

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
    save_to_file(p->d->qts, good);
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
        "chpp_hca_vmstate_refused function 0: deferred events";
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
    save_to_file(p->d->qts, good);
    chpp_pf_stop(p);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    e0 = find(data, len, deferred_header, strlen(deferred_header)) +
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
    const char *trace = "chpp_hca_vmstate_refused function 0: lost doorbells";
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
    save_to_file(d->qts, good);
    chpp_stop(d);
    g_assert(g_file_get_contents(good, (char **)&data, &len, NULL));
    e0 = find(data, len, db_lost_header, strlen(db_lost_header)) +
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
    qtest_add_func("/chpp-hca/migrate/refuse-bad-db-lost",
                   test_refuse_bad_db_lost);
    return g_test_run();
}
