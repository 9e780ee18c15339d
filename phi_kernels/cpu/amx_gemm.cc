// bf16 and int8 GEMMs on AMX tiles (Note [AMX GEMM], docs/notes/gemm_backends.md).
//
// Only the functions marked OAR_AMX are compiled for AMX/AVX-512. They live in this file's
// anonymous namespace (their template instances too) and call no inline function of a
// header that they would instantiate with AMX code: the linker could otherwise keep such a
// copy for the baseline's callers. The driver below them is baseline code: it asks the CPU,
// owns the scratch memory and splits the work.
#include "phi_kernels/funcs/amx_gemm.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/scratch.h"

#define OAR_AMX __attribute__((target("amx-tile,amx-bf16,amx-int8,avx512f,avx512bw,avx512vl,avx512bf16")))

namespace oar::phi {
namespace {

// The two element kinds. A tile row is 64 bytes: kStep values of K in an A tile; in a B tile
// row r holds, for each of 16 columns, the kGroup values k0 + kGroup r ... of that column side
// by side (AMX's "VNNI" layout: pairs of bf16, quads of int8), 4 bytes a column either way.
struct Bf16Kind {
  using In = uint16_t;
  using Acc = float;
  using Out = uint16_t;
  static constexpr int64_t kStep = 32, kGroup = 2;
};
// bf16 products kept in float (the attention kernel's scores and P V: Note [bf16 attention
// on AMX], attention_kernels.cc).
struct Bf16F32Kind {
  using In = uint16_t;
  using Acc = float;
  using Out = float;
  static constexpr int64_t kStep = 32, kGroup = 2;
};
struct Int8Kind {
  using In = int8_t;
  using Acc = int32_t;
  using Out = int32_t;
  static constexpr int64_t kStep = 64, kGroup = 4;
};

// Blocking (Note [AMX GEMM]): a 32 x 32 block of C lives in four accumulator tiles while a K
// block of 8 tile steps streams through it; the A block of that K block (32 rows x 512 bytes
// = 16 KiB) stays in L1 across the panel's column strips, the packed B panel (K x nc, nc <=
// kNc chosen so that it is at most 1 MiB: 256 columns up to 2048 bf16 of K, 128 at 4096) in
// L2, and the strip's partial sums (32 x nc) in L1/L2 between K blocks. A strip runs all its
// K blocks before the next strip, so packed A is read front to back.
constexpr int64_t kBlockSteps = 8;
constexpr int64_t kNc = 256;  // multiple of 32
constexpr int64_t kPanelBytes = int64_t{1} << 20;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The columns of a B panel for a K padded to Kp: kNc, fewer where the panel would pass
// kPanelBytes.
template <class T>
int64_t panel_cols(int64_t Kp) {
  return std::clamp<int64_t>(kPanelBytes / (static_cast<int64_t>(sizeof(typename T::In)) * Kp) / 32 * 32, 32, kNc);
}

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

// 16 columns of kGroup consecutive rows (ld apart) interleaved into 16 groups of 4 bytes:
// group c holds column c of each row, the first row lowest.
template <class T>
OAR_AMX __m512i groups16(const typename T::In* p, int64_t ld) {
  if constexpr (T::kGroup == 2) {
    const __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    const __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + ld)));
    return _mm512_or_si512(a, _mm512_slli_epi32(b, 16));
  } else {
    __m512i v = _mm512_setzero_si512();
    for (int h = 0; h < 4; ++h) {
      const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + h * ld)));
      v = _mm512_or_si512(v, _mm512_slli_epi32(x, 8 * h));
    }
    return v;
  }
}

// Packed A: strip s (rows 32s..32s+31) at PA + s * 32 * Kp; within it tile step t (kStep
// values of K) holds two 16 x 64-byte tiles (rows 0-15, then 16-31), rows zero-padded past M
// and values past K.
template <class T>
OAR_AMX void pack_a_strip(bool ta, int64_t M, int64_t K, int64_t Kp, const typename T::In* A, int64_t lda, int64_t m0,
                          typename T::In* dst) {
  constexpr int64_t S = T::kStep, G = T::kGroup;
  constexpr int64_t kTile = 16 * S;  // values in a tile
  if (!ta) {
    for (int r = 0; r < 32; ++r) {
      typename T::In* d = dst + (r / 16) * kTile + (r % 16) * S;
      const typename T::In* a = A + (m0 + r) * lda;
      int64_t t = 0;
      if (m0 + r < M) {
        for (; (t + 1) * S <= K; ++t) _mm512_store_si512(d + t * 2 * kTile, _mm512_loadu_si512(a + t * S));
        if (t * S < K) {
          const int64_t bytes = (K - t * S) * static_cast<int64_t>(sizeof(typename T::In));
          const __mmask64 mask = (__mmask64{1} << bytes) - 1u;
          _mm512_store_si512(d + t * 2 * kTile, _mm512_maskz_loadu_epi8(mask, a + t * S));
          ++t;
        }
      }
      for (; t < Kp / S; ++t) _mm512_store_si512(d + t * 2 * kTile, _mm512_setzero_si512());
    }
    return;
  }
  // A stored transposed (K x M): tile step t gathers kStep rows of storage. Whole blocks
  // group kGroup rows per column and transpose the groups; edges go one value at a time.
  for (int64_t t = 0; t < Kp / S; ++t) {
    const int64_t k0 = t * S;
    typename T::In* o = dst + t * 2 * kTile;
    if (k0 + S <= K && m0 + 32 <= M) {
      for (int h = 0; h < 2; ++h) {
        __m512i v[16];
        for (int p = 0; p < 16; ++p) v[p] = groups16<T>(A + (k0 + G * p) * lda + m0 + 16 * h, lda);
        transpose16(v);
        for (int r = 0; r < 16; ++r) _mm512_store_si512(o + h * kTile + r * S, v[r]);
      }
      continue;
    }
    for (int r = 0; r < 32; ++r) {
      typename T::In* d = o + (r / 16) * kTile + (r % 16) * S;
      for (int64_t c = 0; c < S; ++c) {
        const int64_t k = k0 + c, m = m0 + r;
        d[c] = k < K && m < M ? A[k * lda + m] : typename T::In{0};
      }
    }
  }
}

// Packed B panel (columns n0..n0+nc, padded to ncp, a multiple of 32): the K block starting
// at kb (kc values) at P + kb * ncp; within it strip j (32 columns) at j * kc * 32, and tile
// step t of the block holds two 16 x 64-byte tiles (columns 0-15, then 16-31) in the group
// layout: tile row r, value G c + h = B[k0 + G r + h][column c].
template <class T>
OAR_AMX void pack_b_panel(bool tb, int64_t K, int64_t Kp, const typename T::In* B, int64_t ldb, int64_t n0, int64_t nc,
                          int64_t ncp, typename T::In* P) {
  constexpr int64_t S = T::kStep, G = T::kGroup, kc_max = kBlockSteps * S;
  constexpr int64_t kTile = 16 * S;
  for (int64_t kb = 0; kb < Kp; kb += kc_max) {
    const int64_t kc = std::min(kc_max, Kp - kb);
    for (int64_t g = 0; g < ncp / 16; ++g) {  // 16-column groups
      const int64_t j = g / 2, half = g % 2, c0 = g * 16;
      const int64_t valid = std::max<int64_t>(0, std::min<int64_t>(16, nc - c0));
      for (int64_t t = 0; t < kc / S; ++t) {
        typename T::In* tile = P + kb * ncp + j * kc * 32 + t * 2 * kTile + half * kTile;
        const int64_t k0 = kb + t * S;
        if (valid == 16 && k0 + S <= K) {
          if (!tb) {
            for (int r = 0; r < 16; ++r) {
              _mm512_store_si512(tile + r * S, groups16<T>(B + (k0 + G * r) * ldb + n0 + c0, ldb));
            }
          } else {  // column c's kStep values of K are 16 groups side by side: transpose
            __m512i v[16];
            for (int c = 0; c < 16; ++c) v[c] = _mm512_loadu_si512(B + (n0 + c0 + c) * ldb + k0);
            transpose16(v);
            for (int r = 0; r < 16; ++r) _mm512_store_si512(tile + r * S, v[r]);
          }
          continue;
        }
        // Edges: one value at a time
        std::memset(tile, 0, 1024);
        const int64_t k1 = std::min(K, k0 + S);
        for (int64_t c = 0; c < valid; ++c) {
          for (int64_t k = k0; k < k1; ++k) {
            const int64_t n = n0 + c0 + c;
            tile[((k - k0) / G) * S + G * c + (k - k0) % G] = tb ? B[n * ldb + k] : B[k * ldb + n];
          }
        }
      }
    }
  }
}

// Rows [0, rows) x columns [0, cols) of C from the accumulator block `acc` (32 x 32: four
// 16 x 16 tiles, row-major within each): bf16 rounded to nearest even, int32 as they are.
template <class T>
OAR_AMX void store_c(const typename T::Acc* acc, int64_t rows, int64_t cols, typename T::Out* C, int64_t ldc) {
  for (int t = 0; t < 4; ++t) {
    const int64_t r0 = (t / 2) * 16, c0 = (t % 2) * 16;
    if (r0 >= rows || c0 >= cols) continue;
    const int64_t nr = std::min<int64_t>(16, rows - r0), ncol = std::min<int64_t>(16, cols - c0);
    const __mmask16 mask = ncol == 16 ? __mmask16(0xffff) : __mmask16((1u << ncol) - 1u);
    for (int64_t r = 0; r < nr; ++r) {
      typename T::Out* out = C + (r0 + r) * ldc + c0;
      if constexpr (std::is_same_v<typename T::Out, float>) {
        _mm512_mask_storeu_ps(out, mask, _mm512_load_ps(acc + t * 256 + r * 16));
      } else if constexpr (T::kGroup == 2) {
        const __m256bh v = _mm512_cvtneps_pbh(_mm512_load_ps(acc + t * 256 + r * 16));
        _mm256_mask_storeu_epi16(out, mask, reinterpret_cast<__m256i>(v));
      } else {
        _mm512_mask_storeu_epi32(out, mask, _mm512_load_si512(acc + t * 256 + r * 16));
      }
    }
  }
}

// One worker's share: row strips [s0, s1) (of 32 rows) x column panels [p0, p1) (of `nc`).
template <class T>
struct AmxJob {
  bool tb;
  int64_t M, N, K, Kp, nc;   // nc: the columns of a full panel
  const typename T::In* PA;  // packed A, all strips
  const typename T::In* B;
  int64_t ldb;
  typename T::Out* C;
  int64_t ldc;
  typename T::In* PB;    // scratch: K x nc packed panel
  typename T::Acc* acc;  // scratch: 32 x nc partial sums
};

// c += a b on tiles (tile numbers are immediates)
#define OAR_TILE_DP(T, c, a, b)   \
  do {                            \
    if constexpr (T::kGroup == 2) \
      _tile_dpbf16ps(c, a, b);    \
    else                          \
      _tile_dpbssd(c, a, b);      \
  } while (0)

template <class T>
OAR_AMX void amx_run(const AmxJob<T>& j, int64_t s0, int64_t s1, int64_t p0, int64_t p1) {
  constexpr int64_t S = T::kStep, kc_max = kBlockSteps * S;
  constexpr int64_t kTile = 16 * S;
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
    pack_b_panel<T>(j.tb, j.K, Kp, j.B, j.ldb, n0, nc, ncp, j.PB);
    for (int64_t s = s0; s < s1; ++s) {
      for (int64_t kb = 0; kb < Kp; kb += kc_max) {
        const int64_t kc = std::min(kc_max, Kp - kb), steps = kc / S;
        const bool first = kb == 0, last = kb + kc == Kp;
        const typename T::In* a = j.PA + s * 32 * Kp + kb * 32;
        // The next A block (this strip's next K block, or the next strip's first) follows
        // this one in memory: each column strip fetches its share into L2 as it computes.
        const int64_t share = steps * 2048 / (ncp / 32), lines = share / 64 / steps;
        for (int64_t jj = 0; jj < ncp / 32; ++jj) {
          typename T::Acc* c = j.acc + jj * 1024;
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
          const typename T::In* b = j.PB + kb * ncp + jj * kc * 32;
          const char* next = reinterpret_cast<const char*>(a + kc * 32) + jj * share;
          for (int64_t t = 0; t < steps; ++t) {
            for (int64_t l = 0; l < lines; ++l) _mm_prefetch(next + (t * lines + l) * 64, _MM_HINT_T1);
            // Loads ordered so each tile is refilled right after its last reader issues.
            _tile_loadd(6, b + t * 2 * kTile, 64);
            _tile_loadd(4, a + t * 2 * kTile, 64);
            OAR_TILE_DP(T, 0, 4, 6);
            _tile_loadd(7, b + t * 2 * kTile + kTile, 64);
            OAR_TILE_DP(T, 1, 4, 7);
            _tile_loadd(5, a + t * 2 * kTile + kTile, 64);
            OAR_TILE_DP(T, 2, 5, 6);
            OAR_TILE_DP(T, 3, 5, 7);
          }
          _tile_stored(0, c, 64);
          _tile_stored(1, c + 256, 64);
          _tile_stored(2, c + 512, 64);
          _tile_stored(3, c + 768, 64);
          if (last) {
            const int64_t m = s * 32, n = n0 + jj * 32;
            store_c<T>(c, std::min<int64_t>(32, j.M - m), std::min<int64_t>(32, j.N - n), j.C + m * j.ldc + n, j.ldc);
          }
        }
      }
    }
  }
  _tile_release();
}

#undef OAR_TILE_DP

// Linux hands out the AMX tile state only on request (ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); the grant is per process.
bool amx_permitted() {
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// cpuid (AMX tiles, the dot product `dot` = "bf16" | "int8", AVX-512 for the packing) and the
// kernel's grant of the tile state.
bool amx_supported(const char* dot) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         (std::strcmp(dot, "bf16") == 0 ? __builtin_cpu_supports("amx-bf16") && __builtin_cpu_supports("avx512bf16")
                                        : __builtin_cpu_supports("amx-int8")) &&
         amx_permitted();
}

// A product's cost in parallel_for's units: one core's AMX runs about 650 bf16 multiply-adds
// per ns (1.3 TFLOP/s) against the pool's calibration add of ~5.5 per ns (Note [GEMM splits
// on the pool]), so M N K / 120; taken as / 200 to leave the packing out. int8 runs twice
// as many multiply-adds per instruction.
int64_t amx_cost(int64_t M, int64_t N, int64_t K) {
  const double f = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) / 200.0;
  return f >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(f);
}

template <class T>
void amx_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const typename T::In* A, int64_t lda,
              const typename T::In* B, int64_t ldb, typename T::Out* C, int64_t ldc, int64_t cost) {
  using In = typename T::In;
  if (M <= 0 || N <= 0) return;
  const int64_t Kp = round_up(std::max<int64_t>(K, 1), T::kStep), nc = panel_cols<T>(Kp);
  const int64_t strips = (M + 31) / 32, panels = (N + nc - 1) / nc;
  thread_local Scratch a_scratch;
  auto* PA = static_cast<In*>(a_scratch.get(static_cast<size_t>(strips) * 32 * Kp * sizeof(In), "matmul (AMX)"));
  parallel_for(
      strips,
      [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) pack_a_strip<T>(ta, M, K, Kp, A, lda, s * 32, PA + s * 32 * Kp);
      },
      cost / 64);
  const AmxJob<T> job{tb, M, N, K, Kp, nc, PA, B, ldb, C, ldc, nullptr, nullptr};
  auto run = [&](int64_t s0, int64_t s1, int64_t p0, int64_t p1) {
    thread_local Scratch pb, acc;
    AmxJob<T> j = job;
    j.PB = static_cast<In*>(pb.get(static_cast<size_t>(Kp) * nc * sizeof(In), "matmul (AMX)"));
    j.acc = static_cast<typename T::Acc*>(acc.get(static_cast<size_t>(32) * nc * 4, "matmul (AMX)"));
    amx_run<T>(j, s0, s1, p0, p1);
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

}  // namespace

bool amx_bf16_supported() {
  static const bool ok = amx_supported("bf16");
  return ok;
}

bool amx_int8_supported() {
  static const bool ok = amx_supported("int8");
  return ok;
}

void amx_bf16gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B,
                  int64_t ldb, uint16_t* C, int64_t ldc) {
  amx_gemm<Bf16Kind>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, amx_cost(M, N, K));
}

void amx_bf16gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                      const uint16_t* B, int64_t ldb, float* C, int64_t ldc) {
  amx_gemm<Bf16F32Kind>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, amx_cost(M, N, K));
}

void amx_s8gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int8_t* A, int64_t lda, const int8_t* B,
                int64_t ldb, int32_t* C, int64_t ldc) {
  amx_gemm<Int8Kind>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, amx_cost(M, N, K) / 2);
}

}  // namespace oar::phi
