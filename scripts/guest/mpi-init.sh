# shellcheck shell=sh
# Sourced as /chpp/mpi-init.sh by /init (scripts/guest/pair-init.sh) in the
# paired driver guests with chpp.only=mpi (pair.sh --mpi): Debian's Open MPI
# (pml ucx over rc_verbs, ud_verbs for UCP's wire-up) with one rank per
# guest running chpp-mpi-test (guest-driver/mpi/), and ucx_perftest's UCP
# tests (tag matching, put, get; small and large), first on chpp-hca
# (chpp0), then in the same boot on soft-RoCE (rdma_rxe on the control
# network's virtio-net). Uses say, fail, fetch, wait_active, NODE, PEER,
# and vrun, listening of verbs-init.sh. docs/middleware.md.
#
# Launching without ssh: node 2 runs a tiny remote-shell listener on the
# control network (busybox nc -ll -e /bin/chpp-rshd: reads one command line,
# runs it with sh, its output back on the connection); node 1 runs mpirun
# with plm_rsh_agent=/bin/chpp-rsh, which sends the command line of orted
# there, as ssh would. Open MPI's own launcher, daemon (orted), PMIx and
# I/O forwarding then work unchanged.
#
#   mpi_setup           every node: names, passwd, limits, /dev/shm; the
#                       listener on every node but node 1 (chpp.nodes=N of the
#                       fabric's guests, scripts/guest/fabric-init.sh: N nodes)
#   mpi_run DEV [ARGS]  node 1: mpirun of chpp-mpi-test on DEV (ARGS: more mpirun
#                       options), result published to node 2 as /www/mpiDEV;
#                       node 2 waits for it
#   ucx_perf DEV LEVEL SPEC...  ucx_perftest UCT (rc_verbs) or UCP tests on DEV
#   ud_probe            UD on soft-RoCE: ibv_ud_pingpong, UCX ud_verbs
#   mpi_stage           all of it on chpp0, then soft-RoCE; the figures side by side

RSHD_PORT=8022

mpi_setup() {
    hostname "chpp-node$NODE"
    echo '127.0.0.1 localhost' >/etc/hosts
    for m in $(seq 1 "${NODES:-2}"); do echo "10.0.2.$m chpp-node$m" >>/etc/hosts; done
    printf 'passwd: files\ngroup: files\nhosts: files\n' >/etc/nsswitch.conf
    export HOME=/root TMPDIR=/tmp
    export UCX_MODULE_DIR=/usr/lib/x86_64-linux-gnu/ucx
    mkdir -p /dev/shm
    grep -q ' /dev/shm ' /proc/mounts || mount -t tmpfs shm /dev/shm
    # UCP registers pools of several MiB; inherited by the listener's
    # commands (orted and the rank on node 2).
    ulimit -l unlimited || fail "ulimit -l unlimited"
    # The remote shell of mpirun's rsh launcher (the agent, on node 1).
    printf '#!/bin/sh\n# chpp-rsh HOST CMD...: run CMD on HOST (ssh for plm_rsh)\nh=$(awk -v h="$1" '"'"'$2 == h { print $1 }'"'"' /etc/hosts)\n[ -n "$h" ] || h=$1\nshift\necho "$*" | exec nc "$h" %s\n' \
        "$RSHD_PORT" >/bin/chpp-rsh
    printf '#!/bin/sh\nread -r cmd\nexec sh -c "$cmd" 2>&1\n' >/bin/chpp-rshd
    chmod +x /bin/chpp-rsh /bin/chpp-rshd
    if [ "$NODE" != 1 ]; then
        nc -ll -p "$RSHD_PORT" -e /bin/chpp-rshd &
        w=0
        until listening "$RSHD_PORT"; do
            sleep 0.2; w=$((w + 1))
            [ $w -lt 100 ] || fail "chpp-rshd does not listen"
        done
        echo up >/www/rshd
    fi
    say "mpi: $(mpirun --allow-run-as-root --version 2>&1 | head -n 1)," \
        "launcher chpp-rsh (nodes 2..${NODES:-2} listen on port $RSHD_PORT)"
}

# mpi_run DEV [EXTRA-ENV...]: chpp-mpi-test, rank 0 on node 1, rank 1 on
# node 2, pml ucx on DEV:1 with rc_verbs (ud_verbs for the wire-up).
mpi_run() {
    dev=$1
    shift
    if [ "$NODE" = 2 ]; then
        fetch "mpi$dev" 900 || fail "mpi $dev: no result from node 1"
        grep -q PASS "/tmp/mpi$dev" || fail "mpi $dev: node 1 says $(cat "/tmp/mpi$dev")"
        say "mpi $dev: node 1 reports PASS (rank 1 ran here)"
        return 0
    fi
    fetch rshd 120 || fail "node 2's chpp-rshd never listened"
    set -- -x UCX_TLS=rc_verbs,ud_verbs,self -x "UCX_NET_DEVICES=$dev:1" -x UCX_MODULE_DIR "$@"
    timeout 600 mpirun --allow-run-as-root -np 2 --host chpp-node1,chpp-node2 --map-by node \
        --mca plm_rsh_agent /bin/chpp-rsh --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include 10.0.2.0/24 \
        --mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any \
        --mca osc ucx --mca btl self --mca coll ^hcoll \
        "$@" /bin/chpp-mpi-test >"/tmp/mpi-$dev.log" 2>&1
    rc=$?
    if [ $rc != 0 ] || ! grep -q '^chpp-mpi: PASS' "/tmp/mpi-$dev.log"; then
        echo FAIL >"/www/mpi$dev"
        cat "/tmp/mpi-$dev.log"
        fail "mpi $dev: mpirun chpp-mpi-test exited with $rc"
    fi
    echo PASS >"/www/mpi$dev"
    sed -n 's/^chpp-mpi: /mpi '"$dev"': /p' "/tmp/mpi-$dev.log" | while read -r l; do say "$l"; done
}

# ucx_perf DEV LEVEL SPEC...: ucx_perftest between the nodes on DEV:1,
# SPEC = TEST:SIZE:ITERATIONS[:DATA-LAYOUT]. LEVEL uct: the rc_verbs
# transport alone (-x rc_verbs; connected through ucx_perftest's own TCP
# socket, no UD); LEVEL ucp: the protocol layer Open MPI's pml ucx and osc
# ucx use, UCX_TLS=rc_verbs,ud_verbs (UD for UCP's wire-up). Figures on
# node 2 (the client) in /tmp/ucx-DEV.fig ("LEVEL TEST SIZE value unit"):
# both are the "overall" columns (the whole run's averages: latency in usec,
# bandwidth in MB/s); the "typical" latency of a run under TCG swings by an
# order of magnitude from boot to boot.
ucx_perf() {
    dev=$1 lvl=$2
    shift 2
    for t in "$@"; do
        tt=${t%%:*} r=${t#*:}
        sz=${r%%:*} r=${r#*:}
        n=${r%%:*} dl=
        [ "$r" = "$n" ] || dl=${r#*:}
        name="${dev}${lvl}$(echo "$tt" | tr -d _)$sz"
        if [ "$lvl" = uct ]; then
            vrun "$name" 300 ucx_perftest -d "$dev:1" -x rc_verbs -t "$tt" ${dl:+-D "$dl"} -s "$sz" -n "$n"
        else
            vrun "$name" 300 env UCX_TLS=rc_verbs,ud_verbs "UCX_NET_DEVICES=$dev:1" \
                ucx_perftest -t "$tt" -s "$sz" -n "$n"
        fi
        [ "$NODE" = 1 ] && continue
        fin=$(grep '^Final:' "/tmp/$name.log" | tr -s ' ')
        [ -n "$fin" ] || { cat "/tmp/$name.log"; fail "ucx_perftest ($lvl) -t $tt -s $sz on $dev: no Final row"; }
        # Final: iterations lat-typical lat-avg lat-overall bw-avg bw-overall mr-avg mr-overall
        case $tt in
            *lat) v=$(echo "$fin" | awk '{print $5}') u=usec ;;
            *) v=$(echo "$fin" | awk '{print $7}') u=MB/s ;;
        esac
        echo "$lvl $tt${dl:+/$dl} $sz $v $u" >>"/tmp/ucx-$dev.fig"
        say "ucx $dev: ucx_perftest $lvl $tt${dl:+ $dl} $sz B x$n: $fin"
    done
}

# UCT rc_verbs (both devices) and UCP (where UD works) test lists.
UCT_TESTS="am_lat:8:1000:short am_bw:4096:1000:bcopy put_bw:65536:500:zcopy put_bw:1048576:50:zcopy get:1048576:50:zcopy"
UCP_TESTS="tag_lat:8:1000 tag_lat:65536:200 tag_bw:8:1000 tag_bw:1048576:50 ucp_put_lat:8:1000 ucp_put_bw:4096:500 ucp_put_bw:1048576:50 ucp_get:4096:500 ucp_get:1048576:50"

# rxe_up: soft-RoCE on the control network; RXE_GIDX: the index of its
# IPv4 (RoCE v2) GID, the one perftest and UCX must use (UCX's own choice,
# the IPv6 link-local GID, times out UD's wire-up).
rxe_up() {
    rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
    wait_active 30 rxe0 || fail "rxe0 not ACTIVE"
    gid=$(grep -l "0000:0000:0000:0000:0000:ffff:0a00:020$NODE" \
          /sys/class/infiniband/rxe0/ports/1/gids/* | head -n 1)
    [ -n "$gid" ] || fail "rxe0 has no IPv4 GID"
    RXE_GIDX=${gid##*/}
    say "rxe0 ACTIVE on eth0, IPv4 GID index $RXE_GIDX"
}

# ud_probe: UD on soft-RoCE. ibv_ud_pingpong (rxe's UD QPs, IPv4 GID)
# works; UCX's ud_verbs (UCP's wire-up) times out unless its check of the
# destination GID in each received GRH is off (UCX_UD_ETH_DGID_CHECK=n): it
# drops every packet rxe delivers on the IPv4 GID (docs/middleware.md). The
# check on is only reported, the check off must work.
ud_probe() {
    if vtry rxe0udpp 120 ibv_ud_pingpong -d rxe0 -g "$RXE_GIDX" -s 512 -n 100; then
        RXE_UDPP=works
    else
        RXE_UDPP="fails ($?)"
    fi
    if vtry rxe0uctud 90 env UCX_IB_GID_INDEX="$RXE_GIDX" ucx_perftest -d rxe0:1 -x ud_verbs -t am_lat -n 100; then
        RXE_UCTUD=works
    else
        RXE_UCTUD="fails ($(grep -m1 -o 'Fatal: .*' /tmp/rxe0uctud.log || echo "exit status $?"))"
    fi
    vrun rxe0uctudn 120 env UCX_IB_GID_INDEX="$RXE_GIDX" UCX_UD_ETH_DGID_CHECK=n \
        ucx_perftest -d rxe0:1 -x ud_verbs -t am_lat -n 100
    say "ud probe rxe0: ibv_ud_pingpong $RXE_UDPP; UCX ud_verbs am_lat $RXE_UCTUD;" \
        "with UCX_UD_ETH_DGID_CHECK=n works"
}

# mpi_stage: all of it, chpp0 then rxe0, and the figures side by side.
# chpp.mpidevs=DEVS on the kernel command line: only those (e.g. rxe0).
mpi_stage() {
    devs=$(chpp_arg mpidevs)
    mpi_setup
    for d in ${devs:-chpp0 rxe0}; do
        case $d in
            chpp0)
                mpi_run chpp0
                # shellcheck disable=SC2086 # a list of specs
                ucx_perf chpp0 ucp $UCP_TESTS
                # shellcheck disable=SC2086 # a list of specs
                ucx_perf chpp0 uct $UCT_TESTS ;;
            rxe0)
                rxe_up
                ud_probe
                export UCX_IB_GID_INDEX="$RXE_GIDX" UCX_UD_ETH_DGID_CHECK=n
                mpi_run rxe0 -x UCX_IB_GID_INDEX -x UCX_UD_ETH_DGID_CHECK
                # shellcheck disable=SC2086 # a list of specs
                ucx_perf rxe0 ucp $UCP_TESTS
                # shellcheck disable=SC2086 # a list of specs
                ucx_perf rxe0 uct $UCT_TESTS
                unset UCX_IB_GID_INDEX UCX_UD_ETH_DGID_CHECK ;;
            *) fail "chpp.mpidevs: unknown device $d" ;;
        esac
    done
    # Each node prints its own table and is done: every ucx_perftest run
    # (vrun) ended on both nodes before.
    if [ "$NODE" = 1 ]; then
        say "table: chpp-mpi-test, chpp-hca | soft-RoCE (same boot, same guests; pml ucx, rc_verbs)"
        first=${devs:-chpp0}
        grep -E '^chpp-mpi: (latency|bandwidth|allreduce)' "/tmp/mpi-${first%% *}.log" 2>/dev/null |
            while read -r l; do
                k=$(echo "$l" | sed 's/: [0-9.]* [a-zA-Z/]*.*$//; s/^chpp-mpi: //')
                a=$(grep -F "chpp-mpi: $k: " /tmp/mpi-chpp0.log 2>/dev/null | sed 's/.*: \([0-9.]*\) \([a-zA-Z/]*\).*/\1 \2/')
                b=$(grep -F "chpp-mpi: $k: " /tmp/mpi-rxe0.log 2>/dev/null | sed 's/.*: \([0-9.]*\) \([a-zA-Z/]*\).*/\1 \2/')
                say "table: $k | ${a:--} | ${b:--}"
            done
        return 0
    fi
    # The figures side by side (node 2 ran the ucx_perftest clients).
    say "table: ucx_perftest, chpp-hca | soft-RoCE (same boot, same guests; UCT: rc_verbs alone," \
        "UCP: rc_verbs with ud_verbs wire-up)"
    cat /tmp/ucx-chpp0.fig /tmp/ucx-rxe0.fig 2>/dev/null | awk '{ print $1, $2, $3, $5 }' | awk '!seen[$0]++' |
        while read -r lvl tt sz u; do
            a=$(awk -v l="$lvl" -v t="$tt" -v s="$sz" '$1 == l && $2 == t && $3 == s { print $4 }' /tmp/ucx-chpp0.fig 2>/dev/null)
            b=$(awk -v l="$lvl" -v t="$tt" -v s="$sz" '$1 == l && $2 == t && $3 == s { print $4 }' /tmp/ucx-rxe0.fig 2>/dev/null)
            say "table: $lvl $tt $sz B ($u) | ${a:--} | ${b:--}"
        done
}
