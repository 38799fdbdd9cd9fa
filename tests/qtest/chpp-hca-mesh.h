/*
 * N chpp-hca nodes for the fabric's scale test and benchmark: one QEMU
 * (qtest accel) per node, all on one Ethernet segment (a QEMU netdev,
 * docs/fabric.md) or two on a chardev link, an RC QP from every node to
 * every other, and an all-to-all PUT traffic generator with offered load
 * control that measures delivered throughput and latency.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef CHPP_HCA_MESH_H
#define CHPP_HCA_MESH_H

#include "chpp-hca-qtest.h"

#define CHPP_MESH_MAX_NODES 16

typedef struct ChppMeshOpts {
    int nodes;              /* 2 .. CHPP_MESH_MAX_NODES */
    int vcs;                /* the device's vcs property; 0: not given */
    /*
     * A "-netdev" option with id=fab (every node the same, or with one %d
     * for the node's id 1..n); NULL: two nodes on a chardev socket in
     * @dir.
     */
    const char *netdev;
    /*
     * A command prefix per node put before QEMU (e.g. "ip netns exec ns3"),
     * with one %d for the node's id; NULL: none.
     */
    const char *wrap;
    const char *props;      /* more device properties ("a=1,b=2"), NULL */
    const char *dir;        /* private temporary directory */
    uint32_t slot;          /* bytes of a node's receive slot per peer */
    uint8_t log_sq;         /* SQ depth per QP (the window), log2 */
} ChppMeshOpts;

typedef struct ChppMeshNode {
    ChppDev *d;
    uint16_t id;            /* node-id: index + 1 */
    int pid;                /* its QEMU */
    ChppTCq scq;
    uint32_t ci_told;
    ChppTQp qp[CHPP_MESH_MAX_NODES];    /* [j]: to node index j (qpn j) */
    uint64_t src;           /* slot bytes, what it sends */
    uint64_t dst;           /* nodes * slot bytes: [j] written by node j */
    uint32_t skey;
    uint32_t dkey;
} ChppMeshNode;

typedef struct ChppMesh {
    ChppMeshOpts o;
    int n;
    ChppMeshNode node[CHPP_MESH_MAX_NODES];
    double boot_s;          /* QEMUs started and devices initialised */
    double peers_s;         /* then until every node sees n - 1 peers */
    double qps_s;           /* then the n * (n - 1) QPs connected */
    uint64_t rss_kib[CHPP_MESH_MAX_NODES];  /* after set-up */
    uint32_t clock_steps;   /* virtual clock steps traffic needed */
} ChppMesh;

/* Boot, wait for the peers, connect the QPs, register the buffers. */
ChppMesh *chpp_mesh_new(const ChppMeshOpts *o);
void chpp_mesh_free(ChppMesh *m);
/* Peers node @i sees now (the device's state view); -1 if not reported. */
int chpp_mesh_peers(ChppMesh *m, int i);
/*
 * A figure of the state view's link object (docs/fabric.md): @key of entry
 * @at (< 0: the sum over all) of its list @list ("peers", "vcs") on node
 * @i, -1 if there is none; and the sum over every entry of every node.
 */
int64_t chpp_mesh_link_get(ChppMesh *m, int i, const char *list, int64_t at,
                           const char *key);
uint64_t chpp_mesh_link_sum(ChppMesh *m, const char *list, const char *key);
/* Resident set of node @i's QEMU, KiB (VmRSS), and its peak (VmHWM). */
uint64_t chpp_mesh_rss_kib(ChppMesh *m, int i, bool peak);

/* One all-to-all PUT run: node i's k-th PUT goes to (i + 1 + k % (n-1)). */
typedef struct ChppMeshLoad {
    uint32_t size;          /* bytes per PUT, <= slot */
    uint32_t msgs;          /* PUTs per node, at most */
    double rate;            /* offered PUTs per node per second; 0: all */
    double secs;            /* stop posting after this long; 0: never */
    bool check;             /* fill sources, check every receive slot */
    bool keep_going;        /* an error CQE ends the run, not the program */
} ChppMeshLoad;

typedef struct ChppMeshResult {
    double secs;
    double offered_mbps;    /* per node: rate * size (0: unlimited) */
    double mbps;            /* delivered per node, mean over the nodes */
    double mbps_min;        /* the slowest node */
    double lat_mean_us;     /* doorbell written -> send CQE seen */
    double lat_p99_us;
    uint64_t puts;          /* completed, all nodes */
    uint8_t err_status;     /* keep_going: the first error CQE's status */
    int err_node;           /* ... on this node (1..n) */
} ChppMeshResult;

ChppMeshResult chpp_mesh_run(ChppMesh *m, const ChppMeshLoad *l);

#endif
