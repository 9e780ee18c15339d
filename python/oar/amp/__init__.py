"""oar.amp: automatic mixed precision (Paddle's paddle.amp). Note [AMP] in docs/notes/amp.md."""
from .auto_cast import (  # noqa: F401
    auto_cast, amp_guard, decorate, amp_decorate, is_float16_supported, is_bfloat16_supported,
    is_auto_cast_enabled, white_list, black_list,
)
from .grad_scaler import GradScaler, AmpScaler, OptimizerState  # noqa: F401
# paddle.amp.debugging loads on first use (oar._lazy: a stand-in module, not a __getattr__)
from .. import _lazy  # noqa: E402
_lazy.install(globals(), "oar.amp", namespaces={"debugging": "oar.amp.debugging"})
