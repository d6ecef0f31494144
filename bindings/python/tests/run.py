# SPDX-License-Identifier: MIT
"""Runs umtorch's tests (tests/test_*.py) and prints kselftest-style TAP.

Tests are listed with ast (nothing imported), so the plan line and the
skips are right even where torch is missing. Each test module runs in a
worker process (one torch import per module); a test that crashes or
runs past TIMEOUT seconds fails alone: the worker is restarted after it.
A test skips by raising tests.common.Skip. Exit 0 pass, 1 fail, 4 skip.
"""

import ast
import glob
import os
import selectors
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = float(os.environ.get("UM_TEST_TIMEOUT", 120))


def listing():
    """[(module, test name)] in file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        mod = os.path.basename(path)[:-3]
        tree = ast.parse(open(path).read())
        out += [(mod, n.name) for n in tree.body
                if isinstance(n, ast.FunctionDef)
                and n.name.startswith("test_")]
    return out


def worker(mod, names):
    """Run names of mod here; one 'RESULT name status [reason]' each."""
    sys.path[:0] = [os.path.dirname(HERE), HERE]
    from common import Skip
    module = __import__(mod)
    for name in names:
        print("START", name, flush=True)
        try:
            getattr(module, name)()
            print("RESULT", name, "ok", flush=True)
        except Skip as e:
            print("RESULT", name, "skip", e, flush=True)
        except BaseException:
            for line in traceback.format_exc().splitlines():
                print("#", line, flush=True)
            print("RESULT", name, "fail", flush=True)


def run_module(mod, names):
    """Yields (name, status, reason) for names, restarting after crashes."""
    while names:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", mod] + names,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current, deadline, done = None, time.time() + TIMEOUT, []
        while True:
            if not sel.select(max(0.0, deadline - time.time())):
                proc.kill()
                reason = "timeout after %ds" % TIMEOUT
                break
            line = proc.stdout.readline()
            if not line:
                reason = "worker died (status %s)" % proc.wait()
                break
            word = line.split(" ", 3)
            if word[0] == "START":
                current, deadline = word[1].strip(), time.time() + TIMEOUT
            elif word[0] == "RESULT":
                done.append(word[1])
                yield word[1], word[2].strip(), (word[3:] or [""])[0].strip()
                current = None
            else:
                print("# " + line.rstrip() if line[0] != "#" else
                      line.rstrip(), flush=True)
        proc.wait()
        if current is None:
            return
        yield current, "fail", reason
        names = names[names.index(current) + 1:]


def torch_probe():
    """(torch's version, None) or (None, why it does not import)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True)
    if probe.returncode == 0:
        return probe.stdout.strip(), None
    lines = probe.stderr.strip().splitlines()
    return None, lines[-1] if lines else "import torch failed"


def results(tests, missing):
    """Yields (name, status, reason) for every test, in order."""
    if missing:
        for _, name in tests:
            yield name, "skip", "no torch: " + missing
        return
    for mod in dict.fromkeys(m for m, _ in tests):
        yield from run_module(mod, [n for m, n in tests if m == mod])


def main():
    tests = listing()
    version, missing = torch_probe()
    print("TAP version 13")
    print("1..%d" % len(tests))
    # two runs in one make check: say which torch this one is
    print("# %s, torch %s" % (sys.executable, version or "missing"),
          flush=True)
    counts = {"ok": 0, "fail": 0, "skip": 0}
    for n, (name, status, reason) in enumerate(results(tests, missing), 1):
        counts[status] += 1
        if status == "ok":
            print("ok %d %s" % (n, name), flush=True)
        elif status == "skip":
            print("ok %d %s # SKIP %s" % (n, name, reason), flush=True)
        else:
            print("not ok %d %s%s" % (n, name, " # " + reason
                                       if reason else ""), flush=True)
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0"
          % (counts["ok"], counts["fail"], counts["skip"]))
    if counts["fail"]:
        return 1
    return 4 if counts["skip"] == len(tests) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3:])
        sys.exit(0)
    sys.exit(main())
