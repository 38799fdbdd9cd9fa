#!/usr/bin/env bash
# Join the chpp-hca sources to the QEMU 7.2 tree fetched by setup.sh, apply
# the hooks, configure QEMU once into build/qemu/, link Debian's firmware and
# build qemu-system-x86_64 plus the chpp-hca qtests.
#
#   scripts/build-qemu.sh [--qemu 10] [--asan|--fuzz|--fuzz-cov] [NINJA-ARGS...]
#
#   --qemu 10  the same device and qtests joined to QEMU 10.0 (build/src/
#            qemu-10.0.2, hooks scripts/lib/qemu10-hooks.patch) and built
#            into build/qemu10/ (with --asan: build/qemu10-asan/, with
#            --fuzz: build/qemu10-fuzz/); the API differences are in
#            include/hw/chpp/chpp-qemu-compat.h
#   --asan   clang + ASan/UBSan build of the same tree into build/qemu-asan/
#            (default target: qemu-system-x86_64; the qtests of build/qemu/
#            drive it, see scripts/qtest.sh --asan)
#   --fuzz   clang + libFuzzer + ASan/UBSan build into build/qemu-fuzz/
#            (default target: qemu-fuzz-x86_64; see scripts/fuzz.sh)
#   --fuzz-cov  the --fuzz build plus clang source-based coverage of hw/chpp
#            into build/qemu-fuzz-cov/ (scripts/lib/cc-cov.sh; for the line
#            coverage of scripts/fuzz.sh --line-cov)
#   --tsan   clang + ThreadSanitizer build into build/qemu-tsan/ (default
#            target: qemu-system-x86_64; scripts/qtest.sh --tsan drives it,
#            scripts/tsan.sh runs the link tests on it)
#
# Idempotent and cheap when nothing changed. After the first run, a device
# source edit only needs `ninja -C build/qemu`; run this script again when
# files are added to or removed from tests/qtest/ (it refreshes the links and
# the qtest and extra-program lists) or after editing scripts/lib/qemu-hooks.patch.
# See docs/build.md for the layout and the exact hooks.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

SRC="$CHPP_QEMU_SRC"
BLD="$CHPP_QEMU_BUILD"
HOOKS="$CHPP_ROOT/scripts/lib/qemu-hooks.patch"
# Copy of the hook patch as last applied to $SRC (lets us swap hook versions).
HOOKS_APPLIED="$CHPP_BUILD/src/qemu-hooks.applied"
QEMU_MAJOR=7
if [ "${1:-}" = --qemu ]; then
    case "${2:-}" in
        7|7.2) ;;
        10|10.0)
            QEMU_MAJOR=10
            SRC="$CHPP_QEMU10_SRC"
            BLD="$CHPP_QEMU10_BUILD"
            HOOKS="$CHPP_ROOT/scripts/lib/qemu10-hooks.patch"
            HOOKS_APPLIED="$CHPP_BUILD/src/qemu10-hooks.applied" ;;
        *) chpp_die "--qemu takes 7 or 10, not '${2:-}'" ;;
    esac
    shift 2
fi
VARIANT=normal
case "${1:-}" in
    --asan) VARIANT=asan; shift ;;
    --fuzz) VARIANT=fuzz; shift ;;
    --fuzz-cov) VARIANT=fuzz-cov; shift ;;
    --tsan) VARIANT=tsan; shift ;;
esac
[ "$VARIANT" = normal ] || BLD="$BLD-$VARIANT"

# Keep in sync with docs/build.md.
COMMON_ARGS=(
    --target-list=x86_64-softmmu
    --without-default-features
    --enable-slirp
    --enable-fdt=system
    --enable-virtfs --enable-cap-ng --enable-attr
    --disable-docs
)
if [ "$QEMU_MAJOR" = 10 ]; then
    # QEMU 10 wants meson >= 1.5, found by configure in this Python's
    # packages (scripts/setup.sh); never downloaded.
    [ -x "$CHPP_QEMU10_PYTHON" ] || chpp_die "no $CHPP_QEMU10_PYTHON; run scripts/setup.sh first"
    # The "+ds" tarball has no firmware blobs to install (link_firmware).
    COMMON_ARGS+=(--python="$CHPP_QEMU10_PYTHON" --disable-download
                  --disable-install-blobs)
else
    COMMON_ARGS+=(--meson=/usr/bin/meson)
fi
CONFIGURE_ARGS=("${COMMON_ARGS[@]}" "--cc=ccache gcc")
# The sanitizer variants: the same tree and options, built by clang.
# UBSan reports are made fatal at compile time (as in QEMU's own CI), so a
# report always fails the run whatever UBSAN_OPTIONS says.
SANITIZER_ARGS=(
    "${COMMON_ARGS[@]}"
    "--cc=ccache clang"
    "--cxx=ccache clang++"
    --enable-sanitizers
    --extra-cflags=-fno-sanitize-recover=undefined
)
DEFAULT_TARGETS=()
case "$VARIANT" in
    asan)
        # -O1 and line tables only: about a quarter less compile time than
        # -O2 -g, and ASan's reports still name files and lines.
        # Only the devices the qtests use (scripts/lib/qtest-devices.mak).
        CONFIGURE_ARGS=("${SANITIZER_ARGS[@]}" "--extra-cflags=-O1 -gline-tables-only"
                        --without-default-devices --with-devices-x86_64=chpp-qtest)
        DEFAULT_TARGETS=(qemu-system-x86_64) ;;
    fuzz)
        CONFIGURE_ARGS=("${SANITIZER_ARGS[@]}" --enable-fuzzing)
        DEFAULT_TARGETS=(qemu-fuzz-x86_64) ;;
    fuzz-cov)
        # The --fuzz arguments with the compilers wrapped: only hw/chpp gets
        # coverage instrumentation, the rest hits the --fuzz build's ccache.
        CONFIGURE_ARGS=("${SANITIZER_ARGS[@]}" --enable-fuzzing)
        CONFIGURE_ARGS=("${CONFIGURE_ARGS[@]/#--cc=ccache /--cc=$CHPP_ROOT/scripts/lib/cc-cov.sh }")
        CONFIGURE_ARGS=("${CONFIGURE_ARGS[@]/#--cxx=ccache /--cxx=$CHPP_ROOT/scripts/lib/cc-cov.sh }")
        DEFAULT_TARGETS=(qemu-fuzz-x86_64) ;;
    tsan)
        # The link's reader thread against the main loop (docs/security.md).
        CONFIGURE_ARGS=("${COMMON_ARGS[@]}" "--cc=ccache clang"
                        "--cxx=ccache clang++" --enable-tsan)
        DEFAULT_TARGETS=(qemu-system-x86_64) ;;
esac

[ -f "$SRC/VERSION" ] || chpp_die "no QEMU source in build/src/$(basename "$SRC"); run scripts/setup.sh first"

# The device is present once hw/chpp/meson.build exists in the repository.
have_device() { [ -f "$CHPP_ROOT/hw/chpp/meson.build" ]; }

# --- (a) join the repository's files to the QEMU tree ------------------------
# Symlink $1 (in the QEMU tree) to $2 (in the repository), relative.
link() {
    local dst="$SRC/$1" target="$CHPP_ROOT/$2"
    if [ -L "$dst" ] && [ "$(readlink -f "$dst")" = "$(readlink -f "$target")" ]; then
        return
    fi
    [ ! -e "$dst" ] || [ -L "$dst" ] || chpp_die "$dst exists and is not a symlink"
    mkdir -p "$(dirname "$dst")"
    ln -sfnr "$target" "$dst"
}

join_sources() {
    local f list new
    link hw/chpp hw/chpp
    link configs/devices/x86_64-softmmu/chpp-qtest.mak scripts/lib/qtest-devices.mak
    if [ -d "$CHPP_ROOT/include/hw/chpp" ]; then
        link include/hw/chpp include/hw/chpp
    fi
    # tests/qtest/chpp-hca*: drop links whose file left the repo, link the rest.
    for f in "$SRC"/tests/qtest/chpp-hca*; do
        if [ -L "$f" ] && [ ! -e "$f" ]; then rm -f "$f"; fi
    done
    for f in "$CHPP_ROOT"/tests/qtest/chpp-hca*; do
        [ -f "$f" ] || continue
        link "tests/qtest/$(basename "$f")" "tests/qtest/$(basename "$f")"
    done
    # tests/qtest/fuzz/chpp*: fuzz targets, built only by --fuzz (the
    # tests/qtest/fuzz/meson.build hook).
    for f in "$SRC"/tests/qtest/fuzz/chpp*; do
        if [ -L "$f" ] && [ ! -e "$f" ]; then rm -f "$f"; fi
    done
    for f in "$CHPP_ROOT"/tests/qtest/fuzz/chpp*; do
        [ -f "$f" ] || continue
        link "tests/qtest/fuzz/$(basename "$f")" "tests/qtest/fuzz/$(basename "$f")"
    done
    # The qtest list read by the tests/qtest/meson.build hook: one name per
    # repo file tests/qtest/chpp-hca*-test.c. Rewritten only when it changes,
    # since any change makes meson reconfigure.
    list="$SRC/tests/qtest/chpp-hca-qtests.list"
    new=$(for f in "$CHPP_ROOT"/tests/qtest/chpp-hca*-test.c; do
              if [ -f "$f" ]; then basename "$f" .c; fi
          done | LC_ALL=C sort)
    if [ ! -f "$list" ] || [ "$(cat "$list")" != "$new" ]; then
        chpp_log "qtests: $(echo ${new:-(none)})"
        printf '%s\n' "$new" >"$list"
    fi
    # Extra qtest-style programs (benchmarks): repo files
    # tests/qtest/chpp-hca*-bench.c. The hook builds them but registers no
    # test. Same rule: rewritten only when it changes.
    list="$SRC/tests/qtest/chpp-hca-extra.list"
    new=$(for f in "$CHPP_ROOT"/tests/qtest/chpp-hca*-bench.c; do
              if [ -f "$f" ]; then basename "$f" .c; fi
          done | LC_ALL=C sort)
    if [ ! -f "$list" ] || [ "$(cat "$list")" != "$new" ]; then
        chpp_log "extra programs: $(echo ${new:-(none)})"
        printf '%s\n' "$new" >"$list"
    fi
}

unjoin_sources() {
    local f
    for f in "$SRC/hw/chpp" "$SRC/include/hw/chpp" "$SRC"/tests/qtest/chpp-hca* \
             "$SRC/configs/devices/x86_64-softmmu/chpp-qtest.mak" \
             "$SRC"/tests/qtest/fuzz/chpp*; do
        if [ -L "$f" ]; then rm -f "$f"; fi
    done
    rm -f "$SRC/tests/qtest/chpp-hca-qtests.list" "$SRC/tests/qtest/chpp-hca-extra.list"
}

# --- (b) hooks -----------------------------------------------------------------
hooks_applied() {  # exactly the repo's version of the patch is in the tree
    [ -f "$HOOKS_APPLIED" ] && cmp -s "$HOOKS_APPLIED" "$HOOKS" &&
        (cd "$SRC" && patch -p1 -R -s -f --dry-run <"$HOOKS" >/dev/null)
}

unapply_hooks() {
    [ -f "$HOOKS_APPLIED" ] || return 0
    chpp_log "removing previously applied hooks"
    (cd "$SRC" && patch -p1 -R -s -f --no-backup-if-mismatch <"$HOOKS_APPLIED") ||
        chpp_die "cannot remove old hooks; delete build/src/$(basename "$SRC") and rerun scripts/setup.sh"
    rm -f "$HOOKS_APPLIED"
}

apply_hooks() {
    hooks_applied && return 0
    unapply_hooks
    chpp_log "applying scripts/lib/$(basename "$HOOKS")"
    (cd "$SRC" && patch -p1 -N -s -f --dry-run <"$HOOKS" >/dev/null) ||
        chpp_die "scripts/lib/$(basename "$HOOKS") does not apply to build/src/$(basename "$SRC")"
    (cd "$SRC" && patch -p1 -N -s -f --no-backup-if-mismatch <"$HOOKS")
    cp "$HOOKS" "$HOOKS_APPLIED"
}

# --- (c) configure ---------------------------------------------------------------
configure_qemu() {
    local stamp="$BLD/chpp-configure.args" want
    want=$(printf '%s\n' "${CONFIGURE_ARGS[@]}")
    if [ -f "$BLD/build.ninja" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    local log="$BLD-configure.log"
    chpp_log "configuring QEMU into build/$(basename "$BLD")/"
    mkdir -p "$BLD"
    rm -f "$stamp"
    # PYTHON: configure's python probe; PATH may start with a pyenv shim.
    (cd "$BLD" && PATH=/usr/bin:$PATH PYTHON="$CHPP_PYTHON" \
        "$SRC/configure" "${CONFIGURE_ARGS[@]}") >"$log" 2>&1 ||
        { tail -40 "$log" >&2
          chpp_die "QEMU configure failed (full log: build/$(basename "$log"))"; }
    printf '%s\n' "$want" >"$stamp"
}

# --- (d) firmware ------------------------------------------------------------------
# The dfsg source has no firmware blobs, and Debian's build skips pc-bios/.
# QEMU run from the build tree looks in qemu-bundle/<datadir>, so point that
# at Debian's packaged firmware. Later sources win (same order as Debian's
# qemu-system-x86, whose /usr/share/qemu/bios.bin etc. link to these).
link_firmware() {
    local dir="$BLD/qemu-bundle/usr/local/share/qemu" src f
    mkdir -p "$dir"
    for src in /usr/lib/ipxe/qemu /usr/share/seabios /usr/share/qemu; do
        for f in "$src"/*; do
            [ -e "$f" ] || continue
            [ "$(readlink "$dir/$(basename "$f")" 2>/dev/null)" = "$f" ] ||
                ln -sfn "$f" "$dir/$(basename "$f")"
        done
    done
    [ -e "$dir/bios-256k.bin" ] || chpp_die "firmware missing: $dir/bios-256k.bin (seabios not installed?)"
}

# --- (e) build -----------------------------------------------------------------------
build() {
    local t
    # Only the emulator and the chpp qtests (and benchmarks), not QEMU's own
    # tests and tools: about a third of the steps of a first build.
    if [ "$VARIANT" = normal ] && [ $# -eq 0 ]; then
        DEFAULT_TARGETS=(qemu-system-x86_64)
        for t in $(cat "$SRC/tests/qtest/chpp-hca-qtests.list" \
                       "$SRC/tests/qtest/chpp-hca-extra.list" 2>/dev/null); do
            DEFAULT_TARGETS+=("tests/qtest/$t")
        done
    fi
    [ $# -gt 0 ] || set -- "${DEFAULT_TARGETS[@]}"
    chpp_log "ninja -C build/$(basename "$BLD") $*"
    ninja -C "$BLD" "$@"
}

if have_device; then
    join_sources
    apply_hooks
else
    chpp_log "WARNING: hw/chpp/meson.build not found in the repository; building QEMU without chpp-hca"
    unapply_hooks
    unjoin_sources
fi
configure_qemu
link_firmware
build "$@"
