// A hand-fused RMSNorm (bench_cinn.py's `hand` row): out = x * rsqrt(mean(x^2) + eps) * w
// over the last axis, two passes over each row (sum of squares, then scale), the inner
// loops written so g++ -O3 vectorizes them for the build machine (bench_cinn.py compiles
// it with -march=native at run time). Built as a shared library and called with ctypes.
//
// The `_nt` variants and the two copies are the like-with-like references of Note
// [Streaming stores] (docs/notes/cinn.md): the same loops with non-temporal stores (an
// aligned vector body; AVX-512 or AVX), and a copy with ordinary stores beside one with
// non-temporal stores (glibc's memcpy, x.clone(), writes 64 MB with `rep movsb`, which
// does not read the destination first either).
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace {

#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;
using Vec = __m512;
Vec vload(const float* p) { return _mm512_loadu_ps(p); }
Vec vmul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
Vec vset1(float v) { return _mm512_set1_ps(v); }
void vstream(float* p, Vec v) { _mm512_stream_ps(p, v); }
#else  // AVX (the bench compiles with -march=native)
constexpr int64_t kLanes = 8;
using Vec = __m256;
Vec vload(const float* p) { return _mm256_loadu_ps(p); }
Vec vmul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
Vec vset1(float v) { return _mm256_set1_ps(v); }
void vstream(float* p, Vec v) { _mm256_stream_ps(p, v); }
#endif

// out[k] = fs(k) for k in [0, cols): scalar until out is aligned to the vector, then
// aligned non-temporal vector stores of fv(k), then a scalar tail.
template <typename FS, typename FV>
void store_row_nt(float* out, int64_t cols, FS fs, FV fv) {
  int64_t k = 0;
  for (; k < cols && (reinterpret_cast<uintptr_t>(out + k) % (kLanes * 4)) != 0; ++k) out[k] = fs(k);
  for (; k + kLanes <= cols; k += kLanes) vstream(out + k, fv(k));
  for (; k < cols; ++k) out[k] = fs(k);
}

float row_inv_rms(const float* xr, int64_t cols, float eps) {
  // Sixteen partial sums: independent chains the vectorizer keeps in one register.
  float acc[16] = {0};
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16)
    for (int j = 0; j < 16; ++j) acc[j] += xr[c + j] * xr[c + j];
  float s = 0;
  for (int j = 0; j < 16; ++j) s += acc[j];
  for (; c < cols; ++c) s += xr[c] * xr[c];
  return 1.0f / std::sqrt(s / static_cast<float>(cols) + eps);
}

}  // namespace

extern "C" void rmsnorm_f32(const float* x, const float* w, float* out, int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
    const float inv = row_inv_rms(xr, cols, eps);
    for (int64_t k = 0; k < cols; ++k) o[k] = xr[k] * inv * w[k];
  }
}

extern "C" void rmsnorm_f32_nt(const float* x, const float* w, float* out, int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float inv = row_inv_rms(xr, cols, eps);
    const Vec vinv = vset1(inv);
    store_row_nt(
        out + r * cols, cols, [&](int64_t k) { return xr[k] * inv * w[k]; },
        [&](int64_t k) { return vmul(vmul(vload(xr + k), vinv), vload(w + k)); });
  }
  _mm_sfence();
}

extern "C" void copy_f32(const float* x, float* out, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = x[k];
}

extern "C" void copy_f32_nt(const float* x, float* out, int64_t n) {
  store_row_nt(
      out, n, [&](int64_t k) { return x[k]; }, [&](int64_t k) { return vload(x + k); });
  _mm_sfence();
}

// The Adam floor (bench/cinn_adam_floor.py, docs/notes/cinn.md "Adam in place: the
// floor"): the in-place update's memory traffic, 4 streams read (p, g, m, v) and 3
// written back in place (p, m, v), once with Adam's arithmetic (lr 1e-3, betas 0.9 /
// 0.999, eps 1e-8, step 10, bench_cinn.adam_ops_inplace's constants) and once with the
// least arithmetic that keeps the same streams (no sqrt, no divide).
extern "C" void adam_f32(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                         int64_t n) {
  const float c1 = 1.0f / (1.0f - std::pow(0.9f, 10.0f)), c2 = 1.0f / (1.0f - std::pow(0.999f, 10.0f));
  for (int64_t k = 0; k < n; ++k) {
    const float mk = m[k] * 0.9f + g[k] * 0.1f, vk = v[k] * 0.999f + g[k] * g[k] * 0.001f;
    m[k] = mk;
    v[k] = vk;
    p[k] -= mk * c1 * 1e-3f / (std::sqrt(vk * c2) + 1e-8f);
  }
}

extern "C" void stream7_f32(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                            int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const float mk = m[k] * 0.9f + g[k] * 0.1f, vk = v[k] * 0.999f + g[k] * 0.001f;
    m[k] = mk;
    v[k] = vk;
    p[k] -= mk * vk;
  }
}
