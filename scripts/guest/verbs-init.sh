# shellcheck shell=sh
# Sourced as /chpp/verbs-init.sh by /init (scripts/guest/pair-init.sh) in
# the paired driver guests: the unmodified rdma-core tools and perftest
# (Debian's binaries, installed by scripts/lib/initramfs.sh) between the
# two guests, through the chpp provider (guest-driver/provider/). Uses say,
# fail, fetch, wait_active, NODE and PEER from pair-init.sh and its file
# server in /www.
#
# Node 1 runs the servers, node 2 the clients. A client starts once its
# server listens: node 1 publishes /www/NAME when the server's TCP port is
# in LISTEN state, node 2 fetches NAME first. Every run has its own TCP port
# and a time limit; a tool that fails on either node fails that node.
#
#   verbs_tools DEV     ibv_devices, ibv_devinfo -v, ibv_rc_pingpong (sizes,
#                       events, the ibv_wr_* API with -N), ibv_srq_pingpong and perftest (write/read/send bandwidth,
#                       write/send latency; write/send bandwidth on several
#                       QPs at once) on ib device DEV
#   ucx_tools DEV       UCX on ib device DEV: ucx_info -d lists rc_verbs on
#                       it, ucx_perftest over rc_verbs (UCT active messages
#                       and RDMA writes, UCP tag matching)
#   verbs_bench DEV N [ARGS]  message rate (ib_write_bw, ib_send_bw: 2 and
#                       64 B, 1 and 4 QPs, N messages per QP) and latency
#                       (ib_write_lat, ib_read_lat, ib_send_lat: 2 B and
#                       4 KiB), printing "chpp-bench: DEV TEST SIZE QPS ROW"
#                       lines (scripts/lib/bench-verbs.sh)
#   mmio_bench          the null MMIO exit, "chpp-bench: mmio ..."
#   icount_bench DEV SIZES  one guest (chpp.mode=single) under -icount with
#                       the device in timing mode: ib_write_lat server and
#                       client in this guest, each on its own vCPU, on DEV
#                       (loopback), one run per size of the comma list,
#                       printing "chpp-bench: icount write_lat ..." lines
#                       (scripts/lib/bench-icount.sh)

VPORT=18600

# Is TCP port $1 in LISTEN state (/proc/net/tcp, hex, state 0A)?
listening() {
    grep -qE ":$(printf %04X "$1") 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# vtry NAME SECS CMD...: CMD as server on node 1, as client of node 1 on
# node 2 (with --port and the server's address appended), output in
# /tmp/NAME.log. Returns CMD's exit status, 255 if node 1's server never
# listened; fails nothing: for what is known not to work everywhere.
vtry() {
    name=$1 secs=$2
    shift 2
    VPORT=$((VPORT + 1))
    if [ "$NODE" = 1 ]; then
        timeout "$secs" "$@" -p "$VPORT" >"/tmp/$name.log" 2>&1 &
        vpid=$!
        w=0
        until listening "$VPORT"; do
            kill -0 $vpid 2>/dev/null || break
            sleep 0.2; w=$((w + 1))
            [ $w -lt 300 ] || break
        done
        # One flag per try (VPORT moves on both nodes): a retry's client
        # must not take the first try's flag for the second's listen.
        echo up >"/www/${name}p$VPORT"
        wait $vpid
    else
        fetch "${name}p$VPORT" 120 || return 255
        timeout "$secs" "$@" -p "$VPORT" "$PEER" >"/tmp/$name.log" 2>&1
    fi
}

# vrun NAME SECS CMD...: vtry that fails the guest when CMD fails (its
# output on the console).
vrun() {
    vtry "$@"
    vrc=$?
    [ "$NODE" = 1 ] || [ $vrc != 255 ] || fail "$1: the server never listened"
    if [ $vrc != 0 ]; then
        cat "/tmp/$1.log"
        shift 2
        fail "$name: '$*' exited with $vrc"
    fi
}

# ibv_rc_pingpong's summary: "N bytes in S seconds = R Mbit/sec".
pingpong_rate() {
    sed -n 's/.* = \([0-9.]*\) Mbit\/sec.*/\1 Mbit\/s/p' "/tmp/$1.log" | head -n 1
}

# perftest's result row: the line that starts with the message size.
perf_row() {
    awk -v sz="$2" '$1 == sz && NF >= 5 { print; exit }' "/tmp/$1.log"
}

# The device counter CHPP_CNT_DB_FIFO_OVERFLOW of ib device $1 (the driver's
# hw_counters): SQ doorbells the doorbell FIFO lost.
db_overflows() {
    cat "/sys/class/infiniband/$1/hw_counters/db_fifo_overflow"
}

# "retransmits=N rnr_naks=M": the device counters of ib device $1 (the
# driver's hw_counters; empty for a device without them, soft-RoCE).
transport_counters() {
    c=/sys/class/infiniband/$1/hw_counters
    [ -r "$c/rnr_naks" ] || return 0
    echo "retransmits=$(cat "$c/retransmits") rnr_naks=$(cat "$c/rnr_naks")"
}

verbs_tools() {
    dev=$1
    ibv_devices >/tmp/devices.log 2>&1 || { cat /tmp/devices.log; fail "ibv_devices"; }
    grep -q "^ *$dev " /tmp/devices.log || { cat /tmp/devices.log; fail "ibv_devices does not list $dev"; }
    ibv_devinfo -v -d "$dev" >/tmp/devinfo.log 2>&1 || { cat /tmp/devinfo.log; fail "ibv_devinfo -d $dev"; }
    grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo.log || { cat /tmp/devinfo.log; fail "ibv_devinfo: $dev port not PORT_ACTIVE"; }
    lid=$(sed -n 's/.*port_lid:[[:space:]]*\([0-9]*\).*/\1/p' /tmp/devinfo.log)
    [ "$lid" = "$(($(cat "/sys/class/infiniband/$dev/ports/1/lid")))" ] ||
        fail "ibv_devinfo: $dev port_lid '$lid', sysfs $(cat "/sys/class/infiniband/$dev/ports/1/lid")"
    # The limits libibverbs reports are the device's: the driver logs the
    # device's capabilities (QUERY_DEV_CAP) when it binds the function.
    bdf=$(basename "$(readlink "/sys/class/infiniband/$dev/device")")
    caps=$(dmesg | grep "$bdf: fw .* QPs" | tail -n 1)
    [ -n "$caps" ] || fail "no capability line of $bdf in the kernel log"
    for k in QPs:max_qp CQs:max_cq MPTs:max_mr PDs:max_pd; do
        want=$(echo "$caps" | sed -n "s/.* \([0-9]*\) ${k%%:*},.*/\1/p")
        got=$(sed -n "s/^[[:space:]]*${k#*:}:[[:space:]]*\([0-9]*\).*/\1/p" /tmp/devinfo.log)
        # With MADs, QPs 0 and 1 are ib_core's QP0 and QP1, not the verbs'.
        case "$k$caps" in QPs*MADs*) want=$((want - 2)) ;; esac
        [ -n "$want" ] && [ "$want" = "$got" ] ||
            fail "ibv_devinfo: $dev ${k#*:} '$got', the device has '$want' ${k%%:*}"
    done
    say "verbs $dev: ibv_devinfo -v: PORT_ACTIVE, LID $lid," \
        "$(grep -E '^[[:space:]]*(max_qp|max_qp_wr|max_cq|max_cqe|max_mr|max_pd|max_sge):' /tmp/devinfo.log |
           tr -s ' \t' ' ' | tr '\n' ',' | sed 's/,$//')"

    # RC ping-pong: the default 4 KiB, then larger messages, then CQ events;
    # -c checks the received bytes.
    vrun "${dev}pp" 120 ibv_rc_pingpong -d "$dev" -c
    vrun "${dev}ppb" 120 ibv_rc_pingpong -d "$dev" -c -s 65536 -n 200
    vrun "${dev}ppc" 180 ibv_rc_pingpong -d "$dev" -c -s 1048576 -n 20
    vrun "${dev}ppe" 120 ibv_rc_pingpong -d "$dev" -c -e -s 16384 -n 200
    # -N: the extended QP (ibv_create_qp_ex) and the ibv_wr_* API.
    vrun "${dev}ppn" 120 ibv_rc_pingpong -d "$dev" -c -N -s 65536 -n 200
    vrun "${dev}ppne" 120 ibv_rc_pingpong -d "$dev" -c -N -e -s 16 -n 200
    say "verbs $dev: ibv_rc_pingpong 4 KiB $(pingpong_rate "${dev}pp"), 64 KiB $(pingpong_rate "${dev}ppb")," \
        "1 MiB $(pingpong_rate "${dev}ppc"), events $(pingpong_rate "${dev}ppe");" \
        "ibv_wr_* (-N) 64 KiB $(pingpong_rate "${dev}ppn"), 16 B with events $(pingpong_rate "${dev}ppne")"

    # SRQ ping-pong (docs/shared-receive-queues.md): the receives of all its
    # QPs come from one shared receive queue; -c checks the bytes. As many
    # QPs as the device allows, at most the tool's default 16.
    maxqp=$(sed -n 's/^[[:space:]]*max_qp:[[:space:]]*\([0-9]*\).*/\1/p' /tmp/devinfo.log)
    nq=16
    [ "$maxqp" -ge 16 ] || nq=$maxqp
    vrun "${dev}srq" 180 ibv_srq_pingpong -d "$dev" -q "$nq" -c -n 200
    vrun "${dev}srqe" 180 ibv_srq_pingpong -d "$dev" -q "$nq" -c -e -s 65536 -n 50
    grep -q 'bytes in' "/tmp/${dev}srq.log" && grep -q 'bytes in' "/tmp/${dev}srqe.log" ||
        { cat "/tmp/${dev}srq.log" "/tmp/${dev}srqe.log"; fail "ibv_srq_pingpong $dev: no summary"; }
    say "verbs $dev: ibv_srq_pingpong $nq QPs 4 KiB $(pingpong_rate "${dev}srq"), 64 KiB events $(pingpong_rate "${dev}srqe")"

    # perftest, IB link layer (LIDs), -F: no cpufreq check in a VM.
    for t in write_bw read_bw send_bw; do
        vrun "${dev}$(echo $t | tr -d _)" 180 "ib_$t" -d "$dev" -F -n 500
        row=$(perf_row "${dev}$(echo $t | tr -d _)" 65536)
        [ -n "$row" ] || { cat "/tmp/${dev}$(echo $t | tr -d _).log"; fail "ib_$t: no result row"; }
        say "verbs $dev: ib_$t 64 KiB x500: $(echo "$row" | awk '{print $4}') MB/s average"
    done
    # perftest uses the ibv_wr_* API on the devices it knows only: on this
    # one it posts with ibv_post_send (docs/verbs-provider.md).
    grep -q 'ibv_wr\* API *: OFF' "/tmp/${dev}writebw.log" ||
        { cat "/tmp/${dev}writebw.log"; fail "ib_write_bw: no 'ibv_wr* API : OFF'"; }
    # Several QPs ringing at once (-q): more doorbells than the 32-entry
    # doorbell FIFO holds unless the provider's flow control keeps them in,
    # and lost ones must be recovered. Needs max_qp >= N on both nodes
    # (pair.sh gives the PFs 16 QPs; a VF has 4).
    maxqp=$(sed -n 's/^[[:space:]]*max_qp:[[:space:]]*\([0-9]*\).*/\1/p' /tmp/devinfo.log)
    ovf0=$(db_overflows "$dev")
    for tq in write_bw:2 write_bw:4 write_bw:8 send_bw:4; do
        t=${tq%:*} q=${tq#*:}
        if [ "$maxqp" -lt "$q" ]; then
            say "verbs $dev: ib_$t -q $q skipped (max_qp $maxqp)"
            continue
        fi
        name="${dev}$(echo "$t" | tr -d _)q$q"
        vrun "$name" 180 "ib_$t" -d "$dev" -F -n 500 -q "$q"
        row=$(perf_row "$name" 65536)
        [ -n "$row" ] || { cat "/tmp/$name.log"; fail "ib_$t -q $q: no result row"; }
        say "verbs $dev: ib_$t -q $q 64 KiB x500: $(echo "$row" | awk '{print $4}') MB/s average"
    done
    say "verbs $dev: doorbell FIFO overflows during the -q runs: $(($(db_overflows "$dev") - ovf0))"
    # The same without the provider's flow control: the FIFO loses
    # doorbells, and the driver must recover every one of them.
    if [ "$maxqp" -ge 8 ]; then
        ovf0=$(db_overflows "$dev")
        name="${dev}writebwq8noflow"
        vrun "$name" 180 env CHPP_NO_DB_FLOW=1 ib_write_bw -d "$dev" -F -n 500 -q 8
        row=$(perf_row "$name" 65536)
        [ -n "$row" ] || { cat "/tmp/$name.log"; fail "ib_write_bw -q 8 (no flow control): no result row"; }
        say "verbs $dev: ib_write_bw -q 8 without flow control: $(echo "$row" | awk '{print $4}') MB/s average," \
            "$(($(db_overflows "$dev") - ovf0)) doorbells lost here, all recovered"
    fi
    for t in write_lat send_lat; do
        vrun "${dev}$(echo $t | tr -d _)" 180 "ib_$t" -d "$dev" -F -n 1000
        row=$(perf_row "${dev}$(echo $t | tr -d _)" 2)
        [ -n "$row" ] || { cat "/tmp/${dev}$(echo $t | tr -d _).log"; fail "ib_$t: no result row"; }
        say "verbs $dev: ib_$t 2 B x1000: $(echo "$row" | awk '{print $5}') usec typical"
    done
}

# UCX (Debian's libucx0 and ucx-utils, scripts/lib/initramfs.sh): its
# rc_verbs transport, Open MPI's on InfiniBand, takes every receive from a
# shared receive queue (docs/shared-receive-queues.md).
ucx_tools() {
    dev=$1
    export UCX_MODULE_DIR=/usr/lib/x86_64-linux-gnu/ucx
    # Its shared memory transports look for /dev/shm.
    mkdir -p /dev/shm
    grep -q ' /dev/shm ' /proc/mounts || mount -t tmpfs shm /dev/shm
    # UCP registers pools of several MiB: more than the default 8 MiB of
    # locked memory.
    ulimit -l unlimited || fail "ulimit -l unlimited"
    ucx_info -d >/tmp/ucxinfo.log 2>&1 || { cat /tmp/ucxinfo.log; fail "ucx_info -d"; }
    for t in rc_verbs ud_verbs; do
        grep -A1 "Transport: $t\$" /tmp/ucxinfo.log | grep -q "Device: $dev:1" ||
            { cat /tmp/ucxinfo.log; fail "ucx_info -d: no $t on $dev:1"; }
    done
    say "ucx $dev: ucx_info -d lists rc_verbs and ud_verbs on $dev:1"
    # UCT level over rc_verbs: active messages (copied, 4 KiB, into the
    # receives of the SRQ), RDMA writes (zero-copy, 64 KiB), and the latency
    # of short active messages. TEST:DATA-LAYOUT:SIZE.
    for t in am_bw:bcopy:4096 put_bw:zcopy:65536 am_lat:short:8; do
        tt=${t%%:*} sz=${t##*:} dl=${t#*:}
        dl=${dl%:*}
        name="${dev}ucx$(echo "$tt" | tr -d _)"
        vrun "$name" 180 ucx_perftest -d "$dev:1" -x rc_verbs -t "$tt" -D "$dl" -s "$sz" -n 1000
        [ "$NODE" = 1 ] || grep -q '^Final:' "/tmp/$name.log" ||
            { cat "/tmp/$name.log"; fail "ucx_perftest -x rc_verbs -t $tt: no Final row"; }
        [ "$NODE" = 1 ] || say "ucx $dev: ucx_perftest rc_verbs $tt $dl $sz B x1000:" \
            "$(grep '^Final:' "/tmp/$name.log" | tr -s ' ')"
    done
    # UCP level (what Open MPI's pml ucx uses): tag matching over rc_verbs,
    # with ud_verbs for the wire-up UCP needs before the RC connection.
    name="${dev}ucxtag"
    vrun "$name" 180 env UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES="$dev:1" ucx_perftest -t tag_bw -s 65536 -n 500
    [ "$NODE" = 1 ] || grep -q '^Final:' "/tmp/$name.log" ||
        { cat "/tmp/$name.log"; fail "ucx_perftest -t tag_bw (UCX_TLS=rc_verbs,ud_verbs): no Final row"; }
    [ "$NODE" = 1 ] || say "ucx $dev: ucx_perftest UCP tag_bw (UCX_TLS=rc_verbs,ud_verbs) 64 KiB x500:" \
        "$(grep '^Final:' "/tmp/$name.log" | tr -s ' ')"
}

# bench_run NAME SIZE KEY CMD...: one benchmark tool (vtry, 300 s), its
# result row as "chpp-bench: KEY ROW"; a tool that fails or times out is
# reported as "chpp-bench: KEY failed rc=N" and the run goes on (the
# benchmark measures; the tests judge).
bench_run() {
    name=$1 sz=$2 key=$3
    shift 3
    for try in 1 2; do
        vtry "$name" 300 "$@"
        vrc=$?
        row=$(perf_row "$name" "$sz")
        # perftest's warnings (its CPU-frequency checks) go to the console.
        grep -iE 'warn|conflict|r\^2' "/tmp/$name.log" | head -n 3 |
            sed "s/^/chpp-bench-note: $key: /"
        # A row of zeros: perftest found no CPU frequency (its samples of
        # the clock correlated badly, r^2 < 0.9, under TCG on a busy
        # host). Both nodes print the client's row: both run it again.
        echo "$row" | awk '{ exit !(NF >= 5 && $4 == 0) }' || break
        say "chpp-bench-note: $key: a row of zeros (try $try)"
    done
    if [ $vrc = 0 ] && [ -n "$row" ]; then
        say "chpp-bench: $key $row"
    else
        tail -n 5 "/tmp/$name.log"
        say "chpp-bench: $key failed rc=$vrc"
    fi
}

# bench_sizes TOOL SIZE...: the message sizes TOOL is run with (an atomic
# is 8 bytes); bench_size_arg TOOL SIZE: perftest's size option for it.
bench_sizes() {
    case "$1" in atomic_*) echo 8 ;; *) shift; echo "$@" ;; esac
}
bench_size_arg() {
    case "$1" in atomic_*) ;; *) echo "-s $2" ;; esac
}

verbs_bench() {
    dev=$1 iters=$2
    shift 2
    # chpp.bench_only=T,...: only these tools (bench-verbs.sh --only).
    only=$(chpp_arg bench_only)
    # Message rate: -n messages per QP, several in flight (perftest's
    # default of 128 posted); MsgRate is the row's 5th column (Mpps).
    # chpp.duration=S: each run lasts S seconds instead (-D).
    # Atomics are 8 bytes (perftest refuses -s for them).
    dur=$(chpp_arg duration)
    for t in write_bw send_bw atomic_bw; do
        case ",${only:-$t}," in *",$t,"*) ;; *) continue ;; esac
        for q in 1 4; do
            for sz in $(bench_sizes "$t" 2 64); do
                name="b${dev}$(echo "$t" | tr -d _)s${sz}q$q"
                c0=$(transport_counters "$dev")
                bench_run "$name" "$sz" "$dev $t $sz $q" "ib_$t" -d "$dev" -F $(bench_size_arg "$t" "$sz") -q "$q" $(if [ -n "$dur" ]; then echo "-D $dur"; else echo "-n $iters"; fi) "$@"
                # perftest's inline size and depths; the requester's counters.
                inl=$(sed -n 's/.*Max inline data *: *\([0-9]*\).*/\1/p' "/tmp/$name.log" | head -n 1)
                txd=$(sed -n 's/.*TX depth *: *\([0-9]*\).*/\1/p' "/tmp/$name.log" | head -n 1)
                rxd=$(sed -n 's/.*RX depth *: *\([0-9]*\).*/\1/p' "/tmp/$name.log" | head -n 1)
                say "chpp-bench-info: $dev $t $sz $q inline=${inl:-?} tx_depth=${txd:-?} rx_depth=${rxd:--}${c0:+ before $c0 after $(transport_counters "$dev")}"
            done
        done
    done
    # Latency: one message at a time, t_typical the row's 5th column (t_avg
    # the 6th, the 99.9th percentile the 9th); chpp.lat_iters round trips.
    lat_iters=$(chpp_arg lat_iters)
    for t in write_lat read_lat send_lat atomic_lat; do
        case ",${only:-$t}," in *",$t,"*) ;; *) continue ;; esac
        for sz in $(bench_sizes "$t" 2 4096); do
            name="b${dev}$(echo "$t" | tr -d _)s$sz"
            bench_run "$name" "$sz" "$dev $t $sz 1" "ib_$t" -d "$dev" -F $(bench_size_arg "$t" "$sz") -n "${lat_iters:-2000}" "$@"
        done
    done
}

# mmio_bench: the guest's null MMIO exit (before the driver claims BAR0):
# reads and writes of the PF's scratch register, one "chpp-bench: mmio
# read_ns=R write_ns=W ..." line.
mmio_bench() {
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat "$d/vendor")" = "$(printf 0x%04x "$CHPP_PCI_VENDOR_ID")" ] &&
            [ "$(cat "$d/device")" = "$(printf 0x%04x "$CHPP_PCI_DEVICE_ID_PF")" ] || continue
        echo 1 >"$d/enable" || fail "enable $d"
        r=$(chpp-mmio-bench "$d/resource0" 200000) || fail "chpp-mmio-bench $d"
        echo 0 >"$d/enable"
        say "chpp-bench: mmio $r"
        return 0
    done
    fail "no chpp-hca PF for the MMIO baseline"
}

# ib_write_lat between two processes of this guest (server on vCPU 1,
# client on vCPU 0): the guest's clock is the virtual clock under -icount,
# so perftest's TSC reads count the device's timing model.
icount_bench() {
    dev=$1
    for sz in $(echo "$2" | tr ',' ' '); do
        VPORT=$((VPORT + 1))
        taskset 2 ib_write_lat -d "$dev" -F -n "${3:-1000}" -s "$sz" \
            -p "$VPORT" >"/tmp/ilatsrv$sz.log" 2>&1 &
        spid=$!
        w=0
        until listening "$VPORT"; do
            kill -0 $spid 2>/dev/null || break
            sleep 0.2; w=$((w + 1))
            [ $w -lt 300 ] || break
        done
        taskset 1 ib_write_lat -d "$dev" -F -n "${3:-1000}" -s "$sz" \
            -p "$VPORT" 127.0.0.1 >"/tmp/ilat$sz.log" 2>&1 || {
            cat "/tmp/ilat$sz.log" "/tmp/ilatsrv$sz.log"
            fail "ib_write_lat -s $sz (client) failed"
        }
        wait $spid || { cat "/tmp/ilatsrv$sz.log"; fail "ib_write_lat -s $sz (server) failed"; }
        row=$(perf_row "ilat$sz" "$sz")
        [ -n "$row" ] || { cat "/tmp/ilat$sz.log"; fail "ib_write_lat -s $sz: no result row"; }
        say "chpp-bench: icount write_lat $row"
        grep -i "inline\|mhz" "/tmp/ilat$sz.log" | sed 's/^/chpp-guest: perftest: /' | head -n 4
    done
}
