// One GEMM backend's throughput on the benchmark models' shapes, for
// docs/notes/gemm_backends.md. Built once per library by bench/gemm_backends.py:
//   -DBK_DNNL      oneDNN (2.6 from Debian or 3.x from PyPI's onednn-devel): dnnl_sgemm,
//                  dnnl_gemm_s8s8s32/u8s8s32 and the matmul primitive for bf16 (and f32);
//   -DBK_CBLAS     a CBLAS (OpenBLAS from Debian or scipy-openblas, MKL): cblas_sgemm;
//     -DBK_SBGEMM  OpenBLAS's cblas_sbgemm for bf16;
//     -DBK_MKL     MKL's cblas_gemm_bf16bf16f32 and cblas_gemm_s8u8s32.
// Prints one line per case: "dtype trans M N K batch seconds_per_call". The library's own
// GEMM is timed, never a hand-written one. Threads: OMP_NUM_THREADS / the library's own.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#if defined(BK_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
#endif
#if defined(BK_CBLAS)
#include BK_CBLAS_HEADER
#endif

namespace {

using Clock = std::chrono::steady_clock;

double cpu_now() {  // this process's CPU seconds, all threads: immune to being descheduled
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

double g_cpu_best = 0;  // CPU seconds per call of the last time_it (best of its batches)

// Wall seconds per call: warm up, then repeat until `budget` seconds; the best of 3
// batches. The CPU seconds per call go to g_cpu_best.
double time_it(const std::function<void()>& fn, double budget) {
  fn();
  auto t0 = Clock::now();
  fn();
  double one = std::chrono::duration<double>(Clock::now() - t0).count();
  int reps = std::max(1, static_cast<int>(budget / 3 / std::max(one, 1e-7)));
  double best = 1e30;
  g_cpu_best = 1e30;
  for (int b = 0; b < 3; ++b) {
    const double c0 = cpu_now();
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r) fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / reps);
    g_cpu_best = std::min(g_cpu_best, (cpu_now() - c0) / reps);
  }
  return best;
}

struct Case {
  int64_t batch, M, N, K;
  bool ta, tb;
};

std::vector<float> rand_f(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#if defined(BK_DNNL)
dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// The matmul primitive on [batch, M, K] x [batch, K, N] with transposes as strides.
std::function<void()> dnnl_matmul(const Case& c, dnnl::memory::data_type dt, void* A, void* B, float* C) {
  using namespace dnnl;
  using tag = memory::format_tag;
  memory::desc a_md({c.batch, c.M, c.K}, dt, c.ta ? tag::acb : tag::abc);
  memory::desc b_md({c.batch, c.K, c.N}, dt, c.tb ? tag::acb : tag::abc);
  memory::desc c_md({c.batch, c.M, c.N}, memory::data_type::f32, tag::abc);
#if DNNL_VERSION_MAJOR >= 3
  matmul::primitive_desc pd(eng(), a_md, b_md, c_md);
#else
  matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng());
#endif
  auto prim = std::make_shared<matmul>(pd);
  auto am = std::make_shared<memory>(a_md, eng(), A);
  auto bm = std::make_shared<memory>(b_md, eng(), B);
  auto cm = std::make_shared<memory>(c_md, eng(), C);
  auto s = std::make_shared<stream>(eng());
  return [=] {
    prim->execute(*s, {{DNNL_ARG_SRC, *am}, {DNNL_ARG_WEIGHTS, *bm}, {DNNL_ARG_DST, *cm}});
    s->wait();
  };
}
#endif

void run_case(const Case& c, double budget) {
  const int64_t M = c.M, N = c.N, K = c.K, nb = c.batch;
  const int64_t sa = M * K, sb = K * N, sc = M * N;
  const int64_t lda = c.ta ? M : K, ldb = c.tb ? K : N;
  auto a = rand_f(sa * nb, 1), b = rand_f(sb * nb, 2);
  std::vector<float> cbuf(sc * nb);
  float* C = cbuf.data();
  const char* tr = c.ta ? (c.tb ? "TT" : "TN") : (c.tb ? "NT" : "NN");
  auto report = [&](const char* what, double s) {
    std::printf("%s %s %lld %lld %lld %lld %.9g %.9g\n", what, tr, (long long)M, (long long)N, (long long)K,
                (long long)nb, s, g_cpu_best);
    std::fflush(stdout);
  };
  // ---- float32 ----
  {
    const float* A = a.data();
    const float* B = b.data();
#if defined(BK_DNNL)
    report("f32", time_it(
                      [&] {
      for (int64_t i = 0; i < nb; ++i)
        dnnl_sgemm(c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', M, N, K, 1.f, A + i * sa, lda, B + i * sb, ldb, 0.f, C + i * sc,
                   N);
                      },
                      budget));
    try {
      report("f32mm", time_it(dnnl_matmul(c, dnnl::memory::data_type::f32, a.data(), b.data(), C), budget));
    } catch (const dnnl::error&) {  // no implementation on this CPU: no row
    }
#elif defined(BK_CBLAS)
    report("f32", time_it(
                      [&] {
      for (int64_t i = 0; i < nb; ++i)
        cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, M, N, K, 1.f,
                    A + i * sa, lda, B + i * sb, ldb, 0.f, C + i * sc, N);
                      },
                      budget));
#endif
  }
  // ---- bf16 x bf16 -> f32 ----
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  for (size_t i = 0; i < a.size(); ++i) a16[i] = to_bf16(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b16[i] = to_bf16(b[i]);
#if defined(BK_DNNL)
  try {
    report("bf16", time_it(dnnl_matmul(c, dnnl::memory::data_type::bf16, a16.data(), b16.data(), C), budget));
  } catch (const dnnl::error&) {  // oneDNN has no bf16 matmul for this ISA (AVX2): no row
  }
#elif defined(BK_SBGEMM)
  report("bf16", time_it(
                     [&] {
    for (int64_t i = 0; i < nb; ++i)
      cblas_sbgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, M, N, K, 1.f,
                   reinterpret_cast<const bfloat16*>(a16.data()) + i * sa, lda,
                   reinterpret_cast<const bfloat16*>(b16.data()) + i * sb, ldb, 0.f, C + i * sc, N);
                     },
                     budget));
#elif defined(BK_MKL)
  report("bf16", time_it(
                     [&] {
    for (int64_t i = 0; i < nb; ++i)
      cblas_gemm_bf16bf16f32(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, M, N, K,
                             1.f, a16.data() + i * sa, lda, b16.data() + i * sb, ldb, 0.f, C + i * sc, N);
                     },
                     budget));
#endif
  // ---- int8 x int8 -> int32 ----
  std::vector<int8_t> a8(a.size()), b8(b.size());
  for (size_t i = 0; i < a.size(); ++i) a8[i] = static_cast<int8_t>(a[i] * 127);
  for (size_t i = 0; i < b.size(); ++i) b8[i] = static_cast<int8_t>(b[i] * 127);
  std::vector<int32_t> c32(sc * nb);
  int32_t co = 0;
#if defined(BK_DNNL)
  report("s8s8", time_it(
                     [&] {
    for (int64_t i = 0; i < nb; ++i)
      dnnl_gemm_s8s8s32(c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', 'F', M, N, K, 1.f, a8.data() + i * sa, lda, 0,
                        b8.data() + i * sb, ldb, 0, 0.f, c32.data() + i * sc, N, &co);
                     },
                     budget));
  report("u8s8", time_it(
                     [&] {
    for (int64_t i = 0; i < nb; ++i)
      dnnl_gemm_u8s8s32(c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', 'F', M, N, K, 1.f,
                        reinterpret_cast<const uint8_t*>(a8.data()) + i * sa, lda, 0, b8.data() + i * sb, ldb, 0, 0.f,
                        c32.data() + i * sc, N, &co);
                     },
                     budget));
#elif defined(BK_MKL)
  report("s8u8", time_it(
                     [&] {
    for (int64_t i = 0; i < nb; ++i)
      cblas_gemm_s8u8s32(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                         CblasFixOffset, M, N, K, 1.f, a8.data() + i * sa, lda, 0, b8.data() + i * sb, ldb, 0, 0.f,
                         c32.data() + i * sc, N, &co);
                     },
                     budget));
#endif
  (void)co;
}

}  // namespace

int main(int argc, char** argv) {
  // argv: budget_seconds, then cases "batch,M,N,K,TT" (TT: N/T for A and B).
  double budget = argc > 1 ? std::atof(argv[1]) : 0.3;
  for (int i = 2; i < argc; ++i) {
    Case c{};
    char ta = 'N', tb = 'N';
    long long bt, m, n, k;
    if (std::sscanf(argv[i], "%lld,%lld,%lld,%lld,%c%c", &bt, &m, &n, &k, &ta, &tb) != 6) {
      std::fprintf(stderr, "bad case %s\n", argv[i]);
      return 2;
    }
    c = {bt, m, n, k, ta == 'T', tb == 'T'};
    run_case(c, budget);
  }
  return 0;
}
