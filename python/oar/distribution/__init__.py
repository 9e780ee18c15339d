"""oar.distribution: probability distributions, transforms and KL divergences (Paddle's
paddle.distribution). Every formula is composed of differentiable oar ops; see
Note [Distributions] in docs/notes/distribution.md. Imported on first use of
`oar.distribution` (oar's own import stays fast)."""
from . import transform
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .lognormal import LogNormal
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .poisson import Poisson
from .student_t import StudentT
from .transform import (  # noqa: F401
    AbsTransform, AffineTransform, ChainTransform, ExpTransform, IndependentTransform,
    PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform, StackTransform,
    StickBreakingTransform, TanhTransform, Transform,
)
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Distribution", "Exponential", "ExponentialFamily", "Multinomial", "MultivariateNormal",
    "Normal", "Uniform", "kl_divergence", "register_kl", "Independent",
    "TransformedDistribution", "Laplace", "LogNormal", "LKJCholesky", "Gamma", "Gumbel",
    "Geometric", "Binomial", "Poisson", "StudentT",
] + transform.__all__
