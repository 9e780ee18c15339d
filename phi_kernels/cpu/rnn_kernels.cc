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
// The GEMMs' forms are chosen by measurement (Zen 4, 1 thread, oneDNN 2.6's sgemm; the
// table is in docs/notes/cpu_speed_steps.md, stop 30): the per-step h W_hh^T is an NN
// product on W_hh^T, transposed once per sequence (NT 16x1024x256 ran at 67 GFLOP/s, NN at
// 104), and dW_hh is h_prev^T da [H, 4H] transposed into place (5% faster than da^T h_prev
// with da's 4-KiB rows). GRU and SimpleRNN use the same forms.
#include <cblas.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/transpose.h"
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

// Scratch for a call: from the CPU caching allocator, so a repeated call does not fault
// in fresh pages (a std::vector of a few MiB did, ~7% of the LSTM backward).
template <typename T>
T* scratch(Workspace& ws, int64_t n) {
  ws.reserve(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T));
  return ws.data<T>();
}

// dst[cols, rows] = src[rows, cols]^T (row-major).
template <typename T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst) {
  transpose_strided(src, cols, rows, cols, dst, rows);
}

// The gate activations, vectorized (the scalar forms cost ~10 ns an element, which made
// the gate math, not the GEMMs, most of a step).
OAR_VEC_FUNCTOR(TanhFn, tanh, tanh, u10, std::tanh(v))  // vec::tanh for float, SLEEF for double
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

// Row helpers of the backward kernels, with restrict parameters: gcc vectorizes these
// loops only when it knows the rows do not overlap (the gate loop ran scalar before).
template <typename T>
void mul_into(int64_t n, const T* __restrict x, const T* __restrict y, T* __restrict out) {
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] * y[j];
}
template <typename T>
void add_into(int64_t n, const T* __restrict x, T* __restrict acc) {
  for (int64_t j = 0; j < n; ++j) acc[j] += x[j];
}

// One batch row of the LSTM gate backward: from dL/dh_t (dh) and the carried dL/dc_t
// (dc, replaced by dL/dc_{t-1}), the pre-activation gradients da = [di, df, dg, do]
// (also summed into dbias), given the activated gates a = [i, f, g, o], tanh(c_t) and
// c_{t-1}. Each gate is its own restrict pointer: with dbias[j] and dbias[H + j] through
// one pointer gcc assumes a dependence at distance H and keeps the loop scalar.
template <typename T>
struct GateRows {
  T* i;
  T* f;
  T* g;
  T* o;
  GateRows(T* p, int64_t H) : i(p), f(p + H), g(p + 2 * H), o(p + 3 * H) {}
};

template <typename T>
void lstm_gate_grad_row(int64_t H, const T* __restrict ai, const T* __restrict af, const T* __restrict ag,
                        const T* __restrict ao, const T* __restrict tc, const T* __restrict c_prev,
                        const T* __restrict dh, T* __restrict dc, T* __restrict di, T* __restrict df, T* __restrict dg,
                        T* __restrict dout, T* __restrict bi, T* __restrict bf, T* __restrict bg, T* __restrict bo) {
  for (int64_t j = 0; j < H; ++j) {
    const T i = ai[j], f = af[j], g = ag[j], o = ao[j], th = tc[j], dhk = dh[j];
    const T dck = dc[j] + dhk * o * (T(1) - th * th);
    const T vi = dck * g * i * (T(1) - i), vf = dck * c_prev[j] * f * (T(1) - f);
    const T vg = dck * i * (T(1) - g * g), vo = dhk * th * o * (T(1) - o);
    di[j] = vi;
    df[j] = vf;
    dg[j] = vg;
    dout[j] = vo;
    bi[j] += vi;
    bf[j] += vf;
    bg[j] += vg;
    bo[j] += vo;
    dc[j] = dck * f;
  }
}

// One batch row of the GRU gate backward (Note [Fused GRU and SimpleRNN]): from dL/dh_t,
// the gradients of the pre-activations (dx = [dr, dz, dc]) and of h W_hh^T + b_hh (dhp),
// and the direct path dh_t z into dL/dh_{t-1}.
template <typename T>
void gru_gate_grad_row(int64_t H, const T* __restrict r, const T* __restrict z, const T* __restrict c,
                       const T* __restrict hc, const T* __restrict h_prev, const T* __restrict dh, T* __restrict direct,
                       T* __restrict dxr, T* __restrict dxz, T* __restrict dxc, T* __restrict dhpr, T* __restrict dhpz,
                       T* __restrict dhpc) {
  for (int64_t j = 0; j < H; ++j) {
    const T dhk = dh[j];
    const T dac = dhk * (T(1) - z[j]) * (T(1) - c[j] * c[j]);
    const T dar = dac * hc[j] * r[j] * (T(1) - r[j]);
    const T daz = dhk * (h_prev[j] - c[j]) * z[j] * (T(1) - z[j]);
    dxr[j] = dar;
    dxz[j] = daz;
    dxc[j] = dac;
    dhpr[j] = dar;
    dhpz[j] = daz;
    dhpc[j] = dac * r[j];
    direct[j] = dhk * z[j];
  }
}

// SimpleRNN's activation backward from its output h: tanh' = 1 - h^2, relu' = [h > 0].
template <typename T>
void rnn_act_grad_row(int64_t H, bool relu, const T* __restrict h, const T* __restrict dh, T* __restrict dx) {
  if (relu) {
    for (int64_t j = 0; j < H; ++j) dx[j] = h[j] > T(0) ? dh[j] : T(0);
  } else {
    for (int64_t j = 0; j < H; ++j) dx[j] = dh[j] * (T(1) - h[j] * h[j]);
  }
}

// dw[G, H] = sum over the R rows of da[r]^T hprev[r] (da [R, G], hprev [R, H]): computed
// as hprev^T da [H, G] and transposed, which oneDNN's sgemm runs ~5% faster than da^T
// hprev with da's 4-KiB rows (Zen 4, 1024x256x1024: 5.27 against 5.52 ms).
template <typename T>
void weight_grad(int64_t G, int64_t H, int64_t R, const T* da, const T* hprev, T* dw, Workspace& ws) {
  T* dwt = scratch<T>(ws, H * G);
  gemm(true, false, H, G, R, hprev, H, da, G, dwt, G);
  transpose_into(dwt, H, G, dw);
}

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
  Workspace wt_ws;  // W_hh^T [H, 4H], for NN products (Note [Fused LSTM])
  T* wt = scratch<T>(wt_ws, G * H);
  transpose_into(w.data<T>(), G, H, wt);
  const T* bp = bias.data<T>();
  const T* h_prev = h0.data<T>();
  int64_t ldh = H;  // row stride of h_prev
  const T* c_prev = c0.data<T>();
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    T* a = gp + s * B * G;  // pre-activations, then the activated gates in place
    T* c = cp + s * B * H;
    if (H > 0 && B > 0) gemm(false, false, B, G, H, h_prev, ldh, wt, G, a, G);
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
  // h_{t-1} of every step in da's row order, for dW_hh as one GEMM over all rows after the
  // loop: the reverse loop computes tanh(c_t) for the gate backward and writes h_t = o_t
  // tanh(c_t) as the next step's h_{t-1} from it (the forward's outputs hold h but are not
  // the op's inputs), so the saved gates and cells are read once.
  Workspace tanh_ws, hprev_ws, dwt_ws;
  T* tanh_c = scratch<T>(tanh_ws, BH);  // tanh(c_t) of the current step
  T* hprev = scratch<T>(hprev_ws, steps * BH);
  for (int64_t b = 0; b < B; ++b) std::copy_n(h0.data<T>() + b * H, H, hprev + lay.row(lay.time(0), b) * H);
  const GateRows<T> db(dbias, H);
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    const T* a = gp + s * B * G;
    const T* c_prev = s > 0 ? cp + (s - 1) * BH : c0.data<T>();
    std::copy_n(cp + s * BH, BH, tanh_c);
    apply<TanhFn>(tanh_c, BH);
    for (int64_t b = 0; b < B; ++b) {
      T* dhb = dh + b * H;
      const T* tcb = tanh_c + b * H;
      if (s + 1 < steps) mul_into(H, a + b * G + 3 * H, tcb, hprev + lay.row(lay.time(s + 1), b) * H);
      if (gop) add_into(H, gop + lay.row(t, b) * H, dhb);  // the output's gradient joins dL/dh_t
      const GateRows<const T> ab(a + b * G, H);
      const GateRows<T> d(da + lay.row(t, b) * G, H);
      lstm_gate_grad_row(H, ab.i, ab.f, ab.g, ab.o, tcb, c_prev + b * H, dhb, dc + b * H, d.i, d.f, d.g, d.o, db.i,
                         db.f, db.g, db.o);
    }
    // dh_{t-1} = da_t W_hh (da_t's rows strided in the caller's layout)
    gemm(false, false, B, H, G, da + lay.row(t, 0) * G, lay.batch_stride() * G, wp, H, dh, H);
  }
  weight_grad(G, H, steps * B, da, hprev, dw, dwt_ws);
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
  Workspace wt_ws;  // W_hh^T [H, 3H], for NN products (Note [Fused LSTM])
  T* wt = scratch<T>(wt_ws, G * H);
  transpose_into(w.data<T>(), G, H, wt);
  const T* bi = bih.data<T>();
  const T* bh = bhh.data<T>();
  std::vector<T> hp(static_cast<size_t>(B * G));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), o, H, &ldh);
    if (H > 0 && B > 0) gemm(false, false, B, G, H, h_prev, ldh, wt, G, hp.data(), G);
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
  Workspace dhp_ws, hprev_ws, dwt_ws;
  T* dhp = scratch<T>(dhp_ws, steps * B * G);
  T* hprev = scratch<T>(hprev_ws, steps * BH);
  std::vector<T> direct(static_cast<size_t>(BH));  // dh_t z, by batch row
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), op, H, &ldh);
    T* dhps = dhp + s * B * G;
    for (int64_t b = 0; b < B; ++b) {
      const T* ab = gp + (s * B + b) * 4 * H;
      const T* hpr = h_prev + b * ldh;
      std::copy_n(hpr, H, hprev + (s * B + b) * H);
      T* dxb = dx + lay.row(t, b) * G;
      T* dhpb = dhps + b * G;
      T* dhb = dh + b * H;
      if (gop) add_into(H, gop + lay.row(t, b) * H, dhb);  // the output's gradient joins dL/dh_t
      gru_gate_grad_row(H, ab, ab + H, ab + 2 * H, ab + 3 * H, hpr, dhb, direct.data() + b * H, dxb, dxb + H,
                        dxb + 2 * H, dhpb, dhpb + H, dhpb + 2 * H);
      add_into(G, dxb, dbi);
      add_into(G, dhpb, dbh);
    }
    if (BH > 0) {  // dh_{t-1} = dh_t z + dhp_t W_hh
      gemm(false, false, B, H, G, dhps, G, wp, H, dh, H);
      add_into(BH, direct.data(), dh);
    }
  }
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + G * H, T(0));
    return;
  }
  weight_grad(G, H, steps * B, dhp, hprev, dw, dwt_ws);
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
  Workspace wt_ws;  // W_hh^T, for NN products (Note [Fused LSTM])
  T* wt = scratch<T>(wt_ws, H * H);
  transpose_into(w.data<T>(), H, H, wt);
  const T* bp = bias.data<T>();
  std::vector<T> a(static_cast<size_t>(B * H));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), o, H, &ldh);
    if (H > 0 && B > 0) gemm(false, false, B, H, H, h_prev, ldh, wt, H, a.data(), H);
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
  Workspace hprev_ws;
  T* hprev = scratch<T>(hprev_ws, steps * BH);
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = lay.time(s);
    int64_t ldh = H;
    const T* h_prev = prev_h_rows(lay, s, h0.data<T>(), op, H, &ldh);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t row = lay.row(t, b);
      const T* hb = op + row * H;
      T* dxb = dx + row * H;
      T* dhb = dh + b * H;  // overwritten by the GEMM below, after the rows
      if (gop) add_into(H, gop + row * H, dhb);
      rnn_act_grad_row(H, relu, hb, dhb, dxb);
      add_into(H, dxb, db);
      std::copy_n(h_prev + b * ldh, H, hprev + row * H);
    }
    if (BH > 0) gemm(false, false, B, H, H, dx + lay.row(t, 0) * H, lay.batch_stride() * H, wp, H, dh, H);
  }
  if (steps == 0 || BH == 0) {
    std::fill(dw, dw + H * H, T(0));
    return;
  }
  gemm(true, false, H, H, steps * B, dx, H, hprev, H, dw, H);
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
