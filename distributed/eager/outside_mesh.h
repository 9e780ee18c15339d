// Ops on processes outside their mesh (Note [Dist layer], "Outside the mesh", in
// docs/notes/distributed.md): the kernel does not run; the outputs are empty local values
// whose global shapes and dtypes come from the op's IR shape inference, and a grad node
// that computes nothing hands empty gradients back, so that backward still reaches the
// cross-mesh reshards (pipeline stages) this process takes part in.
#pragma once

#include <vector>

#include "distributed/mesh/dist_tensor_meta.h"
#include "paddle_core/dispatch/dispatch.h"

namespace oar::dist {

/// Fills call.outputs without running the op: empty local values laid out on `mesh` as
/// `out_attrs` (replicated where it has no entry), global shapes from the op's shape
/// inference on the inputs' global shapes. `ins`: the flat tensor inputs (dist, on
/// `mesh`). Returns false, touching nothing, when the op has no shape inference, the
/// inference rejects the inputs, or an output's shape depends on the data.
bool skip_outside_mesh(dispatch::OpCall& call, const ProcessMesh& mesh, const std::vector<Tensor*>& ins,
                       const std::vector<TensorDistAttr>& out_attrs);

}  // namespace oar::dist
