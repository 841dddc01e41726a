"""Centralized mini-batch SGD on the exact average, the baseline every comparison needs:
every node holds xbar, and

    xbar(0) = (1/n) sum_i x_i(0)
    xbar(t+1) = xbar(t) - gamma (1/n) sum_i g_i(xbar(t))

with g_i node i's stochastic gradient (each node still draws its own noise, so the step
averages n of them). It is D-SGD (same kernels) with W = (1/n) 1 1^T whatever the cell's
topology, started at the mean: x(t+1) = J (x(t) - gamma g(t)). The topology still shapes
structured noise (Setup B's modes are its eigenvectors). With local_steps = k it is local
SGD: each node takes k - 1 steps on its own, then all average.

Per step: 1 mix (an exact average: one all-reduce, one communication round), 1 gradient
evaluation.
"""

from functools import partial

from ..topology import topology
from . import dsgd
from .base import Algorithm, Costs


def average(W):
    """The exact average on W's nodes."""
    return topology("complete", n=W.n)


ALGORITHM = Algorithm("centralized", dsgd.ALGORITHM.templates, 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1), dsgd.alloc,
                      partial(dsgd.init, at_mean=True), dsgd.iterates, dsgd.state,
                      doc=__doc__, mixing=average)
