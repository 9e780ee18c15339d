#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "paddle_core/meta/view_meta.h"
#include "paddle_core/tensor/dense_tensor.h"

namespace oar {
namespace {

// A contiguous float64 tensor holding 0, 1, 2, ...
DenseTensor iota(const Dims& dims, DataType dtype = DataType::FLOAT64) {
  DenseTensor t(dims, DataType::FLOAT64);
  double* p = t.alloc<double>();
  std::iota(p, p + t.numel(), 0.0);
  if (dtype == DataType::FLOAT64) return t;
  DenseTensor out(dims, dtype);
  out.alloc();
  copy_into(t, &out);
  return out;
}

// Elements of `t` in row-major logical order, read through its strides.
std::vector<double> values(const DenseTensor& t) {
  DenseTensor c(t.dims(), DataType::FLOAT64);
  c.alloc();
  copy_into(t, &c);
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

TEST(DenseTensor, ContiguousStrides) {
  DenseTensor t({2, 3, 4}, DataType::FLOAT32);
  EXPECT_EQ(t.strides(), (Dims{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.initialized());
  t.alloc();
  EXPECT_TRUE(t.initialized());
  EXPECT_EQ(t.span_bytes(), 24u * 4u);
  EXPECT_EQ(contiguous_strides(Dims{}), Dims{});
  EXPECT_EQ(contiguous_strides(Dims{3, 0, 2}), (Dims{2, 2, 1}));
  DenseTensor s({}, DataType::INT64);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(DenseTensor({0, 5}, DataType::FLOAT32).span_bytes(), 0u);
}

TEST(DenseTensor, IsContiguousIgnoresSizeOneDims) {
  DenseTensor t = iota({3, 1, 4});
  t.set_view({3, 1, 4}, {4, 99, 1}, 0);  // the stride of a size-1 dim never matters
  EXPECT_TRUE(t.is_contiguous());
  t.set_view({3, 4}, {1, 3}, 0);
  EXPECT_FALSE(t.is_contiguous());
}

TEST(DenseTensor, SetDimsDropsStorageThatIsTooSmall) {
  DenseTensor t = iota({2, 3});
  auto storage = t.storage();
  t.set_dims({3, 2});
  EXPECT_EQ(t.storage(), storage);
  t.set_dims({4, 4});
  EXPECT_FALSE(t.initialized());
  EXPECT_THROW(t.set_dims({-1}), Error);
}

TEST(Views, Transpose) {
  DenseTensor x = iota({2, 3});
  DenseTensor t = TransposeView(x, {1, 0});
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_EQ(t.dims(), (Dims{3, 2}));
  EXPECT_EQ(t.strides(), (Dims{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(values(TransposeView(x, {-1, 0})), values(t));
  EXPECT_THROW(TransposeView(x, {0, 0}), Error);
  EXPECT_THROW(TransposeView(x, {0}), Error);
  EXPECT_THROW(TransposeView(x, {0, 2}), Error);
}

TEST(Views, Slice) {
  DenseTensor x = iota({4, 5});
  DenseTensor s = SliceView(x, {1}, {1}, {5}, {2});  // x[:, 1:5:2]
  EXPECT_EQ(s.storage(), x.storage());
  EXPECT_EQ(s.dims(), (Dims{4, 2}));
  EXPECT_EQ(s.strides(), (Dims{5, 2}));
  EXPECT_EQ(s.offset(), 1);
  EXPECT_EQ(values(s), (std::vector<double>{1, 3, 6, 8, 11, 13, 16, 18}));
  DenseTensor r = SliceView(x, {0, 1}, {-1, 4}, {-100, -100}, {-2, -3});  // x[::-2, 4::-3]
  EXPECT_EQ(r.dims(), (Dims{2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{19, 16, 9, 6}));
  DenseTensor e = SliceView(x, {0}, {3}, {1}, {});  // empty, clamped
  EXPECT_EQ(e.numel(), 0);
  DenseTensor c = SliceView(x, {0}, {-2}, {100}, {});  // x[-2:100]
  EXPECT_EQ(values(c).front(), 10);
  EXPECT_EQ(c.dims(), (Dims{2, 5}));
  EXPECT_THROW(SliceView(x, {0}, {0}, {1}, {0}), Error);
  EXPECT_EQ(values(SelectView(x, 1, -1)), (std::vector<double>{4, 9, 14, 19}));
  EXPECT_THROW(SelectView(x, 0, 4), Error);
}

TEST(Views, Expand) {
  DenseTensor x = iota({3, 1});
  DenseTensor e = ExpandView(x, {2, 3, 4});
  EXPECT_EQ(e.storage(), x.storage());
  EXPECT_EQ(e.strides(), (Dims{0, 1, 0}));
  EXPECT_FALSE(e.is_contiguous());
  auto v = values(e);
  EXPECT_EQ(v.size(), 24u);
  EXPECT_EQ(v[4 * 2 + 3], 2.0);
  EXPECT_EQ(v[12 + 4 + 1], 1.0);
  EXPECT_EQ(ExpandView(x, {-1, 5}).dims(), (Dims{3, 5}));
  EXPECT_THROW(ExpandView(x, {2, 4}), Error);
  EXPECT_THROW(ExpandView(x, {5}), Error);
}

TEST(Views, ReshapeIsAViewWhenStridesAllow) {
  DenseTensor x = iota({2, 3, 4});
  DenseTensor r = ReshapeView(x, {6, -1});
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_EQ(r.dims(), (Dims{6, 4}));
  EXPECT_EQ(ReshapeView(x, {0, 12}).dims(), (Dims{2, 12}));  // 0 copies the input's dim
  // A transpose of the two leading dims can still be merged with the last one ...
  DenseTensor t = TransposeView(x, {1, 0, 2});
  DenseTensor split = ReshapeView(t, {3, 2, 2, 2});
  EXPECT_EQ(split.storage(), x.storage());
  EXPECT_EQ(values(split), values(t));
  // ... but flattening it needs a copy, with the elements in logical order.
  DenseTensor flat = ReshapeView(t, {24});
  EXPECT_NE(flat.storage(), x.storage());
  EXPECT_TRUE(flat.is_contiguous());
  EXPECT_EQ(values(flat), values(t));
  EXPECT_EQ(values(flat)[4], 12.0);
  EXPECT_THROW(ReshapeView(x, {5, -1}), Error);
  EXPECT_THROW(ReshapeView(x, {-1, -1}), Error);
  EXPECT_THROW(ReshapeView(x, {25}), Error);
  DenseTensor empty = iota({0, 3});
  EXPECT_EQ(ReshapeView(empty, {-1}).dims(), (Dims{0}));
  // 0 copying dim 1 would give [3, 3] (9 != 0 elements): a 0-size target the copy rule
  // cannot meet is taken literally (backward formulas reshape grads to x's exact dims).
  EXPECT_EQ(ReshapeView(empty, {3, 0}).dims(), (Dims{3, 0}));
  EXPECT_THROW(ReshapeView(empty, {3, 1}), Error);
}

TEST(Views, SqueezeUnsqueezeFlatten) {
  DenseTensor x = iota({2, 1, 3});
  EXPECT_EQ(SqueezeView(x, {}).dims(), (Dims{2, 3}));
  EXPECT_EQ(SqueezeView(x, {0}).dims(), (Dims{2, 1, 3}));  // Paddle ignores non-1 dims
  DenseTensor u = UnsqueezeView(x, {0, -1});
  EXPECT_EQ(u.dims(), (Dims{1, 2, 1, 3, 1}));
  EXPECT_EQ(u.storage(), x.storage());
  EXPECT_EQ(values(u), values(x));
  EXPECT_EQ(FlattenView(x, 0, -1).dims(), (Dims{6}));
  EXPECT_EQ(FlattenView(iota({}), 0, -1).dims(), (Dims{1}));
}

TEST(CopyInto, ConvertsDtypes) {
  DenseTensor src({4}, DataType::FLOAT32);
  float* p = src.alloc<float>();
  p[0] = -1.75f, p[1] = 0.0f, p[2] = 2.5f, p[3] = 65504.0f;
  DenseTensor i32({4}, DataType::INT32);
  i32.alloc();
  copy_into(src, &i32);
  EXPECT_EQ(std::vector<int>(i32.data<int>(), i32.data<int>() + 4),
            (std::vector<int>{-1, 0, 2, 65504}));  // truncation toward zero
  DenseTensor b({4}, DataType::BOOL);
  b.alloc();
  copy_into(src, &b);
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 4),
            (std::vector<bool>{true, false, true, true}));
  DenseTensor h({4}, DataType::FLOAT16);
  h.alloc();
  copy_into(src, &h);
  EXPECT_EQ(static_cast<float>(h.data<float16>()[2]), 2.5f);
  EXPECT_EQ(static_cast<float>(h.data<float16>()[3]), 65504.0f);
  DenseTensor back({4}, DataType::FLOAT64);
  back.alloc();
  copy_into(h, &back);
  EXPECT_EQ(back.data<double>()[0], -1.75);
  DenseTensor bf({4}, DataType::BFLOAT16);
  bf.alloc();
  copy_into(src, &bf);
  EXPECT_EQ(static_cast<float>(bf.data<bfloat16>()[0]), -1.75f);
  DenseTensor wrong({3}, DataType::FLOAT32);
  wrong.alloc();
  EXPECT_THROW(copy_into(src, &wrong), Error);
}

TEST(CopyInto, StridedSourceAndDestination) {
  DenseTensor x = iota({2, 3});
  DenseTensor dst = iota({3, 2}, DataType::INT64);
  DenseTensor dst_t = TransposeView(dst, {1, 0});  // write through a transposed view
  copy_into(x, &dst_t);
  EXPECT_EQ(std::vector<int64_t>(dst.data<int64_t>(), dst.data<int64_t>() + 6),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(Contiguous, CopiesOnlyWhenNeeded) {
  DenseTensor x = iota({3, 4});
  EXPECT_EQ(contiguous(x).storage(), x.storage());
  DenseTensor t = TransposeView(x, {1, 0});
  DenseTensor c = contiguous(t);
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.offset(), 0);
  EXPECT_EQ(c.strides(), (Dims{3, 1}));
  EXPECT_EQ(values(c), values(t));
  DenseTensor s = SliceView(x, {0}, {1}, {3}, {});  // offset view, still contiguous
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(contiguous(s).storage(), x.storage());
  EXPECT_EQ(contiguous(s).data<double>()[0], 4.0);
}

}  // namespace
}  // namespace oar
