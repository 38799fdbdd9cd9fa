#!/usr/bin/env python3
"""File-level call graph of hw/chpp from the compiler's own output.

Each hw/chpp/*.c is compiled once more, as build/qemu compiles it but at
-O0 (so that nothing is inlined away) and with -fcallgraph-info; the .ci
files GCC writes name every call and where each function is defined.
A call from file A to a function defined in file B is an arrow A -> B.

    scripts/checks/callgraph.py [--check] [--dot FILE]

Prints the arrows, the call cycles between files (strongly connected
components) and the arrows that run against the layer order of
docs/architecture.md. --check exits 1 when an arrow runs against the
layers and is not on the allow-list below (each entry with its reason),
and on any call cycle between files (peers of one layer included): the
layering of docs/architecture.md holds from then on.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build", "qemu")

# docs/architecture.md: lower layers never call higher ones.
LAYERS = [
    # the timing model (timing mode): a pure model, it calls nobody
    ["chpp-hca-timing.c"],
    # the base: guest errors, holds, command failure, refusing state, the
    # engine's kick and the transmit bound (how lower layers say "work")
    ["chpp-hca-base.c"],
    # every DMA, mailbox and MSI-X message
    ["chpp-hca-dma.c"],
    # objects the guest creates, each owning its table
    ["chpp-hca-mr.c", "chpp-hca-eq.c"],
    ["chpp-hca-db-error.c"],
    ["chpp-hca-cq.c", "chpp-hca-sriov.c"],
    # the link to the peer: its socket, Ethernet transport and capture
    # file, the wire format, its protocol, the port it makes, and the
    # routing of frames to loopback or the link
    ["chpp-hca-link-shm.c"],
    ["chpp-hca-link-io.c", "chpp-hca-link-eth.c", "chpp-hca-capture.c"],
    ["chpp-hca-wire.c"],
    ["chpp-hca-link-stream.c"],
    ["chpp-hca-link.c"],
    ["chpp-hca-link-fabric.c"],
    ["chpp-hca-port.c"],
    # the port's management agents (SMA, PMA) behind MAD_IFC
    ["chpp-hca-mad.c"],
    ["chpp-hca-route.c"],
    # shared receive queues: their rings, doorbells and consumer records
    ["chpp-hca-srq.c"],
    # multicast groups: which QPs a multicast datagram reaches
    ["chpp-hca-mcg.c"],
    ["chpp-hca-qp.c"],
    # the engine's parts and the engine that schedules them: the send
    # queue's WQEs and completions, the requester, the responder, and the
    # completer that restarts and retransmits the requester
    ["chpp-hca-sq.c"],
    ["chpp-hca-req.c", "chpp-hca-resp.c"],
    ["chpp-hca-comp.c"],
    ["chpp-hca-engine.c"],
    # doorbells: decode, FIFO, RING_SQ; kick the engine
    ["chpp-hca-doorbell.c"],
    # the views, the guest's entry points, migration, the QOM device
    ["chpp-hca-debug.c"],
    ["chpp-hca-cmd.c"],
    ["chpp-hca-vmstate.c"],
    ["chpp-hca-regs.c", "chpp-hca-pci.c"],
]

# Arrows against the layers that stay, for now, with why.  Keep it empty:
# a lower layer that must tell a higher one goes through chpp_upcalls
# (chpp-hca.h) or schedules it (chpp_engine_kick).
ALLOW = {
}

FRAME = re.compile(r'(node|edge): \{ (.*) \}')
FIELD = re.compile(r'(\w+): "([^"]*)"')


def compile_ci(unit, cmd, out):
    """Compile @unit with -fcallgraph-info into @out; return the .ci path."""
    args = shlex.split(cmd)
    args = [a for a in args if a != "ccache"]
    res, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-MQ", "-MF", "-o"):
            skip = True
            continue
        if a in ("-MD", "-O2", "-O1", "-O3", "-Os"):
            continue
        res.append(a)
    obj = os.path.join(out, unit + ".o")
    res += ["-O0", "-fcallgraph-info", "-o", obj]
    subprocess.run(res, cwd=BUILD, check=True)
    return os.path.join(out, unit + ".ci")


def parse(ci, unit):
    """Functions defined in @unit, and (caller, callee) names."""
    defined, calls = set(), []
    for line in open(ci):
        m = FRAME.match(line.strip())
        if not m:
            continue
        f = dict(FIELD.findall(m.group(2)))
        if m.group(1) == "node":
            name, _, where = f["label"].partition("\\n")
            if "shape" not in m.group(2) and \
                    where.split(":")[0].endswith("/hw/chpp/" + unit):
                defined.add(name)
        else:
            src = f["sourcename"].rsplit(":", 1)[-1]
            dst = f["targetname"]
            if ":" not in dst:          # a function of another unit
                calls.append((src, dst))
    return defined, calls


def graph():
    cc = json.load(open(os.path.join(BUILD, "compile_commands.json")))
    units = {}
    for e in cc:
        m = re.search(r"hw/chpp/(chpp-hca[\w-]*\.c)$", e["file"])
        if m:
            units[m.group(1)] = e["command"]
    where, calls = {}, {}
    with tempfile.TemporaryDirectory() as out:
        for unit, cmd in sorted(units.items()):
            d, c = parse(compile_ci(unit, cmd, out), unit)
            for fn in d:
                where[fn] = unit
            calls[unit] = c
    arrows = {}
    for unit, c in calls.items():
        for src, dst in c:
            if dst in where and where[dst] != unit:
                arrows.setdefault((unit, where[dst]), set()).add(dst)
    return sorted(units), arrows


def sccs(nodes, arrows):
    succ = {n: [b for (a, b) in arrows if a == n] for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    check = "--check" in sys.argv
    dot = sys.argv[sys.argv.index("--dot") + 1] if "--dot" in sys.argv else None
    nodes, arrows = graph()
    layer = {f: i for i, fs in enumerate(LAYERS) for f in fs}
    missing = [n for n in nodes if n not in layer]
    # Files of one layer are peers; a call up a layer runs against them.
    back = [(a, b) for (a, b) in arrows
            if a in layer and b in layer and layer[a] < layer[b]]
    print("%d files, %d arrows between them" % (len(nodes), len(arrows)))
    for (a, b), fns in sorted(arrows.items()):
        mark = " (against the layers)" if (a, b) in back else ""
        print("  %s -> %s: %s%s" % (a, b, ", ".join(sorted(fns)), mark))
    cyc = sccs(nodes, arrows)
    print("call cycles between files: %d" % len(cyc))
    for c in cyc:
        print("  %d files: %s" % (len(c), " ".join(c)))
    bad = [(a, b) for (a, b) in back if (a, b) not in ALLOW]
    print("arrows against the layers: %d (%d allowed)" %
          (len(back), len(back) - len(bad)))
    if dot:
        with open(dot, "w") as f:
            f.write("digraph chpp {\n  rankdir=TB;\n")
            for (a, b) in sorted(arrows):
                style = ' [color=red]' if (a, b) in back else ""
                f.write('  "%s" -> "%s"%s;\n' % (a, b, style))
            f.write("}\n")
    if missing:
        print("files in no layer: %s" % " ".join(missing))
    if check:
        for a, b in bad:
            print("NOT ALLOWED: %s -> %s (%s)" %
                  (a, b, ", ".join(sorted(arrows[(a, b)]))))
        stale = [k for k in ALLOW if k not in back]
        for a, b in stale:
            print("allow-list entry no longer needed: %s -> %s" % (a, b))
        # Peers of one layer may call each other, but not in a circle.
        for c in cyc:
            print("CALL CYCLE: %s" % " ".join(c))
        return 1 if bad or missing or stale or cyc else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
