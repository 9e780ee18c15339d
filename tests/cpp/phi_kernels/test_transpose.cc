// transpose_strided (phi_kernels/cpu/transpose.h), the one transposition behind attention's
// packed K^T, the RNN weights and LAPACK's column-major operands: every value lands in its
// place for ragged shapes (the 8x8 register tiles and their scalar edges), strided source
// and destination rows, and the types that take the scalar path. This file is built for the
// baseline ISA (x86-64-v3, tests/cpp/CMakeLists.txt), so the float tiles run here.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <vector>

#include "phi_kernels/cpu/transpose.h"

namespace oar::phi {
namespace {

template <typename T>
void check_shapes() {
  for (int64_t rows : {0, 1, 7, 8, 9, 23, 64, 257}) {
    for (int64_t cols : {0, 1, 5, 8, 13, 16, 33, 64, 71, 136, 139}) {  // 71+: several 8-column bands and ragged
      const int64_t lds = cols + 3, ldd = rows + 5;  // neither dense
      std::vector<T> src(rows * lds), dst(cols * ldd, T(-1));
      for (size_t i = 0; i < src.size(); ++i) src[i] = T(static_cast<double>(i) + 0.5);
      transpose_strided(src.data(), lds, rows, cols, dst.data(), ldd);
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < ldd; ++r) {
          const T want = r < rows ? src[r * lds + c] : T(-1);  // the padding is not written
          ASSERT_EQ(dst[c * ldd + r], want) << "rows " << rows << " cols " << cols << " at (" << r << ", " << c << ")";
        }
      }
    }
  }
}

TEST(TransposeStrided, FloatTilesAndEdges) { check_shapes<float>(); }
TEST(TransposeStrided, Double) { check_shapes<double>(); }
TEST(TransposeStrided, Complex) { check_shapes<std::complex<double>>(); }

TEST(TransposeStrided, AttentionKeysLayout) {  // a head's keys in [S, H, D]: rows H * D apart
  const int64_t S = 45, H = 3, D = 12, ldkt = 48;
  std::vector<float> k(S * H * D), kt(D * ldkt, -1.0f);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i);
  transpose_strided(k.data() + 2 * D, H * D, S, D, kt.data(), ldkt);  // head 2
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t j = 0; j < S; ++j) ASSERT_EQ(kt[d * ldkt + j], k[j * H * D + 2 * D + d]);
  }
}

}  // namespace
}  // namespace oar::phi
