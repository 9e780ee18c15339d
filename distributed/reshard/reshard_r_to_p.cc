// Replicate -> Partial(reduce): no communication. Coordinate 0 keeps the value; the
// others hold the reduction's identity where there is one that changes the value (0 for
// sum, 1 for prod); max/min/avg/any/all keep the value everywhere.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"
#include "oar_generated/ops_api.h"

namespace oar::dist {

DenseTensor reshard_r_to_p(const DenseTensor& x, const AxisStep& s, ReduceType reduce) {
  if (s.index == 0 || (reduce != ReduceType::kRedSum && reduce != ReduceType::kRedProd)) return x;
  if (reduce == ReduceType::kRedSum) return local::zeros_like_dims(x, x.dims().vec());
  return ops::full_like(Tensor(x), Scalar(1.0), x.dtype()).dense();
}

}  // namespace oar::dist
