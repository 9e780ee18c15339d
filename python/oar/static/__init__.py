"""oar.static: the static-graph vocabulary (InputSpec; nn.cond / nn.while_loop live in
oar.static.nn)."""
import numpy as _np


class InputSpec:
    """Describes a program input: shape (None or -1 marks a dynamic size), dtype, name.

    Used by oar.jit.to_static / oar.jit.save (and by oar.Model's inputs/labels)."""

    def __init__(self, shape=None, dtype="float32", name=None, stop_gradient=False):
        if shape is not None:
            if isinstance(shape, int):
                shape = [shape]
            shape = [-1 if d is None else d for d in shape]
            for d in shape:
                if not isinstance(d, (int, _np.integer)) or d < -1:
                    raise ValueError(f"InputSpec: shape must hold sizes >= 0, or -1/None for a dynamic "
                                     f"size, got {list(shape)}")
            shape = [int(d) for d in shape]
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(list(tensor.shape), tensor.dtype, name)

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(list(ndarray.shape), str(_np.asarray(ndarray).dtype), name)

    def batch(self, batch_size):
        """This spec with a leading batch dim (an int, or -1/None for a dynamic batch)."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: batch_size must be an int or a list of one int, "
                                 f"got {batch_size}")
            batch_size = batch_size[0]
        batch_size = -1 if batch_size is None else batch_size
        if not isinstance(batch_size, (int, _np.integer)) or batch_size < -1:
            raise ValueError(f"InputSpec.batch: batch_size must be an int >= 0 or -1/None, got {batch_size!r}")
        return InputSpec([int(batch_size)] + list(self.shape or []), self.dtype, self.name, self.stop_gradient)

    def unbatch(self):
        """This spec without its leading dim."""
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the spec has no dims to remove")
        return InputSpec(list(self.shape[1:]), self.dtype, self.name, self.stop_gradient)

    def __eq__(self, other):
        return (isinstance(other, InputSpec) and self.shape == other.shape
                and str(self.dtype) == str(other.dtype) and self.name == other.name)

    def __hash__(self):
        return hash((tuple(self.shape or ()), str(self.dtype), self.name))

    def __repr__(self):
        return f"InputSpec(shape={tuple(self.shape or ())}, dtype={self.dtype}, name={self.name})"


class BuildStrategy:
    """Paddle's build options for to_static (oar.jit.to_static(fn, build_strategy=...)).
    `build_cinn_pass = True` runs the programs through the fusion compiler, as
    backend='CINN' does. The other Paddle options are accepted and have no effect: Oar's
    pass pipelines already fuse what they name."""

    def __init__(self):
        self.build_cinn_pass = False
        self.fuse_elewise_add_act_ops = False
        self.fuse_bn_act_ops = False
        self.enable_inplace = False

    def __repr__(self):
        return f"BuildStrategy(build_cinn_pass={self.build_cinn_pass})"


from . import nn  # noqa: E402,F401
