# SPDX-License-Identifier: MIT
"""pip install of bindings/python: an importable umtorch, anywhere, that
finds libum.so.0 through the dynamic linker and exposes umtorch.cuda."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
LIBUM = os.path.normpath(os.path.join(PKG, "..", "..", "libum", "build"))


def test_pip_install_gives_importable_package():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")		# pip writes build files
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
            "build", "tests", "__pycache__", "*.egg-info"))
        target = os.path.join(tmp, "site")
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps",
             "--no-build-isolation", "--no-index", "--quiet",
             "--target", target, src], capture_output=True, text=True,
            timeout=120)
        assert pip.returncode == 0, pip.stdout + pip.stderr
        assert os.path.exists(os.path.join(target, "umtorch", "optim.py"))
        code = ("import umtorch, torch; print(umtorch.__file__); "
                "print(umtorch._lib.LIBUM_PATH); print(umtorch.cuda.__name__);"
                " ctx = umtorch.Context(backend='sim', device_budget='4M');"
                " print(ctx.close())")
        env = dict(os.environ, PYTHONPATH=target, LD_LIBRARY_PATH=LIBUM)
        out = subprocess.run([sys.executable, "-c", code], env=env,
                             capture_output=True, text=True, timeout=120,
                             cwd=tmp)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split()
        assert lines[0].startswith(target), lines
        assert lines[1] == "libum.so.0", lines	# found by ld.so
        assert lines[2:] == ["umtorch.cuda", "0"], lines
