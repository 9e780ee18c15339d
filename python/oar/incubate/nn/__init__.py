"""paddle.incubate.nn: the fused functional forms model code imports from here."""
from . import functional  # noqa: F401
