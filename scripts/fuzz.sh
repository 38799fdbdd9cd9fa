#!/usr/bin/env bash
# Fuzz chpp-hca with QEMU's generic device fuzzer (not part of the tests).
#
#   scripts/fuzz.sh [--time SECONDS | --runs N] [--target NAME] [--no-seeds]
#                   [--line-cov] [-- LIBFUZZER-ARGS...]
#
#   --time SECONDS   fuzz for this long (default 300)
#   --runs N         or stop after N executions
#   --target NAME    generic-fuzz-chpp-hca (default): guest-side, MMIO of BAR0
#                    and BAR2, config space, DMA from fuzzer memory;
#                    generic-fuzz-chpp-hca-any-target: the same with
#                    x-dma-any-target=on (teardown under the device's own
#                    DMA, docs/security.md); or
#                    chpp-hca-link: frames from a hostile link peer;
#                    chpp-hca-link-stream: its byte stream (record parser);
#                    chpp-hca-link-eth: a node's Ethernet frames (netdev link)
#   --no-seeds       do not (re)make the seed corpus from the qtests
#   --line-cov       also report the line coverage of hw/chpp/*.c: the corpus
#                    runs once more through build/qemu-fuzz-cov (clang
#                    source-based coverage, build-qemu.sh --fuzz-cov) and
#                    llvm-cov reports it. --time 0 --line-cov: coverage only
#
# Steps: setup + build (build/qemu for the qtests, build/qemu-fuzz for
# qemu-fuzz-x86_64: clang, libFuzzer, ASan, UBSan), seeds from the qtests'
# traffic (scripts/lib/fuzz-seeds.py), the fuzz run on the corpus in
# build/fuzz/<target>/corpus (kept between runs), then one pass over the
# whole corpus that prints the coverage of hw/chpp/*.c. Crashes, timeouts
# (hangs) and other findings land in build/fuzz/<target>/artifacts/.
# See docs/build.md, "Fuzzing".
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

TIME=300 RUNS="" TARGET=generic-fuzz-chpp-hca SEEDS=1 LINECOV=0 EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --time) TIME=$2; RUNS=""; shift 2 ;;
        --runs) RUNS=$2; TIME=""; shift 2 ;;
        --target) TARGET=$2; shift 2 ;;
        --no-seeds) SEEDS=0; shift ;;
        --line-cov) LINECOV=1; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        *) chpp_die "usage: $0 [--time SECONDS | --runs N] [--target NAME] [--no-seeds] [--line-cov] [-- LIBFUZZER-ARGS]" ;;
    esac
done

"$CHPP_ROOT/scripts/setup.sh"
"$CHPP_ROOT/scripts/build-qemu.sh"
"$CHPP_ROOT/scripts/build-qemu.sh" --fuzz
[ "$LINECOV" = 0 ] || "$CHPP_ROOT/scripts/build-qemu.sh" --fuzz-cov

FUZZER="$CHPP_BUILD/qemu-fuzz/qemu-fuzz-x86_64"
OUT="$CHPP_BUILD/fuzz/$TARGET"
CORPUS="$OUT/corpus" SEEDDIR="$OUT/seeds" ART="$OUT/artifacts"
mkdir -p "$CORPUS" "$SEEDDIR" "$ART"
LOG="$OUT/fuzz.log"

# The ASan runtime's own settings: a report is a finding; leaks are not
# checked in the fork-per-input children (they _Exit). A 16 MB quarantine:
# the default 256 MB fills with the parent's freed inputs over a long run,
# and forking the grown parent for every input halves the rate
# (docs/fuzzing-log.md); one child's own frees fit in 16 MB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0:symbolize=1:quarantine_size_mb=16}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# No per-command timeout inside the child: a hang must reach libFuzzer's
# -timeout and be saved as a timeout-* artifact instead of being dropped.
export QEMU_FUZZ_TIMEOUT=0
TIMEOUT=${FUZZ_TIMEOUT:-20}

# --- seeds from the qtests' traffic --------------------------------------------
make_seeds() {
    local logs t
    logs=$(mktemp -d)
    chpp_log "recording qtest traffic for seeds"
    for t in $(cat "$CHPP_QEMU_SRC/tests/qtest/chpp-hca-qtests.list"); do
        # QEMU appends its qtest log to our stderr; a pipe, because every
        # QEMU reopens the log and would truncate a file.
        QTEST_LOG=1 "$CHPP_ROOT/scripts/qtest.sh" "$t" 2>&1 >/dev/null |
            cat >"$logs/$t.log" || true
    done
    rm -f "$SEEDDIR"/*
    "$CHPP_PYTHON" "$CHPP_ROOT/scripts/lib/fuzz-seeds.py" "$SEEDDIR" "$logs"/*.log
    rm -rf "$logs"
}
if [ "$SEEDS" = 1 ]; then
    case "$TARGET" in
        generic-fuzz-chpp-hca*) make_seeds ;;
        chpp-hca-link|chpp-hca-link-stream) "$CHPP_PYTHON" "$CHPP_ROOT/scripts/lib/fuzz-seeds.py" --link "$SEEDDIR" ;;
        chpp-hca-link-eth) "$CHPP_PYTHON" "$CHPP_ROOT/scripts/lib/fuzz-seeds.py" --link-eth "$SEEDDIR" ;;
    esac
fi

# --- fuzz ------------------------------------------------------------------------
# libFuzzer stops at the first timeout (the parent gives up on the hung
# child); start it again until the time or run budget is spent.
start=$(date +%s) execs=0 rounds=0
: >"$LOG"
while :; do
    args=(-timeout="$TIMEOUT" -artifact_prefix="$ART/" -print_final_stats=1
          -max_len=16384 -rss_limit_mb=4096)
    if [ -n "$TIME" ]; then
        left=$((TIME - ($(date +%s) - start)))
        [ "$left" -gt 0 ] || break
        args+=(-max_total_time="$left")
    else
        left=$((RUNS - execs))
        [ "$left" -gt 0 ] || break
        args+=(-runs="$left")
    fi
    rounds=$((rounds + 1))
    chpp_log "fuzzing ($TARGET, round $rounds, ${TIME:+$left s}${RUNS:+$left runs}): log in ${LOG#$CHPP_ROOT/}"
    set +e
    (cd "$OUT" && "$FUZZER" --fuzz-target="$TARGET" "${args[@]}" "${EXTRA[@]}" \
        "$CORPUS" "$SEEDDIR") >>"$LOG" 2>&1
    rc=$?
    set -e
    n=$(grep -a 'stat::number_of_executed_units' "$LOG" | tail -1 | awk '{print $2}')
    execs=$((execs + ${n:-0}))
    # A clean end (time or runs used up) is rc 0; anything else is a finding
    # or a hang, already saved as an artifact: go on with the budget left.
    [ "$rc" = 0 ] && break
    [ "$rounds" -lt 50 ] || break
    # Do not spin if the fuzzer cannot start at all.
    [ -n "$n" ] || { tail -30 "$LOG" >&2; chpp_die "the fuzzer failed to start"; }
done
wall=$(($(date +%s) - start))

# --- coverage of hw/chpp over the whole corpus ----------------------------------
chpp_log "coverage pass over the corpus"
COV="$OUT/coverage.txt"
(cd "$OUT" && "$FUZZER" --fuzz-target="$TARGET" -runs=0 -print_coverage=1 \
    -timeout="$TIMEOUT" -artifact_prefix="$ART/" "$CORPUS") >"$OUT/coverage.log" 2>&1 || true
grep -a 'COVERED_FUNC' "$OUT/coverage.log" | grep -a '/hw/chpp/' >"$COV" || true

echo
echo "== chpp-hca fuzz summary ($TARGET)"
echo "executions:  $execs in $wall s ($rounds fuzzer round(s))"
echo "corpus:      $(find "$CORPUS" -type f | wc -l) inputs in ${CORPUS#$CHPP_ROOT/}"
echo "coverage:    edges (basic blocks) of hw/chpp reached by the corpus"
awk '
    { file = $NF; sub(/:[0-9]+$/, "", file); sub(/.*\/hw\/chpp\//, "", file)
      split($5, e, "/"); cov[file] += e[1]; tot[file] += e[2]
      ct += e[1]; tt += e[2]; if ($1 ~ /^COVERED/) fc[file]++; fn[file]++ }
    END { for (f in tot) printf "  %-22s %5d/%-5d edges %5.1f%%  (%d/%d functions)\n",
              f, cov[f], tot[f], tot[f] ? 100 * cov[f] / tot[f] : 0, fc[f], fn[f] | "sort"
          close("sort")
          printf "  %-22s %5d/%-5d edges %5.1f%%\n", "total", ct, tt, tt ? 100 * ct / tt : 0 }
' "$COV"

# --- line coverage (--line-cov): the corpus through the coverage build ----------
# Each forked child writes its counters (the generic_fuzz.c hook and the link
# target call __llvm_profile_write_file before _Exit) into a pool of 4 files
# that the profile runtime merges into (%4m).
if [ "$LINECOV" = 1 ]; then
    chpp_log "line coverage pass over the corpus (build/qemu-fuzz-cov)"
    PROF="$OUT/profile"
    rm -rf "$PROF" && mkdir -p "$PROF"
    (cd "$OUT" && LLVM_PROFILE_FILE="$PROF/%4m.profraw" \
        "$CHPP_BUILD/qemu-fuzz-cov/qemu-fuzz-x86_64" --fuzz-target="$TARGET" \
        -runs=0 -timeout="$TIMEOUT" -artifact_prefix="$ART/" "$CORPUS") >"$OUT/line-coverage.log" 2>&1 || true
    # (children merge into the pool unsynchronised with the parent: counts may
    # saturate, "counter overflow"; whether a line ran is what is reported)
    llvm-profdata merge -sparse "$PROF"/*.profraw -o "$PROF/corpus.profdata" \
        2>>"$OUT/line-coverage.log"
    echo "line coverage of hw/chpp (clang source-based, llvm-cov; full listing:"
    echo "  llvm-cov show build/qemu-fuzz-cov/qemu-fuzz-x86_64 -instr-profile=${PROF#$CHPP_ROOT/}/corpus.profdata FILE)"
    llvm-cov report "$CHPP_BUILD/qemu-fuzz-cov/qemu-fuzz-x86_64" \
        -instr-profile="$PROF/corpus.profdata" "$CHPP_QEMU_SRC"/hw/chpp/*.c |
        awk '$1 ~ /\/hw\/chpp\/.*\.c$/ {
                 f = $1; sub(/.*\/hw\/chpp\//, "", f)
                 printf "  %-22s %5d/%-5d lines %7s  %4d/%-4d functions\n",
                     f, $8 - $9, $8, $10, $5 - $6, $5
                 l += $8; lm += $9; fn += $5; fm += $6 }
             END { printf "  %-22s %5d/%-5d lines %6.2f%%  %4d/%-4d functions\n",
                       "total", l - lm, l, l ? 100 * (l - lm) / l : 0, fn - fm, fn }' |
        tee "$OUT/line-coverage.txt"
fi

found=$(find "$ART" -type f | wc -l)
echo "findings:    $found in ${ART#$CHPP_ROOT/}"
find "$ART" -type f -printf '  %f\n'
if [ "$found" -gt 0 ]; then
    echo "reproduce:   $(basename "$FUZZER") --fuzz-target=$TARGET ARTIFACT"
    echo "             (QTEST_LOG=1 prints the qtest commands, see docs/build.md)"
    exit 1
fi
