#!/usr/bin/env bash
# The timing model seen from a guest (scripts/bench.sh --timing-icount):
# one guest under -icount (its clock is QEMU's virtual clock: rdtsc counts
# virtual ns), the device in timing mode, and perftest's ib_write_lat
# between two processes of the guest, each spinning on its own vCPU, on
# the device's loopback. ib_write_lat reports half a round trip: the
# device's doorbell-to-data latency plus the guest's own instructions
# (perftest's loop, the provider's post, the poll) at 2^shift ns each.
#
# Two guest runs: with the calibrated model, and with a model whose
# latencies are all 0 (timing=on, every timing-*-cycles and timing-link-ns
# 0: what is left is the guest's own time and the bus transfer). The
# model's figures for the same WQEs (a PUT, inline up to perftest's inline
# size) come from the device in a qtest (chpp-hca-timing-bench
# --lat-sizes). Printed: the guest's figure, the model's, the difference,
# and the guest's difference between the two runs against the model's
# (the guest's own time cancels); docs/timing-model.md gives the
# tolerance. Not a test: it fails only if a tool fails.
#
#   scripts/lib/bench-icount.sh [--sizes N,N,...] [--iters N] [--shift N]
#                               [--slice NS] [pair.sh options]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SIZES=2,64,256,1024,4096,65536 ITERS=1000 SHIFT=0 SLICE=200
PASS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --sizes) SIZES=$2; shift ;;
        --iters) ITERS=$2; shift ;;
        --shift) SHIFT=$2; shift ;;
        --slice) SLICE=$2; shift ;;
        *) PASS+=("$1") ;;
    esac
    shift
done
ZERO="timing-link-ns=0,timing-mem-cycles=0,timing-xbar-cycles=0"
ZERO="$ZERO,timing-nap-imm-cycles=0,timing-nap-ind-cycles=0"
ZERO="$ZERO,timing-put-cycles=0,timing-get-cycles=0"

case " ${PASS[*]:-} " in
    *" --qemu "*) ;;
    *) "$CHPP_ROOT/scripts/setup.sh" >&2
       "$CHPP_ROOT/scripts/build-qemu.sh" >&2 ;;
esac

# The model: the same WQEs on the device in a qtest, virtual time only.
model_lines() {
    (cd "$CHPP_QEMU_BUILD" && QTEST_QEMU_BINARY="$CHPP_QEMU_BIN" \
        tests/qtest/chpp-hca-timing-bench --no-table3 --no-mtu --no-payload \
        --no-share --lat-sizes "$SIZES" "$@" 2>/dev/null | grep '^BENCH kind=lat')
}
MODEL=$(model_lines)
MODEL0=$(model_lines --props "$ZERO")

# A guest: two vCPUs taking turns of at most SLICE ns (CHPP_ICOUNT_SLICE_NS,
# a hook of scripts/lib/qemu-hooks.patch) under -icount (sleep=off: idle
# time jumps to the next timer instead of waiting for the host's clock).
LOG="$CHPP_BUILD/guest/single-node1.log"
guest_run() {   # $1: extra device properties; the rows to $2
    CHPP_ICOUNT_SLICE_NS=$SLICE "$CHPP_ROOT/scripts/pair.sh" --single \
        --timeout 1200 --timing --icount "$SHIFT" --smp 2 \
        --device-args "num-qps=16$1" \
        --kargs "chpp.bench=icount chpp.sizes=$SIZES chpp.iters=$ITERS" \
        "${PASS[@]}" >&2
    tr -d '\r' <"$LOG" >"$2"
}
G1=$(mktemp) G0=$(mktemp)
trap 'rm -f "$G1" "$G0"' EXIT
guest_run "" "$G1"
guest_run ",$ZERO" "$G0"

INLINE=$(sed -n 's/.*Max inline data *: *\([0-9]*\).*/\1/p' "$G1" | head -n 1)
INLINE=${INLINE:-0}
model() {   # model ns for size $1 from lines $2: inline up to perftest's size
    local op=put
    [ "$1" -le "$INLINE" ] && op=put_inline
    echo "$2" | sed -n "s/.* op=$op size=$1 model_ns=\([0-9]*\).*/\1/p"
}
typical() { # t_typical (us) of size $1 in guest log $2
    sed -n "s/.*chpp-bench: icount write_lat //p" "$2" | awk -v s="$1" '$1 == s { print $5 }' | tail -n 1
}
printf '\nib_write_lat in one guest under -icount shift=%s (%s ns per instruction), vCPU turns <= %s ns,\n' \
    "$SHIFT" "$((1 << SHIFT))" "$SLICE"
printf 'device timing=on; perftest inline size %s B; t_typical in us (t_min is the same to 0.01 us)\n\n' "$INLINE"
printf '%8s | %8s %8s %8s | %8s %8s %8s | %9s %9s %7s\n' "" "guest" "model" "guest-" \
    "guest" "model" "guest-" "guest" "model" ""
printf '%8s | %8s %8s %8s | %8s %8s %8s | %9s %9s %7s\n' bytes "" "" "model" \
    "(zero)" "(zero)" "model" "minus" "minus" "error"
printf '%8s | %26s | %26s | %9s %9s %7s\n' "" "calibrated model" "model with zero latencies" \
    "zero run" "zero" ""
BL=""
for sz in ${SIZES//,/ }; do
    g1=$(typical "$sz" "$G1") g0=$(typical "$sz" "$G0")
    m1=$(model "$sz" "$MODEL") m0=$(model "$sz" "$MODEL0")
    [ -n "$g1" ] && [ -n "$g0" ] || chpp_die "no ib_write_lat row for $sz bytes"
    [ -n "$m1" ] && [ -n "$m0" ] || chpp_die "no model figure for $sz bytes"
    awk -v s="$sz" -v g1="$g1" -v g0="$g0" -v m1="$m1" -v m0="$m0" 'BEGIN {
        m1 /= 1000; m0 /= 1000
        printf "%8d | %8.2f %8.3f %8.2f | %8.2f %8.3f %8.2f | %9.2f %9.3f %+6.1f%%\n",
            s, g1, m1, g1 - m1, g0, m0, g0 - m0, g1 - g0, m1 - m0,
            ((g1 - g0) - (m1 - m0)) / m1 * 100 }'
    BL="$BL$(printf 'BENCH test=icount_write_lat size=%s shift=%s slice_ns=%s guest_us=%s model_us=%s guest_zero_us=%s model_zero_us=%s' \
        "$sz" "$SHIFT" "$SLICE" "$g1" "$(awk -v m="$m1" 'BEGIN{printf "%.3f", m/1000}')" \
        "$g0" "$(awk -v m="$m0" 'BEGIN{printf "%.3f", m/1000}')")"$'\n'
done
echo
echo "guest-model: the guest's own instructions (perftest, the provider, the poll) at"
echo "$((1 << SHIFT)) ns each, and vCPU turns; the zero run measures them alone. error: the guest's"
echo "difference between the runs against the model's, relative to the model's figure."
echo
printf '%s' "$BL"
