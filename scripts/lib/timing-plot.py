#!/usr/bin/python3
"""PNG plots of the timing benchmark (scripts/bench.sh --timing).

    scripts/lib/timing-plot.py DIR

reads the CSV files chpp-hca-timing-bench wrote to DIR (table3.csv,
mtu.csv, payload.csv, share.csv; any may be missing) and writes beside
them, for comparison with seed 004's table and figures:

    table3.png   latency against payload, model and Table 3
    fig15.png    PUT bandwidth against the MTU
    fig16.png    bandwidth against payload
    fig19.png    bandwidth share of the PF and the 7 VFs over time

Debian's python3-matplotlib (scripts/setup.sh installs it).
"""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OPS = [("nap_imm", "NAP immediate"), ("nap_ind", "NAP indirect"),
       ("put", "PUT"), ("get", "GET")]
COLORS = {"nap_imm": "tab:green", "nap_ind": "tab:olive", "put": "tab:blue",
          "get": "tab:red"}


def rows(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return list(csv.DictReader(f))


def size_label(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def table3(d, r):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for key, name in OPS:
        pts = sorted((int(x["measured_size"]), float(x["model_us"]))
                     for x in r if x["op"] == key)
        pts = sorted(set(pts))
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                    color=COLORS[key], label=name + " (model)")
        paper = sorted((int(x["size"]), float(x["paper_us"]))
                       for x in r if x["op"] == key and x["paper_us"]
                       and x["size"] != "65536")
        if paper:
            ax.plot([p[0] for p in paper], [p[1] for p in paper], "s",
                    mfc="none", ms=10, color=COLORS[key],
                    label=name + " (Table 3)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("payload (bytes)")
    ax.set_ylabel("latency, doorbell to data in memory (us)")
    ax.set_title("Table 3: DMA latency, model (device in timing mode) "
                 "and paper")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.annotate("Table 3's \"51036 B\" row: its values\nsit at 65536 B "
                "on the 3.2 GB/s slope", xy=(51036, 22.3),
                xytext=(300, 60), fontsize=8,
                arrowprops=dict(arrowstyle="->", alpha=0.5))
    fig.tight_layout()
    fig.savefig(os.path.join(d, "table3.png"), dpi=110)
    plt.close(fig)


def fig15(d, r):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mtu = [int(x["mtu"]) for x in r]
    bw = [float(x["gbps"]) for x in r]
    ax.plot(mtu, bw, "o-", color="tab:blue", label="PUT, model")
    ax.axhline(3.2, ls="--", color="gray", lw=1)
    ax.annotate("paper: linear up to 128 B, then ~3.2 GB/s\n"
                "(header 1 cycle + 8 data + 1 processing: 80% of 4 GB/s)",
                xy=(128, 3.2), xytext=(200, 1.3), fontsize=8,
                arrowprops=dict(arrowstyle="->", alpha=0.5))
    for m, b, t in zip(mtu, bw, (int(x["tags_needed"]) for x in r)):
        ax.annotate("%d tags" % t, xy=(m, b), xytext=(0, -14),
                    textcoords="offset points", ha="center", fontsize=7,
                    color="tab:red" if t > 32 else "gray")
    ax.set_xscale("log", base=2)
    ax.set_xticks(mtu)
    ax.set_xticklabels([str(m) for m in mtu])
    ax.set_ylim(0, 4)
    ax.set_xlabel("MTU = read request size (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title("Figure 15: bandwidth against MTU (2 MiB PUTs; "
                 "tags formula (2) asks for)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "fig15.png"), dpi=110)
    plt.close(fig)


def fig16(d, r):
    fig, ax = plt.subplots(figsize=(8, 5))
    for key, name in OPS:
        pts = sorted((int(x["size"]), float(x["gbps"]))
                     for x in r if x["op"] == key)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    color=COLORS[key], label=name, ms=4,
                    ls="--" if key == "get" else "-")
    ax.plot([512 * 1024], [3.19], "*", ms=14, color="black",
            label="paper: PUT 3.19 GB/s at 512 KiB")
    ax.set_xscale("log", base=2)
    ticks = [1, 16, 256, 4096, 65536, 1 << 20]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks])
    ax.set_ylim(0, 3.6)
    ax.set_xlabel("payload")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title("Figure 16: bandwidth against payload (MTU 128 B, 32 tags)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "fig16.png"), dpi=110)
    plt.close(fig)


def fig19(d, r):
    runs = [("equal", "equal weights"), ("weighted", "weights 1..8")]
    runs = [x for x in runs if any(y["run"] == x[0] for y in r)]
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.8),
                             squeeze=False)
    fns = [k for k in r[0].keys() if k.startswith("f")]
    for ax, (run, title) in zip(axes[0], runs):
        sel = [x for x in r if x["run"] == run]
        cyc = [int(x["cycles"]) for x in sel]
        shares = [[float(x[f]) for x in sel] for f in fns]
        labels = ["PF" if f == "f0" else "VF%s" % f[1:] for f in fns]
        ax.stackplot(cyc, shares, labels=labels, alpha=0.85)
        ax.set_ylim(0, 100)
        ax.set_xlim(cyc[0], cyc[-1])
        ax.set_xlabel("time (clock cycles, 250 MHz)")
        ax.set_ylabel("share of the bandwidth (%, cumulative)")
        ax.set_title("Figure 19: bandwidth of PF and VF1-7, " + title)
        ax.legend(fontsize=7, loc="upper right", ncol=4)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "fig19.png"), dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    done = []
    for name, fn, out in (("table3.csv", table3, "table3.png"),
                          ("mtu.csv", fig15, "fig15.png"),
                          ("payload.csv", fig16, "fig16.png"),
                          ("share.csv", fig19, "fig19.png")):
        r = rows(d, name)
        if r:
            fn(d, r)
            done.append(os.path.join(d, out))
    for p in done:
        print(p)


if __name__ == "__main__":
    main()
