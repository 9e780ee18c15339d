// The local cuts under every reshard transfer (distributed/reshard/local_copy.h): chunks
// packed for reduce-scatter / all-to-all and unpacked for all-gather, on uneven splits.
#include <gtest/gtest.h>

#include <numeric>

#include "distributed/reshard/local_copy.h"

namespace oar::dist::local {
namespace {

DenseTensor iota(const std::vector<int64_t>& dims) {
  DenseTensor t(Dims(dims), DataType::FLOAT64);
  double* p = t.alloc<double>();
  std::iota(p, p + t.numel(), 0.0);
  return t;
}

std::vector<double> values(const DenseTensor& t) {
  const double* p = t.data<double>();
  return std::vector<double>(p, p + t.numel());
}

TEST(ReshardLocal, SliceAndPad) {
  DenseTensor x = iota({2, 3});  // [[0 1 2] [3 4 5]]
  DenseTensor s = slice(x, 1, 1, 3);
  EXPECT_EQ(s.dims().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(s), (std::vector<double>{1, 2, 4, 5}));
  DenseTensor p = pad(s, 0, 3);
  EXPECT_EQ(values(p), (std::vector<double>{1, 2, 4, 5, 0, 0}));
  EXPECT_EQ(slice(x, 0, 1, 1).numel(), 0);
}

TEST(ReshardLocal, PackUnpackRoundTripUneven) {
  for (int64_t n : {0, 1, 3, 5, 8}) {
    for (int64_t k : {1, 2, 3, 4}) {
      for (int64_t dim : {0, 1}) {
        std::vector<int64_t> dims = {dim == 0 ? n : 2, dim == 1 ? n : 3};
        DenseTensor x = iota(dims);
        DenseTensor packed = pack_chunks(x, dim, k);
        const int64_t c = (n + k - 1) / k;
        EXPECT_EQ(packed.dims()[0], k);
        EXPECT_EQ(packed.dims()[1 + static_cast<int>(dim)], c);
        DenseTensor back = unpack_chunks(packed, dim, k, n);
        EXPECT_EQ(back.dims().vec(), dims) << "n=" << n << " k=" << k << " dim=" << dim;
        EXPECT_EQ(values(back), values(x)) << "n=" << n << " k=" << k << " dim=" << dim;
      }
    }
  }
}

TEST(ReshardLocal, PackedChunksAreShardsZeroPadded) {
  DenseTensor x = iota({5});  // k = 2: chunks [0 1 2] and [3 4 pad]
  DenseTensor packed = pack_chunks(x, 0, 2);
  EXPECT_EQ(values(packed), (std::vector<double>{0, 1, 2, 3, 4, 0}));
}

}  // namespace
}  // namespace oar::dist::local
