"""paddle.incubate.optimizer.functional: BFGS and L-BFGS minimization of a function of
one 1-D tensor (Nocedal & Wright, Numerical Optimization, 2nd ed., algorithms 6.1 and
7.4/7.5 with the strong-Wolfe line search of oar.optimizer.LBFGS)."""
from .bfgs import minimize_bfgs  # noqa: F401
from .lbfgs import minimize_lbfgs  # noqa: F401

__all__ = ["minimize_bfgs", "minimize_lbfgs"]
