// Every decomposition (`decomp:` in paddle_core/ops/*.yaml, generated as
// oar::decomp::<op>) against the op's own kernel, on random float64 inputs (0-size and
// 0-D included), to 1e-10. Note [Decompositions] in docs/notes/ops.md.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "oar_generated/decomp.h"
#include "oar_generated/ops_api.h"

namespace oar {
namespace {

using Shape = std::vector<int64_t>;

Tensor random(const Shape& shape, uint64_t seed, double scale = 3.0) {
  DenseTensor d(Dims(shape), DataType::FLOAT64);
  double* p = d.alloc<double>();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  for (int64_t i = 0; i < d.numel(); ++i) p[i] = dist(rng);
  // The branch points and tails the activations treat specially.
  const double special[] = {0.0, 25.0, -25.0, 6.0, -3.0, 3.0};
  for (int64_t i = 0; i < std::min<int64_t>(d.numel(), 6); ++i) p[i] = special[i];
  return Tensor(std::move(d));
}

std::vector<double> values(const Tensor& t) {
  DenseTensor c = contiguous(t.dense());
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

void expect_close(const Tensor& kernel, const Tensor& decomp, const std::string& what) {
  ASSERT_EQ(kernel.dims().vec(), decomp.dims().vec()) << what;
  ASSERT_EQ(kernel.dtype(), decomp.dtype()) << what;
  const std::vector<double> a = values(kernel), b = values(decomp);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;  // inf, NaN
    ASSERT_NEAR(a[i], b[i], 1e-10 * (1.0 + std::abs(a[i]))) << what << " at flat index " << i;
  }
}

// Shapes every case runs on: elementwise ops also on 1-D and 0-D; ops with an axis on
// rank 3 (0-size along a dimension they do not reduce).
const std::vector<Shape> kUnaryShapes = {{4, 5, 6}, {0, 5, 6}, {7}, {}};
const std::vector<Shape> kAxisShapes = {{4, 5, 6}, {0, 5, 6}};

using Check = std::function<void(const Shape&, uint64_t, const std::string&)>;

Check unary(std::function<Tensor(const Tensor&)> op, std::function<Tensor(const Tensor&)> dec) {
  return [=](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    expect_close(op(x), dec(x), what);
  };
}

// Reductions and softmaxes: every axis setting that keeps 0-size inputs legal.
Check with_axes(std::function<Tensor(const Tensor&, const Shape&, bool)> op,
                std::function<Tensor(const Tensor&, const Shape&, bool)> dec) {
  return [=](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    for (const Shape& axis : std::vector<Shape>{{-1}, {1}, {1, 2}}) {
      for (bool keepdim : {false, true}) {
        expect_close(op(x, axis, keepdim), dec(x, axis, keepdim),
                     what + " axis[0]=" + std::to_string(axis[0]) + " n=" + std::to_string(axis.size()) +
                         " keepdim=" + std::to_string(keepdim));
      }
    }
  };
}

std::map<std::string, std::pair<Check, std::vector<Shape>>> cases() {
  std::map<std::string, std::pair<Check, std::vector<Shape>>> c;
  auto add_unary =
      [&](const std::string& name, std::function<Tensor(const Tensor&)> op, std::function<Tensor(const Tensor&)> dec) {
    c[name] = {unary(std::move(op), std::move(dec)), kUnaryShapes};
  };
#define OAR_UNARY(name) \
  add_unary(            \
      #name, [](const Tensor& x) { return ops::name(x); }, [](const Tensor& x) { return decomp::name(x); })
#define OAR_UNARY_ATTRS(name, ...)                                      \
  add_unary(                                                            \
      #name, [](const Tensor& x) { return ops::name(x, __VA_ARGS__); }, \
      [](const Tensor& x) { return decomp::name(x, __VA_ARGS__); })
  OAR_UNARY(silu);
  OAR_UNARY(sigmoid);
  OAR_UNARY(hardswish);
  OAR_UNARY(mish);
  OAR_UNARY(relu6);
  OAR_UNARY(log_sigmoid);
  OAR_UNARY(softsign);
  OAR_UNARY(tanhshrink);
  OAR_UNARY(square);
  OAR_UNARY(rsqrt);  // negative inputs: NaN on both sides
  c["gelu"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    for (bool approximate : {false, true})
      expect_close(ops::gelu(x, approximate), decomp::gelu(x, approximate),
                   what + " approximate=" + std::to_string(approximate));
               },
               kUnaryShapes};
  // The backward rules the compiler fuses (so backward programs fuse with their neighbours).
  c["gelu_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed), g = random(s, seed + 7, 1.0);
    for (bool approximate : {false, true})
      expect_close(ops::gelu_grad(x, g, approximate), decomp::gelu_grad(x, g, approximate),
                   what + " approximate=" + std::to_string(approximate));
                    },
                    kUnaryShapes};
  // soft labels in (0, 1) and hard ones
  c["sigmoid_cross_entropy_with_logits"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed, 4.0), soft = ops::sigmoid(random(s, seed + 3));
    const Tensor hard = ops::round(soft, 0);
    for (const Tensor& y : {soft, hard}) {
      expect_close(ops::sigmoid_cross_entropy_with_logits(x, y), decomp::sigmoid_cross_entropy_with_logits(x, y), what);
    }
                                            },
                                            kUnaryShapes};
  c["square_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed), g = random(s, seed + 7, 1.0);
    expect_close(ops::square_grad(x, g), decomp::square_grad(x, g), what);
                      },
                      kUnaryShapes};
  c["sigmoid_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor out = ops::sigmoid(random(s, seed)), g = random(s, seed + 7, 1.0);
    expect_close(ops::sigmoid_grad(out, g), decomp::sigmoid_grad(out, g), what);
                       },
                       kUnaryShapes};
  OAR_UNARY_ATTRS(hardsigmoid, 0.2, 0.4);
  OAR_UNARY_ATTRS(softplus, 1.5, 10.0);
  OAR_UNARY_ATTRS(leaky_relu, 0.07);
  OAR_UNARY_ATTRS(elu, 0.8);
  OAR_UNARY_ATTRS(hardtanh, -1.5, 2.0);
  OAR_UNARY_ATTRS(huber, 0.7);
#undef OAR_UNARY
#undef OAR_UNARY_ATTRS
  // softplus's and hardsigmoid's defaults too (the YAML defaults reach decomp's header).
  c["softplus"].first = [prev = c["softplus"].first](const Shape& s, uint64_t seed, const std::string& what) {
    prev(s, seed, what);
    const Tensor x = random(s, seed + 1);
    expect_close(ops::softplus(x), decomp::softplus(x), what + " defaults");
    expect_close(ops::hardsigmoid(x), decomp::hardsigmoid(x), what + " hardsigmoid defaults");
  };
  // alpha broadcast from a scalar, from one value per position of the middle axis (a
  // channel) and at x's own shape
  c["prelu"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    std::vector<Shape> alphas = {{}, s};
    if (s.size() == 3) alphas.push_back({1, s[1], 1});
    for (const Shape& a : alphas) {
      const Tensor alpha = random(a, seed + 5, 1.0);
      expect_close(ops::prelu(x, alpha), decomp::prelu(x, alpha), what + " alpha rank " + std::to_string(a.size()));
    }
                },
                kUnaryShapes};
  c["softmax"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    for (int64_t axis : {-1, 1, 2}) {
      expect_close(ops::softmax(x, axis), decomp::softmax(x, axis), what);
      expect_close(ops::log_softmax(x, axis), decomp::log_softmax(x, axis), what + " log_softmax");
    }
                  },
                  kAxisShapes};
  c["log_softmax"] = c["softmax"];
  c["softmax_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed), g = random(s, seed + 7, 1.0);
    for (int64_t axis : {-1, 1, 2}) {
      const Tensor out = ops::softmax(x, axis), lout = ops::log_softmax(x, axis);
      expect_close(ops::softmax_grad(out, g, axis), decomp::softmax_grad(out, g, axis), what);
      expect_close(ops::log_softmax_grad(lout, g, axis), decomp::log_softmax_grad(lout, g, axis),
                   what + " log_softmax_grad");
    }
                       },
                       kAxisShapes};
  c["log_softmax_grad"] = c["softmax_grad"];
  c["silu_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed), g = random(s, seed + 7, 1.0);
    expect_close(ops::silu_grad(x, g), decomp::silu_grad(x, g), what);
                    },
                    kUnaryShapes};
  // Multi-result rules (a map `decomp:`): every result against the kernel's.
  c["layer_norm_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed), g = random(s, seed + 7, 1.0);
    for (int64_t begin : {0, 1, 2}) {
      int64_t n = 1;
      for (size_t i = begin; i < s.size(); ++i) n *= s[i];
      const Tensor w = random({n}, seed + 1);
      for (bool affine : {false, true}) {
        const Tensor ws = affine ? w : Tensor();
        const auto fwd = ops::layer_norm(x, ws, Tensor(), 1e-5, begin);
        const auto want = ops::layer_norm_grad(x, ws, std::get<1>(fwd), std::get<2>(fwd), g, begin);
        const auto got = decomp::layer_norm_grad(x, ws, std::get<1>(fwd), std::get<2>(fwd), g, begin);
        const std::string w2 = what + " begin=" + std::to_string(begin) + " affine=" + std::to_string(affine);
        expect_close(std::get<0>(want), std::get<0>(got), w2 + " x_grad");
        expect_close(std::get<1>(want), std::get<1>(got), w2 + " scale_grad");
        expect_close(std::get<2>(want), std::get<2>(got), w2 + " bias_grad");
      }
    }
                          },
                          kAxisShapes};
  // [batch, seq, heads, head_dim]; key/value with another sequence length; scale 0 (=
  // 1/sqrt(head_dim)) and an explicit one; bool and additive masks. With is_causal it
  // refuses (stays whole in the compiler).
  c["scaled_dot_product_attention_grad"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Shape ks = {s[0], s[1] + 2, s[2], s[3]};
    const Tensor q = random(s, seed, 1.0), k = random(ks, seed + 1, 1.0), v = random(ks, seed + 2, 1.0);
    const Tensor g = random(s, seed + 3, 1.0);
    for (double scale : {0.0, 0.3}) {
      const auto fwd = ops::scaled_dot_product_attention(q, k, v, Tensor(), false, scale);
      const Tensor out = std::get<0>(fwd), lse = std::get<1>(fwd);
      const auto want = ops::scaled_dot_product_attention_grad(q, k, v, Tensor(), out, lse, g, false, scale);
      const auto got = decomp::scaled_dot_product_attention_grad(q, k, v, Tensor(), out, lse, g, false, scale);
      const std::string w2 = what + " scale=" + std::to_string(scale);
      expect_close(std::get<0>(want), std::get<0>(got), w2 + " query_grad");
      expect_close(std::get<1>(want), std::get<1>(got), w2 + " key_grad");
      expect_close(std::get<2>(want), std::get<2>(got), w2 + " value_grad");
      EXPECT_THROW(decomp::scaled_dot_product_attention_grad(q, k, v, Tensor(), out, lse, g, true, scale),
                   std::invalid_argument)
          << w2;
    }
    // A bool mask [batch, 1, Sq, Sk] and an additive one [Sq, Sk] (0 / -inf from the same
    // draw, plus noise); key column 0 kept, except query row 0, which sees no key (its
    // lse is -inf: zero gradients, as the kernel).
    const Shape ms = {s[0], 1, s[1], ks[1]};
    const Tensor r = random(ms, seed + 4, 1.0);
    Tensor keep = ops::greater_than(r, ops::full({}, -0.4, DataType::FLOAT64));
    keep = ops::logical_or(keep, ops::equal(ops::unsqueeze(ops::arange(0, ks[1], 1, DataType::INT64), {0}),
                                            ops::full({}, 0, DataType::INT64)));
    keep = ops::logical_and(keep, ops::not_equal(ops::unsqueeze(ops::arange(0, s[1], 1, DataType::INT64), {1}),
                                                 ops::full({}, 0, DataType::INT64)));
    if (s[0] == 0) return;  // no batch to take the additive mask from
    auto first = [](const Tensor& t) { return ops::squeeze(ops::slice(t, {0, 1}, {0, 0}, {1, 1}), {0, 1}); };
    const Tensor add =
        ops::add(ops::log(ops::cast(first(keep), DataType::FLOAT64)), ops::scale(first(r), 0.5, 0.0, true));
    for (const Tensor& m : {keep, add}) {
      const auto fwd = ops::scaled_dot_product_attention(q, k, v, m, false, 0.0);
      const Tensor out = std::get<0>(fwd), lse = std::get<1>(fwd);
      const auto want = ops::scaled_dot_product_attention_grad(q, k, v, m, out, lse, g, false, 0.0);
      const auto got = decomp::scaled_dot_product_attention_grad(q, k, v, m, out, lse, g, false, 0.0);
      const std::string w2 = what + (m.dtype() == DataType::BOOL ? " bool mask" : " additive mask");
      expect_close(std::get<0>(want), std::get<0>(got), w2 + " query_grad");
      expect_close(std::get<1>(want), std::get<1>(got), w2 + " key_grad");
      expect_close(std::get<2>(want), std::get<2>(got), w2 + " value_grad");
      EXPECT_THROW(decomp::scaled_dot_product_attention_grad(q, k, v, m, out, lse, g, true, 0.0), std::invalid_argument)
          << w2;
    }
                                            },
                                            {{2, 5, 3, 4}, {0, 5, 3, 4}, {1, 1, 1, 8}}};
  // Reductions: op(x, axis, [extra attributes,] keepdim), decomp the same.
#define OAR_REDUCTION(key, name, ...)                                                                                 \
  c[key] = {with_axes([=](const Tensor& x, const Shape& a, bool k) { return ops::name(x, a, ##__VA_ARGS__, k); },     \
                      [=](const Tensor& x, const Shape& a, bool k) { return decomp::name(x, a, ##__VA_ARGS__, k); }), \
            kAxisShapes}
  OAR_REDUCTION("logsumexp", logsumexp);
  OAR_REDUCTION("mean", mean);
  for (bool unbiased : {false, true}) {
    const std::string sfx = unbiased ? "" : "_biased";
    OAR_REDUCTION("var" + sfx, var, unbiased);
    OAR_REDUCTION("std" + sfx, std, unbiased);
  }
#undef OAR_REDUCTION
  c["layer_norm"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const Tensor x = random(s, seed);
    for (int64_t begin : {1, 2}) {
      int64_t n = 1;
      for (size_t i = begin; i < s.size(); ++i) n *= s[i];
      const Tensor w = random({n}, seed + 1), b = random({n}, seed + 2);
      for (int affine = 0; affine < 4; ++affine) {
        const Tensor ws = affine & 1 ? w : Tensor();
        const Tensor bs = affine & 2 ? b : Tensor();
        expect_close(std::get<0>(ops::layer_norm(x, ws, bs, 1e-5, begin)), decomp::layer_norm(x, ws, bs, 1e-5, begin),
                     what + " begin=" + std::to_string(begin) + " affine=" + std::to_string(affine));
      }
    }
                     },
                     kAxisShapes};
  // batch_norm: every result, training (batch statistics, running ones updated) and with
  // the running statistics (eval, use_global_stats); NCHW/NCL/NC and NHWC; an empty x
  // throws (the op stays whole, the kernel uses the running statistics). The grad with
  // its forward's saved statistics, both modes.
  c["batch_norm"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const std::string fmt = s.size() == 2 ? "NC" : s.size() == 3 ? "NCL" : (seed % 2 ? "NHWC" : "NCHW");
    const int64_t ch = fmt == "NHWC" ? s.back() : s[1];
    const Tensor x = ops::scale(random(s, seed), 1.0, 50.0, true), rm = random({ch}, seed + 1);
    const Tensor rv = ops::abs(random({ch}, seed + 2)), w = random({ch}, seed + 3), b = random({ch}, seed + 4);
    const Tensor g = random(s, seed + 5, 1.0);
    for (bool training : {true, false}) {
      const std::string w2 = what + " " + fmt + (training ? " training" : " eval");
      const bool ugs = !training;
      const auto want = ops::batch_norm(x, rm, rv, w, b, training, 0.8, 1e-5, fmt, ugs);
      if (s[0] == 0) {
        EXPECT_THROW(decomp::batch_norm(x, rm, rv, w, b, training, 0.8, 1e-5, fmt, ugs), std::invalid_argument) << w2;
        continue;
      }
      const auto got = decomp::batch_norm(x, rm, rv, w, b, training, 0.8, 1e-5, fmt, ugs);
      expect_close(std::get<0>(want), std::get<0>(got), w2 + " out");
      expect_close(std::get<1>(want), std::get<1>(got), w2 + " mean_out");
      expect_close(std::get<2>(want), std::get<2>(got), w2 + " variance_out");
      expect_close(std::get<3>(want), std::get<3>(got), w2 + " saved_mean");
      expect_close(std::get<4>(want), std::get<4>(got), w2 + " saved_rstd");
      for (const Tensor& ws : {w, Tensor()}) {
        const auto gw = ops::batch_norm_grad(x, ws, std::get<3>(want), std::get<4>(want), g, ugs, fmt);
        const auto gg = decomp::batch_norm_grad(x, ws, std::get<3>(want), std::get<4>(want), g, ugs, fmt);
        const std::string w3 = w2 + (ws.defined() ? " affine" : "");
        expect_close(std::get<0>(gw), std::get<0>(gg), w3 + " x_grad");
        expect_close(std::get<1>(gw), std::get<1>(gg), w3 + " scale_grad");
        expect_close(std::get<2>(gw), std::get<2>(gg), w3 + " bias_grad");
      }
    }
                     },
                     {{4, 3, 5, 7}, {2, 5, 3, 3}, {1, 3, 4, 4}, {4, 3, 1, 1}, {3, 5, 9}, {6, 7}, {0, 3, 4, 5}}};
  c["batch_norm_grad"] = c["batch_norm"];
  // cross_entropy and its input gradient (Note [cross_entropy decomposition] in
  // docs/notes/cinn.md): hard labels (some ignored) and soft ones, weighted or not,
  // smoothed or not, the three reductions, with and without softmax, the class axis last
  // and (rank 3) in the middle; a 0-size batch. Every sample ignored is in the Python tests.
  c["cross_entropy"] = {[](const Shape& s, uint64_t seed, const std::string& what) {
    const int64_t axis = s.size() == 3 ? 1 : -1, ax = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
    const int64_t classes = s[ax];
    Shape ls = s;
    ls.erase(ls.begin() + ax);
    DenseTensor hd(Dims(ls), DataType::INT64);
    int64_t* hp = hd.alloc<int64_t>();
    for (int64_t i = 0; i < hd.numel(); ++i)
      hp[i] = i % 3 == 0 && classes > 2 ? 2 : static_cast<int64_t>((seed + 5 * i) % classes);
    const Tensor hard(std::move(hd));
    const Tensor logits = random(s, seed), probs = ops::softmax(random(s, seed + 1), axis);
    const Tensor soft = ops::softmax(random(s, seed + 2), axis),
                 w = ops::scale(ops::abs(random({classes}, seed + 3)), 1.0, 0.5, true);
    for (bool soft_label : {false, true})
      for (bool use_softmax : {true, false})
        for (bool weighted : {false, true})
          for (int64_t ignore : {int64_t{-100}, int64_t{2}})
            for (double eps : {0.0, 0.1})
              for (const char* red : {"none", "sum", "mean"}) {
                if (soft_label && ignore >= 0) continue;  // rejected for soft labels, as Paddle
                const Tensor& x = use_softmax ? logits : probs;
                const Tensor& label = soft_label ? soft : hard;
                const Tensor ws = weighted ? w : Tensor();
                const std::string w2 = what + " soft=" + std::to_string(soft_label) +
                                       " softmax=" + std::to_string(use_softmax) +
                                       " weighted=" + std::to_string(weighted) + " ignore=" + std::to_string(ignore) +
                                       " eps=" + std::to_string(eps) + " " + red;
                const Tensor want = ops::cross_entropy(x, label, ws, soft_label, use_softmax, ignore, axis, eps, red);
                expect_close(want, decomp::cross_entropy(x, label, ws, soft_label, use_softmax, ignore, axis, eps, red),
                             w2);
                const Tensor g = random(want.dims().vec(), seed + 4, 1.0);
                expect_close(
                    ops::cross_entropy_grad(x, label, ws, g, soft_label, use_softmax, ignore, axis, eps, red),
                    decomp::cross_entropy_grad(x, label, ws, g, soft_label, use_softmax, ignore, axis, eps, red),
                    w2 + " grad");
              }
                        },
                        {{6, 5}, {3, 4, 5}, {0, 5}, {1, 1}}};
  c["cross_entropy_grad"] = c["cross_entropy"];
  return c;
}

TEST(Decomp, MatchesTheKernelInFloat64) {
  const auto all = cases();
  uint64_t seed = 1;
  for (const auto& [name, c] : all) {
    for (const Shape& s : c.second) {
      std::string shape = "[";
      for (int64_t d : s) shape += std::to_string(d) + ",";
      c.first(s, seed++, name + " shape " + shape + "]");
    }
  }
}

TEST(Decomp, EveryDecompositionIsTested) {
  const auto all = cases();
  for (const std::string& op : decomp::op_names()) EXPECT_TRUE(all.count(op)) << op << " has no case";
  EXPECT_GE(decomp::op_names().size(), 20u);
}

}  // namespace
}  // namespace oar
