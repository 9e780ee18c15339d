// scaled_dot_product_attention and its gradient, flash-attention style: the score
// matrix is never materialized, only a [kBlockQ x kBlockK] block of it per task.
//
// Forward, per (batch, head, block of kBlockQ queries): for each block of keys,
// S = scale * Q K^T (+ mask, causal), then an online softmax: the running row max m
// and denominator l are updated, the accumulated output is rescaled by exp(m_old -
// m_new) and P V is added. At the end O /= l and lse = m + log(l) is stored for the
// backward. Backward, per (batch, key/value head): P is recomputed from lse, and
//   dV += P^T dO,  dS = P * (dO V^T - rowsum(dO * O)),  dQ += scale dS K,  dK += scale dS^T Q.
// Every product is a GEMM (oneDNN sgemm for float, BLAS dgemm for double); 16-bit
// inputs are converted to float once and computed in float.
//
// Conventions: inputs are [B, S, H, D] (3-D inputs have B = 1); key/value may have
// fewer heads (H % Hk == 0, grouped-query attention). The causal mask is aligned
// top-left (query i sees keys j <= i). A bool mask keeps the positions that are true;
// a float mask is added to the scores. A query row whose keys are all masked gets an
// output of 0, lse = -inf and zero gradients.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/cpu/transpose.h"
#include "phi_kernels/funcs/amx_gemm.h"
#include "phi_kernels/funcs/lowp_gemm.h"  // bf16_gemm_path
#include "phi_kernels/funcs/sgemm.h"
#include "phi_kernels/funcs/softmax_rows.h"

namespace oar::phi {
namespace {

constexpr int64_t kBlockQ = 64;   // query rows per task (backward)
// Query rows per task (forward): 128, fewer repacks of each K block; 64 under a causal
// mask, whose finer blocks skip more masked keys (sdpa_causal B4 S256 H8 D64 at one
// thread 3.97 -> 3.54 ms; the non-causal one 4.93 -> 5.09 at 64, so it keeps 128).
constexpr int64_t kBlockQF = 128, kBlockQFCausal = 64;
constexpr int64_t kBlockK = 512;  // keys per score block

/// C = alpha * op(A) op(B) + beta * C, row-major.
template <typename A>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, A alpha, const A* a, int64_t lda,
          const A* b, int64_t ldb, A beta, A* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == A(0) ? A(0) : c[i * ldc + j] * beta;
    }
    return;
  }
  if constexpr (std::is_same_v<A, float>) {
    dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                                  beta, c, ldc);
    OAR_ENFORCE(st == dnnl_success, Internal,
                "scaled_dot_product_attention: oneDNN sgemm failed with status ",
                static_cast<int>(st));
  } else {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// Note [Keys packed transposed]: S = Q K^T is an NT product of the query block and the
// packed [keys, D] rows. Where oneDNN runs its AVX-512 sgemm, the keys are packed as K^T
// [D, keys] instead and the product runs NN: sdpa B4 S256 H8 D64 at one thread 4-6% faster
// on Zen 4 (oneDNN's NT form at K = D = 64 is the slower one: a [64, 128] x [128, 256]-shaped
// batch ran NT at 79 GFLOP/s, NN at 98). Under AVX2 NN measured 2-4% slower (stop 37; again
// at stop 53 on an Emerald Rapids core with DNNL_MAX_CPU_ISA=AVX2, 9.05-9.13 against
// 8.84-8.86 ms), so the rows stay (docs/notes/cpu_speed_steps.md).
bool keys_transposed() {
  static const bool kt = onednn_runs_isa(dnnl_cpu_isa_avx512_core);
  return kt;
}

// The row stride of a pack of n columns: off multiples of 2 KiB (rows that far apart fall
// into the same few L1 sets).
template <typename A>
int64_t packed_ld(int64_t n) {
  return n * int64_t{sizeof(A)} % 2048 == 0 ? n + 64 / int64_t{sizeof(A)} : n;
}

// n values of A rounded up to whole 64-byte lines: the parts of a kernel's Scratch, each
// starting on a line.
template <typename A>
int64_t whole_lines(int64_t n) {
  return (n * int64_t{sizeof(A)} + 63) / 64 * 64 / int64_t{sizeof(A)};
}

// dst[r * ldd + c] = src[r * ld + c] for r < rows, c < w.
template <typename A>
void copy_rows(const A* src, int64_t ld, int64_t rows, int64_t w, A* dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; ++r) std::copy(src + r * ld, src + r * ld + w, dst + r * ldd);
}

// The problem's sizes, from query [B, Sq, H, D], key [B, Sk, Hk, D], value [.., Dv].
struct Geometry {
  int64_t B, Sq, Sk, H, Hk, D, Dv;
  Geometry(const DenseTensor& q, const DenseTensor& k, const DenseTensor& v) {
    const int o = q.rank() - 3;
    B = o == 1 ? q.dims()[0] : 1;
    Sq = q.dims()[o], H = q.dims()[o + 1], D = q.dims()[o + 2];
    Sk = k.dims()[o], Hk = k.dims()[o + 1], Dv = v.dims()[o + 2];
  }
};

// A contiguous tensor of compute type A with x's values (x itself when it already is).
template <typename A>
DenseTensor as_compute(const DenseTensor& x) {
  if (x.dtype() == dtype_of<A> && x.is_contiguous()) return x;
  DenseTensor buf(x.dims(), dtype_of<A>, x.place());
  buf.alloc();
  copy_into(x, &buf);
  return buf;
}

// The attention mask as additive values of type A (0 / -inf for bool masks) in the
// mask's own shape, with strides broadcasting it over [B, H, Sq, Sk].
template <typename A>
struct AdditiveMask {
  DenseTensor buf;
  const A* p = nullptr;
  int64_t sb = 0, sh = 0, si = 0, sj = 0;

  AdditiveMask(const DenseTensor* mask, const Geometry& g) {
    if (mask == nullptr) return;
    if (mask->dtype() == DataType::BOOL) {
      DenseTensor m = contiguous(*mask);
      buf = DenseTensor(m.dims(), dtype_of<A>, m.place());
      A* d = buf.alloc<A>();
      const bool* s = m.data<bool>();
      for (int64_t i = 0; i < m.numel(); ++i) d[i] = s[i] ? A(0) : -std::numeric_limits<A>::infinity();
    } else {
      buf = as_compute<A>(*mask);
    }
    p = buf.data<A>();
    const Dims full{g.B, g.H, g.Sq, g.Sk};
    int64_t* st[4] = {&sb, &sh, &si, &sj};
    const Dims cs = contiguous_strides(buf.dims());
    for (int i = 0; i < buf.rank(); ++i) {
      const int f = 4 - buf.rank() + i;
      *st[f] = buf.dims()[i] == 1 ? 0 : cs[i];
      (void)full;
    }
  }
  bool defined() const { return p != nullptr; }
  /// Mask values of query row i (keys along sj).
  const A* row(int64_t b, int64_t h, int64_t i) const { return p + b * sb + h * sh + i * si; }
};

// Adds the mask and the causal limit to a block of scores S[bq x bk] (rows ld apart;
// queries i0.., keys j0..).
template <typename A>
void mask_block(A* S, int64_t ld, int64_t bq, int64_t bk, int64_t i0, int64_t j0, int64_t b, int64_t h,
                const AdditiveMask<A>& mask, bool causal) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  for (int64_t r = 0; r < bq; ++r) {
    A* s = S + r * ld;
    if (mask.defined()) {
      const A* mr = mask.row(b, h, i0 + r) + j0 * mask.sj;
      if (mask.sj == 1) {
#pragma omp simd
        for (int64_t c = 0; c < bk; ++c) s[c] += mr[c];
      } else {
        for (int64_t c = 0; c < bk; ++c) s[c] += mr[0];
      }
    }
    if (causal) {
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < bk; ++c) s[c] = kNegInf;
    }
  }
}

// lse[r] = m[r] + log(l[r]) for n rows, -inf where l[r] = 0 (every key masked).
template <typename A>
void store_lse(const A* m, const A* l, int64_t n, A* lse) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  int64_t r = 0;
#if OAR_VEC
  if constexpr (std::is_same_v<A, float>) {  // vec::log: libm's logf is a call per row
    for (; r + vec::kF <= n; r += vec::kF) {
      const vec::F lv = vec::load(l + r);
      const vec::F y = vec::add(vec::load(m + r), vec::log(lv));
      vec::store(lse + r, vec::select_lt(vec::set1(0.0f), lv, y, vec::set1(kNegInf)));
    }
  }
#endif
  for (; r < n; ++r) lse[r] = l[r] > A(0) ? m[r] + std::log(l[r]) : kNegInf;
}

// The online softmax's step over a block of scores S [bq x bk] (rows ld apart): each row's
// running max m and sum l take the block in, the row becomes P = exp(s - m_new) (0 while every
// key so far is masked), and the row's accumulated output acc [bq x dv] is rescaled by
// exp(m_old - m_new) before P V is added to it.
template <typename A>
void online_softmax_block(A* S, int64_t ld, int64_t bq, int64_t bk, A* m, A* l, A* acc, int64_t dv) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  for (int64_t r = 0; r < bq; ++r) {
    A* s = S + r * ld;
    const A m_new = std::max(m[r], row_max<true>(Row<A>{s, bk, 1}));
    if (m_new == kNegInf) {
      std::fill(s, s + bk, A(0));
      continue;
    }
    const A alpha = exp_simd(m[r] - m_new);                       // 0 when m[r] = -inf
    const A sum = row_sum_exp<true>(Row<A>{s, bk, 1}, m_new, s);  // s = exp(s - m_new)
    l[r] = l[r] * alpha + sum;
    m[r] = m_new;
    if (alpha != A(1)) {
      A* o = acc + r * dv;
#pragma omp simd
      for (int64_t d = 0; d < dv; ++d) o[d] *= alpha;
    }
  }
}

template <typename A>
void attention_forward(const Geometry& g, const A* q, const A* k, const A* v,
                       const AdditiveMask<A>& mask, bool causal, A scale, A* out, A* lse) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const int64_t bqf = causal ? kBlockQFCausal : kBlockQF;
  const int64_t nqb = (g.Sq + bqf - 1) / bqf;
  const int64_t ldq = g.H * g.D, ldk = g.Hk * g.D, ldv = g.Hk * g.Dv, ldo = g.H * g.Dv;
  const int64_t group = g.H / g.Hk;
  const int64_t bk_max = std::min(kBlockK, std::max<int64_t>(g.Sk, 1));
  // Note [Packed attention operands]: the keys and values of one head are rows Hk * D
  // apart in [B, S, Hk, D]; with Hk * D a multiple of 512 floats (8 heads of 64) those rows
  // lie a multiple of 2 KiB apart, where oneDNN's sgemm runs at about half speed (the stride
  // rule of phi_kernels/cpu/sgemm.cc) and the rows fall into the same few L1 sets. So both
  // products read packs: the query block times scale [bq, D], the keys as K^T [D, keys] or
  // as rows [keys, D] (Note [Keys packed transposed]) and V [keys, Dv]; one read of
  // bk (D + Dv) floats against 2 bq bk (D + Dv) flops. The whole head is packed once and
  // reused by its query blocks (consecutive tasks) when it is small enough
  // (Sk (D + Dv) <= 2^20 floats), else block by block. The buffers are per thread and kept
  // from call to call (Scratch), each part 64-byte aligned. sdpa B4 S256 H8 D64 at one
  // thread went 5.11-5.16 -> 4.72-4.83 ms on Emerald Rapids from the per-call vectors
  // (16-byte aligned), packs only of strided operands and the scale applied in the
  // product (docs/notes/cpu_speed_steps.md, stop 53).
  const bool whole = g.Sk * (g.D + g.Dv) <= (int64_t{1} << 20);
  const int64_t prow = whole ? g.Sk : bk_max;
  const bool kt = keys_transposed();
  const int64_t ldkt = kt ? packed_ld<A>(prow) : g.D, lds = packed_ld<A>(bk_max);
  auto lines = whole_lines<A>;
  const int64_t n_s = lines(bqf * lds), n_acc = lines(bqf * g.Dv), n_q = lines(bqf * g.D),
                n_k = lines(kt ? g.D * ldkt : prow * g.D), n_v = lines(prow * g.Dv), n_ml = lines(bqf);
  parallel_for(
      g.B * g.H * nqb,
      [&](int64_t t0, int64_t t1) {
    thread_local Scratch scratch;
    A* S = scratch.get<A>(n_s + n_acc + n_q + n_k + n_v + 2 * n_ml, "scaled_dot_product_attention");
    A *acc = S + n_s, *Qs = acc + n_acc, *Kp = Qs + n_q, *Vp = Kp + n_k, *m = Vp + n_v, *l = m + n_ml;
    int64_t packed_head = -1;  // b * Hk + hk of the head in Kp/Vp (whole-head packing)
    auto pack = [&](const A* K, const A* V, int64_t rows) {
      if (kt) {
        transpose_strided(K, ldk, rows, g.D, Kp, ldkt);
      } else {
        copy_rows(K, ldk, rows, g.D, Kp, g.D);
      }
      copy_rows(V, ldv, rows, g.Dv, Vp, g.Dv);
    };
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (g.H * nqb), h = (t / nqb) % g.H, i0 = (t % nqb) * bqf;
      const int64_t bq = std::min(bqf, g.Sq - i0), hk = h / group;
      const A* Q = q + (b * g.Sq + i0) * ldq + h * g.D;
      const A* K = k + b * g.Sk * ldk + hk * g.D;
      const A* V = v + b * g.Sk * ldv + hk * g.Dv;
      for (int64_t r = 0; r < bq; ++r) {
#pragma omp simd
        for (int64_t d = 0; d < g.D; ++d) Qs[r * g.D + d] = Q[r * ldq + d] * scale;
      }
      std::fill(acc, acc + bq * g.Dv, A(0));
      std::fill(m, m + bq, kNegInf);
      std::fill(l, l + bq, A(0));
      if (whole && packed_head != b * g.Hk + hk) {
        pack(K, V, g.Sk);
        packed_head = b * g.Hk + hk;
      }
      for (int64_t j0 = 0; j0 < g.Sk; j0 += kBlockK) {
        if (causal && j0 > i0 + bq - 1) break;
        // causal: keys past the block's last query are masked for every row; skip them
        const int64_t kend = causal ? std::min(g.Sk, i0 + bq) : g.Sk;
        const int64_t bk = std::min(kBlockK, kend - j0);
        if (!whole) pack(K + j0 * ldk, V + j0 * ldv, bk);
        const int64_t off = whole ? j0 : 0;  // the block's first key in the packs
        gemm<A>(false, !kt, bq, bk, g.D, A(1), Qs, g.D, Kp + (kt ? off : off * g.D), ldkt, A(0), S, lds);
        mask_block(S, lds, bq, bk, i0, j0, b, h, mask, causal);
        online_softmax_block(S, lds, bq, bk, m, l, acc, g.Dv);
        gemm<A>(false, false, bq, g.Dv, bk, A(1), S, lds, Vp + off * g.Dv, g.Dv, A(1), acc, g.Dv);
      }
      for (int64_t r = 0; r < bq; ++r) {
        const A inv = l[r] > A(0) ? A(1) / l[r] : A(0);
        A* o = out + (b * g.Sq + i0 + r) * ldo + h * g.Dv;
        const A* a = acc + r * g.Dv;
#pragma omp simd
        for (int64_t d = 0; d < g.Dv; ++d) o[d] = a[d] * inv;
      }
      store_lse(m, l, bq, lse + (b * g.H + h) * g.Sq + i0);
    }
    scratch.trim();
      },
      g.B * g.H * g.Sq * g.Sk * (g.D + g.Dv));
}

// Note [bf16 attention on AMX]
// bfloat16 inputs on a CPU whose bf16 products run on AMX (lowp_gemm's "amx" path) keep
// their 16 bits in both products: S = Q K^T is a bf16 x bf16 product accumulated and kept in
// float (amx_bf16gemm_f32, reading Q and K where they lie), scaled, masked and put through
// the same online softmax as the float path; P is rounded to bf16 for P V, whose float
// product is added to the float accumulator. The row sums l, the max m and lse stay float, so
// the backward (float, from lse) recomputes P from the same statistics. What it costs: P's
// rounding, one step of bf16 (2^-9 relative) on each weight, as in flash attention's bf16
// kernels. The float path widened Q, K and V to float first and ran oneDNN's sgemm on the
// small blocks: [8, 128, 4, 64] causal at 1 thread 1.48 ms against torch's 0.75.
void attention_forward_amx(const Geometry& g, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                           const AdditiveMask<float>& mask, bool causal, float scale, uint16_t* out, float* lse) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t bqf = causal ? kBlockQFCausal : kBlockQF;
  const int64_t nqb = (g.Sq + bqf - 1) / bqf;
  const int64_t ldq = g.H * g.D, ldk = g.Hk * g.D, ldv = g.Hk * g.Dv, ldo = g.H * g.Dv;
  const int64_t group = g.H / g.Hk;
  const int64_t bk_max = std::min(kBlockK, std::max<int64_t>(g.Sk, 1));
  const int64_t lds = packed_ld<float>(bk_max);
  auto lines = whole_lines<float>;
  const int64_t n_s = lines(bqf * lds), n_acc = lines(bqf * g.Dv), n_ml = lines(bqf);
  const int64_t n_p = whole_lines<uint16_t>(bqf * bk_max);
  auto tasks = [&](int64_t t0, int64_t t1) {
    thread_local Scratch scratch, pscratch;
    float* S = scratch.get<float>(n_s + 2 * n_acc + 2 * n_ml, "scaled_dot_product_attention");
    float *acc = S + n_s, *pv = acc + n_acc, *m = pv + n_acc, *l = m + n_ml;
    uint16_t* P = pscratch.get<uint16_t>(n_p, "scaled_dot_product_attention");
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (g.H * nqb), h = (t / nqb) % g.H, i0 = (t % nqb) * bqf;
      const int64_t bq = std::min(bqf, g.Sq - i0), hk = h / group;
      const uint16_t* Q = q + (b * g.Sq + i0) * ldq + h * g.D;
      const uint16_t* K = k + b * g.Sk * ldk + hk * g.D;
      const uint16_t* V = v + b * g.Sk * ldv + hk * g.Dv;
      std::fill(acc, acc + bq * g.Dv, 0.0f);
      std::fill(m, m + bq, kNegInf);
      std::fill(l, l + bq, 0.0f);
      for (int64_t j0 = 0; j0 < g.Sk; j0 += kBlockK) {
        if (causal && j0 > i0 + bq - 1) break;
        const int64_t kend = causal ? std::min(g.Sk, i0 + bq) : g.Sk;
        const int64_t bk = std::min(kBlockK, kend - j0);
        amx_bf16gemm_f32(false, true, bq, bk, g.D, Q, ldq, K + j0 * ldk, ldk, S, lds);
        for (int64_t r = 0; r < bq; ++r) {
          float* s = S + r * lds;
#pragma omp simd
          for (int64_t c = 0; c < bk; ++c) s[c] *= scale;
        }
        mask_block(S, lds, bq, bk, i0, j0, b, h, mask, causal);
        online_softmax_block(S, lds, bq, bk, m, l, acc, g.Dv);
        for (int64_t r = 0; r < bq; ++r) detail::from_floats(S + r * lds, reinterpret_cast<bfloat16*>(P + r * bk), bk);
        amx_bf16gemm_f32(false, false, bq, g.Dv, bk, P, bk, V + j0 * ldv, ldv, pv, g.Dv);
        const int64_t n = bq * g.Dv;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) acc[i] += pv[i];
      }
      for (int64_t r = 0; r < bq; ++r) {
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        float* a = acc + r * g.Dv;
#pragma omp simd
        for (int64_t d = 0; d < g.Dv; ++d) a[d] *= inv;
        detail::from_floats(a, reinterpret_cast<bfloat16*>(out + (b * g.Sq + i0 + r) * ldo + h * g.Dv), g.Dv);
      }
      store_lse(m, l, bq, lse + (b * g.H + h) * g.Sq + i0);
    }
    scratch.trim();
    pscratch.trim();
  };
  parallel_for(g.B * g.H * nqb, tasks, g.B * g.H * g.Sq * g.Sk * (g.D + g.Dv));
}

// Whether bfloat16 attention takes attention_forward_amx: where lowp_gemm's bf16 products run
// on AMX (OAR_BF16_GEMM=float or onednn turns it off, for comparisons).
bool bf16_attention_on_amx() { return std::strcmp(bf16_gemm_path(), "amx") == 0; }

template <typename T>
void ScaledDotProductAttentionKernel(const DeviceContext&, const DenseTensor& query,
                                     const DenseTensor& key, const DenseTensor& value,
                                     const DenseTensor* attn_mask, bool is_causal, double scale,
                                     DenseTensor* out, DenseTensor* lse) {
  using A = OpMath<T>;
  const Geometry g(query, key, value);
  T* o = out->alloc<T>();
  A* ls = lse->alloc<A>();
  if (out->numel() == 0) {
    std::fill(ls, ls + lse->numel(), g.Sk == 0 ? -std::numeric_limits<A>::infinity() : A(0));
    return;
  }
  const A sc = scale > 0 ? static_cast<A>(scale) : A(1) / std::sqrt(static_cast<A>(g.D));
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bf16_attention_on_amx()) {  // Note [bf16 attention on AMX]
      const DenseTensor q = contiguous(query), k = contiguous(key), v = contiguous(value);
      AdditiveMask<A> mask(attn_mask, g);
      attention_forward_amx(g, static_cast<const uint16_t*>(q.raw_data()), static_cast<const uint16_t*>(k.raw_data()),
                            static_cast<const uint16_t*>(v.raw_data()), mask, is_causal, sc,
                            reinterpret_cast<uint16_t*>(o), ls);
      return;
    }
  }
  DenseTensor q = as_compute<A>(query), k = as_compute<A>(key), v = as_compute<A>(value);
  AdditiveMask<A> mask(attn_mask, g);
  if constexpr (std::is_same_v<T, A>) {
    attention_forward<A>(g, q.data<A>(), k.data<A>(), v.data<A>(), mask, is_causal, sc, o, ls);
  } else {
    DenseTensor buf(out->dims(), dtype_of<A>, out->place());
    attention_forward<A>(g, q.data<A>(), k.data<A>(), v.data<A>(), mask, is_causal, sc,
                         buf.alloc<A>(), ls);
    copy_into(buf, out);
  }
}

template <typename A>
void attention_backward(const Geometry& g, const A* q, const A* k, const A* v, const A* o,
                        const A* dout, const A* lse, const AdditiveMask<A>& mask, bool causal,
                        A scale, A* dq, A* dk, A* dv) {
  const int64_t ldq = g.H * g.D, ldk = g.Hk * g.D, ldv = g.Hk * g.Dv, ldo = g.H * g.Dv;
  const int64_t group = g.H / g.Hk;
  const int64_t bk_max = std::min(kBlockK, std::max<int64_t>(g.Sk, 1));
  // The products' B operands are packs (Note [Packed attention operands]): the head's keys
  // and values once per task, the query block's Q and dO once per block, in one per-thread
  // Scratch, each part 64-byte aligned. Where keys_transposed(), S = Q K^T and dP = dO V^T
  // run NN on K^T and V^T packs (Note [Keys packed transposed]; oneDNN's NT form at these
  // blocks, 64x256x64, ran at 128-133 GFLOP/s against NN's 163 on Emerald Rapids, one
  // thread), and dQ = dS K reads the K rows. fwd+bwd B4 S256 H8 D64 at one thread there
  // went 18.0-18.5 -> 16.8-17.4 ms (torch 2.15: 18.4); the AVX2 copy with oneDNN held to
  // AVX2 38.3-39.1 -> 37.7-38.3 ms.
  const bool kt = keys_transposed();
  const int64_t lk = packed_ld<A>(g.D), lv = packed_ld<A>(g.Dv), lt = packed_ld<A>(g.Sk);
  auto lines = whole_lines<A>;
  const int64_t n_p = lines(kBlockQ * bk_max), n_di = lines(kBlockQ), n_dq = lines(kBlockQ * g.D),
                n_dk = lines(g.Sk * g.D), n_dv = lines(g.Sk * g.Dv), n_k = lines(g.Sk * lk),
                n_v = lines(kt ? g.Dv * lt : g.Sk * lv), n_kt = lines(kt ? g.D * lt : 0), n_q = lines(kBlockQ * lk),
                n_o = lines(kBlockQ * lv);
  parallel_for(
      g.B * g.Hk,
      [&](int64_t t0, int64_t t1) {
    thread_local Scratch scratch;
    A* P = scratch.get<A>(2 * n_p + n_di + n_dq + n_dk + n_dv + n_k + n_v + n_kt + n_q + n_o,
                          "scaled_dot_product_attention_grad");
    A *dP = P + n_p, *Di = dP + n_p, *dq_acc = Di + n_di, *dk_acc = dq_acc + n_dq, *dv_acc = dk_acc + n_dk,
      *Kp = dv_acc + n_dv, *Vp = Kp + n_k, *Ktp = Vp + n_v, *Qp = Ktp + n_kt, *dOp = Qp + n_q;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / g.Hk, hk = t % g.Hk;
      const A* K = k + b * g.Sk * ldk + hk * g.D;
      const A* V = v + b * g.Sk * ldv + hk * g.Dv;
      copy_rows(K, ldk, g.Sk, g.D, Kp, lk);
      if (kt) {  // K^T and V^T; Vp holds V^T
        transpose_strided(K, ldk, g.Sk, g.D, Ktp, lt);
        transpose_strided(V, ldv, g.Sk, g.Dv, Vp, lt);
      } else {
        copy_rows(V, ldv, g.Sk, g.Dv, Vp, lv);
      }
      std::fill(dk_acc, dk_acc + g.Sk * g.D, A(0));
      std::fill(dv_acc, dv_acc + g.Sk * g.Dv, A(0));
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i0 = 0; i0 < g.Sq; i0 += kBlockQ) {
          const int64_t bq = std::min(kBlockQ, g.Sq - i0);
          const A* O = o + (b * g.Sq + i0) * ldo + h * g.Dv;
          const A* L = lse + (b * g.H + h) * g.Sq + i0;
          copy_rows(q + (b * g.Sq + i0) * ldq + h * g.D, ldq, bq, g.D, Qp, lk);
          copy_rows(dout + (b * g.Sq + i0) * ldo + h * g.Dv, ldo, bq, g.Dv, dOp, lv);
          for (int64_t r = 0; r < bq; ++r) {
            const A* dor = dOp + r * lv;
            const A* orow = O + r * ldo;
            A s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t d = 0; d < g.Dv; ++d) s += dor[d] * orow[d];
            Di[r] = s;
          }
          std::fill(dq_acc, dq_acc + bq * g.D, A(0));
          for (int64_t j0 = 0; j0 < g.Sk; j0 += kBlockK) {
            if (causal && j0 > i0 + bq - 1) break;
            const int64_t bk = std::min(kBlockK, g.Sk - j0);
            const A* Kb = Kp + j0 * lk;
            if (kt) {
              gemm<A>(false, false, bq, bk, g.D, scale, Qp, lk, Ktp + j0, lt, A(0), P, bk);
            } else {
              gemm<A>(false, true, bq, bk, g.D, scale, Qp, lk, Kb, lk, A(0), P, bk);
            }
            mask_block(P, bk, bq, bk, i0, j0, b, h, mask, causal);
            for (int64_t r = 0; r < bq; ++r) {
              A* s = P + r * bk;
              const A lr = L[r];
              if (lr == -std::numeric_limits<A>::infinity()) {
                std::fill(s, s + bk, A(0));
                continue;
              }
#pragma omp simd
              for (int64_t c = 0; c < bk; ++c) s[c] = exp_simd(s[c] - lr);
            }
            gemm<A>(true, false, bk, g.Dv, bq, A(1), P, bk, dOp, lv, A(1), dv_acc + j0 * g.Dv, g.Dv);
            if (kt) {
              gemm<A>(false, false, bq, bk, g.Dv, A(1), dOp, lv, Vp + j0, lt, A(0), dP, bk);
            } else {
              gemm<A>(false, true, bq, bk, g.Dv, A(1), dOp, lv, Vp + j0 * lv, lv, A(0), dP, bk);
            }
            for (int64_t r = 0; r < bq; ++r) {
              A* dr = dP + r * bk;
              const A* pr = P + r * bk;
              const A di = Di[r];
#pragma omp simd
              for (int64_t c = 0; c < bk; ++c) dr[c] = pr[c] * (dr[c] - di);
            }
            gemm<A>(false, false, bq, g.D, bk, scale, dP, bk, Kb, lk, A(1), dq_acc, g.D);
            gemm<A>(true, false, bk, g.D, bq, scale, dP, bk, Qp, lk, A(1), dk_acc + j0 * g.D, g.D);
          }
          copy_rows(dq_acc, g.D, bq, g.D, dq + (b * g.Sq + i0) * ldq + h * g.D, ldq);
        }
      }
      copy_rows(dk_acc, g.D, g.Sk, g.D, dk + b * g.Sk * ldk + hk * g.D, ldk);
      copy_rows(dv_acc, g.Dv, g.Sk, g.Dv, dv + b * g.Sk * ldv + hk * g.Dv, ldv);
    }
    scratch.trim();
      },
      g.B * g.H * g.Sq * g.Sk * (2 * g.D + 2 * g.Dv));
}

template <typename T>
void ScaledDotProductAttentionGradKernel(const DeviceContext&, const DenseTensor& query,
                                         const DenseTensor& key, const DenseTensor& value,
                                         const DenseTensor* attn_mask, const DenseTensor& out,
                                         const DenseTensor& lse, const DenseTensor& grad_out,
                                         bool is_causal, double scale, DenseTensor* query_grad,
                                         DenseTensor* key_grad, DenseTensor* value_grad) {
  using A = OpMath<T>;
  const Geometry g(query, key, value);
  T* dq = query_grad->alloc<T>();
  T* dk = key_grad->alloc<T>();
  T* dv = value_grad->alloc<T>();
  std::fill(dq, dq + query_grad->numel(), T(0));
  std::fill(dk, dk + key_grad->numel(), T(0));
  std::fill(dv, dv + value_grad->numel(), T(0));
  if (out.numel() == 0 || g.Sk == 0) return;
  const A sc = scale > 0 ? static_cast<A>(scale) : A(1) / std::sqrt(static_cast<A>(g.D));
  DenseTensor q = as_compute<A>(query), k = as_compute<A>(key), v = as_compute<A>(value);
  DenseTensor o = as_compute<A>(out), d_o = as_compute<A>(grad_out), l = as_compute<A>(lse);
  AdditiveMask<A> mask(attn_mask, g);
  if constexpr (std::is_same_v<T, A>) {
    attention_backward<A>(g, q.data<A>(), k.data<A>(), v.data<A>(), o.data<A>(), d_o.data<A>(),
                          l.data<A>(), mask, is_causal, sc, dq, dk, dv);
  } else {
    DenseTensor bq(query.dims(), dtype_of<A>), bk(key.dims(), dtype_of<A>),
        bv(value.dims(), dtype_of<A>);
    attention_backward<A>(g, q.data<A>(), k.data<A>(), v.data<A>(), o.data<A>(), d_o.data<A>(),
                          l.data<A>(), mask, is_causal, sc, bq.alloc<A>(), bk.alloc<A>(),
                          bv.alloc<A>());
    copy_into(bq, query_grad);
    copy_into(bk, key_grad);
    copy_into(bv, value_grad);
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(scaled_dot_product_attention, CPU, ScaledDotProductAttentionKernel, float,
                    double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(scaled_dot_product_attention_grad, CPU, ScaledDotProductAttentionGradKernel,
                    float, double, ::oar::float16, ::oar::bfloat16)
