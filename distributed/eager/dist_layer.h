// The dist dispatch layer (Note [Dist layer] in docs/notes/distributed.md): for an op with
// dist tensor inputs, runs the op's SPMD rule, reshards the inputs to what it asks, runs
// the local op below (autograd records it on the dist tensors, so backward ops come back
// through this layer) and gives the outputs the rule's placements.
#pragma once

namespace oar::dist {

/// Installs the layer in the dispatch slot (on for every thread); idempotent. Called when
/// the first dist tensor is made.
void enable_dist_layer();

}  // namespace oar::dist
