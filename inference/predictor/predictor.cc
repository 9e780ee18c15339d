#include "inference/predictor/predictor.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "backends/runtime/device_manager.h"
#include "inference/predictor/predictor_access.h"
#include "inference/predictor/saved_model.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/tensor.h"
#include "pir/executor/executor.h"
#include "pir/ir/program.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"

namespace oar::inference {

namespace {

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

// A device type no plugin registered yet: the plugins of CUSTOM_DEVICE_ROOT (Paddle's
// variable; what `import oar` scans in Python) are loaded, so a C++ program finds its
// device as a Python one does. A library that fails to load is skipped with a warning.
void load_plugins_for(const std::string& type) {
  backends::DeviceManager& dm = backends::DeviceManager::instance();
  if (dm.has_device_type(type)) return;
  const char* roots = std::getenv("CUSTOM_DEVICE_ROOT");
  std::stringstream ss(roots ? roots : "");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::string> libs;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".so") libs.push_back(e.path().string());
    std::sort(libs.begin(), libs.end());
    for (const std::string& lib : libs) {
      try {
        dm.load_plugin(lib);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kAlreadyExists)
          std::fprintf(stderr, "oar: warning: device plugin %s not loaded: %s\n", lib.c_str(), e.what());
      }
    }
  }
}

// The place a Config runs on, checked: an unknown device type or id names the devices.
Place run_place(const Config& c) {
  if (!c.use_custom_device()) return CPUPlace();
  const std::string& type = c.custom_device_type();
  load_plugins_for(type);
  backends::DeviceManager& dm = backends::DeviceManager::instance();
  std::string known;
  for (const std::string& t : dm.device_types()) known += (known.empty() ? "" : ", ") + t;
  OAR_ENFORCE(dm.has_device_type(type), InvalidArgument, "Config.EnableCustomDevice: no device type '", type,
              "' is registered (registered: ", known,
              "; set CUSTOM_DEVICE_ROOT to the folder of its plugin, or load it first)");
  const int n = dm.device_count(type);
  OAR_ENFORCE(c.custom_device_id() < n, InvalidArgument, "Config.EnableCustomDevice: device id ", c.custom_device_id(),
              " of '", type, "' is out of range (it has ", n, " device(s))");
  return CustomPlace(type, c.custom_device_id());
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
  std::shared_ptr<pir::Program> program;
  std::unique_ptr<pir::Executor> executor;
  std::vector<::oar::Tensor> inputs, outputs;
};

// ---- Config
void Config::SetCpuMathLibraryNumThreads(int n) {
  OAR_ENFORCE(n >= 1, InvalidArgument, "Config.SetCpuMathLibraryNumThreads: expected a positive number, got ", n);
  threads_ = n;
}

void Config::EnableCustomDevice(const std::string& device_type, int device_id) {
  OAR_ENFORCE(!device_type.empty() && device_type != "cpu", InvalidArgument,
              "Config.EnableCustomDevice: expected a plugin device type such as 'sample', got '", device_type, "'");
  OAR_ENFORCE(device_id >= 0, InvalidArgument, "Config.EnableCustomDevice: device_id must be >= 0, got ", device_id);
  device_type_ = device_type;
  device_id_ = device_id;
}

namespace {
// Whether this process has the fusion compiler's stages (Oar's cinn objects linked in);
// warns once when EnableCinn asks for them and they are missing.
bool cinn_available() {
  const std::vector<std::string> passes = pir::registered_passes();
  const bool have = std::find(passes.begin(), passes.end(), "cinn_stages") != passes.end();
  static std::once_flag warned;
  if (!have)
    std::call_once(warned, [] {
      std::fprintf(stderr, "oar: warning: Config.EnableCinn: this binary has no fusion compiler; running unfused\n");
    });
  return have;
}
}  // namespace

bool Config::DeletePass(const std::string& name) {
  OAR_ENFORCE(name != pir::kLowerPass, InvalidArgument, "Config.DeletePass: '", name,
              "' cannot be left out (the executor runs lowered programs)");
  const auto& known = pir::pipeline_passes("predictor-memory");
  if (std::find(known.begin(), known.end(), name) == known.end()) return false;
  if (std::find(deleted_passes_.begin(), deleted_passes_.end(), name) == deleted_passes_.end())
    deleted_passes_.push_back(name);
  return true;
}

std::vector<std::string> Config::PassNames() const {
  const auto& all = pir::pipeline_passes(memory_optim_ ? "predictor-memory" : "predictor");
  // switch_ir_optim(false) leaves out the analysis passes: those of "predictor" but its
  // final lowering (what memory_optim adds, and the lowering, stay).
  const auto& analysis = pir::pipeline_passes("predictor");
  std::vector<std::string> out;
  for (const std::string& p : all) {
    const bool is_analysis = p != pir::kLowerPass && std::find(analysis.begin(), analysis.end(), p) != analysis.end();
    if (!ir_optim_ && is_analysis) continue;
    if (std::find(deleted_passes_.begin(), deleted_passes_.end(), p) != deleted_passes_.end()) continue;
    // EnableCinn: the fusion compiler after the analysis passes (on the folded program),
    // before the lowering, as the `cinn` pipeline runs it.
    if (cinn_ && p == pir::kLowerPass && cinn_available()) out.push_back("cinn_stages");
    out.push_back(p);
  }
  return out;
}

std::string Config::Summary() const {
  std::ostringstream os;
  std::string passes;
  for (const std::string& p : PassNames()) passes += (passes.empty() ? "" : ",") + p;
  auto b = [](bool v) { return v ? "True" : "False"; };  // as Python prints them (oar.inference)
  os << "prog_file: " << prog_file_ << "\nparams_file: " << params_file_ << "\ncpu_math_threads: " << threads_
     << "\nir_optim: " << b(ir_optim_) << "\nmemory_optim: " << b(memory_optim_) << "\nprofile: " << b(profile_)
     << "\ncinn: " << b(cinn_)
     << "\ndevice: " << (device_type_.empty() ? std::string("cpu") : device_type_ + ":" + std::to_string(device_id_))
     << "\npasses: " << passes;
  return os.str();
}

// ---- Predictor
Predictor::Predictor(const Config& config) : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  OAR_ENFORCE(!config.prog_file().empty() && !config.params_file().empty(), InvalidArgument,
              "Predictor: the Config names no model (SetModel(prog_file, params_file))");
  const Place place = run_place(config);
  impl_->program = load_saved_model(config.prog_file(), config.params_file());
  // The program is the predictor's own: the whole pipeline, lowering included, runs on it,
  // for the place it runs on (Note [Lowering for a place]); the executor moves the
  // parameters there once.
  pir::PassManager pm;
  pm.set_place(place);
  for (const std::string& p : config.PassNames()) pm.add_pass(p);
  pm.run(*impl_->program);
  impl_->executor = std::make_unique<pir::Executor>(*impl_->program, place);
  impl_->executor->set_profiling(config.profile_enabled());
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
    OAR_ENFORCE(impl_->inputs[i].defined(), PreconditionNotMet, "Predictor.Run: no data for input '",
                impl_->executor->input_names()[i], "' (CopyFromCpu / copy_from_cpu first)");
  // The config's thread count for this run only; switching costs, so only when it differs.
  const int prev = omp_get_max_threads(), threads = impl_->config.cpu_math_library_num_threads();
  if (prev == threads) {
    impl_->outputs = impl_->executor->run(impl_->inputs);
    return true;
  }
  omp_set_num_threads(threads);
  try {
    impl_->outputs = impl_->executor->run(impl_->inputs);
  } catch (...) {
    omp_set_num_threads(prev);
    throw;
  }
  omp_set_num_threads(prev);
  return true;
}

std::vector<OpProfile> Predictor::Profile() const {
  std::vector<OpProfile> out;
  for (const auto& p : impl_->executor->profile()) out.push_back(OpProfile{p.name, p.calls, p.seconds});
  return out;
}

void Predictor::ResetProfile() { impl_->executor->reset_profile(); }

std::unique_ptr<Predictor> Predictor::Clone() const { return std::make_unique<Predictor>(impl_->config); }

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
  if (!c.place().is_cpu()) {  // a device output: read through its table
    DenseTensor h(c.dims(), c.dtype(), CPUPlace());
    h.alloc();
    copy_into(c, &h);
    c = std::move(h);
  }
  if (c.numel() > 0) std::memcpy(data, c.raw_data(), static_cast<size_t>(c.numel()) * size_of(c.dtype()));
}

std::shared_ptr<Predictor> CreatePredictor(const Config& config) { return std::make_shared<Predictor>(config); }

// ---- PredictorAccess
void PredictorAccess::set_input(Predictor& p, int index, ::oar::Tensor t) {
  const auto& names = p.impl_->executor->input_names();
  OAR_ENFORCE(index >= 0 && static_cast<size_t>(index) < names.size(), OutOfRange, "Predictor: input index ", index,
              " out of range (", names.size(), " inputs)");
  OAR_ENFORCE(t.defined(), InvalidArgument, "Predictor: input '", names[index], "' got no data");
  const pir::Type ty = p.impl_->executor->input_types()[index];
  OAR_ENFORCE(t.dtype() == ty.dtype(), InvalidType, "Predictor: input '", names[index], "' is ", dtype_name(ty.dtype()),
              ", got ", dtype_name(t.dtype()), " data");
  p.impl_->inputs[index] = std::move(t);
}

const ::oar::Tensor& PredictorAccess::input(const Predictor& p, int index) { return p.impl_->inputs.at(index); }

const std::vector<::oar::Tensor>& PredictorAccess::outputs(const Predictor& p) { return p.impl_->outputs; }

const std::vector<::oar::Tensor>& PredictorAccess::run(Predictor& p, std::vector<::oar::Tensor> inputs) {
  const size_t n = p.impl_->inputs.size();
  OAR_ENFORCE(inputs.size() == n, InvalidArgument, "Predictor.run: the model takes ", n, " inputs, got ",
              inputs.size());
  p.impl_->inputs = std::move(inputs);
  p.Run();
  return p.impl_->outputs;
}

std::shared_ptr<pir::Program> PredictorAccess::program(const Predictor& p) { return p.impl_->program; }
pir::Executor& PredictorAccess::executor(Predictor& p) { return *p.impl_->executor; }
const Config& PredictorAccess::config(const Predictor& p) { return p.impl_->config; }

}  // namespace oar::inference
