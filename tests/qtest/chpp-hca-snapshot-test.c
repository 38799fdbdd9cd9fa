/*
 * chpp-hca internal snapshots: savevm (QMP snapshot-save), then change
 * everything (traffic, buffers overwritten, a pending receive consumed,
 * counters moved), loadvm (snapshot-load), and the device is exactly as at
 * the snapshot, its VF included: QPs, CQ indexes, counters, registers and
 * buffer contents; traffic then continues from there.  Events queued
 * (VM stopped) when a snapshot is loaded give way to the snapshot's.
 *
 * The qcow2 image that holds the snapshot is made by the QEMU under test
 * itself (blockdev-create), so no qemu-img is needed: the project's QEMU is
 * configured without tools.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
#include "chpp-hca-qtest.h"

#define MR_ALL      (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                     CHPP_MPT_REMOTE_WRITE)
#define SCQ         0
#define RCQ         1
#define NFN         2       /* the PF and VF1 */
#define BUF_LEN     65536

static void qmp_ok(QTestState *qts, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void qmp_ok(QTestState *qts, const char *fmt, ...)
{
    va_list ap;
    QDict *rsp;

    va_start(ap, fmt);
    rsp = qtest_vqmp(qts, fmt, ap);
    va_end(ap);
    if (!qdict_haskey(rsp, "return")) {
        g_error("QMP command failed: %s",
                qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    qobject_unref(rsp);
}

/* Wait for job @id to conclude without an error, and dismiss it. */
static void job_wait(QTestState *qts, const char *id)
{
    int64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-jobs' }");
        QListEntry *e;
        bool done = false;

        QLIST_FOREACH_ENTRY(qdict_get_qlist(rsp, "return"), e) {
            QDict *job = qobject_to(QDict, qlist_entry_obj(e));

            if (strcmp(qdict_get_str(job, "id"), id)) {
                continue;
            }
            if (qdict_haskey(job, "error")) {
                g_error("job %s: %s", id, qdict_get_str(job, "error"));
            }
            done = !strcmp(qdict_get_str(job, "status"), "concluded");
        }
        qobject_unref(rsp);
        if (done) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10000);
    }
    qmp_ok(qts, "{ 'execute': 'job-dismiss', 'arguments': { 'id': %s } }",
           id);
}

/* Node "snap": a fresh qcow2 image at @path, formatted by QEMU. */
static void snapshot_drive(QTestState *qts, const char *path)
{
    g_assert(g_file_set_contents(path, "", 0, NULL));
    qmp_ok(qts, "{ 'execute': 'blockdev-add', 'arguments': {"
           " 'driver': 'file', 'node-name': 'snap-file', 'filename': %s } }",
           path);
    qmp_ok(qts, "{ 'execute': 'blockdev-create', 'arguments': {"
           " 'job-id': 'fmt', 'options': { 'driver': 'qcow2',"
           " 'file': 'snap-file', 'size': %d } } }", 64 << 20);
    job_wait(qts, "fmt");
    qmp_ok(qts, "{ 'execute': 'blockdev-del', 'arguments': {"
           " 'node-name': 'snap-file' } }");
    qmp_ok(qts, "{ 'execute': 'blockdev-add', 'arguments': {"
           " 'driver': 'qcow2', 'node-name': 'snap', 'file': {"
           " 'driver': 'file', 'filename': %s } } }", path);
}

/* snapshot-save or snapshot-load (QMP's savevm/loadvm) of @tag on "snap". */
static void snapshot(QTestState *qts, const char *cmd, const char *tag)
{
    qmp_ok(qts, "{ 'execute': %s, 'arguments': { 'job-id': %s,"
           " 'tag': %s, 'vmstate': 'snap', 'devices': [ 'snap' ] } }",
           cmd, cmd, tag);
    job_wait(qts, cmd);
}

typedef struct Dev {
    ChppNode fn[NFN];
    uint64_t buf[NFN];
    uint32_t key[NFN];
} Dev;

typedef struct Snap {
    ChppNode fn[NFN];       /* the test's view: CQ CIs, SQ/RQ PIs, toggles */
    bool toggle[NFN];
    uint32_t counters[NFN][CHPP_CNT_NUM];
    uint32_t scratch[NFN];
    struct chpp_qp_context qp[NFN];
    struct chpp_cq_context cq[NFN][2];
    uint8_t *data[NFN];
} Snap;

/* Queries first: they are commands and count, and both sides make them. */
static void snap_take(Dev *v, Snap *s)
{
    int i, c;

    for (i = 0; i < NFN; i++) {
        ChppDev *d = v->fn[i].d;

        g_assert_cmphex(chpp_query_qp(d, 0, &s->qp[i]), ==, CHPP_STAT_OK);
        for (c = 0; c < 2; c++) {
            g_assert_cmphex(chpp_query_cq(d, c, &s->cq[i][c]), ==,
                            CHPP_STAT_OK);
        }
        for (c = 0; c < CHPP_CNT_NUM; c++) {
            s->counters[i][c] = chpp_counter(d, c);
        }
        s->scratch[i] = chpp_rd(d, CHPP_REG_SCRATCH);
        s->data[i] = g_malloc(BUF_LEN);
        qtest_memread(d->qts, v->buf[i], s->data[i], BUF_LEN);
        s->fn[i] = v->fn[i];
        s->toggle[i] = d->toggle;
    }
}

static void snap_free(Snap *s)
{
    int i;

    for (i = 0; i < NFN; i++) {
        g_free(s->data[i]);
    }
}

static void test_savevm_loadvm(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-snap-XXXXXX", NULL);
    g_autofree char *img = g_strdup_printf("%s/snap.qcow2", dir);
    ChppPf *p = chpp_pf_start(NULL, NULL);
    QTestState *qts = p->d->qts;
    ChppNode *pf, *vf;
    Snap at, now;
    ChppTSge sge;
    Dev v;
    int i, c;

    snapshot_drive(qts, img);
    /* A snapshot from before the VFs existed, loaded at the end. */
    snapshot(qts, "snapshot-save", "chpp-0");
    chpp_pf_vfs_set(p, 1);
    for (i = 0; i < NFN; i++) {
        chpp_node_setup(&v.fn[i], i ? p->vf[i] : p->d, 0, i);
        chpp_node_qp(&v.fn[i], 0, 0x70 + i, 4, 8);
        v.buf[i] = guest_alloc(&p->d->qs->alloc, BUF_LEN);
        v.key[i] = chpp_create_mr(v.fn[i].d, 0, CHPP_NODE_PD, v.buf[i],
                                  BUF_LEN, MR_ALL);
        chpp_wr(v.fn[i].d, CHPP_REG_SCRATCH, 0x5a000000 + i);
    }
    pf = &v.fn[0];
    vf = &v.fn[1];
    chpp_node_connect(vf, pf, 14, 3);
    chpp_node_connect(pf, vf, 14, 3);

    /* The state to keep: a PUT each way done, a receive posted on VF1. */
    chpp_fill(vf->d, v.buf[1], 8192, 1);
    chpp_node_post(vf, CHPP_WQE_PUT, 1, v.buf[1], 8192, v.key[1], v.buf[0],
                   v.key[0], true);
    chpp_node_expect(vf, SCQ, 1, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_check(pf->d, v.buf[0], 8192, 1);
    chpp_fill(pf->d, v.buf[0] + 16384, 4096, 2);
    chpp_node_post(pf, CHPP_WQE_PUT, 2, v.buf[0] + 16384, 4096, v.key[0],
                   v.buf[1] + 16384, v.key[1], true);
    chpp_node_expect(pf, SCQ, 2, CHPP_CQE_OP_RDMA_WRITE, 4096);
    chpp_check(vf->d, v.buf[1] + 16384, 4096, 2);
    sge = (ChppTSge) { v.buf[1] + 32768, 4096, v.key[1] };
    chpp_post_recvs(vf->d, &vf->qp, 3, &sge, 1, 1);

    snap_take(&v, &at);
    snapshot(qts, "snapshot-save", "chpp-a");

    /*
     * Change it all: buffers overwritten by PUTs both ways, the posted
     * receive consumed by a SEND, registers written, counters moved.
     */
    chpp_fill(vf->d, v.buf[1], 8192, 9);
    chpp_node_post(vf, CHPP_WQE_PUT, 4, v.buf[1], 8192, v.key[1], v.buf[0],
                   v.key[0], true);
    chpp_node_expect(vf, SCQ, 4, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_fill(pf->d, v.buf[0] + 40960, 4096, 10);
    chpp_node_post(pf, CHPP_WQE_SEND, 5, v.buf[0] + 40960, 4096, v.key[0], 0,
                   0, true);
    chpp_node_expect(pf, SCQ, 5, CHPP_CQE_OP_SEND, 4096);
    chpp_node_expect(vf, RCQ, 3, CHPP_CQE_OP_RECV, 4096);
    chpp_check(vf->d, v.buf[1] + 32768, 4096, 10);
    for (i = 0; i < NFN; i++) {
        chpp_wr(v.fn[i].d, CHPP_REG_SCRATCH, 0xdead0000 + i);
    }
    snap_take(&v, &now);
    g_assert(memcmp(now.qp, at.qp, sizeof(at.qp)) != 0);
    g_assert(memcmp(now.data[0], at.data[0], BUF_LEN) != 0);

    snapshot(qts, "snapshot-load", "chpp-a");
    for (i = 0; i < NFN; i++) {
        v.fn[i] = at.fn[i];
        v.fn[i].d->toggle = at.toggle[i];
    }
    snap_free(&now);
    snap_take(&v, &now);
    for (i = 0; i < NFN; i++) {
        /* Only this snap_take's three queries were added. */
        at.counters[i][CHPP_CNT_CMDS] += 3;
        for (c = 0; c < CHPP_CNT_NUM; c++) {
            if (now.counters[i][c] != at.counters[i][c]) {
                g_error("function %d counter %d: %u at the snapshot, %u "
                        "after loadvm", i, c, at.counters[i][c],
                        now.counters[i][c]);
            }
        }
        g_assert_cmphex(now.scratch[i], ==, at.scratch[i]);
        g_assert(memcmp(&now.qp[i], &at.qp[i], sizeof(at.qp[i])) == 0);
        g_assert(memcmp(now.cq[i], at.cq[i], sizeof(at.cq[i])) == 0);
        g_assert(memcmp(now.data[i], at.data[i], BUF_LEN) == 0);
    }
    g_assert_cmpuint(now.qp[1].state, ==, CHPP_QPS_RTS);

    /*
     * Traffic continues from the snapshot: the receive is posted again
     * (its SEND happened after the snapshot), PSNs go on from there.
     */
    chpp_fill(pf->d, v.buf[0] + 49152, 4096, 11);
    chpp_node_post(pf, CHPP_WQE_SEND, 6, v.buf[0] + 49152, 4096, v.key[0], 0,
                   0, true);
    chpp_node_expect(pf, SCQ, 6, CHPP_CQE_OP_SEND, 4096);
    chpp_node_expect(vf, RCQ, 3, CHPP_CQE_OP_RECV, 4096);
    chpp_check(vf->d, v.buf[1] + 32768, 4096, 11);
    chpp_fill(vf->d, v.buf[1] + 49152, 8192, 12);
    chpp_node_post(vf, CHPP_WQE_PUT, 7, v.buf[1] + 49152, 8192, v.key[1],
                   v.buf[0] + 49152, v.key[0], true);
    chpp_node_expect(vf, SCQ, 7, CHPP_CQE_OP_RDMA_WRITE, 8192);
    chpp_check(pf->d, v.buf[0] + 49152, 8192, 12);
    for (i = 0; i < NFN; i++) {
        chpp_node_expect_none(&v.fn[i], SCQ);
        chpp_node_expect_none(&v.fn[i], RCQ);
        g_assert_cmpuint(chpp_counter(v.fn[i].d, CHPP_CNT_PKTS_DROPPED), ==,
                         0);
        g_assert_cmpuint(chpp_counter(v.fn[i].d, CHPP_CNT_RETRANSMITS), ==,
                         0);
    }

    /* Back to before the VFs: they are gone, and can be enabled again. */
    snapshot(qts, "snapshot-load", "chpp-0");
    g_assert_cmpuint(chpp_pf_cfg_rd(p, 0, CHPP_PCI_EXT_CAP_SRIOV +
                                    PCI_SRIOV_CTRL) & PCI_SRIOV_CTRL_VFE,
                     ==, 0);
    g_assert_cmphex(chpp_pf_cfg_rd(p, 1, CHPP_PCI_CAP_EXP), ==, 0xffffffff);
    g_assert_cmphex(chpp_rd(p->d, CHPP_REG_STATUS), ==, 0);
    p->d->toggle = true;
    chpp_pf_vfs_set(p, 1);
    chpp_node_setup(&v.fn[1], p->vf[1], 0, 1);
    g_assert(chpp_rd(p->vf[1], CHPP_REG_STATUS) & CHPP_STATUS_HCA_INIT);
    snap_free(&at);
    snap_free(&now);
    chpp_pf_stop(p);
    unlink(img);
    rmdir(dir);
}

static bool eqe_at(ChppDev *d, uint64_t ring, uint32_t slot,
                   struct chpp_eqe *eqe)
{
    chpp_read_eqe(d, ring, slot, eqe);
    return le32_to_cpu(eqe->owner) == CHPP_EQE_OWNER;
}

static void vf_flr(ChppDev *vf)
{
    uint16_t devctl = qpci_config_readw(vf->pdev,
                                        CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL);

    qpci_config_writew(vf->pdev, CHPP_PCI_CAP_EXP + PCI_EXP_DEVCTL,
                       devctl | PCI_EXP_DEVCTL_BCR_FLR);
}

/* The VF_FLR of VF 1 is (only) in slot 0, within 1000 clock steps. */
static void expect_flr_event(ChppDev *d, uint64_t ring)
{
    struct chpp_eqe eqe;
    int i;

    for (i = 0; i < 1000 && !eqe_at(d, ring, 0, &eqe); i++) {
        qtest_clock_step(d->qts, 1000);
    }
    g_assert(eqe_at(d, ring, 0, &eqe));
    g_assert_cmpuint(eqe.type, ==, CHPP_EVENT_VF_FLR);
    g_assert_cmpuint(le32_to_cpu(eqe.event.vf.vf), ==, 1);
    qtest_clock_step(d->qts, 1000000);
    g_assert_false(eqe_at(d, ring, 1, &eqe));
}

/*
 * A refused doorbell and a VF's FLR while the VM is stopped queue their
 * events; loading a snapshot that had none drops them.  A snapshot taken
 * with an event queued brings it back, and it is posted once.
 */
static void test_loadvm_queued_events(void)
{
    g_autofree char *dir = g_dir_make_tmp("chpp-snap-XXXXXX", NULL);
    g_autofree char *img = g_strdup_printf("%s/snap.qcow2", dir);
    ChppPf *p = chpp_pf_start(NULL, NULL);
    ChppDev *d = p->d;
    QTestState *qts = d->qts;
    struct chpp_eqe eqe;
    uint32_t events;
    uint64_t ring;
    int i;

    chpp_pf_vfs_set(p, 1);
    chpp_init_hca(d);
    ring = chpp_create_eq(d, 0, 64, 0, false);
    g_assert_cmphex(chpp_map_eq(d, 0, 1ull << CHPP_EVENT_DOORBELL_ERROR |
                                1ull << CHPP_EVENT_VF_FLR, false), ==,
                    CHPP_STAT_OK);
    snapshot_drive(qts, img);
    events = chpp_counter(d, CHPP_CNT_EVENTS);
    snapshot(qts, "snapshot-save", "none-queued");

    qmp_ok(qts, "{ 'execute': 'stop' }");
    chpp_eq_db(d, 3, 7, false);         /* EQ 3 does not exist */
    vf_flr(p->vf[1]);
    snapshot(qts, "snapshot-load", "none-queued");
    qmp_ok(qts, "{ 'execute': 'cont' }");
    for (i = 0; i < 100; i++) {
        qtest_clock_step(qts, 10000);
        g_assert_false(eqe_at(d, ring, 0, &eqe));
    }
    g_assert_cmpuint(chpp_counter(d, CHPP_CNT_EVENTS), ==, events);

    qmp_ok(qts, "{ 'execute': 'stop' }");
    vf_flr(p->vf[1]);
    snapshot(qts, "snapshot-save", "flr-queued");
    qmp_ok(qts, "{ 'execute': 'cont' }");
    expect_flr_event(d, ring);
    /* The guest memory is the snapshot's again: the EQE is not written. */
    qmp_ok(qts, "{ 'execute': 'stop' }");
    snapshot(qts, "snapshot-load", "flr-queued");
    g_assert_false(eqe_at(d, ring, 0, &eqe));
    qmp_ok(qts, "{ 'execute': 'cont' }");
    expect_flr_event(d, ring);
    chpp_pf_stop(p);
    unlink(img);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const char *asan = g_getenv("ASAN_OPTIONS");

    g_test_init(&argc, &argv, NULL);
    /*
     * Under ASan (scripts/qtest.sh --asan) QEMU records whole malloc
     * stacks, so that scripts/lib/lsan.supp can name QEMU 7.2's snapshot
     * channel leak exactly: the fast unwinder loses the frames between
     * g_malloc and the snapshot job.
     */
    if (asan) {
        g_autofree char *opts = g_strdup_printf("%s:fast_unwind_on_malloc=0",
                                                asan);

        g_setenv("ASAN_OPTIONS", opts, true);
    }
    if (!qtest_has_machine("q35")) {
        return 1;
    }
    qtest_add_func("/chpp-hca/snapshot/savevm-loadvm", test_savevm_loadvm);
    qtest_add_func("/chpp-hca/snapshot/loadvm-queued-events",
                   test_loadvm_queued_events);
    return g_test_run();
}
