# shellcheck shell=bash
# Debian's RDMA user space for the driver guests' initramfs, sourced by
# scripts/pair.sh: the unmodified binaries of ibverbs-utils, perftest and
# iproute2's rdma tool, libibverbs with its configuration, the soft-RoCE
# provider (the benchmark's baseline), and every shared library they load,
# copied from this machine (scripts/setup.sh installs the packages) to the
# same paths in the guest.

CHPP_RDMA_TOOLS=(
    ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong
    ibv_asyncwatch
    ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat
    ib_atomic_bw ib_atomic_lat
    rdma
)
CHPP_RDMA_LIBDIR=/usr/lib/x86_64-linux-gnu
# Providers the guests load: rxe (soft-RoCE) from ibverbs-providers; the
# chpp provider comes from guest-driver/provider/ when it is built.
CHPP_RDMA_PROVIDERS=(rxe)

# chpp_copy_elf ROOT FILE: FILE and the shared libraries it needs (ldd's
# view on this machine, which runs the same Debian release as the guest).
chpp_copy_elf() {
    local root=$1 f=$2 lib
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
    for lib in $(ldd "$f" | awk '/not found/ { print "MISSING:" $1 } /\// { print $(NF-1) }'); do
        case "$lib" in
            MISSING:*) chpp_die "$f needs ${lib#MISSING:}, not installed; run scripts/setup.sh" ;;
        esac
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}

# chpp_guest_rdma ROOT: install the RDMA user space into the initramfs
# tree ROOT.
chpp_guest_rdma() {
    local root=$1 t p f
    for t in "${CHPP_RDMA_TOOLS[@]}"; do
        f=$(command -v "$t") || chpp_die "no $t; run scripts/setup.sh (ibverbs-utils, perftest, iproute2)"
        chpp_copy_elf "$root" "$f"
    done
    mkdir -p "$root/etc/libibverbs.d"
    for p in "${CHPP_RDMA_PROVIDERS[@]}"; do
        f="$CHPP_RDMA_LIBDIR/libibverbs/lib$p-rdmav34.so"
        [ -f "$f" ] || chpp_die "no $f; run scripts/setup.sh (ibverbs-providers)"
        chpp_copy_elf "$root" "$f"
        cp "/etc/libibverbs.d/$p.driver" "$root/etc/libibverbs.d/"
    done
}
