# SPDX-License-Identifier: MIT
"""Shared helpers of umtorch's tests: a small MLP and its training loop."""

import os
import subprocess
import sys
import tempfile

import torch

import umtorch

BUDGET = 4 << 20	# device budget: less than the offloaded state


class Skip(Exception):
    """Raised by a test that cannot run here (the reason is printed)."""


def context(**kw):
    kw.setdefault("backend", "sim")
    kw.setdefault("device_budget", BUDGET)
    kw.setdefault("sim_capacity", "64M")
    return umtorch.Context(**kw)


def model():
    """64 -> 512 -> 512 -> 512 -> 512 -> 10, fixed initial weights: the
    optimizer state of the 512x512 layers is 2 MiB per layer."""
    torch.manual_seed(1)
    layers = [torch.nn.Linear(64, 512), torch.nn.ReLU()]
    for _ in range(3):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(512, 10))


def train(m, opt, steps, seed=2, extra=None):
    """steps of cross-entropy on synthetic data; returns the losses.
    extra: (module, input) whose output's sum is added to the loss."""
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x = torch.randn(64, 64, generator=gen)
        y = torch.randint(0, 10, (64,), generator=gen)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        if extra is not None:
            loss = loss + extra[0](extra[1]).sum() * 1e-3
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def same_params(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.parameters(),
                                                  b.parameters()))


def raises(rc, fn, *args, kind=umtorch.UmError, **kw):
    """fn(*args) must raise kind carrying rc (a negative errno)."""
    try:
        fn(*args, **kw)
    except kind as e:
        assert e.rc == rc, "%s: rc %d, want %d" % (e, e.rc, rc)
        return e
    raise AssertionError("%s did not raise %s" % (fn, kind.__name__))


def state_bytes(opt):
    """Bytes of the optimizer's tensor state (read through copies)."""
    return sum(v.numel() * v.element_size() for s in opt.state.values()
               for v in s.values() if torch.is_tensor(v))


def run_ranks(script, world, *args, timeout=100):
    """Run script RANK WORLD RENDEZVOUS_FILE args... once per rank over
    gloo on loopback (a CI container's hostname may not resolve to an
    address gloo can use); returns the lines all ranks printed. A rank
    stuck waiting for another is killed after timeout seconds."""
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "rendezvous")
        procs = [subprocess.Popen(
            [sys.executable, script, str(r), str(world), init] +
            [a.replace("{tmp}", tmp) for a in args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env) for r in range(world)]
        try:
            outs = [p.communicate(timeout=timeout) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    lines = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        lines += [line for line in out.split("\n") if line]
    for line in lines:
        print("# " + line)
    return lines
