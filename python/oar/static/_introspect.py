"""Program.global_block(): Paddle's view of a program's ops and variables, over a copy
of the pir program recorded so far."""


class Operation:
    """One op of a program (Paddle's pir Operation: op.name() is a method)."""

    def __init__(self, op):
        self._op = op

    def name(self):
        return self._op.name

    def operands_source(self):
        return self._op.operands()

    def results(self):
        return self._op.results()

    def result(self, i):
        return self._op.result(i)

    def num_results(self):
        return len(self._op.results())

    def attrs(self):
        return self._op.attrs()

    def __repr__(self):
        return str(self._op)


class Block:
    def __init__(self, program):
        self.program = program

    @property
    def ops(self):
        pir = self.program._pir if hasattr(self.program, "_pir") else self.program.to_pir()
        return [Operation(op) for op in pir.ops()]

    @property
    def vars(self):
        return dict(self.program._base()._vars)

    def var(self, name):
        return self.program._var(name, "Block.var")

    def has_var(self, name):
        return name in self.program._base()._vars

    def all_parameters(self):
        return self.program.all_parameters()
