// bf16 and int8 GEMMs (phi_kernels/funcs/lowp_gemm.h): Oar's AMX kernels or oneDNN where the
// CPU has the instructions, float blocks through sgemm elsewhere. Measurements and the
// choice of library: docs/notes/gemm_backends.md.
#include "phi_kernels/funcs/lowp_gemm.h"

#include <immintrin.h>
#include <time.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/float16.h"
#include "phi_kernels/cpu/gemm_split.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/funcs/amx_gemm.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

// Note [bf16 dot or widened float]: where the CPU has AVX512-BF16 a bf16 product can run on
// its dot-product instruction (vdpbf16ps: oneDNN's bf16 kernels) or as float32 FMAs on the
// operands widened to float32, which is exact (sgemm, the float32 convolutions). Which is
// faster is the core's, not the ISA flags': Zen 4 and Zen 5 run vdpbf16ps at twice their
// float32 FMA rate in flops (Zen 5: 503-531 against 253-268 GFLOP/s a core), an Emerald
// Rapids core without AMX at half of it (83 against 166), so there oneDNN's bf16 matmul ran
// at 82 GFLOP/s and the widened one at 142 (2048^3, 1 thread). So the route is measured:
// at the first bf16 product or convolution the two instructions run in register-only loops
// (24 independent chains each, as bench/peak_kernels.c) for about 0.1-0.3 ms in all, on
// this thread's CPU clock, best of three alternations; oneDNN keeps the bf16 products where
// its instruction runs at >= 0.75x the FMA's flop rate (at equal rates bf16 still moves
// half the bytes and skips the widening). The two measured ratios seen are 2 and 0.5, far
// from the line, so the choice does not flip from one process to the next. AMX is not
// probed: where oneDNN runs AMX, its tiles (and Oar's AMX kernel) outrun both.
#define OAR_X12(X, o) X(o##0) X(o##1) X(o##2) X(o##3) X(o##4) X(o##5) X(o##6) X(o##7) X(o##8) X(o##9) X(o##a) X(o##b)
#define OAR_X24(X) OAR_X12(X, 0) OAR_X12(X, 1)
#define OAR_DECL(i) __m512 a##i = init;
#define OAR_KEEP(i) __asm__ volatile("" : "+v"(a##i));
#define OAR_SUM(i) sum = _mm512_add_ps(sum, a##i);
// The timed loop: 24 chains of STEP(i) from `init`, their sum used at the end.
#define OAR_PROBE_LOOP(STEP)               \
  const double t0 = thread_seconds();      \
  OAR_X24(OAR_DECL)                        \
  for (int64_t it = 0; it < iters; ++it) { \
    OAR_X24(STEP) OAR_X24(OAR_KEEP)        \
  }                                        \
  __m512 sum = init;                       \
  OAR_X24(OAR_SUM)                         \
  __asm__ volatile("" : : "v"(sum));       \
  return thread_seconds() - t0;

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

#define OAR_DPBF16(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
__attribute__((target("avx512f,avx512bf16"))) double time_dpbf16(int64_t iters) {
  const __m512 init = _mm512_set1_ps(1e-3f);
  const __m512bh x = _mm512_cvtne2ps_pbh(init, init), y = _mm512_cvtne2ps_pbh(init, init);
  OAR_PROBE_LOOP(OAR_DPBF16)
}

#define OAR_FMA(i) a##i = _mm512_fmadd_ps(a##i, x, y);
__attribute__((target("avx512f"))) double time_fma(int64_t iters) {
  const __m512 init = _mm512_set1_ps(1e-3f), x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  OAR_PROBE_LOOP(OAR_FMA)
}
#undef OAR_X12
#undef OAR_X24
#undef OAR_DECL
#undef OAR_KEEP
#undef OAR_SUM
#undef OAR_PROBE_LOOP
#undef OAR_DPBF16
#undef OAR_FMA

// vdpbf16ps's flop rate over the FMA's (64 flops an instruction against 32); 0 without
// AVX512-BF16.
double measure_dot_vs_fma() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return 0.0;
  constexpr int64_t kIters = 4000;  // 96k instructions a loop: 20-150 us
  double dot = 1e30, fma = 1e30;
  for (int r = 0; r < 3; ++r) {
    dot = std::min(dot, time_dpbf16(kIters));
    fma = std::min(fma, time_fma(kIters));
  }
  return dot > 0.0 ? 2.0 * fma / dot : 0.0;
}

enum class GemmPath { kAmx, kOnednn, kFloat };

struct PathChoice {
  GemmPath path;
  bool forced;  // by the environment: a forced amx takes every product, small ones included
};

// One dtype's path, chosen once: `env` (OAR_BF16_GEMM / OAR_INT8_GEMM) = amx | onednn | float
// forces one (amx only where the CPU has it); else Oar's AMX kernel where the CPU has it and
// oneDNN runs AMX, else oneDNN where `onednn` says its kernels run and pay on this CPU, else
// the float blocks. What oneDNN runs decides, not cpuid (onednn_runs_isa): a cap
// (DNNL_MAX_CPU_ISA=AVX512_CORE, an AVX2 run of bench/) turns Oar's AMX kernel off too, so a
// capped run takes the path a CPU without AMX takes.
PathChoice choose_path(const char* env, bool amx, bool onednn) {
  const char* v = std::getenv(env);
  if (v && std::strcmp(v, "amx") == 0 && amx) return {GemmPath::kAmx, true};
  if (v && std::strcmp(v, "onednn") == 0) return {GemmPath::kOnednn, true};
  if (v && std::strcmp(v, "float") == 0) return {GemmPath::kFloat, true};
  if (amx && onednn_runs_isa(dnnl_cpu_isa_avx512_core_amx)) return {GemmPath::kAmx, false};
  return {onednn ? GemmPath::kOnednn : GemmPath::kFloat, false};
}

const PathChoice& bf16_choice() {
  static const PathChoice c = choose_path("OAR_BF16_GEMM", amx_bf16_supported(), bf16_onednn_pays());
  return c;
}

const PathChoice& int8_choice() {
  static const PathChoice c =
      choose_path("OAR_INT8_GEMM", amx_int8_supported(),
                  onednn_runs_isa(dnnl_cpu_isa_avx512_core_vnni) || onednn_runs_isa(dnnl_cpu_isa_avx2_vnni));
  return c;
}

const char* path_name(GemmPath p) {
  switch (p) {
    case GemmPath::kAmx:
      return "amx";
    case GemmPath::kOnednn:
      return "onednn";
    case GemmPath::kFloat:
      break;
  }
  return "float";
}

// Oar's AMX kernels against oneDNN 2.6 (Note [AMX GEMM]). bf16: the kernel is the faster one
// on large products (2048^3: 1.8x oneDNN's AMX brgemm); on small and mid-sized ones (a
// model's 128 x 512 x 784, 1024 x 256 x 256, 512^3) oneDNN is as fast or faster, and a
// product with few rows is bound by reading B, which the kernel packs in full. int8: oneDNN's
// s8s8s32 GEMM runs VNNI, not AMX, and the kernel is 2.7-16x faster at every size but few
// rows (M < 16: about equal).
bool bf16_amx_pays(int64_t M, int64_t N, int64_t K) { return M >= 256 && N >= 256 && M * N * K >= (int64_t{1} << 28); }
bool int8_amx_pays(int64_t M) { return M >= 16; }

// oneDNN's bf16 and int8 products in parallel_for's units: about twice sgemm's rate per
// multiply-add on AVX512-BF16/VNNI and more on AMX (sgemm_cost: M N K / 8).
int64_t lowp_cost(int64_t M, int64_t N, int64_t K) { return sgemm_cost(M, N, K) / 2; }

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// oneDNN's matmul primitive for one bf16 GEMM geometry (strided row-major operands, bf16
// result) and its operands' descriptors; `prim` is empty when oneDNN has no implementation
// for this CPU (OAR_BF16_GEMM=onednn on AVX2).
struct Bf16Matmul {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
};

Bf16Matmul make_bf16_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  using dnnl::memory;
  const auto bf16 = memory::data_type::bf16;
  Bf16Matmul m{{},
               memory::desc({M, K}, bf16, ta ? memory::dims{1, lda} : memory::dims{lda, 1}),
               memory::desc({K, N}, bf16, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1}),
               memory::desc({M, N}, bf16, memory::dims{ldc, 1})};
  try {
#if DNNL_VERSION_MAJOR >= 3
    m.prim = dnnl::matmul(dnnl::matmul::primitive_desc(engine(), m.a, m.b, m.c));
#else
    m.prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(m.a, m.b, m.c), engine()));
#endif
  } catch (const dnnl::error&) {
  }
  return m;
}

// Note [bf16 primitive cache]: oneDNN's own primitive cache is keyed by the primitive
// descriptor, so a repeated shape still paid for building the descriptor (2.6 walks its
// matmul implementations until one accepts) and for the stream: a 2x3x5 bf16 matmul took
// 3.7-6.4 us a call through oar.matmul on Zen 4, 2.0-2.1 us with this cache (float32:
// 0.6 us). Here each thread keeps one primitive per geometry, looked up by its eight
// numbers: per thread because with the library-managed scratchpad (Debian's build) a
// primitive must run on the thread that created it. Bounded: when full it is cleared (a
// model has a few dozen geometries).
bool onednn_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B,
                 int64_t ldb, uint16_t* C, int64_t ldc) {
  thread_local std::map<std::array<int64_t, 8>, Bf16Matmul> cache;
  const std::array<int64_t, 8> key{ta, tb, M, N, K, lda, ldb, ldc};
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= 256) cache.clear();
    // kept also when empty: no implementation, asked once
    it = cache.emplace(key, make_bf16_matmul(ta, tb, M, N, K, lda, ldb, ldc)).first;
  }
  const Bf16Matmul& m = it->second;
  if (!m.prim) return false;
  using dnnl::memory;
  memory am(m.a, engine(), const_cast<uint16_t*>(A));
  memory bm(m.b, engine(), const_cast<uint16_t*>(B));
  memory cm(m.c, engine(), C);
  thread_local dnnl::stream s(engine());
  m.prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  s.wait();
  return true;
}

// Dense float copy of rows [r0, r1) x cols [c0, c1) of op(X), X row-major with ld `ld`.
template <typename T, typename F>
void widen(const T* X, int64_t ld, bool trans, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* dst, F conv) {
  const int64_t w = c1 - c0;
  for (int64_t i = r0; i < r1; ++i) {
    float* d = dst + (i - r0) * w;
    if (trans) {
      for (int64_t j = c0; j < c1; ++j) d[j - c0] = conv(X[j * ld + i]);
    } else {
      const T* s = X + i * ld;
#pragma omp simd
      for (int64_t j = c0; j < c1; ++j) d[j - c0] = conv(s[j]);
    }
  }
}

// seg(i, j0, n) over the elements of a rows x cols block, split evenly on Oar's pool whatever
// its shape (one long row included): each call a run of n elements of row i from column j0.
template <class Seg>
void for_row_segments(int64_t rows, int64_t cols, Seg&& seg) {
  if (rows <= 0 || cols <= 0) return;
  parallel_for(rows * cols, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t i = b / cols, j0 = b % cols, n = std::min(cols - j0, e - b);
      seg(i, j0, n);
      b += n;
    }
  });
}

// bf16 through float32 (the AVX2 CPUs' path, and Note [bf16 dot or widened float]'s): both
// operands widened as stored (sgemm takes the transposes), one sgemm, the result rounded
// once. The three float buffers are this thread's scratch, reused from call to call.
void bf16gemm_widened(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                      const uint16_t* B, int64_t ldb, uint16_t* C, int64_t ldc) {
  thread_local Scratch sa, sb, sc;
  const int64_t a_cols = ta ? M : K, b_cols = tb ? K : N;
  float* a32 = sa.get<float>(M * K, "matmul (bf16)");
  float* b32 = sb.get<float>(K * N, "matmul (bf16)");
  float* c32 = sc.get<float>(M * N, "matmul (bf16)");
  bf16_to_float_rows(A, lda, ta ? K : M, a_cols, a32, a_cols);
  bf16_to_float_rows(B, ldb, tb ? N : K, b_cols, b32, b_cols);
  sgemm_rowmajor(ta, tb, M, N, K, a32, a_cols, b32, b_cols, c32, N);
  float_to_bf16_rows(c32, N, M, N, C, ldc);
  sa.trim(), sb.trim(), sc.trim();
}

}  // namespace

double bf16_dot_vs_fma() {
  static const double r = measure_dot_vs_fma();
  return r;
}

bool bf16_onednn_pays() {
  if (onednn_runs_isa(dnnl_cpu_isa_avx512_core_amx)) return true;
  return onednn_runs_isa(dnnl_cpu_isa_avx512_core_bf16) && bf16_dot_vs_fma() >= 0.75;
}

void bf16_to_float_rows(const uint16_t* src, int64_t ld, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  for_row_segments(rows, cols, [&](int64_t i, int64_t j0, int64_t n) {
    const uint16_t* s = src + i * ld + j0;
    auto* d = reinterpret_cast<uint32_t*>(dst + i * ldd + j0);  // bf16 is float's upper half
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) d[j] = static_cast<uint32_t>(s[j]) << 16;
  });
}

void float_to_bf16_rows(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t ldd) {
  for_row_segments(rows, cols, [&](int64_t i, int64_t j0, int64_t n) {
    const float* s = src + i * ld + j0;
    uint16_t* d = dst + i * ldd + j0;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) d[j] = bfloat16(s[j]).bits;
  });
}

const char* bf16_gemm_path() { return path_name(bf16_choice().path); }
const char* int8_gemm_path() { return path_name(int8_choice().path); }

void bf16gemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                       const uint16_t* B, int64_t ldb, uint16_t* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, uint16_t{0});
    return;
  }
  const PathChoice& c = bf16_choice();
  if (c.path == GemmPath::kAmx && (c.forced || bf16_amx_pays(M, N, K))) {
    amx_bf16gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  // (on an AMX CPU oneDNN has its bf16 kernels too). At more than one thread, one
  // single-threaded primitive per panel on Oar's pool, as the float32 GEMM (gemm_split.h).
  if (c.path != GemmPath::kFloat) {
    std::atomic<bool> ran{true};  // false where oneDNN has no kernel (OAR_BF16_GEMM=onednn on AVX2)
    gemm_split(M, N, lowp_cost(M, N, K), [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      if (!onednn_bf16(ta, tb, r1 - r0, c1 - c0, K, ta ? A + r0 : A + r0 * lda, lda, tb ? B + c0 * ldb : B + c0, ldb,
                       C + r0 * ldc + c0, ldc)) {
        ran = false;
      }
    });
    if (ran) return;
  }
  bf16gemm_widened(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
}

void s8gemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int8_t* A, int64_t lda, const int8_t* B,
                     int64_t ldb, int32_t* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const PathChoice& c = int8_choice();
  if (c.path == GemmPath::kAmx && (c.forced || int8_amx_pays(M))) {
    amx_s8gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  if (K == 0 || c.path == GemmPath::kFloat) {  // the float path accumulates K blocks into C
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0);
    if (K == 0) return;
  }
  if (c.path != GemmPath::kFloat) {  // beta = 0: oneDNN writes every element of C
    gemm_split(M, N, lowp_cost(M, N, K), [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      const int32_t co = 0;
      const dnnl_status_t st =
          dnnl_gemm_s8s8s32(ta ? 'T' : 'N', tb ? 'T' : 'N', 'F', r1 - r0, c1 - c0, K, 1.f, ta ? A + r0 : A + r0 * lda,
                            lda, 0, tb ? B + c0 * ldb : B + c0, ldb, 0, 0.f, C + r0 * ldc + c0, ldc, &co);
      OAR_ENFORCE(st == dnnl_success, Internal, "int8 gemm: oneDNN gemm_s8s8s32 failed with status ",
                  static_cast<int>(st));
    });
    return;
  }
  // K blocks of 1024: every partial sum of int8 products is an integer of magnitude
  // <= 1024 * 128 * 128 = 2^24, exact in float32 whatever order sgemm adds in.
  constexpr int64_t kBlock = 1024;
  const int64_t kb = std::min(K, kBlock);
  thread_local Scratch sa, sb, sc;  // reused from call to call, as bf16gemm_widened's
  float* a32 = sa.get<float>(M * kb, "int8 gemm");
  float* b32 = sb.get<float>(kb * N, "int8 gemm");
  float* c32 = sc.get<float>(M * N, "int8 gemm");
  auto conv = [](int8_t v) { return static_cast<float>(v); };
  for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
    const int64_t k1 = std::min(K, k0 + kBlock), w = k1 - k0;
    widen(A, lda, ta, 0, M, k0, k1, a32, conv);
    widen(B, ldb, tb, k0, k1, 0, N, b32, conv);
    sgemm_rowmajor(false, false, M, N, w, a32, w, b32, N, c32, N);
    for (int64_t i = 0; i < M; ++i) {
      int32_t* c = C + i * ldc;
      const float* s = c32 + i * N;
      for (int64_t j = 0; j < N; ++j) {  // wrap like int32 hardware instead of overflowing (UB)
        c[j] = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(static_cast<int32_t>(s[j])));
      }
    }
  }
  sa.trim(), sb.trim(), sc.trim();
}

}  // namespace oar::phi

/// The paths on this CPU, for tests and bench (ctypes on liboar_core); never null.
extern "C" const char* oar_bf16_gemm_path() { return oar::phi::bf16_gemm_path(); }

/// Note [bf16 dot or widened float]'s measured ratio (0 without AVX512-BF16), for tests and bench.
extern "C" double oar_bf16_dot_vs_fma() { return oar::phi::bf16_dot_vs_fma(); }
extern "C" const char* oar_int8_gemm_path() { return oar::phi::int8_gemm_path(); }

/// s8gemm_rowmajor for ctypes callers (tests; the weight-only int8 linear to come):
/// 0 on success, -1 when the arguments are inconsistent, -2 when the GEMM failed.
extern "C" int oar_s8gemm_rowmajor(int ta, int tb, int64_t M, int64_t N, int64_t K, const int8_t* A, int64_t lda,
                                   const int8_t* B, int64_t ldb, int32_t* C, int64_t ldc) {
  const int64_t a_cols = ta ? M : K, b_cols = tb ? K : N;
  if (M < 0 || N < 0 || K < 0 || lda < std::max<int64_t>(1, a_cols) || ldb < std::max<int64_t>(1, b_cols) ||
      ldc < std::max<int64_t>(1, N)) {
    return -1;
  }
  try {
    oar::phi::s8gemm_rowmajor(ta != 0, tb != 0, M, N, K, A, lda, B, ldb, C, ldc);
  } catch (...) {
    return -2;
  }
  return 0;
}
