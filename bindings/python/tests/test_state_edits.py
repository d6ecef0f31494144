# SPDX-License-Identifier: MIT
"""In-place edits of optimizer.state[p][k] between steps, as PyTorch
users make them (resetting a momentum buffer, scaling a second moment,
a row reset by indexing, out=, through a view), reach the region: the
run is plain torch's with the same edits; overlap on and off."""

import copy

import torch

import umtorch
from common import context, model, same_params, train


def edit(opt, m):
    w, b = m[2].weight, m[4].weight
    opt.state[w]["exp_avg"].zero_()
    opt.state[w]["exp_avg_sq"].mul_(0.5)
    sq = opt.state[b]["exp_avg_sq"]
    sq[3] = 0.25				# indexing assignment
    sq[:, :2].fill_(1e-3)			# through a view of the copy
    avg = opt.state[b]["exp_avg"]
    torch.mul(avg, 2.0, out=avg)		# out=
    row = opt.state[m[0].weight]["exp_avg"][5]
    row.add_(1.0)				# a view kept, edited later


def run(offload, overlap):
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    with context() as ctx:
        if offload:
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
        train(m, opt, 2)
        edit(opt, m)
        train(m, opt, 2, seed=3)
        edit(opt, m)
        sd = copy.deepcopy(opt.state_dict())	# torch's holds references
        train(m, opt, 1, seed=4)
    return m, sd


def test_in_place_edits_between_steps_reach_the_state():
    ref, rsd = run(False, False)
    for overlap in (True, False):
        m, sd = run(True, overlap)
        assert same_params(m, ref), overlap
        for i in rsd["state"]:
            for k, v in rsd["state"][i].items():
                assert torch.equal(v, sd["state"][i][k]), (i, k)


def test_results_and_copies_of_state_are_plain():
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 1)
        w = m[2].weight
        got = opt.state[w]["exp_avg"]
        before = got.clone()
        assert type(before) is torch.Tensor and type(got * 2) is \
            torch.Tensor and type(got.sum()) is torch.Tensor
        copy.deepcopy(got).zero_()
        (got + 0).zero_()
        assert torch.equal(opt.state[w]["exp_avg"], before)
