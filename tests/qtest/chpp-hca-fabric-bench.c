/*
 * chpp-hca fabric benchmark: a qtest-style program (not a test).  For each
 * configuration (4, 8, 16 nodes; 2 and 4 VCs) it starts one QEMU per node
 * on one Ethernet segment (docs/fabric.md), connects an RC QP from every
 * node to every other and drives all-to-all PUTs at rising offered load,
 * printing per load the delivered throughput per node and the mean and
 * p99 latency (doorbell written -> send CQE seen), as seed 004's figure 18
 * plots latency against throughput for 4 to 16 ports and 2 or 4 VCs.
 *
 * The baseline, measured first in the same run: the same traffic between
 * two nodes on the chardev link (docs/link.md) and between two nodes on
 * the Ethernet segment; its saturated throughput per node is the "max"
 * throughputs are fractions of (the paper divides by the theoretical
 * peak).  Offered loads are fractions of each configuration's own
 * saturated throughput, so that every curve has points on both sides of
 * its knee.
 *
 *   QTEST_QEMU_BINARY=build/qemu/qemu-system-x86_64 \
 *       build/qemu/tests/qtest/chpp-hca-fabric-bench [--quick]
 *       [--nodes 4,8,16] [--vcs 2,4] [--size BYTES] [--loads 10,25,...]
 *       [--netdev FMT --wrap FMT --label TEXT] [--no-baseline]
 *       [--chardev-only]
 *
 * --netdev replaces the segment (default: dgram multicast on 127.0.0.1)
 * by a "-netdev" option with id=fab and one %d for the node id; --wrap
 * puts a command before each QEMU ("ip netns exec ns%d").  scripts/bench.sh
 * --fabric builds and runs it; --fabric-netns runs it with every node in
 * its own network namespace.  It exits non-zero only if the devices
 * misbehave.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include <math.h>
#include "chpp-hca-mesh.h"

#define MAX_LOADS   16
#define MAX_CFGS    16
#define RATE_SECS   1.5         /* posting time of a run */
#define RUN_MSGS    100000      /* PUTs per node per run, at most */

/* Seed 004 figure 18, section 5.4: saturation throughput (MB/s) of 4 ports. */
static const struct {
    int ports;
    int vcs;
    double mbps;
    double frac;            /* of the theoretical peak */
} fig18[] = {
    { 4, 2, 2600, 0.65 },
    { 4, 4, 2800, 0.70 },
};

typedef struct Cfg {
    const char *name;
    int nodes;
    int vcs;
    bool chardev;
    ChppMeshResult r[MAX_LOADS + 1];    /* [0]: unlimited */
    double boot_s, peers_s, qps_s;
    double rss_mib;
    uint32_t steps;         /* virtual clock steps (RC retries) */
    uint64_t lost;          /* frames the segment lost, all peers' view */
    uint64_t probes;        /* credit probes of blocked senders */
    uint64_t hol;           /* HOL stalls, all VCs of all nodes */
    uint64_t stalls;        /* credit stalls, all VCs of all nodes */
    /* The run that ended in an error CQE: 0 the warm-up, k load k; -1 */
    int failed;
    ChppMeshResult fail;
} Cfg;

static int parse_list(const char *s, int *v, int max)
{
    g_auto(GStrv) f = g_strsplit(s, ",", -1);
    int n = 0;

    for (int i = 0; f[i] && n < max; i++) {
        g_assert(qemu_strtoi(f[i], NULL, 10, &v[n]) == 0);
        n++;
    }
    return n;
}

static void run_cfg(Cfg *c, const ChppMeshOpts *base, uint32_t size,
                    const int *loads, int nloads, double *ref, bool quick)
{
    ChppMeshOpts o = *base;
    ChppMesh *m;
    ChppMeshLoad l = { .size = size };
    uint64_t rss = 0;
    int k;

    o.nodes = c->nodes;
    o.vcs = c->chardev ? 0 : c->vcs;
    if (c->chardev) {
        o.netdev = NULL;
        o.wrap = NULL;
        o.props = NULL;
    }
    fprintf(stderr, "# %s: %d nodes, setting up\n", c->name, c->nodes);
    m = chpp_mesh_new(&o);
    c->boot_s = m->boot_s;
    c->peers_s = m->peers_s;
    c->qps_s = m->qps_s;
    for (int i = 0; i < m->n; i++) {
        rss += m->rss_kib[i];
    }
    c->rss_mib = rss / 1024.0 / m->n;
    /* A first checked run warms up every QP; then unlimited load. */
    c->failed = -1;
    l.msgs = 2 * (c->nodes - 1);
    l.check = true;
    l.keep_going = true;
    c->fail = chpp_mesh_run(m, &l);
    if (c->fail.err_status) {
        c->failed = 0;
        goto out;
    }
    l.check = false;
    l.secs = quick ? RATE_SECS / 3 : RATE_SECS;
    l.rate = 0;
    l.msgs = RUN_MSGS;
    c->r[0] = chpp_mesh_run(m, &l);
    if (!*ref) {
        /* The first configuration's saturation is the max. */
        *ref = c->r[0].mbps;
    }
    for (k = 0; k <= nloads; k++) {
        if (k) {
            /* Around this configuration's own saturation: its knee. */
            l.rate = c->r[0].mbps * loads[k - 1] / 100.0 * 1e6 / size;
            c->r[k] = chpp_mesh_run(m, &l);
            fprintf(stderr, "# %s: load %d%%: %.1f MB/s per node\n",
                    c->name, loads[k - 1], c->r[k].mbps);
        }
        if (c->r[k].err_status) {
            /* Its QPs are in the error state: no further runs. */
            c->failed = k;
            c->fail = c->r[k];
            c->r[k].puts = 0;
            break;
        }
    }
out:
    c->hol = chpp_mesh_link_sum(m, "vcs", "hol-stalls");
    c->stalls = chpp_mesh_link_sum(m, "vcs", "credit-stalls");
    c->steps = m->clock_steps;
    c->lost = c->chardev ? 0 : chpp_mesh_link_sum(m, "peers", "lost");
    c->probes = c->chardev ? 0 : chpp_mesh_link_sum(m, "peers", "probes");
    chpp_mesh_free(m);
}

static double fig18_mbps(int nodes, int vcs, double *frac)
{
    for (size_t i = 0; i < ARRAY_SIZE(fig18); i++) {
        if (fig18[i].ports == nodes && fig18[i].vcs == vcs) {
            *frac = fig18[i].frac;
            return fig18[i].mbps;
        }
    }
    *frac = NAN;
    return NAN;
}

static void print_cfg(const Cfg *c, const int *loads, int nloads,
                      double ref)
{
    double ffrac, fmbps = fig18_mbps(c->nodes, c->vcs, &ffrac);

    printf("\n[%s]  set-up: boot %.2f s, peers %.2f s, %d QPs %.2f s; "
           "RSS %.1f MiB per QEMU; frames lost %" PRIu64 ", credit "
           "probes %" PRIu64 ", clock steps %u\n", c->name, c->boot_s,
           c->peers_s, c->nodes * (c->nodes - 1), c->qps_s, c->rss_mib,
           c->lost, c->probes, c->steps);
    printf("  VC credit stalls %" PRIu64 ", of which head-of-line %" PRIu64
           "\n", c->stalls, c->hol);
    if (c->failed >= 0) {
        char when[32] = "checked warm-up";

        if (c->failed) {
            snprintf(when, sizeof(when), "%d%% load", loads[c->failed - 1]);
        }
        printf("  an RC QP of node %d failed (CQE status %u%s) in the %s "
               "run; later runs skipped\n", c->fail.err_node,
               c->fail.err_status,
               c->fail.err_status == CHPP_WC_RETRY_EXC_ERR ?
               ", RETRY_EXC_ERR: its retries were lost too" : "", when);
    }
    printf("  %-9s %10s %10s %10s %8s %10s %10s\n", "offered", "MB/s/node",
           "delivered", "min node", "/max", "lat mean", "lat p99");
    for (int k = 0; k <= nloads; k++) {
        const ChppMeshResult *r = &c->r[k];

        if (!r->puts) {
            continue;
        }
        if (k) {
            printf("  %8d%% %10.1f", loads[k - 1], r->offered_mbps);
        } else {
            printf("  %-9s %10s", "unlimited", "-");
        }
        printf(" %10.1f %10.1f %8.3f %8.0fus %8.0fus\n", r->mbps,
               r->mbps_min, r->mbps / ref, r->lat_mean_us, r->lat_p99_us);
    }
    if (!isnan(fmbps)) {
        printf("  figure 18 (%d ports, %d VCs): saturates near %.0f%% of "
               "the peak, %.0f MB/s; here %.1f%% of max\n", c->nodes,
               c->vcs, ffrac * 100, fmbps, c->r[0].mbps / ref * 100);
    }
}

/* The 1-minute load average: other work on the machine skews figures. */
static const char *load_avg(void)
{
    static char buf[4][16];
    static int k;
    g_autofree char *txt = NULL;
    char *p = buf[k++ % 4];

    snprintf(p, 16, "?");
    if (g_file_get_contents("/proc/loadavg", &txt, NULL, NULL)) {
        snprintf(p, 16, "%.*s", (int)strcspn(txt, " "), txt);
    }
    return p;
}

/* Does this build's chpp-hca have the vcs property (docs/fabric.md)? */
static bool device_has_vcs(void)
{
    g_autofree char *cmd = g_strdup_printf("%s -device chpp-hca,help",
                                           getenv("QTEST_QEMU_BINARY"));
    g_autofree char *out = NULL;

    return g_spawn_command_line_sync(cmd, &out, NULL, NULL, NULL) && out &&
           strstr(out, " vcs=");
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--quick] [--nodes N,N..] [--vcs V,V..] "
            "[--size BYTES] [--loads P,P..] [--props P] [--netdev FMT] "
            "[--wrap FMT] "
            "[--label TEXT] [--no-baseline] [--chardev-only]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    int nodes[4] = { 4, 8, 16 }, nn = 3;
    int vcs[4] = { 2, 4 }, nv = 2;
    int loads[MAX_LOADS] = { 10, 25, 40, 55, 70, 85, 100, 130 }, nl = 8;
    uint32_t size = 4096;
    bool quick = false, baseline = true, chardev_only = false;
    const char *netdev_fmt = NULL, *wrap = NULL, *label = NULL, *load0;
    g_autofree char *netdev = NULL;
    g_autofree char *dir = NULL;
    g_autoptr(GDateTime) date = g_date_time_new_now_local();
    g_autofree char *datestr = g_date_time_format(date, "%F %T %z");
    Cfg cfg[MAX_CFGS] = {};
    int ncfg = 0, i, j;
    double ref = 0;
    unsigned pid = getpid();
    ChppMeshOpts base = { .log_sq = 4 };

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--no-baseline")) {
            baseline = false;
        } else if (!strcmp(argv[i], "--chardev-only")) {
            chardev_only = true;
        } else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            nn = parse_list(argv[++i], nodes, ARRAY_SIZE(nodes));
        } else if (!strcmp(argv[i], "--vcs") && i + 1 < argc) {
            nv = parse_list(argv[++i], vcs, ARRAY_SIZE(vcs));
        } else if (!strcmp(argv[i], "--loads") && i + 1 < argc) {
            nl = parse_list(argv[++i], loads, MAX_LOADS);
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            g_assert(qemu_strtoui(argv[++i], NULL, 0, &size) == 0);
        } else if (!strcmp(argv[i], "--netdev") && i + 1 < argc) {
            netdev_fmt = argv[++i];
        } else if (!strcmp(argv[i], "--props") && i + 1 < argc) {
            base.props = argv[++i];
        } else if (!strcmp(argv[i], "--wrap") && i + 1 < argc) {
            wrap = argv[++i];
        } else if (!strcmp(argv[i], "--label") && i + 1 < argc) {
            label = argv[++i];
        } else {
            usage(argv[0]);
        }
    }
    if (!getenv("QTEST_QEMU_BINARY")) {
        fprintf(stderr, "QTEST_QEMU_BINARY is not set (use scripts/bench.sh "
                "--fabric)\n");
        return 2;
    }
    if (quick) {
        nl = MIN(nl, 4);
        loads[0] = 25;
        loads[1] = 55;
        loads[2] = 85;
        loads[3] = 130;
    }
    if (!device_has_vcs()) {
        fprintf(stderr, "# this chpp-hca has no vcs property: one "
                "configuration per node count, with its default VCs\n");
        nv = 1;
        vcs[0] = 0;
    }
    load0 = load_avg();
    dir = g_dir_make_tmp("chpp-fabric-bench-XXXXXX", NULL);
    g_assert(dir);
    netdev = netdev_fmt ? g_strdup(netdev_fmt) :
        g_strdup_printf("-netdev dgram,id=fab,remote.type=inet,"
                        "remote.host=239.255.%u.%u,remote.port=%u,"
                        "local.type=inet,local.host=127.0.0.1,local.port=0",
                        (pid >> 8) & 0xff, pid & 0xff, 20000 + pid % 40000);
    base.netdev = netdev;
    base.wrap = wrap;
    base.dir = dir;
    base.slot = size;

    if (baseline || chardev_only) {
        cfg[ncfg++] = (Cfg) { "chardev link, 2 nodes", 2, 0, true };
    }
    if (baseline && !chardev_only) {
        cfg[ncfg] = (Cfg) { NULL, 2, vcs[0] ? 2 : 0, false };
        cfg[ncfg].name = vcs[0] ? "Ethernet, 2 nodes, 2 VCs"
                                : "Ethernet, 2 nodes";
        ncfg++;
    }
    for (i = 0; i < nn && !chardev_only; i++) {
        for (j = 0; j < nv && ncfg < MAX_CFGS; j++) {
            cfg[ncfg] = (Cfg) { NULL, nodes[i], vcs[j], false };
            cfg[ncfg].name = vcs[j] ?
                g_strdup_printf("Ethernet, %d nodes, %d VCs", nodes[i],
                                vcs[j]) :
                g_strdup_printf("Ethernet, %d nodes", nodes[i]);
            ncfg++;
        }
    }
    for (i = 0; i < ncfg; i++) {
        run_cfg(&cfg[i], &base, size, loads, nl, &ref, quick);
    }

    printf("chpp-hca fabric benchmark  %s  %ld CPUs%s; load average "
           "%s at the start, %s at the end\n", datestr,
           sysconf(_SC_NPROCESSORS_ONLN), quick ? "  (--quick)" : "",
           load0, load_avg());
    printf("All-to-all RC PUTs of %s, every PUT signaled, at most %u in "
           "flight per QP; one QEMU (qtest accel) per node, driven by this "
           "one process\n", chpp_size_str(size), 1u << base.log_sq);
    printf("Segment: %s%s%s\n", netdev, wrap ? "; each QEMU under " : "",
           wrap ? wrap : "");
    if (label) {
        printf("%s\n", label);
    }
    printf("Offered loads are fractions of each configuration's own "
           "saturated throughput (its unlimited row); /max divides by max = "
           "%.1f MB/s per node, that of %s (as figure 18 divides by the "
           "peak); MB = 10^6 bytes; latency from the doorbell write to the "
           "send CQE (RC: acknowledged)\n", ref, cfg[0].name);
    for (i = 0; i < ncfg; i++) {
        print_cfg(&cfg[i], loads, nl, ref);
    }
    if (baseline && !chardev_only && ncfg >= 2) {
        printf("\nOverhead of the Ethernet segment against the chardev link "
               "(2 nodes, same run; Ethernet / chardev, delivered and mean "
               "latency, saturated and at the same fraction of each one's "
               "saturation):\n");
        for (int k = 0; k <= nl; k++) {
            const ChppMeshResult *a = &cfg[0].r[k], *b = &cfg[1].r[k];
            char what[16] = "unlimited";

            if (!a->puts || !b->puts) {
                continue;
            }
            if (k) {
                snprintf(what, sizeof(what), "%d%%", loads[k - 1]);
            }
            printf("  %-9s delivered %.3f  latency %.3f\n", what,
                   b->mbps / a->mbps, b->lat_mean_us / a->lat_mean_us);
        }
    }
    printf("\nShape against figure 18 (saturated MB/s per node; paper: "
           "rises with VCs, falls with ports):\n");
    for (i = 0; i < ncfg; i++) {
        if (!cfg[i].chardev) {
            printf("  %-28s %8.1f (%.1f%% of max)\n", cfg[i].name,
                   cfg[i].r[0].mbps, cfg[i].r[0].mbps / ref * 100);
        }
    }
    printf("\n");
    for (i = 0; i < ncfg; i++) {
        for (int k = 0; k <= nl; k++) {
            const ChppMeshResult *r = &cfg[i].r[k];

            if (!r->puts) {
                continue;
            }
            printf("BENCH kind=fabric link=%s nodes=%d vcs=%d size=%u "
                   "load_pct=%d offered_mbps=%.2f mbps=%.2f mbps_min=%.2f "
                   "ratio_max=%.4f lat_mean_us=%.1f lat_p99_us=%.1f "
                   "boot_s=%.2f peers_s=%.2f qps_s=%.2f rss_mib=%.1f\n",
                   cfg[i].chardev ? "chardev" : "ethernet", cfg[i].nodes,
                   cfg[i].vcs, size, k ? loads[k - 1] : 0, r->offered_mbps,
                   r->mbps, r->mbps_min, r->mbps / ref, r->lat_mean_us,
                   r->lat_p99_us, cfg[i].boot_s, cfg[i].peers_s,
                   cfg[i].qps_s, cfg[i].rss_mib);
        }
    }
    fflush(stdout);
    {
        g_autofree char *p = g_strdup_printf("%s/link.sock", dir);

        unlink(p);
        rmdir(dir);
    }
    return 0;
}
