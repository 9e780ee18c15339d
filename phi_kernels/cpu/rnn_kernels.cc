// Note [Fused LSTM]
// lstm_sequence runs one LSTM layer over a whole time-major sequence in one kernel. The
// composed cell (oar.nn.LSTMCell) costs about a dozen eager ops per step, each with its
// autograd node, for [B, 4H] operands of a few thousand elements; here a step is one GEMM
// (h_{t-1} W_hh^T, [B, H] x [H, 4H]) and one fused pass of the gate math:
//   i, f, g, o = sigmoid(a_i), sigmoid(a_f), tanh(a_g), sigmoid(a_o),  a = xw_t + h W_hh^T
//   c_t = f c_{t-1} + i g,  h_t = o tanh(c_t)
// xw (the input projection of all steps, with both biases) is one matmul outside, done by
// the caller. The kernel saves the activated gates and the cells for the backward, which
// walks the steps in reverse with one GEMM per step for dh_{t-1} = da_t W_hh, and one GEMM
// at the end for dW_hh = sum_t da_t^T h_{t-1} over all steps at once.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/vec_math.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

// C[M, N] = op(A) op(B) (row-major, C overwritten).
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
          float* C, int64_t ldc) {
  sgemm_rowmajor(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B, int64_t ldb,
          double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0, A, lda, B,
              ldb, 0.0, C, ldc);
}

// The gate activations, vectorized (the scalar forms cost ~10 ns an element, which made
// the gate math, not the GEMMs, most of a step).
OAR_SLEEF_FUNCTOR(TanhFn, tanh, u10, std::tanh(v))
struct SigmoidFn {
#if OAR_VEC
  static vec::F vf(vec::F v) {
    return vec::div(vec::set1(1.0f), vec::add(vec::set1(1.0f), vec::exp(vec::sub(vec::set1(0.0f), v))));
  }
  static vec::D vd(vec::D v) {
    return vec::div(vec::set1(1.0), vec::add(vec::set1(1.0), OAR_SLEEF_D(exp, u10)(vec::sub(vec::set1(0.0), v))));
  }
#endif
  template <typename M>
  static M s(M v) {
    return M(1) / (M(1) + std::exp(-v));
  }
};

template <typename Fn, typename T>
inline void apply(T* x, int64_t n) {  // in place
#if OAR_VEC
  OAR_ISA_NS::detail::vec_apply<Fn>(x, x, n);
#else
  OAR_ISA_NS::detail::vec_apply<Fn, T>(x, x, n);
#endif
}

template <typename T>
void LstmSequenceKernel(const DeviceContext&, const DenseTensor& xw_in, const DenseTensor& w_in,
                        const DenseTensor& h0_in, const DenseTensor& c0_in, DenseTensor* out, DenseTensor* last_h,
                        DenseTensor* last_c, DenseTensor* gates, DenseTensor* cells) {
  const DenseTensor xw = contiguous(xw_in), w = contiguous(w_in);
  const DenseTensor h0 = contiguous(h0_in), c0 = contiguous(c0_in);
  const int64_t steps = xw.dims()[0], B = xw.dims()[1], H = xw.dims()[2] / 4, G = 4 * H;
  T* o = out->alloc<T>();
  T* gp = gates->alloc<T>();
  T* cp = cells->alloc<T>();
  T* lh = last_h->alloc<T>();
  T* lc = last_c->alloc<T>();
  const T* x = xw.data<T>();
  const T* wp = w.data<T>();
  const T* h_prev = h0.data<T>();
  const T* c_prev = c0.data<T>();
  for (int64_t t = 0; t < steps; ++t) {
    T* a = gp + t * B * G;  // pre-activations, then the activated gates in place
    T* c = cp + t * B * H;
    T* h = o + t * B * H;
    const T* xt = x + t * B * G;
    if (H > 0 && B > 0) gemm(false, true, B, G, H, h_prev, H, wp, H, a, G);
    for (int64_t k = 0; k < B * G; ++k) a[k] += xt[k];
    for (int64_t b = 0; b < B; ++b) {
      T* ab = a + b * G;
      apply<SigmoidFn>(ab, 2 * H);      // i, f
      apply<TanhFn>(ab + 2 * H, H);     // g
      apply<SigmoidFn>(ab + 3 * H, H);  // o
      const T* cb_prev = c_prev + b * H;
      T* cb = c + b * H;
      T* hb = h + b * H;
      for (int64_t j = 0; j < H; ++j) cb[j] = ab[H + j] * cb_prev[j] + ab[j] * ab[2 * H + j];
      std::memcpy(hb, cb, sizeof(T) * H);
      apply<TanhFn>(hb, H);
      for (int64_t j = 0; j < H; ++j) hb[j] *= ab[3 * H + j];
    }
    h_prev = h;
    c_prev = c;
  }
  std::memcpy(lh, h_prev, sizeof(T) * B * H);
  std::memcpy(lc, c_prev, sizeof(T) * B * H);
}

template <typename T>
void LstmSequenceGradKernel(const DeviceContext&, const DenseTensor& w_in, const DenseTensor& h0_in,
                            const DenseTensor& c0_in, const DenseTensor& gates_in, const DenseTensor& cells_in,
                            const DenseTensor* grad_out, const DenseTensor* grad_last_h, const DenseTensor* grad_last_c,
                            DenseTensor* xw_grad, DenseTensor* w_hh_grad, DenseTensor* h0_grad, DenseTensor* c0_grad) {
  const DenseTensor w = contiguous(w_in), h0 = contiguous(h0_in), c0 = contiguous(c0_in);
  const DenseTensor gates = contiguous(gates_in), cells = contiguous(cells_in);
  const int64_t steps = gates.dims()[0], B = gates.dims()[1], H = gates.dims()[2] / 4, G = 4 * H;
  const int64_t BH = B * H;
  T* da = xw_grad->alloc<T>();
  T* dw = w_hh_grad->alloc<T>();
  T* dh = h0_grad->alloc<T>();  // dL/dh_t, walking back to dL/dh_0
  T* dc = c0_grad->alloc<T>();
  const T* gp = gates.data<T>();
  const T* cp = cells.data<T>();
  const T* wp = w.data<T>();
  const DenseTensor go = grad_out ? contiguous(*grad_out) : DenseTensor();
  const T* gop = grad_out ? go.data<T>() : nullptr;
  if (grad_last_h) {
    const DenseTensor g = contiguous(*grad_last_h);
    std::memcpy(dh, g.data<T>(), sizeof(T) * BH);
  } else {
    std::fill(dh, dh + BH, T(0));
  }
  if (grad_last_c) {
    const DenseTensor g = contiguous(*grad_last_c);
    std::memcpy(dc, g.data<T>(), sizeof(T) * BH);
  } else {
    std::fill(dc, dc + BH, T(0));
  }
  std::vector<T> tanh_c(static_cast<size_t>(BH));
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* a = gp + t * B * G;
    const T* c = cp + t * BH;
    const T* c_prev = t > 0 ? cp + (t - 1) * BH : c0.data<T>();
    const T* gt = gop ? gop + t * BH : nullptr;
    T* dat = da + t * B * G;
    std::memcpy(tanh_c.data(), c, sizeof(T) * BH);
    apply<TanhFn>(tanh_c.data(), BH);
    for (int64_t b = 0; b < B; ++b) {
      const T* ab = a + b * G;
      T* db = dat + b * G;
      const T* tcb = tanh_c.data() + b * H;
      T* dhb = dh + b * H;
      T* dcb = dc + b * H;
      const T* cpb = c_prev + b * H;
      const T* gb = gt ? gt + b * H : nullptr;
      for (int64_t j = 0; j < H; ++j) {
        const T i = ab[j], f = ab[H + j], g = ab[2 * H + j], og = ab[3 * H + j];
        const T dhk = dhb[j] + (gb ? gb[j] : T(0));
        const T tc = tcb[j];
        const T dck = dcb[j] + dhk * og * (T(1) - tc * tc);
        db[j] = dck * g * i * (T(1) - i);
        db[H + j] = dck * cpb[j] * f * (T(1) - f);
        db[2 * H + j] = dck * i * (T(1) - g * g);
        db[3 * H + j] = dhk * tc * og * (T(1) - og);
        dcb[j] = dck * f;
      }
    }
    if (BH > 0) gemm(false, false, B, H, G, dat, G, wp, H, dh, H);  // dh_{t-1} = da_t W_hh
  }
  // dW_hh = sum_t da_t^T h_{t-1}: the h_{t-1} of all steps are h0 then out[0..T-2], which
  // the forward's gates do not hold; rebuild them from the cells: h = o tanh(c).
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + G * H, T(0));
    return;
  }
  std::vector<T> hprev(static_cast<size_t>(steps * BH));
  std::memcpy(hprev.data(), h0.data<T>(), sizeof(T) * BH);
  for (int64_t t = 1; t < steps; ++t) {
    const T* a = gp + (t - 1) * B * G;
    T* hp = hprev.data() + t * BH;
    std::memcpy(hp, cp + (t - 1) * BH, sizeof(T) * BH);
    apply<TanhFn>(hp, BH);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) hp[b * H + j] *= a[b * G + 3 * H + j];
  }
  gemm(true, false, G, H, steps * B, da, G, hprev.data(), H, dw, H);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(lstm_sequence, CPU, LstmSequenceKernel, float, double)
OAR_REGISTER_KERNEL(lstm_sequence_grad, CPU, LstmSequenceGradKernel, float, double)
