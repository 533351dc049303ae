"""``refimpl.scipy.stats``: ``jax.scipy.stats`` (JAX 0.10.2) on refimpl.

One module per distribution, each with the functions JAX has for it
(``logpdf``/``pdf``/``cdf``/``logcdf``/``sf``/``logsf``/``ppf``/``isf``, or
``logpmf``/``pmf`` for discrete ones) and JAX's signatures (``loc=0, scale=1``
defaults), written with ``refimpl.numpy`` and ``refimpl.scipy.special`` so they
trace (``jit``, ``grad``, ``vmap``) and run on both backends. Conventions, as
in JAX: outside the support the log-density is ``-inf`` (the density 0);
invalid parameters are not checked with errors -- the formulas give NaN, or
the distribution returns NaN explicitly where JAX does.

Besides the distributions: ``gaussian_kde``, ``mode``, ``rankdata``, ``sem``.
"""

from refimpl.scipy.stats import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from refimpl.scipy.stats._core import mode, rankdata, sem
from refimpl.scipy.stats._kde import gaussian_kde

__all__ = [
    "bernoulli",
    "beta",
    "betabinom",
    "binom",
    "cauchy",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "gaussian_kde",
    "gennorm",
    "geom",
    "gumbel_l",
    "gumbel_r",
    "laplace",
    "logistic",
    "mode",
    "multinomial",
    "multivariate_normal",
    "nbinom",
    "norm",
    "pareto",
    "poisson",
    "rankdata",
    "sem",
    "t",
    "truncnorm",
    "uniform",
    "vonmises",
    "wrapcauchy",
]
