#!/usr/bin/env bash
# End-to-end check of the guest gdb workflow (meson test 'gdb-guest', suite
# e2e): scripts/gdb-guest.sh boots one guest stopped, gdb in batch mode runs
# it until chpp_hca.ko loads and loads the module's symbols, breaks in the
# driver's probe and in its HCR command function, and then lets the guest
# finish. Everything gdb says is checked against sources gdb does not use:
#   - each symbol's address in gdb = the section address the guest kernel
#     shows in /sys/module/chpp_hca/sections/ + the symbol's offset in the .ko
#     (objdump), for one symbol of each of .text, .rodata, .data, .bss, ...;
#   - the breakpoints stop in chpp_probe and chpp_cmd, at a file:line inside
#     those functions in guest-driver/, with pc at the function's address;
#   - the module's data as gdb reads it: each parameter of chpp_hca (in .data
#     or .bss) has the value the guest shows in /sys/module/chpp_hca/
#     parameters/, at probe and after the reload; the PCI driver in .data
#     has the name the guest's device is bound to and points to chpp_probe;
#   - probe's pdev is the chpp-hca PCI function (IDs from the ABI header),
#     dev->regs maps BAR0 (the magic register reads CHPP_MAGIC), and the
#     command's op and mod are those of the first command in the device's
#     trace (chpp_hca_cmd_issue);
#   - the guest then finishes with RESULT PASS.
#
#   gdb-guest-check.sh [--kernel K]   (K as in pair.sh; default: the default
#                                      guest kernel)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

KSPEC=""
case "${1:-}" in
    --kernel) KSPEC=${2:?--kernel needs a kernel} ;;
    "") ;;
    *) chpp_die "usage: $0 [--kernel K]" ;;
esac
chpp_guest_kernel "$KSPEC"
KVER=$CHPP_KVER
DRV="$CHPP_ROOT/guest-driver"
KMOD=$(chpp_guest_kmod_dir "$KVER")
KO="$KMOD/chpp_hca.ko"
CONSOLE="$CHPP_BUILD/guest/single-node1.log"
TRACE="$CHPP_BUILD/guest/single-node1.trace"
abi() { chpp_abi_define "$1"; }

W=$(mktemp -d /tmp/chpp-gdbcheck.XXXXXX)
trap 'rm -rf "$W"' EXIT
OUT="$W/gdb.out"
fail() { chpp_log "FAIL: $*"; exit 1; }

# The driver first (gdb-guest.sh builds it too, but the symbols are picked
# from the .ko before the run).
flock "$CHPP_BUILD/guest/driver-build.lock" make -s -C "$DRV" KVER="$KVER" >"$W/build.log" 2>&1 ||
    { cat "$W/build.log" >&2; fail "driver build"; }

# objdump -t shows a symbol's value plus its section's address in the .ko,
# which 6.12's Kbuild leaves non-zero for .data (0x320): the kernel ignores
# that address, so the offset in the section is the value minus it.
sec_vma() { objdump -h "$KO" | awk -v s="$1" '$2 == s { print "0x" $4; exit }'; }
# The function or object of each loaded section with the highest offset
# whose plain name is unique (also not in chpp_test.ko, whose symbols gdb
# loads too): "SECTION OFFSET NAME" (objdump -t: value, flags, section,
# size, name; the values have a fixed width, so compare them as text).
{ objdump -t "$KMOD/chpp_test.ko" | sed 's/^/other /'; objdump -t "$KO"; } | awk '
    $1 == "other" { n[$NF] = 2; next }
    NF == 6 && ($3 == "F" || $3 == "O") && $6 ~ /^[A-Za-z_][A-Za-z0-9_]*$/ {
        n[$6]++; sec[$6] = $4; off[$6] = $1 }
    END {
        for (s in n)
            if (n[s] == 1 && (!(sec[s] in best) || off[s] > off[best[sec[s]]]))
                best[sec[s]] = s
        for (x in best) print x, off[best[x]], best[x] }' |
    grep -E '^(\.text|\.rodata|\.data|\.bss|\.init\.text|\.exit\.text|\.text\.unlikely|\.gnu\.linkonce\.this_module) ' |
    sort |
    while read -r sec value name; do
        printf '%s %x %s\n' "$sec" $((0x$value - $(sec_vma "$sec"))) "$name"
    done >"$W/syms"
for s in .text .rodata .data .bss; do
    grep -q "^$s " "$W/syms" || fail "no symbol to check in $s of chpp_hca.ko"
done
# chpp_hca's parameters (bool or int): their variables have their names.
modinfo -p "$KO" | sed -n 's/^\([a-z_0-9]*\):.*(\(bool\|int\|uint\))$/\1/p' >"$W/params"
[ -s "$W/params" ] || fail "modinfo lists no bool or int parameter of chpp_hca.ko"
# Its data as gdb reads it: "PREFIX-param NAME VALUE", the driver's name and
# whether its probe pointer is chpp_probe.
data_cmds() {
    while read -r p; do
        echo "printf \"$1-param $p %d\\n\", $p"
    done <"$W/params"
    echo "printf \"$1-driver %s\\n\", chpp_driver.name"
    echo "printf \"$1-driver-probe %d\\n\", chpp_driver.probe == chpp_probe"
}

{
    echo 'break chpp_probe'
    echo 'continue'
    echo 'printf "probe-pc 0x%lx\n", $pc'
    echo 'printf "probe-ids 0x%x 0x%x 0x%x\n", pdev->vendor, pdev->device, id->vendor'
    echo 'set $probe_pdev = pdev'
    data_cmds probe
    while read -r _ _ name; do
        echo "printf \"sym $name 0x%lx\\n\", (unsigned long)&$name"
    done <"$W/syms"
    echo 'delete'
    echo 'break chpp_cmd'
    echo 'continue'
    echo 'printf "cmd-pc 0x%lx\n", $pc'
    echo 'printf "cmd-args op 0x%x mod 0x%x\n", op, mod'
    echo 'printf "cmd-pdev-same %d\n", dev->pdev == $probe_pdev'
    echo 'printf "cmd-magic 0x%x\n", *(unsigned int *)((char *)dev->regs + '"$(abi CHPP_REG_MAGIC)"')'
    echo 'bt 1'
    echo 'delete'
    # chpp_hca has finished its init when chpp_test loads: its symbols again,
    # this time from the module list and the kernel's post-init symbol table.
    echo "chpp-load-module --wait $KMOD/chpp_test.ko"
    echo 'chpp-load-module'
    while read -r sec _ name; do
        case "$sec" in .init.*) continue ;; esac
        echo "printf \"reload-sym $name 0x%lx\\n\", (unsigned long)&$name"
    done <"$W/syms"
    data_cmds reload
    echo 'detach'
} >"$W/cmds.gdb"

start=$(date +%s)
rc=0
"$CHPP_ROOT/scripts/gdb-guest.sh" --kernel "$CHPP_KERNEL" --batch "$W/cmds.gdb" --kargs chpp.sections=1 \
    -- --loops 0 --trace --timeout 240 >"$OUT" 2>&1 || rc=$?
cat "$OUT"
chpp_log "gdb-guest.sh status $rc after $(($(date +%s) - start)) s"
[ "$rc" = 0 ] || fail "gdb-guest.sh status $rc; gdb: $(grep -A1 'Error in sourced' "$OUT" | tail -n 1)" \
    "(a breakpoint never hit ends the guest: symbols at wrong addresses?)"

val() { sed -n "s/^$1 //p" "$OUT" | tail -n 1; }
tr -d '\r' <"$CONSOLE" >"$W/console"

# --- the module's symbols are where the guest kernel put the sections ----------------
grep -q '^chpp-load-module: chpp_hca at 0x' "$OUT" || fail "chpp-load-module did not load chpp_hca"
sysfs() {
    awk -v s="chpp-guest: section $1 " '
        i = index($0, s) { split(substr($0, i), w, " "); print w[4]; exit }' "$W/console"
}
[ -n "$(sysfs .text)" ] || fail "the guest printed no section addresses"
# "LOAD SECTION ADDRESS" for each section line chpp-load-module printed for
# chpp_hca (LOAD 1: before its init, LOAD 2: after).
awk '/^chpp-load-module: [a-z_]+ at 0x/ { mod = $2; if (mod == "chpp_hca") load++ }
     mod == "chpp_hca" && /^  section / { print load, $2, $3 }' "$OUT" >"$W/loaded"
for load in 1 2; do
    n=0
    while read -r sec addr; do
        [ "$addr" = "$(sysfs "$sec")" ] ||
            fail "gdb loaded $sec at $addr (load $load), the guest has it at $(sysfs "$sec")"
        n=$((n + 1))
    done < <(awk -v l=$load '$1 == l { print $2, $3 }' "$W/loaded")
    [ "$n" -ge 4 ] || fail "chpp-load-module (load $load) listed only $n sections"
    chpp_log "load $load: $n section addresses in gdb = /sys/module/chpp_hca/sections"
done
while read -r sec off name; do
    want=$(printf '0x%x' $(($(sysfs "$sec") + 0x$off)))
    got=$(val "sym $name")
    [ "$got" = "$want" ] || fail "gdb has $name ($sec) at ${got:-nothing}, the guest at $want"
    case "$sec" in
        .init.*) ;;
        *) [ "$(val "reload-sym $name")" = "$want" ] ||
               fail "after the reload gdb has $name at $(val "reload-sym $name"), the guest at $want" ;;
    esac
    chpp_log "gdb: $name at $got ($sec + 0x$off)"
done <"$W/syms"
# --- the module's data: its parameters and its PCI driver ------------------------------
guest() { awk -v s="chpp-guest: $1 " 'i = index($0, s) { print substr($0, i + length(s)); exit }' "$W/console"; }
drv=$(guest pci-driver)
[ -n "$drv" ] || fail "the guest did not say which driver its chpp0 has"
for when in probe reload; do
    while read -r p; do
        want=$(guest "param $p")
        case "$want" in Y) want=1 ;; N) want=0 ;; esac
        [ -n "$want" ] || fail "the guest did not show parameter $p"
        [ "$(val "$when-param $p")" = "$want" ] ||
            fail "gdb reads $p as '$(val "$when-param $p")' ($when), the guest has $(guest "param $p")"
    done <"$W/params"
    [ "$(val "$when-driver")" = "$drv" ] ||
        fail "gdb reads chpp_driver.name as '$(val "$when-driver")' ($when), the guest's device has driver $drv"
    [ "$(val "$when-driver-probe")" = 1 ] ||
        fail "gdb reads chpp_driver.probe ($when) as another address than chpp_probe's"
done
chpp_log "gdb reads $(wc -l <"$W/params") parameters as the guest shows them; chpp_driver: '$drv', probe = chpp_probe"

# Where the guest kernel has a function: "START SIZE" (section + offset).
func_at() {
    local off sec size
    read -r off sec size < <(objdump -t "$KO" |
        awk -v n="$1" '$NF == n && $3 == "F" { print $1, $4, $5; exit }')
    printf '0x%x 0x%x\n' $(($(sysfs "$sec") + 0x$off - $(sec_vma "$sec"))) "0x$size"
}

# --- the breakpoints: function, file:line, pc -------------------------------------
# "Breakpoint N, FUNC (args) at FILE:LINE" (or N.M when the function has
# several locations, e.g. a cold part), with LINE inside FUNC in FILE.
check_stop() {
    local fn=$1 file=$2 loc line first last
    loc=$(grep -m1 -E "^Breakpoint [0-9.]+, $fn \(.*\) at .*:[0-9]+$" "$OUT" | sed 's/.* at //' || true)
    [ -n "$loc" ] || fail "no stop in $fn"
    [ "${loc%:*}" = "$DRV/$file" ] || fail "$fn stopped in ${loc%:*}, not $DRV/$file"
    line=${loc##*:}
    first=$(grep -m1 -nE "^[a-z].*[ *]$fn\(" "$DRV/$file" | cut -d: -f1)
    last=$(awk -v f="$first" 'NR > f && /^}/ { print NR; exit }' "$DRV/$file")
    [ -n "$first" ] && [ "$line" -ge "$first" ] && [ "$line" -le "$last" ] ||
        fail "$fn stopped at line $line, outside $file:$first-$last"
    chpp_log "stop in $fn at $file:$line (the function is lines $first-$last)"
}
check_stop chpp_probe chpp_main.c
check_stop chpp_cmd chpp_cmd.c
for f in probe:chpp_probe cmd:chpp_cmd; do
    read -r start size < <(func_at "${f#*:}")
    pc=$(val "${f%%:*}-pc")
    [ -n "$pc" ] && [ $((pc)) -ge $((start)) ] && [ $((pc)) -lt $((start + size)) ] ||
        fail "${f#*:} stopped at pc ${pc:-?}, the function is at $start (size $size) in the guest"
done

# --- driver data -------------------------------------------------------------------
want=$(printf '0x%x 0x%x 0x%x' "$(abi CHPP_PCI_VENDOR_ID)" "$(abi CHPP_PCI_DEVICE_ID_PF)" "$(abi CHPP_PCI_VENDOR_ID)")
[ "$(val probe-ids)" = "$want" ] || fail "probe: pdev/id IDs '$(val probe-ids)', want '$want'"
[ "$(val cmd-pdev-same)" = 1 ] || fail "chpp_cmd: dev->pdev is not probe's pdev"
[ "$(val cmd-magic)" = "$(printf '0x%x' "$(abi CHPP_MAGIC)")" ] ||
    fail "chpp_cmd: BAR0 magic through dev->regs is '$(val cmd-magic)'"
issue=$(grep -m1 -ao 'chpp_hca_cmd_issue .*' "$TRACE")
t_op=$(echo "$issue" | sed -n 's/.*(0x\([0-9a-f]*\)) in_mod \(0x[0-9a-f]*\).*/\1/p')
t_mod=$(echo "$issue" | sed -n 's/.*(0x\([0-9a-f]*\)) in_mod \(0x[0-9a-f]*\).*/\2/p')
[ -n "$t_op" ] || fail "no chpp_hca_cmd_issue in $TRACE"
[ "$(val cmd-args)" = "$(printf 'op 0x%x mod %s' "0x$t_op" "$t_mod")" ] ||
    fail "chpp_cmd: gdb has '$(val cmd-args)', the device's first command is '$issue'"
chpp_log "probe: $(val probe-ids); first command: gdb '$(val cmd-args)', device '$issue'"

# --- the guest went on and finished --------------------------------------------------
grep -q 'chpp-guest: RESULT PASS' "$W/console" || fail "the guest did not finish with RESULT PASS"
chpp_log "gdb-guest: ok"
