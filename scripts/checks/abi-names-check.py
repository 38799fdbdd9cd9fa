#!/usr/bin/env python3
"""Check that the ABI's names are stated once (docs/commands.md, "Status
codes"): the X-macro lists of include/hw/chpp/chpp-hca-abi.h (counters,
commands, status codes, port states, event types, QP states and types) are
the only name tables.

- The C compiler and scripts/gdb/chpp_abi.py (what the gdb helper uses) read
  the same lists: a small program built against the header prints every
  enumerator, its value and what chpp_*_name() returns for it; each must
  match the Python parse, and values not in a list must have no name.
- Names and values are unique within each list.
- Every command in CHPP_CMD_LIST has a case in the device (hw/chpp).
- No device, driver, provider, VFIO test or gdb source restates a list as
  string literals (three or more of one list's names quoted in one file;
  counter names also in the lower-case spellings of the device's state
  view, "db-fifo-overflow", and of the driver's hw_counters,
  "db_fifo_overflow").

- The wire header's names (include/hw/chpp/chpp-wire.h: packet types,
  opcodes, syndromes, record types, refusals, flag bits) reach the
  Wireshark dissector only through scripts/wireshark/chpp-lua.py, whose
  parse the C compiler confirms; the dissector's source pairs no three
  names of a list with numbers (it may look names up, not give values).

Exits 0 and prints a summary when everything holds, 1 otherwise.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts/gdb"))
import chpp_abi  # noqa: E402
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "chpp_lua", os.path.join(ROOT, "scripts/wireshark/chpp-lua.py"))
chpp_lua = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chpp_lua)
WIRE_SOURCES = ["scripts/wireshark/*.lua"]
# The dissector looks names up ("IMM" is the flag it tests), but a name
# next to a number ([3] = "WRITE", { 16, "IMM" }, "ACK": 9) restates a value.
NUM = r"\b(?:0[xX][0-9a-fA-F]+|\d+)\b"
PAIRED = NUM + r'\s*\]?\s*[=,:]\s*"%s"|"%s"\s*\]?\s*[=,:]\s*' + NUM

# list kind -> (enumerator prefix, name function)
KINDS = {
    "CNT": ("CHPP_CNT_", "chpp_counter_name"),
    "CMD": ("CHPP_CMD_", "chpp_cmd_name"),
    "STAT": ("CHPP_STAT_", "chpp_status_name"),
    "PORT": ("CHPP_PORT_", "chpp_port_state_name"),
    "EVENT": ("CHPP_EVENT_", "chpp_event_name"),
    "QPS": ("CHPP_QPS_", "chpp_qp_state_name"),
    "QPT": ("CHPP_QPT_", "chpp_qp_type_name"),
}
SOURCES = ["hw/chpp/*.[ch]", "guest-driver/*.[ch]", "guest-driver/common/*.[ch]",
           "guest-driver/provider/*.[ch]", "guest-driver/user/*.[ch]",
           "tests/vfio/*.c", "scripts/gdb/*.py"]

errors = []


def fail(msg):
    errors.append(msg)


def spellings(kind, name):
    """How a source could restate a name of a list as a string literal."""
    if kind == "CNT":
        return (name, name.lower(), name.lower().replace("_", "-"))
    return (name,)


def c_view():
    """(kind, name, value, looked-up name) as the C compiler sees them."""
    lines = ['#include <stdio.h>', '#include "hw/chpp/chpp-hca-abi.h"',
             'int main(void)', '{', '    unsigned int v;', '    const char *n;']
    for kind, (prefix, fn) in KINDS.items():
        lines.append('#define P(name, val) n = %s(%s##name); '
                     'printf("%s %%s %%d %%s\\n", #name, (int)(val), n ? n : "-");'
                     % (fn, prefix, kind))
        lines.append('    CHPP_%s_LIST(P)' % kind)
        lines.append('#undef P')
        # Values outside the list: no name (0..0xfff covers every field).
        lines.append('    for (v = 0; v < 0x1000; v++) {')
        lines.append('        if (%s(v)) {' % fn)
        lines.append('            printf("%s-named %%u %%s\\n", v, %s(v));' % (kind, fn))
        lines.append('        }')
        lines.append('    }')
    lines += ['    return 0;', '}']
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "names.c"), os.path.join(d, "names")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                        "-I", os.path.join(ROOT, "include"), "-o", exe, src],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    listed, named = {}, {}
    for line in out.splitlines():
        kind, a, b = line.split(" ", 2)
        if kind.endswith("-named"):
            named.setdefault(kind[:-6], {})[int(a)] = b
        else:
            value, looked = b.split(" ")
            listed.setdefault(kind, []).append((a, int(value), looked))
    return listed, named


def main():
    abi = chpp_abi.Abi()
    listed, named = c_view()
    for kind in KINDS:
        py = abi.lists.get(kind)
        if not py:
            fail("CHPP_%s_LIST: not found by scripts/gdb/chpp_abi.py" % kind)
            continue
        c = listed.get(kind, [])
        if [(n, v) for n, v, _ in c] != py:
            fail("CHPP_%s_LIST: the compiler and chpp_abi.py read it differently"
                 % kind)
        for n, v, looked in c:
            if looked != n:
                fail("%s(%#x) is %s, want %s" % (KINDS[kind][1], v, looked, n))
        if named.get(kind, {}) != {v: n for n, v, _ in c}:
            fail("%s names values that are not in CHPP_%s_LIST"
                 % (KINDS[kind][1], kind))
        names = [n for n, _ in py]
        values = [v for _, v in py]
        for what, seq in (("name", names), ("value", values)):
            dups = sorted({x for x in seq if seq.count(x) > 1})
            if dups:
                fail("CHPP_%s_LIST: %s listed twice: %s" % (kind, what, dups))

    # The device implements every command of the list.
    device = "".join(open(f).read() for f in glob.glob(os.path.join(ROOT, "hw/chpp/*.c")))
    for n, _ in abi.lists.get("CMD", []):
        if not re.search(r"\bcase\s+CHPP_CMD_%s\s*:" % n, device):
            fail("hw/chpp: no case for CHPP_CMD_%s" % n)

    # No restated name tables.
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            text = open(path).read()
            for kind, items in abi.lists.items():
                quoted = [n for n, _ in items if any(
                    '"%s"' % s in text for s in spellings(kind, n))]
                if len(quoted) >= 3:
                    fail("%s restates CHPP_%s_LIST names %s: use %s()"
                         % (os.path.relpath(path, ROOT), kind, quoted,
                            KINDS.get(kind, ("", "chpp_*_name"))[1]))

    # The wire header's names: parsed and compiled alike, not restated.
    enums, flags, _, values, _, _ = chpp_lua.wire()
    wire_lists = {n: [short for _, short in items] for n, items in enums.items()}
    for prefix, names in flags.items():
        wire_lists[prefix] = [n[len(prefix):] for n in names]
    for n, items in enums.items():
        if any(e not in values for e, _ in items):
            fail("chpp-wire.h: enum %s parsed differently from the compiler" % n)
    for pattern in WIRE_SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            text = open(path).read()
            for n, names in wire_lists.items():
                quoted = [x for x in names if re.search(
                    PAIRED % (re.escape(x), re.escape(x)), text)]
                if len(quoted) >= 3:
                    fail("%s restates %s names %s: take them from W"
                         % (os.path.relpath(path, ROOT), n, quoted))

    for e in errors:
        print("abi-names: " + e)
    if errors:
        return 1
    print("abi-names: %s lists, C and chpp_abi.py agree, no restated tables;"
          " chpp-wire.h: %d name lists, none restated by the dissector"
          % (", ".join("%s (%d)" % (k, len(abi.lists[k])) for k in KINDS),
             len(wire_lists)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
