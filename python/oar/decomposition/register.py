"""paddle.decomposition.register: the registry of decomposition rules."""
import inspect

__all__ = ["register_decomp", "get_decomp_rule"]


class Registry:
    """Rules by op name ('softmax' and 'pd_op.softmax' are one name)."""

    __slots__ = ["name", "rules"]

    def __init__(self, name):
        self.name = name
        self.rules = {}

    @staticmethod
    def key(op_type):
        return op_type if "." in op_type else f"pd_op.{op_type}"

    def register(self, op_type, rule):
        if not isinstance(op_type, str) or not op_type:
            raise TypeError(f"register_decomp: op_type must be a non-empty str, got {op_type!r}")
        if not inspect.isfunction(rule):
            raise TypeError(f"register_decomp: the rule for '{op_type}' must be a function, got "
                            f"{type(rule).__name__}")
        key = self.key(op_type)
        if key in self.rules:
            raise ValueError(f"register_decomp: a rule for '{op_type}' is already registered")
        self.rules[key] = rule

    def lookup(self, op_type):
        return self.rules.get(self.key(op_type))


_decomposition_ops = Registry("decomposition")


def register_decomp(op_type):
    """Decorator registering its function as the decomposition rule of op `op_type`: the
    rule takes the op's tensor inputs in order, then its attributes by parameter name, and
    returns what the op returns, computed with other ops. `decompose` applies it."""
    if not isinstance(op_type, str):
        raise TypeError(f"register_decomp: op_type must be a str, got {type(op_type).__name__}")

    def wrapper(f):
        _decomposition_ops.register(op_type, f)
        return f

    return wrapper


def get_decomp_rule(op_type):
    """The rule registered for op_type, or None."""
    return _decomposition_ops.lookup(op_type)
