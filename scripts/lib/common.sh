# shellcheck shell=bash
# Common helpers, sourced by every host script (scripts/*.sh,
# scripts/checks/*.sh, scripts/lib/*.sh). Finds the repository root from
# this file's location (scripts/lib/), so the scripts work from any working
# directory and in any clone.

CHPP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CHPP_BUILD="$CHPP_ROOT/build"
# QEMU source as unpacked by `apt-get source qemu` (Debian 12: 1:7.2+dfsg-*)
CHPP_QEMU_SRC="$CHPP_BUILD/src/qemu-7.2+dfsg"
CHPP_QEMU_BUILD="$CHPP_BUILD/qemu"
CHPP_QEMU_BIN="$CHPP_QEMU_BUILD/qemu-system-x86_64"
# Debian's installed QEMU with the device preloaded, as scripts/build-deb.sh
# leaves it in the package's tree (run in place; docs/build.md).
CHPP_STOCK_BIN="$CHPP_BUILD/stock/root/usr/bin/qemu-system-x86_64-chpp"
# QEMU 10.0 beside it (docs/build.md): upstream 10.0.2 as Debian 12's
# backports suite ships it, built by scripts/build-qemu.sh --qemu 10.
CHPP_QEMU10_SRC="$CHPP_BUILD/src/qemu-10.0.2"
CHPP_QEMU10_BUILD="$CHPP_BUILD/qemu10"
# The Python QEMU 10's configure runs: Debian's, plus meson 1.7 from the
# backports suite unpacked into this venv (QEMU 10 needs meson >= 1.5; the
# system's meson 1.0 stays for QEMU 7.2). scripts/setup.sh makes it.
CHPP_QEMU10_PYTHON="$CHPP_BUILD/tools/qemu10-python/bin/python3"
# PATH may hold a pyenv python; QEMU and meson must use Debian's.
CHPP_PYTHON=/usr/bin/python3

# The value of a #define of the ABI header whose value is a plain number
# (a trailing u dropped): chpp_abi_define CHPP_PCI_VENDOR_ID prints the
# vendor id as the header writes it (hex with 0x).
# Host side; the guests read the PCI ids from /chpp/ids.sh, which
# scripts/lib/initramfs.sh writes with this function.
CHPP_ABI_HEADER="$CHPP_ROOT/include/hw/chpp/chpp-hca-abi.h"
chpp_abi_define() {
    local v
    v=$(awk -v n="$1" '$1 == "#define" && $2 == n { sub(/u$/, "", $3); print $3 }' \
        "$CHPP_ABI_HEADER")
    [ -n "$v" ] || { echo "chpp_abi_define: no #define $1 in $CHPP_ABI_HEADER" >&2; return 1; }
    echo "$v"
}

chpp_log() { printf '\033[1m[%s]\033[0m %s\n' "$(basename "$0")" "$*" >&2; }
chpp_die() { chpp_log "ERROR: $*"; exit 1; }

# Run a command as root: directly when already root, else through sudo.
chpp_as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- the guest kernel -----------------------------------------------------------------
# The guests boot one of the supported kernels (docs/guest-driver.md): Debian
# 12's 6.1 and bookworm-backports' 6.12, both installed by scripts/setup.sh.
# The default when neither --kernel nor CHPP_KERNEL names one:
CHPP_DEFAULT_KERNEL=6.12

# chpp_guest_kernel [SPEC]: sets CHPP_KERNEL (the image) and CHPP_KVER (its
# release, the /lib/modules/ directory of its modules and headers). SPEC is
# a series ("6.12", "6.1": the newest installed image of it), a release
# ("6.1.0-56-amd64") or the path of an image; empty: $CHPP_KERNEL, else
# CHPP_DEFAULT_KERNEL.
chpp_guest_kernel() {
    local spec=${1:-${CHPP_KERNEL:-$CHPP_DEFAULT_KERNEL}} img
    case "$spec" in
        */*)
            img=$spec
            [ -r "$img" ] || chpp_die "cannot read kernel image $img"
            # the release from the bzImage's version string
            CHPP_KVER=$(file -bL "$img" | sed -n 's/.*, version \([^ ]*\) .*/\1/p')
            [ -n "$CHPP_KVER" ] || chpp_die "$img: no Linux version string (not a bzImage?)"
            ;;
        *)
            if [ -r "/boot/vmlinuz-$spec" ]; then
                img=/boot/vmlinuz-$spec
            else
                img=$(ls "/boot/vmlinuz-$spec".* "/boot/vmlinuz-$spec"-* 2>/dev/null |
                      sort -V | tail -n 1 || true)
            fi
            [ -n "$img" ] || chpp_die "no installed kernel $spec (/boot/vmlinuz-$spec*); run scripts/setup.sh"
            CHPP_KVER=${img##*/vmlinuz-}
            ;;
    esac
    CHPP_KERNEL=$img
    [ -d "/lib/modules/$CHPP_KVER" ] || chpp_die "kernel $img: no /lib/modules/$CHPP_KVER"
}

# chpp_guest_kmod_dir KVER: where guest-driver/Makefile puts the modules
# built for KVER (the guests' /host view of it: docs/guest-driver.md).
chpp_guest_kmod_dir() { echo "$CHPP_BUILD/guest/kmod-$1"; }
