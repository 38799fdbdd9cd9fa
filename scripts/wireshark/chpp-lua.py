#!/usr/bin/env python3
"""Build the Wireshark dissector of the cHPP link (docs/capture.md).

    scripts/wireshark/chpp-lua.py [--out FILE] [--install]

The dissector's source, scripts/wireshark/chpp-dissector.lua, states no
constant of the wire protocol: names, values, flag bits and the layout of
every structure come from include/hw/chpp/chpp-wire.h.  This script reads
the header (its enums, #defines and structs, and which enum or flag set a
field's comment names), has the C compiler confirm every value and compute
every offset and size (offsetof/sizeof, so the layout is the compiler's,
not a re-derivation), and writes one plugin file: a Lua table `W` of all
that, followed by the dissector's source.

--out FILE: where to write it (default build/wireshark/chpp.lua).
--install: also copy it to ~/.local/lib/wireshark/plugins/chpp.lua, where
Wireshark and tshark load it without -X lua_script:.

Also importable: wire() returns the parsed header (the abi-names lint uses
it to check that nothing restates the header's names).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include/hw/chpp/chpp-wire.h")
SOURCE = os.path.join(ROOT, "scripts/wireshark/chpp-dissector.lua")
DEFAULT_OUT = os.path.join(ROOT, "build/wireshark/chpp.lua")

# The structs the dissector decodes, and the enums and flag sets it shows.
STRUCTS = ["chpp_wire_ext", "chpp_link_rec", "chpp_link_hello",
           "chpp_link_credit", "chpp_link_refuse", "chpp_link_shm"]
FLAG_SETS = ["CHPP_WIRE_F_", "CHPP_LINK_CAP_"]
# Scalar #defines the dissector needs (sizes, magic, EtherType, version).
CONSTANTS = ["CHPP_WIRE_HDR_SIZE", "CHPP_WIRE_EXT_VERSION",
             "CHPP_WIRE_MAX_PAYLOAD", "CHPP_NUM_VCS", "CHPP_LINK_MAGIC",
             "CHPP_LINK_VERSION_MAJOR", "CHPP_ETH_TYPE", "CHPP_ETH_HDR_SIZE",
             "CHPP_ETH_MAC_OUI0", "CHPP_ETH_MAC_OUI1", "CHPP_ETH_MAC_OUI2"]


def _strip_prefix(names):
    """The enumerators' common prefix, up to an underscore."""
    prefix = os.path.commonprefix(names)
    return prefix[:prefix.rfind("_") + 1]


def parse(path=HEADER):
    """enums {name: [(enumerator, short name)]}, flags {prefix: [names]},
    structs {name: [(field, array count expr or None, hint)]}: the hint
    is ("enum", name) or ("flags", prefix) when the field's comment names
    one, ("text", ...) for a char array."""
    text = open(path).read()
    enums = {}
    for m in re.finditer(r"\benum\s+(\w+)\s*\{(.*?)\}", text, re.S):
        body = re.sub(r"/\*.*?\*/", " ", m.group(2), flags=re.S)
        names = [i.partition("=")[0].strip() for i in body.split(",")]
        # CHPP_OP_MAX = CHPP_OP_ATOMIC_ACK is an alias, not a name.
        names = [n for n in names if re.match(r"^\w+$", n) and
                 not n.endswith("_MAX")]
        prefix = _strip_prefix(names)
        enums[m.group(1)] = [(n, n[len(prefix):]) for n in names]
    # Flag sets: those listed, and any a struct field's comment names.
    prefixes = list(FLAG_SETS)
    for m in re.finditer(r"\b(CHPP_\w+_)\*", text):
        if m.group(1) not in prefixes:
            prefixes.append(m.group(1))
    flags = {}
    for prefix in prefixes:
        flags[prefix] = [n for n in re.findall(
            r"^#define\s+(%s\w+)\s+\(1u\s*<<\s*\d+\)" % prefix, text, re.M)]
    structs = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{(.*?)\};", text, re.S):
        fields = []
        for line in m.group(2).splitlines():
            f = re.match(r"\s*(u?int\d+_t|char)\s+(\w+)(?:\[(\w+)\])?;"
                         r"\s*(?:/\*(.*?)\*/)?", line)
            if not f:
                continue
            hint = f.group(4) or ""
            e = re.search(r"enum\s+(\w+)", hint)
            fl = re.search(r"\b(CHPP_\w+_)\*", hint)
            fields.append((f.group(2), f.group(3),
                           ("enum", e.group(1)) if e else
                           ("flags", fl.group(1)) if fl else
                           ("text", "true") if f.group(1) == "char" else None))
        structs[m.group(1)] = fields
    return enums, flags, structs


def compiled(enums, flags, structs):
    """Values and layout as the C compiler sees them."""
    lines = ['#include <stdio.h>', '#include <stddef.h>',
             '#include "hw/chpp/chpp-wire.h"', 'int main(void)', '{']
    for e in enums.values():
        for n, _ in e:
            lines.append('    printf("V %s %%llu\\n", '
                         '(unsigned long long)%s);' % (n, n))
    for names in flags.values():
        for n in names:
            lines.append('    printf("V %s %%llu\\n", '
                         '(unsigned long long)%s);' % (n, n))
    for n in CONSTANTS:
        lines.append('    printf("V %s %%llu\\n", (unsigned long long)%s);'
                     % (n, n))
    for s in STRUCTS:
        lines.append('    printf("S %s %%zu\\n", sizeof(struct %s));' % (s, s))
        for f, count, _ in structs[s]:
            lines.append('    printf("F %s %s %%zu %%zu %%zu\\n", '
                         'offsetof(struct %s, %s), sizeof(((struct %s *)0)->%s),'
                         ' sizeof(((struct %s *)0)->%s%s));'
                         % (s, f, s, f, s, f, s, f, "[0]" if count else ""))
    lines += ['    return 0;', '}']
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "wire.c"), os.path.join(d, "wire")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I",
                        os.path.join(ROOT, "include"), "-o", exe, src],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    values, sizes, layout = {}, {}, {}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "V":
            values[w[1]] = int(w[2])
        elif w[0] == "S":
            sizes[w[1]] = int(w[2])
        else:
            layout[(w[1], w[2])] = tuple(int(x) for x in w[3:])
    return values, sizes, layout


def wire():
    """The header as the dissector sees it: parsed, then compiled."""
    enums, flags, structs = parse()
    return (enums, flags, structs) + compiled(enums, flags, structs)


def lua_str(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def lua_table():
    enums, flags, structs, values, sizes, layout = wire()
    out = ["-- Generated by scripts/wireshark/chpp-lua.py from",
           "-- include/hw/chpp/chpp-wire.h: do not edit.",
           "local W = {", "  enums = {"]
    for name, items in enums.items():
        out.append("    %s = {" % name)
        out += ["      [%d] = %s," % (values[n], lua_str(short))
                for n, short in items]
        out.append("    },")
    out += ["  },", "  flags = {"]
    for prefix, names in flags.items():
        out.append("    %s = {" % prefix)
        out += ["      { %d, %s }," % (values[n], lua_str(n[len(prefix):]))
                for n in names]
        out.append("    },")
    out += ["  },", "  const = {"]
    out += ["    %s = %d," % (n[len("CHPP_"):], values[n]) for n in CONSTANTS]
    out += ["  },", "  structs = {"]
    for s in STRUCTS:
        out.append("    %s = { size = %d, fields = {" % (s, sizes[s]))
        for f, count, hint in structs[s]:
            off, size, elem = layout[(s, f)]
            h = ""
            if hint and hint[0] == "text":
                h = ", text = true"
            elif hint:
                h = ", %s = %s" % (hint[0], lua_str(hint[1]))
            out.append("      { name = %s, off = %d, size = %d, elem = %d%s },"
                       % (lua_str(f), off, size, elem, h))
        out.append("    } },")
    out += ["  },", "}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--install", action="store_true")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    text = lua_table() + "\n" + open(SOURCE).read()
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print("chpp-lua: wrote %s" % args.out)
    if args.install:
        plugins = os.path.expanduser("~/.local/lib/wireshark/plugins")
        os.makedirs(plugins, exist_ok=True)
        shutil.copy(args.out, os.path.join(plugins, "chpp.lua"))
        print("chpp-lua: installed %s" % os.path.join(plugins, "chpp.lua"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
