// The sample device's kernel framework (kernels.h) and its registration: every kernel of
// kernels_*.cc is registered under the name of Oar's CPU kernel, with the signature of
// its op definition (Oar checks it at load and refuses the whole plugin on a mismatch).
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

namespace sample {

int64_t View::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool View::contiguous() const {
  int64_t expect = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (dims[i] != 1 && strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

size_t dtype_size(OAR_DataType t) {
  switch (t) {
    case OAR_DTYPE_BOOL:
    case OAR_DTYPE_INT8:
    case OAR_DTYPE_UINT8:
      return 1;
    case OAR_DTYPE_INT16:
    case OAR_DTYPE_FLOAT16:
    case OAR_DTYPE_BFLOAT16:
      return 2;
    case OAR_DTYPE_INT32:
    case OAR_DTYPE_FLOAT32:
      return 4;
    case OAR_DTYPE_INT64:
    case OAR_DTYPE_FLOAT64:
    case OAR_DTYPE_COMPLEX64:
      return 8;
    case OAR_DTYPE_COMPLEX128:
      return 16;
  }
  return 0;
}

const char* dtype_name(OAR_DataType t) {
  static const char* names[] = {"bool",    "int8",     "uint8",   "int16",   "int32",     "int64",
                                "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
  const int i = static_cast<int>(t);
  return i >= 0 && i < 12 ? names[i] : "unknown";
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// ---- Call

Call::Call(const OAR_KernelApi* api, OAR_KernelContext ctx, const char* op)
    : api_(api), ctx_(ctx), op_(op), device_(api->device(ctx)) {
  if (device_ == nullptr) fail(OAR_ERROR_INVALID_ARGUMENT, "the kernel has no device");
  arena_ = arena_view(device_);
}

void Call::fail(OAR_Status status, const std::string& why) const { throw KernelError{status, why}; }

void Call::check_failed(OAR_Status s, const char* what) const { fail(s, std::string(what) + " failed"); }

View Call::view(const OAR_Tensor& t, const std::string& what) const {
  View v;
  v.dtype = t.dtype;
  v.dims.assign(t.dims, t.dims + t.ndim);
  v.strides.assign(t.strides, t.strides + t.ndim);
  if (v.numel() == 0) return v;
  // The span the view reaches, which must lie in this device's memory.
  int64_t hi = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.strides[i] < 0) fail(OAR_ERROR_UNIMPLEMENTED, what + " has a negative stride");  // declined
    hi += (t.dims[i] - 1) * t.strides[i];
  }
  const size_t bytes = static_cast<size_t>(hi + 1) * dtype_size(t.dtype);
  v.data = arena_.view(t.data, bytes);
  if (v.data == nullptr)
    fail(OAR_ERROR_INVALID_ARGUMENT, what + " (" + dims_str(v.dims) + ", on " + t.device_type + ":" +
                                         std::to_string(t.device_id) + ") is not in this device's memory");
  return v;
}

Flat Call::flat(const OAR_Tensor& t, const char* kind, size_t i) const {
  Flat f;
  if (t.ndim == 1 && t.strides[0] == 1 && t.dims[0] > 0) {  // the common case: no walk over dims
    f.numel = t.dims[0];
    f.data = arena_.view(t.data, static_cast<size_t>(f.numel) * dtype_size(t.dtype));
    if (f.data == nullptr) flat_failed(t, kind, i);
    return f;
  }
  int64_t hi = 0, expect = 1, numel = 1;
  for (int k = t.ndim - 1; k >= 0; --k) {
    numel *= t.dims[k];
    if (t.dims[k] != 1 && t.strides[k] != expect) f.contiguous = false;
    expect *= t.dims[k];
    if (t.strides[k] < 0) hi = -1;  // refused below, by view
    if (hi >= 0) hi += (t.dims[k] - 1) * t.strides[k];
  }
  f.numel = numel;
  if (numel == 0) return f;
  f.data = hi < 0 ? nullptr : arena_.view(t.data, static_cast<size_t>(hi + 1) * dtype_size(t.dtype));
  if (f.data == nullptr) flat_failed(t, kind, i);
  return f;
}

void Call::flat_failed(const OAR_Tensor& t, const char* kind, size_t i) const {
  view(t, std::string(kind) + " " + std::to_string(i));  // throws, saying why
  fail(OAR_ERROR_INVALID_ARGUMENT, std::string(kind) + " " + std::to_string(i) + " is not in this device's memory");
}

Flat Call::flat_input(size_t i) {
  OAR_Tensor t;
  check(api_->input(ctx_, i, &t), "input");
  if (t.ndim < 0) fail(OAR_ERROR_INVALID_ARGUMENT, "input " + std::to_string(i) + " is absent");
  return flat(t, "input", i);
}

Flat Call::flat_output(size_t i) {
  OAR_Tensor t;
  const OAR_Status s = api_->allocate_output(ctx_, i, &t);
  if (s != OAR_SUCCESS) fail(s, "");  // allocate_output left its reason (Oar's allocator's words)
  return flat(t, "output", i);
}

View Call::allocated_output(size_t i) {
  OAR_Tensor t;
  check(api_->output(ctx_, i, &t), "output");
  return view(t, "output " + std::to_string(i));
}

View Call::input(size_t i) {
  OAR_Tensor t;
  check(api_->input(ctx_, i, &t), "input");
  if (t.ndim < 0) fail(OAR_ERROR_INVALID_ARGUMENT, "input " + std::to_string(i) + " is absent");
  return view(t, "input " + std::to_string(i));
}

View Call::optional_input(size_t i) {
  OAR_Tensor t;
  check(api_->input(ctx_, i, &t), "input");
  if (t.ndim < 0) {
    View v;
    v.present = false;
    return v;
  }
  return view(t, "input " + std::to_string(i));
}

View Call::output(size_t i) {
  OAR_Tensor t;
  const OAR_Status s = api_->allocate_output(ctx_, i, &t);
  if (s != OAR_SUCCESS) fail(s, "");  // allocate_output left its reason (Oar's allocator's words)
  return view(t, "output " + std::to_string(i));
}

bool Call::attr_bool(size_t i) {
  int v = 0;
  check(api_->attr_bool(ctx_, i, &v), "attr_bool");
  return v != 0;
}
int64_t Call::attr_int(size_t i) {
  int64_t v = 0;
  check(api_->attr_int(ctx_, i, &v), "attr_int");
  return v;
}
double Call::attr_float(size_t i) {
  double v = 0;
  check(api_->attr_float(ctx_, i, &v), "attr_float");
  return v;
}
std::string Call::attr_str(size_t i) {
  const char* v = nullptr;
  check(api_->attr_str(ctx_, i, &v), "attr_str");
  return v != nullptr ? v : "";
}
std::vector<int64_t> Call::attr_ints(size_t i) {
  const int64_t* v = nullptr;
  size_t n = 0;
  check(api_->attr_ints(ctx_, i, &v, &n), "attr_ints");
  return std::vector<int64_t>(v, v + n);
}
std::vector<double> Call::attr_floats(size_t i) {
  const double* v = nullptr;
  size_t n = 0;
  check(api_->attr_floats(ctx_, i, &v, &n), "attr_floats");
  return std::vector<double>(v, v + n);
}
std::vector<View> Call::input_list(size_t i) {
  size_t n = 0;
  check(api_->input_list_size(ctx_, i, &n), "input_list_size");
  std::vector<View> out;
  for (size_t j = 0; j < n; ++j) {
    OAR_Tensor t;
    check(api_->input_list_item(ctx_, i, j, &t), "input_list_item");
    out.push_back(view(t, "input " + std::to_string(i) + "[" + std::to_string(j) + "]"));
  }
  return out;
}
OAR_DataType Call::attr_dtype(size_t i) {
  OAR_DataType v = OAR_DTYPE_FLOAT32;
  check(api_->attr_dtype(ctx_, i, &v), "attr_dtype");
  return v;
}
double Call::attr_scalar(size_t i) {
  double v = 0;
  check(api_->attr_scalar(ctx_, i, &v), "attr_scalar");
  return v;
}

// ---- element access

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t n = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    s[i] = n;
    n *= dims[i];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const View& v, const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> s(out_dims.size(), 0);
  const int shift = static_cast<int>(out_dims.size()) - v.ndim();
  for (int i = 0; i < v.ndim(); ++i) {
    if (v.dims[i] != 1) s[shift + i] = v.strides[i];
  }
  return s;
}

template <typename T>
const T* contiguous_data(const View& v, std::vector<T>* buf) {
  if (v.contiguous()) return v.ptr<T>();
  buf->resize(v.numel());
  T* out = buf->data();
  const T* src = v.ptr<T>();
  for_rows<1>(v.dims, {v.strides}, [&](int64_t n, std::array<int64_t, 1> off, std::array<int64_t, 1> st) {
    for (int64_t i = 0; i < n; ++i) *out++ = src[off[0] + i * st[0]];
  });
  return buf->data();
}

// ---- dtype conversion

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, nan
  } else if (exp != 0) {
    bits = sign | (static_cast<uint32_t>(exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exp = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (static_cast<uint32_t>(exp) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);  // inf, nan
  if (ax >= 0x477ff000u) return sign | 0x7c00;                                   // overflow
  if (ax < 0x38800000u) {                                                        // subnormal or zero
    float a;
    std::memcpy(&a, &ax, 4);
    return sign | static_cast<uint16_t>(static_cast<int>(std::nearbyint(a * 16777216.0f)));
  }
  const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;
  return sign | static_cast<uint16_t>(r >> 13);
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

struct Half {
  uint16_t bits;
};
struct BHalf {
  uint16_t bits;
};

// A complex value converts to a real type by its real part (as Oar's cast); others as they are.
template <typename W>
W real_part(W v) {
  return v;
}
template <typename R>
R real_part(std::complex<R> v) {
  return v.real();
}
template <typename W>
constexpr bool kIsComplex = false;
template <typename R>
constexpr bool kIsComplex<std::complex<R>> = true;

// Element types as the conversion sees them: halves go through float, complex through
// complex<double>.
template <typename T>
struct Elem {
  using Wide = T;
  static Wide get(const void* p, int64_t i) { return static_cast<const T*>(p)[i]; }
  template <typename W>
  static void put(void* p, int64_t i, W v) {
    static_cast<T*>(p)[i] = static_cast<T>(real_part(v));
  }
};
template <typename R>
struct Elem<std::complex<R>> {
  using Wide = std::complex<double>;
  static Wide get(const void* p, int64_t i) {
    const std::complex<R> z = static_cast<const std::complex<R>*>(p)[i];
    return {static_cast<double>(z.real()), static_cast<double>(z.imag())};
  }
  template <typename W>
  static void put(void* p, int64_t i, W v) {
    if constexpr (kIsComplex<W>) {
      static_cast<std::complex<R>*>(p)[i] = {static_cast<R>(v.real()), static_cast<R>(v.imag())};
    } else {
      static_cast<std::complex<R>*>(p)[i] = {static_cast<R>(v), R(0)};
    }
  }
};
template <>
struct Elem<bool> {
  using Wide = bool;
  static bool get(const void* p, int64_t i) { return static_cast<const uint8_t*>(p)[i] != 0; }
  template <typename W>
  static void put(void* p, int64_t i, W v) {
    static_cast<uint8_t*>(p)[i] = v != W(0) ? 1 : 0;  // a complex value: either part nonzero
  }
};
template <>
struct Elem<Half> {
  using Wide = float;
  static float get(const void* p, int64_t i) { return half_to_float(static_cast<const uint16_t*>(p)[i]); }
  template <typename W>
  static void put(void* p, int64_t i, W v) {
    static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(real_part(v)));
  }
};
template <>
struct Elem<BHalf> {
  using Wide = float;
  static float get(const void* p, int64_t i) { return bf16_to_float(static_cast<const uint16_t*>(p)[i]); }
  template <typename W>
  static void put(void* p, int64_t i, W v) {
    static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(real_part(v)));
  }
};

template <typename F>
void with_type(OAR_DataType t, F f) {
  switch (t) {
    case OAR_DTYPE_BOOL:
      return f(bool{});
    case OAR_DTYPE_INT8:
      return f(int8_t{});
    case OAR_DTYPE_UINT8:
      return f(uint8_t{});
    case OAR_DTYPE_INT16:
      return f(int16_t{});
    case OAR_DTYPE_INT32:
      return f(int32_t{});
    case OAR_DTYPE_INT64:
      return f(int64_t{});
    case OAR_DTYPE_FLOAT16:
      return f(Half{});
    case OAR_DTYPE_BFLOAT16:
      return f(BHalf{});
    case OAR_DTYPE_FLOAT32:
      return f(float{});
    case OAR_DTYPE_FLOAT64:
      return f(double{});
    case OAR_DTYPE_COMPLEX64:
      return f(std::complex<float>{});
    case OAR_DTYPE_COMPLEX128:
      return f(std::complex<double>{});
  }
}

}  // namespace

void convert(OAR_DataType from, const void* src, OAR_DataType to, void* dst, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(from));
    return;
  }
  with_type(from, [&](auto s) {
    using S = Elem<decltype(s)>;
    with_type(to, [&](auto d) {
      using D = Elem<decltype(d)>;
      for (int64_t i = 0; i < n; ++i) D::put(dst, i, S::get(src, i));
    });
  });
}

// ---- GEMM: i-k-j order, the inner loop contiguous in B and C (vectorized by the compiler)

// The GEMMs call the system's libraries, as a vendor's kernels call the vendor's BLAS
// (docs/plugin_guide.md, "Calling a BLAS"): float32 through oneDNN's sgemm (Debian's
// libdnnl), float64 through CBLAS (Debian's OpenBLAS). Both are Oar's own dependencies
// too. A stream's worker thread is the device's one compute unit: its GEMMs run on that
// thread alone (worker_thread_started), never on a pool shared with the host.
void worker_thread_started() {
  omp_set_num_threads(1);  // this thread's OpenMP setting only (oneDNN's threads); the host's stay
}

namespace {
template <typename T>
void blas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
          bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // C = beta C: kept when accumulating, zeros when not
    if (!accumulate) std::fill(C, C + M * N, T(0));
    return;
  }
  const T beta = accumulate ? T(1) : T(0);
  if constexpr (std::is_same_v<T, float>) {
    // oneDNN's sgemm is row-major with 64-bit sizes; it fails only on bad arguments.
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, N) == dnnl_success) return;
  } else if (std::max({M, N, K, lda, ldb}) <= std::numeric_limits<int>::max()) {  // CBLAS sizes are int
    const auto t = [](bool tr) { return tr ? CblasTrans : CblasNoTrans; };
    cblas_dgemm(CblasRowMajor, t(ta), t(tb), M, N, K, 1.0, A, lda, B, ldb, beta, C, N);
    return;
  }
  for (int64_t i = 0; i < M; ++i)  // past what the library takes
    for (int64_t j = 0; j < N; ++j) {
      T s = accumulate ? C[i * N + j] : T(0);
      for (int64_t k = 0; k < K; ++k) s += A[ta ? k * lda + i : i * lda + k] * B[tb ? j * ldb + k : k * ldb + j];
      C[i * N + j] = s;
    }
}
}  // namespace

template <typename T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate) {
  blas<T>(false, false, M, N, K, A, K, B, N, C, accumulate);
}

template <typename T>
void gemm_nt(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate) {
  blas<T>(false, true, M, N, K, A, K, B, K, C, accumulate);
}

template <typename T>
void gemm_tn(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, bool accumulate) {
  blas<T>(true, false, M, N, K, A, M, B, N, C, accumulate);
}

#define SAMPLE_INSTANTIATE(T)                                                        \
  template const T* contiguous_data<T>(const View&, std::vector<T>*);                \
  template void gemm<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, bool);    \
  template void gemm_nt<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, bool); \
  template void gemm_tn<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, bool);
SAMPLE_INSTANTIATE(float)
SAMPLE_INSTANTIATE(double)
#undef SAMPLE_INSTANTIATE
template const int32_t* contiguous_data<int32_t>(const View&, std::vector<int32_t>*);
template const int64_t* contiguous_data<int64_t>(const View&, std::vector<int64_t>*);
template const uint8_t* contiguous_data<uint8_t>(const View&, std::vector<uint8_t>*);
template const uint16_t* contiguous_data<uint16_t>(const View&, std::vector<uint16_t>*);

// ---- registration

OAR_Status register_kernels(const OAR_KernelApi* api) {
  std::vector<KernelDef> defs;
  math_kernels(&defs);
  nn_kernels(&defs);
  cnn_kernels(&defs);
  update_kernels(&defs);
  OAR_Status status = OAR_SUCCESS;
  for (const KernelDef& d : defs) {
    // Every refusal is collected by Oar (last_registration_error); keep going to report all.
    if (api->register_kernel(d.op, "sample", d.dtype, d.signature, d.fn) != OAR_SUCCESS)
      status = OAR_ERROR_INVALID_ARGUMENT;
  }
  return status;
}

}  // namespace sample
