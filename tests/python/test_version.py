"""paddle.version and paddle.utils.require_version: the Paddle API level Oar implements, the
CPU-only backend report, and require_version's range and argument checks."""
import pytest

import oar


def test_version_fields_and_backends(capsys):
    v = oar.version
    assert (v.major, v.minor, v.patch) == ("3", "3", "1") and v.full_version == "3.3.1"
    assert v.oar_version == oar.__version__
    assert v.cuda() == "False" and v.cuda == "False" and repr(v.cuda) == "CudaVersion('False')"
    assert v.cudnn() == "False" and v.nccl() == "0" and v.cuda_archs() == []
    assert v.xpu() == v.xpu_xre() == v.xpu_xccl() == v.xpu_xhpc() == "False"
    assert v.cinn() == "False" and v.tensorrt() == "None" and v.hip() is None
    v.show()
    printed = capsys.readouterr().out
    assert "full_version: 3.3.1" in printed and "cuda: False" in printed


@pytest.mark.parametrize("lo,hi", [("0.1.0", None), ("3", None), ("3.3.1", "3.3.1"),
                                   ("1.5.2.0", "10.0.0"), ("3.3", "3.4")])
def test_require_version_accepts(lo, hi):
    oar.utils.require_version(lo, hi)


@pytest.mark.parametrize("lo,hi,exc,needle", [
    ("3.4", None, Exception, "VersionError"),
    ("1.0", "3.3.0", Exception, "VersionError"),
    ("3.x", None, ValueError, "min_version"),
    ("1.0", "2.0.0.0.0", ValueError, "max_version"),
    (3, None, TypeError, "min_version"),
    ("1.0", 2, TypeError, "max_version"),
])
def test_require_version_rejects(lo, hi, exc, needle):
    with pytest.raises(exc, match=needle):
        oar.utils.require_version(lo, hi)
