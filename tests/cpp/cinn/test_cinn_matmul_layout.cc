// Note [Matmul output layout]: the cinn_matmul_layout pass (program text in, text out),
// phi::matmul_into against a float64 reference (odd sizes, batched and broadcast,
// transposed and strided inputs, padded and permuted outputs, empty products, bad
// arguments), and a program with the rewrite equal to the one without.
#include <cmath>
#include <random>

#include "cinn/pipeline.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/matmul_kernel.h"
#include "pir/executor/executor.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT
using pir::testing::expect_error;

std::string run(const std::string& pass, const std::string& input) {
  auto p = parse_program(IrContext::global(), input);
  PassManager pm;
  pm.add_pass(pass);
  pm.run(*p);
  return p->str();
}

TEST(CinnMatmulLayout, WritesATransposedProductDirectly) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x4xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<2x3x6x4xf32>)
  %p = "pd_op.matmul"(%x, %y) {transpose_x = false, transpose_y = true} : (tensor<2x3x5x4xf32>, tensor<2x3x6x4xf32>) -> (tensor<2x3x5x6xf32>)
  %t = "pd_op.transpose"(%p) {perm = #shape[0, 2, 1, 3]} : (tensor<2x3x5x6xf32>) -> (tensor<2x5x3x6xf32>)
  %r = "pd_op.reshape"(%t) {shape = #shape[2, 5, 18]} : (tensor<2x5x3x6xf32>) -> (tensor<2x5x18xf32>)
  "builtin.output"(%r) {name = "r"} : (tensor<2x5x18xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x4xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<2x3x6x4xf32>)
  %2 = "kernel.compiled_kernel"(%0, %1) {kernel_name = "cinn_matmul_nt_p0_2_1_3"} : (tensor<2x3x5x4xf32>, tensor<2x3x6x4xf32>) -> (tensor<2x5x3x6xf32>)
  %3 = "pd_op.reshape"(%2) {shape = #shape[2, 5, 18]} : (tensor<2x5x3x6xf32>) -> (tensor<2x5x18xf32>)
  "builtin.output"(%3) {name = "r"} : (tensor<2x5x18xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("cinn_matmul_layout", input + 1), expected + 1);
}

// A transpose that moves the columns (each row would be strided), a product with another
// use (it is computed anyway), a 2-D product and mixed dtypes stay.
TEST(CinnMatmulLayout, LeavesOtherTransposesAlone) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x4xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<2x3x4x6xf32>)
  %a = "builtin.input"() {name = "a"} : () -> (tensor<5x4xf32>)
  %b = "builtin.input"() {name = "b"} : () -> (tensor<4x6xf32>)
  %y64 = "builtin.input"() {name = "y64"} : () -> (tensor<2x3x4x6xf64>)
  %p = "pd_op.matmul"(%x, %y) : (tensor<2x3x5x4xf32>, tensor<2x3x4x6xf32>) -> (tensor<2x3x5x6xf32>)
  %t = "pd_op.transpose"(%p) {perm = #shape[0, 1, 3, 2]} : (tensor<2x3x5x6xf32>) -> (tensor<2x3x6x5xf32>)
  %q = "pd_op.matmul"(%x, %y) : (tensor<2x3x5x4xf32>, tensor<2x3x4x6xf32>) -> (tensor<2x3x5x6xf32>)
  %u = "pd_op.transpose"(%q) {perm = #shape[0, 2, 1, 3]} : (tensor<2x3x5x6xf32>) -> (tensor<2x5x3x6xf32>)
  %m = "pd_op.matmul"(%a, %b) : (tensor<5x4xf32>, tensor<4x6xf32>) -> (tensor<5x6xf32>)
  %v = "pd_op.transpose"(%m) {perm = #shape[1, 0]} : (tensor<5x6xf32>) -> (tensor<6x5xf32>)
  %w = "pd_op.matmul"(%x, %y64) : (tensor<2x3x5x4xf32>, tensor<2x3x4x6xf64>) -> (tensor<2x3x5x6xf64>)
  %z = "pd_op.transpose"(%w) {perm = #shape[1, 0, 2, 3]} : (tensor<2x3x5x6xf64>) -> (tensor<3x2x5x6xf64>)
  "builtin.output"(%t) {name = "t"} : (tensor<2x3x6x5xf32>) -> ()
  "builtin.output"(%u) {name = "u"} : (tensor<2x5x3x6xf32>) -> ()
  "builtin.output"(%q) {name = "q"} : (tensor<2x3x5x6xf32>) -> ()
  "builtin.output"(%v) {name = "v"} : (tensor<6x5xf32>) -> ()
  "builtin.output"(%z) {name = "z"} : (tensor<3x2x5x6xf64>) -> ()
}
)IR";
  auto p = parse_program(IrContext::global(), input + 1);
  const std::string before = p->str();
  EXPECT_EQ(run("cinn_matmul_layout", input + 1), before);
}

// The product of x [.., M, K] (or its transpose) and y, in float64, at product index
// (batch b of the broadcast batch, i, j): a[b...] read through each operand's own strides.
double ref_at(const DenseTensor& x, const DenseTensor& y, bool tx, bool ty, const std::vector<int64_t>& idx) {
  const int r = static_cast<int>(idx.size());
  auto get = [](const DenseTensor& t, const std::vector<int64_t>& full_idx, int64_t row, int64_t col) {
    // t's batch dims align right with the product's, broadcast where 1.
    const int tr = t.rank();
    int64_t off = t.offset();
    for (int d = 0; d < tr - 2; ++d) {
      const int64_t i = full_idx[full_idx.size() - 2 - (tr - 2) + d];
      off += (t.dims()[d] == 1 ? 0 : i) * t.strides()[d];
    }
    off += row * t.strides()[tr - 2] + col * t.strides()[tr - 1];
    return t.dtype() == DataType::FLOAT32 ? static_cast<double>(static_cast<const float*>(t.storage()->data())[off])
                                          : static_cast<const double*>(t.storage()->data())[off];
  };
  const int64_t i = idx[r - 2], j = idx[r - 1];
  const int64_t K = tx ? x.dims()[x.rank() - 2] : x.dims()[x.rank() - 1];
  double acc = 0;
  for (int64_t k = 0; k < K; ++k)
    acc += (tx ? get(x, idx, k, i) : get(x, idx, i, k)) * (ty ? get(y, idx, j, k) : get(y, idx, k, j));
  return acc;
}

DenseTensor filled(const std::vector<int64_t>& dims, DataType dt, uint32_t seed) {
  DenseTensor d(Dims(dims), dt);
  d.alloc();
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < d.numel(); ++i) {
    if (dt == DataType::FLOAT32)
      d.data<float>()[i] = static_cast<float>(u(g));
    else
      d.data<double>()[i] = u(g);
  }
  return d;
}

double elem(const DenseTensor& t, int64_t off) {
  return t.dtype() == DataType::FLOAT32 ? static_cast<double>(static_cast<const float*>(t.storage()->data())[off])
                                        : static_cast<const double*>(t.storage()->data())[off];
}

struct Case {
  std::vector<int64_t> xd, yd;  // as stored; tx/ty read them transposed
  bool tx, ty;
  std::vector<int64_t> perm;  // the output layout: product axis perm[i] is buffer axis i
  int64_t pad;                // extra elements per buffer row (a row stride > N)
  bool x_view;                // x read through a transposed view of a [.., K, M] buffer
};

// matmul_into writes every element of the product where the view says and nothing else
// (a padded buffer's gaps keep their sentinel).
void check_case(const Case& c, DataType dt) {
  DenseTensor x = filled(c.xd, dt, 1), y = filled(c.yd, dt, 2);
  if (c.x_view) {  // x's last two dims swapped: a strided view whose columns are not adjacent
    std::vector<int64_t> sd = c.xd;
    std::swap(sd[sd.size() - 1], sd[sd.size() - 2]);
    x = filled(sd, dt, 3);
    Dims st = x.strides();
    std::swap(st[st.size() - 1], st[st.size() - 2]);
    x.set_view(Dims(c.xd), st, 0);
  }
  DenseTensor want;
  MatmulInferMeta(x, y, c.tx, c.ty, &want);
  const int r = want.rank();
  std::vector<int64_t> bd(r);  // the buffer's dims: the product's permuted, rows padded
  for (int i = 0; i < r; ++i) bd[i] = want.dims()[c.perm[i]];
  bd[r - 1] += c.pad;
  DenseTensor buf(Dims(bd), dt);
  buf.alloc();
  for (int64_t i = 0; i < buf.numel(); ++i)
    dt == DataType::FLOAT32 ? void(buf.data<float>()[i] = 7.0f) : void(buf.data<double>()[i] = 7.0);
  std::vector<int64_t> st(r);
  for (int i = 0; i < r; ++i) st[c.perm[i]] = buf.strides()[i];
  DenseTensor view = buf;
  view.set_view(want.dims(), Dims(st), 0);
  phi::matmul_into(x, y, c.tx, c.ty, &view);
  std::vector<char> written(buf.numel(), 0);
  const double tol = dt == DataType::FLOAT32 ? 1e-5 : 1e-12;
  std::vector<int64_t> idx(r, 0);
  for (int64_t n = 0; n < want.numel(); ++n) {
    int64_t rem = n, off = 0;
    for (int d = r - 1; d >= 0; --d) {
      idx[d] = rem % want.dims()[d];
      rem /= want.dims()[d];
      off += idx[d] * st[d];
    }
    written[off] = 1;
    const double e = ref_at(x, y, c.tx, c.ty, idx);
    ASSERT_NEAR(elem(buf, off), e, tol * (1 + std::abs(e))) << "product element " << n;
  }
  for (int64_t i = 0; i < buf.numel(); ++i)
    if (!written[i]) ASSERT_EQ(elem(buf, i), 7.0) << "matmul_into wrote outside the view at " << i;
}

TEST(CinnMatmulLayout, MatmulIntoMatchesFloat64) {
  const std::vector<Case> cases = {
      {{2, 3, 5, 4}, {2, 3, 4, 6}, false, false, {0, 2, 1, 3}, 0, false},  // the attention gradients' layout
      {{2, 3, 5, 4}, {2, 3, 6, 4}, false, true, {0, 2, 1, 3}, 0, false},   // y transposed
      {{2, 3, 4, 5}, {2, 3, 4, 6}, true, false, {0, 2, 1, 3}, 0, false},   // x transposed
      {{3, 7, 5}, {1, 5, 9}, false, false, {1, 0, 2}, 3, false},           // broadcast batch, padded rows
      {{4, 17, 13}, {13, 11}, false, false, {1, 0, 2}, 0, false},          // y without batch dims
      {{4, 17, 13}, {13, 11}, false, false, {0, 1, 2}, 5, false},          // the row fold with a row stride
      {{2, 3, 5, 4}, {3, 4, 6}, false, false, {2, 1, 0, 3}, 1, true},      // strided x, odd permutation
      {{2, 1, 5, 4}, {1, 3, 4, 6}, false, false, {1, 2, 0, 3}, 0, false},  // both batches broadcast
      {{2, 3, 0, 4}, {2, 3, 4, 6}, false, false, {0, 2, 1, 3}, 0, false},  // M = 0
      {{2, 3, 5, 0}, {2, 3, 0, 6}, false, false, {0, 2, 1, 3}, 2, false},  // K = 0: zeros
      {{0, 3, 5, 4}, {0, 3, 4, 6}, false, false, {0, 2, 1, 3}, 0, false},  // no batch
      {{2, 3, 1, 4}, {2, 3, 4, 1}, false, false, {0, 2, 1, 3}, 0, false},  // M = N = 1
  };
  for (DataType dt : {DataType::FLOAT32, DataType::FLOAT64})
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE("case " + std::to_string(i) + (dt == DataType::FLOAT32 ? " f32" : " f64"));
      check_case(cases[i], dt);
    }
}

TEST(CinnMatmulLayout, MatmulIntoRejectsBadArguments) {
  DenseTensor x = filled({2, 3, 4}, DataType::FLOAT32, 1), y = filled({2, 4, 5}, DataType::FLOAT32, 2);
  DenseTensor out({2, 3, 5}, DataType::FLOAT32);
  out.alloc();
  DenseTensor wrong({2, 3, 6}, DataType::FLOAT32);
  wrong.alloc();
  expect_error([&] { phi::matmul_into(x, y, false, false, &wrong); }, "matmul_into: out has shape [2, 3, 6]");
  DenseTensor cols = out;  // columns 3 apart
  DenseTensor big({2, 5, 3}, DataType::FLOAT32);
  big.alloc();
  cols = big;
  cols.set_view(Dims({2, 3, 5}), Dims({15, 1, 3}), 0);
  expect_error([&] { phi::matmul_into(x, y, false, false, &cols); }, "need a unit column stride");
  DenseTensor d64({2, 3, 5}, DataType::FLOAT64);
  d64.alloc();
  expect_error([&] { phi::matmul_into(x, y, false, false, &d64); }, "must have one dtype");
  DenseTensor v = filled({4}, DataType::FLOAT32, 3);
  expect_error([&] { phi::matmul_into(x, v, false, false, &out); }, "rank >= 2");
  DenseTensor y2 = filled({2, 5, 5}, DataType::FLOAT32, 4);
  expect_error([&] { phi::matmul_into(x, y2, false, false, &out); }, "inner dimensions do not match");
}

// The attention gradients' shape of program: the CINN pipeline rewrites the product and
// its transpose, and the program computes what the one without the rewrite does.
TEST(CinnMatmulLayout, TheRewrittenProgramEqualsTheUnfusedOne) {
  const char* text = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x7x5xf64>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<2x3x7x9xf64>)
  %p = "pd_op.matmul"(%x, %y) {transpose_x = true, transpose_y = false} : (tensor<2x3x7x5xf64>, tensor<2x3x7x9xf64>) -> (tensor<2x3x5x9xf64>)
  %t = "pd_op.transpose"(%p) {perm = #shape[0, 2, 1, 3]} : (tensor<2x3x5x9xf64>) -> (tensor<2x5x3x9xf64>)
  %r = "pd_op.reshape"(%t) {shape = #shape[10, 27]} : (tensor<2x5x3x9xf64>) -> (tensor<10x27xf64>)
  "builtin.output"(%r) {name = "r"} : (tensor<10x27xf64>) -> ()
}
)IR";
  auto ref = parse_program(IrContext::global(), text + 1);
  auto mine = parse_program(IrContext::global(), text + 1);
  auto ref_low = run_pipeline_lowering_copy(*ref, "jit-infer");
  auto low = run_pipeline_lowering_copy(*mine, "cinn");
  const std::string s = low->str();
  EXPECT_NE(s.find("cinn_matmul_tn_p0_2_1_3"), std::string::npos) << s;
  EXPECT_EQ(s.find("pd_op.transpose"), std::string::npos) << s;
  Executor want(*ref_low), got(*low);
  std::vector<Tensor> in = {Tensor(filled({2, 3, 7, 5}, DataType::FLOAT64, 5)),
                            Tensor(filled({2, 3, 7, 9}, DataType::FLOAT64, 6))};
  std::vector<Tensor> a = want.run(in), b = got.run(in);
  ASSERT_EQ(a[0].dims(), b[0].dims());
  const DenseTensor da = contiguous(a[0].dense()), db = b[0].dense();
  ASSERT_TRUE(db.is_contiguous());
  for (int64_t i = 0; i < da.numel(); ++i) ASSERT_EQ(db.data<double>()[i], da.data<double>()[i]) << i;
}

}  // namespace
}  // namespace oar::cinn
