#!/usr/bin/env bash
# Prepare a Debian 12 machine for building and running chpp-hca.
# Idempotent; a second run on a prepared machine takes well under a second.
#
#   (a) enable deb-src for the configured Debian archives (deb822 .sources
#       files get "Types: deb deb-src"; a legacy sources.list gets a derived
#       deb-src copy in sources.list.d)
#   (b) install the build, firmware and guest packages (apt-get update only
#       when deb-src indexes or packages are missing)
#   (c) fetch QEMU 7.2 with `apt-get source qemu` into build/src/
#   (d) extract the kernel's checkpatch.pl from Debian's linux-source-6.1
#       package (downloaded, not installed) into build/tools/kernel-checkpatch/
#
# Runs as root; uses sudo for the system steps when started as another user.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# Everything the scripts of this repository need, in one list.
PACKAGES=(
    # QEMU 7.2 x86_64-softmmu build (--without-default-features + slirp + fdt)
    build-essential ninja-build pkg-config python3 python3-venv meson
    libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev zlib1g-dev
    flex bison ccache
    # apt-get source (dpkg-source) and the hook patch
    dpkg-dev patch xz-utils
    # firmware that the QEMU build links to (bios*.bin, vgabios*, roms)
    seabios qemu-system-data ipxe-qemu
    # guest: Debian kernel + busybox initramfs
    linux-image-amd64 linux-headers-amd64 busybox-static cpio gzip
    # the libibverbs provider (guest-driver/provider): libibverbs 44's
    # public headers and libibverbs.so to link with
    libibverbs-dev
    # debugging: gdb and its Python (scripts/gdb/chpp-hca.py)
    gdb
    # the 'sparse' lint (scripts/checks/sparse-check.sh): byte order of the ABI's
    # __le fields in the guest driver and user space
    sparse
    # sanitizer and fuzzing builds (build-qemu.sh --asan/--fuzz): clang, its
    # runtimes (ASan, UBSan, libFuzzer) and llvm-symbolizer for the reports
    clang libclang-rt-14-dev llvm
    # timeout(1) etc.
    coreutils
    # the device in Debian's unmodified QEMU (scripts/build-deb.sh, the
    # 'stock' suite): the binary itself, and the headers of the features of
    # Debian's configuration that the device's headers test (AioContext's
    # io_uring member, QAPI enums under CONFIG_SPICE/CONFIG_ZSTD)
    qemu-system-x86 libaio-dev liburing-dev libzstd-dev libspice-server-dev
    # the driver guests' RDMA user space (scripts/lib/initramfs.sh copies the
    # unmodified binaries and their libraries into the initramfs): verbs
    # tools, perftest, soft-RoCE's provider, the rdma tool; and the headers
    # the verbs provider and test programs build against
    ibverbs-utils perftest ibverbs-providers iproute2 libibverbs-dev
    # UCX (ucx_info, ucx_perftest and UCX's verbs transports): its rc_verbs
    # transport, which Open MPI uses on InfiniBand, needs SRQs
    ucx-utils libucx0
    # Open MPI for the MPI stage (pair.sh --mpi, docs/middleware.md): mpirun,
    # orted, libmpi with its UCX pml (copied into the initramfs), and mpicc
    # for guest-driver/mpi/chpp-mpi-test.c
    openmpi-bin libopenmpi3 libopenmpi-dev
    # the timing benchmark's plots (scripts/bench.sh --timing,
    # scripts/lib/timing-plot.py)
    python3-matplotlib
    # management datagrams in the guests: the SM/SA and the diagnostics
    # (docs/management-datagrams.md)
    opensm infiniband-diags
    # rdma_cm in the guests (rping, ucmatose); NVMe over RDMA (nvme)
    rdmacm-utils nvme-cli
)

APT_ENV=(env DEBIAN_FRONTEND=noninteractive)
SOURCES_CHANGED=0

# --- (a) deb-src ------------------------------------------------------------
enable_deb_src() {
    local f
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
        # Only stanzas whose Types is exactly "deb" are changed; stanzas that
        # already list deb-src (or are disabled) are left alone.
        if grep -Eq '^Types:[[:space:]]*deb[[:space:]]*$' "$f"; then
            chpp_log "enabling deb-src in $f"
            chpp_as_root sed -i -E 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb deb-src/' "$f"
            SOURCES_CHANGED=1
        fi
    done
    shopt -u nullglob
    # Legacy one-line format: derive deb-src lines from the active deb lines.
    local legacy=/etc/apt/sources.list
    local copy=/etc/apt/sources.list.d/chpp-deb-src.list
    if [ -f "$legacy" ] && grep -Eq '^[[:space:]]*deb[[:space:]]' "$legacy" &&
       ! grep -Eq '^[[:space:]]*deb-src[[:space:]]' "$legacy" && [ ! -f "$copy" ]; then
        chpp_log "adding deb-src lines derived from $legacy to $copy"
        sed -n -E 's/^[[:space:]]*deb([[:space:]])/deb-src\1/p' "$legacy" |
            chpp_as_root tee "$copy" >/dev/null
        SOURCES_CHANGED=1
    fi
}

have_source_indexes() {
    compgen -G '/var/lib/apt/lists/*_Sources*' >/dev/null
}

missing_packages() {
    local p st
    for p in "${PACKAGES[@]}"; do
        st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [ "$st" = "install ok installed" ] || echo "$p"
    done
}

# --- (b) packages -------------------------------------------------------------
install_packages() {
    local missing
    missing=$(missing_packages)
    if [ "$SOURCES_CHANGED" = 1 ] || ! have_source_indexes || [ -n "$missing" ]; then
        chpp_log "apt-get update"
        chpp_as_root "${APT_ENV[@]}" apt-get update -q
    fi
    if [ -n "$missing" ]; then
        # shellcheck disable=SC2086
        chpp_log "installing:" $missing
        # shellcheck disable=SC2086
        chpp_as_root "${APT_ENV[@]}" apt-get install -y -q --no-install-recommends $missing
        missing=$(missing_packages)
        [ -z "$missing" ] || chpp_die "packages still missing: $missing"
    else
        chpp_log "all packages present"
    fi
}

# --- (c) QEMU source ------------------------------------------------------------
fetch_qemu_source() {
    local ver
    if [ -f "$CHPP_QEMU_SRC/VERSION" ] && [ -f "$CHPP_QEMU_SRC/configure" ]; then
        ver=$(cat "$CHPP_QEMU_SRC/VERSION")
    else
        chpp_log "fetching QEMU source (apt-get source qemu) into build/src/"
        local tmp="$CHPP_BUILD/src/.fetch"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        # apt-get source downloads .dsc + tarballs and unpacks them (with the
        # Debian patches applied) into qemu-7.2+dfsg/. Fetch into a scratch
        # directory and move the tree into place only once it is complete.
        (cd "$tmp" && apt-get source -q qemu >fetch.log 2>&1) ||
            { cat "$tmp/fetch.log" >&2; chpp_die "apt-get source qemu failed"; }
        [ -d "$tmp/qemu-7.2+dfsg" ] ||
            { ls "$tmp" >&2; chpp_die "apt-get source did not unpack qemu-7.2+dfsg"; }
        rm -rf "$CHPP_QEMU_SRC"
        mv "$tmp/qemu-7.2+dfsg" "$CHPP_QEMU_SRC"
        mv "$tmp"/qemu_* "$CHPP_BUILD/src/" 2>/dev/null || true
        rm -rf "$tmp"
        ver=$(cat "$CHPP_QEMU_SRC/VERSION")
    fi
    case "$ver" in
        7.2.*) chpp_log "QEMU source $ver in build/src/qemu-7.2+dfsg" ;;
        *) chpp_die "expected QEMU 7.2.x in $CHPP_QEMU_SRC, found VERSION '$ver'" ;;
    esac
}

# --- (d) the kernel's checkpatch, for guest-driver/ -------------------------------
# linux-headers-amd64 does not ship scripts/checkpatch.pl; the source package
# of the same kernel series does. Only three files of it are kept.
fetch_kernel_checkpatch() {
    local dir="$CHPP_BUILD/tools/kernel-checkpatch" tmp
    [ -x "$dir/checkpatch.pl" ] && return 0
    chpp_log "extracting the kernel's checkpatch.pl from linux-source-6.1"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -q linux-source-6.1 >download.log 2>&1) ||
        { cat "$tmp/download.log" >&2; rm -rf "$tmp"; chpp_die "apt-get download linux-source-6.1 failed"; }
    dpkg-deb --fsys-tarfile "$tmp"/linux-source-6.1_*.deb |
        tar -xO ./usr/src/linux-source-6.1.tar.xz |
        tar -xJ -C "$tmp" --wildcards 'linux-source-6.1/scripts/checkpatch.pl' \
            'linux-source-6.1/scripts/spelling.txt' \
            'linux-source-6.1/scripts/const_structs.checkpatch'
    mkdir -p "$dir"
    mv "$tmp"/linux-source-6.1/scripts/* "$dir/"
    rm -rf "$tmp"
}

enable_deb_src
install_packages
fetch_qemu_source
fetch_kernel_checkpatch
