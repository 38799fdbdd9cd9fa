#!/usr/bin/env bash
# The 'provider-tree' lint: the verbs provider (guest-driver/provider/)
# builds both ways (docs/verbs-provider.md):
#   - out of tree, against Debian 12's libibverbs 44 (the Makefile, as the
#     guests use it);
#   - in rdma-core 56.1's tree as providers/chpp, against its own driver.h
#     and libibverbs (CMakeLists.txt, rdma_provider()): the source that
#     scripts/setup.sh unpacks into build/src/rdma-core-56.1/ is copied once
#     to build/provider-tree/, providers/chpp/ there links to this
#     repository's files, and only the libibverbs and chpp targets are built
#     (cmake + ninja, rdma-core's own warnings with -Werror).
# Each provider must register through the private ABI of its own libibverbs
# and export nothing but the direct verbs (out of tree; in tree, rdma-core's
# provider.map exports nothing).
#
#   scripts/checks/provider-tree-check.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

RC_SRC="$CHPP_BUILD/src/rdma-core-56.1"
TREE="$CHPP_BUILD/provider-tree/rdma-core-56.1"
BLD="$CHPP_BUILD/provider-tree/build"
OOT="$CHPP_BUILD/provider-tree/out-of-tree"
[ -f "$RC_SRC/CMakeLists.txt" ] || chpp_die "no rdma-core 56.1 source in $RC_SRC; run scripts/setup.sh"
for t in cmake ninja; do
    command -v "$t" >/dev/null || chpp_die "no $t; run scripts/setup.sh"
done
fail() { chpp_log "FAIL: $*"; exit 1; }

# --- out of tree (libibverbs 44) --------------------------------------------------------
rm -rf "$OOT"
mkdir -p "$OOT"
make -s -C "$CHPP_ROOT/guest-driver/provider" O="$OOT" >"$OOT.log" 2>&1 ||
    { cat "$OOT.log" >&2; fail "out-of-tree build (libibverbs 44)"; }
nm -D --defined-only "$OOT/libchpp-rdmav34.so" | awk '{ print $3 }' |
    grep -v '^chppdv_' | grep . && fail "out-of-tree provider exports more than chppdv_*"
nm -D --undefined-only "$OOT/libchpp-rdmav34.so" | grep -q 'verbs_register_driver_34@IBVERBS_PRIVATE_34' ||
    fail "out-of-tree provider does not register through IBVERBS_PRIVATE_34"
chpp_log "out of tree: libchpp-rdmav34.so against libibverbs $(dpkg-query -W -f='${Version}' libibverbs-dev)"

# --- in rdma-core 56.1's tree ----------------------------------------------------------------
if [ ! -f "$TREE/CMakeLists.txt" ]; then
    rm -rf "$TREE"
    mkdir -p "$(dirname "$TREE")"
    cp -a "$RC_SRC" "$TREE.tmp"
    mv "$TREE.tmp" "$TREE"
fi
# providers/chpp: links to the repository's files (their names are those
# the sources include); the top level adds the directory once.
P="$TREE/providers/chpp"
rm -rf "$P"
mkdir -p "$P/hw/chpp"
for f in "$CHPP_ROOT"/guest-driver/provider/{CMakeLists.txt,chpp_provider.c,chpp_provider_dp.c,chpp_provider_ex.c,chpp_provider.h,chppdv.h} \
         "$CHPP_ROOT"/guest-driver/common/chpp_datapath.{c,h} "$CHPP_ROOT/guest-driver/chpp_uverbs_abi.h"; do
    ln -s "$f" "$P/"
done
ln -s "$CHPP_ROOT/include/hw/chpp/chpp-hca-abi.h" "$P/hw/chpp/"
grep -q '^add_subdirectory(providers/chpp)' "$TREE/CMakeLists.txt" ||
    sed -i 's|^add_subdirectory(providers/rxe)$|&\nadd_subdirectory(providers/chpp)|' "$TREE/CMakeLists.txt"
grep -q '^add_subdirectory(providers/chpp)' "$TREE/CMakeLists.txt" ||
    fail "could not add providers/chpp to rdma-core's CMakeLists.txt"

mkdir -p "$BLD"
if [ ! -f "$BLD/build.ninja" ]; then
    (cd "$BLD" && cmake -G Ninja -DENABLE_WERROR=1 -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 \
        -DENABLE_STATIC=0 -DCMAKE_BUILD_TYPE=Release "$TREE") >"$BLD/cmake.log" 2>&1 ||
        { tail -30 "$BLD/cmake.log" >&2; fail "rdma-core cmake"; }
fi
ninja -C "$BLD" ibverbs chpp-rdmav34 >"$BLD/ninja.log" 2>&1 ||
    { grep -E 'error|warning' "$BLD/ninja.log" >&2 || tail -30 "$BLD/ninja.log" >&2
      fail "in-tree build (rdma-core 56.1, providers/chpp)"; }
SO="$BLD/lib/libchpp-rdmav34.so"
[ -f "$SO" ] || fail "no $SO"
# rdma-core's provider.map: a provider exports nothing, it registers from
# its constructor (PROVIDER_DRIVER).
nm -D --defined-only "$SO" | grep . && fail "in-tree provider exports symbols"
nm -D --undefined-only "$SO" | grep -q 'verbs_register_driver_34@IBVERBS_PRIVATE_34' ||
    fail "in-tree provider does not register through rdma-core's IBVERBS_PRIVATE_34"
[ "$(cat "$BLD/etc/libibverbs.d/chpp.driver")" = "driver $BLD/lib/libchpp" ] ||
    fail "rdma_provider() wrote no chpp.driver"
chpp_log "in tree: providers/chpp of rdma-core 56.1 -> build/provider-tree/build/lib/libchpp-rdmav34.so"
chpp_log "PASS"
