/* FMA throughput loops for bench/peak.py, one per ISA, each compiled for its ISA with a
 * target attribute so the file builds with plain `cc -O2`; peak.py calls only the ones
 * cpuid says the CPU has. Each returns the number of floating-point operations it did. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Twelve named accumulators (more than FMA latency x FMA pipes on any current x86 core),
 * kept in registers by an empty asm that claims to change them every iteration, so the
 * compiler can neither spill them nor fold the chains. STEP(a) is one FMA-class
 * instruction; ADD sums two accumulators at the end. */
#define kAcc 12
#define PEAK_LOOP(V, INIT, STEP, ADD, iters, sink, store)                                  \
  V a0 = INIT, a1 = INIT, a2 = INIT, a3 = INIT, a4 = INIT, a5 = INIT, a6 = INIT, a7 = INIT, \
    a8 = INIT, a9 = INIT, a10 = INIT, a11 = INIT;                                          \
  for (int64_t it = 0; it < iters; ++it) {                                                 \
    a0 = STEP(a0); a1 = STEP(a1); a2 = STEP(a2); a3 = STEP(a3); a4 = STEP(a4);            \
    a5 = STEP(a5); a6 = STEP(a6); a7 = STEP(a7); a8 = STEP(a8); a9 = STEP(a9);            \
    a10 = STEP(a10); a11 = STEP(a11);                                                      \
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),      \
                     "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));        \
  }                                                                                        \
  store(sink, ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))),       \
                  ADD(ADD(a8, a9), ADD(a10, a11))))

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters, float* sink) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#define STEP(x) _mm256_fmadd_ps(x, a, b)
  PEAK_LOOP(__m256, _mm256_set1_ps(1e-3f), STEP, _mm256_add_ps, iters, sink, _mm256_storeu_ps);
#undef STEP
  return (double)iters * kAcc * 8 * 2;
}

__attribute__((target("avx512f"))) double fma_avx512(int64_t iters, float* sink) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#define STEP(x) _mm512_fmadd_ps(x, a, b)
  PEAK_LOOP(__m512, _mm512_set1_ps(1e-3f), STEP, _mm512_add_ps, iters, sink, _mm512_storeu_ps);
#undef STEP
  return (double)iters * kAcc * 16 * 2;
}

/* vdpbf16ps: 16 lanes x 2 bf16 products accumulated in fp32 = 64 flops per instruction. */
__attribute__((target("avx512f,avx512bf16"))) double dot_avx512bf16(int64_t iters, float* sink) {
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
#define STEP(x) _mm512_dpbf16_ps(x, a, b)
  PEAK_LOOP(__m512, _mm512_set1_ps(1e-3f), STEP, _mm512_add_ps, iters, sink, _mm512_storeu_ps);
#undef STEP
  return (double)iters * kAcc * 16 * 2 * 2;
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
