"""Where Oar's C headers and libraries are, as Paddle's ``paddle.sysconfig``: for compiling
a program against the predictor's C API (``oar/pd_inference_c.h``, ``liboar_inference_c.so``;
the C++ predictor is ``liboar_inference.so``) or a device plugin against
``oar/device_ext.h`` and ``oar/kernel_ext.h``::

    cc app.c -I$(python -c "import oar; print(oar.sysconfig.get_include())") \\
        -L$LIB -loar_inference_c -Wl,-rpath,$LIB   # LIB=$(... oar.sysconfig.get_lib())

An installed wheel has them in ``oar/include`` and ``oar/libs``; a development build
(``scripts/dev_env.sh``) in its ``python/oar`` folder, laid out the same way.
"""
import os

__all__ = ["get_include", "get_lib"]


def _folder(name):
    import oar
    # The package's folders: the installed package, or the sources then the build's python/oar.
    dirs = list(oar.__path__)
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.isdir(p):
            return p
    return os.path.join(dirs[0], name)


def get_include():
    """The folder to pass with ``-I``: it holds ``oar/pd_inference_c.h``, ``oar/device_ext.h``
    and ``oar/kernel_ext.h``."""
    return _folder("include")


def get_lib():
    """The folder to pass with ``-L`` (and as an rpath): it holds ``liboar_inference_c.so``
    (the predictor's C API) and ``liboar_inference.so`` (its C++ API)."""
    return _folder("libs")
