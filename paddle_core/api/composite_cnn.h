// Helpers used by the backward formulas of cnn.yaml (included by the generated op
// files): attribute arithmetic on shapes, and compositions of differentiable ops.
#pragma once

#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::ops {

/// output_padding that makes conv_transpose(y, w) come back to x's spatial size.
inline std::vector<int64_t> conv_output_padding(const Tensor& x, const Tensor& y,
                                                const Tensor& w,
                                                const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& paddings,
                                                const std::vector<int64_t>& dilations,
                                                const std::string& data_format) {
  return ::oar::conv_output_padding(x.dims(), y.dims(), w.dims(), strides, paddings, dilations,
                                    data_format);
}

}  // namespace oar::ops
