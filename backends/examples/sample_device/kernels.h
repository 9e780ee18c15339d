// The sample device's C kernels (oar/kernel_ext.h): the framework they share.
//
// A kernel body reads its arguments through a Call (which checks them and throws
// KernelError on a bad one), allocates its outputs through Oar's allocator, and queues a
// host loop on the kernel's stream with Call::launch. The loop sees device memory
// through the plugin's read-write view (View::data); nothing of the OAR_KernelApi is
// used once the kernel returned, so everything the loop needs is captured by value.
// run_kernel turns a KernelError into the status and the message Oar raises.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sample_device.h"

namespace sample {

/// A kernel's failure: the status it returns and the text of the Python exception.
struct KernelError {
  OAR_Status status;
  std::string message;
};

/// A tensor as the queued work sees it: its first element in the plugin's view, and
/// its dims and strides (in elements).
struct View {
  char* data = nullptr;
  std::vector<int64_t> dims, strides;
  OAR_DataType dtype = OAR_DTYPE_FLOAT32;
  bool present = true;  // false: an absent optional input
  int64_t numel() const;
  int ndim() const { return static_cast<int>(dims.size()); }
  bool contiguous() const;
  template <typename T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
};

/// A tensor reduced to what a flat elementwise loop needs (no dims or strides copied):
/// its first element in the plugin's view, its element count, whether it is contiguous.
struct Flat {
  char* data = nullptr;
  int64_t numel = 0;
  bool contiguous = true;
  template <typename T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
};

size_t dtype_size(OAR_DataType t);
const char* dtype_name(OAR_DataType t);
std::string dims_str(const std::vector<int64_t>& d);

/// One kernel call.
class Call {
 public:
  Call(const OAR_KernelApi* api, OAR_KernelContext ctx, const char* op);
  View input(size_t i);           // the i-th tensor argument
  View optional_input(size_t i);  // a Tensor?: present == false when absent
  View output(size_t i);          // allocates the i-th output (contiguous)
  Flat flat_input(size_t i);      // as input, for flat loops (a tiny op's fast path)
  Flat flat_output(size_t i);     // as output, for flat loops
  View allocated_output(size_t i);  // the i-th output, allocated before (flat_output)
  bool attr_bool(size_t i);
  int64_t attr_int(size_t i);
  double attr_float(size_t i);
  std::string attr_str(size_t i);
  std::vector<int64_t> attr_ints(size_t i);
  std::vector<double> attr_floats(size_t i);
  std::vector<View> input_list(size_t i);  // the items of the i-th tensor argument, a Tensor[]
  OAR_DataType attr_dtype(size_t i);
  double attr_scalar(size_t i);
  /// Queues `work` on the kernel's stream.
  template <typename F>
  void launch(F work) {
    check(sample::launch(device_, api_->stream(ctx_), std::move(work), op_), "launch");
  }
  /// Queues `work` (returning "" or why it failed) on the kernel's stream: a failure is
  /// the kernel's error (`status`, this op's name before the text), reported by the
  /// device's next synchronizing call (sample::launch_checked). For checks of tensor
  /// values, which the host cannot read without waiting for the stream.
  template <typename F>
  void launch_checked(F work, OAR_Status status) {
    const std::string prefix = std::string("sample device: ") + op_ + ": ";
    check(sample::launch_checked(
              device_, api_->stream(ctx_),
              [prefix, work = std::move(work)]() -> std::string {
                std::string e = work();
                return e.empty() ? e : prefix + e;
              },
              op_, status),
          "launch");
  }
  /// Waits for the work queued on the kernel's stream (to read its inputs on the host).
  void wait() { check(synchronize(device_, api_->stream(ctx_)), "synchronize"); }
  [[noreturn]] void fail(OAR_Status status, const std::string& why) const;
  const char* op() const { return op_; }

 private:
  void check(OAR_Status s, const char* what) const {
    if (__builtin_expect(s != OAR_SUCCESS, 0)) check_failed(s, what);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void check_failed(OAR_Status s, const char* what) const;
  View view(const OAR_Tensor& t, const std::string& what) const;
  Flat flat(const OAR_Tensor& t, const char* kind, size_t i) const;
  [[noreturn, gnu::noinline, gnu::cold]] void flat_failed(const OAR_Tensor& t, const char* kind, size_t i) const;
  const OAR_KernelApi* api_;
  OAR_KernelContext ctx_;
  const char* op_;
  const OAR_Device* device_;
  ArenaView arena_;  // device_'s memory
};

/// Runs body(call) for one kernel call; a KernelError (or SAMPLE_DEVICE_FAIL=kernel,
/// kernel:<op>) becomes api->set_error and its status.
template <typename F>
OAR_Status run_kernel(const OAR_KernelApi* api, OAR_KernelContext ctx, const char* op, F body) {
  try {
    Call call(api, ctx, op);
    if (fail_env_set() && (debug_fail("kernel") || debug_fail(std::string("kernel:") + op)))
      call.fail(OAR_ERROR_DEVICE, "the kernel failed (SAMPLE_DEVICE_FAIL)");
    body(call);
    return OAR_SUCCESS;
  } catch (const KernelError& e) {
    // An empty message keeps the runtime's own (a failed allocate_output's).
    if (!e.message.empty()) api->set_error(ctx, ("sample device: " + std::string(op) + ": " + e.message).c_str());
    return e.status;
  } catch (const std::exception& e) {
    api->set_error(ctx, ("sample device: " + std::string(op) + ": " + e.what()).c_str());
    return OAR_ERROR_INTERNAL;
  }
}

/// One registration: the op's kernel name, dtype, signature (as in the op definition).
struct KernelDef {
  const char* op;
  OAR_DataType dtype;
  const char* signature;
  OAR_KernelFn fn;
};
void math_kernels(std::vector<KernelDef>* defs);    // kernels_math.cc
void nn_kernels(std::vector<KernelDef>* defs);      // kernels_nn.cc
void cnn_kernels(std::vector<KernelDef>* defs);     // kernels_cnn.cc
void update_kernels(std::vector<KernelDef>* defs);  // kernels_update.cc

// ---- element access

/// `v`'s elements as a contiguous T array: its own memory when contiguous, else
/// gathered into `buf`. Runs inside queued work.
template <typename T>
const T* contiguous_data(const View& v, std::vector<T>* buf);

/// v's strides for a walk over `out_dims` (right-aligned; 0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const View& v, const std::vector<int64_t>& out_dims);

/// Contiguous strides of `dims`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

/// Walks `dims` one innermost row at a time: row(n, offsets, inner_strides), with each
/// operand's element offset of the row's first element and its stride along the row.
/// Dims that every operand steps through as one (contiguous together) are merged first,
/// so rows are as long as they can be.
template <size_t K, typename F>
void for_rows(const std::vector<int64_t>& dims_in, const std::array<std::vector<int64_t>, K>& strides_in, F row) {
  int64_t total = 1;
  for (int64_t d : dims_in) total *= d;
  std::array<int64_t, K> off{}, last{};
  if (total == 0) return;
  // Merge dim i into the next kept one when every operand's stride allows it.
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, K> strides;
  for (int i = static_cast<int>(dims_in.size()) - 1; i >= 0; --i) {
    if (dims_in[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < K && merge; ++k) merge = strides_in[k][i] == strides[k].back() * dims.back();
    if (merge) {
      dims.back() *= dims_in[i];
      continue;
    }
    dims.push_back(dims_in[i]);
    for (size_t k = 0; k < K; ++k) strides[k].push_back(strides_in[k][i]);
  }
  if (dims.empty()) {  // a single element
    row(int64_t{1}, off, last);
    return;
  }
  const int nd = static_cast<int>(dims.size());  // innermost first from here on
  const int64_t n = dims[0];
  for (size_t k = 0; k < K; ++k) last[k] = strides[k][0];
  std::vector<int64_t> idx(nd, 0);
  for (int64_t r = 0, rows = total / n; r < rows; ++r) {
    row(n, off, last);
    for (int d = 1; d < nd; ++d) {
      if (++idx[d] < dims[d]) {
        for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * (dims[d] - 1);
      idx[d] = 0;
    }
  }
}

/// Converts n elements of type `from` at src to type `to` at dst (all ten dtypes).
void convert(OAR_DataType from, const void* src, OAR_DataType to, void* dst, int64_t n);

/// C = A B (+ C when accumulate): A is M x K, B is K x N, C is M x N, all row-major
/// and contiguous.
template <typename T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate);
/// C = A B^T (+ C when accumulate): A is M x K, B is N x K.
template <typename T>
void gemm_nt(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate);
/// C = A^T B (+ C when accumulate): A is K x M, B is K x N.
template <typename T>
void gemm_tn(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate);

}  // namespace sample
