#!/usr/bin/env bash
# The verbs benchmark (scripts/bench.sh --verbs): perftest's ib_write_bw
# (64 KiB, 2000 writes) and ib_write_lat (2 B, 2000 round trips) between
# the two driver guests, first on chpp-hca (chpp0, the chpp provider, the
# socket link) and then, in the same boot, on soft-RoCE (rdma_rxe on the
# guests' virtio-net control network, the kernel's software RDMA). Prints
# both, the ratio chpp/rxe, and one "BENCH key=value ..." line each.
# Not a test: it fails only if a tool fails.
#
#   scripts/lib/bench-verbs.sh [pair.sh options]     e.g. --device-args ...
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# With --qemu (a pair.sh option) the given QEMU is used as it is.
case " $* " in
    *" --qemu "*) ;;
    *) "$CHPP_ROOT/scripts/setup.sh" >&2
       "$CHPP_ROOT/scripts/build-qemu.sh" >&2 ;;
esac
"$CHPP_ROOT/scripts/pair.sh" --kargs chpp.bench=verbs "$@" >&2

# Node 2 runs the clients; their rows are the figures (perftest prints
#   write_bw:  #bytes #iterations BW-peak BW-average MsgRate   (MB/s = MiB/s)
#   write_lat: #bytes #iterations t_min t_max t_typical t_avg ... (usec)).
LOG="$CHPP_BUILD/guest/pair-node2.log"
row() { tr -d '\r' <"$LOG" | sed -n "s/.*chpp-bench: $1 $2 //p" | tail -n 1; }
for d in chpp0 rxe0; do
    for t in write_bw write_lat; do
        [ -n "$(row $d $t)" ] || chpp_die "no $d $t result in ${LOG#$CHPP_ROOT/}"
    done
done
bw() { row "$1" write_bw | awk '{print $4}'; }
lat() { row "$1" write_lat | awk '{print $5}'; }

printf '\n%-34s %14s %14s %9s\n' "perftest between the two guests" "chpp-hca" "soft-RoCE" "ratio"
printf '%-34s %14s %14s %9s\n' "ib_write_bw 64 KiB, MiB/s average" "$(bw chpp0)" "$(bw rxe0)" \
    "$(awk -v a="$(bw chpp0)" -v b="$(bw rxe0)" 'BEGIN { printf "%.1fx", a / b }')"
printf '%-34s %14s %14s %9s\n' "ib_write_lat 2 B, usec typical" "$(lat chpp0)" "$(lat rxe0)" \
    "$(awk -v a="$(lat chpp0)" -v b="$(lat rxe0)" 'BEGIN { printf "%.1fx", b / a }')"
echo "(ratio: how many times better chpp-hca is; both under TCG, same boot, same guests)"
echo "BENCH test=verbs_write_bw size=65536 chpp_mibps=$(bw chpp0) rxe_mibps=$(bw rxe0)"
echo "BENCH test=verbs_write_lat size=2 chpp_usec=$(lat chpp0) rxe_usec=$(lat rxe0)"
