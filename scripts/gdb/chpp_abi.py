# Names and constants of include/hw/chpp/chpp-hca-abi.h, read from the
# header itself so that Python tools (the gdb helper chpp-hca.py, the
# abi-names lint) never restate them.  No gdb dependency.
#
#   abi = Abi()                      # the header next to this checkout
#   abi.lists["CMD"]                 # [("QUERY_DEV_CAP", 3), ...]
#   abi.names("QPS")                 # {0: "RESET", 1: "INIT", ...}
#   abi.enums["chpp_counter"]        # {"CHPP_CNT_CMDS": 0, ...}
#   abi.enum_names("chpp_qp_type", "CHPP_QPT_")   # {0: "RC", ...}
#   abi.defines["CHPP_DB_FIFO_DEPTH"]             # 32
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.normpath(os.path.join(HERE, "../../include/hw/chpp/chpp-hca-abi.h"))

_INT = re.compile(r"^\(?\s*(0[xX][0-9a-fA-F]+|\d+)[uU]?\s*\)?$")


def _int(text):
    m = _INT.match(text.strip())
    return int(m.group(1), 0) if m else None


class Abi:
    def __init__(self, path=HEADER):
        self.path = path
        with open(path) as f:
            text = f.read()
        # Comments first (they may end in a line continuation), then lines.
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = text.replace("\\\n", " ")

        # X-macro lists: #define CHPP_<KIND>_LIST(X) X(NAME, value) ...
        self.lists = {}
        for m in re.finditer(r"^#define\s+CHPP_(\w+)_LIST\(X\)(.*)$", text, re.M):
            items = re.findall(r"X\(\s*(\w+)\s*,\s*([^)]+?)\s*\)", m.group(2))
            self.lists[m.group(1)] = [(n, int(v, 0)) for n, v in items]

        # #defines whose value is a plain integer.
        self.defines = {}
        for m in re.finditer(r"^#define\s+(\w+)\s+(.+?)\s*$", text, re.M):
            v = _int(m.group(2))
            if v is not None:
                self.defines[m.group(1)] = v

        # Enums with literal or implicit values; a list used inside an enum
        # stands for its enumerators.
        def expand(m):
            return "".join("CHPP_%s_%s = %d," % (m.group(1), n, v)
                           for n, v in self.lists.get(m.group(1), []))
        self.enums = {}
        for m in re.finditer(r"\benum\s+(\w+)\s*\{(.*?)\}", text, re.S):
            body = re.sub(r"CHPP_(\w+)_LIST\(\w+\)", expand, m.group(2))
            values, nxt = {}, 0
            for item in body.split(","):
                name, _, val = item.partition("=")
                name = name.strip()
                if not re.match(r"^\w+$", name):
                    continue
                if val:
                    nxt = _int(val)
                    if nxt is None:
                        nxt = values.get(val.strip())
                if nxt is not None:
                    values[name] = nxt
                    nxt += 1
            self.enums[m.group(1)] = values

    def names(self, kind):
        """value -> name of an X-macro list (CMD, STAT, EVENT, QPS)."""
        return {v: n for n, v in self.lists[kind]}

    def enum_names(self, enum, prefix):
        """value -> name without prefix of a plain enum."""
        return {v: n[len(prefix):] for n, v in self.enums[enum].items()
                if n.startswith(prefix)}
