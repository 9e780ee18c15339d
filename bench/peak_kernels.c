/* FMA throughput loops for bench/peak.py, one per ISA, each compiled for its ISA with a
 * target attribute so the file builds with plain `cc -O2`; peak.py calls only the ones
 * cpuid says the CPU has. Each loop keeps kAcc independent accumulators in flight (more
 * than FMA latency x ports on any current x86 core) and returns a value derived from them
 * so the compiler cannot drop the work. Returns the number of floating-point operations. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define kAcc 12

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters, float* sink) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps((float)i * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" ::: "memory");  /* keep the loop from being collapsed */
  }
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(sink, s);
  return (double)iters * kAcc * 8 * 2;
}

__attribute__((target("avx512f"))) double fma_avx512(int64_t iters, float* sink) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps((float)i * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" ::: "memory");
  }
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(sink, s);
  return (double)iters * kAcc * 16 * 2;
}

/* vdpbf16ps: 16 lanes x 2 bf16 products accumulated in fp32 = 64 flops per instruction. */
__attribute__((target("avx512f,avx512bf16"))) double dot_avx512bf16(int64_t iters, float* sink) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps((float)i * 1e-3f);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __asm__ volatile("" ::: "memory");
  }
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(sink, s);
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
