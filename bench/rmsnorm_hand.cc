// A hand-fused RMSNorm (bench_cinn.py's `hand` row): out = x * rsqrt(mean(x^2) + eps) * w
// over the last axis, two passes over each row (sum of squares, then scale), the inner
// loops written so g++ -O3 vectorizes them for the build machine (bench_cinn.py compiles
// it with -march=native at run time). Built as a shared library and called with ctypes.
#include <cmath>
#include <cstdint>

extern "C" void rmsnorm_f32(const float* x, const float* w, float* out, int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* o = out + r * cols;
    // Sixteen partial sums: independent chains the vectorizer keeps in one register.
    float acc[16] = {0};
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16)
      for (int j = 0; j < 16; ++j) acc[j] += xr[c + j] * xr[c + j];
    float s = 0;
    for (int j = 0; j < 16; ++j) s += acc[j];
    for (; c < cols; ++c) s += xr[c] * xr[c];
    const float inv = 1.0f / std::sqrt(s / static_cast<float>(cols) + eps);
    for (int64_t k = 0; k < cols; ++k) o[k] = xr[k] * inv * w[k];
  }
}
