// bf16 GEMM on AMX tiles (Note [AMX GEMM], docs/notes/gemm_backends.md).
//
// Only the functions marked OAR_AMX are compiled for AMX/AVX-512; they are static, take raw
// pointers and use no templates, so no inline function of a header is emitted with AMX code
// (the linker could otherwise keep that copy for the baseline's callers). The driver below
// them is baseline code: it asks the CPU, owns the scratch memory and splits the work.
#include "phi_kernels/funcs/amx_gemm.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/parallel.h"

#define OAR_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

namespace oar::phi {
namespace {

// Blocking (Note [AMX GEMM]): a 32 x 32 block of C lives in four accumulator tiles while
// kKc of K stream through it; the A block of that K block (32 x kKc bf16 = 16 KiB) stays in
// L1 across the panel's column strips, the packed B panel (K x nc bf16, nc <= kNc chosen so
// that it is at most 1 MiB: 256 columns up to K 2048, 128 at K 4096) in L2, and the strip's
// partial sums (32 x nc float) in L1/L2 between K blocks. A strip
// runs all its K blocks before the next strip, so packed A is read front to back.
constexpr int64_t kKc = 256;  // multiple of 32
constexpr int64_t kNc = 256;  // multiple of 32
constexpr int64_t kPanelBytes = int64_t{1} << 20;

// The columns of a B panel for this K: kNc, fewer where the panel would pass kPanelBytes.
int64_t panel_cols(int64_t Kp) { return std::clamp<int64_t>(kPanelBytes / (2 * Kp) / 32 * 32, 32, kNc); }

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Transposes a 16 x 16 block of 32-bit values held as 16 rows.
OAR_AMX void transpose16(__m512i* r) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int q = 0; q < 4; ++q) {  // 128-bit lanes: rows 4i..4i+3 of column 4L+q in lane L of u[4i+q]
    t[q] = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x88);
    t[4 + q] = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xdd);
    t[8 + q] = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x88);
    t[12 + q] = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xdd);
  }
  for (int q = 0; q < 4; ++q) {
    r[q] = _mm512_shuffle_i32x4(t[q], t[8 + q], 0x88);
    r[8 + q] = _mm512_shuffle_i32x4(t[q], t[8 + q], 0xdd);
    r[4 + q] = _mm512_shuffle_i32x4(t[4 + q], t[12 + q], 0x88);
    r[12 + q] = _mm512_shuffle_i32x4(t[4 + q], t[12 + q], 0xdd);
  }
}

// 16 bf16 of row `lo` and of row `hi` interleaved into 16 pairs (lo in the low half).
OAR_AMX __m512i pairs16(const uint16_t* lo, const uint16_t* hi) {
  const __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo)));
  const __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)));
  return _mm512_or_si512(a, _mm512_slli_epi32(b, 16));
}

// Packed A: strip s (rows 32s..32s+31) at PA + s * 32 * Kp; within it k-step t (32 of K)
// holds two 16 x 32 tiles (rows 0-15, then 16-31), 1024 elements, rows zero-padded past M
// and columns past K.
OAR_AMX void pack_a_strip(bool ta, int64_t M, int64_t K, int64_t Kp, const uint16_t* A, int64_t lda, int64_t m0,
                          uint16_t* dst) {
  if (!ta) {
    for (int r = 0; r < 32; ++r) {
      uint16_t* d = dst + (r / 16) * 512 + (r % 16) * 32;
      const uint16_t* a = A + (m0 + r) * lda;
      int64_t t = 0;
      if (m0 + r < M) {
        for (; (t + 1) * 32 <= K; ++t) _mm512_store_si512(d + t * 1024, _mm512_loadu_si512(a + t * 32));
        if (t * 32 < K) {
          const __mmask32 mask = (1u << (K - t * 32)) - 1u;
          _mm512_store_si512(d + t * 1024, _mm512_maskz_loadu_epi16(mask, a + t * 32));
          ++t;
        }
      }
      for (; t < Kp / 32; ++t) _mm512_store_si512(d + t * 1024, _mm512_setzero_si512());
    }
    return;
  }
  // A stored transposed (K x M): k-step t gathers 32 rows of storage. Whole blocks pair
  // rows k, k+1 per column and transpose the pairs; edges go one value at a time.
  for (int64_t t = 0; t < Kp / 32; ++t) {
    const int64_t k0 = t * 32;
    uint16_t* o = dst + t * 1024;
    if (k0 + 32 <= K && m0 + 32 <= M) {
      for (int h = 0; h < 2; ++h) {
        __m512i v[16];
        for (int p = 0; p < 16; ++p) {
          const uint16_t* a = A + (k0 + 2 * p) * lda + m0 + 16 * h;
          v[p] = pairs16(a, a + lda);
        }
        transpose16(v);
        for (int r = 0; r < 16; ++r) _mm512_store_si512(o + h * 512 + r * 32, v[r]);
      }
      continue;
    }
    for (int r = 0; r < 32; ++r) {
      uint16_t* d = o + (r / 16) * 512 + (r % 16) * 32;
      for (int c = 0; c < 32; ++c) {
        const int64_t k = k0 + c, m = m0 + r;
        d[c] = k < K && m < M ? A[k * lda + m] : uint16_t{0};
      }
    }
  }
}

// Packed B panel (columns n0..n0+nc, padded to ncp, a multiple of 32): K block b (rows
// kb..kb+kc) at P + kb * ncp; within it strip j (32 columns) at j * kc * 32, and k-step t
// of the block holds two 16 x 32 tiles (columns 0-15, then 16-31) in AMX's pair layout:
// tile row r, element 2c + h = B[k + 2r + h][column c].
OAR_AMX void pack_b_panel(bool tb, int64_t K, int64_t Kp, const uint16_t* B, int64_t ldb, int64_t n0, int64_t nc,
                          int64_t ncp, uint16_t* P) {
  for (int64_t kb = 0; kb < Kp; kb += kKc) {
    const int64_t kc = std::min(kKc, Kp - kb);
    for (int64_t g = 0; g < ncp / 16; ++g) {  // 16-column groups
      const int64_t j = g / 2, half = g % 2, c0 = g * 16;
      const int64_t valid = std::max<int64_t>(0, std::min<int64_t>(16, nc - c0));
      for (int64_t t = 0; t < kc / 32; ++t) {
        uint16_t* tile = P + kb * ncp + j * kc * 32 + t * 1024 + half * 512;
        const int64_t k0 = kb + t * 32;
        if (valid == 16 && k0 + 32 <= K) {
          if (!tb) {
            for (int r = 0; r < 16; ++r) {
              const uint16_t* b0 = B + (k0 + 2 * r) * ldb + n0 + c0;
              _mm512_store_si512(tile + r * 32, pairs16(b0, b0 + ldb));
            }
          } else {  // column c's 32 values of K are 16 pairs side by side: transpose
            __m512i v[16];
            for (int c = 0; c < 16; ++c) v[c] = _mm512_loadu_si512(B + (n0 + c0 + c) * ldb + k0);
            transpose16(v);
            for (int r = 0; r < 16; ++r) _mm512_store_si512(tile + r * 32, v[r]);
          }
          continue;
        }
        // Edges: one value at a time
        std::memset(tile, 0, 1024);
        if (tb) {
          for (int64_t c = 0; c < valid; ++c) {
            const uint16_t* col = B + (n0 + c0 + c) * ldb;
            for (int64_t k = k0; k < std::min(K, k0 + 32); ++k)
              tile[((k - k0) / 2) * 32 + 2 * c + (k - k0) % 2] = col[k];
          }
        } else {
          for (int64_t k = k0; k < std::min(K, k0 + 32); ++k) {
            const uint16_t* row = B + k * ldb + n0 + c0;
            for (int64_t c = 0; c < valid; ++c) tile[((k - k0) / 2) * 32 + 2 * c + (k - k0) % 2] = row[c];
          }
        }
      }
    }
  }
}

// Rows [m0, m0 + rows) x columns [n0, n0 + cols) of C from the float block `acc` (32 x 32:
// four 16 x 16 tiles, row-major within each), rounded to nearest even.
OAR_AMX void store_c(const float* acc, int64_t rows, int64_t cols, uint16_t* C, int64_t ldc) {
  for (int t = 0; t < 4; ++t) {
    const int64_t r0 = (t / 2) * 16, c0 = (t % 2) * 16;
    if (r0 >= rows || c0 >= cols) continue;
    const int64_t nr = std::min<int64_t>(16, rows - r0), ncol = std::min<int64_t>(16, cols - c0);
    const __mmask16 mask = ncol == 16 ? __mmask16(0xffff) : __mmask16((1u << ncol) - 1u);
    for (int64_t r = 0; r < nr; ++r) {
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_load_ps(acc + t * 256 + r * 16));
      _mm256_mask_storeu_epi16(C + (r0 + r) * ldc + c0, mask, reinterpret_cast<__m256i>(v));
    }
  }
}

// One worker's share: row strips [s0, s1) (of 32 rows) x column panels [p0, p1) (of `nc`).
struct AmxJob {
  bool tb;
  int64_t M, N, K, Kp, nc;  // nc: the columns of a full panel
  const uint16_t* PA;       // packed A, all strips
  const uint16_t* B;
  int64_t ldb;
  uint16_t* C;
  int64_t ldc;
  uint16_t* PB;  // scratch: K x nc packed panel
  float* acc;    // scratch: 32 x nc partial sums
};

OAR_AMX void amx_run(const AmxJob& j, int64_t s0, int64_t s1, int64_t p0, int64_t p1) {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  const int64_t Kp = j.Kp;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * j.nc, nc = std::min(j.nc, j.N - n0), ncp = round_up(nc, 32);
    pack_b_panel(j.tb, j.K, Kp, j.B, j.ldb, n0, nc, ncp, j.PB);
    for (int64_t s = s0; s < s1; ++s) {
      for (int64_t kb = 0; kb < Kp; kb += kKc) {
        const int64_t kc = std::min(kKc, Kp - kb), steps = kc / 32;
        const bool first = kb == 0, last = kb + kc == Kp;
        const uint16_t* a = j.PA + s * 32 * Kp + kb * 32;
        // The next A block (this strip's next K block, or the next strip's first) follows
        // this one in memory: each column strip fetches its share into L2 as it computes.
        const int64_t share = kc * 64 / (ncp / 32), lines = share / 64 / steps;
        for (int64_t jj = 0; jj < ncp / 32; ++jj) {
          float* c = j.acc + jj * 1024;
          if (first) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
          } else {
            _tile_loadd(0, c, 64);
            _tile_loadd(1, c + 256, 64);
            _tile_loadd(2, c + 512, 64);
            _tile_loadd(3, c + 768, 64);
          }
          const uint16_t* b = j.PB + kb * ncp + jj * kc * 32;
          const char* next = reinterpret_cast<const char*>(a + kc * 32) + jj * share;
          for (int64_t t = 0; t < steps; ++t) {
            for (int64_t l = 0; l < lines; ++l) _mm_prefetch(next + (t * lines + l) * 64, _MM_HINT_T1);
            // Loads ordered so each tile is refilled right after its last reader issues.
            _tile_loadd(6, b + t * 1024, 64);
            _tile_loadd(4, a + t * 1024, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, b + t * 1024 + 512, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, a + t * 1024 + 512, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
          _tile_stored(0, c, 64);
          _tile_stored(1, c + 256, 64);
          _tile_stored(2, c + 512, 64);
          _tile_stored(3, c + 768, 64);
          if (last) {
            const int64_t m = s * 32, n = n0 + jj * 32;
            store_c(c, std::min<int64_t>(32, j.M - m), std::min<int64_t>(32, j.N - n), j.C + m * j.ldc + n, j.ldc);
          }
        }
      }
    }
  }
  _tile_release();
}

// Linux hands out the AMX tile state only on request (ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); the grant is per process.
bool amx_permitted() {
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// 64-byte-aligned scratch kept per thread and grown as needed: fresh pages cost ~11 us each
// to fault in on these machines, so a repeated product must not allocate. A buffer larger
// than kKeep (a product far beyond a model's usual ones) is given back after the call.
struct Scratch {
  static constexpr size_t kKeep = size_t{64} << 20;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> p;
  size_t bytes = 0;
  void* get(size_t need) {
    if (need > bytes) {
      need = round_up(static_cast<int64_t>(need), 4096);
      p.reset(std::aligned_alloc(64, need));
      bytes = p ? need : 0;
      OAR_ENFORCE(p, ResourceExhausted, "matmul: the bf16 AMX GEMM could not allocate ", need,
                  " bytes of packing scratch");
    }
    return p.get();
  }
  void trim() {
    if (bytes > kKeep) p.reset(), bytes = 0;
  }
};

}  // namespace

bool amx_bf16_supported() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
           __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && amx_permitted();
  }();
  return ok;
}

int64_t amx_bf16_cost(int64_t M, int64_t N, int64_t K) {
  // About 1.3 multiply-adds per picosecond on one core, against the pool's calibration add
  // of ~5.5 per ns (Note [GEMM splits on the pool]): 1/200 of the multiply-adds.
  const double f = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) / 200.0;
  return f >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(f);
}

void amx_bf16gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B,
                  int64_t ldb, uint16_t* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const int64_t Kp = round_up(std::max<int64_t>(K, 1), 32), nc = panel_cols(Kp);
  const int64_t strips = (M + 31) / 32, panels = (N + nc - 1) / nc;
  thread_local Scratch a_scratch;
  auto* PA = static_cast<uint16_t*>(a_scratch.get(static_cast<size_t>(strips) * 32 * Kp * 2));
  const int64_t cost = amx_bf16_cost(M, N, K);
  parallel_for(
      strips,
      [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) pack_a_strip(ta, M, K, Kp, A, lda, s * 32, PA + s * 32 * Kp);
      },
      cost / 64);
  const AmxJob job{tb, M, N, K, Kp, nc, PA, B, ldb, C, ldc, nullptr, nullptr};
  auto run = [&](int64_t s0, int64_t s1, int64_t p0, int64_t p1) {
    thread_local Scratch pb, acc;
    AmxJob j = job;
    j.PB = static_cast<uint16_t*>(pb.get(static_cast<size_t>(Kp) * nc * 2));
    j.acc = static_cast<float*>(acc.get(static_cast<size_t>(32) * nc * 4));
    amx_run(j, s0, s1, p0, p1);
    pb.trim();
  };
  // Panels are the unit where there are enough of them (each worker packs its own B
  // panels); otherwise row strips, each worker packing every panel for its rows.
  const int64_t nt = std::max(1, omp_get_max_threads());
  if (panels >= nt) {
    parallel_for(
        panels, [&](int64_t p0, int64_t p1) { run(0, strips, p0, p1); }, cost);
  } else {
    parallel_for(
        strips, [&](int64_t s0, int64_t s1) { run(s0, s1, 0, panels); }, cost);
  }
  a_scratch.trim();
}

}  // namespace oar::phi
