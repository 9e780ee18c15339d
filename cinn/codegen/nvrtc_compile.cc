// NVRTC: CUDA C -> PTX or an sm_<N> CUBIN, without a GPU (cuda_codegen.h). The only
// file that includes nvrtc.h; built with OAR_WITH_NVRTC=1 when CMake found CUDA::nvrtc.
#include <chrono>
#include <string>
#include <vector>

#include "cinn/codegen/cuda_codegen.h"
#include "paddle_core/base/errors.h"

#if defined(OAR_WITH_NVRTC) && OAR_WITH_NVRTC
#include <nvrtc.h>
#define OAR_HAVE_NVRTC 1
#else
#define OAR_HAVE_NVRTC 0
#endif

namespace oar::cinn {

#if OAR_HAVE_NVRTC

namespace {
void check(nvrtcResult r, const char* what, const std::string& name) {
  OAR_ENFORCE(r == NVRTC_SUCCESS, InvalidArgument, "cinn: NVRTC ", what, " failed for ", name, ": ",
              nvrtcGetErrorString(r));
}
}  // namespace

bool compiled_with_nvrtc() { return true; }

std::string cuda_codegen_target(int sm) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return "nvrtc-" + std::to_string(major) + "." + std::to_string(minor) + " sm_" + std::to_string(sm);
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, bool cubin, int sm) {
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "create", name);
  struct Guard {
    nvrtcProgram* p;
    ~Guard() { nvrtcDestroyProgram(p); }
  } guard{&prog};
  // sm_N: real architecture -> CUBIN; compute_N: virtual -> PTX. --fmad=false: no FMA
  // contraction, the rounding of the CPU kernels (cuda_codegen.cc).
  const std::string arch = std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(sm);
  std::vector<const char*> opts = {arch.c_str(), "--std=c++17", "--fmad=false"};
  const auto t0 = std::chrono::steady_clock::now();
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  NvrtcResult out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  OAR_ENFORCE(r == NVRTC_SUCCESS, InvalidArgument, "cinn: NVRTC cannot compile the CUDA C of ", name, " (",
              nvrtcGetErrorString(r), "):\n", out.log);
  size_t size = 0;
  if (cubin) {
    check(nvrtcGetCUBINSize(prog, &size), "CUBIN size", name);
    out.binary.resize(size);
    check(nvrtcGetCUBIN(prog, out.binary.data()), "CUBIN", name);
  } else {
    check(nvrtcGetPTXSize(prog, &size), "PTX size", name);
    out.binary.resize(size);
    check(nvrtcGetPTX(prog, out.binary.data()), "PTX", name);
    if (!out.binary.empty() && out.binary.back() == '\0') out.binary.pop_back();
  }
  return out;
}

#else

bool compiled_with_nvrtc() { return false; }
std::string cuda_codegen_target(int) { return ""; }
NvrtcResult nvrtc_compile(const std::string&, const std::string&, bool, int) {
  OAR_THROW(Unimplemented, "cinn: Oar was built without NVRTC (OAR_WITH_NVRTC=OFF)");
}

#endif

}  // namespace oar::cinn
