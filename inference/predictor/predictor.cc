#include "inference/predictor/predictor.h"

#include <omp.h>

#include <cstring>

#include "inference/predictor/params_reader.h"
#include "paddle_core/api/tensor.h"
#include "paddle_core/base/errors.h"
#include "pir/executor/executor.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"
#include "pir/pass/pass.h"
#include "pir/serialize/serialize.h"

namespace oar::inference {

namespace {
// The passes the predictor runs (as oar.inference's Python predictor).
constexpr const char* kIrOptimPasses = "canonicalize,constant_fold,cse,fuse,fold_parameters,dce";
constexpr const char* kMemoryOptimPasses = "inplace";

::oar::DataType to_core(DataType t) {
  switch (t) {
    case DataType::kFloat32: return ::oar::DataType::FLOAT32;
    case DataType::kFloat64: return ::oar::DataType::FLOAT64;
    case DataType::kInt32: return ::oar::DataType::INT32;
    case DataType::kInt64: return ::oar::DataType::INT64;
    case DataType::kBool: return ::oar::DataType::BOOL;
    case DataType::kFloat16: return ::oar::DataType::FLOAT16;
    case DataType::kBFloat16: return ::oar::DataType::BFLOAT16;
    case DataType::kInt8: return ::oar::DataType::INT8;
    case DataType::kUInt8: return ::oar::DataType::UINT8;
    case DataType::kInt16: return ::oar::DataType::INT16;
  }
  return ::oar::DataType::UNDEFINED;
}

DataType from_core(::oar::DataType t) {
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kInt64, DataType::kBool,
                     DataType::kFloat16, DataType::kBFloat16, DataType::kInt8, DataType::kUInt8, DataType::kInt16})
    if (to_core(d) == t) return d;
  OAR_THROW(Unimplemented, "inference: dtype ", dtype_name(t), " has no inference::DataType");
}
}  // namespace

struct Predictor::Impl {
  Config config;
  std::unique_ptr<pir::Program> program;
  std::unique_ptr<pir::Executor> executor;
  std::vector<::oar::Tensor> inputs, outputs;
};

Predictor::Predictor(const Config& config) : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  OAR_ENFORCE(!config.prog_file().empty() && !config.params_file().empty(), InvalidArgument,
              "Predictor: the Config names no model (SetModel(prog_file, params_file))");
  impl_->program = pir::load_program(pir::IrContext::global(), config.prog_file());
  auto params = read_params(config.params_file());
  // Attach each parameter's data, checking it against the program's declaration.
  for (pir::Operation* op : *impl_->program->block()) {
    if (op->name() != "builtin.parameter") continue;
    const std::string name = op->attr("name").as_string();
    auto it = params.find(name);
    OAR_ENFORCE(it != params.end(), InvalidArgument, "Predictor: '", config.params_file(),
                "' has no data for parameter '", name, "'");
    const pir::Type t = op->result(0).type();
    const auto& d = it->second->dims();
    OAR_ENFORCE(t.dtype() == it->second->dtype() && std::vector<int64_t>(d.begin(), d.end()) == t.dims(),
                InvalidArgument, "Predictor: parameter '", name, "' in '", config.params_file(), "' has shape ", d,
                " ", dtype_name(it->second->dtype()), ", the program expects ", t.str());
    impl_->program->set_parameter(name, it->second);
  }
  std::string passes;
  if (config.ir_optim()) passes = kIrOptimPasses;
  if (config.memory_optim()) passes += std::string(passes.empty() ? "" : ",") + kMemoryOptimPasses;
  if (!passes.empty()) {
    pir::PassManager pm;
    pm.add_pipeline(passes);
    pm.run(*impl_->program);
  }
  impl_->executor = std::make_unique<pir::Executor>(*impl_->program);
  impl_->inputs.resize(impl_->executor->input_names().size());
}

Predictor::~Predictor() = default;

std::vector<std::string> Predictor::GetInputNames() const { return impl_->executor->input_names(); }
std::vector<std::string> Predictor::GetOutputNames() const { return impl_->executor->output_names(); }

std::unique_ptr<Tensor> Predictor::GetInputHandle(const std::string& name) {
  const auto& names = impl_->executor->input_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::unique_ptr<Tensor>(new Tensor(this, name, true, static_cast<int>(i)));
  OAR_THROW(InvalidArgument, "Predictor.GetInputHandle: no input '", name, "'");
}

std::unique_ptr<Tensor> Predictor::GetOutputHandle(const std::string& name) {
  const auto& names = impl_->executor->output_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::unique_ptr<Tensor>(new Tensor(this, name, false, static_cast<int>(i)));
  OAR_THROW(InvalidArgument, "Predictor.GetOutputHandle: no output '", name, "'");
}

bool Predictor::Run() {
  for (size_t i = 0; i < impl_->inputs.size(); ++i)
    OAR_ENFORCE(impl_->inputs[i].defined(), PreconditionNotMet, "Predictor.Run: input '",
                impl_->executor->input_names()[i], "' has no data (CopyFromCpu first)");
  const int prev = omp_get_max_threads();
  omp_set_num_threads(impl_->config.cpu_math_library_num_threads());
  try {
    impl_->outputs = impl_->executor->run(impl_->inputs);
  } catch (...) {
    omp_set_num_threads(prev);
    throw;
  }
  omp_set_num_threads(prev);
  return true;
}

void Tensor::Reshape(const std::vector<int64_t>& shape) {
  OAR_ENFORCE(input_, PreconditionNotMet, "Tensor.Reshape: '", name_, "' is an output");
  for (int64_t d : shape) OAR_ENFORCE(d >= 0, InvalidArgument, "Tensor.Reshape: '", name_, "': negative size ", d);
  shape_ = shape;
}

std::vector<int64_t> Tensor::shape() const {
  const ::oar::Tensor& t = input_ ? p_->impl_->inputs[index_] : p_->impl_->outputs.at(index_);
  if (!t.defined()) return shape_;
  return std::vector<int64_t>(t.dims().begin(), t.dims().end());
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape()) n *= d;
  return n;
}

DataType Tensor::type() const {
  if (input_) return from_core(p_->impl_->executor->input_types()[index_].dtype());
  OAR_ENFORCE(index_ < static_cast<int>(p_->impl_->outputs.size()), PreconditionNotMet, "Tensor.type: '", name_,
              "' has no data; call Run() first");
  return from_core(p_->impl_->outputs[index_].dtype());
}

void Tensor::copy_from(const void* data, DataType t) {
  OAR_ENFORCE(input_, PreconditionNotMet, "Tensor.CopyFromCpu: '", name_, "' is an output");
  const pir::Type ty = p_->impl_->executor->input_types()[index_];
  OAR_ENFORCE(to_core(t) == ty.dtype(), InvalidType, "Tensor.CopyFromCpu: input '", name_, "' is ",
              dtype_name(ty.dtype()), ", got ", dtype_name(to_core(t)), " data");
  std::vector<int64_t> shape = shape_;
  if (shape.empty() && !ty.has_dynamic_dims()) shape = ty.dims();
  OAR_ENFORCE(shape.size() == ty.dims().size(), InvalidArgument, "Tensor.CopyFromCpu: input '", name_,
              "' needs Reshape() to a shape of rank ", ty.dims().size(), " first");
  DenseTensor d{Dims(shape), ty.dtype()};
  d.alloc();
  if (d.numel() > 0) std::memcpy(d.raw_data(), data, static_cast<size_t>(d.numel()) * size_of(ty.dtype()));
  p_->impl_->inputs[index_] = ::oar::Tensor(std::move(d));
}

void Tensor::copy_to(void* data, DataType t) const {
  const ::oar::Tensor* src = nullptr;
  if (input_) {
    src = &p_->impl_->inputs[index_];
  } else if (index_ < static_cast<int>(p_->impl_->outputs.size())) {
    src = &p_->impl_->outputs[index_];
  }
  OAR_ENFORCE(src != nullptr && src->defined(), PreconditionNotMet, "Tensor.CopyToCpu: '", name_,
              "' has no data; call Run() first");
  OAR_ENFORCE(to_core(t) == src->dtype(), InvalidType, "Tensor.CopyToCpu: '", name_, "' is ",
              dtype_name(src->dtype()), ", asked for ", dtype_name(to_core(t)));
  DenseTensor c = contiguous(src->dense());
  if (c.numel() > 0) std::memcpy(data, c.raw_data(), static_cast<size_t>(c.numel()) * size_of(c.dtype()));
}

std::shared_ptr<Predictor> CreatePredictor(const Config& config) { return std::make_shared<Predictor>(config); }

}  // namespace oar::inference
