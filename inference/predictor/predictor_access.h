// What the Python binding (python/csrc/inference_py.cc) needs of a Predictor beyond the
// public API of predictor.h: oar tensors in and out without copies (share_external_data,
// run(list) returning oar Tensors), the program it runs, and its executor (for
// oar.profiler). Internal: includes Oar's headers, unlike predictor.h.
#pragma once

#include <memory>
#include <vector>

#include "inference/predictor/predictor.h"
#include "paddle_core/tensor/tensor.h"
#include "pir/executor/executor.h"
#include "pir/ir/program.h"

namespace oar::inference {

struct PredictorAccess {
  /// Input `index` takes `t` (its memory, no copy); dtype and rank are checked.
  static void set_input(Predictor& p, int index, ::oar::Tensor t);
  /// The data of input `index` (undefined before any was given).
  static const ::oar::Tensor& input(const Predictor& p, int index);
  /// The outputs of the last run (empty before it).
  static const std::vector<::oar::Tensor>& outputs(const Predictor& p);
  /// Runs on `inputs` (one per input, in order); returns the outputs. `inputs` become
  /// the inputs' data.
  static const std::vector<::oar::Tensor>& run(Predictor& p, std::vector<::oar::Tensor> inputs);
  /// The lowered program the predictor runs (shared with it).
  static std::shared_ptr<pir::Program> program(const Predictor& p);
  static pir::Executor& executor(Predictor& p);
  static const Config& config(const Predictor& p);
  /// A handle's predictor, input or output index, and the shape given by Reshape.
  static Predictor& owner(const Tensor& t) { return *t.p_; }
  static bool is_input(const Tensor& t) { return t.input_; }
  static int index(const Tensor& t) { return t.index_; }
  static const std::vector<int64_t>& reshaped(const Tensor& t) { return t.shape_; }
};

}  // namespace oar::inference
