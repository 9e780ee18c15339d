// The backward engine. Runs each node once all the gradients it waits for have
// arrived (dependency counts), in reverse creation order among ready nodes.
#pragma once

#include <vector>

#include "paddle_core/autograd/node.h"

namespace oar::autograd {

/// tensor.backward() / oar.autograd.backward: accumulates into the leaves' .grad.
/// grad_tensors[i] may be undefined (ones for a scalar root).
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              bool retain_graph);

/// oar.grad: returns d(outputs)/d(inputs) without touching .grad. Entries are
/// undefined for unused inputs when allow_unused (otherwise that raises).
/// `stop_at_inputs`: gradients do not flow on through an input into the nodes that made
/// it, so an input computed from another input gets only the partial derivatives of
/// the paths that reach it directly (the vector-Jacobian product of a function of
/// independent arguments: what cf.if's recomputing backward needs).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused, bool stop_at_inputs = false);

}  // namespace oar::autograd
