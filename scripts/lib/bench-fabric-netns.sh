#!/usr/bin/env bash
# bench.sh --fabric-netns [dgram|tap] [fabric-bench args...]: the fabric
# benchmark (chpp-hca-fabric-bench) with every node's QEMU in its own
# network namespace, a stand-in for a host, joined by a Linux bridge in a
# namespace of its own (the switch); nothing changes in this machine's own
# namespace. Each host namespace gets an "eth0" (a veth whose other end is
# a port of the switch bridge) with 10.77.0.<node>/24. Every link has MTU
# 9000: a frame with 4 KiB of payload is 4218 bytes on the wire.
#   dgram: QEMU's -netdev dgram multicast on 239.255.77.1, sent and joined
#          on eth0 (the switch floods it to every host)
#   tap:   in each host, a bridge joins eth0 and a tap the QEMU opens
#          (-netdev tap), as a cluster host bridges its VMs: the cHPP
#          Ethernet frames themselves cross the switch, which learns the
#          nodes' MAC addresses
# Needs root (ip netns). Namespaces are named chppfab<pid>-sw and
# chppfab<pid>-h<node> and removed on exit.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

mode=dgram
if [ "${1:-}" = dgram ] || [ "${1:-}" = tap ]; then
    mode=$1
    shift
fi
[ "$(id -u)" = 0 ] || chpp_die "--fabric-netns needs root (ip netns)"
command -v ip >/dev/null || chpp_die "no ip (iproute2; scripts/setup.sh installs it)"

# The largest node count asked for (--nodes), 16 by default.
hosts=16
args=("$@")
for ((k = 0; k < ${#args[@]}; k++)); do
    if [ "${args[k]}" = --nodes ] && [ $((k + 1)) -lt ${#args[@]} ]; then
        hosts=$(tr ',' '\n' <<<"${args[k + 1]}" | sort -n | tail -1)
    fi
done
[ "$hosts" -ge 2 ] && [ "$hosts" -le 16 ] || chpp_die "--nodes: 2..16"

pfx="chppfab$$"
cleanup() {
    local ns
    for ns in $(ip netns list | awk '{print $1}' | grep "^$pfx-" || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap cleanup EXIT

chpp_log "namespaces: $pfx-sw (bridge br0) and $pfx-h1..h$hosts ($mode)"
ip netns add "$pfx-sw"
# Jumbo frames: a cHPP frame of 4 KiB payload is a 4218-byte Ethernet frame.
mtu=9000
ip -n "$pfx-sw" link add br0 mtu $mtu type bridge mcast_snooping 0
ip -n "$pfx-sw" link set br0 up
for ((h = 1; h <= hosts; h++)); do
    ns="$pfx-h$h"
    ip netns add "$ns"
    ip -n "$pfx-sw" link add "p$h" mtu $mtu type veth peer name eth0 \
        netns "$ns" mtu $mtu
    ip -n "$pfx-sw" link set "p$h" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.77.0.$h/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ "$mode" = tap ]; then
        ip -n "$ns" tuntap add dev tap0 mode tap
        ip -n "$ns" link set tap0 mtu $mtu
        ip -n "$ns" link add hbr mtu $mtu type bridge
        ip -n "$ns" link set eth0 master hbr
        ip -n "$ns" link set tap0 master hbr
        ip -n "$ns" link set tap0 up
        ip -n "$ns" link set hbr up
    fi
done

if [ "$mode" = tap ]; then
    netdev="-netdev tap,id=fab,ifname=tap0,script=no,downscript=no"
    label="Hosts: one network namespace per node, a bridge per host joins its tap and eth0 (a veth), a bridge in a switch namespace joins the hosts"
else
    netdev="-netdev dgram,id=fab,remote.type=inet,remote.host=239.255.77.1,remote.port=7700,local.type=inet,local.host=10.77.0.%d,local.port=0"
    label="Hosts: one network namespace per node, eth0 (a veth) on a bridge in a switch namespace; multicast sent and joined on eth0"
fi
cd "$CHPP_QEMU_BUILD"
# Not exec: the trap removes the namespaces afterwards.
"$CHPP_QEMU_BUILD/tests/qtest/chpp-hca-fabric-bench" \
    --netdev "$netdev" --wrap "ip netns exec $pfx-h%d" --label "$label" "$@"
