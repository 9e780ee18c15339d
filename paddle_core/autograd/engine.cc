#include "paddle_core/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "oar_generated/ops_api.h"
#include "paddle_core/api/composite.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/base/host_tracer.h"

namespace oar::autograd {

namespace {

struct NodeTask {
  GradNode* node;
  bool operator<(const NodeTask& o) const {  // max-heap: latest created first
    return node->sequence_nr() < o.node->sequence_nr();
  }
};

struct GraphTask {
  std::unordered_map<GradNode*, int> dependencies;
  std::unordered_map<GradNode*, std::vector<Tensor>> buffers;
  bool filter = false;                   // oar.grad: run only the `needed` nodes
  std::unordered_set<GradNode*> needed;
  bool stop_at_inputs = false;
  // oar.grad: where the gradient of each input is captured.
  std::unordered_map<GradNode*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::vector<Tensor> captured;
  bool accumulate_leaves = true;
  bool retain_graph = false;
};

// Paddle's implicit initial gradient: ones shaped like the tensor, whatever its size.
Tensor ones_for(const Tensor& t) { return ops::full_like(t, 1.0, t.dtype()); }

// Counts, for every node reachable from the roots, how many edges point at it.
void compute_dependencies(const std::vector<GradNode*>& roots, GraphTask& task) {
  std::vector<GradNode*> stack(roots.begin(), roots.end());
  std::unordered_set<GradNode*> seen(roots.begin(), roots.end());
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      GradNode* m = e.node.get();
      task.dependencies[m] += 1;
      if (seen.insert(m).second) stack.push_back(m);
    }
  }
}

// Marks the nodes that must run for every captured gradient to arrive: those with an
// edge towards a captured node. A captured node itself runs only when a further captured
// node lies behind it (and never with stop_at_inputs), as in PyTorch's engine: oar.grad(y,
// h) does not run (nor free) the node that made h.
void compute_needed(const std::vector<GradNode*>& roots, GraphTask& task) {
  std::unordered_map<GradNode*, bool> reaches;  // is, or leads to, a captured node
  // Iterative post-order DFS.
  std::vector<std::pair<GradNode*, size_t>> stack;
  for (GradNode* r : roots) {
    if (reaches.count(r)) continue;
    stack.push_back({r, 0});
    reaches[r] = false;
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      const bool captured = task.captures.count(n) > 0;
      if (!(captured && task.stop_at_inputs) && i < n->next_edges.size()) {
        GradNode* m = n->next_edges[i++].node.get();
        if (m != nullptr && !reaches.count(m)) {
          reaches[m] = false;
          stack.push_back({m, 0});
        }
        continue;
      }
      bool run = false;
      if (!(captured && task.stop_at_inputs)) {
        for (const Edge& e : n->next_edges) {
          if (e.valid() && reaches[e.node.get()]) run = true;
        }
      }
      reaches[n] = captured || run;
      if (run) task.needed.insert(n);
      stack.pop_back();
    }
  }
}

// A gradient takes the dtype of the input it flows into, as PyTorch's engine does:
// sum(x, dtype=float64) of a float32 x gives x a float32 gradient.
Tensor match_input_dtype(const Tensor& g, const GradNode& next, uint32_t input_nr) {
  if (input_nr >= next.output_meta.size()) return g;
  const DataType want = next.output_meta[input_nr].dtype;
  return want == DataType::UNDEFINED || want == g.dtype() ? g : ops::cast(g, want);
}

void add_to_buffer(GraphTask& task, GradNode* node, uint32_t input_nr, const Tensor& g) {
  auto& buf = task.buffers[node];
  if (buf.size() <= input_nr) buf.resize(node->output_meta.size() > input_nr ? node->output_meta.size() : input_nr + 1);
  if (!g.defined()) return;
  buf[input_nr] = buf[input_nr].defined() ? accumulate(buf[input_nr], g) : g;
}

void execute(GraphTask& task, const std::vector<Edge>& root_edges,
             const std::vector<Tensor>& root_grads) {
  std::vector<GradNode*> roots;
  for (size_t i = 0; i < root_edges.size(); ++i) {
    GradNode* n = root_edges[i].node.get();
    add_to_buffer(task, n, root_edges[i].input_nr, root_grads[i]);
    roots.push_back(n);
  }
  compute_dependencies(roots, task);
  task.filter = !task.captures.empty();
  if (task.filter) compute_needed(roots, task);

  std::priority_queue<NodeTask> ready;
  std::unordered_set<GradNode*> queued;
  for (GradNode* r : roots) {
    if (task.dependencies[r] == 0 && queued.insert(r).second) ready.push({r});
  }
  while (!ready.empty()) {
    GradNode* node = ready.top().node;
    ready.pop();
    std::vector<Tensor> grads = std::move(task.buffers[node]);
    task.buffers.erase(node);
    grads.resize(std::max(grads.size(), node->output_meta.size()));
    for (uint32_t i = 0; i < grads.size(); ++i) grads[i] = node->run_pre_hooks(i, grads[i]);

    if (auto it = task.captures.find(node); it != task.captures.end()) {
      for (auto [input_nr, slot] : it->second) {
        if (input_nr < grads.size() && grads[input_nr].defined()) {
          Tensor& c = task.captured[slot];
          c = c.defined() ? accumulate(c, grads[input_nr]) : grads[input_nr];
        }
      }
    }
    const bool is_leaf_acc = dynamic_cast<AccumulateGrad*>(node) != nullptr;
    const bool run = (!task.filter || task.needed.count(node)) &&
                     !(is_leaf_acc && !task.accumulate_leaves);
    std::vector<Tensor> outs;
    if (run) {
      OAR_ENFORCE(!node->released(), PreconditionNotMet, node->name(),
                  ": trying to backward through the graph a second time (or to access saved "
                  "tensors after they were freed). Call backward(retain_graph=True) the first "
                  "time.");
      bool any = false;
      for (size_t i = 0; i < grads.size(); ++i) {
        if (grads[i].defined()) {
          any = true;
        } else if (!is_leaf_acc && node->materialize_grads()) {
          const OutputMeta& m = node->output_meta[i];
          grads[i] = ops::zeros(m.dims.vec(), m.dtype, m.place);
        }
      }
      if (any) {
        profiler::OpScope scope(node->name(), profiler::EventType::kBackward);
        outs = node->apply(grads);
      }
      if (!task.retain_graph && !is_leaf_acc) {
        node->release_saved();
        node->mark_released();
      }
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      GradNode* next = e.node.get();
      if (i < outs.size() && outs[i].defined()) {
        add_to_buffer(task, next, e.input_nr, match_input_dtype(outs[i], *next, e.input_nr));
      }
      if (--task.dependencies[next] == 0 && queued.insert(next).second) ready.push({next});
    }
  }
}

std::vector<Tensor> make_root_grads(const std::vector<Tensor>& tensors,
                                    const std::vector<Tensor>& grads, const char* op) {
  OAR_ENFORCE(grads.empty() || grads.size() == tensors.size(), InvalidArgument, op,
              ": got ", tensors.size(), " tensors but ", grads.size(), " gradients");
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      g = ones_for(tensors[i]);
    } else {
      OAR_ENFORCE(g.dims() == tensors[i].dims(), InvalidArgument, op,
                  ": grad tensor shape ", g.dims(), " does not match tensor shape ",
                  tensors[i].dims());
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              bool retain_graph) {
  std::vector<Tensor> grads = make_root_grads(tensors, grad_tensors, "backward");
  std::vector<Edge> edges;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < tensors.size(); ++i) {
    OAR_ENFORCE(!tensors[i].stop_gradient(), PreconditionNotMet,
                "backward: the tensor has stop_gradient=True, so it has no gradient graph");
    edges.push_back(gradient_edge(tensors[i]));
    root_grads.push_back(grads[i]);
  }
  GraphTask task;
  task.retain_graph = retain_graph;
  GradModeGuard guard(false);
  execute(task, edges, root_grads);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused, bool stop_at_inputs) {
  std::vector<Tensor> grads = make_root_grads(outputs, grad_outputs, "grad");
  GraphTask task;
  task.stop_at_inputs = stop_at_inputs;
  task.retain_graph = retain_graph;
  task.accumulate_leaves = false;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_ENFORCE(!inputs[i].stop_gradient(), InvalidArgument, "grad: inputs[", i,
                "] has stop_gradient=True, so no gradient can be computed for it");
    Edge e = gradient_edge(inputs[i]);
    task.captures[e.node.get()].push_back({e.input_nr, i});
  }
  std::vector<Edge> edges;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OAR_ENFORCE(!outputs[i].stop_gradient(), InvalidArgument, "grad: outputs[", i,
                "] has stop_gradient=True, so it does not depend on any input");
    edges.push_back(gradient_edge(outputs[i]));
    root_grads.push_back(grads[i]);
  }
  {
    GradModeGuard guard(create_graph);
    execute(task, edges, root_grads);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_ENFORCE(allow_unused || task.captured[i].defined(), InvalidArgument, "grad: inputs[", i,
                "] is not used to compute the outputs; pass allow_unused=True to get None");
    if (task.captured[i].defined() && !create_graph) task.captured[i].set_stop_gradient(true);
  }
  return task.captured;
}

}  // namespace oar::autograd
