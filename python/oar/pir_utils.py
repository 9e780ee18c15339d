"""paddle.pir_utils: guards between Paddle's old program IR and PIR. Oar's static
programs are PIR programs only (Note [Static mode]), so IrGuard keeps PIR on and the old
IR cannot be selected."""
import contextlib


@contextlib.contextmanager
def IrGuard():  # noqa: N802 - Paddle's name
    """Static programs built inside use PIR (always the case in Oar)."""
    yield


@contextlib.contextmanager
def OldIrGuard():  # noqa: N802 - Paddle's name
    raise NotImplementedError("pir_utils.OldIrGuard: Oar builds PIR programs only; Paddle's old ProgramDesc IR "
                              "is not available")
    yield  # pragma: no cover


def test_with_pir_api(func):
    """Runs a test under PIR (the only IR here)."""
    return func
