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
#include <string>
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

// C[M, N] += A[M, K] B[K, N] (row-major).
void gemm_acc(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
              int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
}
void gemm_acc(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B, int64_t ldb, double* C,
              int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A, lda, B, ldb, 1.0, C, ldc);
}

// The gate activations, vectorized (the scalar forms cost ~10 ns an element, which made
// the gate math, not the GEMMs, most of a step).
struct TanhFn {  // vec::tanh for float (3 ulp, twice SLEEF's speed), SLEEF for double
#if OAR_VEC
  static vec::F vf(vec::F v) { return vec::tanh(v); }
  static vec::D vd(vec::D v) { return OAR_SLEEF_D(tanh, u10)(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::tanh(v);
  }
};
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

// The layout of the caller's sequences (xw, out and their gradients): time-major [T, B, *]
// or batch-first [B, T, *], walked forwards or in reverse. Rows are (time, batch) pairs;
// the per-step operands are strided views of the caller's tensors, so the layer around the
// op needs no transposes or flips (Note [Fused LSTM]).
struct SeqLayout {
  int64_t T, B;
  bool batch_first, reverse;
  int64_t time(int64_t s) const { return reverse ? T - 1 - s : s; }  // time of step s
  int64_t row(int64_t t, int64_t b) const { return batch_first ? b * T + t : t * B + b; }
  int64_t batch_stride() const { return batch_first ? T : 1; }  // in rows
};

template <typename T>
void LstmSequenceKernel(const DeviceContext&, const DenseTensor& xw_in, const DenseTensor& w_in,
                        const DenseTensor& bias_in, const DenseTensor& h0_in, const DenseTensor& c0_in,
                        bool batch_first, bool reverse, DenseTensor* out, DenseTensor* last_h, DenseTensor* last_c,
                        DenseTensor* gates, DenseTensor* cells) {
  const DenseTensor xw = contiguous(xw_in), w = contiguous(w_in), bias = contiguous(bias_in);
  const DenseTensor h0 = contiguous(h0_in), c0 = contiguous(c0_in);
  const int64_t H = xw.dims()[2] / 4, G = 4 * H;
  const int64_t steps = batch_first ? xw.dims()[1] : xw.dims()[0];
  const int64_t B = batch_first ? xw.dims()[0] : xw.dims()[1];
  const SeqLayout lay{steps, B, batch_first, reverse};
  T* o = out->alloc<T>();
  T* gp = gates->alloc<T>();  // by step: [steps, B, 4H], contiguous
  T* cp = cells->alloc<T>();  // by step: [steps, B, H]
  T* lh = last_h->alloc<T>();
  T* lc = last_c->alloc<T>();
  const T* x = xw.data<T>();
  const T* wp = w.data<T>();
  const T* bp = bias.data<T>();
  const T* h_prev = h0.data<T>();
  int64_t ldh = H;  // row stride of h_prev
  const T* c_prev = c0.data<T>();
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    T* a = gp + s * B * G;  // pre-activations, then the activated gates in place
    T* c = cp + s * B * H;
    if (H > 0 && B > 0) gemm(false, true, B, G, H, h_prev, ldh, wp, H, a, G);
    for (int64_t b = 0; b < B; ++b) {
      T* ab = a + b * G;
      const T* xb = x + lay.row(t, b) * G;
      for (int64_t k = 0; k < G; ++k) ab[k] += xb[k] + bp[k];
      apply<SigmoidFn>(ab, 2 * H);      // i, f
      apply<TanhFn>(ab + 2 * H, H);     // g
      apply<SigmoidFn>(ab + 3 * H, H);  // o
      const T* cb_prev = c_prev + b * H;
      T* cb = c + b * H;
      T* hb = o + lay.row(t, b) * H;
      for (int64_t j = 0; j < H; ++j) cb[j] = ab[H + j] * cb_prev[j] + ab[j] * ab[2 * H + j];
      std::copy_n(cb, H, hb);
      apply<TanhFn>(hb, H);
      for (int64_t j = 0; j < H; ++j) hb[j] *= ab[3 * H + j];
    }
    h_prev = o + lay.row(t, 0) * H;
    ldh = lay.batch_stride() * H;
    c_prev = c;
  }
  for (int64_t b = 0; b < B; ++b) std::copy_n(h_prev + b * ldh, H, lh + b * H);
  std::copy_n(c_prev, B * H, lc);
}

template <typename T>
void LstmSequenceGradKernel(const DeviceContext&, const DenseTensor& w_in, const DenseTensor& h0_in,
                            const DenseTensor& c0_in, const DenseTensor& gates_in, const DenseTensor& cells_in,
                            const DenseTensor* grad_out, const DenseTensor* grad_last_h, const DenseTensor* grad_last_c,
                            bool batch_first, bool reverse, DenseTensor* xw_grad, DenseTensor* w_hh_grad,
                            DenseTensor* bias_grad, DenseTensor* h0_grad, DenseTensor* c0_grad) {
  const DenseTensor w = contiguous(w_in), h0 = contiguous(h0_in), c0 = contiguous(c0_in);
  const DenseTensor gates = contiguous(gates_in), cells = contiguous(cells_in);
  const int64_t steps = gates.dims()[0], B = gates.dims()[1], H = gates.dims()[2] / 4, G = 4 * H;
  const int64_t BH = B * H;
  const SeqLayout lay{steps, B, batch_first, reverse};
  T* da = xw_grad->alloc<T>();  // the caller's layout
  T* dw = w_hh_grad->alloc<T>();
  T* dbias = bias_grad->alloc<T>();
  T* dh = h0_grad->alloc<T>();  // dL/dh_t, walking back to dL/dh_0
  T* dc = c0_grad->alloc<T>();
  const T* gp = gates.data<T>();
  const T* cp = cells.data<T>();
  const T* wp = w.data<T>();
  const DenseTensor go = grad_out ? contiguous(*grad_out) : DenseTensor();
  const T* gop = grad_out ? go.data<T>() : nullptr;
  if (grad_last_h) {
    const DenseTensor g = contiguous(*grad_last_h);
    std::copy_n(g.data<T>(), BH, dh);
  } else {
    std::fill(dh, dh + BH, T(0));
  }
  if (grad_last_c) {
    const DenseTensor g = contiguous(*grad_last_c);
    std::copy_n(g.data<T>(), BH, dc);
  } else {
    std::fill(dc, dc + BH, T(0));
  }
  std::fill(dbias, dbias + G, T(0));
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + G * H, T(0));
    return;
  }
  // tanh(c_t) of every step, once: the gate backward needs it, and h_{t-1} = o_{t-1}
  // tanh(c_{t-1}) for dW_hh (the forward's outputs hold h but are not the op's inputs).
  std::vector<T> tanh_c(static_cast<size_t>(steps * BH));
  std::copy_n(cp, steps * BH, tanh_c.data());
  apply<TanhFn>(tanh_c.data(), steps * BH);
  // h_{t-1} of every step in da's row order, for dW_hh = da^T h_prev as one GEMM.
  std::vector<T> hprev(static_cast<size_t>(steps * BH));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    for (int64_t b = 0; b < B; ++b) {
      T* dst = hprev.data() + lay.row(t, b) * H;
      if (s == 0) {
        std::copy_n(h0.data<T>() + b * H, H, dst);
        continue;
      }
      const T* og = gp + (s - 1) * B * G + b * G + 3 * H;
      const T* tc = tanh_c.data() + (s - 1) * BH + b * H;
      for (int64_t j = 0; j < H; ++j) dst[j] = og[j] * tc[j];
    }
  }
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    const T* a = gp + s * B * G;
    const T* c_prev = s > 0 ? cp + (s - 1) * BH : c0.data<T>();
    for (int64_t b = 0; b < B; ++b) {
      const T* __restrict ig = a + b * G;
      const T* __restrict fg = ig + H;
      const T* __restrict gg = ig + 2 * H;
      const T* __restrict og = ig + 3 * H;
      T* __restrict di = da + lay.row(t, b) * G;
      T* __restrict df = di + H;
      T* __restrict dg = di + 2 * H;
      T* __restrict dout = di + 3 * H;
      const T* __restrict tc = tanh_c.data() + s * BH + b * H;
      T* __restrict dhb = dh + b * H;
      T* __restrict dcb = dc + b * H;
      const T* __restrict cpb = c_prev + b * H;
      if (gop) {  // the output's gradient joins the carried dL/dh_t
        const T* __restrict gb = gop + lay.row(t, b) * H;
        for (int64_t j = 0; j < H; ++j) dhb[j] += gb[j];
      }
      // branch-free and unit-stride, so the compiler vectorizes it
      for (int64_t j = 0; j < H; ++j) {
        const T i = ig[j], f = fg[j], g = gg[j], o = og[j], th = tc[j], dhk = dhb[j];
        const T dck = dcb[j] + dhk * o * (T(1) - th * th);
        di[j] = dck * g * i * (T(1) - i);
        df[j] = dck * cpb[j] * f * (T(1) - f);
        dg[j] = dck * i * (T(1) - g * g);
        dout[j] = dhk * th * o * (T(1) - o);
        dcb[j] = dck * f;
      }
      for (int64_t k = 0; k < G; ++k) dbias[k] += di[k];
    }
    // dh_{t-1} = da_t W_hh (da_t's rows strided in the caller's layout)
    gemm(false, false, B, H, G, da + lay.row(t, 0) * G, lay.batch_stride() * G, wp, H, dh, H);
  }
  // dW_hh = sum_t da_t^T h_{t-1}, one GEMM over all rows (in OpenBLAS when da's row
  // stride is a multiple of 2 KiB: phi_kernels/cpu/sgemm.cc).
  gemm(true, false, G, H, steps * B, da, G, hprev.data(), H, dw, H);
}

// Note [Fused GRU and SimpleRNN]
// gru_sequence is lstm_sequence's structure for Paddle's GRU (gates [r, z, c]):
//   hp = h W_hh^T + b_hh (one GEMM per step),  xw_t = x_t W_ih^T (outside, one matmul)
//   r = sigmoid(xw_r + b_ir + hp_r),  z = sigmoid(xw_z + b_iz + hp_z)
//   c = tanh(xw_c + b_ic + r hp_c),   h = (h_prev - c) z + c
// It saves r, z, c and hp_c by step ([steps, B, 4H]); the backward reads h_{t-1} from the
// forward's out (h0 for the first step), walks the steps in reverse with one GEMM each
// (dh_{t-1} = dh z + dhp W_hh) and finishes with one GEMM for dW_hh over all steps.
// rnn_sequence is SimpleRNN's: h = act(xw + bias + h W_hh^T), act tanh or relu; its
// backward needs only out (tanh' = 1 - h^2, relu' = [h > 0]).
template <typename T>
const T* prev_h_rows(const SeqLayout& lay, int64_t s, const T* h0, const T* out, int64_t H, int64_t* ld) {
  if (s == 0) {
    *ld = H;
    return h0;
  }
  *ld = lay.batch_stride() * H;
  return out + lay.row(lay.time(s - 1), 0) * H;
}

template <typename T>
void copy_last_h(const SeqLayout& lay, const T* h0, const T* out, int64_t H, T* last) {
  int64_t ld = H;
  const T* src = prev_h_rows(lay, lay.T, h0, out, H, &ld);
  for (int64_t b = 0; b < lay.B; ++b) std::copy_n(src + b * ld, H, last + b * H);
}

template <typename T>
void GruSequenceKernel(const DeviceContext&, const DenseTensor& xw_in, const DenseTensor& w_in,
                       const DenseTensor& bih_in, const DenseTensor& bhh_in, const DenseTensor& h0_in, bool batch_first,
                       bool reverse, DenseTensor* out, DenseTensor* last_h, DenseTensor* gates) {
  const DenseTensor xw = contiguous(xw_in), w = contiguous(w_in), bih = contiguous(bih_in);
  const DenseTensor bhh = contiguous(bhh_in), h0 = contiguous(h0_in);
  const int64_t H = xw.dims()[2] / 3, G = 3 * H;
  const int64_t steps = batch_first ? xw.dims()[1] : xw.dims()[0];
  const int64_t B = batch_first ? xw.dims()[0] : xw.dims()[1];
  const SeqLayout lay{steps, B, batch_first, reverse};
  T* o = out->alloc<T>();
  T* gp = gates->alloc<T>();  // by step: [steps, B, 4H] = r, z, c, hp_c
  T* lh = last_h->alloc<T>();
  const T* x = xw.data<T>();
  const T* wp = w.data<T>();
  const T* bi = bih.data<T>();
  const T* bh = bhh.data<T>();
  std::vector<T> hp(static_cast<size_t>(B * G));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), o, H, &ldh);
    if (H > 0 && B > 0) gemm(false, true, B, G, H, h_prev, ldh, wp, H, hp.data(), G);
    for (int64_t b = 0; b < B; ++b) {
      T* ab = gp + (s * B + b) * 4 * H;
      T* hpb = hp.data() + b * G;
      const T* xb = x + lay.row(t, b) * G;
      for (int64_t k = 0; k < 2 * H; ++k) ab[k] = xb[k] + bi[k] + hpb[k] + bh[k];
      apply<SigmoidFn>(ab, 2 * H);  // r, z
      T* cb = ab + 2 * H;
      T* hcb = ab + 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        hcb[j] = hpb[2 * H + j] + bh[2 * H + j];
        cb[j] = xb[2 * H + j] + bi[2 * H + j] + ab[j] * hcb[j];
      }
      apply<TanhFn>(cb, H);
      const T* zb = ab + H;
      const T* hpr = h_prev + b * ldh;
      T* hb = o + lay.row(t, b) * H;
      for (int64_t j = 0; j < H; ++j) hb[j] = (hpr[j] - cb[j]) * zb[j] + cb[j];
    }
  }
  copy_last_h(lay, h0.data<T>(), o, H, lh);
}

template <typename T>
void GruSequenceGradKernel(const DeviceContext&, const DenseTensor& w_in, const DenseTensor& h0_in,
                           const DenseTensor& out_in, const DenseTensor& gates_in, const DenseTensor* grad_out,
                           const DenseTensor* grad_last_h, bool batch_first, bool reverse, DenseTensor* xw_grad,
                           DenseTensor* w_hh_grad, DenseTensor* bih_grad, DenseTensor* bhh_grad, DenseTensor* h0_grad) {
  const DenseTensor w = contiguous(w_in), h0 = contiguous(h0_in), outs = contiguous(out_in);
  const DenseTensor gates = contiguous(gates_in);
  const int64_t steps = gates.dims()[0], B = gates.dims()[1], H = gates.dims()[2] / 4, G = 3 * H;
  const int64_t BH = B * H;
  const SeqLayout lay{steps, B, batch_first, reverse};
  T* dx = xw_grad->alloc<T>();  // the caller's layout
  T* dw = w_hh_grad->alloc<T>();
  T* dbi = bih_grad->alloc<T>();
  T* dbh = bhh_grad->alloc<T>();
  T* dh = h0_grad->alloc<T>();  // dL/dh_t, walking back to dL/dh_0
  const T* gp = gates.data<T>();
  const T* op = outs.data<T>();
  const T* wp = w.data<T>();
  const DenseTensor go = grad_out ? contiguous(*grad_out) : DenseTensor();
  const T* gop = grad_out ? go.data<T>() : nullptr;
  if (grad_last_h) {
    const DenseTensor g = contiguous(*grad_last_h);
    std::copy_n(g.data<T>(), BH, dh);
  } else {
    std::fill(dh, dh + BH, T(0));
  }
  std::fill(dbi, dbi + G, T(0));
  std::fill(dbh, dbh + G, T(0));
  // dhp: the gradient of every step's h W_hh^T + b_hh, by step; hprev: h_{t-1}, by step
  std::vector<T> dhp(static_cast<size_t>(steps * B * G)), hprev(static_cast<size_t>(steps * BH));
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), op, H, &ldh);
    T* dhps = dhp.data() + s * B * G;
    for (int64_t b = 0; b < B; ++b) {
      const T* ab = gp + (s * B + b) * 4 * H;
      const T* hpr = h_prev + b * ldh;
      std::copy_n(hpr, H, hprev.data() + (s * B + b) * H);
      const T* gb = gop ? gop + lay.row(t, b) * H : nullptr;
      T* dxb = dx + lay.row(t, b) * G;
      T* dhpb = dhps + b * G;
      T* dhb = dh + b * H;
      for (int64_t j = 0; j < H; ++j) {
        const T r = ab[j], z = ab[H + j], c = ab[2 * H + j], hc = ab[3 * H + j];
        const T dhk = dhb[j] + (gb ? gb[j] : T(0));
        const T dac = dhk * (T(1) - z) * (T(1) - c * c);
        const T dar = dac * hc * r * (T(1) - r);
        const T daz = dhk * (hpr[j] - c) * z * (T(1) - z);
        dxb[j] = dar;
        dxb[H + j] = daz;
        dxb[2 * H + j] = dac;
        dhpb[j] = dar;
        dhpb[H + j] = daz;
        dhpb[2 * H + j] = dac * r;
        dhb[j] = dhk * z;  // the direct path; the GEMM below adds dhp W_hh
      }
      for (int64_t k = 0; k < G; ++k) {
        dbi[k] += dxb[k];
        dbh[k] += dhpb[k];
      }
    }
    if (BH > 0) gemm_acc(B, H, G, dhps, G, wp, H, dh, H);  // dh_{t-1} += dhp_t W_hh
  }
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + G * H, T(0));
    return;
  }
  gemm(true, false, G, H, steps * B, dhp.data(), G, hprev.data(), H, dw, H);
}

template <typename T>
void RnnSequenceKernel(const DeviceContext&, const DenseTensor& xw_in, const DenseTensor& w_in,
                       const DenseTensor& bias_in, const DenseTensor& h0_in, bool batch_first, bool reverse,
                       const std::string& activation, DenseTensor* out, DenseTensor* last_h) {
  const DenseTensor xw = contiguous(xw_in), w = contiguous(w_in), bias = contiguous(bias_in);
  const DenseTensor h0 = contiguous(h0_in);
  const int64_t H = xw.dims()[2];
  const int64_t steps = batch_first ? xw.dims()[1] : xw.dims()[0];
  const int64_t B = batch_first ? xw.dims()[0] : xw.dims()[1];
  const SeqLayout lay{steps, B, batch_first, reverse};
  const bool relu = activation == "relu";
  T* o = out->alloc<T>();
  T* lh = last_h->alloc<T>();
  const T* x = xw.data<T>();
  const T* wp = w.data<T>();
  const T* bp = bias.data<T>();
  std::vector<T> a(static_cast<size_t>(B * H));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), o, H, &ldh);
    if (H > 0 && B > 0) gemm(false, true, B, H, H, h_prev, ldh, wp, H, a.data(), H);
    for (int64_t b = 0; b < B; ++b) {
      T* ab = a.data() + b * H;
      const T* xb = x + lay.row(t, b) * H;
      T* hb = o + lay.row(t, b) * H;
      for (int64_t j = 0; j < H; ++j) ab[j] += xb[j] + bp[j];
      if (relu) {
        for (int64_t j = 0; j < H; ++j) hb[j] = ab[j] > T(0) ? ab[j] : T(0);
      } else {
        apply<TanhFn>(ab, H);
        std::copy_n(ab, H, hb);
      }
    }
  }
  copy_last_h(lay, h0.data<T>(), o, H, lh);
}

template <typename T>
void RnnSequenceGradKernel(const DeviceContext&, const DenseTensor& w_in, const DenseTensor& h0_in,
                           const DenseTensor& out_in, const DenseTensor* grad_out, const DenseTensor* grad_last_h,
                           bool batch_first, bool reverse, const std::string& activation, DenseTensor* xw_grad,
                           DenseTensor* w_hh_grad, DenseTensor* bias_grad, DenseTensor* h0_grad) {
  const DenseTensor w = contiguous(w_in), h0 = contiguous(h0_in), outs = contiguous(out_in);
  const int64_t H = outs.dims()[2];
  const int64_t steps = batch_first ? outs.dims()[1] : outs.dims()[0];
  const int64_t B = batch_first ? outs.dims()[0] : outs.dims()[1];
  const int64_t BH = B * H;
  const SeqLayout lay{steps, B, batch_first, reverse};
  const bool relu = activation == "relu";
  T* dx = xw_grad->alloc<T>();  // = the gradient of every step's pre-activation
  T* dw = w_hh_grad->alloc<T>();
  T* db = bias_grad->alloc<T>();
  T* dh = h0_grad->alloc<T>();
  const T* op = outs.data<T>();
  const T* wp = w.data<T>();
  const DenseTensor go = grad_out ? contiguous(*grad_out) : DenseTensor();
  const T* gop = grad_out ? go.data<T>() : nullptr;
  if (grad_last_h) {
    const DenseTensor g = contiguous(*grad_last_h);
    std::copy_n(g.data<T>(), BH, dh);
  } else {
    std::fill(dh, dh + BH, T(0));
  }
  std::fill(db, db + H, T(0));
  std::vector<T> hprev(static_cast<size_t>(steps * BH));
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), op, H, &ldh);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t row = lay.row(t, b);
      const T* hb = op + row * H;
      const T* gb = gop ? gop + row * H : nullptr;
      T* dxb = dx + row * H;
      const T* dhb = dh + b * H;
      for (int64_t j = 0; j < H; ++j) {
        const T dhk = dhb[j] + (gb ? gb[j] : T(0));
        dxb[j] = relu ? (hb[j] > T(0) ? dhk : T(0)) : dhk * (T(1) - hb[j] * hb[j]);
        db[j] += dxb[j];
      }
      std::copy_n(h_prev + b * ldh, H, hprev.data() + row * H);
    }
    if (BH > 0) gemm(false, false, B, H, H, dx + lay.row(t, 0) * H, lay.batch_stride() * H, wp, H, dh, H);
  }
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + H * H, T(0));
    return;
  }
  gemm(true, false, H, H, steps * B, dx, H, hprev.data(), H, dw, H);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(lstm_sequence, CPU, LstmSequenceKernel, float, double)
OAR_REGISTER_KERNEL(lstm_sequence_grad, CPU, LstmSequenceGradKernel, float, double)
OAR_REGISTER_KERNEL(gru_sequence, CPU, GruSequenceKernel, float, double)
OAR_REGISTER_KERNEL(gru_sequence_grad, CPU, GruSequenceGradKernel, float, double)
OAR_REGISTER_KERNEL(rnn_sequence, CPU, RnnSequenceKernel, float, double)
OAR_REGISTER_KERNEL(rnn_sequence_grad, CPU, RnnSequenceGradKernel, float, double)
