"""Quanter and observer factories: QuantConfig holds factories (their arguments), and each
quantized layer gets its own quanter instance from factory._instance(layer)."""
import inspect


class ClassWithArguments:
    """A class and the keyword arguments to make its instances with."""

    def __init__(self, **kwargs):
        self.partial_class = None
        self.args = dict(kwargs)

    def _get_class(self):
        raise NotImplementedError

    def __str__(self):
        args = ",".join(f"{k}={v}" for k, v in self.args.items())
        return f"{type(self).__name__}({args})"

    __repr__ = __str__


class QuanterFactory(ClassWithArguments):
    """Makes a quanter layer per quantized layer."""

    def _instance(self, layer):
        return self._get_class()(layer, **self.args)


class ObserverFactory(QuanterFactory):
    """Makes an observer layer per quantized layer."""


def quanter(class_name):
    """Decorator of a quanter layer class: defines, in the class's module, a factory class
    named `class_name` whose instances hold the arguments (after `layer`) of the layer."""
    def wrapper(target_class):
        params = list(inspect.signature(target_class.__init__).parameters.values())[2:]
        defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        names = [p.name for p in params]

        def __init__(self, *args, **kwargs):
            if len(args) > len(names):
                raise TypeError(f"{class_name}: takes at most {len(names)} arguments ({names}), got {len(args)}")
            merged = dict(defaults)
            merged.update(zip(names, args))
            for k in kwargs:
                if k not in names:
                    raise TypeError(f"{class_name}: unexpected argument '{k}' (arguments: {names})")
            merged.update(kwargs)
            QuanterFactory.__init__(self, **{n: merged[n] for n in names if n in merged})

        base = ObserverFactory if _is_observer(target_class) else QuanterFactory
        factory = type(class_name, (base,), {"__init__": __init__, "_get_class": lambda self: target_class,
                                             "__module__": target_class.__module__})
        import sys

        setattr(sys.modules[target_class.__module__], class_name, factory)
        return target_class
    return wrapper


def _is_observer(cls):
    from .base_quanter import BaseObserver

    return issubclass(cls, BaseObserver)
