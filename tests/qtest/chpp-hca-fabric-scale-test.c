/*
 * chpp-hca fabric at scale (docs/fabric.md, "Scale and benchmark"): 16
 * QEMUs (qtest accel), each a node with a chpp-hca on one Ethernet segment
 * (QEMU's dgram netdev, multicast on the loopback interface: no process
 * besides the QEMUs), every node discovers the 15 others, an RC QP from
 * every node to every other (240 QPs) carries an all-to-all of PUTs whose
 * bytes are checked at every receiver.  Set-up time and each QEMU's
 * memory are reported (informative; no timed assertion).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "chpp-hca-mesh.h"

#define SCALE_NODES 16

/* A multicast group and port of this process: parallel runs stay apart. */
static char *scale_netdev(void)
{
    unsigned pid = getpid();

    return g_strdup_printf("-netdev dgram,id=fab,remote.type=inet,"
                           "remote.host=239.255.%u.%u,remote.port=%u,"
                           "local.type=inet,local.host=127.0.0.1,"
                           "local.port=0", (pid >> 8) & 0xff, pid & 0xff,
                           20000 + pid % 40000);
}

static void report(ChppMesh *m)
{
    uint64_t sum = 0, max = 0;
    GString *s = g_string_new(NULL);
    int i;

    for (i = 0; i < m->n; i++) {
        sum += m->rss_kib[i];
        max = MAX(max, m->rss_kib[i]);
        g_string_append_printf(s, " %" PRIu64, m->rss_kib[i] / 1024);
    }
    g_test_message("%d nodes: boot %.2f s, peers found %.2f s later, "
                   "%d QPs connected in %.2f s", m->n, m->boot_s,
                   m->peers_s, m->n * (m->n - 1), m->qps_s);
    g_test_message("RSS per QEMU (MiB):%s; mean %.1f MiB, max %.1f MiB",
                   s->str, sum / 1024.0 / m->n, max / 1024.0);
    g_string_free(s, true);
}

static void test_all_to_all(const void *opaque)
{
    int vcs = GPOINTER_TO_INT(opaque);
    g_autofree char *netdev = scale_netdev();
    ChppMeshOpts o = {
        .nodes = SCALE_NODES, .vcs = vcs, .netdev = netdev,
        .slot = 3 * 4096, .log_sq = 4,
    };
    /*
     * Two MTU packets and a short one; two PUTs to every peer, paced (300
     * per node per second): all at once would overflow the receivers'
     * socket buffers, every frame reaching every node (RC recovers that,
     * but in virtual time this program has to step).
     */
    ChppMeshLoad l = {
        .size = 3 * 4096 - 100, .msgs = 2 * (SCALE_NODES - 1), .check = true,
        .rate = 300,
    };
    ChppMesh *m = chpp_mesh_new(&o);
    ChppMeshResult r;
    int i;

    for (i = 0; i < m->n; i++) {
        g_assert_cmpint(chpp_mesh_peers(m, i), ==, SCALE_NODES - 1);
        g_assert_cmpint(chpp_mesh_link_get(m, i, "peers", -1, "lost"), >=,
                        0);
    }
    report(m);
    r = chpp_mesh_run(m, &l);
    g_assert_cmpuint(r.puts, ==, (uint64_t)SCALE_NODES * l.msgs);
    g_test_message("all-to-all: %" PRIu64 " PUTs of %u B checked in %.2f s "
                   "(%.1f MB/s per node, mean latency %.0f us); peak RSS "
                   "of node 1 %" PRIu64 " MiB", r.puts, l.size, r.secs,
                   r.mbps, r.lat_mean_us,
                   chpp_mesh_rss_kib(m, 0, true) / 1024);
    g_test_message("frames the segment lost (all peers' view): %" PRIu64
                   "; virtual clock steps for RC retries: %u",
                   chpp_mesh_link_sum(m, "peers", "lost"), m->clock_steps);
    /* Dest-Mod: every node sent on each data VC (15 destinations). */
    for (i = 0; i < m->n; i++) {
        for (int vc = 0; vc < vcs; vc++) {
            g_assert_cmpint(chpp_mesh_link_get(m, i, "vcs", vc, "tx-frames"),
                            >, 0);
        }
        g_assert_cmpint(chpp_mesh_link_get(m, i, "vcs", vcs, "tx-frames"),
                        ==, 0);
    }
    chpp_mesh_free(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_data_func("/chpp-hca/fabric-scale/16-nodes-4vcs",
                        GINT_TO_POINTER(4), test_all_to_all);
    return g_test_run();
}
