"""Layer: the base of every model (parameters, sublayers, buffers, state_dict, hooks)."""
import collections

import numpy as np

from .. import _C
from .._dtype import convert_dtype
from . import initializer as init


class Parameter(_C.Tensor):
    """A trainable tensor owned by a Layer (stop_gradient=False by default)."""

    def __init__(self, data, trainable=True, name=None):
        super().__init__(data)
        self.stop_gradient = not trainable
        self.trainable = trainable
        self.persistable = True
        self.optimize_attr = {"learning_rate": 1.0}
        self.regularizer = None
        if name:
            self.name = name

    def __repr__(self):
        return "Parameter containing:\n" + _C.Tensor.__repr__(self)


class ParamAttr:
    """Paddle's ParamAttr: name, initializer, learning rate, regularizer, trainable."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=False, need_clip=True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.need_clip = need_clip


class Layer:
    """Base class of all layers. Assigning a Parameter or a Layer to an attribute
    registers it; forward() defines the computation; calling the layer runs hooks
    around forward()."""

    def __init__(self, name_scope=None, dtype="float32"):
        self.__dict__["_parameters"] = collections.OrderedDict()
        self.__dict__["_sub_layers"] = collections.OrderedDict()
        self.__dict__["_buffers"] = collections.OrderedDict()
        self.__dict__["_non_persistable_buffer_names"] = set()
        self.__dict__["_forward_pre_hooks"] = collections.OrderedDict()
        self.__dict__["_forward_post_hooks"] = collections.OrderedDict()
        self.training = True
        self._dtype = dtype
        self._full_name = name_scope or type(self).__name__.lower()

    # ---- registration
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if params is None and isinstance(value, (Parameter, Layer)):
            raise RuntimeError("Layer.__init__() must be called before assigning parameters or "
                               "sublayers")
        for d in ("_parameters", "_sub_layers", "_buffers"):
            if params is not None and name in self.__dict__[d] and not isinstance(value, (Parameter, Layer, _C.Tensor)) and value is not None:
                del self.__dict__[d][name]
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Layer):
            self._sub_layers[name] = value
        elif params is not None and name in self._buffers:
            self._buffers[name] = value
        elif params is not None and name in params and value is None:
            params[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_sub_layers", "_buffers"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_sub_layers", "_buffers"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                return
        object.__delattr__(self, name)

    def add_sublayer(self, name, sublayer):
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def add_parameter(self, name, parameter):
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: expected a Parameter, got {type(parameter).__name__}")
        self._parameters[str(name)] = parameter
        return parameter

    def register_buffer(self, name, tensor, persistable=True):
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"register_buffer: expected a Tensor, got {type(tensor).__name__}")
        self._buffers[name] = tensor
        if not persistable:
            self._non_persistable_buffer_names.add(name)
        else:
            self._non_persistable_buffer_names.discard(name)

    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False,
                         default_initializer=None):
        if attr is False:
            return None
        if isinstance(attr, str):
            attr = ParamAttr(name=attr)
        attr = attr or ParamAttr()
        dtype = convert_dtype(dtype or self._dtype)
        shape = [int(s) for s in shape]
        if any(s < 0 for s in shape):
            raise ValueError(f"create_parameter: shape {shape} has a negative size")
        initializer = attr.initializer or default_initializer or (
            init.Constant(0.0) if is_bias else init.XavierUniform())
        data = initializer._make(shape, dtype)
        p = Parameter(data, trainable=attr.trainable, name=attr.name)
        p.optimize_attr = {"learning_rate": attr.learning_rate}
        p.regularizer = attr.regularizer
        p.need_clip = attr.need_clip
        return p

    # ---- traversal
    def named_parameters(self, prefix="", include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (lp + "." + name if lp else name), p

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_sublayers(self, prefix="", include_self=False, layers_set=None):
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for name, layer in self._sub_layers.items():
            if layer is None or id(layer) in layers_set:
                continue
            p = prefix + "." + name if prefix else name
            layers_set.add(id(layer))
            yield p, layer
            yield from layer.named_sublayers(prefix=p, include_self=False, layers_set=layers_set)

    def sublayers(self, include_self=False):
        return [l for _, l in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        for name, layer in self._sub_layers.items():
            if layer is not None:
                yield name, layer

    def children(self):
        return [l for _, l in self.named_children()]

    def named_buffers(self, prefix="", include_sublayers=True):
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for lp, layer in layers:
            for name, b in layer._buffers.items():
                if b is not None:
                    yield (lp + "." + name if lp else name), b

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn):
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def full_name(self):
        return self._full_name

    # ---- modes
    def train(self, mode=True):
        for layer in self.sublayers(include_self=True):
            layer.training = mode
        return self

    def eval(self):
        return self.train(False)

    # ---- calling
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def __call__(self, *inputs, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, inputs)
            if r is not None:
                inputs = r if isinstance(r, tuple) else (r,)
        out = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            r = hook(self, inputs, out)
            if r is not None:
                out = r
        return out

    def register_forward_pre_hook(self, hook):
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_post_hook(self, hook):
        return _HookHandle(self._forward_post_hooks, hook)

    # ---- state
    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="",
                   use_hook=True, keep_vars=True):
        dest = collections.OrderedDict() if destination is None else destination
        for name, p in self.named_parameters(prefix=structured_name_prefix.rstrip("."),
                                              include_sublayers=include_sublayers):
            dest[name] = p
        for lp, layer in (self.named_sublayers(prefix=structured_name_prefix.rstrip("."), include_self=True)
                          if include_sublayers else [(structured_name_prefix.rstrip("."), self)]):
            for name, b in layer._buffers.items():
                if b is not None and name not in layer._non_persistable_buffer_names:
                    dest[lp + "." + name if lp else name] = b
        return dest

    def set_state_dict(self, state_dict, use_structured_name=True, strict=True):
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            arr = value if isinstance(value, _C.Tensor) else np.asarray(value)
            shape = list(arr.shape)
            if shape != list(target.shape):
                raise ValueError(f"set_state_dict: '{k}' has shape {shape} in the state dict but "
                                 f"{list(target.shape)} in the layer")
            target.set_value(arr)
        if strict and (missing or unexpected):
            raise KeyError(f"set_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    def clear_gradients(self, set_to_zero=True):
        for p in self.parameters():
            p.clear_gradient(set_to_zero)

    def to(self, device=None, dtype=None, blocking=None):
        if device is not None and not str(device).startswith("cpu"):
            raise RuntimeError(f"to: device '{device}' is not available in this build")
        if dtype is not None:
            dtype = convert_dtype(dtype)
            for layer in self.sublayers(include_self=True):
                for name, p in list(layer._parameters.items()):
                    if p is not None and p.dtype.is_floating_point and p.dtype != dtype:
                        np_ = Parameter(p.astype(dtype), trainable=not p.stop_gradient, name=p.name)
                        layer._parameters[name] = np_
                layer._dtype = dtype.name
        return self

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, layer in self._sub_layers.items():
            sub = repr(layer).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


class _HookHandle:
    _next = 0

    def __init__(self, hooks, hook):
        _HookHandle._next += 1
        self._id = _HookHandle._next
        self._hooks = hooks
        hooks[self._id] = hook

    def remove(self):
        self._hooks.pop(self._id, None)


class Sequential(Layer):
    """Runs sublayers in order. Sequential(l1, l2) or Sequential(('name', l1), ...)."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, collections.OrderedDict)):
            layers = tuple(layers[0].items())
        for i, l in enumerate(layers):
            if isinstance(l, tuple):
                self.add_sublayer(l[0], l[1])
            else:
                self.add_sublayer(str(i), l)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, i):
        layers = list(self._sub_layers.values())
        if isinstance(i, slice):
            return Sequential(*layers[i])
        return layers[i]

    def __len__(self):
        return len(self._sub_layers)


class LayerList(Layer):
    def __init__(self, sublayers=None):
        super().__init__()
        for l in sublayers or []:
            self.append(l)

    def append(self, layer):
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def extend(self, layers):
        for l in layers:
            self.append(l)
        return self

    def __getitem__(self, i):
        return list(self._sub_layers.values())[i]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())
