"""chpp-hca's ABI constants, as the C compiler reads them from
include/hw/chpp/ (the single source of truth), for scripts that build the
device's binary input (fuzz seeds) and must not restate them.

    from chpp_abi import abi
    A = abi("CHPP_BAR0_SIZE", "sizeof(struct chpp_link_hello)",
            "offsetof(struct chpp_link_hello, epoch)")
    A["CHPP_BAR0_SIZE"]

Each argument is a C constant expression over the ABI headers; the values
come back as Python ints, keyed by the expression as written.
"""
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HEADERS = ("hw/chpp/chpp-hca-abi.h", "hw/chpp/chpp-wire.h")


def abi(*exprs):
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += ['#include "%s"' % h for h in HEADERS]
    lines += ["int main(void)", "{"]
    for e in exprs:
        lines.append('    printf("%%llu\\n", (unsigned long long)(%s));' % e)
    lines += ["    return 0;", "}"]
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "abi.c"), os.path.join(d, "abi")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror",
                        "-I", os.path.join(ROOT, "include"), "-o", exe, src],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout.split()
    return dict(zip(exprs, (int(v) for v in out)))
