#!/usr/bin/env bash
# Debug the guest driver with gdb: boot a guest (scripts/pair.sh) stopped
# with QEMU's gdbstub and nokaslr, attach gdb, run until the kernel loads
# guest-driver/chpp_hca.ko and stop there, before its init function (and so
# before probe), with the module's symbols loaded at its addresses
# (scripts/gdb/chpp-guest.py). No kernel debug image is needed; when
# Debian's linux-image-<version>-dbg is installed its vmlinux is loaded too.
#
#   scripts/gdb-guest.sh [options] [-- pair.sh options]
#
#   --node N          debug node N (1 or 2) of a two-guest pair
#                     (default: one guest, pair.sh --single)
#   --batch FILE      run the gdb commands in FILE in batch mode, then quit
#                     (default: the gdb prompt, on this terminal)
#   --no-wait         stop at the guest's first instruction instead
#                     (later: chpp-load-module --wait or chpp-load-module)
#   --kargs S         extra guest kernel arguments (nokaslr is always added)
#   --kernel K        guest kernel (pair.sh --kernel: 6.12, 6.1, a release or
#                     an image; default: the default guest kernel)
#
# pair.sh options after "--", e.g. "-- --notest" (only load the driver) or
# "-- --loops 0". Without --batch the guest has no time limit (pair.sh
# --timeout 0). The console is in build/guest/<single|pair>-nodeN.log and
# pair.sh's own output in build/guest/gdb-guest.log.
#
# Kernel symbols: gdb needs the addresses of three kernel symbols (modules,
# do_init_module, linux_banner), with or without vmlinux. With nokaslr they are
# the same in every boot of one kernel image, so a first guest boot reads
# them from /proc/kallsyms (about 15 s) and they are kept in
# build/guest/ksyms-<kernel version>-<image hash>.map.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

NODE=0 BATCH="" WAIT=1 KARGS="" KSPEC=""
PAIR_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --node) NODE=$2; shift ;;
        --batch) BATCH=$2; shift ;;
        --no-wait) WAIT=0 ;;
        --kargs) KARGS=$2; shift ;;
        --kernel) KSPEC=$2; shift ;;
        --) shift; PAIR_ARGS=("$@"); break ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) chpp_die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
case "$NODE" in 0|1|2) ;; *) chpp_die "--node is 1 or 2" ;; esac
[ -z "$BATCH" ] || [ -r "$BATCH" ] || chpp_die "cannot read $BATCH"
command -v gdb >/dev/null || chpp_die "gdb is missing (scripts/setup.sh installs it)"

GUEST="$CHPP_BUILD/guest"
mkdir -p "$GUEST"
chpp_guest_kernel "$KSPEC"
KERNEL=$CHPP_KERNEL KVER=$CHPP_KVER
# chpp-load-module's default module: the one built for this kernel
CHPP_GUEST_KO="$(chpp_guest_kmod_dir "$KVER")/chpp_hca.ko"
export CHPP_GUEST_KO
VMLINUX=/usr/lib/debug/boot/vmlinux-$KVER     # linux-image-$KVER-dbg, optional

GDB_ARGS=(-q -nx -ex 'set pagination off' -x "$CHPP_ROOT/scripts/gdb/chpp-guest.py")
if [ -r "$VMLINUX" ]; then
    chpp_log "kernel symbols and types from $VMLINUX"
    GDB_ARGS+=(-ex "file $VMLINUX")
fi
# --- the three kernel addresses, from one boot of this kernel image -------------
# (also with vmlinux: a name like `modules` can be ambiguous there)
KSYMS="$GUEST/ksyms-$KVER-$(sha256sum "$KERNEL" | cut -c1-12).map"
if [ ! -s "$KSYMS" ]; then
    chpp_log "reading kernel symbol addresses from a guest boot (once per kernel)"
    "$CHPP_ROOT/scripts/pair.sh" --single --timeout 120 --kernel "$KERNEL" \
        --kargs "nokaslr chpp.ksyms=modules,do_init_module,linux_banner" \
        >"$GUEST/gdb-guest.log" 2>&1 ||
        { tail -n 20 "$GUEST/gdb-guest.log" >&2; chpp_die "kernel symbol boot failed"; }
    tr -d '\r' <"$GUEST/single-node1.log" | grep -ao 'chpp-ksym: .*' |
        sed 's/^chpp-ksym: //' >"$KSYMS.tmp"
    [ "$(wc -l <"$KSYMS.tmp")" = 3 ] ||
        { rm -f "$KSYMS.tmp"; chpp_die "the guest did not print the 3 kernel symbols"; }
    mv "$KSYMS.tmp" "$KSYMS"
fi
chpp_log "kernel symbols from ${KSYMS#"$CHPP_ROOT/"}"
GDB_ARGS+=(-ex "chpp-ksyms $KSYMS")

# --- the guest, stopped, its gdbstub on a unix socket ------------------------------
RUN=$(mktemp -d /tmp/chpp-gdb.XXXXXX)
SOCK="$RUN/gdb.sock"
PAIR=""
cleanup() {
    if [ -n "$PAIR" ]; then
        kill "$PAIR" 2>/dev/null || true
        wait "$PAIR" 2>/dev/null || true
    fi
    rm -rf "$RUN"
}
trap cleanup EXIT

TARGET=(--single --gdb 1)
[ "$NODE" = 0 ] || TARGET=(--gdb "$NODE")
TIMEOUT=()
[ -z "$BATCH" ] && TIMEOUT=(--timeout 0)
# Its own session: a Ctrl-C in gdb interrupts the guest, it does not kill QEMU.
setsid "$CHPP_ROOT/scripts/pair.sh" "${TARGET[@]}" "${TIMEOUT[@]}" --kernel "$KERNEL" \
    --gdb-addr "unix:$SOCK,server=on,wait=off" --kargs "nokaslr $KARGS" \
    "${PAIR_ARGS[@]}" >"$GUEST/gdb-guest.log" 2>&1 &
PAIR=$!
chpp_log "guest starting (pair.sh output in build/guest/gdb-guest.log)"
for _ in $(seq 600); do
    [ -S "$SOCK" ] && break
    kill -0 "$PAIR" 2>/dev/null ||
        { tail -n 20 "$GUEST/gdb-guest.log" >&2; chpp_die "pair.sh ended before QEMU listened"; }
    sleep 0.2
done
[ -S "$SOCK" ] || chpp_die "no gdbstub socket after 120 s"

GDB_ARGS+=(-ex "target remote $SOCK")
[ "$WAIT" = 1 ] && GDB_ARGS+=(-ex 'chpp-load-module --wait')
if [ -n "$BATCH" ]; then
    GDB_ARGS=(-batch "${GDB_ARGS[@]}" -x "$BATCH")
else
    chpp_log "gdb: 'continue' runs the guest, Ctrl-C stops it; 'help chpp-load-module'"
fi
rc=0
gdb "${GDB_ARGS[@]}" || rc=$?

# pair.sh's verdict, once the guest has finished (batch mode lets it run).
prc=0
if [ -n "$BATCH" ]; then
    wait "$PAIR" || prc=$?
    PAIR=""
    tail -n 4 "$GUEST/gdb-guest.log" >&2
    [ "$prc" = 0 ] || chpp_log "pair.sh failed with status $prc"
fi
[ "$rc" = 0 ] || exit "$rc"
exit "$prc"
