// The C++ predictor (Paddle's paddle_infer API shape): loads a saved model
// (<prefix>.pdmodel + <prefix>.pdiparams, written by oar.jit.save; saved_model.h), runs
// the registered pass pipeline "predictor" (pir/pass/pipelines.h) and executes the
// lowered program on the executor, with no Python in the process. oar.inference in
// Python is a binding of this class (python/csrc/inference_py.cc).
//
//   oar::inference::Config config("out/model.pdmodel", "out/model.pdiparams");
//   auto predictor = oar::inference::CreatePredictor(config);
//   auto in = predictor->GetInputHandle(predictor->GetInputNames()[0]);
//   in->Reshape({1, 3, 224, 224});
//   in->CopyFromCpu(data.data());
//   predictor->Run();
//   auto out = predictor->GetOutputHandle(predictor->GetOutputNames()[0]);
//   std::vector<float> result(out->numel());
//   out->CopyToCpu(result.data());
//
// Errors (missing or corrupt files, wrong input shapes) throw std::runtime_error
// subclasses (oar::Error) whose message names the file or input and the problem.
// This header includes no Oar internals.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oar::inference {

enum class DataType { kFloat32, kFloat64, kInt32, kInt64, kBool, kFloat16, kBFloat16, kInt8, kUInt8, kInt16 };

class Config {
 public:
  Config() = default;
  Config(std::string prog_file, std::string params_file)
      : prog_file_(std::move(prog_file)), params_file_(std::move(params_file)) {}
  void SetModel(const std::string& prog_file, const std::string& params_file) {
    prog_file_ = prog_file;
    params_file_ = params_file;
  }
  void SetProgFile(const std::string& f) { prog_file_ = f; }
  void SetParamsFile(const std::string& f) { params_file_ = f; }
  const std::string& prog_file() const { return prog_file_; }
  const std::string& params_file() const { return params_file_; }
  /// OpenMP threads of the kernels during Run (n >= 1; InvalidArgument otherwise).
  void SetCpuMathLibraryNumThreads(int n);
  int cpu_math_library_num_threads() const { return threads_; }
  /// Analysis passes (canonicalize, constant folding, CSE, DRR fusions, DCE); on by default.
  void SwitchIrOptim(bool on = true) { ir_optim_ = on; }
  bool ir_optim() const { return ir_optim_; }
  /// In-place rewriting on top of the executor's buffer reuse.
  void EnableMemoryOptim(bool on = true) { memory_optim_ = on; }
  bool memory_optim() const { return memory_optim_; }
  /// Leaves pass `name` out of the optimization; false (nothing changes) when the
  /// predictor's pipeline has no such pass. The final lowering cannot be left out.
  bool DeletePass(const std::string& name);
  /// The passes the predictor runs, in order: the registered pipeline "predictor" (or
  /// "predictor-memory"), without its analysis passes when ir_optim is off, without the
  /// deleted passes. Always ends with lower_to_kernel.
  std::vector<std::string> PassNames() const;
  /// Runs the program through the fusion compiler (docs/notes/cinn.md): the `cinn_stages`
  /// pass (decompose, fuse, compile each group; a group that cannot compile runs
  /// unfused) before the final lowering. Where the process has no compiler (a binary
  /// without Oar's cinn objects, or a build without LLVM 19) a warning is printed once and
  /// the model runs unfused.
  void EnableCinn(bool on = true) { cinn_ = on; }
  bool cinn_enabled() const { return cinn_; }
  /// Per-op timing of every Run (Predictor::Profile()).
  void EnableProfile() { profile_ = true; }
  bool profile_enabled() const { return profile_; }
  /// Runs the model on device `device_id` of the plugin device type `device_type`
  /// ("sample", Paddle's EnableCustomDevice): parameters move there once, each op runs
  /// its kernel there or its CPU kernel through the fallback. A type not registered yet
  /// is looked for in the plugins of CUSTOM_DEVICE_ROOT (':'-separated folders of .so
  /// files) when the predictor is made; an unknown type or id is an error then.
  void EnableCustomDevice(const std::string& device_type, int device_id = 0);
  bool use_custom_device() const { return !device_type_.empty(); }
  const std::string& custom_device_type() const { return device_type_; }
  int custom_device_id() const { return device_id_; }
  /// Back to the CPU.
  void DisableCustomDevice() {
    device_type_.clear();
    device_id_ = 0;
  }
  /// The settings, one "key: value" a line.
  std::string Summary() const;

 private:
  std::string prog_file_, params_file_;
  int threads_ = 1;
  bool ir_optim_ = true;
  bool memory_optim_ = false;
  bool profile_ = false;
  bool cinn_ = false;
  std::string device_type_;  // empty: the CPU
  int device_id_ = 0;
  std::vector<std::string> deleted_passes_;
};

/// One op's share of the runs so far (Config::EnableProfile).
struct OpProfile {
  std::string name;  // the op ("pd_op.conv2d")
  int64_t calls = 0;
  double seconds = 0.0;
};

class Predictor;

/// An input or output of a predictor.
class Tensor {
 public:
  const std::string& name() const { return name_; }
  /// Inputs: the shape of the data CopyFromCpu reads next.
  void Reshape(const std::vector<int64_t>& shape);
  std::vector<int64_t> shape() const;
  int64_t numel() const;
  DataType type() const;
  /// Inputs: copies numel() elements of T (T must match the input's dtype).
  template <typename T> void CopyFromCpu(const T* data);
  /// Outputs (after Run): copies numel() elements of T.
  template <typename T> void CopyToCpu(T* data) const;

 private:
  friend class Predictor;
  friend struct PredictorAccess;
  Tensor(Predictor* p, std::string name, bool input, int index)
      : p_(p), name_(std::move(name)), input_(input), index_(index) {}
  void copy_from(const void* data, DataType t);
  void copy_to(void* data, DataType t) const;
  Predictor* p_;
  std::string name_;
  bool input_;
  int index_;
  std::vector<int64_t> shape_;
};

class Predictor {
 public:
  explicit Predictor(const Config& config);
  ~Predictor();
  std::vector<std::string> GetInputNames() const;
  std::vector<std::string> GetOutputNames() const;
  std::unique_ptr<Tensor> GetInputHandle(const std::string& name);
  std::unique_ptr<Tensor> GetOutputHandle(const std::string& name);
  /// Runs on the data copied into the input handles.
  bool Run();
  /// Per-op profile of the runs so far, slowest first (empty unless EnableProfile).
  std::vector<OpProfile> Profile() const;
  void ResetProfile();
  /// A new predictor of the same model and config.
  std::unique_ptr<Predictor> Clone() const;

 private:
  friend class Tensor;
  friend struct PredictorAccess;  // predictor_access.h: the Python binding's zero-copy path
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::shared_ptr<Predictor> CreatePredictor(const Config& config);

template <typename T> struct DataTypeOf;
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::kFloat64; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = DataType::kBool; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::kUInt8; };

template <typename T> void Tensor::CopyFromCpu(const T* data) { copy_from(data, DataTypeOf<T>::value); }
template <typename T> void Tensor::CopyToCpu(T* data) const { copy_to(data, DataTypeOf<T>::value); }

}  // namespace oar::inference
