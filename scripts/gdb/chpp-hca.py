# gdb helper for the chpp-hca device model: print its tables from a
# stopped QEMU.  Load with:  gdb -x scripts/gdb/chpp-hca.py ...
# then:  (gdb) chpp-state          every device
#        (gdb) chpp-state 1        device with node id 1
# It reads chpp_hca_devices[], the list of live devices the model keeps
# for debuggers, so QEMU must have been built with -g (the default here).
# Names (of counters too) and the FIFO depth come from the ABI header
# (chpp_abi.py parses it), found relative to this file.
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chpp_abi  # noqa: E402

ABI = chpp_abi.Abi()
QP_STATES = ABI.names("QPS")
QP_TYPES = ABI.names("QPT")
PORT_STATES = ABI.names("PORT")
DB_FIFO_DEPTH = ABI.defines["CHPP_DB_FIFO_DEPTH"]


def name(table, value):
    return table.get(int(value), "?")


def hca_state(s):
    p = s["params"]
    node = int(p["node_id"])
    peers = s["link"]["peers"]
    up = [int(peers[i]["node"])
          for i in range(peers.type.range()[1] + 1) if peers[i]["up"]]
    print("chpp-hca node %d: hca-init %s, link up %s (peers %s), "
          "doorbell FIFO %d/%d" %
          (node, bool(s["hca_init"]), bool(s["link"]["up"]),
           " ".join(str(n) for n in sorted(up)) or "none",
           int(s["db_count"]), DB_FIFO_DEPTH))
    print("  port 1: %s (open %s)" %
          (name(PORT_STATES, s["port_state"][0]), bool(s["port_open"][0])))
    for i in range(int(p["num_eqs"])):
        eq = s["eqs"][i]
        if eq["hw"]:
            print("  EQ %d: entries %d pi %d ci %d vector %d armed %s "
                  "overrun %s dropped %d" %
                  (i, int(eq["nent"]), int(eq["pi"]), int(eq["ci"]),
                   int(eq["vector"]), bool(eq["armed"]), bool(eq["overrun"]),
                   int(eq["dropped"])))
    for i in range(int(p["num_cqs"])):
        cq = s["cqs"][i]
        if cq["hw"]:
            print("  CQ %d: entries %d pi %d ci %d eq %d arm %d error %s "
                  "qps %d" %
                  (i, int(cq["nent"]), int(cq["pi"]), int(cq["ci"]),
                   int(cq["eqn"]), int(cq["arm"]), bool(cq["error"]),
                   int(cq["refs"])))
    # Shared receive queues (ABI 1.5): those in hardware ownership or in
    # error (state 2).
    for i in range(int(p["num_srqs"])):
        srq = s["srqs"][i]
        if int(srq["state"]) == 0:
            continue
        print("  SRQ %d: wqes %d pd %d pi %d ci %d free %d limit %d "
              "error %s qps %d" %
              (i, 1 << int(srq["log_size"]), int(srq["pd"]), int(srq["pi"]),
               int(srq["ci"]), int(srq["free"]), int(srq["limit"]),
               int(srq["state"]) == 2, int(srq["refs"])))
    for i in range(int(p["num_qps"])):
        qp = s["qps"][i]
        if int(qp["state"]) == 0:
            continue
        eng = qp["eng"]
        print("  QP %d: %s %s dest %d/%d sq pi %d ci %d comp %d psn %d, "
              "rq pi %d ci %d psn %d, inflight %d" %
              (i, name(QP_TYPES, qp["type"]), name(QP_STATES, qp["state"]),
               int(qp["dest_node"]), int(qp["dest_qpn"]), int(qp["sq_pi"]),
               int(qp["sq_ci"]), int(eng["sq_comp"]), int(qp["sq_psn"]),
               int(qp["rq_pi"]), int(qp["rq_ci"]), int(qp["rq_psn"]),
               int(eng["infl_count"])))
    n = int(s["counters"].type.range()[1]) + 1
    # Every counter, named as in the device's "state" view: the ABI's name
    # (CHPP_CNT_LIST) in lower case with '-'; six to a line.
    names = ABI.names("CNT")
    cnt = ["%s %d" % (names.get(i, "counter-%d" % i).lower().replace("_", "-"),
                      int(s["counters"][i])) for i in range(n)]
    for i in range(0, n, 6):
        print("  %s %s" % ("counters:" if i == 0 else " " * 9,
                           " ".join(cnt[i:i + 6])))


class ChppState(gdb.Command):
    """Print the state of every chpp-hca device: chpp-state [NODE-ID]"""

    def __init__(self):
        super().__init__("chpp-state", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        devs = gdb.parse_and_eval("chpp_hca_devices")
        found = 0
        for i in range(int(devs.type.range()[1]) + 1):
            dev = devs[i]
            if int(dev) == 0:
                continue
            s = dev.dereference()
            if arg and int(s["params"]["node_id"]) != int(arg):
                continue
            hca_state(s)
            found += 1
        if not found:
            print("no chpp-hca device")


ChppState()
