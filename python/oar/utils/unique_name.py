"""paddle.utils.unique_name: names made unique by a per-prefix counter (fc_0, fc_1...).
Static programs name their layers and variables through the current generator."""
import contextlib
import itertools


class UniqueNameGenerator:
    """Counters per prefix; names get this generator's own prefix in front."""

    def __init__(self, prefix=None):
        self.ids = {}
        self.prefix = "" if prefix is None else prefix

    def __call__(self, key):
        counter = self.ids.setdefault(key, itertools.count())
        return f"{self.prefix}{key}_{next(counter)}"


class DygraphParameterNameChecker:
    """Remembers parameter names already used in dynamic mode."""

    def __init__(self):
        self._name_set = set()

    def __call__(self, name):
        if name in self._name_set:
            return True
        self._name_set.add(name)
        return False


generator = UniqueNameGenerator()
dygraph_parameter_name_checker = DygraphParameterNameChecker()


def generate(key):
    """key_N, N counting the names made from `key` by the current generator."""
    if not isinstance(key, str):
        raise TypeError(f"unique_name.generate: key must be a str, got {type(key).__name__}")
    return generator(key)


def generate_with_ignorable_key(key):
    return generate(key)


def switch(new_generator=None, new_para_name_checker=None):
    """Makes new_generator (a fresh one if None) current; returns the previous generator
    and parameter-name checker, to switch back to."""
    global generator, dygraph_parameter_name_checker
    if new_generator is not None and not isinstance(new_generator, UniqueNameGenerator):
        raise TypeError(f"unique_name.switch: new_generator must be a UniqueNameGenerator, got "
                        f"{type(new_generator).__name__}")
    old = (generator, dygraph_parameter_name_checker)
    generator = new_generator if new_generator is not None else UniqueNameGenerator()
    dygraph_parameter_name_checker = (new_para_name_checker if new_para_name_checker is not None
                                      else DygraphParameterNameChecker())
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Names made inside start anew (a str or bytes argument: a fresh generator with that
    prefix); the previous generator is restored on exit."""
    if isinstance(new_generator, (str, bytes)):
        if isinstance(new_generator, bytes):
            new_generator = new_generator.decode()
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(*old)
