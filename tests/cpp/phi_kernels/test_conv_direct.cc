// The direct convolutions (phi_kernels/funcs/conv_direct.h) against a float64 loop, on
// geometries that reach every tile shape: channel counts that fill 1..6 channels of a
// rows tile and 1 or 2 blocks of a channels tile, rows whose last vector overlaps the
// previous one, output counts that end in a partial tile, padding on some sides only,
// dilation and stride.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "phi_kernels/funcs/conv_direct.h"

namespace oar::phi {
namespace {

struct Case {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
};

ConvGeometry geometry(const Case& k) {
  ConvGeometry g;
  g.batch = k.n, g.in_c = k.c, g.out_c = k.oc;
  g.in[0] = k.h, g.in[1] = k.w, g.k[0] = k.kh, g.k[1] = k.kw;
  g.stride[0] = k.sh, g.stride[1] = k.sw, g.dil[0] = k.dh, g.dil[1] = k.dw;
  g.pad_l[0] = k.pt, g.pad_r[0] = k.pb, g.pad_l[1] = k.pl, g.pad_r[1] = k.pr;
  g.out[0] = g.out_size(0), g.out[1] = g.out_size(1);
  return g;
}

std::vector<double> reference(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
                              const float* bias, bool relu) {
  const int64_t OH = g.out[0], OW = g.out[1], H = g.in[0], W = g.in[1];
  std::vector<double> o(g.batch * g.out_c * OH * OW);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oc = 0; oc < g.out_c; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias ? bias[oc] : 0.0;
          for (int64_t c = 0; c < g.in_c; ++c)
            for (int64_t kh = 0; kh < g.k[0]; ++kh)
              for (int64_t kw = 0; kw < g.k[1]; ++kw) {
                const int64_t ih = oh * g.stride[0] - g.pad_l[0] + kh * g.dil[0];
                const int64_t iw = ow * g.stride[1] - g.pad_l[1] + kw * g.dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x[((n * g.in_c + c) * H + ih) * W + iw]) *
                       w[((oc * g.in_c + c) * g.k[0] + kh) * g.k[1] + kw];
              }
          o[((n * g.out_c + oc) * OH + oh) * OW + ow] = relu && acc < 0 ? 0.0 : acc;
        }
  return o;
}

using Kernel = void (*)(const ConvGeometry&, const float*, const float*, float*, const float*, bool);

void check(const Case& k, Kernel run, bool relu, bool with_bias) {
  const ConvGeometry g = geometry(k);
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.oc * 17 + k.w));
  std::normal_distribution<float> dist;
  std::vector<float> x(g.batch * g.in_c * g.in[0] * g.in[1]), w(g.out_c * g.in_c * g.k[0] * g.k[1]), b(g.out_c);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (float& v : b) v = dist(rng);
  const std::vector<double> ref = reference(g, x, w, with_bias ? b.data() : nullptr, relu);
  std::vector<float> out(ref.size(), std::numeric_limits<float>::quiet_NaN());  // every output written
  run(g, x.data(), w.data(), out.data(), with_bias ? b.data() : nullptr, relu);
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], 1e-4 * (1 + std::abs(ref[i]))) << "output " << i << " of " << ref.size();
}

// n, c, h, w, oc, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr
const Case kRowsCases[] = {
    {3, 1, 28, 28, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // LeNet's first conv: 28 = 3 vectors + an overlapping one
    {2, 2, 9, 8, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // 8 wide: one vector per row; 13 = 6 + 6 + 1 channels
    {1, 3, 7, 21, 5, 2, 4, 1, 1, 1, 1, 0, 1, 2, 0},    // uneven padding, 18-wide rows, 2x4 filter
    {2, 2, 12, 30, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},   // dilation 2
    {1, 4, 5, 16, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    // 1x1
};

// n, c, h, w, oc, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr
const Case kChannelsCases[] = {
    {3, 6, 14, 14, 16, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0},  // LeNet's second conv: 2 blocks, 100 outputs = 16 tiles + 4
    {2, 3, 11, 9, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   // stride 2; 3 blocks = a pair + one block by 12 outputs
    {1, 5, 6, 7, 5, 3, 2, 1, 2, 2, 1, 2, 0, 1, 1},     // one partial block, uneven padding, dilation 2 in height
    {2, 4, 3, 3, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},     // a single output per image; 9 channels: a block and one
};

TEST(ConvDirect, RowsMatchesReference) {
  if (!conv_direct_rows_supported(geometry(kRowsCases[0]))) GTEST_SKIP() << "built without AVX2/FMA";
  for (const Case& k : kRowsCases) {
    ASSERT_TRUE(conv_direct_rows_supported(geometry(k))) << "case with input width " << k.w;
    for (int v = 0; v < 4; ++v) check(k, conv_direct_rows_fwd, v & 1, v & 2);
  }
}

TEST(ConvDirect, ChannelsMatchesReference) {
  if (!conv_direct_channels_supported(geometry(kChannelsCases[0]))) GTEST_SKIP() << "built without AVX2/FMA";
  for (const Case& k : kChannelsCases) {
    ASSERT_TRUE(conv_direct_channels_supported(geometry(k))) << "case with " << k.oc << " output channels";
    for (int v = 0; v < 4; ++v) check(k, conv_direct_channels_fwd, v & 1, v & 2);
  }
}

TEST(ConvDirect, SupportLimits) {
  ConvGeometry g = geometry({1, 1, 28, 28, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
  if (!conv_direct_rows_supported(g)) GTEST_SKIP() << "built without AVX2/FMA";
  ConvGeometry s2 = geometry({1, 1, 28, 28, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1});
  EXPECT_FALSE(conv_direct_rows_supported(s2));  // stride 2: not adjacent inputs
  EXPECT_TRUE(conv_direct_channels_supported(s2));
  EXPECT_FALSE(conv_direct_rows_supported(geometry({1, 1, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1})));  // 7 wide
  ConvGeometry grouped = g;
  grouped.groups = 2, grouped.in_c = 2;
  EXPECT_FALSE(conv_direct_rows_supported(grouped));
  EXPECT_FALSE(conv_direct_channels_supported(grouped));
  ConvGeometry big = geometry({1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_FALSE(conv_direct_rows_supported(big));
  EXPECT_FALSE(conv_direct_channels_supported(big));
  EXPECT_THROW(conv_direct_rows_fwd(s2, nullptr, nullptr, nullptr, nullptr, false), std::exception);
}

}  // namespace
}  // namespace oar::phi
