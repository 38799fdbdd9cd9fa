#!/usr/bin/env python3
"""Check guest-driver/provider/ibverbs_private.h against this machine's
libibverbs.so.1 (docs/verbs-provider.md, "How the private ABI was checked").

- Every function the header declares is exported with symbol version
  IBVERBS_PRIVATE_34.
- struct verbs_context_ops: verbs_set_ops loads one pointer per entry from
  the table, at 0, 8, 16, ...: their number must be the header's entry
  count; every entry it also copies into a field of the public
  struct verbs_context / ibv_context_ops (offsets from infiniband/verbs.h,
  measured with the C compiler) must carry that field's name in the header.
- struct verbs_qp: ibv_qp_to_qp_ex tests one bit of the QP's comp_mask
  ("test $BIT,OFF(%rdi)"): OFF must be offsetof(struct verbs_qp, comp_mask)
  and BIT VERBS_QP_EX, compiled from the header.

Exits 0 and prints a summary when everything matches, 1 otherwise.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, 'guest-driver/provider/ibverbs_private.h')
LIB = '/usr/lib/x86_64-linux-gnu/libibverbs.so.1'
VERSION = 'IBVERBS_PRIVATE_34'

# Public fields of struct verbs_context and of ibv_context.ops: a store
# into one of them names the operation verbs_set_ops copied there.
CTX_FIELDS = '''query_port advise_mr alloc_null_mr read_counters
attach_counters_point_flow create_counters destroy_counters reg_dm_mr alloc_dm
free_dm modify_flow_action_esp destroy_flow_action create_flow_action_esp
modify_qp_rate_limit alloc_parent_domain dealloc_td alloc_td modify_cq
post_srq_ops destroy_rwq_ind_table create_rwq_ind_table destroy_wq modify_wq
create_wq query_rt_values create_cq_ex query_device_ex ibv_destroy_flow
ibv_create_flow open_qp create_qp_ex get_srq_num create_srq_ex open_xrcd
close_xrcd'''.split()
OPS_FIELDS = '''_compat_query_device _compat_query_port _compat_alloc_pd
_compat_dealloc_pd _compat_reg_mr _compat_rereg_mr _compat_dereg_mr alloc_mw
bind_mw dealloc_mw _compat_create_cq poll_cq req_notify_cq _compat_cq_event
_compat_resize_cq _compat_destroy_cq _compat_create_srq _compat_modify_srq
_compat_query_srq _compat_destroy_srq post_srq_recv _compat_create_qp
_compat_query_qp _compat_modify_qp _compat_destroy_qp post_send post_recv
_compat_create_ah _compat_destroy_ah _compat_attach_mcast
_compat_detach_mcast _compat_async_event'''.split()


def fail(msg):
    print('provider-abi: FAIL ' + msg)
    sys.exit(1)


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


def header_ops(text):
    body = text[text.index('struct verbs_context_ops {'):]
    body = body[:body.index('};')]
    return [a or b for a, b in
            re.findall(r'\(\*(\w+)\)|void \*(\w+);', body)]


def header_functions(text):
    return sorted(set(re.findall(r'^(?:int|void) \**(\w+)\(', text, re.M)))


def public_offsets():
    src = '#include <stdio.h>\n#include <stddef.h>\n'
    src += '#include <infiniband/verbs.h>\nint main(void)\n{\n'
    for f in CTX_FIELDS:
        src += ('\tprintf("%%zu %s\\n", offsetof(struct verbs_context, %s));\n'
                % (f, f))
    for f in OPS_FIELDS:
        src += ('\tprintf("%%zu %s\\n", offsetof(struct verbs_context, '
                'context.ops.%s));\n' % (f, f))
    src += '\treturn 0;\n}\n'
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, 'off.c'), os.path.join(d, 'off')
        with open(c, 'w') as fh:
            fh.write(src)
        run('cc', '-o', exe, c)
        out = run(exe)
    offs = {}
    for line in out.splitlines():
        off, name = line.split()
        name = name.replace('_compat_', '').replace('ibv_', '')
        offs[int(off)] = name
    return offs


def verbs_qp_layout():
    """(offsetof(struct verbs_qp, comp_mask), VERBS_QP_EX) of the header."""
    src = ('#include <stdio.h>\n#include "ibverbs_private.h"\n'
           'int main(void)\n{\n\tprintf("%zu %d\\n", '
           'offsetof(struct verbs_qp, comp_mask), VERBS_QP_EX);\n'
           '\treturn 0;\n}\n')
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, 'qp.c'), os.path.join(d, 'qp')
        with open(c, 'w') as fh:
            fh.write(src)
        run('cc', '-I', os.path.dirname(HEADER), '-o', exe, c)
        off, bit = run(exe).split()
    return int(off), int(bit)


def check_qp_to_qp_ex(dyn):
    for l in dyn.splitlines():
        if l.split() and l.split()[-1] == 'ibv_qp_to_qp_ex':
            start, size = int(l.split()[0], 16), int(l.split()[-3], 16)
            break
    else:
        fail('no ibv_qp_to_qp_ex in ' + LIB)
    asm = run('objdump', '-d', '--no-show-raw-insn',
              '--start-address=%#x' % start,
              '--stop-address=%#x' % (start + size), LIB)
    m = re.search(r'test[bwl]?\s+\$(0x[0-9a-f]+),(0x[0-9a-f]+)\(%rdi\)', asm)
    if not m:
        fail('ibv_qp_to_qp_ex: no test of the QP\'s comp_mask:\n' + asm)
    lib_bit, lib_off = int(m.group(1), 16), int(m.group(2), 16)
    off, bit = verbs_qp_layout()
    if (lib_off, lib_bit) != (off, bit):
        fail('ibv_qp_to_qp_ex tests bit %#x at %#x, the header has '
             'VERBS_QP_EX %#x at offsetof(struct verbs_qp, comp_mask) %#x'
             % (lib_bit, lib_off, bit, off))
    return off, bit


def main():
    text = open(HEADER).read()
    ops = header_ops(text)
    dyn = run('objdump', '-T', LIB)
    exported = {l.split()[-1]: l for l in dyn.splitlines() if VERSION in l}
    funcs = header_functions(text)
    for f in funcs:
        if f not in exported:
            fail('%s is not exported as %s by %s' % (f, VERSION, LIB))
    start = None
    for l in dyn.splitlines():
        if l.split() and l.split()[-1] == 'verbs_set_ops':
            start, size = int(l.split()[0], 16), int(l.split()[-3], 16)
    if start is None:
        fail('no verbs_set_ops in ' + LIB)
    asm = run('objdump', '-d', '--no-show-raw-insn',
              '--start-address=%#x' % start,
              '--stop-address=%#x' % (start + size), LIB)
    # Each entry: one load from the table (the first through %rsi before
    # the table pointer moves to %rax), then stores of that register.
    pairs, cur = {}, None
    for l in asm.splitlines():
        m = re.search(r'mov\s+(0x[0-9a-f]+)?\((%rax|%rsi)\),%\w+', l)
        if m and (m.group(2) == '%rax' or cur is None):
            cur = int(m.group(1) or '0', 16)
            pairs.setdefault(cur, None)
            continue
        m = re.search(r'mov\s+%\w+,(0x[0-9a-f]+)?\((%rcx|%rdi)\)', l)
        if m and cur is not None:
            pairs[cur] = int(m.group(1) or '0', 16)
    if sorted(pairs) != [8 * i for i in range(len(pairs))]:
        fail('verbs_set_ops does not read a dense table: %s' % sorted(pairs))
    if len(pairs) != len(ops):
        fail('verbs_set_ops reads %d entries, the header has %d'
             % (len(pairs), len(ops)))
    offs = public_offsets()
    named = 0
    for off, dst in sorted(pairs.items()):
        if dst is None:
            continue
        want = offs.get(dst)
        if want is None:
            fail('entry %d is copied to unknown context offset %#x'
                 % (off // 8, dst))
        if ops[off // 8] != want:
            fail('entry %d: the header says %s, libibverbs copies it to %s'
                 % (off // 8, ops[off // 8], want))
        named += 1
    qp_off, qp_bit = check_qp_to_qp_ex(dyn)
    print('provider-abi: PASS %d functions exported as %s; verbs_context_ops:'
          ' %d entries, %d checked by name; verbs_qp: VERBS_QP_EX %#x at %#x'
          % (len(funcs), VERSION, len(ops), named, qp_bit, qp_off))


main()
