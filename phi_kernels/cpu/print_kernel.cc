// print_tensor: what print(tensor) records under to_static. Each run writes one block
// to stdout, flushed (the C++ predictor's output interleaves with the program's own):
//   <message> Tensor(shape=[2, 3], dtype=float32)
//     data: [0.1, 0.2, ...]   (the first `summarize` values in row-major order; -1: all)
// and passes x through. The op is a side effect (yaml `side_effect`): while to_static
// records a program, the dispatch layer that records it does not run the kernel; the
// program prints when it runs.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"

namespace oar::phi {
namespace {

template <typename T>
void PrintTensorKernel(const DeviceContext&, const DenseTensor& x, const std::string& message, int64_t summarize,
                       DenseTensor* out) {
  out->alloc<T>();
  copy_into(x, out);
  const DenseTensor c = contiguous(x);
  const T* p = c.data<T>();
  const int64_t n = summarize < 0 ? c.numel() : std::min<int64_t>(summarize, c.numel());
  std::ostringstream s;
  if (!message.empty()) s << message << ' ';
  s << "Tensor(shape=" << x.dims() << ", dtype=" << dtype_name(x.dtype()) << ")\n  data: [";
  for (int64_t i = 0; i < n; ++i) {
    if (i) s << ", ";
    if constexpr (std::is_same_v<T, bool>) {
      s << (p[i] ? "True" : "False");
    } else if constexpr (std::is_integral_v<T>) {
      s << static_cast<int64_t>(p[i]);
    } else {
      s << static_cast<double>(p[i]);
    }
  }
  if (n < c.numel()) s << (n ? ", " : "") << "... (" << c.numel() << " values)";
  s << "]\n";
  const std::string text = s.str();
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(print_tensor, CPU, PrintTensorKernel, OAR_ALL_TYPES)
