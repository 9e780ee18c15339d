"""paddle.distributed.io: a static program's persistable variables (parameters and
persistable buffers, as held by the executor's scope) saved to and loaded from a folder.

    exe.run(startup)
    oar.distributed.io.save_persistables(exe, "ckpt", main)              # one file per variable
    oar.distributed.io.save_persistables(exe, "ckpt", main, "all.bin")   # or one file for all
    oar.distributed.io.load_persistables(exe, "ckpt", main)

Files are oar.save's format (safetensors with a checksum), not Paddle's LoDTensor streams.
Paddle's variant for parameter-server programs (distributed lookup tables on servers) has no
counterpart: Oar has no parameter servers."""
import os

__all__ = []


def _program_and_scope(who, executor, main_program):
    from ..static import Executor, Program, default_main_program
    from ..static._io import _scope_of
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"{who}: executor must be an oar.static.Executor, got {type(executor).__name__}")
    program = default_main_program() if main_program is None else main_program
    if not isinstance(program, Program):
        raise TypeError(f"{who}: main_program must be an oar.static.Program, got {type(program).__name__}")
    return program, _scope_of(executor)


def _check_dir(who, dirname):
    if not isinstance(dirname, (str, os.PathLike)) or not os.fspath(dirname):
        raise TypeError(f"{who}: dirname must be a non-empty path, got {dirname!r}")
    return os.fspath(dirname)


def _check_filename(who, filename):
    if filename is not None and (not isinstance(filename, str) or not filename or os.sep in filename):
        raise ValueError(f"{who}: filename must be a plain file name inside dirname, got {filename!r}")


def _persistables(program, scope):
    """name -> tensor of the program's persistable variables the scope holds (as
    Program.state_dict: a program also lists parameters it shares by name with others)."""
    return program.state_dict(scope=scope)


def is_persistable(var):
    """Whether a static variable outlives a run (a parameter or a persistable buffer)."""
    return bool(getattr(var, "persistable", False))


def save_persistables(executor, dirname, main_program=None, filename=None):
    """Writes main_program's persistable variables from the executor's scope into dirname:
    one file per variable named after it, or all of them in dirname/filename."""
    from ..framework_io import save
    who = "distributed.io.save_persistables"
    dirname = _check_dir(who, dirname)
    _check_filename(who, filename)
    program, scope = _program_and_scope(who, executor, main_program)
    state = _persistables(program, scope)
    if not state:
        raise RuntimeError(f"{who}: none of the program's persistable variables is in the scope: run the "
                           "startup program first")
    os.makedirs(dirname, exist_ok=True)
    if filename is not None:
        save(state, os.path.join(dirname, filename))
        return
    for name, t in state.items():
        if os.sep in name or name in (".", ".."):
            raise ValueError(f"{who}: variable '{name}' cannot be a file name; give filename= to save "
                             "all variables in one file")
        save(t, os.path.join(dirname, name))


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Reads what save_persistables wrote into the executor's scope, checking that every
    persistable variable of main_program in the scope (run the startup program first) is
    there with its shape."""
    from ..framework_io import load
    who = "distributed.io.load_persistables"
    dirname = _check_dir(who, dirname)
    _check_filename(who, filename)
    program, scope = _program_and_scope(who, executor, main_program)
    names = list(_persistables(program, scope))
    if filename is not None:
        state = load(os.path.join(dirname, filename))
        if not isinstance(state, dict):
            raise ValueError(f"{who}: '{os.path.join(dirname, filename)}' holds no dict of variables")
        missing = [n for n in names if n not in state]
        if missing:
            raise ValueError(f"{who}: '{os.path.join(dirname, filename)}' lacks the variables {missing[:5]}")
    else:
        state = {}
        for n in names:
            path = os.path.join(dirname, n)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{who}: no file for variable '{n}' in '{dirname}'")
            state[n] = load(path)
    for n in names:
        cur, new = scope._get(n), state[n]
        if cur is not None and list(cur.shape) != list(new.shape):
            raise ValueError(f"{who}: variable '{n}' has shape {list(cur.shape)} in the program, "
                             f"{list(new.shape)} in the file")
        scope._set(n, new)
