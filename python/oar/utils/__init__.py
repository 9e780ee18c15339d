from . import dlpack  # noqa: F401
from ..version import require_version  # noqa: E402,F401  (paddle.utils.require_version)
