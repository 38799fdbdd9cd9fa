/*
 * N chpp-hca nodes on one segment, an RC QP mesh and an all-to-all PUT
 * traffic generator (chpp-hca-mesh.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include <math.h>
#include "chpp-hca-mesh.h"

#define MESH_SCQ        0
#define MESH_CQ_NENT    1024
#define MESH_STRIDE     6       /* 64-byte WQEs: ctrl + raddr + 1 SGE */
#define MESH_CQ_TELL    64      /* tell the device the CI every 64 CQEs */
#define MESH_POLL_CQES  16      /* CQEs read by one qtest command */
#define MESH_MR_ALL     (CHPP_MPT_LOCAL_WRITE | CHPP_MPT_REMOTE_READ | \
                         CHPP_MPT_REMOTE_WRITE)
/*
 * Frames the segment lost wait for the RC timer (QP timeout 14: 67 ms),
 * which runs on the virtual clock only this program moves.  After
 * MESH_IDLE_ROUNDS rounds without a CQE it moves every node's clock by the
 * real time passed without progress (at most MESH_STEP_MAX_US at once),
 * as a NIC's timer would run; MESH_STUCK_US of that ends the run.
 */
#define MESH_IDLE_ROUNDS 20
#define MESH_NAP_US     50
#define MESH_STEP_MAX_US 10000
#define MESH_STUCK_US   (20 * G_USEC_PER_SEC)
#define MESH_QP_TIMEOUT 14
/* Device in timing mode (CHPP_QTEST_PROPS): each idle round moves it on. */
#define MESH_TIMED_STEP_US 200
#define MESH_PEERS_WAIT_S 60

static int64_t now_us(void)
{
    return g_get_monotonic_time();
}

static uint8_t mesh_magic(int i, int j)
{
    return 1 + (i * CHPP_MESH_MAX_NODES + j) % 255;
}

/* The pattern node i sends to node j: distinct for every ordered pair. */
static uint8_t mesh_seed(int i, int j)
{
    return i * CHPP_MESH_MAX_NODES + j;
}

/* @fmt with every "%d" replaced by @id (no printf: the text is an option). */
static char *mesh_fmt(const char *fmt, int id)
{
    g_auto(GStrv) part = g_strsplit(fmt, "%d", -1);
    g_autofree char *num = g_strdup_printf("%d", id);

    return g_strjoinv(num, part);
}

static ChppDev *mesh_boot(ChppMesh *m, int i)
{
    const ChppMeshOpts *o = &m->o;
    g_autofree char *props = NULL, *extra = NULL;
    g_autofree char *bin = g_strdup(getenv("QTEST_QEMU_BINARY"));
    ChppDev *d;

    if (o->netdev) {
        g_autofree char *vcs = o->vcs ? g_strdup_printf(",vcs=%d", o->vcs)
                                      : NULL;

        props = g_strdup_printf("id=hca,node-id=%d,num-qps=%d,netdev=fab%s"
                                "%s%s", i + 1, MAX(m->n, 4), vcs ? vcs : "",
                                o->props ? "," : "", o->props ? o->props : "");
        extra = mesh_fmt(o->netdev, i + 1);
    } else {
        g_assert_cmpint(m->n, ==, 2);
        props = g_strdup_printf("id=hca,node-id=%d,num-qps=4,chardev=lnk",
                                i + 1);
        extra = g_strdup_printf("-chardev socket,id=lnk,path=%s/link.sock,%s",
                                o->dir, i ? "reconnect=1"
                                          : "server=on,wait=off");
    }
    if (o->wrap) {
        g_autofree char *pre = mesh_fmt(o->wrap, i + 1);
        g_autofree char *cmd = g_strdup_printf("%s %s", pre, bin);

        g_setenv("QTEST_QEMU_BINARY", cmd, true);
    }
    d = chpp_start(props, extra);
    g_setenv("QTEST_QEMU_BINARY", bin, true);
    return d;
}

static void mesh_node_init(ChppMesh *m, int i)
{
    ChppMeshNode *nd = &m->node[i];
    uint32_t slot = m->o.slot;

    nd->d = mesh_boot(m, i);
    nd->id = i + 1;
    nd->pid = chpp_find_qemu_pid(0);
    chpp_init_hca(nd->d);
    chpp_create_eq(nd->d, 0, 256, 0, false);
    g_assert_cmphex(chpp_map_eq(nd->d, 0, CHPP_EVENT_MAPPABLE_MASK &
                                ~(1ull << CHPP_EVENT_CMD), false), ==,
                    CHPP_STAT_OK);
    nd->scq = (ChppTCq) {
        .cqn = MESH_SCQ, .nent = MESH_CQ_NENT, .uar = CHPP_NODE_UAR,
        .ring = chpp_create_cq(nd->d, MESH_SCQ, MESH_CQ_NENT, 0,
                               CHPP_NODE_UAR),
    };
    g_assert_cmphex(chpp_cmd(nd->d, CHPP_CMD_INIT_PORT, 0, 1, 0), ==,
                    CHPP_STAT_OK);
    nd->src = guest_alloc(&nd->d->qs->alloc, (uint64_t)m->n * slot);
    nd->dst = guest_alloc(&nd->d->qs->alloc, (uint64_t)m->n * slot);
    nd->skey = chpp_create_mr(nd->d, 0, CHPP_NODE_PD, nd->src,
                              (uint64_t)m->n * slot, MESH_MR_ALL);
    nd->dkey = chpp_create_mr(nd->d, 1, CHPP_NODE_PD, nd->dst,
                              (uint64_t)m->n * slot, MESH_MR_ALL);
}

/* The state view's link object of node @i (a reference). */
static QDict *mesh_link_state(ChppMesh *m, int i)
{
    QDict *rsp = qtest_qmp(m->node[i].d->qts,
                           "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/hca', "
                           "'property': 'state'}}");
    QDict *st = qdict_get_qdict(rsp, "return");
    QDict *link = st ? qdict_get_qdict(st, "link") : NULL;

    qobject_ref(link);
    qobject_unref(rsp);
    return link;
}

int64_t chpp_mesh_link_get(ChppMesh *m, int i, const char *list, int64_t at,
                           const char *key)
{
    QDict *link = mesh_link_state(m, i);
    QList *l = link ? qdict_get_qlist(link, list) : NULL;
    const QListEntry *e;
    int64_t sum = 0, k = 0;
    bool found = false;

    if (l) {
        QLIST_FOREACH_ENTRY(l, e) {
            QDict *o = qobject_to(QDict, qlist_entry_obj(e));

            if (o && qdict_haskey(o, key) && (at < 0 || k == at)) {
                sum += qdict_get_int(o, key);
                found = true;
            }
            k++;
        }
    }
    qobject_unref(link);
    return found ? sum : -1;
}

uint64_t chpp_mesh_link_sum(ChppMesh *m, const char *list, const char *key)
{
    uint64_t sum = 0;
    int i;

    for (i = 0; i < m->n; i++) {
        sum += MAX(chpp_mesh_link_get(m, i, list, -1, key), 0);
    }
    return sum;
}

int chpp_mesh_peers(ChppMesh *m, int i)
{
    QDict *link = mesh_link_state(m, i);
    QList *l = link ? qdict_get_qlist(link, "peers") : NULL;
    const QListEntry *e;
    int peers = -1;

    if (l) {
        peers = 0;
        QLIST_FOREACH_ENTRY(l, e) {
            QDict *peer = qobject_to(QDict, qlist_entry_obj(e));

            peers += peer && qdict_get_bool(peer, "up");
        }
    }
    qobject_unref(link);
    return peers;
}

static bool mesh_node_ready(ChppMesh *m, int i)
{
    int peers = m->o.netdev ? chpp_mesh_peers(m, i) : -1;

    if (peers >= 0) {
        return peers == m->n - 1;
    }
    return chpp_rd(m->node[i].d, CHPP_REG_LINK) & CHPP_LINK_UP;
}

static void mesh_wait_peers(ChppMesh *m)
{
    int64_t end = now_us() + MESH_PEERS_WAIT_S * G_USEC_PER_SEC;
    int i = 0;

    while (i < m->n) {
        if (mesh_node_ready(m, i)) {
            i++;
            continue;
        }
        if (now_us() > end) {
            g_error("node %d sees %d peers of %d after %d s", i + 1,
                    chpp_mesh_peers(m, i), m->n - 1, MESH_PEERS_WAIT_S);
        }
        g_usleep(5000);
    }
}

static void mesh_qp_create(ChppMesh *m, int i, int j)
{
    ChppMeshNode *nd = &m->node[i];
    ChppTQp *q = &nd->qp[j];
    struct chpp_qp_context c = {
        .type = CHPP_QPT_RC, .port = 1,
        .pd = cpu_to_le32(CHPP_NODE_PD),
        .send_cqn = cpu_to_le32(MESH_SCQ), .recv_cqn = cpu_to_le32(MESH_SCQ),
        .log_sq_size = m->o.log_sq, .log_sq_stride = MESH_STRIDE,
        .log_rq_size = 2, .log_rq_stride = MESH_STRIDE,
        .uar = cpu_to_le16(CHPP_NODE_UAR),
        .access_flags = cpu_to_le32(CHPP_ACCESS_REMOTE_WRITE),
        .magic = mesh_magic(i, j),
    };

    *q = (ChppTQp) {
        .qpn = j, .type = CHPP_QPT_RC, .log_sq = m->o.log_sq, .log_rq = 2,
        .stride = MESH_STRIDE, .magic = mesh_magic(i, j),
        .uar = CHPP_NODE_UAR,
    };
    chpp_qp_alloc_rings(nd->d, &c, &q->sq, &q->rq);
    g_assert_cmphex(chpp_modify_qp(nd->d, CHPP_CMD_RST2INIT_QP, j,
                                   CHPP_QP_ATTR_PKEY_INDEX |
                                   CHPP_QP_ATTR_PORT |
                                   CHPP_QP_ATTR_ACCESS_FLAGS, &c), ==,
                    CHPP_STAT_OK);
}

static void mesh_qp_connect(ChppMesh *m, int i, int j)
{
    ChppMeshNode *nd = &m->node[i];
    struct chpp_qp_context c = {
        .path_mtu = 5,
        .dest_node = cpu_to_le32(j + 1),
        .dest_qpn = cpu_to_le32(i),
        .dest_magic = mesh_magic(j, i),
        .rq_psn = cpu_to_le32(0x100 + j),
        .sq_psn = cpu_to_le32(0x100 + i),
        .max_dest_rd_atomic = 16, .max_rd_atomic = 16,
        .min_rnr_timer = 1, .timeout = MESH_QP_TIMEOUT, .retry_cnt = 7,
        .rnr_retry = 7,
    };

    chpp_rc_qp_connect(nd->d, j, &c);
}

uint64_t chpp_mesh_rss_kib(ChppMesh *m, int i, bool peak)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status",
                                            m->node[i].pid);
    g_autofree char *txt = NULL;
    const char *key = peak ? "\nVmHWM:" : "\nVmRSS:";
    const char *p = NULL;

    if (g_file_get_contents(path, &txt, NULL, NULL)) {
        p = strstr(txt, key);
    }
    return p ? g_ascii_strtoull(p + strlen(key), NULL, 10) : 0;
}

ChppMesh *chpp_mesh_new(const ChppMeshOpts *o)
{
    ChppMesh *m = g_new0(ChppMesh, 1);
    int64_t t0 = now_us(), t1, t2;
    int i, j;

    g_assert(o->nodes >= 2 && o->nodes <= CHPP_MESH_MAX_NODES);
    g_assert(o->netdev || o->nodes == 2);
    m->o = *o;
    m->n = o->nodes;
    for (i = 0; i < m->n; i++) {
        mesh_node_init(m, i);
    }
    t1 = now_us();
    mesh_wait_peers(m);
    t2 = now_us();
    for (i = 0; i < m->n; i++) {
        for (j = 0; j < m->n; j++) {
            if (j != i) {
                mesh_qp_create(m, i, j);
            }
        }
    }
    for (i = 0; i < m->n; i++) {
        for (j = 0; j < m->n; j++) {
            if (j != i) {
                mesh_qp_connect(m, i, j);
            }
        }
    }
    m->boot_s = (t1 - t0) / 1e6;
    m->peers_s = (t2 - t1) / 1e6;
    m->qps_s = (now_us() - t2) / 1e6;
    for (i = 0; i < m->n; i++) {
        m->rss_kib[i] = chpp_mesh_rss_kib(m, i, false);
    }
    return m;
}

void chpp_mesh_free(ChppMesh *m)
{
    int i;

    for (i = 0; i < m->n; i++) {
        chpp_stop(m->node[i].d);
    }
    g_free(m);
}

/* ---- traffic ------------------------------------------------------------ */

typedef struct MeshRun {
    uint32_t posted;
    uint32_t done;
    uint32_t inflight[CHPP_MESH_MAX_NODES];
    int64_t *t_post;        /* [k]: doorbell time of PUT k */
    int64_t t_last;         /* last CQE */
    bool keep_going;
    uint8_t err_status;     /* an error CQE was seen */
} MeshRun;

static int mesh_dest(ChppMesh *m, int i, uint32_t k)
{
    return (i + 1 + k % (m->n - 1)) % m->n;
}

/* Post node @i's due PUTs, in order, while their QPs have room. */
static bool mesh_post(ChppMesh *m, const ChppMeshLoad *l, int i, MeshRun *r,
                      uint32_t due)
{
    ChppMeshNode *nd = &m->node[i];
    uint32_t depth = 1u << m->o.log_sq;
    ChppWqeBuf *w[CHPP_MESH_MAX_NODES][64];
    uint32_t cnt[CHPP_MESH_MAX_NODES] = {};
    uint32_t k = r->posted;
    int j;

    g_assert(depth <= 64);
    for (; k < due; k++) {
        ChppMeshNode *peer;
        ChppWqeBuf *wqe;

        j = mesh_dest(m, i, k);
        if (r->inflight[j] + cnt[j] >= depth) {
            break;
        }
        peer = &m->node[j];
        wqe = chpp_wqe_new(CHPP_WQE_PUT, CHPP_WQE_SIGNALED, k, 0);
        chpp_wqe_raddr(wqe, peer->dst + (uint64_t)i * m->o.slot, peer->dkey);
        chpp_wqe_sge(wqe, nd->src + (uint64_t)j * m->o.slot, l->size,
                     nd->skey);
        w[j][cnt[j]++] = wqe;
    }
    if (k == r->posted) {
        return false;
    }
    for (j = 0; j < m->n; j++) {
        int64_t t;
        uint32_t x;

        if (!cnt[j]) {
            continue;
        }
        chpp_post_sends(nd->d, &nd->qp[j], w[j], cnt[j], false);
        t = now_us();
        chpp_sq_db(nd->d, CHPP_NODE_UAR, j, nd->qp[j].sq_pi);
        for (x = r->posted; x < k; x++) {
            if (mesh_dest(m, i, x) == j) {
                r->t_post[x] = t;
            }
        }
        r->inflight[j] += cnt[j];
    }
    r->posted = k;
    return true;
}

/* Consume node @i's send CQEs; collects latencies into @lat. */
static bool mesh_poll(ChppMesh *m, int i, MeshRun *r, int64_t *lat,
                      uint32_t *nlat)
{
    ChppMeshNode *nd = &m->node[i];
    ChppTCq *cq = &nd->scq;
    struct chpp_cqe cqe[MESH_POLL_CQES];
    uint32_t slot = cq->ci % cq->nent;
    uint32_t n = MIN(MESH_POLL_CQES, cq->nent - slot), got = 0, x;
    int64_t t;

    qtest_memread(nd->d->qts, cq->ring + (uint64_t)slot * CHPP_CQE_SIZE,
                  cqe, n * sizeof(cqe[0]));
    t = now_us();
    for (x = 0; x < n; x++) {
        bool want = !((cq->ci / cq->nent) & 1);
        uint64_t k;
        uint32_t qpn;

        if (!!(cqe[x].owner & CHPP_CQE_OWNER) != want) {
            break;
        }
        k = le64_to_cpu(cqe[x].wr_id);
        qpn = le32_to_cpu(cqe[x].qpn);
        if (cqe[x].status != CHPP_WC_SUCCESS) {
            if (!r->keep_going) {
                g_error("node %d: PUT %" PRIu64 " to node %u: status %u "
                        "vendor_err %u", i + 1, k, qpn + 1, cqe[x].status,
                        cqe[x].vendor_err);
            }
            r->err_status = cqe[x].status;
            return got;
        }
        g_assert_cmpuint(k, <, r->posted);
        g_assert_cmpuint(qpn, ==, mesh_dest(m, i, k));
        g_assert_cmpuint(r->inflight[qpn], >, 0);
        r->inflight[qpn]--;
        lat[(*nlat)++] = t - r->t_post[k];
        r->done++;
        cq->ci++;
        got++;
    }
    if (got) {
        r->t_last = t;
        if (cq->ci - nd->ci_told >= MESH_CQ_TELL || r->done == r->posted) {
            chpp_cq_db(nd->d, CHPP_NODE_UAR, MESH_SCQ, CHPP_CQ_DB_SET_CI,
                       cq->ci);
            nd->ci_told = cq->ci;
        }
    }
    return got;
}

static void mesh_fill(ChppMesh *m, const ChppMeshLoad *l)
{
    int i, j;

    for (i = 0; i < m->n; i++) {
        ChppMeshNode *nd = &m->node[i];

        qtest_memset(nd->d->qts, nd->dst, 0, (uint64_t)m->n * m->o.slot);
        for (j = 0; j < m->n; j++) {
            if (j != i) {
                chpp_fill(nd->d, nd->src + (uint64_t)j * m->o.slot, l->size,
                          mesh_seed(i, j));
            }
        }
    }
}

static void mesh_check(ChppMesh *m, const ChppMeshLoad *l)
{
    int i, j;

    for (j = 0; j < m->n; j++) {
        for (i = 0; i < m->n; i++) {
            if (i != j) {
                chpp_check(m->node[j].d,
                           m->node[j].dst + (uint64_t)i * m->o.slot, l->size,
                           mesh_seed(i, j));
            }
        }
    }
}

ChppMeshResult chpp_mesh_run(ChppMesh *m, const ChppMeshLoad *l)
{
    ChppMeshResult res = {};
    MeshRun r[CHPP_MESH_MAX_NODES] = {};
    uint64_t total = (uint64_t)m->n * l->msgs, done = 0;
    g_autofree int64_t *lat = g_new(int64_t, total);
    uint32_t nlat = 0, idle = 0, steps = 0;
    int64_t mark, stepped = 0;
    bool timed = chpp_timing_on();
    double sum_lat = 0, p50;
    int64_t t0;
    int i;

    g_assert(l->size && l->size <= m->o.slot && l->msgs);
    if (l->check) {
        mesh_fill(m, l);
    }
    for (i = 0; i < m->n; i++) {
        r[i].t_post = g_new0(int64_t, l->msgs);
        r[i].keep_going = l->keep_going;
    }
    t0 = mark = now_us();
    for (;;) {
        int64_t t = now_us();
        bool progress = false, busy = false;
        bool stop = l->secs > 0 && t - t0 > l->secs * 1e6;

        for (i = 0; i < m->n; i++) {
            uint32_t due = l->msgs;

            if (l->rate > 0) {
                due = MIN(l->msgs, (uint32_t)((t - t0) * l->rate / 1e6) + 1);
            }
            if (!stop && r[i].posted < due) {
                progress |= mesh_post(m, l, i, &r[i], due);
            }
        }
        for (i = 0; i < m->n; i++) {
            uint32_t before = r[i].done;

            if (r[i].done < r[i].posted &&
                mesh_poll(m, i, &r[i], lat, &nlat)) {
                done += r[i].done - before;
                progress = true;
            }
            busy |= r[i].done < (stop ? r[i].posted : l->msgs);
            if (r[i].err_status && !res.err_status) {
                res.err_status = r[i].err_status;
                res.err_node = i + 1;
            }
        }
        if (!busy || res.err_status) {
            break;
        }
        if (progress) {
            idle = 0;
            mark = now_us();
            continue;
        }
        /* Leave the cores to the QEMUs: every poll is work for them too. */
        g_usleep(MESH_NAP_US);
        if (++idle >= (timed ? 1 : MESH_IDLE_ROUNDS)) {
            /* Timing mode: every packet waits for the model's time. */
            int64_t step = timed ? MESH_TIMED_STEP_US :
                           MIN(now_us() - mark, MESH_STEP_MAX_US);

            idle = 0;
            mark = now_us();
            stepped += step;
            steps++;
            if (stepped > MESH_STUCK_US) {
                for (i = 0; i < m->n; i++) {
                    fprintf(stderr, "node %d: %u posted, %u done\n", i + 1,
                            r[i].posted, r[i].done);
                }
                g_error("all-to-all stuck: %" PRIu64 " of %" PRIu64
                        " PUTs done", done, total);
            }
            for (i = 0; i < m->n; i++) {
                qtest_clock_step(m->node[i].d->qts, step * 1000);
            }
        }
    }
    m->clock_steps += steps;
    res.secs = (now_us() - t0) / 1e6;
    res.mbps_min = INFINITY;
    for (i = 0; i < m->n; i++) {
        double mbps = r[i].done ? (double)r[i].done * l->size /
                                  ((r[i].t_last - t0) / 1e6) / 1e6 : 0;

        res.mbps += mbps / m->n;
        res.mbps_min = MIN(res.mbps_min, mbps);
        g_free(r[i].t_post);
    }
    for (uint32_t x = 0; x < nlat; x++) {
        sum_lat += lat[x];
    }
    res.lat_mean_us = res.lat_p99_us = NAN;
    if (nlat) {
        res.lat_mean_us = sum_lat / nlat;
        chpp_med_p99(lat, nlat, &p50, &res.lat_p99_us);
    }
    res.offered_mbps = l->rate * l->size / 1e6;
    res.puts = done;
    if (l->check && !res.err_status) {
        mesh_check(m, l);
    }
    return res;
}
