#!/usr/bin/env bash
# The verbs benchmark (scripts/bench.sh --verbs): perftest between the two
# driver guests, first on chpp-hca (chpp0, the chpp provider, the socket
# link) and then, in the same boot, on soft-RoCE (rdma_rxe on the guests'
# virtio-net control network, the kernel's software RDMA):
#   - message rate: ib_write_bw and ib_send_bw, 2 B and 64 B, and
#     ib_atomic_bw (8 B), on 1 and 4 QPs;
#   - latency: ib_write_lat, ib_read_lat, ib_send_lat at 2 B and 4 KiB,
#     ib_atomic_lat (8 B): typical, then average and 99.9th percentile;
# and the baselines of the same run: the host's 64 B round trip between two
# processes over a unix socket (tests/bench/chpp-sock-rtt.c, before and
# after the guests; the lower median counts) and a null MMIO exit in the
# guest (chpp-mmio-bench: the scratch register, before the driver loads).
# Prints each figure with its ratio to soft-RoCE and to its baseline, and
# one "BENCH key=value ..." line each; then, for each message-rate run,
# perftest's inline size and queue depths and chpp-hca's retransmitted WQEs
# and RNR NAKs (the requester's hw_counters). Not a test: it fails only if
# a tool fails.
#
#   scripts/lib/bench-verbs.sh [--iters N] [--lat-iters N] [--only T,...]
#                              [pair.sh options]
#       --iters N   messages per QP in the message-rate runs (default 20000)
#       --duration S  instead, each message-rate run lasts S seconds
#                   (perftest -D): the steady state, in a bounded time on
#                   both devices (a 20,000-message run lasts about 0.1 s on
#                   chpp-hca and reads up to a third lower, docs/build.md)
#       --lat-iters N  round trips in each latency run (default 2000; the
#                   99.9th percentile of 2000 is their second worst)
#       --only T,.. only these perftest tools (write_bw, send_bw, atomic_bw,
#                   write_lat, read_lat, send_lat, atomic_lat), on both
#                   devices: a quicker look
#       --no-rxe    chpp-hca only (soft-RoCE's columns read "-")
# A tool that fails or times out in the guest reads "failed" in the table
# and the run goes on.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ITERS=20000 DURATION= LAT_ITERS=2000 ONLY=write_bw,send_bw,atomic_bw,write_lat,read_lat,send_lat,atomic_lat RXE=1
while :; do
    case "${1:-}" in
        --iters) ITERS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --lat-iters) LAT_ITERS=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --no-rxe) RXE=0; shift ;;
        *) break ;;
    esac
done
wanted() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
# With --qemu (a pair.sh option) the given QEMU is used as it is.
case " $* " in
    *" --qemu "*) ;;
    *) "$CHPP_ROOT/scripts/setup.sh" >&2
       "$CHPP_ROOT/scripts/build-qemu.sh" >&2 ;;
esac
mkdir -p "$CHPP_BUILD/bench"
RTT="$CHPP_BUILD/bench/chpp-sock-rtt"
cc -O2 -Wall -Werror -o "$RTT" "$CHPP_ROOT/tests/bench/chpp-sock-rtt.c" ||
    chpp_die "building tests/bench/chpp-sock-rtt.c failed"
rtt1=$("$RTT" 20000 64)
"$CHPP_ROOT/scripts/pair.sh" --timeout 1800 --kargs "chpp.bench=verbs chpp.iters=$ITERS${DURATION:+ chpp.duration=$DURATION} chpp.lat_iters=$LAT_ITERS chpp.bench_only=$ONLY chpp.bench_rxe=$RXE" "$@" >&2
rtt2=$("$RTT" 20000 64)

# Node 2 runs the clients; their rows are the figures:
#   chpp-bench: DEV TEST SIZE QPS ROW, ROW perftest's result row:
#   *_bw:  #bytes #iterations BW-peak BW-average MsgRate(Mpps)
#   *_lat: #bytes #iterations t_min t_max t_typical t_avg ... (usec)
LOG="$CHPP_BUILD/guest/pair-node2.log"
row() { tr -d '\r' <"$LOG" | sed -n "s/.*chpp-bench: $1 $2 $3 $4 //p" | tail -n 1; }
# col DEV TEST SIZE QPS COLUMN: one figure; "-" for soft-RoCE when it was
# not run, "failed" when the guest's tool failed.
col() {
    local r
    [ "$1" != rxe0 ] || [ "$RXE" = 1 ] || { echo -; return; }
    r=$(row "$1" "$2" "$3" "$4")
    [ -n "$r" ] || chpp_die "no $1 $2 $3 B $4 QP result in ${LOG#$CHPP_ROOT/}"
    case "$r" in failed*) echo failed; return ;; esac
    echo "$r" | awk -v c="$5" '{print $c}'
}
# ratio EXPR A B: awk's EXPR of a and b, printf'd with FORMAT; "-" unless
# both are numbers.
ratio() {
    awk -v a="$2" -v b="$3" -v f="$4" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0 || a + 0 == 0) { print "-"; exit }
        printf f, '"$1"' }'
}
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
mmio=$(tr -d '\r' <"$LOG" | sed -n 's/.*chpp-bench: mmio //p' | tail -n 1)
[ -n "$mmio" ] || chpp_die "no MMIO baseline in ${LOG#$CHPP_ROOT/}"
rd_ns=$(kv "$mmio" read_ns) wr_ns=$(kv "$mmio" write_ns)
rtt=$(awk -v a="$(kv "$rtt1" rtt_median_us)" -v b="$(kv "$rtt2" rtt_median_us)" \
      'BEGIN { printf "%.2f", a < b ? a : b }')
oneway=$(awk -v r="$rtt" 'BEGIN { printf "%.2f", r / 2 }')

echo
echo "Baselines (this run):"
printf '  %-58s %s / %s usec\n' "host: unix socket 64 B round trip, median (before / after)" \
    "$(kv "$rtt1" rtt_median_us)" "$(kv "$rtt2" rtt_median_us)"
printf '  %-58s %s usec (half the lower round trip)\n' "host: one way" "$oneway"
printf '  %-58s %s / %s nsec\n' "guest: null MMIO exit, scratch register read / write" "$rd_ns" "$wr_ns"
echo "BENCH test=verbs_baseline sock_rtt_us=$rtt sock_oneway_us=$oneway mmio_read_ns=$rd_ns mmio_write_ns=$wr_ns"

BL=() TAILS=()
echo
printf '%-30s %11s %11s %9s %12s %12s\n' "message rate, Mmsg/s" chpp-hca soft-RoCE chpp/rxe "chpp/MMIO" "rxe/MMIO"
# Atomics are 8 bytes.
sizes() { case "$1" in atomic_*) echo 8 ;; *) shift; echo "$@" ;; esac; }
for t in write_bw send_bw atomic_bw; do
    wanted $t || continue
    for q in 1 4; do
        for sz in $(sizes $t 2 64); do
            a=$(col chpp0 $t $sz $q 5) b=$(col rxe0 $t $sz $q 5)
            printf '%-30s %11s %11s %9s %12s %12s\n' "ib_$t $sz B, $q QP" "$a" "$b" \
                "$(ratio 'a / b' "$a" "$b" '%.2fx')" \
                "$(ratio '1000 / (a * b)' "$a" "$wr_ns" '%.0f')" \
                "$(ratio '1000 / (a * b)' "$b" "$wr_ns" '%.0f')"
            BL+=("BENCH test=verbs_$t size=$sz qps=$q chpp_mmsgps=$a rxe_mmsgps=$b")
        done
    done
done
echo "(x/MMIO: the time per message over the null MMIO write's; 1 would be one message per MMIO exit)"
echo
printf '%-30s %11s %11s %9s %12s %12s\n' "latency, usec typical" chpp-hca soft-RoCE rxe/chpp "chpp/1-way" "rxe/1-way"
for t in write_lat read_lat send_lat atomic_lat; do
    wanted $t || continue
    for sz in $(sizes $t 2 4096); do
        a=$(col chpp0 $t $sz 1 5) b=$(col rxe0 $t $sz 1 5)
        printf '%-30s %11s %11s %9s %12s %12s\n' "ib_$t $sz B" "$a" "$b" \
            "$(ratio 'b / a' "$a" "$b" '%.2fx')" \
            "$(ratio 'a / b' "$a" "$oneway" '%.2f')" \
            "$(ratio 'a / b' "$b" "$oneway" '%.2f')"
        # The average (6th column) and the 99.9th percentile (9th).
        aa=$(col chpp0 $t $sz 1 6) ap=$(col chpp0 $t $sz 1 9)
        ba=$(col rxe0 $t $sz 1 6) bp=$(col rxe0 $t $sz 1 9)
        TAILS+=("$(printf '%-30s %11s %11s %11s %11s' "ib_$t $sz B" "$aa" "$ap" "$ba" "$bp")")
        BL+=("BENCH test=verbs_$t size=$sz chpp_usec=$a rxe_usec=$b chpp_avg_usec=$aa chpp_p999_usec=$ap rxe_avg_usec=$ba rxe_p999_usec=$bp")
    done
done
echo "(x/1-way: the latency over the host socket's one-way time; ratios > 1x favour chpp-hca)"
runs="$ITERS messages per QP"
[ -z "$DURATION" ] || runs="$DURATION s per run"
echo "(both under TCG, same boot, same guests; perftest -F, $runs for the rates)"
if [ ${#TAILS[@]} -gt 0 ]; then
    echo
    printf '%-30s %11s %11s %11s %11s\n' "latency tails, usec" "chpp avg" "chpp 99.9%" "rxe avg" "rxe 99.9%"
    printf '%s\n' "${TAILS[@]}"
    echo "(average and 99.9th percentile of $LAT_ITERS round trips each, perftest's)"
fi
# The guest's "chpp-bench-info:" lines: perftest's inline size and queue
# depths and, on chpp-hca, the requester's retransmitted WQEs and RNR NAKs
# during each run.
info=$(tr -d '\r' <"$LOG" | sed -n 's/.*chpp-bench-info: //p' | awk '{
    r = n = "";
    for (i = 8; i <= NF; i++) {
        split($i, kv, "=");
        if (kv[1] == "retransmits") r = (r == "") ? kv[2] : kv[2] - r;
        if (kv[1] == "rnr_naks") n = (n == "") ? kv[2] : kv[2] - n;
    }
    print $1, $2, $3, $4, $5, $6, $7, (r == "" ? "" : "retransmits=" r " rnr_naks=" n) }')
if [ -n "$info" ]; then
    echo
    echo "message-rate runs: perftest's inline size and depths; chpp-hca's requester: WQEs retransmitted, RNR NAKs"
    while read -r dev t sz q rest; do
        printf '  %-6s ib_%-8s %3s B, %s QP  %s\n' "$dev" "$t" "$sz" "$q" "$rest"
        BL+=("BENCH test=verbs_info dev=$dev op=$t size=$sz qps=$q $rest")
    done <<<"$info"
fi
echo
printf '%s\n' "${BL[@]}"
