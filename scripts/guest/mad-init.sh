# shellcheck shell=sh
# Sourced as /chpp/mad-init.sh by /init (scripts/guest/pair-init.sh) in the
# paired driver guests: management datagrams (docs/management-datagrams.md)
# with Debian's infiniband-diags and opensm, unmodified. Uses say, fail,
# fetch, port_state, NODE and PEER from pair-init.sh and its file server in
# /www.
#
#   mad_stage   chpp_hca with wait_sm=1: the ports wait in INIT. ibstat,
#               ibv_devinfo, smpquery nodeinfo/portinfo/nodedesc (directed
#               route to this port and to the peer's), perfquery. Node 1
#               then runs opensm as SM and SA; both ports must go ACTIVE
#               with node 1's LID as SM LID and their node-derived LIDs,
#               ibnetdiscover must show both nodes, sminfo and saquery
#               must answer from node 1's SM (LID-routed, over the link).

# mad_wait_state STATE SECS: until port 1 of chpp0 reads STATE.
mad_wait_state() {
    w=0
    while [ $w -lt "$2" ]; do
        case "$(port_state)" in *"$1"*) return 0 ;; esac
        sleep 1; w=$((w + 1))
    done
    return 1
}

# mad_run NAME CMD...: CMD's output in /tmp/NAME.log; on failure the log
# goes to the console and the stage fails.
mad_run() {
    name=$1
    shift
    timeout 60 "$@" >"/tmp/$name.log" 2>&1 || {
        cat "/tmp/$name.log"
        fail "$name: '$*' failed"
    }
}

mad_stage() {
    mkdir -p /var/log /var/cache/opensm /run /etc/opensm
    insmod "$CHPP_MODDIR/chpp_hca.ko" global_rkey_atomic=1 wait_sm=1 ||
        fail "insmod chpp_hca wait_sm=1"
    mad_wait_state INIT 60 || fail "port not INIT before the SM: '$(port_state)'"
    lid=$(($(cat /sys/class/infiniband/chpp0/ports/1/lid)))
    [ "$lid" = $((NODE + 1)) ] || fail "LID $lid before the SM, expected $((NODE + 1))"
    guid=$(cat /sys/class/infiniband/chpp0/node_guid | tr -d :)
    say "mad: chpp0 port 1 $(port_state) LID $lid, node GUID $guid"

    # Without an SM: the tools see the port in INIT.
    mad_run ibstat ibstat chpp0
    grep -q 'State: Initializing' /tmp/ibstat.log || { cat /tmp/ibstat.log; fail "ibstat: not Initializing"; }
    grep -q "Base lid: $lid" /tmp/ibstat.log || { cat /tmp/ibstat.log; fail "ibstat: base lid"; }
    grep -q 'Link layer: InfiniBand' /tmp/ibstat.log || fail "ibstat: link layer"
    say "mad: ibstat before the SM: $(grep -E 'State:|Physical state:|Base lid:|SM lid:' /tmp/ibstat.log | tr -s ' \t' ' ' | tr '\n' ',')"
    mad_run devinfo ibv_devinfo -d chpp0
    grep -q 'state:.*PORT_INIT' /tmp/devinfo.log || { cat /tmp/devinfo.log; fail "ibv_devinfo: not PORT_INIT"; }

    # SMPs by directed route: to this port (hop 0, answered through
    # process_mad and MAD_IFC), and one hop out, to the peer's.
    mad_run ni0 smpquery -C chpp0 -D nodeinfo 0
    grep -qi "guid.*0x$guid" /tmp/ni0.log || { cat /tmp/ni0.log; fail "smpquery nodeinfo: not our GUID"; }
    grep -q 'NodeType:.*Channel Adapter' /tmp/ni0.log || { cat /tmp/ni0.log; fail "smpquery nodeinfo: NodeType"; }
    mad_run pi0 smpquery -C chpp0 -D portinfo 0
    grep -q "^Lid:\.*$lid\$" /tmp/pi0.log || { cat /tmp/pi0.log; fail "smpquery portinfo: LID"; }
    grep -q 'LinkState:.*Initialize' /tmp/pi0.log || { cat /tmp/pi0.log; fail "smpquery portinfo: LinkState"; }
    mad_run nd0 smpquery -C chpp0 -D nodedesc 0
    # Both nodes up to here: the link is up, the peer's port answers.
    echo up >"/www/madup"
    fetch madup 180 || fail "the peer never came up"
    mad_run ni1 smpquery -C chpp0 -D nodeinfo 0,1
    peer_guid=$(sed -n 's/^Guid:\.*0x\(.*\)/\1/p' /tmp/ni1.log)
    [ "$peer_guid" = "$(printf '434850500000%04x' $((3 - NODE)))" ] ||
        { cat /tmp/ni1.log; fail "smpquery nodeinfo 0,1: peer GUID '$peer_guid'"; }
    mad_run pi1 smpquery -C chpp0 -D portinfo 0,1
    grep -q "^Lid:\.*$((3 - NODE + 1))\$" /tmp/pi1.log || { cat /tmp/pi1.log; fail "smpquery portinfo 0,1: the peer's LID"; }
    mad_run pq perfquery -C chpp0 "$lid" 1
    grep -q 'PortXmitPkts' /tmp/pq.log || { cat /tmp/pq.log; fail "perfquery"; }
    say "mad: smpquery -D: nodeinfo/portinfo/nodedesc here, nodeinfo/portinfo of the peer (GUID $peer_guid); perfquery (LID-routed over QP1) $(grep -E 'PortXmitPkts|PortRcvPkts' /tmp/pq.log | tr -s '.' ' ' | tr '\n' ' ')"
    echo ready >"/www/madready"
    fetch madready 120 || fail "the peer never got ready for the SM"

    # Node 1 is the SM and SA; both ports must go ACTIVE.
    if [ "$NODE" = 1 ]; then
        opensm -g "0x$guid" -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &
        sm_pid=$!
    fi
    mad_wait_state ACTIVE 90 || {
        [ "$NODE" = 1 ] && tail -n 40 /tmp/opensm.log
        fail "port not ACTIVE after opensm: '$(port_state)'"
    }
    sm_lid=$(($(cat /sys/class/infiniband/chpp0/ports/1/sm_lid)))
    lid2=$(($(cat /sys/class/infiniband/chpp0/ports/1/lid)))
    [ "$sm_lid" = 2 ] || fail "SM LID $sm_lid, expected node 1's LID 2"
    [ "$lid2" = "$lid" ] || fail "the SM moved the LID from $lid to $lid2"
    mad_run ibstat2 ibstat chpp0
    grep -q 'State: Active' /tmp/ibstat2.log || { cat /tmp/ibstat2.log; fail "ibstat: not Active"; }
    grep -q 'SM lid: 2' /tmp/ibstat2.log || { cat /tmp/ibstat2.log; fail "ibstat: SM lid"; }
    say "mad: ibstat with opensm: $(grep -E 'State:|Physical state:|Base lid:|SM lid:|Capability mask:' /tmp/ibstat2.log | tr -s ' \t' ' ' | tr '\n' ',')"
    mad_run sminfo sminfo -C chpp0
    grep -q 'sm lid 2 ' /tmp/sminfo.log || { cat /tmp/sminfo.log; fail "sminfo"; }
    mad_run ibnd ibnetdiscover -C chpp0
    for n in 1 2; do
        grep -q "$(printf '0x434850500000%04x' $n)" /tmp/ibnd.log ||
            { cat /tmp/ibnd.log; fail "ibnetdiscover: node $n missing"; }
    done
    say "mad: ibnetdiscover: $(grep -c '^Ca' /tmp/ibnd.log) CAs: $(grep '^Ca' /tmp/ibnd.log | sed 's/.*# //' | tr '\n' ';')"
    # The SA, LID-routed over QP1: its record of this port.
    mad_run saq saquery -C chpp0 NodeRecord
    grep -qi "0x$guid" /tmp/saq.log || { cat /tmp/saq.log; fail "saquery NodeRecord: not our node"; }
    say "mad: saquery: $(grep -c 'NodeRecord dump' /tmp/saq.log) node records from the SA; sminfo: $(cat /tmp/sminfo.log)"
    if [ "$NODE" = 1 ]; then
        say "mad: opensm: $(grep -E 'SUBNET UP|Entering MASTER' /tmp/opensm.log | tr -s ' ' | cut -c1-120 | tr '\n' ';')"
    fi
    echo done >"/www/maddone"
    fetch maddone 120 || fail "the peer did not finish the MAD stage"
    sleep 3     # keep serving "maddone" until the peer has seen ours
    [ "$NODE" = 1 ] && kill "$sm_pid" 2>/dev/null
    if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused'; then
        fail "kernel log of the MAD stage"
    fi
}

# mad_extra_modules: the middleware modules pair.sh left out of load.list
# (ib_cm, ib_ipoib, rdma_cm, rdma_ucm and what they need), in order.
mad_extra_modules() {
    while read -r m; do
        [ -d "/sys/module/$(echo "$m" | tr - _)" ] && continue
        insmod "$CHPP_MODDIR/$m.ko" || fail "insmod $m"
    done <"$CHPP_MODDIR/extra.list"
}

# mad_sm_up TAG: chpp_hca waiting for the SM, opensm on node 1 (with an
# IPoIB broadcast group of 4 KiB MTU at the port's rate), both ports ACTIVE.
mad_sm_up() {
    mkdir -p /var/log /var/cache/opensm /run /etc/opensm
    insmod "$CHPP_MODDIR/chpp_hca.ko" global_rkey_atomic=1 wait_sm=1 ||
        fail "insmod chpp_hca wait_sm=1"
    mad_wait_state INIT 60 || fail "port not INIT before the SM: '$(port_state)'"
    echo up >"/www/${1}up"
    fetch "${1}up" 180 || fail "the peer never came up"
    if [ "$NODE" = 1 ]; then
        guid=$(cat /sys/class/infiniband/chpp0/node_guid | tr -d :)
        echo 'Default=0x7fff, ipoib, mtu=5, rate=2, defmember=full : ALL=full;' \
            >/etc/opensm/partitions.conf
        opensm -g "0x$guid" -P /etc/opensm/partitions.conf -f /tmp/opensm.log \
            >/tmp/opensm.out 2>&1 &
        sm_pid=$!
    fi
    mad_wait_state ACTIVE 90 || {
        [ "$NODE" = 1 ] && tail -n 40 /tmp/opensm.log
        fail "port not ACTIVE after opensm: '$(port_state)'"
    }
}

# mad_sm_down TAG: both nodes done, then opensm stops.
mad_sm_down() {
    echo done >"/www/${1}done"
    fetch "${1}done" 300 || fail "the peer did not finish the $1 stage"
    sleep 3     # keep serving "done" until the peer has seen ours
    [ "$NODE" = 1 ] && kill "$sm_pid" 2>/dev/null
}

IB_PEER=10.0.3.$((3 - NODE))

# ipoib_up: ib0 on chpp0 joins the broadcast group through opensm's SA
# (ATTACH_MCG), gets carrier on both nodes, and pings the peer.
ipoib_up() {
    w=0
    until [ -e /sys/class/net/ib0 ]; do
        sleep 1; w=$((w + 1)); [ $w -lt 30 ] || fail "no ib0"
    done
    ip addr add "10.0.3.$NODE/24" dev ib0 || fail "ip addr add on ib0"
    ip link set ib0 up || fail "ip link set ib0 up"
    w=0
    until [ "$(cat /sys/class/net/ib0/carrier 2>/dev/null)" = 1 ]; do
        sleep 1; w=$((w + 1))
        [ $w -lt 90 ] || { ip link show ib0; dmesg | grep -i ipoib | tail; fail "ib0 has no carrier"; }
    done
    say "ipoib: ib0 carrier after ${w}s, MTU $(cat /sys/class/net/ib0/mtu), $(ip -o link show ib0 | sed 's/.*state \([A-Z]*\).*/\1/')"
    echo up >/www/ib0up
    fetch ib0up 120 || fail "the peer's ib0 never came up"
    timeout 60 ping -c 5 -W 5 "$IB_PEER" >/tmp/ping.log 2>&1 || { cat /tmp/ping.log; fail "ping $IB_PEER over ib0"; }
    say "ipoib: $(grep -E 'packets transmitted|round-trip' /tmp/ping.log | tr '\n' ';')"
}

# ipoib_stage: IPoIB between the nodes (ping, also of 3000 bytes).
ipoib_stage() {
    mad_extra_modules
    mad_sm_up ipoib
    ipoib_up
    timeout 60 ping -c 3 -s 3000 -W 5 "$IB_PEER" >/tmp/ping2.log 2>&1 || { cat /tmp/ping2.log; fail "ping -s 3000 $IB_PEER over ib0"; }
    say "ipoib: 3000-byte pings: $(grep -E 'packets transmitted' /tmp/ping2.log)"
    mad_sm_down ipoib
    if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused'; then
        fail "kernel log of the IPoIB stage"
    fi
}

# cm_run NAME SECS SERVER-CMD -- CLIENT-CMD: node 1 runs the server (in
# the background, published as /www/NAME once it had 2 s to listen), node
# 2 the client once it sees NAME; each one's output in /tmp/NAME.log.
cm_run() {
    name=$1 secs=$2
    shift 2
    srv="" cli=""
    while [ "$1" != -- ]; do srv="$srv $1"; shift; done
    shift
    cli="$*"
    if [ "$NODE" = 1 ]; then
        # shellcheck disable=SC2086
        timeout "$secs" $srv >"/tmp/$name.log" 2>&1 &
        cpid=$!
        sleep 2
        echo up >"/www/$name"
        wait $cpid
    else
        fetch "$name" 120 || fail "$name: the server never started"
        # shellcheck disable=SC2086
        timeout "$secs" $cli >"/tmp/$name.log" 2>&1
    fi
    crc=$?
    if [ $crc != 0 ]; then
        cat "/tmp/$name.log"
        fail "$name: exited with $crc"
    fi
}

# rdmacm_stage: rdma_cm over IPoIB addresses, the IB CM over QP1 MADs and
# SA path records: rping, ucmatose and ib_write_bw -R between the nodes.
rdmacm_stage() {
    mad_extra_modules
    mad_sm_up rdmacm
    ipoib_up
    srv_ip=10.0.3.1
    cm_run rping 90 rping -s -a "$srv_ip" -v -C 10 -- rping -c -a "$srv_ip" -v -C 10
    [ "$(grep -c 'ping data' /tmp/rping.log)" -ge 10 ] || { cat /tmp/rping.log; fail "rping: fewer than 10 pings"; }
    say "rdmacm: rping -C 10: $(grep -c 'ping data' /tmp/rping.log) pings verified, $(tail -n 1 /tmp/rping.log)"
    cm_run ucmatose 90 ucmatose -- ucmatose -s "$srv_ip"
    grep -q 'test complete' /tmp/ucmatose.log || { cat /tmp/ucmatose.log; fail "ucmatose: no 'test complete'"; }
    say "rdmacm: ucmatose: $(grep -E 'connect|data transfers|disconnect|complete' /tmp/ucmatose.log | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
    cm_run wbw 120 ib_write_bw -R -d chpp0 -n 500 -s 65536 -- ib_write_bw -R -d chpp0 -n 500 -s 65536 "$srv_ip"
    row=$(awk '$1 == 65536 && NF >= 4' /tmp/wbw.log | tail -n 1)
    [ -n "$row" ] || { cat /tmp/wbw.log; fail "ib_write_bw -R: no result row"; }
    say "rdmacm: ib_write_bw -R 64 KiB x500: $(echo "$row" | awk '{print $4 " MB/s average"}')"
    mad_sm_down rdmacm
    if dmesg | grep -E 'WARNING:|BUG:|Oops|guest error|refused'; then
        fail "kernel log of the rdma_cm stage"
    fi
}

# nvme_stage: NVMe over RDMA (docs/management-datagrams.md#nvme-over-rdma):
# node 1 exports a RAM disk (brd's /dev/ram0) through nvmet-rdma on 10.0.3.1,
# node 2 connects with nvme-cli (nvme-rdma: fast registration, SEND_INV),
# writes a 1 MiB pattern, reads it back uncached, and disconnects.
nvme_stage() {
    mad_extra_modules
    mad_sm_up nvme
    ipoib_up
    cfg=/sys/kernel/config
    mount -t configfs none "$cfg" 2>/dev/null
    if [ "$NODE" = 1 ]; then
        # brd came with the other modules: /dev/ram0 is a RAM disk.
        [ -b /dev/ram0 ] || fail "no /dev/ram0 (brd)"
        sub=$cfg/nvmet/subsystems/chpp-nvme
        mkdir "$sub" && echo 1 >"$sub/attr_allow_any_host" &&
            mkdir "$sub/namespaces/1" &&
            echo -n /dev/ram0 >"$sub/namespaces/1/device_path" &&
            echo 1 >"$sub/namespaces/1/enable" &&
            mkdir "$cfg/nvmet/ports/1" &&
            echo 10.0.3.1 >"$cfg/nvmet/ports/1/addr_traddr" &&
            echo rdma >"$cfg/nvmet/ports/1/addr_trtype" &&
            echo 4420 >"$cfg/nvmet/ports/1/addr_trsvcid" &&
            echo ipv4 >"$cfg/nvmet/ports/1/addr_adrfam" &&
            ln -s "$sub" "$cfg/nvmet/ports/1/subsystems/chpp-nvme" ||
            fail "nvmet configuration"
        say "nvme: target chpp-nvme on rdma 10.0.3.1:4420, namespace 1 = /dev/ram0 ($(($(cat /sys/block/ram0/size) / 2048)) MiB)"
        echo up >/www/nvmetarget
        fetch nvmehost 300 || fail "the host never finished"
    else
        fetch nvmetarget 120 || fail "the target never came up"
        mkdir -p /etc/nvme
        # The host id is the uuid of the host NQN: 6.12 refuses a host id
        # that another host NQN (the kernel's default host) already has, and
        # nvme-cli would otherwise derive it from the machine, as the kernel does.
        hostid=00000000-0000-4000-8000-00000000c4a2
        hostnqn=nqn.2014-08.org.nvmexpress:uuid:$hostid
        echo "$hostnqn" >/etc/nvme/hostnqn
        echo "$hostid" >/etc/nvme/hostid
        timeout 120 nvme connect -t rdma -a 10.0.3.1 -s 4420 -n chpp-nvme \
            --hostnqn="$hostnqn" --hostid="$hostid" --queue-size=32 --nr-io-queues=1 \
            >/tmp/nvme-connect.log 2>&1 ||
            { cat /tmp/nvme-connect.log; dmesg | grep -i nvme | tail; fail "nvme connect"; }
        w=0
        until [ -b /dev/nvme0n1 ]; do
            sleep 1; w=$((w + 1)); [ $w -lt 30 ] || fail "no /dev/nvme0n1"
        done
        say "nvme: connected: $(cat /sys/class/nvme/nvme0/transport) $(cat /sys/class/nvme/nvme0/subsysnqn), /dev/nvme0n1 $(($(cat /sys/block/nvme0n1/size) / 2048)) MiB"
        # A 1 MiB pattern, written in 64 KiB I/Os (16 pages each: fast
        # registration), then read back past the page cache.
        i=0
        while [ $i -lt 256 ]; do
            printf 'chpp-nvme block %08d ' "$i"
            head -c 4071 /dev/zero | tr '\0' "$(printf "\\$(printf '%03o' $((65 + i % 26)))")"
            i=$((i + 1))
        done >/tmp/pattern
        [ "$(wc -c </tmp/pattern)" = 1048576 ] || fail "pattern size $(wc -c </tmp/pattern)"
        timeout 60 dd if=/tmp/pattern of=/dev/nvme0n1 bs=65536 count=16 conv=fsync 2>/tmp/dd-w.log ||
            { cat /tmp/dd-w.log; fail "dd to /dev/nvme0n1"; }
        echo 3 >/proc/sys/vm/drop_caches
        timeout 60 dd if=/dev/nvme0n1 of=/tmp/readback bs=65536 count=16 2>/tmp/dd-r.log ||
            { cat /tmp/dd-r.log; fail "dd from /dev/nvme0n1"; }
        cmp /tmp/pattern /tmp/readback || fail "the pattern read back differs"
        say "nvme: 1 MiB pattern written (64 KiB I/Os, fsync) and read back uncached: identical; write: $(tail -n 1 /tmp/dd-w.log); read: $(tail -n 1 /tmp/dd-r.log)"
        timeout 60 nvme disconnect -n chpp-nvme >/tmp/nvme-dis.log 2>&1 ||
            { cat /tmp/nvme-dis.log; fail "nvme disconnect"; }
        [ -e /dev/nvme0n1 ] && fail "/dev/nvme0n1 still there after disconnect"
        say "nvme: $(cat /tmp/nvme-dis.log)"
        echo done >/www/nvmehost
    fi
    mad_sm_down nvme
    # Disconnecting drains the queues: their receives are flushed.
    if dmesg | grep -v '(WR flushed)' |
            grep -E 'WARNING:|BUG:|Oops|guest error|refused|error completion'; then
        fail "kernel log of the NVMe stage"
    fi
}
