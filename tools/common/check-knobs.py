#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-knobs.py - the tools' knob table (tools/common/knobs.h, as ut-knobs
prints it) against umm.ko's own: the knobs kmod/sysfs.c creates, what their
store functions accept and their values at load (kmod/state.c for the
global and cgroup/ knobs, the node and GPU setup in kmod/sysfs.c); and the
ABI document's "Range A .. B, default D" line of every knob. Any difference
is an error that names the knob.

  check-knobs.py --kmod DIR --knobs UT_KNOBS [--abi FILE]

The module's sources go through cpp with the kernel's headers left out, so
its macros (UMM_U32_KNOB, __ATTR, UMM_QUEUE_LEN_MIN ...) are expanded the
way the compiler sees them; no kernel tree is needed. Exit 0 when they
agree, 1 with one line per difference, 2 when a source cannot be read.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The attribute lists of kmod/sysfs.c and the directory each one fills, as
# ut-knobs writes knob names. A new directory needs a line here and a list
# in knobs.h.
DIRS = {
    'umm_attrs': '',
    'umm_node_attrs': 'nodes/nodeN/',
    'umm_gpu_attrs': 'gpus/gpuN/',
    'umm_cg_attrs': 'cgroup/',
}
# Where a directory's objects get their values at load: the initializer
# of struct umm_state (kmod/state.c; cgroup/'s knobs are its cg_* fields)
# or the function that allocates them (zeroed, so a field it does not set
# starts at 0).
SETUP = {'': None, 'nodes/nodeN/': 'umm_add_node', 'gpus/gpuN/': 'umm_add_gpu',
         'cgroup/': None}

PRELUDE = r'''
#define __ATTR(_name, _mode, _show, _store) \
	__KNOBATTR__ { #_name, _mode, _show, _store }
'''

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1


class Bad(Exception):
    pass


def preprocess(kmod, files):
    """The files of kmod through cpp, their <...> includes dropped."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(kmod):
            if not name.endswith(('.c', '.h')):
                continue
            with open(os.path.join(kmod, name)) as f:
                text = f.read()
            text = re.sub(r'^\s*#\s*include\s*<[^>]*>', '', text, flags=re.M)
            with open(os.path.join(tmp, name), 'w') as f:
                f.write(text)
        with open(os.path.join(tmp, '__prelude.h'), 'w') as f:
            f.write(PRELUDE)
        for name in files:
            path = os.path.join(tmp, name)
            if not os.path.exists(path):
                raise Bad('%s/%s: no such file' % (kmod, name))
            r = subprocess.run(['cpp', '-P', '-nostdinc', '-undef',
                                '-D__KERNEL__', '-include',
                                os.path.join(tmp, '__prelude.h'), path],
                               capture_output=True, text=True)
            if r.returncode:
                raise Bad('cpp %s/%s failed:\n%s' % (kmod, name, r.stderr))
            out[name] = r.stdout
    return out


def value(expr, what):
    """An integer constant expression as the kernel writes one."""
    e = re.sub(r'\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b',
               r'\1', expr.strip())
    e = re.sub(r'\b0([0-7]+)\b', r'0o\1', e)      # C octal
    e = re.sub(r'\btrue\b', '1', e)
    e = re.sub(r'\bfalse\b', '0', e)
    e = re.sub(r'\bU32_MAX\b', str(U32_MAX), e)
    e = re.sub(r'\bU64_MAX\b', str(U64_MAX), e)
    e = re.sub(r'\(\s*(?:u32|u64|unsigned\s+\w+)\s*\)', '', e)
    if not re.fullmatch(r'[0-9a-fA-FxXo()<>+\-*/|& ]+', e):
        raise Bad('%s: cannot evaluate "%s"' % (what, expr.strip()))
    try:
        return int(eval(e.replace('/', '//'), {'__builtins__': {}}))
    except Exception:
        raise Bad('%s: cannot evaluate "%s"' % (what, expr.strip()))


def operand(text, start, whole=False):
    """The C expression at text[start:], up to ||, &&, a comma (whole: not
    these), a ';' or the ')' that closes what it is inside."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '(':
            depth += 1
        elif c == ')':
            if not depth:
                break
            depth -= 1
        elif c == ';' or (not depth and not whole and
                            (c == ',' or text[i:i + 2] in ('||', '&&'))):
            break
        i += 1
    return text[start:i]


def bound(text, var, op):
    """The expression var is compared with (op '<' or '>'), or None."""
    m = re.search(r'\b%s\s*%s(?!=)' % (re.escape(var), op), text)
    return operand(text, m.end()) if m else None


def body(text, func):
    """The body of function func in preprocessed text, or None."""
    m = re.search(r'\b%s\s*\([^;{]*\)\s*\{' % re.escape(func), text)
    if not m:
        return None
    depth, i = 1, m.end()
    while depth and i < len(text):
        depth += {'{': 1, '}': -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def attrs(text):
    """name -> (file, mode, show, store) of every kobj_attribute."""
    one = {}
    for m in re.finditer(r'struct\s+kobj_attribute\s+(\w+)\s*=\s*'
                         r'__KNOBATTR__\s*\{([^}]*)\}', text):
        one[m.group(1)] = split_attr(m.group(2))
    return one


def split_attr(s):
    f = [x.strip() for x in s.split(',')]
    return (f[0].strip('"'), f[1], f[2], f[3])


def module_knobs(src):
    """name -> dict(kind, min, max, default, store) from the module."""
    sysfs = src['sysfs.c']
    named = attrs(sysfs)
    lists = {}
    for m in re.finditer(r'struct\s+kobj_attribute\s+(\w+)\s*\[\s*\]\s*=\s*'
                         r'\{(.*?)\};', sysfs, re.S):
        lists[m.group(1)] = [split_attr(a) for a in
                             re.findall(r'__KNOBATTR__\s*\{([^}]*)\}',
                                        m.group(2))]
    for m in re.finditer(r'struct\s+attribute\s*\*\s*(\w+)\s*\[\s*\]\s*=\s*'
                         r'\{(.*?)\};', sysfs, re.S):
        ents = []
        for ref in re.findall(r'&\s*(\w+)\s*\.\s*attr\b', m.group(2)):
            if ref not in named:
                raise Bad('kmod/sysfs.c: %s lists %s, which is not an '
                          '__ATTR() kobj_attribute' % (m.group(1), ref))
            ents.append(named[ref])
        lists[m.group(1)] = ents
    knobs = {}
    for lname, ents in lists.items():
        if lname not in DIRS:
            raise Bad('kmod/sysfs.c: attribute list %s: which directory is '
                      'it? Add it to DIRS in tools/common/check-knobs.py '
                      'and its knobs to a list in tools/common/knobs.h'
                      % lname)
        for fname, mode, show, store in ents:
            m = value(mode, 'kmod/sysfs.c: mode of %s' % fname)
            if not (m & 0o200 and m & 0o400):
                continue        # a figure (0400) or the inject file (0200)
            knobs[DIRS[lname] + fname] = analyse(src, DIRS[lname], fname,
                                                 store)
    return knobs


def analyse(src, d, fname, store):
    name = d + fname
    b = body(src['sysfs.c'], store)
    if b is None:
        raise Bad('knob %s: kmod/sysfs.c has no store function %s'
                  % (name, store))
    k = {'store': store}
    m = re.search(r'umm_store_u32\s*\(\s*buf\s*,', b)
    if m:
        lo = operand(b, m.end())
        hi = operand(b, m.end() + len(lo) + 1)
    if 'umm_parse_bool' in b:
        k.update(kind='bool', min=0, max=1)
    elif m:
        k.update(kind='num', min=value(lo, name), max=value(hi, name))
    elif re.search(r'\bumm_(?:\w+_)?wm_store\s*\(', b):
        # umm_wm_store (a node's) or umm_cg_wm_store: either orders the
        # three with umm_node_check_wm()
        helper = re.search(r'\b(umm_(?:\w+_)?wm_store)\s*\(', b).group(1)
        hb = body(src['sysfs.c'], helper) or ''
        if 'umm_node_check_wm' not in hb:
            raise Bad('knob %s: %s() (kmod/sysfs.c) does not check the '
                      'order with umm_node_check_wm()' % (name, helper))
        wm = body(src['monitor.c'], 'umm_node_check_wm') or ''
        mx = bound(wm, 'low', '>')
        if not mx:
            raise Bad('knob %s: cannot read the bound of low in '
                      'umm_node_check_wm() (kmod/monitor.c)' % name)
        k.update(kind='wm', min=0, max=value(mx, name))
    else:
        p = re.search(r'umm_parse_u(32|64)\s*\(\s*buf\s*,\s*&\s*(\w+)\s*\)',
                      b)
        if not p:
            raise Bad('knob %s: check-knobs.py cannot tell what %s() '
                      'accepts (it knows umm_parse_bool, umm_store_u32, '
                      'umm_wm_store, umm_cg_wm_store, umm_parse_u32/u64 '
                      'with "v < MIN || v > MAX")' % (name, store))
        cond = operand(b, p.start(), True)  # the rest of the if's condition
        lo = bound(cond, p.group(2), '<')
        hi = bound(cond, p.group(2), '>')
        k.update(kind='num', min=value(lo, name) if lo else 0,
                 max=value(hi, name) if hi else
                 (U32_MAX if p.group(1) == '32' else U64_MAX))
    if k['kind'] == 'num' and '_bytes' in fname:
        k['kind'] = 'size'      # units are in the names
    k['default'] = default(src, d, fname, b)
    return k


def default(src, d, fname, b):
    """The knob's value at load."""
    name = d + fname
    if SETUP[d] is None:
        fields = [f for f in re.findall(r'\bumm\s*\.\s*(\w+)', b)
                  if f != 'mutex']
        field = fields[0] if fields else fname
        init = re.search(r'\bstruct\s+umm_state\s+umm\s*=\s*\{(.*?)\};',
                         src['state.c'], re.S)
        if not init:
            raise Bad('kmod/state.c: no initializer of struct umm_state umm')
        m = re.search(r'\.\s*%s\s*=\s*([^,}]+)' % field, init.group(1))
        return value(m.group(1), name) if m else 0
    fields = re.findall(r'\b[ng]\s*->\s*(\w+)', b)
    field = fields[0] if fields else fname
    setup = body(src['sysfs.c'], SETUP[d])
    if setup is None:
        raise Bad('kmod/sysfs.c: no %s()' % SETUP[d])
    m = re.search(r'\b[ng]\s*->\s*%s\s*=\s*([^;]+);' % field, setup)
    return value(m.group(1), name) if m else 0


def tool_knobs(prog):
    r = subprocess.run([prog], capture_output=True, text=True)
    if r.returncode:
        raise Bad('%s failed: %s' % (prog, r.stderr.strip()))
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        name, kind, mn, mx, de, fl = line.split()
        out[name] = {'kind': kind, 'min': int(mn), 'max': int(mx),
                     'default': int(de), 'floor': int(fl)}
    return out


def abi_ranges(path):
    """knob -> the text of its Description in the ABI document."""
    with open(path) as f:
        text = f.read()
    out = {}
    for blk in re.split(r'\n(?=What:)', text):
        m = re.match(r'What:\s*/sys/kernel/mm/umm/(\S+)', blk)
        if m:
            out[m.group(1).replace('<N>', 'N')] = ' '.join(blk.split())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kmod', required=True)
    ap.add_argument('--knobs', required=True)
    ap.add_argument('--abi')
    a = ap.parse_args()
    try:
        mod = module_knobs(preprocess(a.kmod, ['sysfs.c', 'state.c',
                                               'monitor.c']))
        tool = tool_knobs(a.knobs)
        abi = abi_ranges(a.abi) if a.abi else None
    except (Bad, OSError) as e:
        print('check-knobs: %s' % e, file=sys.stderr)
        return 2
    errs = []
    for name in sorted(set(mod) - set(tool)):
        errs.append('knob %s: kmod/sysfs.c has it (%s), tools/common/'
                    'knobs.h has no row for it' % (name, mod[name]['store']))
    for name in sorted(set(tool) - set(mod)):
        errs.append('knob %s: a row in tools/common/knobs.h, but kmod/'
                    'sysfs.c creates no such knob' % name)
    for name in sorted(set(mod) & set(tool)):
        m, t = mod[name], tool[name]
        for f in ('kind', 'min', 'max', 'default'):
            if m[f] != t[f]:
                errs.append('knob %s: %s is %s in kmod, %s in tools/common/'
                            'knobs.h' % (name, f, m[f], t[f]))
    for name in sorted(tool) if abi is not None else ():
        t = tool[name]
        d = abi.get(name)
        want = 'Range %d .. %d, default %d' % (t['min'], t['max'],
                                               t['default'])
        if d is None:
            errs.append('knob %s: no entry in %s' % (name, a.abi))
        elif want not in d:
            errs.append('knob %s: %s does not say "%s"' % (name, a.abi, want))
    for e in errs:
        print('check-knobs: %s' % e, file=sys.stderr)
    if not errs:
        print('check-knobs: %d knobs agree (kmod/sysfs.c, knobs.h%s)'
              % (len(mod), ', ABI' if abi is not None else ''))
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main())
