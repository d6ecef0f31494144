# SPDX-License-Identifier: MIT
"""pip install of bindings/python: an importable umtorch, anywhere, that
finds libum.so.0 through the dynamic linker and exposes umtorch.cuda."""

import os
import shutil
import site
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


def _fresh_venv(tmp):
    """A new virtual environment whose python sees this interpreter's
    packages (torch, whichever this run tests) through a .pth file, as a
    user's venv sees the torch installed into it."""
    venv = os.path.join(tmp, "venv")
    # without pip of its own: ours installs into it (pip --python)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv],
                   check=True, timeout=120)
    python = os.path.join(venv, "bin", "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()"
         "['purelib'])"], capture_output=True, text=True, check=True)
    with open(os.path.join(purelib.stdout.strip(), "torch-here.pth"),
              "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    return python


def test_pip_install_into_a_fresh_venv_imports_or_says_what_is_missing():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
            "build", "tests", "__pycache__", "*.egg-info"))
        python = _fresh_venv(tmp)
        # as a user runs it: pip builds the wheel with setuptools from PyPI
        pip = subprocess.run([sys.executable, "-m", "pip", "--python",
                              python, "install", "--quiet", "--no-deps",
                              src], capture_output=True, text=True,
                             timeout=300)
        assert pip.returncode == 0, pip.stdout + pip.stderr
        code = ("import umtorch, torch; print(torch.__version__);"
                " print(umtorch._lib.LIBUM_PATH)")
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "UMTORCH_LIBUM",
                            "PYTHONPATH")}
        bare = subprocess.run([python, "-c", code], env=env, cwd=tmp,
                              capture_output=True, text=True, timeout=120)
        assert bare.returncode != 0
        assert "ImportError: umtorch needs libum.so.0" in bare.stderr, \
            bare.stderr
        assert "UMTORCH_LIBUM" in bare.stderr, bare.stderr
        env["UMTORCH_LIBUM"] = os.path.join(LIBUM, "libum.so.0")
        out = subprocess.run([python, "-c", code], env=env, cwd=tmp,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        import torch
        assert out.stdout.split() == [torch.__version__,
                                      env["UMTORCH_LIBUM"]], out.stdout
