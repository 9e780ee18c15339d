"""Layer: the base of every model (parameters, sublayers, buffers, state_dict, hooks), and
the containers Sequential, LayerList, LayerDict, ParameterList, ParameterDict."""

import collections
import re
import warnings

import numpy as np

from .. import _C, _trace_state
from ..base import framework as _framework
from .._dtype import convert_dtype, get_default_dtype
from . import initializer as init

_name_counters = collections.defaultdict(int)


def _unique_name(prefix):
    """prefix_0, prefix_1, ... (Paddle's unique_name.generate)."""
    n = _name_counters[prefix]
    _name_counters[prefix] += 1
    return f"{prefix}_{n}"


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


class Parameter(_C.Tensor):
    """A trainable tensor owned by a Layer (stop_gradient=False by default)."""

    is_parameter = True  # Paddle's Variable.is_parameter

    def __init__(self, data, trainable=True, name=None):
        super().__init__(data)
        self.stop_gradient = not trainable
        self.trainable = trainable
        self.persistable = True
        self.optimize_attr = {"learning_rate": 1.0}
        self.regularizer = None
        self.need_clip = True
        if name:
            self.name = name

    def initialize(self):
        """Runs the initializer a parameter made under paddle.LazyGuard deferred."""
        from .._lazy_init import initialize
        initialize(self)

    def __repr__(self):
        return "Parameter containing:\n" + _C.Tensor.__repr__(self)

    __str__ = __repr__


class ParamAttr:
    """Paddle's ParamAttr: name, initializer, learning rate (a multiplier on the optimizer's),
    regularizer, trainable, need_clip."""

    def __init__(
        self,
        name=None,
        initializer=None,
        learning_rate=1.0,
        regularizer=None,
        trainable=True,
        do_model_average=False,
        need_clip=True,
    ):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr: name must be a str, got {type(name).__name__}")
        if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
            raise ValueError(
                f"ParamAttr: learning_rate must be a non-negative number, got {learning_rate!r}"
            )
        if initializer is not None and not callable(getattr(initializer, "_make", None)):
            raise TypeError(
                f"ParamAttr: initializer must be an oar.nn.initializer object, got "
                f"{type(initializer).__name__}"
            )
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    @staticmethod
    def _to_attr(arg):
        """None/True -> default ParamAttr, False -> False (no parameter), str -> named,
        Initializer -> ParamAttr(initializer=...)."""
        if arg is None or arg is True:
            return ParamAttr()
        if arg is False:
            return False
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if hasattr(arg, "_make"):
            return ParamAttr(initializer=arg)
        raise TypeError(f"ParamAttr: cannot make a ParamAttr from {type(arg).__name__}")

    def __repr__(self):
        return (
            f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, "
            f"learning_rate={self.learning_rate}, regularizer={self.regularizer!r}, "
            f"trainable={self.trainable})"
        )


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A standalone Parameter (Paddle's paddle.create_parameter)."""
    attr = ParamAttr._to_attr(attr)
    if attr is False:
        raise ValueError("create_parameter: attr=False creates no parameter")
    if name is not None:
        attr.name = name
    return _make_parameter(
        shape,
        attr,
        convert_dtype(dtype),
        is_bias,
        default_initializer,
        attr.name or _unique_name("create_parameter") + (".b_0" if is_bias else ".w_0"),
    )


def _make_parameter(shape, attr, dtype, is_bias, default_initializer, name):
    if isinstance(shape, int):
        shape = [shape]
    try:
        shape = [int(s) for s in shape]
    except (TypeError, ValueError):
        raise TypeError(f"create_parameter: shape must be a list of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"create_parameter: shape {shape} has a negative size")
    if not dtype.is_floating_point:
        raise TypeError(f"create_parameter: dtype must be a float type, got {dtype.name}")
    # Priority as Paddle: ParamAttr's, then the global one, then the layer's default.
    initializer = (
        attr.initializer
        or init._global_initializer(is_bias)
        or default_initializer
        or (init.Constant(0.0) if is_bias else init.XavierUniform())
    )
    from .._creation import empty as _empty
    from .._lazy_init import lazy_init_enabled
    lazy = lazy_init_enabled()  # paddle.LazyGuard: param.initialize() runs the initializer
    with _framework.outside_program():  # static mode: the value goes into the startup program
        data = _empty(shape, dtype) if lazy else initializer._make(shape, dtype)
    p = Parameter(data, trainable=attr.trainable, name=name)
    p._lazy_initializer = initializer if lazy else None
    p.optimize_attr = {"learning_rate": attr.learning_rate}
    p.regularizer = attr.regularizer
    p.need_clip = attr.need_clip
    p.do_model_average = attr.do_model_average
    return _framework.register_parameter(p)


class _HookHandle:
    """What register_forward_*_hook returns; remove() unregisters the hook."""

    _next = 0

    def __init__(self, hooks, hook):
        _HookHandle._next += 1
        self._id = _HookHandle._next
        self._hooks = hooks
        hooks[self._id] = hook

    def remove(self):
        self._hooks.pop(self._id, None)


class _StateDict(collections.OrderedDict):
    """A layer's parameters, buffers or sublayers: every change bumps the global
    state_epoch(), so code caching a layer's state (oar.jit) knows when to look again."""

    def __setitem__(self, key, value):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        super().__setitem__(key, value)

    def __delitem__(self, key):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        super().__delitem__(key)

    def pop(self, *args):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        return super().pop(*args)

    def popitem(self, last=True):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        return super().popitem(last)

    def clear(self):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        super().clear()

    def update(self, *args, **kwargs):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        global _STATE_EPOCH
        _STATE_EPOCH += 1
        return super().setdefault(key, default)


_STATE_EPOCH = 0


def state_epoch():
    """A counter that changes whenever any layer's parameters, buffers or sublayers change."""
    return _STATE_EPOCH


class Layer:
    """Base class of all layers. Assigning a Parameter or a Layer to an attribute registers
    it; forward() defines the computation; calling the layer runs the forward pre-hooks,
    forward(), then the forward post-hooks."""

    def __init__(self, name_scope=None, dtype=None):
        d = self.__dict__
        d["_parameters"] = _StateDict()
        d["_sub_layers"] = _StateDict()
        d["_buffers"] = _StateDict()
        d["_non_persistable_buffer_names"] = set()
        d["_forward_pre_hooks"] = collections.OrderedDict()
        d["_forward_post_hooks"] = collections.OrderedDict()
        d["_param_counters"] = collections.defaultdict(int)
        self.training = True
        # dtype of the parameters this layer creates: given, else the global default dtype
        # (oar.set_default_dtype), as Paddle's layers resolve it.
        self._dtype = convert_dtype(dtype).name if dtype is not None else get_default_dtype()
        self._full_name = _unique_name(name_scope or _snake(type(self).__name__))

    # ---- registration
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise RuntimeError(
                    f"{type(self).__name__}: call super().__init__() before assigning parameters"
                )
            self._discard(name)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"{type(self).__name__}: attribute '{name}' is a parameter; assign "
                    f"a Parameter or None, not {type(value).__name__}"
                )
            params[name] = None
        elif isinstance(value, Layer):
            if params is None:
                raise RuntimeError(
                    f"{type(self).__name__}: call super().__init__() before assigning sublayers"
                )
            self._discard(name)
            d["_sub_layers"][name] = value
        elif params is not None and name in d["_sub_layers"]:
            if value is not None:
                raise TypeError(
                    f"{type(self).__name__}: attribute '{name}' is a sublayer; assign "
                    f"a Layer or None, not {type(value).__name__}"
                )
            d["_sub_layers"][name] = None
        elif params is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(
                    f"{type(self).__name__}: attribute '{name}' is a buffer; assign a "
                    f"Tensor or None, not {type(value).__name__}"
                )
            d["_buffers"][name] = value
        elif params is not None and isinstance(value, _C.Tensor) and \
                not isinstance(getattr(type(self), name, None), property):
            # As Paddle: a Tensor assigned to a new attribute is a buffer, not persistable
            # (only register_buffer makes a persistable one).
            self._discard(name)
            d["_buffers"][name] = value
            self._non_persistable_buffer_names.add(name)
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name):
        d = self.__dict__
        for key in ("_parameters", "_sub_layers", "_buffers"):
            d[key].pop(name, None)
        d.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_sub_layers", "_buffers"):
            group = d.get(key)
            if group is not None and name in group:
                return group[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_sub_layers", "_buffers"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                self._non_persistable_buffer_names.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(
            set(object.__dir__(self))
            | set(self._parameters)
            | set(self._sub_layers)
            | set(self._buffers)
        )

    def _check_new_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what}: name must be a str, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{what}: name '{name}' must be non-empty and contain no '.'")

    def add_sublayer(self, name, sublayer):
        """Registers sublayer under name and returns it."""
        name = str(name)
        self._check_new_name(name, "add_sublayer")
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: expected a Layer, got {type(sublayer).__name__}")
        self._discard(name)
        self._sub_layers[name] = sublayer
        return sublayer

    def add_parameter(self, name, parameter):
        """Registers parameter (a Parameter or None) under name and returns it."""
        self._check_new_name(name, "add_parameter")
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: expected a Parameter, got {type(parameter).__name__}")
        if name in self.__dict__ and name not in self._parameters:
            raise KeyError(
                f"add_parameter: '{name}' is already an attribute of {type(self).__name__}"
            )
        self._discard(name)
        self._parameters[name] = parameter
        return parameter

    def register_buffer(self, name, tensor, persistable=True):
        """A tensor that is state but not a parameter (e.g. running statistics); persistable
        buffers appear in state_dict()."""
        self._check_new_name(name, "register_buffer")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"register_buffer: expected a Tensor, got {type(tensor).__name__}")
        if name in self._parameters or name in self._sub_layers:
            raise KeyError(f"register_buffer: '{name}' is already a parameter or sublayer")
        self._discard(name)
        self._buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names.discard(name)
        else:
            self._non_persistable_buffer_names.add(name)

    def create_parameter(
        self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None
    ):
        """A new Parameter initialized by attr.initializer, else default_initializer, else
        Xavier-uniform (weights) / zeros (biases). attr=False returns None."""
        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        dtype = convert_dtype(dtype or self._dtype)
        kind = "b" if is_bias else "w"
        name = attr.name
        if not name:
            name = f"{self._full_name}.{kind}_{self._param_counters[kind]}"
            self._param_counters[kind] += 1
        return _make_parameter(shape, attr, dtype, is_bias, default_initializer, name)

    def create_tensor(self, name=None, persistable=None, dtype=None):
        from .._creation import zeros

        return zeros([0], dtype or self._dtype)

    create_variable = create_tensor

    # ---- traversal
    def named_parameters(self, prefix="", include_sublayers=True, remove_duplicate=True):
        seen = set()
        layers = (
            self.named_sublayers(prefix=prefix, include_self=True)
            if include_sublayers
            else [(prefix, self)]
        )
        for lp, layer in layers:
            for name, p in layer._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (lp + "." + name if lp else name), p

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_sublayers(self, prefix="", include_self=False, layers_set=None,
                        remove_duplicate=True):
        """(name, layer) of every sublayer, depth first; a layer reached twice is listed once
        unless remove_duplicate is False."""
        layers_set = set() if layers_set is None else layers_set
        if include_self and (id(self) not in layers_set or not remove_duplicate):
            layers_set.add(id(self))
            yield prefix, self
        for name, layer in self._sub_layers.items():
            if layer is None or (remove_duplicate and id(layer) in layers_set):
                continue
            p = prefix + "." + name if prefix else name
            layers_set.add(id(layer))
            yield p, layer
            yield from layer.named_sublayers(prefix=p, include_self=False, layers_set=layers_set,
                                             remove_duplicate=remove_duplicate)

    def sublayers(self, include_self=False):
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        for name, layer in self._sub_layers.items():
            if layer is not None:
                yield name, layer

    def children(self):
        return [layer for _, layer in self.named_children()]

    def named_buffers(self, prefix="", include_sublayers=True):
        seen = set()
        layers = (
            self.named_sublayers(prefix=prefix, include_self=True)
            if include_sublayers
            else [(prefix, self)]
        )
        for lp, layer in layers:
            for name, b in layer._buffers.items():
                if b is not None and id(b) not in seen:
                    seen.add(id(b))
                    yield (lp + "." + name if lp else name), b

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn):
        """Calls fn on every sublayer (children first) and then on self; returns self."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def full_name(self):
        return self._full_name

    # ---- modes
    def train(self, mode=True):
        for layer in self.sublayers(include_self=True):
            layer.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    # ---- calling
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def __call__(self, *inputs, **kwargs):
        if self._forward_pre_hooks:  # (tested first: most layers have none)
            for hook in list(self._forward_pre_hooks.values()):
                r = hook(self, inputs)
                if r is not None:
                    inputs = r if isinstance(r, tuple) else (r,)
        forward = self.forward
        if _trace_state.active:
            # Inside oar.jit.to_static: the user's sublayers get their Python control
            # flow converted too (jit's dy2static.convert_call; oar's own layers run as they are).
            forward = _trace_state.convert_forward(forward)
        out = forward(*inputs, **kwargs)
        if self._forward_post_hooks:
            for hook in list(self._forward_post_hooks.values()):
                r = hook(self, inputs, out)
                if r is not None:
                    out = r
        return out

    def register_forward_pre_hook(self, hook):
        """hook(layer, inputs) -> None or new inputs; runs before forward()."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_post_hook(self, hook):
        """hook(layer, inputs, output) -> None or a new output; runs after forward()."""
        return _HookHandle(self._forward_post_hooks, hook)

    # ---- state
    def state_dict(
        self,
        destination=None,
        include_sublayers=True,
        structured_name_prefix="",
        use_hook=True,
        keep_vars=True,
    ):
        """Parameters and persistable buffers by structured name ('0.weight', ...), each
        layer's own first, then its sublayers', as Paddle orders them."""
        dest = collections.OrderedDict() if destination is None else destination
        prefix = structured_name_prefix
        if prefix and not prefix.endswith("."):
            prefix += "."
        self._state_into(dest, prefix, include_sublayers, set())
        return dest

    def _state_into(self, dest, prefix, include_sublayers, visited):
        visited.add(id(self))
        for name, p in self._parameters.items():
            if p is not None:
                dest[prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistable_buffer_names:
                dest[prefix + name] = b
        if include_sublayers:
            for name, layer in self._sub_layers.items():
                if layer is not None and id(layer) not in visited:
                    layer._state_into(dest, prefix + name + ".", True, visited)

    def set_state_dict(self, state_dict, use_structured_name=True, strict=False):
        """Copies values into this layer's parameters and buffers (in place, so optimizers
        keep working). Returns (missing_keys, unexpected_keys). As Paddle's: a key missing
        from the dict, or a value of another shape, is skipped with a warning and the rest is
        loaded (a mismatched key is reported both missing and unexpected), so pretrained
        weights load into a model with a new head. strict=True (an Oar extension, as torch's
        load_state_dict) raises instead, before loading anything: KeyError for missing or
        unexpected keys, ValueError for shape mismatches."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"set_state_dict: expected a dict, got {type(state_dict).__name__}")
        own = self.state_dict()
        if not use_structured_name:
            own = collections.OrderedDict((t.name or k, t) for k, t in own.items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(
                f"set_state_dict of {type(self).__name__}: missing keys {missing}, "
                f"unexpected keys {unexpected}"
            )
        mismatched = {}
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            shape = list(value.shape) if isinstance(value, _C.Tensor) else list(np.shape(value))
            if shape != list(target.shape):
                mismatched[k] = f"'{k}': {shape} in the state dict, {list(target.shape)} in the layer"
        if mismatched and strict:
            raise ValueError(
                f"set_state_dict of {type(self).__name__}: shape mismatch for "
                + "; ".join(mismatched.values())
            )
        from ..autograd import no_grad

        with no_grad():
            for k, target in own.items():
                if k in state_dict and k not in mismatched:
                    target.set_value(state_dict[k])
        for k, why in mismatched.items():
            warnings.warn(f"set_state_dict of {type(self).__name__}: skipped {why}")
        if missing or unexpected:
            warnings.warn(f"set_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        # in the layer's and the dict's orders, as Paddle's
        return ([k for k in own if k not in state_dict or k in mismatched],
                [k for k in state_dict if k not in own or k in mismatched])

    load_dict = set_state_dict
    set_dict = set_state_dict

    def clear_gradients(self, set_to_zero=True):
        for p in self.parameters():
            p.clear_gradient(set_to_zero)

    def to(self, device=None, dtype=None, blocking=None, _op="to"):
        """Moves parameters and buffers to `device` and casts the floating ones to `dtype`
        (new tensors: create optimizers after calling to())."""
        place = None
        if device is not None:
            from .._device import parse_device
            place = parse_device(device, "to")
        given = dtype
        if dtype is not None:
            dtype = convert_dtype(dtype)
            if not dtype.is_floating_point and _op == "to":
                raise TypeError(f"to: dtype must be a float type, got {dtype.name}")

        def convert(t):
            if dtype is not None and t.dtype.is_floating_point and t.dtype != dtype:
                t = t.astype(dtype)
            if place is not None and t.place != place:
                t = t._copy_to(place, True if blocking is None else blocking)
            return t

        from ..autograd import no_grad
        # One new tensor per old one: a parameter registered twice (tied weights, an RNN's
        # flat weight_ih_l0 names beside its cells') stays one parameter.
        moved = {}
        with no_grad():
            for layer in self.sublayers(include_self=True):
                for name, p in list(layer._parameters.items()):
                    if p is None:
                        continue
                    if id(p) not in moved:
                        c = convert(p)
                        q = p
                        if c is not p:
                            q = Parameter(c, trainable=p.trainable, name=p.name)
                            q.stop_gradient = p.stop_gradient
                            for a in ("optimize_attr", "regularizer", "need_clip"):
                                setattr(q, a, getattr(p, a, None))
                        moved[id(p)] = (p, q)  # p kept alive: its id is not reused meanwhile
                    layer._parameters[name] = moved[id(p)][1]
                for name, b in list(layer._buffers.items()):
                    if b is not None:
                        if id(b) not in moved:
                            moved[id(b)] = (b, convert(b))
                        layer._buffers[name] = moved[id(b)][1]
                if dtype is not None:
                    # as Paddle: a dtype given as a string stays one; a DataType prints as
                    # paddle.<name> in the layer's repr
                    layer._dtype = given if isinstance(given, str) else dtype
        return self

    def astype(self, dtype=None):
        """Casts the floating parameters and buffers to `dtype`, which may be any dtype
        (Paddle's Layer.astype: int8 for quantized storage, ...)."""
        return self.to(dtype=convert_dtype(dtype), _op="astype")

    def float(self, excluded_layers=None):
        return self.to(dtype=convert_dtype("float32"))

    def float16(self, excluded_layers=None):
        return self.to(dtype=convert_dtype("float16"))

    def bfloat16(self, excluded_layers=None):
        return self.to(dtype=convert_dtype("bfloat16"))

    def to_static_state_dict(self, destination=None, include_sublayers=True,
                             structured_name_prefix="", use_hook=True):
        """The layer's parameters and persistable buffers by structured name, as state_dict
        (Paddle's to_static_state_dict, which differs only for static-graph variables)."""
        return self.state_dict(destination, include_sublayers, structured_name_prefix,
                               use_hook)

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


class Sequential(Layer):
    """Runs sublayers in order. Sequential(l1, l2), Sequential(('name', l1), ...) or
    Sequential(OrderedDict(name=layer))."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], dict):
            layers = tuple(layers[0].items())
        for i, item in enumerate(layers):
            if isinstance(item, (tuple, list)):
                if len(item) != 2:
                    raise ValueError("Sequential: a named entry must be a (name, layer) pair")
                self.add_sublayer(item[0], item[1])
            else:
                self.add_sublayer(str(i), item)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, i):
        if isinstance(i, str):
            return self._sub_layers[i]
        names = list(self._sub_layers)
        if isinstance(i, slice):
            return Sequential(*[(n, self._sub_layers[n]) for n in names[i]])
        if not -len(names) <= i < len(names):
            raise IndexError(f"Sequential: index {i} out of range for {len(names)} layers")
        return self._sub_layers[names[i]]

    def __setitem__(self, i, layer):
        names = list(self._sub_layers)
        self._sub_layers[names[i] if not isinstance(i, str) else i] = layer

    def __delitem__(self, i):
        names = list(self._sub_layers)
        for n in names[i] if isinstance(i, slice) else [names[i]]:
            del self._sub_layers[n]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def _rebuild(self, items):
        """Re-registers (name, layer) pairs in order; a None name takes its position."""
        self._sub_layers.clear()
        for i, (name, layer) in enumerate(items):
            self.add_sublayer(str(i) if name is None or name.isdigit() else name, layer)

    def append(self, layer):
        """Adds layer at the end (named by its position)."""
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def insert(self, index, layer):
        """Inserts layer before position index; numbered sublayers are renumbered."""
        items = list(self._sub_layers.items())
        if not isinstance(index, int) or not -len(items) <= index <= len(items):
            raise IndexError(f"Sequential.insert: index {index!r} out of range for "
                             f"{len(items)} layers")
        items.insert(index, (None, layer))
        self._rebuild(items)
        return self

    def extend(self, layers):
        """Appends every layer of an iterable."""
        for layer in layers:
            self.append(layer)
        return self


class LayerList(Layer):
    """A list of sublayers, registered as '0', '1', ..."""

    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers or []:
            self.append(layer)

    def _renumber(self, layers):
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self._sub_layers[str(i)] = layer

    def append(self, layer):
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def insert(self, index, layer):
        layers = list(self._sub_layers.values())
        layers.insert(index, layer)
        self._renumber(layers)

    def extend(self, layers):
        for layer in layers:
            self.append(layer)
        return self

    def __getitem__(self, i):
        layers = list(self._sub_layers.values())
        if isinstance(i, slice):
            return LayerList(layers[i])
        if not -len(layers) <= i < len(layers):
            raise IndexError(f"LayerList: index {i} out of range for {len(layers)} layers")
        return layers[i]

    def __setitem__(self, i, layer):
        layers = list(self._sub_layers.values())
        layers[i] = layer
        self._renumber(layers)

    def __delitem__(self, i):
        layers = list(self._sub_layers.values())
        del layers[i]
        self._renumber(layers)

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerDict(Layer):
    """An ordered dict of sublayers."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, layer):
        if key in self._sub_layers and isinstance(layer, Layer):
            self._sub_layers[key] = layer  # replaced where it stands, as in a dict
        else:
            self.add_sublayer(key, layer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        return self._sub_layers.pop(key)

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers):
        items = sublayers.items() if isinstance(sublayers, (dict, LayerDict)) else sublayers
        for kv in items:
            if not isinstance(kv, (tuple, list)) or len(kv) != 2:
                raise ValueError("LayerDict.update: expected a dict or (name, layer) pairs")
            self[kv[0]] = kv[1]


class ParameterList(Layer):
    """A list of Parameters, registered as '0', '1', ..."""

    def __init__(self, parameters=None):
        super().__init__()
        for p in parameters or []:
            self.append(p)

    def append(self, parameter):
        self.add_parameter(str(len(self._parameters)), parameter)
        return self

    def extend(self, parameters):
        for p in parameters:
            self.append(p)
        return self

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __setitem__(self, i, parameter):
        names = list(self._parameters)
        self.add_parameter(names[i], parameter)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def extra_repr(self):
        return ", ".join(
            f"{k}: Parameter(shape={list(p.shape)}, dtype={p.dtype.name})"
            for k, p in self._parameters.items()
        )


class ParameterDict(Layer):
    """An ordered dict of Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, parameter):
        self.add_parameter(key, parameter)

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        items = parameters.items() if isinstance(parameters, (dict, ParameterDict)) else parameters
        for k, p in items:
            self.add_parameter(k, p)
