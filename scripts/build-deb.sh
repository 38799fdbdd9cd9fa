#!/usr/bin/env bash
# Build -device chpp-hca for Debian's unmodified qemu-system-x86_64 and
# package it: build/stock/qemu-chpp-hca_<version>_amd64.deb (QEMU 7.2, the
# installed qemu-system-x86) or build/stock10/... (QEMU 10.0, --qemu 10).
#
#   scripts/build-deb.sh [--qemu 7|10] [--no-deb]
#
#   --qemu 7   (default) the installed qemu-system-x86 (Debian 12: 7.2),
#              /usr/bin/qemu-system-x86_64; into build/stock/
#   --qemu 10  qemu-system-x86 of the release's backports suite (10.0),
#              not installed: its packages are downloaded (apt-get download)
#              and unpacked into build/stock10/pkg/, where it runs in place;
#              into build/stock10/
#
# Against that qemu-system-x86 package:
#   (a) its exact source (the .dsc of its source version, from build/src/
#       or `apt-get source --download-only`), unpacked into build/stock*/;
#       10.0's .dsc is not served: the orig tarball with the patch series of
#       the Debian tarball of the newest 10.0 source of the next release
#       (trixie), see fetch_source_unserved;
#   (b) QEMU's configure with the options of that source's debian/rules
#       (features whose libraries setup.sh installs; the rest of Debian's
#       feature list is checked in (d)); CONFIG_STAMP must equal the
#       binary's qemu_stamp_* symbol (same version, package version and
#       configure script), else the build stops;
#   (c) the generated headers the device includes (QAPI types, its trace
#       header with the binary's trace backend);
#   (d) the guard: every CONFIG_*/HAVE_* macro that the device's sources
#       and the QEMU headers they include test must have Debian's value
#       (a table per QEMU version below); a macro not in the table stops
#       the build;
#   (e) hw/chpp/*.c as chpp-hca.so (-fPIC), the preload loader with the
#       binary's stamp and build-id, the qtest accelerator module (Debian
#       removes accel-qtest-*.so from its packages) and the wrapper, in
#       build/stock*/root/ (the package's tree; with 7.2 runnable in place
#       as build/stock/root/usr/lib/<arch>/qemu-chpp-hca/bin/qemu-system-x86_64,
#       with 10.0 through build/stock10/bin/qemu-system-x86_64, which runs
#       the unpacked binary with its modules and data);
#   (f) the .deb (dpkg-deb), which depends on exactly that qemu-system-x86.
# Idempotent: a second run recompiles only what changed (ccache).
# docs/build.md, "The device in Debian's QEMU".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { chpp_die "usage: scripts/build-deb.sh [--qemu 7|10] [--no-deb]"; }
MAKE_DEB=1
QEMU_MAJOR=7
while [ $# -gt 0 ]; do
    case "$1" in
        --no-deb) MAKE_DEB=0 ;;
        --qemu)
            case "${2:-}" in
                7|7.2) QEMU_MAJOR=7 ;;
                10|10.0) QEMU_MAJOR=10 ;;
                *) usage ;;
            esac
            shift ;;
        *) usage ;;
    esac
    shift
done

PKG=qemu-system-x86
# Debian's compiler flags, as dpkg-buildpackage gets them in the source tree
# (its -ffile-prefix-map names the working directory: one for every caller).
buildflags() { (cd "$SRC" && dpkg-buildflags --get "$1"); }
# Where the package puts the binary (the loader's report, the wrapper).
INSTALLED_BIN=/usr/bin/qemu-system-x86_64
ARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# --- the binary ------------------------------------------------------------------
# 10.0: the packages of the backports suite's qemu-system-x86, unpacked into
# build/stock10/pkg/ (the binary, the modules of every package that ships
# some, the data files): the same files dpkg would install, so the build-id
# and stamp are those of the installed package.
BACKPORTS_PKGS=(qemu-system-x86 qemu-system-common qemu-system-data
                qemu-system-modules-spice qemu-system-modules-opengl
                qemu-system-gui qemu-block-extra)
fetch_binary() {
    local dl="$STOCK/dl" p
    [ -x "$STOCK/pkg/usr/bin/qemu-system-x86_64" ] &&
        [ "$(cat "$STOCK/pkg/.chpp-version" 2>/dev/null)" = "$VERSION" ] && return 0
    mkdir -p "$dl"
    rm -f "$dl"/*.deb
    chpp_log "apt-get download ${BACKPORTS_PKGS[*]} (= $VERSION)"
    (cd "$dl" && apt-get download -q $(for p in "${BACKPORTS_PKGS[@]}"; do echo "$p=$VERSION"; done) \
        >download.log 2>&1) || { cat "$dl/download.log" >&2; chpp_die "apt-get download failed"; }
    rm -rf "$STOCK/pkg"
    for p in "$dl"/*.deb; do
        dpkg-deb -x "$p" "$STOCK/pkg"
    done
    echo "$VERSION" >"$STOCK/pkg/.chpp-version"
}

if [ "$QEMU_MAJOR" = 7 ]; then
    STOCK="$CHPP_BUILD/stock"
    VERSION=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null) ||
        chpp_die "$PKG is not installed (scripts/setup.sh installs it)"
    case "$VERSION" in
        *:7.2*) ;;
        *) chpp_die "the installed $PKG is $VERSION, not 7.2 (for 10.0: --qemu 10)" ;;
    esac
    SRCVER=$(dpkg-query -W -f='${source:Version}' "$PKG")
    QEMU_BIN=$INSTALLED_BIN
else
    STOCK="$CHPP_BUILD/stock10"
    SUITE="$(. /etc/os-release && echo "$VERSION_CODENAME")-backports"
    VERSION=$(apt-cache madison "$PKG" | awk -v s="$SUITE/" '$3 ~ /^1:10\.0\./ && index($0, " " s) { print $3; exit }')
    [ -n "$VERSION" ] || chpp_die "no $PKG 10.0 in $SUITE (scripts/setup.sh adds the suite)"
    fetch_binary
    # The source version: the binary package's Source field names it when
    # it differs (a binNMU), else it is the binary's version.
    SRCVER=$(dpkg-deb -f "$STOCK"/dl/qemu-system-x86_*.deb Source | sed -n 's/.*(\(.*\))/\1/p')
    SRCVER=${SRCVER:-$VERSION}
    QEMU_BIN="$STOCK/pkg/usr/bin/qemu-system-x86_64"
fi
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
        if ! (cd "$dir" && apt-get source -q --download-only "qemu=$SRCVER" >fetch.log 2>&1); then
            [ "$QEMU_MAJOR" = 10 ] ||
                { cat "$dir/fetch.log" >&2; chpp_die "apt-get source qemu=$SRCVER failed"; }
            fetch_source_unserved
            return 0
        fi
    fi
    chpp_log "unpacking $dsc into build/$(basename "$STOCK")/"
    rm -rf "$SRC.tmp"
    dpkg-source -q -x "$dir/$dsc" "$SRC.tmp" >/dev/null
    mv "$SRC.tmp" "$SRC"
}

# The backports suite's 10.0 source package answers 404 for its .dsc and
# Debian tarball (its orig tarball comes down). Its Debian changes are
# reconstructed from the next release's 10.0 source (the one whose
# backport it is; trixie's newer stable revision, of which only the Debian
# tarball is fetched): debian/ and its patch series over the orig tarball.
# The stamp check of configure_qemu is what proves the result is the
# binary's configure; the patches that do not touch configure are the
# later revision's (a limit the package's description states).
NEXT_RELEASE=trixie
fetch_source_unserved() {
    local dl="$STOCK/dl" upstream orig deb p top
    upstream=${SRCVER_NOEPOCH%-*}
    orig="$CHPP_BUILD/src/qemu_$upstream.orig.tar.xz"
    if [ ! -f "$orig" ]; then
        orig="$dl/qemu_$upstream.orig.tar.xz"
        [ -f "$orig" ] || (cd "$dl" && apt-get source -q --download-only --tar-only "qemu=$SRCVER" \
            >fetch-tar.log 2>&1) || { cat "$dl/fetch-tar.log" >&2; chpp_die "no orig tarball of qemu=$SRCVER"; }
    fi
    rm -f "$dl"/qemu_*.debian.tar.*
    chpp_log "apt-get source --download-only --diff-only qemu/$NEXT_RELEASE (Debian's patches; the backport's are not served)"
    (cd "$dl" && apt-get source -q --download-only --diff-only "qemu/$NEXT_RELEASE" >fetch-diff.log 2>&1) ||
        { cat "$dl/fetch-diff.log" >&2; chpp_die "apt-get source --diff-only qemu/$NEXT_RELEASE failed"; }
    deb=$(ls "$dl"/qemu_10.0.*.debian.tar.xz 2>/dev/null | head -1)
    [ -n "$deb" ] || chpp_die "qemu/$NEXT_RELEASE is not a 10.0 source: $(ls "$dl")"
    chpp_log "unpacking $(basename "$orig") + $(basename "$deb") (debian/patches/series) into build/$(basename "$STOCK")/"
    rm -rf "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    tar -xJf "$orig" -C "$SRC.tmp" --strip-components=1
    tar -xJf "$deb" -C "$SRC.tmp"
    while read -r p; do
        case "$p" in ''|'#'*) continue ;; esac
        patch -d "$SRC.tmp" -p1 -s -N --no-backup-if-mismatch <"$SRC.tmp/debian/patches/$p" ||
            chpp_die "Debian patch $p of $(basename "$deb") does not apply to $(basename "$orig")"
    done <"$SRC.tmp/debian/patches/series"
    basename "$deb" >"$SRC.tmp/.chpp-debian-tarball"
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
# 10.0's headers also test these (the guard's table, DEBIAN_VALUE_10).
[ "$QEMU_MAJOR" = 7 ] || FEATURES_PASSED+=(--enable-capstone --enable-brlapi)
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
        --localstatedir=/var --disable-install-blobs --disable-strip
    [ "$QEMU_MAJOR" = 10 ] ||
        printf '%s\n' "--interp-prefix=/etc/qemu-binfmt/%M" --with-git-submodules=ignore
    printf '%s\n' \
        --disable-user --enable-system --disable-linux-user --disable-xen \
        --enable-modules --enable-module-upgrades \
        --target-list=x86_64-softmmu --disable-docs
    if [ "$QEMU_MAJOR" = 7 ]; then
        echo --meson=/usr/bin/meson
    else
        # 10.0's debian/rules adds these; its meson (>= 1.5) is the
        # backports suite's, in build/tools/qemu10-python (setup.sh).
        [ -x "$CHPP_QEMU10_PYTHON" ] || chpp_die "no $CHPP_QEMU10_PYTHON; run scripts/setup.sh first"
        printf '%s\n' --mandir=/usr/share/man --disable-download --disable-containers \
            --disable-relocatable --disable-xkbcommon "--python=$CHPP_QEMU10_PYTHON"
    fi
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
        chpp_log "configuring QEMU $SRCVER as Debian does into build/$(basename "$STOCK")/$(basename "$BLD")/"
        rm -rf "$BLD"
        mkdir -p "$BLD"
        (cd "$BLD" && PATH=/usr/bin:$PATH "$SRC/configure" "${args[@]}") >"$BLD.configure.log" 2>&1 ||
            { tail -30 "$BLD.configure.log" >&2; chpp_die "configure failed (build/$(basename "$STOCK")/$(basename "$BLD").configure.log)"; }
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
    [ "${#CFLAGS_DEVICE[@]}" -gt 5 ] || chpp_die "no compiler command for hw/pci/pci.c in build/$(basename "$STOCK")/$(basename "$BLD")"
    CFLAGS_DEVICE+=(-iquote "$OBJ" -iquote "$CHPP_ROOT/include")
}

device_sources() {
    sed -n "s/^ *'\(chpp-hca-[a-z0-9-]*\.c\)'.*/\1/p" "$CHPP_ROOT/hw/chpp/meson.build" |
        sed "s|^|$CHPP_ROOT/hw/chpp/|"
}

# --- (d) the guard -----------------------------------------------------------------------
# Every configuration macro the device's compilation tests, with its value in
# Debian's build of this source (on/off). Reasons: host probes give the same
# answer on any Debian 12 amd64 (libc, compiler; CONFIG_MEMFD: glibc's
# memfd_create, for the link's shared rings); CONFIG_LINUX_AIO,
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
    [CONFIG_MEMFD]=on
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
# The macros 10.0's headers add. CONFIG_CAPSTONE (disassemble_info's
# members) and CONFIG_BRLAPI (ChardevBackendKind's "braille" value, which
# shifts the values after it) are Debian's --enable options, passed here
# too (the binary links libcapstone and lists the chardev-baum module);
# CONFIG_FDT: --enable-fdt; CONFIG_AF_XDP: the binary links no libxdp
# (Debian 12 has none); CONFIG_INT128_TYPE, CONFIG_SECRET_KEYRING: compiler
# and kernel header probes; CONFIG_TCG and CONFIG_PLUGIN: on by default for
# a system build on Linux, and debian/rules turns off plugins only in its
# user-mode build; CONFIG_DEBUG_TCG, CONFIG_TCG_INTERPRETER, CONFIG_TSAN:
# off unless asked for; CONFIG_WIN32: Windows only.
declare -A DEBIAN_VALUE_10=(
    [CONFIG_CAPSTONE]=on [CONFIG_BRLAPI]=on [CONFIG_FDT]=on
    [CONFIG_AF_XDP]=off [CONFIG_INT128_TYPE]=on [CONFIG_SECRET_KEYRING]=on
    [CONFIG_TCG]=on [CONFIG_PLUGIN]=on [CONFIG_DEBUG_TCG]=off
    [CONFIG_TCG_INTERPRETER]=off [CONFIG_TSAN]=off [CONFIG_WIN32]=off
)
if [ "$QEMU_MAJOR" = 10 ]; then
    for m in "${!DEBIAN_VALUE_10[@]}"; do DEBIAN_VALUE[$m]=${DEBIAN_VALUE_10[$m]}; done
fi
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
        "-DCHPP_QEMU_PKGVERSION=\"$PKG $VERSION\"" "-DCHPP_QEMU_BINARY=\"$INSTALLED_BIN\"" \
        -o "$ROOT/$LIBDIR/chpp-hca-preload.so" "$CHPP_ROOT/stock/chpp-hca-preload.c" -ldl
    ninja -C "$BLD" accel-qtest-x86_64.so >/dev/null
    cp "$BLD/accel-qtest-x86_64.so" "$ROOT/$LIBDIR/modules/"
    sed "s|@QEMU_BINARY@|$INSTALLED_BIN|" "$CHPP_ROOT/stock/qemu-system-x86.sh" >"$ROOT/$LIBDIR/bin/qemu-system-x86_64"
    chmod 755 "$ROOT/$LIBDIR/bin/qemu-system-x86_64"
    ln -sfn "../lib/$ARCH/qemu-chpp-hca/bin/qemu-system-x86_64" "$ROOT/usr/bin/qemu-system-x86_64-chpp"
    [ "$QEMU_MAJOR" = 7 ] || build_runner
}

# The binary not installed (10.0, unpacked in build/stock10/pkg/): the
# package's wrapper pointed at it by build/stock10/bin/qemu-system-x86_64.
# The unpacked binary still looks for its modules in the installed 7.2's
# directory (a 7.2 module aborts it), so QEMU_MODULE_DIR is a directory of
# its own modules plus the qtest accelerator; -L puts its own data files
# (option ROMs, keymaps) before the installed ones (seabios and iPXE are
# Debian 12's: its Depends asks for seabios >> 1.16.3, Debian 12 has 1.16.2).
build_runner() {
    local mods="$STOCK/modules" m
    rm -rf "$mods"
    mkdir -p "$mods" "$STOCK/bin"
    # Modules whose libraries are not installed here (audio-pa, ui-gtk,
    # block-rbd, ...) are left out, as if their packages were not installed:
    # QEMU would try them and print "failed to open module".
    for m in "$STOCK"/pkg/usr/lib/"$ARCH"/qemu/*.so "$ROOT/$LIBDIR/modules"/*.so; do
        ldd "$m" | grep -q 'not found' || ln -s "$m" "$mods/"
    done
    # Every module the binary names that the installed QEMU's directory
    # has must be found here first.
    for m in /usr/lib/"$ARCH"/qemu/*.so; do
        [ -e "$mods/$(basename "$m")" ] || ! strings "$QEMU_BIN" | grep -qx -- "$(basename "$m" .so)" ||
            chpp_die "$(basename "$m") of the installed QEMU would be loaded into $VERSION: none in its packages"
    done
    cat >"$STOCK/bin/qemu-system-x86_64.new" <<EOF
#!/bin/sh
# qemu-system-x86_64 with -device chpp-hca: $PKG $VERSION unpacked in
# place (written by scripts/build-deb.sh --qemu 10; docs/build.md).
CHPP_STOCK_QEMU='$QEMU_BIN'
CHPP_STOCK_MODULE_DIR='$mods'
export CHPP_STOCK_QEMU CHPP_STOCK_MODULE_DIR
exec '$ROOT/$LIBDIR/bin/qemu-system-x86_64' -L '$STOCK/pkg/usr/share/qemu' "\$@"
EOF
    chmod 755 "$STOCK/bin/qemu-system-x86_64.new"
    mv "$STOCK/bin/qemu-system-x86_64.new" "$STOCK/bin/qemu-system-x86_64"
}

# --- (f) the package ------------------------------------------------------------------------
# How the source was had, when not from the package's own .dsc.
source_note() {
    [ -f "$SRC/.chpp-debian-tarball" ] || return 0
    printf '\n .\n %s\n %s\n %s' \
        "The source of $SRCVER is not served: it is its orig tarball with the" \
        "patch series of $(cat "$SRC/.chpp-debian-tarball"), which gives the" \
        "binary's configure (module stamp checked); other patches may differ."
}
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
 any other QEMU build.$(source_note)
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
