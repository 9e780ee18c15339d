/* FMA throughput loops for bench/peak.py, one per ISA, each compiled for its ISA with a
 * target attribute so the file builds with plain `cc -O2`; peak.py calls only the ones
 * cpuid says the CPU has. Each returns the number of floating-point operations it did. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Independent accumulators, more than latency x pipes of the instruction timed, kept in
 * registers by an empty asm that claims to change them every iteration, so the compiler
 * can neither spill them nor fold the chains. STEP(a) is one FMA-class instruction and
 * ADD sums two accumulators, macros the caller defines. AVX2 has 16 vector registers: 12
 * chains cover its FMAs (4 cycles x 2 pipes on every core seen). AVX-512 has 32 and takes
 * 24: Zen 5's vdpbf16ps needs more than 12 in flight (12 chains read 483-491 GFLOP/s at 1
 * thread, 24 read 527-531; its FMA loop is the same at 12 and 24). */
#define ACC12(X) X(a0) X(a1) X(a2) X(a3) X(a4) X(a5) X(a6) X(a7) X(a8) X(a9) X(a10) X(a11)
#define ACC24(X) \
  ACC12(X) X(a12) X(a13) X(a14) X(a15) X(a16) X(a17) X(a18) X(a19) X(a20) X(a21) X(a22) X(a23)
#define PEAK_DECL(a) a = init_,
#define PEAK_STEP(a) a = STEP(a);
#define PEAK_KEEP(a) __asm__ volatile("" : "+v"(a));
#define PEAK_SUM(a) sum_ = ADD(sum_, a);
#define PEAK_LOOP(ACC, V, INIT, iters, sink, store)          \
  const V init_ = INIT;                                        \
  V ACC(PEAK_DECL) sum_ = init_;                               \
  for (int64_t it = 0; it < iters; ++it) {                     \
    ACC(PEAK_STEP)                                             \
    ACC(PEAK_KEEP)                                             \
  }                                                            \
  ACC(PEAK_SUM)                                                \
  store(sink, sum_)

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters, float* sink) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#define STEP(x) _mm256_fmadd_ps(x, a, b)
#define ADD _mm256_add_ps
  PEAK_LOOP(ACC12, __m256, _mm256_set1_ps(1e-3f), iters, sink, _mm256_storeu_ps);
#undef STEP
#undef ADD
  return (double)iters * 12 * 8 * 2;
}

__attribute__((target("avx512f"))) double fma_avx512(int64_t iters, float* sink) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#define STEP(x) _mm512_fmadd_ps(x, a, b)
#define ADD _mm512_add_ps
  PEAK_LOOP(ACC24, __m512, _mm512_set1_ps(1e-3f), iters, sink, _mm512_storeu_ps);
#undef STEP
#undef ADD
  return (double)iters * 24 * 16 * 2;
}

/* vdpbf16ps: 16 lanes x 2 bf16 products accumulated in fp32 = 64 flops per instruction. */
__attribute__((target("avx512f,avx512bf16"))) double dot_avx512bf16(int64_t iters, float* sink) {
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
#define STEP(x) _mm512_dpbf16_ps(x, a, b)
#define ADD _mm512_add_ps
  PEAK_LOOP(ACC24, __m512, _mm512_set1_ps(1e-3f), iters, sink, _mm512_storeu_ps);
#undef STEP
#undef ADD
  return (double)iters * 24 * 16 * 2 * 2;
}

/* AMX: Linux hands out the tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM). */
int amx_request(void) {
  return (int)syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */);
}

struct TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

/* tdpbf16ps on 16x32 bf16 tiles: C[16x16] += A[16x32] B[32x16] = 16*16*32*2 flops each.
 * Four accumulators (tmm0-3) from two A and two B tiles keep the unit busy. */
__attribute__((target("amx-tile,amx-bf16"))) double tdp_amxbf16(int64_t iters, float* sink) {
  static uint16_t a[16 * 32], b[16 * 32];
  static float c[16 * 16];
  for (int i = 0; i < 16 * 32; ++i) a[i] = b[i] = 0x3a83; /* ~1e-3 in bf16 */
  struct TileConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 64);
  _tile_release();
  sink[0] = c[0];
  return (double)iters * 4 * 16 * 16 * 32 * 2;
}
