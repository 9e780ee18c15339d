// Partial(reduce) -> Replicate: all-reduce the pieces with the pending reduction.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

namespace oar::dist {

ReduceOp reduce_op_for(ReduceType r) {
  switch (r) {
    case ReduceType::kRedSum:
      return ReduceOp::kSum;
    case ReduceType::kRedMax:
      return ReduceOp::kMax;
    case ReduceType::kRedMin:
      return ReduceOp::kMin;
    case ReduceType::kRedProd:
      return ReduceOp::kProd;
    case ReduceType::kRedAvg:
      return ReduceOp::kAvg;
    case ReduceType::kRedAny:
      return ReduceOp::kMax;  // on bool: any (Note [Communication])
    case ReduceType::kRedAll:
      return ReduceOp::kMin;  // on bool: all
  }
  return ReduceOp::kSum;
}

DenseTensor reshard_p_to_r(const DenseTensor& x, const AxisStep& s, ReduceType reduce) {
  if (s.k == 1) return x;
  DenseTensor out = local::clone(x);  // all_reduce works in place
  s.group->all_reduce(out, reduce_op_for(reduce))->wait();
  return out;
}

}  // namespace oar::dist
