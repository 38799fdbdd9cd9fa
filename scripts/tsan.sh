#!/usr/bin/env bash
# The link's reader thread and the main loop under ThreadSanitizer: build
# QEMU with TSan (build/qemu-tsan/) and run the qtests that drive a link
# against it. Any data race the device is part of fails the run; races
# inside QEMU's own core are listed by name in scripts/tsan.supp.
#
#   scripts/tsan.sh [QTEST-NAME...]   (default: every link qtest)
#
# Not part of scripts/test.sh: the TSan build takes about 15 minutes on
# 2 cores (docs/security.md#threads).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$CHPP_ROOT/scripts/setup.sh"
"$CHPP_ROOT/scripts/build-qemu.sh"
"$CHPP_ROOT/scripts/build-qemu.sh" --tsan

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    tests=(chpp-hca-link-test chpp-hca-sriov-link-test
           chpp-hca-migrate-link-test)
fi
rc=0
for t in "${tests[@]}"; do
    chpp_log "$t under TSan"
    if ! "$CHPP_ROOT/scripts/qtest.sh" --tsan "$t" --tap -k; then
        rc=1
    fi
done
[ "$rc" = 0 ] || chpp_die "TSan run failed"
chpp_log "TSan: no data race in ${tests[*]}"
