# shellcheck shell=sh
# Sourced as /chpp/fabric-init.sh by /init (scripts/guest/pair-init.sh) in
# the guests of pair.sh --fabric (chpp.mode=fabric): N guests with node ids
# 1..N, each chpp-hca on one Ethernet segment, the control network
# (10.0.2.N, virtio-net) on another. Uses say, fail, finish, fetch, field,
# load_driver, CT and NODE of pair-init.sh; ends with finish.
#
#   chpp.nodes=N      the number of guests
#   chpp.stage=verbs  all-to-all kernel verbs: slot M of chpp_test (its
#                     debugfs slotM/) holds this node's RC QP to node M;
#                     every node connects one to every other node, then all
#                     QPs run chpp_test's "run" at once (SEND, RDMA WRITE,
#                     RDMA READ, atomics, WRITE_WITH_IMM both ways, every
#                     byte checked by its receiver); one line per ordered
#                     pair: "chpp-guest: pair A->B: PASS|FAIL ..."
#   chpp.stage=mpi    Open MPI (pml ucx on chpp0) with one rank per guest,
#                     mpirun on node 1 (mpi-init.sh's remote shell):
#                     chpp-mpi-test -c -q, a checked allreduce and
#                     all-to-all (-q: up to 64 Ki elements and 64 KiB per
#                     pair: every frame of the segment reaches every QEMU);
#                     node 1 says "chpp-guest: mpi job: PASS|FAIL ..."
#   chpp.rctimeout=T  the MPI job's UCX_RC_TIMEOUT (default 100ms, UCX's own
#                     1s: each frame the segment loses costs one timeout)
#
# What the nodes exchange on the control network (pair-init.sh's /www):
# node A's "infoB" is its slot B ("lid= qpn= rkey= addr="), fetched by node
# B; "ready" once all of A's slots are connected; "mpijob" (node 1) the MPI
# job's outcome; "alldone" at the end, when A stops serving its end.

NODES=$(chpp_arg nodes); STAGE=$(chpp_arg stage); MPI_RC_TIMEOUT=$(chpp_arg rctimeout)
: "${NODES:=4}" "${STAGE:=verbs}"

# The other nodes' ids.
others() {
    for m in $(seq 1 "$NODES"); do
        [ "$m" = "$NODE" ] || echo "$m"
    done
}

# from_node M FILE SECS: node M's /www/FILE into /tmp/FILE (fetch's retries).
from_node() {
    fn_peer=$PEER
    PEER=10.0.2.$1
    fetch "$2" "$3"
    fn_rc=$?
    PEER=$fn_peer
    return $fn_rc
}

# barrier NAME SECS: publish NAME and wait until every other node has.
barrier() {
    echo "$1" >"/www/$1"
    for m in $(others); do
        from_node "$m" "$1" "$2" || fail "node $m never reached '$1'"
    done
}

# The last barrier: this node's end stays up a little longer, for the
# others still fetching its "alldone".
alldone() {
    barrier alldone "$1"
    sleep 5
}

# Every other node answers on the control network (within SECS seconds).
reach_all() {
    for m in $(others); do
        w=0
        until ping -c 1 -W 1 "10.0.2.$m" >/dev/null 2>&1; do
            w=$((w + 1))
            [ $w -lt "$1" ] || fail "control network: no answer from node $m (10.0.2.$m)"
        done
    done
    say "control network: nodes $(others | tr '\n' ' ')answer"
}

fabric_verbs() {
    load_driver
    reach_all 120
    insmod "$CHPP_MODDIR/chpp_test.ko" || fail "insmod chpp_test"
    for m in $(others); do
        echo setup >"$CT/slot$m/ctl" || fail "chpp_test setup (slot $m)"
        cat "$CT/slot$m/info" >"/www/info$m"
    done
    for m in $(others); do
        from_node "$m" "info$NODE" 120 || fail "no QP info from node $m"
        P=$(cat "/tmp/info$NODE")
        [ "$(field "$P" lid)" = $((m + 1)) ] || fail "node $m's QP info has LID $(field "$P" lid)"
        echo "connect $(field "$P" lid) $(field "$P" qpn) $(field "$P" rkey | sed 's/^0x//')" \
             "$(field "$P" addr | sed 's/^0x//')" >"$CT/slot$m/ctl" || fail "connect to node $m"
    done
    say "QPs to nodes $(others | tr '\n' ' ')connected"
    barrier ready 120
    start=$(cut -d' ' -f1 /proc/uptime)
    # All at once: a slot's "run" waits for its peer's traffic, which the
    # peer sends while it runs its other slots too.
    pids=
    for m in $(others); do
        echo run >"$CT/slot$m/ctl" &
        pids="$pids $!"
    done
    # shellcheck disable=SC2086 # a list of PIDs (not the file server's)
    wait $pids
    end=$(cut -d' ' -f1 /proc/uptime)
    bad=
    for m in $(others); do
        r=$(cat "$CT/slot$m/result")
        say "pair $NODE->$m: ${r:-FAIL no result}"
        case "$r" in PASS*) ;; *) bad="$bad $m" ;; esac
    done
    say "all-to-all: $((NODES - 1)) QPs ran at once in $(awk "BEGIN{print $end - $start}") s"
    # Our end stays until every peer is done with its traffic to us.
    alldone 300
    for m in $(others); do echo teardown >"$CT/slot$m/ctl"; done
    rmmod chpp_test || fail "rmmod chpp_test"
    rmmod chpp_hca || fail "rmmod chpp_hca"
    [ -z "$bad" ] || fail "all-to-all: traffic with node(s)$bad failed"
    if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
        fail "kernel log has warnings or device errors"
    fi
    finish PASS "node $NODE: all-to-all kernel verbs with $((NODES - 1)) peers at once, bytes verified"
}

fabric_mpi() {
    [ -f /chpp/mpi-init.sh ] || fail "no /chpp/mpi-init.sh: boot with pair.sh --fabric --stage mpi"
    . /chpp/verbs-init.sh
    . /chpp/mpi-init.sh
    load_driver
    reach_all 120
    mpi_setup
    if [ "$NODE" != 1 ]; then
        from_node 1 mpijob 900 || fail "no MPI job outcome from node 1"
        grep -q PASS /tmp/mpijob || fail "MPI job: node 1 says $(cat /tmp/mpijob)"
        alldone 120
        finish PASS "node $NODE: rank $((NODE - 1)) of the MPI job ran here; node 1 reports PASS"
    fi
    hosts=
    for m in $(others); do
        from_node "$m" rshd 120 || fail "node $m's chpp-rshd never listened"
        hosts="$hosts,chpp-node$m"
    done
    start=$(cut -d' ' -f1 /proc/uptime)
    timeout 600 mpirun --allow-run-as-root -np "$NODES" --host "chpp-node1$hosts" --map-by node \
        --mca plm_rsh_agent /bin/chpp-rsh --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include 10.0.2.0/24 \
        --mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any \
        --mca osc ucx --mca btl self --mca coll ^hcoll \
        -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=chpp0:1 -x UCX_MODULE_DIR \
        -x UCX_RC_TIMEOUT=${MPI_RC_TIMEOUT:-100ms} \
        /bin/chpp-mpi-test -c -q >/tmp/mpi-fabric.log 2>&1
    rc=$?
    end=$(cut -d' ' -f1 /proc/uptime)
    sed -n 's/^chpp-mpi: /mpi: /p' /tmp/mpi-fabric.log | while read -r l; do say "$l"; done
    if [ $rc != 0 ] || ! grep -q '^chpp-mpi: PASS' /tmp/mpi-fabric.log; then
        echo FAIL >/www/mpijob
        echo "mpirun's output ($(wc -c </tmp/mpi-fabric.log) bytes):"
        cat /tmp/mpi-fabric.log
        free
        dmesg | tail -n 30
        say "mpi job: FAIL mpirun exited with $rc"
        alldone 120
        fail "MPI job across $NODES guests"
    fi
    echo PASS >/www/mpijob
    say "mpi job: PASS $NODES ranks on $NODES guests, pml ucx on chpp0," \
        "$(sed -n 's/^chpp-mpi: PASS //p' /tmp/mpi-fabric.log) (allreduce, alltoall)" \
        "in $(awk "BEGIN{print $end - $start}") s"
    alldone 120
    finish PASS "node 1: MPI job across $NODES guests"
}

case "$STAGE" in
    verbs) fabric_verbs ;;
    mpi) fabric_mpi ;;
    *) fail "chpp.stage=$STAGE: verbs or mpi" ;;
esac
