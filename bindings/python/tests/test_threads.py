# SPDX-License-Identifier: MIT
"""Two threads stepping their own offloaded optimizers on one Context
take turns for the budget (acquires wait for the other's releases)
instead of failing with ENOMEM; bits as plain torch's; overlap on and
off."""

import threading

import torch

import umtorch
from common import context, model, same_params, train


def test_two_threads_step_on_one_context():
    # torch 2.x's bits depend on its thread count: the references are made
    # with the one thread the offloaded runs have
    torch.set_num_threads(1)
    refs = []
    for seed in (2, 3):
        m = model()
        train(m, torch.optim.AdamW(m.parameters(), lr=1e-3), 4, seed=seed)
        refs.append(m)
    for overlap in (True, False):
        with context() as ctx:
            models, errors = [model(), model()], []

            def work(m, seed):
                try:
                    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
                    umtorch.offload_optimizer(opt, ctx, overlap=overlap)
                    train(m, opt, 4, seed=seed)
                except BaseException as e:
                    errors.append(repr(e))
            threads = [threading.Thread(target=work, args=(m, seed))
                       for m, seed in zip(models, (2, 3))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            assert ctx.close() == 0
        for m, ref in zip(models, refs):
            assert same_params(m, ref), overlap
