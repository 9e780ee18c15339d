"""Vision datasets read from local files (no downloads)."""

from .mnist import MNIST, FashionMNIST  # noqa: F401
