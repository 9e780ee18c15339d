// Activations of nn.yaml (silu, softplus, leaky_relu, elu, log_sigmoid, hardswish,
// hardsigmoid, relu6, selu, celu, hardtanh, mish, softsign, tanhshrink, hardshrink,
// softshrink, thresholded_relu), Paddle's definitions. Each is one functor with the value f,
// the derivative d1 and the second derivative d2; the forward, the fused gradient
// (grad_out * f'(x)) and the double-backward kernel (f''(x)) are instantiated from it.
// Built once, for the baseline: std::exp and friends are scalar calls in these loops, so an
// AVX-512 copy bought nothing but compile time (Note [One copy of a loop]); silu's forward,
// on vectors, is in unary_kernels.cc.
#include <cmath>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

template <typename M> M sigmoid(M x) { return M(1) / (M(1) + std::exp(-x)); }

struct Silu {
  template <typename M> M f(M x) const { return x * sigmoid(x); }
  template <typename M> M d1(M x) const {
    const M s = sigmoid(x);
    return s * (M(1) + x * (M(1) - s));
  }
  template <typename M> M d2(M x) const {
    const M s = sigmoid(x);
    return s * (M(1) - s) * (M(2) + x * (M(1) - M(2) * s));
  }
};

// log(1 + exp(beta x)) / beta, and x itself once beta * x > threshold.
struct Softplus {
  double beta, threshold;
  template <typename M> M f(M x) const {
    const M b = M(beta), z = b * x;
    if (z > M(threshold)) return x;
    // log1p(exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))
    return (std::max(z, M(0)) + std::log1p(std::exp(-std::abs(z)))) / b;
  }
  template <typename M> M d1(M x) const {
    const M z = M(beta) * x;
    return z > M(threshold) ? M(1) : sigmoid(z);
  }
  template <typename M> M d2(M x) const {
    const M z = M(beta) * x;
    if (z > M(threshold)) return M(0);
    const M s = sigmoid(z);
    return M(beta) * s * (M(1) - s);
  }
};

struct LeakyRelu {
  double slope;
  template <typename M> M f(M x) const { return x > M(0) ? x : M(slope) * x; }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : M(slope); }
};

struct Elu {
  double alpha;
  template <typename M> M f(M x) const { return x > M(0) ? x : M(alpha) * std::expm1(x); }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : M(alpha) * std::exp(x); }
  template <typename M> M d2(M x) const { return x > M(0) ? M(0) : M(alpha) * std::exp(x); }
};

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for large |x|.
struct LogSigmoid {
  template <typename M> M f(M x) const {
    return std::min(x, M(0)) - std::log1p(std::exp(-std::abs(x)));
  }
  template <typename M> M d1(M x) const { return sigmoid(-x); }
  template <typename M> M d2(M x) const {
    const M s = sigmoid(x);
    return -s * (M(1) - s);
  }
};

// x * relu6(x + 3) / 6 (Paddle: threshold 6, scale 6, offset 3).
struct Hardswish {
  template <typename M> M f(M x) const {
    const M t = std::min(std::max(x + M(3), M(0)), M(6));
    return x * t / M(6);
  }
  template <typename M> M d1(M x) const {
    return x + M(3) >= M(6) ? M(1) : (x + M(3) > M(0) ? (M(2) * x + M(3)) / M(6) : M(0));
  }
  template <typename M> M d2(M x) const {
    return (x + M(3) > M(0) && x + M(3) < M(6)) ? M(1) / M(3) : M(0);
  }
};

struct Hardsigmoid {
  double slope, offset;
  template <typename M> M f(M x) const {
    return std::min(std::max(M(slope) * x + M(offset), M(0)), M(1));
  }
  template <typename M> M d1(M x) const {
    const M y = M(slope) * x + M(offset);
    return (y > M(0) && y < M(1)) ? M(slope) : M(0);
  }
};

struct Relu6 {
  template <typename M> M f(M x) const { return std::min(std::max(x, M(0)), M(6)); }
  template <typename M> M d1(M x) const { return (x > M(0) && x < M(6)) ? M(1) : M(0); }
};

// scale * (x > 0 ? x : alpha * (exp(x) - 1))
struct Selu {
  double scale, alpha;
  template <typename M> M f(M x) const {
    return M(scale) * (x > M(0) ? x : M(alpha) * std::expm1(x));
  }
  template <typename M> M d1(M x) const {
    return x > M(0) ? M(scale) : M(scale) * M(alpha) * std::exp(x);
  }
  template <typename M> M d2(M x) const {
    return x > M(0) ? M(0) : M(scale) * M(alpha) * std::exp(x);
  }
};

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
struct Celu {
  double alpha;
  template <typename M> M f(M x) const {
    return x > M(0) ? x : M(alpha) * std::expm1(x / M(alpha));
  }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : std::exp(x / M(alpha)); }
  template <typename M> M d2(M x) const {
    return x > M(0) ? M(0) : std::exp(x / M(alpha)) / M(alpha);
  }
};

struct Hardtanh {
  double lo, hi;
  template <typename M> M f(M x) const { return std::min(std::max(x, M(lo)), M(hi)); }
  template <typename M> M d1(M x) const { return (x > M(lo) && x < M(hi)) ? M(1) : M(0); }
};

// x * tanh(softplus(x)), softplus linear above 20 as in Paddle.
struct Mish {
  template <typename M> static M softplus(M x) {
    return x > M(20) ? x : std::max(x, M(0)) + std::log1p(std::exp(-std::abs(x)));
  }
  template <typename M> M f(M x) const { return x * std::tanh(softplus(x)); }
  template <typename M> M d1(M x) const {
    const M t = std::tanh(softplus(x)), s = x > M(20) ? M(1) : sigmoid(x);
    return t + x * (M(1) - t * t) * s;
  }
  template <typename M> M d2(M x) const {
    const M t = std::tanh(softplus(x)), s = x > M(20) ? M(1) : sigmoid(x);
    const M u = (M(1) - t * t) * s;
    return M(2) * u + x * u * ((x > M(20) ? M(0) : M(1) - s) - M(2) * t * s);
  }
};

struct Softsign {
  template <typename M> M f(M x) const { return x / (M(1) + std::abs(x)); }
  template <typename M> M d1(M x) const {
    const M d = M(1) + std::abs(x);
    return M(1) / (d * d);
  }
  template <typename M> M d2(M x) const {
    const M d = M(1) + std::abs(x);
    return (x > M(0) ? M(-2) : (x < M(0) ? M(2) : M(0))) / (d * d * d);
  }
};

struct Tanhshrink {
  template <typename M> M f(M x) const { return x - std::tanh(x); }
  template <typename M> M d1(M x) const {
    const M t = std::tanh(x);
    return t * t;
  }
  template <typename M> M d2(M x) const {
    const M t = std::tanh(x);
    return M(2) * t * (M(1) - t * t);
  }
};

struct Hardshrink {
  double threshold;
  template <typename M> M f(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? x : M(0);
  }
  template <typename M> M d1(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? M(1) : M(0);
  }
};

struct Softshrink {
  double threshold;
  template <typename M> M f(M x) const {
    const M t = M(threshold);
    return x > t ? x - t : (x < -t ? x + t : M(0));
  }
  template <typename M> M d1(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? M(1) : M(0);
  }
};

struct ThresholdedRelu {
  double threshold, value;
  template <typename M> M f(M x) const { return x > M(threshold) ? x : M(value); }
  template <typename M> M d1(M x) const { return x > M(threshold) ? M(1) : M(0); }
};

template <typename T, typename Fn>
void forward(const DenseTensor& x, DenseTensor* out, Fn fn) {
  unary_kernel<T, T>(x, out, [fn](auto v) { return fn.f(v); });
}
template <typename T, typename Fn>
void grad(const DenseTensor& x, const DenseTensor& g, DenseTensor* dx, Fn fn) {
  binary_kernel<T, T>(x, g, dx, [fn](auto v, auto d) { return d * fn.d1(v); });
}
template <typename T, typename Fn>
void grad2(const DenseTensor& x, DenseTensor* out, Fn fn) {
  unary_kernel<T, T>(x, out, [fn](auto v) { return fn.d2(v); });
}

#define OAR_ACT_KERNELS(Name, Fn, ...)                                                             \
  template <typename T>                                                                            \
  void Name##Kernel(const DeviceContext&, const DenseTensor& x OAR_ACT_PARAMS(__VA_ARGS__),        \
                    DenseTensor* out) {                                                            \
    forward<T>(x, out, Fn{__VA_ARGS__});                                                           \
  }                                                                                                \
  template <typename T>                                                                            \
  void Name##GradKernel(const DeviceContext&, const DenseTensor& x,                                \
                        const DenseTensor& g OAR_ACT_PARAMS(__VA_ARGS__), DenseTensor* dx) {       \
    grad<T>(x, g, dx, Fn{__VA_ARGS__});                                                            \
  }
#define OAR_ACT_GRAD2(Name, Fn, ...)                                                               \
  template <typename T>                                                                            \
  void Name##Grad2Kernel(const DeviceContext&, const DenseTensor& x OAR_ACT_PARAMS(__VA_ARGS__),   \
                         DenseTensor* out) {                                                       \
    grad2<T>(x, out, Fn{__VA_ARGS__});                                                             \
  }

// The attribute parameters of a kernel: ", double a, double b" for attrs a, b.
#define OAR_ACT_P0()
#define OAR_ACT_P1(a) , double a
#define OAR_ACT_P2(a, b) , double a, double b
#define OAR_ACT_PN(_0, _1, _2, N, ...) N
#define OAR_ACT_PARAMS(...) \
  OAR_ACT_PN(_0 __VA_OPT__(, ) __VA_ARGS__, OAR_ACT_P2, OAR_ACT_P1, OAR_ACT_P0)(__VA_ARGS__)

// silu's forward runs on vectors (vec::exp), so it is in unary_kernels.cc, built per ISA.
template <typename T>
void SiluGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& g, DenseTensor* dx) {
  grad<T>(x, g, dx, Silu{});
}
OAR_ACT_GRAD2(Silu, Silu)
OAR_ACT_KERNELS(Softplus, Softplus, beta, threshold)
OAR_ACT_GRAD2(Softplus, Softplus, beta, threshold)
OAR_ACT_KERNELS(LeakyRelu, LeakyRelu, negative_slope)
OAR_ACT_KERNELS(Elu, Elu, alpha)
OAR_ACT_GRAD2(Elu, Elu, alpha)
OAR_ACT_KERNELS(LogSigmoid, LogSigmoid)
OAR_ACT_GRAD2(LogSigmoid, LogSigmoid)
OAR_ACT_KERNELS(Hardswish, Hardswish)
OAR_ACT_GRAD2(Hardswish, Hardswish)
OAR_ACT_KERNELS(Hardsigmoid, Hardsigmoid, slope, offset)
OAR_ACT_KERNELS(Relu6, Relu6)
OAR_ACT_KERNELS(Selu, Selu, scale, alpha)
OAR_ACT_GRAD2(Selu, Selu, scale, alpha)
OAR_ACT_KERNELS(Celu, Celu, alpha)
OAR_ACT_GRAD2(Celu, Celu, alpha)
OAR_ACT_KERNELS(Hardtanh, Hardtanh, t_min, t_max)
OAR_ACT_KERNELS(Mish, Mish)
OAR_ACT_GRAD2(Mish, Mish)
OAR_ACT_KERNELS(Softsign, Softsign)
OAR_ACT_GRAD2(Softsign, Softsign)
OAR_ACT_KERNELS(Tanhshrink, Tanhshrink)
OAR_ACT_GRAD2(Tanhshrink, Tanhshrink)
OAR_ACT_KERNELS(Hardshrink, Hardshrink, threshold)
OAR_ACT_KERNELS(Softshrink, Softshrink, threshold)
OAR_ACT_KERNELS(ThresholdedRelu, ThresholdedRelu, threshold, value)

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(silu_grad, CPU, SiluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(silu_grad2, CPU, SiluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus, CPU, SoftplusKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus_grad, CPU, SoftplusGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus_grad2, CPU, SoftplusGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(leaky_relu, CPU, LeakyReluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(leaky_relu_grad, CPU, LeakyReluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu, CPU, EluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu_grad, CPU, EluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu_grad2, CPU, EluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid, CPU, LogSigmoidKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid_grad, CPU, LogSigmoidGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid_grad2, CPU, LogSigmoidGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish, CPU, HardswishKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish_grad, CPU, HardswishGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish_grad2, CPU, HardswishGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardsigmoid, CPU, HardsigmoidKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardsigmoid_grad, CPU, HardsigmoidGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(relu6, CPU, Relu6Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(relu6_grad, CPU, Relu6GradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu, CPU, SeluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu_grad, CPU, SeluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu_grad2, CPU, SeluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu, CPU, CeluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu_grad, CPU, CeluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu_grad2, CPU, CeluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardtanh, CPU, HardtanhKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardtanh_grad, CPU, HardtanhGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish, CPU, MishKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish_grad, CPU, MishGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish_grad2, CPU, MishGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign, CPU, SoftsignKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign_grad, CPU, SoftsignGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign_grad2, CPU, SoftsignGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink, CPU, TanhshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink_grad, CPU, TanhshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink_grad2, CPU, TanhshrinkGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardshrink, CPU, HardshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardshrink_grad, CPU, HardshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softshrink, CPU, SoftshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softshrink_grad, CPU, SoftshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(thresholded_relu, CPU, ThresholdedReluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(thresholded_relu_grad, CPU, ThresholdedReluGradKernel, OAR_FLOAT_TYPES)
