#!/usr/bin/env bash
# Prepare a Debian 12 machine for building and running chpp-hca.
# Idempotent; a second run on a prepared machine takes well under a second.
#
#   (a) enable deb-src for the configured Debian archives (deb822 .sources
#       files get "Types: deb deb-src"; a legacy sources.list gets a derived
#       deb-src copy in sources.list.d)
#   (a') add the release's backports suite (deb, deb-src), derived from the
#       existing entry of the release's main suite
#   (b) install the build, firmware and guest packages (apt-get update only
#       when deb-src indexes or packages are missing)
#   (c) fetch QEMU 7.2 with `apt-get source qemu` into build/src/, and
#       QEMU 10.0 from the backports suite (added as a deb822 entry with the
#       archive URI of the existing main-suite entry) into build/src/
#   (d) extract the kernel's checkpatch.pl from Debian's linux-source-6.1
#       package (downloaded, not installed) into build/tools/kernel-checkpatch/
#   (e) build the Wireshark plugin of the link from chpp-wire.h into
#       build/wireshark/chpp.lua (docs/capture.md; a second of C compiling)
#   (f) the default guest kernel: Linux 6.12 from bookworm-backports (image
#       and headers), beside Debian 12's 6.1 (docs/guest-driver.md)
#   (g) rdma-core 56.1's source from trixie (deb-src only), unpacked into
#       build/src/rdma-core-56.1/ for the in-tree provider build
#       (docs/verbs-provider.md)
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
    # QEMU 10's configure: its venv helper (mkvenv) needs distlib
    python3-distlib
    # timeout(1) etc.; file(1): the release of a guest kernel image given
    # by path (chpp_guest_kernel in scripts/lib/common.sh)
    coreutils file
    # virtio-9p in QEMU (build-qemu.sh --enable-virtfs): the host's checkout
    # in the guests (pair.sh --share, docs/guest-driver.md)
    libcap-ng-dev libattr1-dev
    # the device in Debian's unmodified QEMU (scripts/build-deb.sh, the
    # 'stock' suite): the binary itself, and the headers of the features of
    # Debian's configuration that the device's headers test (AioContext's
    # io_uring member, QAPI enums under CONFIG_SPICE/CONFIG_ZSTD)
    qemu-system-x86 libaio-dev liburing-dev libzstd-dev libspice-server-dev
    # ... and of 10.0's (build-deb.sh --qemu 10): disassemble_info's
    # capstone members, the braille chardev's QAPI enum value
    libcapstone-dev libbrlapi-dev
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
    # captures of the link read back with the Wireshark dissector
    # (chpp-hca-capture-test, docs/capture.md)
    tshark
    # the provider's in-tree build inside rdma-core 56.1 (the provider-tree
    # lint, scripts/checks/provider-tree-check.sh): rdma-core's build needs
    # cmake, ninja, libnl and libudev headers
    cmake libnl-3-dev libnl-route-3-dev libudev-dev
)

# The extra suites, by name only: the URI and key are those of the
# configured Debian archive (the stanza or line that lists bookworm), each in
# its own sources.list.d/chpp-NAME.sources unless some entry lists the suite
# already. "NAME:TYPES:SUITE": trixie for sources only (rdma-core 56.1);
# bookworm-backports (Linux 6.12 for the guests, QEMU 10.0) is
# enable_backports' entry.
CHPP_EXTRA_SUITES=("trixie-src:deb-src:trixie")

# From <codename>-backports (enable_backports), for QEMU 10.0's configure,
# which checks its Python test dependencies with meson's: pycotap.
BACKPORTS_PACKAGES=(python3-pycotap)
# meson >= 1.5 for QEMU 10.0: the backports suite's package is unpacked into
# a venv of its own (build/tools/qemu10-python), not installed, so that the
# system's meson 1.0 keeps building QEMU 7.2 and this project.
BACKPORTS_MESON=meson

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

# The URI and Signed-By of the configured archive that carries bookworm:
# "URI KEYRING" (KEYRING "-" when none is named).
debian_archive() {
    local f
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
        awk 'BEGIN { RS = ""; FS = "\n" }
             { uri = ""; key = "-"; bw = 0
               for (i = 1; i <= NF; i++) {
                   if ($i ~ /^URIs:/) { split($i, a, /[[:space:]]+/); uri = a[2] }
                   if ($i ~ /^Signed-By:/) { split($i, a, /[[:space:]]+/); key = a[2] }
                   if ($i ~ /^Suites:/ && $i ~ /[[:space:]]bookworm([[:space:]]|$)/) bw = 1
               }
               if (bw && uri != "") { print uri, key; exit }
             }' "$f"
    done | head -n 1 | grep . && { shopt -u nullglob; return 0; }
    shopt -u nullglob
    # Legacy: deb [options] URI bookworm components
    [ -f /etc/apt/sources.list ] &&
        awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++
                           if ($2 ~ /^\[/) i++
                           if ($(i + 1) == "bookworm") { print $i, "-"; exit } }' \
            /etc/apt/sources.list | grep .
}

# (a') each suite of CHPP_EXTRA_SUITES not configured yet, as a deb822 file.
add_extra_suites() {
    local arch uri key e name types suite f
    arch=$(debian_archive) || chpp_die "no configured Debian archive lists bookworm"
    read -r uri key <<<"$arch"
    for e in "${CHPP_EXTRA_SUITES[@]}"; do
        IFS=: read -r name types suite <<<"$e"
        grep -rqsE "^[^#]*[[:space:]]$suite([[:space:]]|$)" /etc/apt/sources.list \
            /etc/apt/sources.list.d/ && continue
        f=/etc/apt/sources.list.d/chpp-$name.sources
        chpp_log "adding $suite ($types) to $f"
        { printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\n' "$types" "$uri" "$suite"
          [ "$key" = - ] || printf 'Signed-By: %s\n' "$key"
        } | chpp_as_root tee "$f" >/dev/null
        SOURCES_CHANGED=1
    done
}

# The backports suite of this release (QEMU 10.0 sources): a .sources entry
# like the one that names the release's main suite, with its URIs and
# Signed-By, for "<codename>-backports" only. Never a host name of our own.
BACKPORTS_LIST=/etc/apt/sources.list.d/chpp-backports.sources
release_codename() {
    local c
    c=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$c" ] || chpp_die "no VERSION_CODENAME in /etc/os-release"
    echo "$c"
}
backports_suite() { echo "$(release_codename)-backports"; }
enable_backports() {
    local codename f uri="" keyring
    codename=$(release_codename)
    [ -f "$BACKPORTS_LIST" ] && return 0
    if grep -rqsE "^[^#]*${codename}-backports" /etc/apt/sources.list \
            /etc/apt/sources.list.d/; then
        return 0
    fi
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
        # The first stanza whose Suites list the bare codename.
        uri=$(awk -v c="$codename" '
            function done() { if (s && u != "") { print u " " k; exit } }
            /^[[:space:]]*$/ { done(); u = ""; k = ""; s = 0; next }
            $1 == "URIs:" { u = $2 }
            $1 == "Signed-By:" { k = $2 }
            $1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == c) s = 1 }
            END { done() }' "$f")
        [ -n "$uri" ] && break
    done
    shopt -u nullglob
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
        uri=$(awk -v c="$codename" '$1 == "deb" && $3 == c { print $2; exit }' \
              /etc/apt/sources.list)
    fi
    [ -n "$uri" ] || chpp_die "no APT entry for suite $codename to derive ${codename}-backports from"
    keyring=${uri#* }
    uri=${uri%% *}
    chpp_log "adding ${codename}-backports (deb, deb-src) from $uri to $BACKPORTS_LIST"
    {
        echo "Types: deb deb-src"
        echo "URIs: $uri"
        echo "Suites: ${codename}-backports"
        echo "Components: main"
        if [ -n "$keyring" ]; then echo "Signed-By: $keyring"; fi
    } | chpp_as_root tee "$BACKPORTS_LIST" >/dev/null
    SOURCES_CHANGED=1
}

have_source_indexes() {
    compgen -G '/var/lib/apt/lists/*_Sources*' >/dev/null
}

missing_packages() {
    local p st
    for p in "${PACKAGES[@]}" "${BACKPORTS_PACKAGES[@]}"; do
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
        # wireshark-common asks whether to install dumpcap setuid; no.
        echo "wireshark-common wireshark-common/install-setuid boolean false" |
            chpp_as_root debconf-set-selections
        # shellcheck disable=SC2086
        chpp_log "installing:" $missing
        # shellcheck disable=SC2086
        # shellcheck disable=SC2046
        chpp_as_root "${APT_ENV[@]}" apt-get install -y -q --no-install-recommends \
            $(for p in $missing; do
                  if printf '%s\n' "${BACKPORTS_PACKAGES[@]}" | grep -qx "$p"; then
                      echo "$p/$(backports_suite)"
                  else
                      echo "$p"
                  fi
              done)
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
        # The release's own suite: backports and newer suites have 10.x.
        (cd "$tmp" && apt-get source -q "qemu/$(release_codename)" >fetch.log 2>&1) ||
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

# QEMU 10.0 from the backports suite into build/src/qemu-10.0.2: with the
# Debian patches when the archive serves the .dsc, else (as seen: the .dsc
# and the Debian tarball answer 404) the orig tarball alone, which is the
# upstream 10.0.2 release repacked by Debian (apt checks its checksum).
fetch_qemu10_source() {
    local tmp="$CHPP_BUILD/src/.fetch10" ver d
    if [ ! -f "$CHPP_QEMU10_SRC/VERSION" ] || [ ! -f "$CHPP_QEMU10_SRC/configure" ]; then
        chpp_log "fetching QEMU 10.0 source (qemu/$(backports_suite)) into build/src/"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        if (cd "$tmp" && apt-get source -q "qemu/$(backports_suite)" >fetch.log 2>&1); then
            d=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'qemu-10.*' | head -1)
        else
            chpp_log "no Debian source package (see build/src/.fetch10/fetch.log); using the orig tarball"
            (cd "$tmp" && rm -rf qemu-* && apt-get source -q --download-only --tar-only \
                "qemu/$(backports_suite)" >fetch-tar.log 2>&1) ||
                { cat "$tmp/fetch-tar.log" >&2; chpp_die "apt-get source --tar-only qemu failed"; }
            tar -xJf "$tmp"/qemu_10.*.orig.tar.xz -C "$tmp"
            d=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'qemu-10.*' | head -1)
        fi
        [ -n "$d" ] && [ -f "$d/VERSION" ] ||
            { ls "$tmp" >&2; chpp_die "no QEMU 10 tree unpacked in build/src/.fetch10"; }
        rm -rf "$CHPP_QEMU10_SRC"
        mv "$d" "$CHPP_QEMU10_SRC"
        mv "$tmp"/qemu_* "$CHPP_BUILD/src/" 2>/dev/null || true
        rm -rf "$tmp"
    fi
    ver=$(cat "$CHPP_QEMU10_SRC/VERSION")
    case "$ver" in
        10.0.*) chpp_log "QEMU source $ver in build/src/$(basename "$CHPP_QEMU10_SRC")" ;;
        *) chpp_die "expected QEMU 10.0.x in $CHPP_QEMU10_SRC, found VERSION '$ver'" ;;
    esac
}

# The Python of QEMU 10's configure: a venv over Debian's Python (system
# packages visible: distlib, pycotap) holding the backports suite's meson,
# unpacked from its .deb (pure Python).
make_qemu10_python() {
    local venv="$CHPP_BUILD/tools/qemu10-python" tmp site
    if [ -x "$CHPP_QEMU10_PYTHON" ] &&
       "$CHPP_QEMU10_PYTHON" -c 'import sys, importlib.metadata as m
v = tuple(int(x) for x in m.version("meson").split(".")[:2])
sys.exit(v < (1, 5))' 2>/dev/null; then
        return 0
    fi
    chpp_log "making build/tools/qemu10-python (meson from $(backports_suite))"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -q "$BACKPORTS_MESON/$(backports_suite)" >download.log 2>&1) ||
        { cat "$tmp/download.log" >&2; rm -rf "$tmp"; chpp_die "apt-get download meson failed"; }
    dpkg-deb -x "$tmp"/meson_*.deb "$tmp/x"
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    site=$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    cp -a "$tmp"/x/usr/lib/python3/dist-packages/. "$site/"
    rm -rf "$tmp"
    "$CHPP_QEMU10_PYTHON" -c 'import mesonbuild' ||
        chpp_die "meson not importable in build/tools/qemu10-python"
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

# --- (e) Linux 6.12 from bookworm-backports ----------------------------------------
# The versioned image and headers that backports' linux-image-amd64 and
# linux-headers-amd64 point to, by name only: those names (and their
# dependencies) exist only in backports, so no "-t bookworm-backports",
# which would also move the installed metapackages and linux-libc-dev to it.
install_kernel_612() {
    local img hdr
    compgen -G '/boot/vmlinuz-6.12.*' >/dev/null &&
        compgen -G '/lib/modules/6.12.*/build/Makefile' >/dev/null && return 0
    img=$(apt-cache depends linux-image-amd64/bookworm-backports 2>/dev/null |
          awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.12\./ { print $2; exit }')
    hdr=$(apt-cache depends linux-headers-amd64/bookworm-backports 2>/dev/null |
          awk '$1 == "Depends:" && $2 ~ /^linux-headers-6\.12\./ { print $2; exit }')
    [ -n "$img" ] && [ -n "$hdr" ] || chpp_die "bookworm-backports offers no Linux 6.12 image and headers"
    chpp_log "installing $img $hdr (bookworm-backports)"
    chpp_as_root "${APT_ENV[@]}" apt-get install -y -q --no-install-recommends "$img" "$hdr"
}

# --- (f) rdma-core 56.1's source (trixie) --------------------------------------------
# apt-get source --download-only fetches the orig and debian tarballs (their
# hashes checked against the Sources index) but the .dsc answers 404, so
# apt-get fails and nothing is unpacked: the orig tarball is unpacked here.
CHPP_RDMA_CORE_SRC="$CHPP_BUILD/src/rdma-core-56.1"
fetch_rdma_core_source() {
    local tmp="$CHPP_BUILD/src/.fetch-rdma-core"
    [ -f "$CHPP_RDMA_CORE_SRC/CMakeLists.txt" ] && return 0
    chpp_log "fetching rdma-core 56.1's source (trixie) into build/src/"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    (cd "$tmp" && apt-get source -q --download-only rdma-core/trixie >fetch.log 2>&1) || true
    [ -f "$tmp/rdma-core_56.1.orig.tar.gz" ] ||
        { cat "$tmp/fetch.log" >&2; chpp_die "apt-get source rdma-core/trixie brought no orig tarball"; }
    tar -xzf "$tmp/rdma-core_56.1.orig.tar.gz" -C "$tmp"
    [ -f "$tmp/rdma-core-56.1/CMakeLists.txt" ] || chpp_die "no rdma-core-56.1/ in the orig tarball"
    rm -rf "$CHPP_RDMA_CORE_SRC"
    mv "$tmp/rdma-core-56.1" "$CHPP_RDMA_CORE_SRC"
    rm -rf "$tmp"
}

enable_deb_src
enable_backports
add_extra_suites
install_packages
fetch_qemu_source
fetch_qemu10_source
make_qemu10_python
fetch_kernel_checkpatch
python3 "$CHPP_ROOT/scripts/wireshark/chpp-lua.py" >/dev/null
install_kernel_612
fetch_rdma_core_source
