#!/usr/bin/env bash
# The 'sparse' lint: byte order of the ABI's fields in the guest software.
# The structures of include/hw/chpp/chpp-hca-abi.h have __le16/__le32/__le64
# fields in Linux builds; sparse reports every use of one without
# le*_to_cpu()/cpu_to_le*() (kernel) or le*toh()/htole*() (user space).
#
#   scripts/checks/sparse-check.sh
#
# - the kernel modules, for 6.12 and 6.1: make -C guest-driver KVER=... C=2
#   CF=-D__CHECK_ENDIAN__ (every file checked, whether or not it is rebuilt);
# - the user-space data path and its users: sparse on guest-driver/common,
#   libchpp-user and its test, the verbs provider (not chpp-verbs-test, which
#   uses only the verbs API) and the VFIO test; chpp_datapath.h gives sparse
#   <endian.h>'s conversions as casts of the __le types.
#
# Any warning or error of sparse in a file of this repository fails the
# check; what the system headers draw (outside the repository) is ignored.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

command -v sparse >/dev/null || chpp_die "sparse is not installed (scripts/setup.sh)"
cd "$CHPP_ROOT"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
bad=0

# Kernel, for each supported guest kernel (each takes its side of
# chpp_compat.h): the same lock as scripts/pair.sh, which builds the same
# objects.
mkdir -p "$CHPP_BUILD/guest"
n=0
for k in 6.12 6.1; do
    chpp_guest_kernel "$k"
    flock "$CHPP_BUILD/guest/driver-build.lock" \
        make -s -C guest-driver KVER="$CHPP_KVER" C=2 CF=-D__CHECK_ENDIAN__ >"$OUT" 2>&1 ||
        { cat "$OUT" >&2; chpp_die "guest-driver build with sparse failed ($CHPP_KVER)"; }
    if grep -E "^$CHPP_ROOT/.*: (warning|error):" "$OUT"; then
        bad=1
    fi
    n=$((n + $(ls guest-driver/*.c | grep -vc '\.mod\.c$')))
done

# User space.
USER_FILES=(guest-driver/common/*.c guest-driver/user/*.c
            guest-driver/provider/chpp_provider.c
            guest-driver/provider/chpp_provider_dp.c
            guest-driver/provider/chpp_provider_ex.c tests/vfio/*.c)
for f in "${USER_FILES[@]}"; do
    # CHPP_LIBIBVERBS_44: the provider as the Makefile builds it
    sparse -std=gnu11 -DCHPP_LIBIBVERBS_44 -Iinclude -Iguest-driver -Iguest-driver/common \
        -Iguest-driver/user -Iguest-driver/provider "$f" >"$OUT" 2>&1 || true
    if grep -E '^(guest-driver|tests|include)/.*: (warning|error):' "$OUT"; then
        bad=1
    fi
    n=$((n + 1))
done

if [ "$bad" != 0 ]; then
    chpp_die "sparse: warnings above (byte order: docs/guest-driver.md#byte-order)"
fi
chpp_log "sparse: $n files, no warnings"
