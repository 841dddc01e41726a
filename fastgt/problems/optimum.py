"""The optimum x* of a finite-sum problem (problems/samples.py), from a centralized solve
on the whole data set: scipy's L-BFGS-B, then, up to d = DIRECT_MAX, exact polishing
(least squares: one regularized least-squares solve; otherwise Newton steps on the exact
Hessian while it is positive definite), so that ||grad f(x*)|| is at rounding level and f*
is exact to far better than 1e-10 relative. A point whose gradient is not small is
refused, and so is the logistic loss without reg on separable data (no minimizer: f
tends to 0 along a separating direction, and the solver's point has a tiny gradient)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse as sps

from ..errors import FastGTError

#: accepted ||grad f(x*)||, relative to max(1, ||grad f(0)||)
GRAD_TOL = 1e-9
#: up to this d, the optimum is polished by exact (Newton / least-squares) solves
DIRECT_MAX = 2000


def solve(prob) -> np.ndarray:
    x = _lbfgs(prob)
    if prob.d <= DIRECT_MAX:
        x = _least_squares(prob) if prob.loss_code == 0 and prob.rkind == 0 else _newton(prob, x)
    if prob.loss_code == 1 and prob.reg == 0 and \
            float(prob.f(x)) < np.log(2) * float(prob.weights.min()):
        # every margin is positive at x (a row with margin <= 0 alone adds w_s log 2): the
        # data are separable, f -> 0 along x, and no finite point attains it (with reg = 0
        # either regularizer is zero: logistic and nonconvex alike)
        raise FastGTError(f"{prob.name} with reg = 0 has no minimizer on these data: they are "
                          "linearly separable (f -> 0 as ||x|| grows); allowed reg > 0")
    g0 = max(1.0, float(np.linalg.norm(prob.full_grad(np.zeros(prob.d)))))
    gn = float(np.linalg.norm(prob.full_grad(x)))
    if not gn <= GRAD_TOL * g0:
        raise FastGTError(f"the centralized solver found no minimizer of {prob.name} "
                          f"(||grad f|| = {gn:.3g} after L-BFGS-B): allowed data with a "
                          "minimizer, e.g. reg > 0 for separable classification data")
    return x


def _lbfgs(prob) -> np.ndarray:
    def fun(x):
        return float(prob.f(x)), prob.full_grad(x)

    res = sopt.minimize(fun, np.zeros(prob.d), jac=True, method="L-BFGS-B",
                        options={"maxiter": 20000, "maxcor": 30, "ftol": 0.0,
                                 "gtol": 1e-13})
    return np.asarray(res.x, dtype=np.float64)


def _least_squares(prob) -> np.ndarray:
    """min sum_s w_s (a_s^T x - y_s)^2 / 2 + reg/2 ||x||^2 as one least-squares system."""
    sw = np.sqrt(prob.weights)
    A = prob.A.multiply(sw[:, None]).toarray() if sps.issparse(prob.A) else prob.A * sw[:, None]
    rhs = prob.y * sw
    if prob.reg > 0:
        A = np.vstack([A, np.sqrt(prob.reg) * np.eye(prob.d)])
        rhs = np.concatenate([rhs, np.zeros(prob.d)])
    return sla.lstsq(A, rhs, lapack_driver="gelsd")[0]


def _newton(prob, x: np.ndarray, steps: int = 20) -> np.ndarray:
    """Newton steps from x while the Hessian is positive definite and the gradient
    shrinks (quadratic convergence near a strict minimizer)."""
    g = prob.full_grad(x)
    for _ in range(steps):
        try:
            c = sla.cho_factor(prob.hessian(x))
        except np.linalg.LinAlgError:
            return x
        xn = x - sla.cho_solve(c, g)
        gn = prob.full_grad(xn)
        if not np.linalg.norm(gn) < np.linalg.norm(g):
            return x
        x, g = xn, gn
    return x
