# SPDX-License-Identifier: MIT
"""What an error says: libum's own line for a refused call, torch's own
words (and advice) for what torch refuses."""

import torch

import umtorch
from common import context, raises


def test_refused_acquire_carries_libums_line_with_an_event_handler():
    events = []
    with context(device_budget="4M") as ctx:
        ctx.on_event(events.append)
        held = [ctx.alloc("2M", name="held%d" % i).acquire()
                for i in range(2)]
        extra = ctx.alloc("2M", name="extra")
        try:
            e = raises(-12, extra.acquire)
        finally:
            for r in held:
                r.release()
        assert events, "libum sent no event on the way"
        assert "extra" in str(e) and "budget" in str(e), e	# libum's line


def test_sparse_gradient_refusal_is_torchs_own_with_its_advice():
    for cls in (torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop):
        want = None
        for offload in (False, True):
            emb = torch.nn.Embedding(10, 4, sparse=True)
            opt = cls(emb.parameters(), lr=0.1)
            with context() as ctx:
                if offload:
                    umtorch.offload_optimizer(opt, ctx)
                emb(torch.tensor([1, 2])).sum().backward()
                try:
                    opt.step()
                    raise AssertionError("a sparse gradient was accepted")
                except RuntimeError as e:
                    text = str(e)
                del opt
            assert "sparse" in text
            want = want or text
            assert text == want, (cls.__name__, text, want)
        if cls is torch.optim.Adam:
            assert "SparseAdam" in want, want	# torch's advice
