// sgemm_rowmajor (phi_kernels/funcs/sgemm.h): the choice between OpenBLAS, oneDNN's sgemm
// and Oar's own AVX-512 kernel (large untransposed products on an Intel AVX-512 core, Note
// [AVX-512 sgemm] in sgemm_avx512.cc), by the ISA oneDNN runs and the shape
// (docs/notes/gemm_backends.md has the tables).
//
// AVX-512 (oneDNN's avx512_core; measured on Zen 4, 1 thread, bench/sgemm_strides.py --routes):
// oneDNN 2.6's AVX-512 sgemm beats scipy-openblas32 0.3.34's SkylakeX kernels on every
// model shape, 1024^3 105 vs 102 GFLOP/s, 2048^3 111 vs 106, MLP 128x512x784 0.91 vs 1.00 ms,
// LSTM step 16x1024x256 83 vs 131 us, and the 2 KiB-stride slowdowns below are gone
// (TN 1024x256x1024 lda 1024: 5.3 vs 5.4 ms); OpenBLAS only wins a narrow untransposed B
// (N < 16: the classifier head 128x10x512 24 vs 36 us, 512x10x128 TN 20 vs 36 us).
// That win needs OpenBLAS's AVX-512 kernels: on Zen 5 (family 26) scipy-openblas32 0.3.34
// does not know the core and runs its Haswell (AVX2) ones, and oneDNN takes every shape,
// the head 8 vs 21 us, 512x10x128 TN 9 vs 23 us (OpenBLAS forced to SkylakeX there still
// loses, 13 and 11 us); see openblas_runs_avx512.
//
// AVX2 (measured on an AVX2 Zen3 core, 1 thread):
//  - every dim >= 384: OpenBLAS (512^3: 3.1 vs 4.7 ms in oneDNN);
//  - a wide, deep, untransposed B (K, N >= 512) with a short A: OpenBLAS
//    (128x784x512 1.20 vs 1.58 ms, 128x1024x1024 3.2 vs 5.9 ms);
//  - an untransposed B whose rows lie a multiple of 2 KiB apart (ldb % 512 == 0) with
//    8..1024 rows of A: oneDNN's sgemm runs at half speed on a 64-byte aligned B (all our
//    tensors are), OpenBLAS does not care: 128x256x1024 2.0 vs 1.03 ms, 128x256x512 0.67
//    vs 0.43, 64x256x1024 0.78 vs 0.46, 128x4608x512 13.5 vs 9.5 (with B moved by 16
//    bytes oneDNN matches OpenBLAS again, so it is the alignment, not the shape);
//  - a transposed A whose columns lie a multiple of 2 KiB apart (lda % 512 == 0), the same
//    slowdown in oneDNN: a weight gradient x^T dy over 1024 rows of a 1024-wide x (the
//    GPT's fc2, the LSTM's dW_hh = da^T h_prev), TN 1024x256x1024 57-61 vs 18-29 ms in
//    OpenBLAS under load 12 (5 runs; with lda 1040 oneDNN gets 26, so it is the stride),
//    TN 1024x128x1024 27 vs 14; TN 256x256x1024 (lda 256) is unaffected
//    (bench/sgemm_strides.py; the table is in docs/notes/cpu_speed_steps.md);
//  - otherwise oneDNN, much faster on small products (1x400x120: 3 vs 16 us).
// The OpenBLAS is PyPI's scipy-openblas32 (0.3.3x, run-time dispatch to AVX-512 kernels)
// when the build found it (OAR_SCIPY_OPENBLAS, cmake/dependencies.cmake), else Debian's
// 0.3.21.
#include "phi_kernels/funcs/sgemm.h"

#include <cblas.h>  // scipy-openblas32's (prefixed names) when OAR_SCIPY_OPENBLAS, else Debian's
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/gemm_split.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/scratch.h"

namespace oar::phi {
namespace {

// OpenBLAS runs on one thread (Note [GEMM splits on the pool]). Its thread count is global
// to it: scipy-openblas32 serves sgemm_rowmajor only, so it is set once, before its first
// call (a function-local static: a second thread waits for it); Debian's also serves
// float64 and complex GEMMs, so it is set before each call from outside a parallel region.
// (scipy-openblas32's own threads spun ~0.1 s after every threaded call, 24-102 ms of CPU
// in the first 0.5 s idle, `bench/idle_pool.py --threads 2`; at one thread it runs none.)
void serial_openblas() {
#if defined(OAR_SCIPY_OPENBLAS)
  static const bool once = [] {
    scipy_openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
#elif defined(OPENBLAS_VERSION)
  if (!in_parallel_region() && openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#endif
}

// Whether OpenBLAS picked AVX-512 kernels for this CPU: its DYNAMIC_ARCH core name (which
// OPENBLAS_CORETYPE overrides) is one of its AVX-512 targets.
#if defined(OAR_SCIPY_OPENBLAS) || defined(OPENBLAS_VERSION)
bool openblas_runs_avx512() {
  static const bool avx512 = [] {
#if defined(OAR_SCIPY_OPENBLAS)
    const char* core = scipy_openblas_get_corename();
#else
    const char* core = openblas_get_corename();
#endif
    std::string name = core ? core : "";
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* target : {"skylakex", "cooperlake", "sapphirerapids"}) {
      if (name.find(target) != std::string::npos) return true;
    }
    return false;
  }();
  return avx512;
}
#endif

}  // namespace

bool onednn_runs_isa(unsigned isa) {
  // fixed once oneDNN has been asked (it then refuses a new cap), so read it once
  static const unsigned effective = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (effective & isa) == isa;
}

namespace {

// OAR_SGEMM=openblas|onednn|oar forces one path for every float32 GEMM it can run
// (comparisons, tests): OpenBLAS, oneDNN's sgemm, or Oar's AVX-512 kernel for each
// untransposed product where the CPU has AVX-512 (oneDNN for the others).
enum class Forced { kNone, kOpenBlas, kOneDnn, kOar };
Forced forced_sgemm() {
  static const Forced forced = [] {
    const char* e = std::getenv("OAR_SGEMM");
    const std::string v = e ? e : "";
    return v == "openblas" ? Forced::kOpenBlas
           : v == "onednn" ? Forced::kOneDnn
           : v == "oar"    ? Forced::kOar
                           : Forced::kNone;
  }();
  return forced;
}

// An Intel core whose oneDNN runs AVX-512: where Oar's AVX-512 GEMM and the restride of
// Note [Transposed A at a 4 KiB stride] were measured.
bool intel_avx512() {
  static const bool intel = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") && onednn_runs_isa(dnnl_cpu_isa_avx512_core);
  }();
  return intel;
}

}  // namespace

// Note [AVX-512 sgemm] (sgemm_avx512.cc): large untransposed products on an Intel AVX-512
// core, where it beat oneDNN's sgemm; measured there only, so AMD keeps oneDNN.
bool sgemm_uses_avx512_kernel(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  if (ta || tb || !sgemm_avx512_supported()) return false;
  switch (forced_sgemm()) {
    case Forced::kOar:
      return true;
    case Forced::kNone:
      return intel_avx512() && M >= 1024 && K >= 1024 && N >= 512;
    default:
      return false;
  }
}

bool sgemm_uses_openblas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb) {
#if defined(OAR_SCIPY_OPENBLAS) || defined(OPENBLAS_VERSION)
  const Forced forced = forced_sgemm();
  if (forced != Forced::kNone) return forced == Forced::kOpenBlas;
  // oneDNN's sgemm runs its AVX-512 code: the AVX-512 rule of the file comment, else the AVX2 one
  if (onednn_runs_isa(dnnl_cpu_isa_avx512_core)) return !tb && N < 16 && openblas_runs_avx512();
  if (std::min({M, N, K}) >= 384) return true;
  if (tb) return false;
  if (ta && lda % 512 == 0 && K >= 256 && N >= 64) return true;
  if (K >= 512 && N >= 512) return true;
  return ldb % 512 == 0 && M >= 8 && M <= 1024;
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)lda, (void)ldb;
  return false;
#endif
}

// Note [Transposed A at a 4 KiB stride]: a weight gradient x^T dy whose x rows are a
// multiple of 1024 floats wide reaches oneDNN 2.6's AVX-512 sgemm as a transposed A with lda
// a multiple of 4 KiB, and on the Intel Xeon (family 6 model 167) many of those products run
// far below speed. There A is first copied row by row into a buffer whose rows are 64 bytes
// longer: one memory pass over A. `bench/sgemm_strides.py --restride` (1 thread, TN M x N x
// K, ms without the copy -> with it, the median of 3 alternating processes each):
//   2048x256x1024 9.7 -> 6.6, 2048x512x1024 17.1 -> 12.6, 4096x256x1024 26.6 -> 15.8,
//   4096x512x1024 44.9 -> 27.6, 2048x128x1024 4.4 -> 3.6, 2048x512x512 8.0 -> 6.0,
//   1024x512x4096 29.9 -> 27.6.
// It is not done where the copy did not pay: N >= 768 at M >= 2048 (1.02-1.04x), N = 1024
// (1.01-1.05x), M = 1024 unless K >= 4096 (1024x128x1024 1.07x; 1024x256x1024 0.98x, and at
// 2 threads 1.70 -> 1.78 ms). The outcome also moves with the buffers' addresses: one run
// of 4096x128x1024 read 10.8 -> 6.6 ms, another 7.3 -> 10.5. Measured on that Intel core
// only: on AMD it is not done.
// OAR_SGEMM_RESTRIDE=0 never copies, =1 copies every such A (any shape, any CPU: tests, bench).
bool sgemm_restrides_a(bool ta, int64_t M, int64_t N, int64_t K, int64_t lda) {
  static const int forced = [] {
    const char* e = std::getenv("OAR_SGEMM_RESTRIDE");
    return e == nullptr ? -1 : std::string(e) == "1" ? 1 : std::string(e) == "0" ? 0 : -1;
  }();
  if (!ta || lda % 1024 != 0 || forced == 0) return false;
  if (forced == 1) return true;
  return intel_avx512() && N >= 128 && N <= 512 && K >= 512 && (M >= 2048 || (M >= 1024 && K >= 4096 && N >= 256));
}

// parallel_for's cost units are the float adds of the pool's calibration loop (Note [Thread
// pool]: c = a + b over 2^20 floats, cache-resident: 5.5 adds/ns on Zen 4, which the wake
// grain is computed in). One thread's sgemm does about 8-10 multiply-adds in the time of one
// such add (Zen 4: 57 FMA/ns on 128x784x512; an AVX2 core about half), so a product of
// M*N*K multiply-adds costs M*N*K / 8. (It was / 32, from adds streamed from memory: the
// MLP's 128x784x512 then stayed under the wake grain of a VM whose futex call takes 25 us,
// and at 2 threads the step took as long as at 1.) Saturates instead of overflowing.
int64_t sgemm_cost(int64_t M, int64_t N, int64_t K) {
  const double f = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) / 8.0;
  return f >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(f);
}

void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float* C, int64_t ldc) {
  const bool openblas = sgemm_uses_openblas(ta, tb, M, N, K, lda, ldb);
  auto one = [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
    if (!openblas && sgemm_uses_avx512_kernel(ta, tb, m, n, K)) {
      sgemm_avx512_nn(m, n, K, a, lda, b, ldb, c, ldc);
      return;
    }
    if (openblas) {
#if defined(OAR_SCIPY_OPENBLAS)
      scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, K, 1.0f, a,
                        lda, b, ldb, 0.0f, c, ldc);
#elif defined(OPENBLAS_VERSION)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, K, 1.0f, a, lda,
                  b, ldb, 0.0f, c, ldc);
#endif
      return;
    }
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    OAR_ENFORCE(st == dnnl_success, Internal, "sgemm: oneDNN sgemm failed with status ", static_cast<int>(st));
  };
  // Note [GEMM splits on the pool] (docs/notes/thread_pool.md): every library call runs on
  // one thread; at nt > 1 threads a large product is cut into nt column (or row) panels of
  // whole 16-float vectors (the kernels' register width), one single-threaded library call
  // per panel, run as parallel_for's chunks on Oar's pool. The pool's chunks run with
  // OpenMP's thread count at 1, so oneDNN's sgemm opens no OpenMP region there; OpenBLAS
  // is kept at one thread (serial_openblas).
  // Why not the libraries' own threading: OpenBLAS syncs its jobs many times per product
  // (each waits for the others' packed panels), and on a machine whose other cores are busy
  // each sync waits for a descheduled worker's next time slice (MLP step at 2 threads 53 ms
  // against 6 ms at 1 thread); oneDNN's threaded sgemm meets the same (Zen 4, load 2.4:
  // 128x512x512 7.6 ms against 0.59 at 1 thread). And any OpenMP region pays its sleeping
  // worker's wake (~40 us on these VMs) in its end barrier, where the pool's caller starts at
  // once and wakes a worker only for a product above its measured wake grain.
  if (openblas) serial_openblas();
  Scratch* restrided = nullptr;  // Note [Transposed A at a 4 KiB stride]
  if (!openblas && sgemm_restrides_a(ta, M, N, K, lda)) {
    thread_local Scratch scratch;
    restrided = &scratch;
    const int64_t ld = M + 16;
    float* a = scratch.get<float>(K * ld, "matmul");
    const float* src = A;
    const int64_t src_ld = lda;
    auto copy_rows = [=](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) std::memcpy(a + k * ld, src + k * src_ld, M * sizeof(float));
    };
    parallel_for(K, copy_rows, K * M);
    A = a;
    lda = ld;
  }
  gemm_split(M, N, sgemm_cost(M, N, K), [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    one(r1 - r0, c1 - c0, ta ? A + r0 : A + r0 * lda, tb ? B + c0 * ldb : B + c0, C + r0 * ldc + c0);
  });
  if (restrided != nullptr) restrided->trim();
}

void sgemm_serial_in_team() { serial_openblas(); }

const char* sgemm_openblas_name() {
#if defined(OAR_SCIPY_OPENBLAS)
  return "scipy-openblas32";
#elif defined(OPENBLAS_VERSION)
  return "debian-openblas";
#else
  return "none";
#endif
}

}  // namespace oar::phi

/// Which OpenBLAS the float32 GEMM links, for tests and bench (ctypes on liboar_core).
extern "C" const char* oar_sgemm_openblas() { return oar::phi::sgemm_openblas_name(); }

/// Whether sgemm_rowmajor copies a transposed A to a padded stride first (Note [Transposed A
/// at a 4 KiB stride]), for tests and bench (ctypes on liboar_core).
extern "C" int oar_sgemm_restrides_a(int ta, int64_t M, int64_t N, int64_t K, int64_t lda) {
  return oar::phi::sgemm_restrides_a(ta != 0, M, N, K, lda) ? 1 : 0;
}

/// The path sgemm_rowmajor takes for a product (one library call's shape), "openblas",
/// "onednn" or "oar" (Note [AVX-512 sgemm]), for tests
/// and bench (ctypes on liboar_core); never null.
extern "C" const char* oar_sgemm_route(int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb) {
  if (oar::phi::sgemm_uses_openblas(ta != 0, tb != 0, M, N, K, lda, ldb)) return "openblas";
  return oar::phi::sgemm_uses_avx512_kernel(ta != 0, tb != 0, M, N, K) ? "oar" : "onednn";
}
