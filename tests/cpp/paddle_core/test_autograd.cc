#include <gtest/gtest.h>

#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/api/composite.h"
#include "paddle_core/autograd/engine.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"

namespace oar {
namespace {

Tensor from(const std::vector<double>& v, bool requires_grad = false) {
  DenseTensor d({static_cast<int64_t>(v.size())}, DataType::FLOAT64);
  std::copy(v.begin(), v.end(), d.alloc<double>());
  Tensor t(std::move(d));
  t.set_stop_gradient(!requires_grad);
  return t;
}

std::vector<double> to_vec(const Tensor& t) {
  DenseTensor c = contiguous(ops::cast(t, DataType::FLOAT64).dense());
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

TEST(Autograd, MultiplySumBackward) {
  Tensor x = from({1, 2, 3}, true), y = from({4, 5, 6}, true);
  Tensor loss = ops::sum(ops::multiply(x, y));
  EXPECT_FALSE(loss.stop_gradient());
  EXPECT_FALSE(loss.is_leaf());
  EXPECT_STREQ(loss.grad_fn()->name(), "SumGradNode");
  autograd::backward({loss}, {}, /*retain_graph=*/false);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(to_vec(y.grad()), (std::vector<double>{1, 2, 3}));
  // Paddle's rule: an engine-computed .grad reads stop_gradient=false, with no history.
  EXPECT_FALSE(x.grad().stop_gradient());
  EXPECT_TRUE(x.grad().is_leaf());
  // Without retain_graph the graph is freed.
  try {
    autograd::backward({loss}, {}, false);
    FAIL() << "second backward did not raise";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPreconditionNotMet);
    EXPECT_NE(e.message().find("second time"), std::string::npos);
  }
}

TEST(Autograd, AccumulatesAndUsesGradTensors) {
  Tensor x = from({1, 2}, true);
  Tensor y = x * x + x * 3.0;  // composite operators record too
  autograd::backward({y}, {from({1, 10})}, /*retain_graph=*/true);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{5, 70}));
  autograd::backward({y}, {from({1, 0})}, false);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{10, 70}));
  // A non-scalar root with no grad tensor seeds ones shaped like it (Paddle's rule).
  autograd::backward({x * 2.0}, {}, false);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{12, 72}));
}

TEST(Autograd, GradFunctionAndHigherOrder) {
  Tensor x = from({0.5, -2}, true);
  Tensor y = ops::sum(x * x * x);
  auto g = autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true,
                          /*allow_unused=*/false);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(to_vec(g[0]), (std::vector<double>{0.75, 12}));
  EXPECT_FALSE(g[0].stop_gradient());  // create_graph: the gradient has history
  EXPECT_FALSE(x.grad().defined());    // grad() never touches .grad
  auto g2 = autograd::grad({ops::sum(g[0])}, {x}, {}, false, false, false);
  EXPECT_EQ(to_vec(g2[0]), (std::vector<double>{3, -12}));
  EXPECT_TRUE(g2[0].stop_gradient());
}

TEST(Autograd, GradAllowUnused) {
  Tensor x = from({1}, true), z = from({2}, true);
  Tensor y = ops::sum(ops::exp(x));
  EXPECT_THROW(autograd::grad({y}, {x, z}, {}, true, false, false), Error);
  auto g = autograd::grad({y}, {x, z}, {}, false, false, /*allow_unused=*/true);
  EXPECT_NEAR(to_vec(g[0])[0], 2.718281828459045, 1e-12);
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, MatmulGradients) {
  DenseTensor a({2, 3}, DataType::FLOAT64), b({3}, DataType::FLOAT64);
  double* pa = a.alloc<double>();
  double* pb = b.alloc<double>();
  for (int i = 0; i < 6; ++i) pa[i] = i + 1;
  for (int i = 0; i < 3; ++i) pb[i] = i - 1;
  Tensor x(a), v(b);
  x.set_stop_gradient(false);
  v.set_stop_gradient(false);
  autograd::backward({ops::sum(ops::matmul(x, v))}, {}, false);  // matrix . vector
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{-1, 0, 1, -1, 0, 1}));
  EXPECT_EQ(to_vec(v.grad()), (std::vector<double>{5, 7, 9}));
}

TEST(Autograd, NoGradGuardAndHooks) {
  Tensor x = from({1, 2}, true);
  {
    autograd::GradModeGuard guard(false);
    EXPECT_TRUE(ops::multiply(x, x).stop_gradient());
  }
  EXPECT_TRUE(autograd::grad_enabled());
  Tensor h = x * 2.0;
  int64_t id = h.grad_fn()->add_pre_hook(0, [](const Tensor& g) { return g * 10.0; });
  autograd::backward({ops::sum(h)}, {}, true);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{20, 20}));
  EXPECT_TRUE(h.grad_fn()->remove_pre_hook(id));
  EXPECT_FALSE(h.grad_fn()->remove_pre_hook(id));
}

TEST(Autograd, InplaceChecks) {
  Tensor x = from({1, 2}, true);
  EXPECT_THROW(ops::add_(x, from({1, 1})), Error);  // leaf that requires grad
  Tensor a = x * 1.0;
  Tensor b = a * a;
  const uint32_t v = a.version();
  ops::add_(a, from({1, 1}));
  EXPECT_EQ(a.version(), v + 1);
  try {
    autograd::backward({ops::sum(b)}, {}, false);
    FAIL() << "stale saved tensor not detected";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("modified by an inplace operation"), std::string::npos);
  }
}

}  // namespace
}  // namespace oar
