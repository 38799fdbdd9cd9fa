#!/usr/bin/env bash
# The link's reader thread and the main loop under ThreadSanitizer: build
# QEMU with TSan (build/qemu-tsan/), run the qtests that drive a link
# against it and sort the reports. A report with a frame in hw/chpp/ (the
# device's own code) fails the run; reports entirely inside QEMU 7.2's
# core (iothread start-up, RCU, the monitor) are counted and listed by
# their first frame, not failed: they are not this project's to fix.
#
#   scripts/tsan.sh [--no-build] [QTEST-NAME...]   (default: the link qtests)
#
# Not part of scripts/test.sh: the TSan build adds about 10 minutes on
# 2 cores (docs/security.md#threads).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

if [ "${1:-}" = --no-build ]; then
    shift
else
    "$CHPP_ROOT/scripts/setup.sh"
    "$CHPP_ROOT/scripts/build-qemu.sh"
    "$CHPP_ROOT/scripts/build-qemu.sh" --tsan
fi

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    tests=(chpp-hca-link-test chpp-hca-link-hostile-test
           chpp-hca-sriov-link-test chpp-hca-migrate-link-test)
fi
out="$CHPP_BUILD/tsan"
rm -rf "$out"
mkdir -p "$out"
export TSAN_OPTIONS="halt_on_error=0:exitcode=0:second_deadlock_stack=1:log_path=$out/report"
rc=0
for t in "${tests[@]}"; do
    chpp_log "$t under TSan"
    "$CHPP_ROOT/scripts/qtest.sh" --tsan "$t" --tap -k >"$out/$t.tap" 2>&1 || {
        cat "$out/$t.tap" >&2
        chpp_log "$t failed"
        rc=1
    }
    grep -E '^(ok|not ok)' "$out/$t.tap" | sed 's/^/  /' >&2 || true
done

# One report per "WARNING: ThreadSanitizer" block, in report.<pid> files.
"$CHPP_PYTHON" - "$out" <<'PY' || rc=1
import glob, re, sys

# QEMU functions documented as callable from any thread: a race inside one
# of them, reached from the device's thread, is QEMU 7.2's, not the device's.
THREAD_SAFE = {"qemu_bh_schedule", "aio_notify", "event_notifier_set",
               "event_notifier_test_and_clear", "qemu_thread_create",
               "qemu_thread_join"}
FRAME = re.compile(r"#(\d+) (\S+) (\S+?):\d+")

def owner(block):
    """'device' if a racing access is the device's own code."""
    for section in re.split(r"\n(?=  \S)", block):
        head = section.strip().split("\n")[0]
        if not re.match(r"(Previous )?(atomic )?(read|write)", head, re.I):
            continue
        frames = FRAME.findall(section)
        for i, (_, fn, path) in enumerate(frames):
            if "hw/chpp/" in path:
                if i == 0 or frames[i - 1][1] not in THREAD_SAFE:
                    return "device"
                break
    return "core"

device, core = [], {}
for f in sorted(glob.glob(sys.argv[1] + "/report.*")):
    for block in open(f, errors="replace").read().split("==================")[1:]:
        if "WARNING: ThreadSanitizer" not in block:
            continue
        kind = re.search(r"WARNING: ThreadSanitizer: ([^(\n]*)", block).group(1).strip()
        if owner(block) == "device":
            device.append((f, kind, block))
            continue
        m = FRAME.search(block)
        key = "%s in %s (%s)" % (kind, m.group(2), m.group(3).split("/")[-1]) if m else kind
        core[key] = core.get(key, 0) + 1
print("TSan reports inside QEMU's core (not failed): %d" % sum(core.values()))
for k, n in sorted(core.items()):
    print("  %4d  %s" % (n, k))
print("TSan reports in the device's code: %d" % len(device))
for f, kind, block in device:
    print("---- %s: %s" % (f, kind))
    print(block)
sys.exit(1 if device else 0)
PY
[ "$rc" = 0 ] || chpp_die "TSan run failed"
chpp_log "TSan: no data race in the device (${tests[*]})"
