#!/usr/bin/env bash
# Build -device chpp-hca for Debian's unmodified qemu-system-x86_64 and
# package it: build/stock/qemu-chpp-hca_<version>_amd64.deb.
#
#   scripts/build-deb.sh [--no-deb]
#
# Against the installed qemu-system-x86 package (setup.sh installs it):
#   (a) its exact source (the .dsc of its source version, from build/src/
#       or `apt-get source --download-only`), unpacked into build/stock/;
#   (b) QEMU's configure with the options of that source's debian/rules
#       (features whose libraries setup.sh installs; the rest of Debian's
#       feature list is checked in (d)); CONFIG_STAMP must equal the
#       binary's qemu_stamp_* symbol (same version, package version and
#       configure script), else the build stops;
#   (c) the generated headers the device includes (QAPI types, its trace
#       header with the binary's trace backend);
#   (d) the guard: every CONFIG_*/HAVE_* macro that the device's sources
#       and the QEMU headers they include test must have Debian's value
#       (table below); a macro not in the table stops the build;
#   (e) hw/chpp/*.c as chpp-hca.so (-fPIC), the preload loader with the
#       binary's stamp and build-id, the qtest accelerator module (Debian
#       removes accel-qtest-*.so from its packages) and the wrapper, in
#       build/stock/root/ (the package's tree; runnable in place as
#       build/stock/root/usr/lib/<arch>/qemu-chpp-hca/bin/qemu-system-x86_64);
#   (f) the .deb (dpkg-deb), which depends on exactly that qemu-system-x86.
# Idempotent: a second run recompiles only what changed (ccache).
# docs/build.md, "The device in Debian's QEMU".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

MAKE_DEB=1
case "${1:-}" in
    --no-deb) MAKE_DEB=0 ;;
    "") ;;
    *) chpp_die "usage: scripts/build-deb.sh [--no-deb]" ;;
esac

PKG=qemu-system-x86
# Debian's compiler flags, as dpkg-buildpackage gets them in the source tree
# (its -ffile-prefix-map names the working directory: one for every caller).
buildflags() { (cd "$SRC" && dpkg-buildflags --get "$1"); }
QEMU_BIN=/usr/bin/qemu-system-x86_64
ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
STOCK="$CHPP_BUILD/stock"

# --- the installed binary ------------------------------------------------------
VERSION=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null) ||
    chpp_die "$PKG is not installed (scripts/setup.sh installs it)"
SRCVER=$(dpkg-query -W -f='${source:Version}' "$PKG")
SRCVER_NOEPOCH=${SRCVER#*:}
# The name of the function QEMU looks up in a module it loads (util/module.c:
# DSO_STAMP_FUN_STR), a string in the binary.
BIN_STAMP=$(grep -ao -m1 'qemu_stamp_[0-9a-f]\{40\}' "$QEMU_BIN" | head -1 | sed 's/^qemu_stamp//')
BIN_BUILD_ID=$(readelf -n "$QEMU_BIN" | awk '/Build ID:/ { print $3 }')
[ -n "$BIN_STAMP" ] || chpp_die "$QEMU_BIN holds no qemu_stamp_* name (not a modular build)"
[ -n "$BIN_BUILD_ID" ] || chpp_die "$QEMU_BIN has no GNU build-id"
chpp_log "$QEMU_BIN: $PKG $VERSION (source $SRCVER), stamp $BIN_STAMP, build-id $BIN_BUILD_ID"

SRC="$STOCK/qemu-$SRCVER_NOEPOCH"
BLD="$STOCK/build-$SRCVER_NOEPOCH"
OBJ="$BLD/chpp"
ROOT="$STOCK/root"
LIBDIR="usr/lib/$ARCH/qemu-chpp-hca"

# --- (a) the source of exactly this version --------------------------------------
fetch_source() {
    local dsc="qemu_${SRCVER_NOEPOCH}.dsc" dir
    [ -f "$SRC/configure" ] && return 0
    mkdir -p "$STOCK"
    dir="$CHPP_BUILD/src"
    if [ ! -f "$dir/$dsc" ]; then
        dir="$STOCK/dl"
        mkdir -p "$dir"
        chpp_log "apt-get source --download-only qemu=$SRCVER"
        (cd "$dir" && apt-get source -q --download-only "qemu=$SRCVER" >fetch.log 2>&1) ||
            { cat "$dir/fetch.log" >&2; chpp_die "apt-get source qemu=$SRCVER failed"; }
    fi
    chpp_log "unpacking $dsc into build/stock/"
    rm -rf "$SRC.tmp"
    dpkg-source -q -x "$dir/$dsc" "$SRC.tmp" >/dev/null
    mv "$SRC.tmp" "$SRC"
}

# --- (b) Debian's configuration ------------------------------------------------------
# The options of debian/rules (common_configure_opts and the b/qemu build),
# for the x86_64 system target only. Of Debian's feature list
# (debian/extract-config-opts over debian/control) only these are passed;
# the others are left to detection and covered by the guard (d).
FEATURES_PASSED=(--enable-kvm --enable-slirp --enable-fdt --enable-vhost-net
                 --enable-linux-aio --enable-linux-io-uring --enable-zstd
                 --enable-spice)
configure_args() {
    local f debian_features
    debian_features=$(cd "$SRC" && sh debian/extract-config-opts "linux-$(dpkg-architecture -qDEB_HOST_ARCH)" debian/control)
    printf '%s\n' \
        "--with-pkgversion=Debian $VERSION" \
        "--extra-cflags=$(buildflags CFLAGS) $(buildflags CPPFLAGS)" \
        "--extra-ldflags=$(buildflags LDFLAGS) -Wl,--as-needed" \
        --prefix=/usr --sysconfdir=/etc "--libdir=/usr/lib/$ARCH" \
        --libexecdir=/usr/lib/qemu \
        --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu \
        --localstatedir=/var --disable-install-blobs --disable-strip \
        "--interp-prefix=/etc/qemu-binfmt/%M" --with-git-submodules=ignore \
        --disable-user --enable-system --disable-linux-user --disable-xen \
        --enable-modules --enable-module-upgrades \
        --target-list=x86_64-softmmu --disable-docs --meson=/usr/bin/meson
    for f in "${FEATURES_PASSED[@]}"; do
        grep -qx -- "$f" <<<"$debian_features" ||
            chpp_die "$f is not in this source's Debian feature list"
        echo "$f"
    done
}

configure_qemu() {
    local stamp="$BLD/.chpp-configure-args" want
    local -a args
    mapfile -t args < <(configure_args)
    want=$(printf '%s\n' "${args[@]}")
    if [ ! -f "$BLD/build.ninja" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        chpp_log "configuring QEMU $SRCVER as Debian does into build/stock/$(basename "$BLD")/"
        rm -rf "$BLD"
        mkdir -p "$BLD"
        (cd "$BLD" && PATH=/usr/bin:$PATH "$SRC/configure" "${args[@]}") >"$BLD.configure.log" 2>&1 ||
            { tail -30 "$BLD.configure.log" >&2; chpp_die "configure failed (build/stock/$(basename "$BLD").configure.log)"; }
        printf '%s\n' "$want" >"$stamp"
    fi
    local stamp_cfg
    stamp_cfg=$(awk '$2 == "CONFIG_STAMP" { print $3 }' "$BLD/config-host.h")
    [ "$stamp_cfg" = "$BIN_STAMP" ] ||
        chpp_die "configured stamp $stamp_cfg differs from the binary's $BIN_STAMP: the source, its configure script or the package version string is not the installed one"
}

# Macros of config-host.h whose value in Debian's build is not what this
# machine's configure finds without Debian's full build dependencies, with
# the evidence checked in the installed binary: its module list names the
# module the feature builds.
OVERLAY=(CONFIG_DBUS_DISPLAY:ui-dbus)
overlay_config() {
    local entry macro module
    for entry in "${OVERLAY[@]}"; do
        macro=${entry%%:*} module=${entry#*:}
        strings "$QEMU_BIN" | grep -x -- "$module" >/dev/null ||
            chpp_die "$QEMU_BIN lists no module $module: is $macro really set in its build?"
        if grep -q "^#undef $macro\$" "$BLD/config-host.h"; then
            sed -i "s/^#undef $macro\$/#define $macro/" "$BLD/config-host.h"
        fi
    done
}

# --- (c) generated headers -----------------------------------------------------------
generate_headers() {
    local backend
    ninja -C "$BLD" qapi/qapi-types-common.h config-poison.h >/dev/null
    backend=$(grep -o -m1 -- '--backend=[a-z,]*' "$BLD/build.ninja")
    mkdir -p "$OBJ"
    for fmt in h c; do
        /usr/bin/python3 "$SRC/scripts/tracetool.py" "$backend" --group=hw_chpp \
            "--format=$fmt" "$CHPP_ROOT/hw/chpp/trace-events" "$OBJ/trace-hw_chpp.$fmt.new"
        cmp -s "$OBJ/trace-hw_chpp.$fmt.new" "$OBJ/trace-hw_chpp.$fmt" ||
            mv "$OBJ/trace-hw_chpp.$fmt.new" "$OBJ/trace-hw_chpp.$fmt"
        rm -f "$OBJ/trace-hw_chpp.$fmt.new"
    done
    mkdir -p "$OBJ/trace"
    ln -sfn ../trace-hw_chpp.h "$OBJ/trace/trace-hw_chpp.h"
}

# The compiler command of a file of QEMU's common (softmmu) library, where
# meson puts the device, with position-independent code for a shared object.
CFLAGS_DEVICE=()
device_cflags() {
    local line
    line=$(/usr/bin/python3 - "$BLD/compile_commands.json" <<'EOF'
import json, shlex, sys
for c in json.load(open(sys.argv[1])):
    if c['file'].endswith('hw/pci/pci.c') and 'libcommon' in c['command']:
        args = shlex.split(c['command'])
        out, skip = [], False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ('-MQ', '-MF', '-o', '-c'):
                skip = True
                continue
            if a == '-MD' or a.endswith('/pci.c'):
                continue
            out.append('-fPIC' if a == '-fPIE' else a)
        print(args[0])
        print('\n'.join(out))
        break
EOF
)
    mapfile -t CFLAGS_DEVICE <<<"$line"
    [ "${#CFLAGS_DEVICE[@]}" -gt 5 ] || chpp_die "no compiler command for hw/pci/pci.c in build/stock/$(basename "$BLD")"
    CFLAGS_DEVICE+=(-iquote "$OBJ" -iquote "$CHPP_ROOT/include")
}

device_sources() {
    sed -n "s/^ *'\(chpp-hca-[a-z0-9-]*\.c\)'.*/\1/p" "$CHPP_ROOT/hw/chpp/meson.build" |
        sed "s|^|$CHPP_ROOT/hw/chpp/|"
}

# --- (d) the guard -----------------------------------------------------------------------
# Every configuration macro the device's compilation tests, with its value in
# Debian's build of this source (on/off). Reasons: host probes give the same
# answer on any Debian 12 amd64 (libc, compiler); CONFIG_LINUX_AIO,
# CONFIG_LINUX_IO_URING, CONFIG_ZSTD, CONFIG_SPICE(_PROTOCOL) are Debian's
# --enable options (passed here too); CONFIG_DBUS_DISPLAY from the overlay;
# CONFIG_REPLICATION is on by default; CONFIG_XEN_BACKEND: --disable-xen;
# CONFIG_BLKIO: no libblkio in Debian 12; CONFIG_CFI, CONFIG_DEBUG_MUTEX,
# CONFIG_FUZZ, CONFIG_MEMBARRIER, CONFIG_PROFILER: off unless asked for,
# and debian/rules does not ask.  CONFIG_QEMU_HELPERDIR, CONFIG_SYSCONFDIR
# (net/net.h, through the netdev link): paths from debian/rules' --prefix,
# --libexecdir and --sysconfdir, which configure gets here too (the device
# uses neither); CONFIG_VMNET: macOS only.
declare -A DEBIAN_VALUE=(
    [CONFIG_ATOMIC64]=on [CONFIG_BYTESWAP_H]=on [CONFIG_EPOLL]=on
    [CONFIG_INT128]=on [CONFIG_IOVEC]=on [CONFIG_LINUX]=on [CONFIG_POSIX]=on
    [CONFIG_QEMU_MODDIR]=on [CONFIG_STAMP]=on [CONFIG_SYSMACROS]=on
    [CONFIG_REPLICATION]=on [HAVE_HOST_BLOCK_DEVICE]=on
    [HAVE_IPPROTO_MPTCP]=on [HAVE_STRCHRNUL]=on [HAVE_SYSTEM_FUNCTION]=on
    [CONFIG_LINUX_AIO]=on [CONFIG_LINUX_IO_URING]=on [CONFIG_ZSTD]=on
    [CONFIG_SPICE]=on [CONFIG_SPICE_PROTOCOL]=on [CONFIG_DBUS_DISPLAY]=on
    [CONFIG_BLKIO]=off [CONFIG_CFI]=off [CONFIG_DEBUG_MUTEX]=off
    [CONFIG_FUZZ]=off [CONFIG_MEMBARRIER]=off [CONFIG_PROFILER]=off
    [CONFIG_XEN_BACKEND]=off [CONFIG_MACHINE_BSWAP_H]=off
    [HAVE_BROKEN_SIZE_MAX]=off [HAVE_MADVISE_WITHOUT_PROTOTYPE]=off
    [HAVE_OPTRESET]=off
    [CONFIG_QEMU_HELPERDIR]=on [CONFIG_SYSCONFDIR]=on [CONFIG_VMNET]=off
)
check_config() {
    local f m ours bad=0
    local -a files
    # The device's files and every QEMU header (source or generated) they include.
    mapfile -t files < <(
        for f in $(device_sources); do
            (cd "$BLD" && "${CFLAGS_DEVICE[@]}" -M -MG "$f" 2>/dev/null) || true
        done | tr ' \\' '\n\n' | grep -v ':$' | grep -e "^$SRC/" -e "^$CHPP_ROOT/" -e '^[^/]' |
            grep -v -e '^$' -e '^config-host\.h$' | sort -u)
    [ "${#files[@]}" -gt 50 ] || chpp_die "the device's include list is too short (${#files[@]} files)"
    for m in $(cd "$BLD" && grep -ohw -e 'CONFIG_[A-Z0-9_]*' -e 'HAVE_[A-Z0-9_]*' "${files[@]}" | sort -u); do
        if grep -q "^#define $m\b" "$BLD/config-host.h"; then ours=on
        elif grep -q "^#undef $m\$" "$BLD/config-host.h"; then ours=off
        else continue  # not a config-host.h macro (a device's own, or target's)
        fi
        if [ -z "${DEBIAN_VALUE[$m]:-}" ]; then
            chpp_log "guard: the device's compilation tests $m ($ours here), whose value in Debian's build is not in scripts/build-deb.sh's table"
            bad=1
        elif [ "${DEBIAN_VALUE[$m]}" != "$ours" ]; then
            chpp_log "guard: $m is $ours here, ${DEBIAN_VALUE[$m]} in Debian's build"
            bad=1
        fi
    done
    [ "$bad" = 0 ] || chpp_die "the configuration differs from Debian's where the device can see it"
}

# --- (e) the objects ---------------------------------------------------------------------
# A small ninja file in build/stock/build-*/chpp/: incremental through the
# compiler's dependency files, two jobs like the rest of the project.
build_device() {
    local f o cc="" objs=()
    command -v ccache >/dev/null && cc="ccache "
    {
        printf 'rule cc\n  command = cd %s && %s%s -MD -MF $out.d -c $in -o $out\n' \
            "$BLD" "$cc" "$(printf '%q ' "${CFLAGS_DEVICE[@]}" | sed 's/\$/$$/g')"
        printf '  depfile = $out.d\n  deps = gcc\n'
        printf 'rule so\n  command = gcc -shared %s -o $out $in\n' "$(buildflags LDFLAGS)"
        for f in $(device_sources) "$OBJ/trace-hw_chpp.c"; do
            o="$OBJ/$(basename "$f" .c).o"
            objs+=("$o")
            printf 'build %s: cc %s\n' "$o" "$f"
        done
        # Undefined symbols are QEMU's and its libraries', resolved at
        # dlopen() (RTLD_NOW) from the running qemu-system-x86_64.
        printf 'build %s: so %s\n' "$ROOT/$LIBDIR/chpp-hca.so" "${objs[*]}"
    } >"$OBJ/build.ninja.new"
    cmp -s "$OBJ/build.ninja.new" "$OBJ/build.ninja" || mv "$OBJ/build.ninja.new" "$OBJ/build.ninja"
    rm -f "$OBJ/build.ninja.new"
    mkdir -p "$ROOT/$LIBDIR/bin" "$ROOT/$LIBDIR/modules" "$ROOT/usr/bin"
    ninja -C "$OBJ" -j2 >"$OBJ/ninja.log" 2>&1 ||
        { cat "$OBJ/ninja.log" >&2; chpp_die "building chpp-hca.so failed"; }
    gcc -shared -fPIC -O2 -Wall -Werror $(buildflags CFLAGS) \
        "-DCHPP_QEMU_STAMP=$BIN_STAMP" "-DCHPP_QEMU_BUILD_ID=\"$BIN_BUILD_ID\"" \
        "-DCHPP_QEMU_PKGVERSION=\"$PKG $VERSION\"" "-DCHPP_QEMU_BINARY=\"$QEMU_BIN\"" \
        -o "$ROOT/$LIBDIR/chpp-hca-preload.so" "$CHPP_ROOT/stock/chpp-hca-preload.c" -ldl
    ninja -C "$BLD" accel-qtest-x86_64.so >/dev/null
    cp "$BLD/accel-qtest-x86_64.so" "$ROOT/$LIBDIR/modules/"
    sed "s|@QEMU_BINARY@|$QEMU_BIN|" "$CHPP_ROOT/stock/qemu-system-x86.sh" >"$ROOT/$LIBDIR/bin/qemu-system-x86_64"
    chmod 755 "$ROOT/$LIBDIR/bin/qemu-system-x86_64"
    ln -sfn "../lib/$ARCH/qemu-chpp-hca/bin/qemu-system-x86_64" "$ROOT/usr/bin/qemu-system-x86_64-chpp"
}

# --- (f) the package ------------------------------------------------------------------------
build_package() {
    local count ver deb
    count=$(git -C "$CHPP_ROOT" rev-list --count HEAD 2>/dev/null || echo 0)
    # qemu-system-x86's version (without its epoch) in ours, '-' made legal.
    ver="0.1.$count+qemu$(tr '-' '.' <<<"${VERSION#*:}")"
    mkdir -p "$ROOT/DEBIAN" "$ROOT/usr/share/doc/qemu-chpp-hca"
    cp "$CHPP_ROOT/docs/build.md" "$ROOT/usr/share/doc/qemu-chpp-hca/build.md"
    cat >"$ROOT/DEBIAN/control" <<EOF
Package: qemu-chpp-hca
Version: $ver
Architecture: $(dpkg-architecture -qDEB_HOST_ARCH)
Maintainer: chpp-hca project <chpp-hca@localhost>
Depends: $PKG (= $VERSION)
Section: misc
Priority: optional
Description: chpp-hca RDMA adapter model for Debian's QEMU
 The chpp-hca PCIe device (-device chpp-hca) built against the exact
 source and configuration of $PKG $VERSION, loaded into its unmodified
 qemu-system-x86_64 by the wrapper qemu-system-x86_64-chpp, which refuses
 any other QEMU build.
EOF
    deb="$STOCK/qemu-chpp-hca_${ver}_$(dpkg-architecture -qDEB_HOST_ARCH).deb"
    rm -f "$STOCK"/qemu-chpp-hca_*.deb
    dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$deb" >/dev/null
    chpp_log "built ${deb#"$CHPP_ROOT"/}"
}

fetch_source
configure_qemu
overlay_config
generate_headers
device_cflags
check_config
build_device
[ "$MAKE_DEB" = 0 ] || build_package
