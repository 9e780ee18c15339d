"""oar.pir: the intermediate representation (C++ library pir/, bound as oar._C.pir).

Programs print and parse in a textual form, list their ops and values, and run
named pass pipelines (see docs/notes/pir.md):

    import oar
    prog = oar.pir.Program()
    x = prog.add_parameter("x", [4, 8], "float32")
    w = prog.add_parameter("w", [8, 16], "float32")
    y = prog.add_op("matmul", [x, w]).result(0)           # shape inference: [4, 16]
    prog.add_output(prog.add_op("relu", [y]).result(0), "out")
    prog.run_passes("canonicalize,cse,dce")
    print(prog)

Op and Value objects are views: after run_passes, list them again (old views raise).
"""
from ._C import pir as _pir

Program = _pir.Program
Operation = _pir.Operation
Value = _pir.Value
parse = _pir.parse
deserialize = _pir.deserialize
registered_passes = _pir.registered_passes
standard_pipeline = _pir.standard_pipeline
op_names = _pir.op_names
op_info = _pir.op_info


def run_passes(program, pipeline, verify_each=True, timing=False):
    """Runs a pass pipeline ("dce,cse", "cf.while(cse)", or "standard") on `program`."""
    return program.run_passes(pipeline, verify_each=verify_each, timing=timing)


__all__ = ["Program", "Operation", "Value", "parse", "deserialize", "registered_passes",
           "standard_pipeline", "op_names", "op_info", "run_passes"]
