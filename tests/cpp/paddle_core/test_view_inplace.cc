// Views and in-place ops in autograd (Note [Views and in-place ops]).
#include <gtest/gtest.h>

#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/api/composite.h"
#include "paddle_core/autograd/engine.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/view.h"

namespace oar {
namespace {

Tensor from(const std::vector<double>& v, std::vector<int64_t> shape = {},
            bool requires_grad = false) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  DenseTensor d(Dims(shape), DataType::FLOAT64);
  std::copy(v.begin(), v.end(), d.alloc<double>());
  Tensor t(std::move(d));
  t.set_stop_gradient(!requires_grad);
  return t;
}

std::vector<double> to_vec(const Tensor& t) {
  DenseTensor c = contiguous(t.dense());
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

TEST(ViewInplace, ViewsRecordTheirBase) {
  Tensor y = from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = ops::transpose(y, {1, 0});
  Tensor s = ops::slice(t, {0}, {1}, {3}, {});
  EXPECT_TRUE(t.is_view() && s.is_view() && !y.is_view());
  EXPECT_EQ(s.impl()->view->base, y.impl());  // a view of a view points at the first base
  EXPECT_EQ(to_vec(s.impl()->view->replay->replay(y)), (std::vector<double>{2, 5, 3, 6}));
  // A reshape that has to copy is not a view.
  Tensor r = ops::reshape(t, {6});
  EXPECT_FALSE(r.is_view());
  EXPECT_NE(r.dense().storage(), y.dense().storage());
}

TEST(ViewInplace, InplaceOnViewRebasesTheBase) {
  Tensor x = from({1, 2, 3, 4}, {2, 2}, true);
  Tensor y = x * 2.0;
  Tensor row = ops::select(y, 0, 1);
  ops::multiply_(row, from({10, 100}));
  EXPECT_EQ(to_vec(y), (std::vector<double>{2, 4, 60, 800}));
  EXPECT_STREQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_STREQ(row.grad_fn()->name(), "SelectGradNode");  // remade from the new base
  EXPECT_EQ(row.version(), y.version());
  autograd::backward({ops::sum(y * y)}, {}, false);
  // d/dx of sum(y^2): 2*y*dy/dx, dy/dx = 2 (row 0) or 2*factor (row 1).
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{8, 16, 2400, 320000}));
}

TEST(ViewInplace, CopySlicesIsDifferentiable) {
  Tensor x = from({0.5, 1.5, 2.0}, {3}, true);
  Tensor y = x * 1.0;
  Tensor head = ops::slice(y, {0}, {0}, {2}, {});
  ops::multiply_(head, ops::slice(x, {0}, {0}, {2}, {}));  // y = [x0^2, x1^2, x2]
  auto g = autograd::grad({ops::sum(y * y)}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true,
                          false);
  EXPECT_EQ(to_vec(g[0]), (std::vector<double>{4 * 0.125, 4 * 3.375, 4}));
  autograd::backward({ops::sum(g[0])}, {}, false);
  EXPECT_EQ(to_vec(x.grad()), (std::vector<double>{12 * 0.25, 12 * 2.25, 2}));
}

TEST(ViewInplace, RefusedWrites) {
  Tensor leaf = from({1, 2}, {2}, true);
  Tensor v = ops::slice(leaf, {0}, {0}, {1}, {});
  try {
    ops::exp_(v);
    FAIL() << "in-place on a view of a leaf that requires grad";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPreconditionNotMet);
    EXPECT_EQ(e.message().rfind("exp_: a view of a leaf tensor", 0), 0u) << e.message();
  }
  EXPECT_EQ(to_vec(leaf), (std::vector<double>{1, 2}));
  Tensor e = ops::expand(from({1, 2}, {1, 2}), {3, 2});
  EXPECT_THROW(ops::scale_(e, 2.0, 0.0, true), Error);
  {
    autograd::GradModeGuard off(false);
    ops::exp_(v);  // untracked updates stay allowed
  }
  EXPECT_NEAR(to_vec(leaf)[0], 2.718281828459045, 1e-15);
}

}  // namespace
}  // namespace oar
