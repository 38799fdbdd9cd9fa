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
#                                      --unix, --tcp, --size, --no-latency,
#                                      --no-throughput, --no-baseline
#   scripts/bench.sh --verbs [args...] perftest between the two driver
#                                      guests on chpp-hca and on soft-RoCE
#                                      (scripts/lib/bench-verbs.sh)
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
prog=chpp-hca-bench
if [ "${1:-}" = --link ]; then
    prog=chpp-hca-link-bench
    shift
fi
exe="$CHPP_QEMU_BUILD/tests/qtest/$prog"
[ -x "$exe" ] || chpp_die "no build/qemu/tests/qtest/$prog (did scripts/build-qemu.sh succeed?)"

export QTEST_QEMU_BINARY="${QTEST_QEMU_BINARY:-$CHPP_QEMU_BIN}"
chpp_log "running $prog $*"
# Run from the QEMU build directory, as the qtests do. libqtest's
# "# starting QEMU" line goes to stderr.
cd "$CHPP_QEMU_BUILD"
exec "$exe" "$@"
