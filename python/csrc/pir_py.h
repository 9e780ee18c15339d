// The Python view of a program (oar._C.pir.Program), shared by the bindings that hand
// programs to Python: pir_py.cc (the IR) and inference_py.cc (the predictor's program).
#pragma once

#include <cstdint>
#include <memory>

#include "pir/ir/program.h"

namespace oar::python {

/// A program and a generation number that passes bump, so views of its ops and values
/// taken before a transformation raise instead of reading freed memory.
struct PyProgram {
  std::shared_ptr<pir::Program> p;
  uint64_t generation = 0;
  explicit PyProgram(std::shared_ptr<pir::Program> prog) : p(std::move(prog)) {}
};
using ProgramRef = std::shared_ptr<PyProgram>;

}  // namespace oar::python
