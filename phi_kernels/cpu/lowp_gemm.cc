// bf16 and int8 GEMMs (phi_kernels/funcs/lowp_gemm.h): Oar's AMX kernels or oneDNN where the
// CPU has the instructions, float blocks through sgemm elsewhere. Measurements and the
// choice of library: docs/notes/gemm_backends.md.
#include "phi_kernels/funcs/lowp_gemm.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/gemm_split.h"
#include "phi_kernels/funcs/amx_gemm.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

enum class GemmPath { kAmx, kOnednn, kFloat };

struct PathChoice {
  GemmPath path;
  bool forced;  // by the environment: a forced amx takes every product, small ones included
};

// One dtype's path, chosen once: `env` (OAR_BF16_GEMM / OAR_INT8_GEMM) = amx | onednn | float
// forces one (amx only where the CPU has it); else Oar's AMX kernel where the CPU has it and
// oneDNN runs AMX, else oneDNN where it runs the instructions, else the float blocks. What
// oneDNN runs decides, not cpuid (onednn_runs_isa): a cap (DNNL_MAX_CPU_ISA=AVX512_CORE, an
// AVX2 run of bench/) turns Oar's AMX kernel off too, so a capped run takes the path a CPU
// without AMX takes.
PathChoice choose_path(const char* env, bool amx, bool onednn) {
  const char* v = std::getenv(env);
  if (v && std::strcmp(v, "amx") == 0 && amx) return {GemmPath::kAmx, true};
  if (v && std::strcmp(v, "onednn") == 0) return {GemmPath::kOnednn, true};
  if (v && std::strcmp(v, "float") == 0) return {GemmPath::kFloat, true};
  if (amx && onednn_runs_isa(dnnl_cpu_isa_avx512_core_amx)) return {GemmPath::kAmx, false};
  return {onednn ? GemmPath::kOnednn : GemmPath::kFloat, false};
}

const PathChoice& bf16_choice() {
  static const PathChoice c =
      choose_path("OAR_BF16_GEMM", amx_bf16_supported(), onednn_runs_isa(dnnl_cpu_isa_avx512_core_bf16));
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

}  // namespace

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
  // Widen to float (exact), one sgemm, round once on store.
  std::vector<float> a32(M * K), b32(K * N), c32(M * N);
  widen(A, lda, ta, 0, M, 0, K, a32.data(), bf16_to_float);
  widen(B, ldb, tb, 0, K, 0, N, b32.data(), bf16_to_float);
  sgemm_rowmajor(false, false, M, N, K, a32.data(), K, b32.data(), N, c32.data(), N);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = float_to_bf16(c32[i * N + j]);
  }
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
  std::vector<float> a32(M * kb), b32(kb * N), c32(M * N);
  auto conv = [](int8_t v) { return static_cast<float>(v); };
  for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
    const int64_t k1 = std::min(K, k0 + kBlock), w = k1 - k0;
    widen(A, lda, ta, 0, M, k0, k1, a32.data(), conv);
    widen(B, ldb, tb, k0, k1, 0, N, b32.data(), conv);
    sgemm_rowmajor(false, false, M, N, w, a32.data(), w, b32.data(), N, c32.data(), N);
    for (int64_t i = 0; i < M; ++i) {
      int32_t* c = C + i * ldc;
      const float* s = c32.data() + i * N;
      for (int64_t j = 0; j < N; ++j) {  // wrap like int32 hardware instead of overflowing (UB)
        c[j] = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(static_cast<int32_t>(s[j])));
      }
    }
  }
}

}  // namespace oar::phi

/// The paths on this CPU, for tests and bench (ctypes on liboar_core); never null.
extern "C" const char* oar_bf16_gemm_path() { return oar::phi::bf16_gemm_path(); }
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
