#!/usr/bin/env bash
# THE benchmark command: prepare the machine, build QEMU with chpp-hca and
# the benchmark program, then run it and print its table. Not a test: it
# reports figures and ratios against baselines measured in the same run and
# never fails on time (it exits non-zero only if the device misbehaves).
#
#   scripts/bench.sh [bench args...]   e.g. --quick, --op PUT, --size 4096,
#                                      --no-latency, --no-throughput,
#                                      --no-baseline
#   scripts/bench.sh --link [args...]  the two-QEMU link benchmark
#                                      chpp-hca-link-bench instead: --quick,
#                                      --unix, --tcp, --eth (a netdev link,
#                                      docs/fabric.md), --size, --no-latency,
#                                      --no-throughput, --no-baseline
#   scripts/bench.sh --fabric [args...] the fabric benchmark
#                                      chpp-hca-fabric-bench: all-to-all
#                                      PUTs at rising offered load on 4, 8,
#                                      16 nodes x 2, 4 VCs beside figure 18,
#                                      the chardev link as baseline:
#                                      --quick, --nodes N,N, --vcs V,V,
#                                      --size, --loads P,P, --props P,
#                                      --no-baseline, --chardev-only
#   scripts/bench.sh --fabric-netns [dgram|tap] [args...]
#                                      the same with every node in its own
#                                      network namespace, joined by a bridge
#                                      (root; scripts/lib/bench-fabric-netns.sh)
#   scripts/bench.sh --verbs [args...] perftest between the two driver
#                                      guests on chpp-hca and on soft-RoCE
#                                      (scripts/lib/bench-verbs.sh)
#   scripts/bench.sh --timing [args...] the timing model against seed 004
#                                      (chpp-hca-timing-bench, virtual time
#                                      only): Table 3, figures 15, 16 and 19
#                                      as tables, CSV and PNG plots in
#                                      build/timing/ (--out DIR elsewhere);
#                                      --sizes N,N,... --quick --props P
#                                      --no-table3 --no-mtu --no-payload
#                                      --no-share
#   scripts/bench.sh --timing-icount [pair.sh options]
#                                      perftest's ib_write_lat in one guest
#                                      under -icount with the device in
#                                      timing mode, against the model
#                                      (scripts/lib/bench-icount.sh)
#
# The table goes to stdout, with one "BENCH key=value ..." line per
# measurement for scripts. See docs/build.md ("Benchmark").
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# Build output goes to stderr: stdout is only the table.
"$CHPP_ROOT/scripts/setup.sh" >&2
"$CHPP_ROOT/scripts/build-qemu.sh" >&2

if [ "${1:-}" = --verbs ]; then
    shift
    exec "$CHPP_ROOT/scripts/lib/bench-verbs.sh" "$@"
fi
if [ "${1:-}" = --fabric-netns ]; then
    shift
    export QTEST_QEMU_BINARY="${QTEST_QEMU_BINARY:-$CHPP_QEMU_BIN}"
    exec "$CHPP_ROOT/scripts/lib/bench-fabric-netns.sh" "$@"
fi
if [ "${1:-}" = --timing-icount ]; then
    shift
    exec "$CHPP_ROOT/scripts/lib/bench-icount.sh" "$@"
fi
prog=chpp-hca-bench
args=("$@")
timing_out=
if [ "${1:-}" = --link ]; then
    prog=chpp-hca-link-bench
    shift
    args=("$@")
elif [ "${1:-}" = --fabric ]; then
    prog=chpp-hca-fabric-bench
    shift
    args=("$@")
elif [ "${1:-}" = --timing ]; then
    prog=chpp-hca-timing-bench
    shift
    timing_out="$CHPP_BUILD/timing"
    args=()
    while [ $# -gt 0 ]; do
        if [ "$1" = --out ] && [ $# -gt 1 ]; then
            timing_out=$(mkdir -p "$2" && cd "$2" && pwd)
            shift 2
            continue
        fi
        args+=("$1")
        shift
    done
    mkdir -p "$timing_out"
    args+=(--out "$timing_out")
fi
exe="$CHPP_QEMU_BUILD/tests/qtest/$prog"
[ -x "$exe" ] || chpp_die "no build/qemu/tests/qtest/$prog (did scripts/build-qemu.sh succeed?)"

export QTEST_QEMU_BINARY="${QTEST_QEMU_BINARY:-$CHPP_QEMU_BIN}"
chpp_log "running $prog $*"
# Run from the QEMU build directory, as the qtests do. libqtest's
# "# starting QEMU" line goes to stderr.
cd "$CHPP_QEMU_BUILD"
if [ -z "$timing_out" ]; then
    exec "$exe" "${args[@]}"
fi
"$exe" "${args[@]}"
chpp_log "plots (matplotlib) of the CSV files in ${timing_out#$CHPP_ROOT/}:"
"$CHPP_PYTHON" "$CHPP_ROOT/scripts/lib/timing-plot.py" "$timing_out"
