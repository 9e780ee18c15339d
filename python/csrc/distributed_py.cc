// oar._C.distributed: the store, process groups and tasks of distributed/collective, and
// the post-accumulate gradient hook DataParallel builds on. oar.distributed wraps them in
// Paddle's API. Calls that may wait release the GIL, so a rank's other Python threads
// (and its own async ops' completion) go on while it waits.
#include <pybind11/chrono.h>

#include <cstring>
#include <unordered_set>

#include "paddle_core/autograd/accumulate_hooks.h"
#include "paddle_core/autograd/node.h"
#include "python/csrc/py_convert.h"
#include "python/csrc/update_recorder.h"

#ifdef OAR_WITH_DIST
#include "distributed/collective/process_group.h"
#include "distributed/collective/tcp_store.h"
#include "distributed/eager/dist_layer.h"
#include "distributed/reshard/reshard.h"
#include "distributed/static/collective_ops.h"
#include "distributed/static/dist_dialect.h"
#include "distributed/static/update_ops.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/ir/ir_context.h"
#include "python/csrc/pir_py.h"
#endif

namespace oar::python {

namespace {
// A Python callable kept in a C++ table that may outlive the interpreter: released under
// the GIL while Python runs, leaked (never touched) after it has finalized.
struct PyCallable {
  explicit PyCallable(py::function f) : fn(std::move(f)) {}
  ~PyCallable() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn = py::function();
    } else {
      fn.release();
    }
  }
  py::function fn;
};

#ifdef OAR_WITH_DIST
// Placements from Python's (kind, dim, reduce) tuples (placement_type._encode_all).
dist::Placements placements_of(const std::vector<std::tuple<int, int64_t, int>>& ps) {
  dist::Placements out;
  for (const auto& [kind, dim, r] : ps) {
    out.push_back({static_cast<dist::Placement::Kind>(kind), dim, static_cast<dist::ReduceType>(r)});
  }
  return out;
}

std::vector<Tensor> tensors_of(const TensorList& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.emplace_back(t);
  return out;
}
bool record_update(const char* rule, const TensorList& params, const TensorList& grads,
                   const std::vector<const TensorList*>& states, const std::vector<double>& lrs,
                   const std::vector<double>& wds, const std::vector<double>& scalars, bool flag, int64_t step) {
  if (!dist::tracing_program()) return false;
  std::vector<std::vector<Tensor>> lists;
  for (const TensorList* s : states) lists.push_back(s ? tensors_of(*s) : std::vector<Tensor>{});
  return dist::record_update(rule, tensors_of(params), tensors_of(grads), lists, lrs, wds, scalars, flag, step);
}
#endif

// The flat bucket and its gradients: one dtype, contiguous, CPU, sizes adding up.
void bucket_check(const char* op, const DenseTensor& flat, const std::vector<DenseTensor>& grads) {
  OAR_ENFORCE(flat.initialized() && flat.is_contiguous() && flat.place().is_cpu(), InvalidArgument, op,
              ": flat must be a contiguous CPU tensor");
  int64_t total = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    const DenseTensor& g = grads[i];
    OAR_ENFORCE(g.initialized(), InvalidArgument, op, ": grads[", i, "] has no memory");
    OAR_ENFORCE(g.dtype() == flat.dtype(), InvalidType, op, ": grads[", i, "] is ", dtype_name(g.dtype()),
                ", the bucket ", dtype_name(flat.dtype()));
    OAR_ENFORCE(g.numel() == 0 || (g.is_contiguous() && g.place().is_cpu()), InvalidArgument, op, ": grads[", i,
                "] must be a contiguous CPU tensor");
    total += g.numel();
  }
  OAR_ENFORCE(total == flat.numel(), InvalidArgument, op, ": the gradients hold ", total, " elements, flat ",
              flat.numel());
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}
}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("distributed", "Collectives over process groups (distributed/collective)");

  d.def("register_post_accumulate_hook", [](py::handle t, py::function fn) {
    Tensor leaf = py_to_tensor(t, "register_post_accumulate_hook", "tensor");
    auto holder = std::make_shared<PyCallable>(std::move(fn));
    return autograd::add_post_accumulate_hook(leaf, [holder](const Tensor& leaf) {
      py::gil_scoped_acquire gil;
      holder->fn(wrap(leaf));
    });
  });
  d.def("remove_post_accumulate_hook", &autograd::remove_post_accumulate_hook);
  d.def("has_post_accumulate_hooks", [](py::handle t) {
    return autograd::has_post_accumulate_hooks(py_to_tensor(t, "has_post_accumulate_hooks", "tensor"));
  });
  // Which of `params` the autograd graph of `outputs` reaches: DataParallel's
  // find_unused_parameters marks the others ready before backward starts.
  d.def("reachable_leaves", [](py::handle outputs, py::handle params) {
    std::vector<Tensor> outs = py_to_tensor_list(outputs, "DataParallel", "outputs");
    std::vector<Tensor> ps = py_to_tensor_list(params, "DataParallel", "parameters");
    std::unordered_set<const TensorImpl*> leaves;
    std::unordered_set<const GradNode*> seen;
    std::vector<std::shared_ptr<GradNode>> stack;
    for (const Tensor& o : outs) {
      if (o.defined() && !o.stop_gradient()) stack.push_back(autograd::gradient_edge(o).node);
    }
    while (!stack.empty()) {
      auto node = std::move(stack.back());
      stack.pop_back();
      if (!node || !seen.insert(node.get()).second) continue;
      if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get())) leaves.insert(acc->variable().get());
      for (const Edge& e : node->next_edges) {
        if (e.valid()) stack.push_back(e.node);
      }
    }
    std::vector<bool> used;
    for (const Tensor& p : ps) used.push_back(leaves.count(p.impl().get()) > 0);
    return used;
  });

#ifndef OAR_WITH_DIST
  d.attr("available") = false;
#else
  d.attr("available") = true;
  using namespace oar::dist;  // NOLINT
  // Leaked on purpose: the translator may run until interpreter exit.
  static py::handle comm_error = py::exception<CommError>(d, "CommunicationError", PyExc_RuntimeError).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CommError& e) {
      py::set_error(comm_error, e.message().c_str());
    }
  });

  py::class_<Store, std::shared_ptr<Store>>(d, "Store")
      .def("set", [](Store& s, const std::string& k, py::bytes v) { s.set(k, std::string(v)); })
      .def(
          "get",
          [](Store& s, const std::string& k, double timeout) {
    std::string v;
    {
      py::gil_scoped_release release;
      v = s.get(k, to_ms(timeout));
    }
    return py::bytes(v);
          },
          py::arg("key"), py::arg("timeout"))
      .def("add", &Store::add, py::call_guard<py::gil_scoped_release>())
      .def("check", &Store::check, py::call_guard<py::gil_scoped_release>())
      .def(
          "wait", [](Store& s, const std::vector<std::string>& keys, double timeout) { s.wait(keys, to_ms(timeout)); },
          py::arg("keys"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>());
  py::class_<TCPStore, Store, std::shared_ptr<TCPStore>>(d, "TCPStore")
      .def(py::init([](const std::string& host, int port, bool is_master, double timeout) {
             return std::make_shared<TCPStore>(host, port, is_master, to_ms(timeout));
           }),
           py::arg("host"), py::arg("port"), py::arg("is_master"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("port", &TCPStore::port)
      .def_property_readonly("host", &TCPStore::host);

  py::class_<Task, std::shared_ptr<Task>>(d, "Task")
      .def(
          "wait",
          [](Task& t, double timeout) {
    t.wait(to_ms(timeout));
    return true;
          },
          py::arg("timeout") = 0.0, py::call_guard<py::gil_scoped_release>())
      .def("is_completed", &Task::is_completed)
      .def_property_readonly("op", &Task::op);

  auto dense = [](py::handle h, const char* op, const char* arg) { return py_to_tensor(h, op, arg).dense(); };
  // A tensor a collective writes: an in-place write, so its version counter moves (what
  // caches its contents, e.g. a packed conv filter, sees the write).
  auto written = [](py::handle h, const char* op, const char* arg) {
    DenseTensor d = py_to_tensor(h, op, arg).dense();
    if (d.storage()) d.storage()->bump_version();
    return d;
  };
  auto reduce = [](int op) { return static_cast<ReduceOp>(op); };
  using PG = ProcessGroup;
  using TaskPtr = std::shared_ptr<Task>;
  // Converts under the GIL, then submits (and, for sync ops, waits) without it.
  auto nogil = [](auto fn) {
    py::gil_scoped_release release;
    return fn();
  };
  py::class_<PG, std::shared_ptr<PG>>(d, "ProcessGroup")
      .def_property_readonly("rank", &PG::rank)
      .def_property_readonly("size", &PG::size)
      .def_property_readonly("ranks", &PG::ranks)
      .def_property_readonly("name", &PG::name)
      .def_property_readonly("backend", &PG::backend)
      .def_property_readonly("timeout", [](const PG& g) { return g.timeout().count() / 1000.0; })
      .def(
          "all_reduce",
          [=](PG& g, py::handle t, int op, bool sync) {
    auto x = written(t, "all_reduce", "tensor");
    return nogil([&] { return g.all_reduce(x, reduce(op), sync); });
          })
      .def(
          "all_gather",
          [=](PG& g, py::handle out, py::handle in, bool sync) {
    auto o = written(out, "all_gather", "tensor_list"), i = dense(in, "all_gather", "tensor");
    return nogil([&] { return g.all_gather(o, i, sync); });
          })
      .def(
          "reduce_scatter",
          [=](PG& g, py::handle out, py::handle in, int op, bool sync) {
    auto o = written(out, "reduce_scatter", "tensor"), i = dense(in, "reduce_scatter", "tensor_list");
    return nogil([&] { return g.reduce_scatter(o, i, reduce(op), sync); });
          })
      .def(
          "broadcast",
          [=](PG& g, py::handle t, int root, bool sync) {
    auto x = written(t, "broadcast", "tensor");
    return nogil([&] { return g.broadcast(x, root, sync); });
          })
      .def(
          "reduce",
          [=](PG& g, py::handle t, int root, int op, bool sync) {
    auto x = written(t, "reduce", "tensor");
    return nogil([&] { return g.reduce(x, root, reduce(op), sync); });
          })
      .def(
          "scatter",
          [=](PG& g, py::handle out, py::handle in, int root, bool sync) {
    auto o = written(out, "scatter", "tensor");
    DenseTensor i = in.is_none() ? DenseTensor() : dense(in, "scatter", "tensor_list");
    return nogil([&] { return g.scatter(o, i, root, sync); });
          })
      .def(
          "alltoall",
          [=](PG& g, py::handle out, py::handle in, bool sync) {
    auto o = written(out, "alltoall", "out_tensor_list"), i = dense(in, "alltoall", "in_tensor_list");
    return nogil([&] { return g.alltoall(o, i, sync); });
          })
      .def(
          "send",
          [=](PG& g, py::handle t, int dst, bool sync) {
    auto x = dense(t, "send", "tensor");
    return nogil([&] { return g.send(x, dst, sync); });
          })
      .def(
          "recv",
          [=](PG& g, py::handle t, int src, bool sync) {
    auto x = written(t, "recv", "tensor");
    return nogil([&] { return g.recv(x, src, sync); });
          })
      .def(
          "barrier", [](PG& g) -> TaskPtr { return g.barrier(); }, py::call_guard<py::gil_scoped_release>())
      .def("shutdown", &PG::shutdown, py::call_guard<py::gil_scoped_release>());

  // DataParallel's bucket copies (Note [DataParallel buckets]): one call per bucket instead of a
  // concat and a slice per parameter, into a flat buffer kept across steps.
  d.def("bucket_pack", [](py::handle flat, py::handle grads) {
    DenseTensor f = py_to_tensor(flat, "bucket_pack", "flat").dense();
    std::vector<DenseTensor> gs;
    for (py::handle g : grads) gs.push_back(py_to_tensor(g, "bucket_pack", "grads").dense());
    bucket_check("bucket_pack", f, gs);
    py::gil_scoped_release release;
    char* out = static_cast<char*>(f.raw_data());
    for (const DenseTensor& g : gs) {
      size_t n = g.numel() * size_of(f.dtype());
      if (n) std::memcpy(out, g.raw_data(), n);
      out += n;
    }
  });
  // The reverse, dividing by `divisor` on the way (the all-reduce is a SUM; dividing here
  // instead of in an AVG all-reduce saves a pass over the bucket, with the same rounding).
  d.def("bucket_unpack", [](py::handle flat, py::handle grads, int divisor) {
    DenseTensor f = py_to_tensor(flat, "bucket_unpack", "flat").dense();
    std::vector<DenseTensor> gs;
    for (py::handle g : grads) gs.push_back(py_to_tensor(g, "bucket_unpack", "grads").dense());
    bucket_check("bucket_unpack", f, gs);
    OAR_ENFORCE(divisor >= 1 && is_floating(f.dtype()), InvalidArgument,
                "bucket_unpack: divisor must be >= 1 on a floating-point bucket, got ", divisor, " on ",
                dtype_name(f.dtype()));
    py::gil_scoped_release release;
    visit_dtype(f.dtype(), "bucket_unpack", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        using M = OpMath<T>;
        const M d = M(divisor);
        // x / 2^k and x * 2^-k round alike (both are the exact quotient, rounded once), and the
        // product vectorizes ~4x cheaper than the division.
        const bool pow2 = (divisor & (divisor - 1)) == 0;
        const M r = M(1) / d;
        const T* src = f.data<T>();
        for (const DenseTensor& g : gs) {
          T* dst = g.data<T>();
          const int64_t n = g.numel();
          if (pow2) {
            for (int64_t i = 0; i < n; ++i) dst[i] = T(M(src[i]) * r);
          } else {
            for (int64_t i = 0; i < n; ++i) dst[i] = T(M(src[i]) / d);
          }
          src += n;
        }
      }
    });
  });

  d.def(
      "create_process_group",
      [](const std::string& backend, int rank, const std::vector<int>& ranks, const std::string& name,
         std::shared_ptr<Store> store, const std::string& hostname, double timeout, bool debug,
         const std::string& device) {
    GroupInfo info{rank, ranks, name, to_ms(timeout), debug, parse_place(device)};
    return create_process_group(backend, std::move(info), std::move(store), hostname);
      },
      py::arg("backend"), py::arg("rank"), py::arg("ranks"), py::arg("name"), py::arg("store"), py::arg("hostname"),
      py::arg("timeout"), py::arg("debug"), py::arg("device") = "cpu", py::call_guard<py::gil_scoped_release>());
  d.def("default_timeout", [] { return default_timeout().count() / 1000.0; });

  // ---- auto-parallel execution: reshard and the dist dispatch layer
  d.def("set_comm_context", [](std::shared_ptr<Store> store, const std::string& hostname, double timeout, bool debug,
                               int rank, std::shared_ptr<PG> world) {
    dist::CommContext c;
    c.store = std::move(store);
    c.hostname = hostname;
    c.timeout = to_ms(timeout);
    c.debug = debug;
    c.rank = rank;
    c.world = std::move(world);
    dist::set_comm_context(std::move(c));
  });
  d.def("reset_comm_context", &dist::reset_comm_context, py::call_guard<py::gil_scoped_release>());
  d.def("enable_dist_layer", &dist::enable_dist_layer);
  // reshard(t, mesh shape, process ids, dim names, placements as (kind, dim, reduce)).
  d.def("reshard", [](py::handle t, std::vector<int64_t> shape, std::vector<int64_t> ids,
                      std::vector<std::string> names, const std::vector<std::tuple<int, int64_t, int>>& ps) {
    Tensor x = py_to_tensor(t, "reshard", "dist_tensor");
    dist::ProcessMesh mesh(std::move(shape), std::move(ids), std::move(names));
    const dist::Placements to = placements_of(ps);
    Tensor out;
    {
      py::gil_scoped_release release;
      out = dist::reshard(x, mesh, to);
    }
    return wrap(out);
  });
  // Note [DistModel]: the dist dialect (reshard's transfers recorded as ops) and its
  // lowering to executor steps.
  dist::register_dist_dialect(pir::IrContext::global());
  d.def(
      "lower_collectives",
      [](const ProgramRef& prog) {
    ++prog->generation;
    return dist::lower_collectives(*prog->p);
      },
      "Replaces the program's dist.* ops by kernel steps running their transfers; returns how many.");
  set_update_recorder(&record_update);
  d.def(
      "drop_annotations",
      [](const ProgramRef& prog) {
    ++prog->generation;
    std::vector<pir::Operation*> ops;
    prog->p->module()->walk([&](pir::Operation* op) {
      if (op->name() == dist::kShardAnnotateOp) ops.push_back(op);
    });
    for (pir::Operation* op : ops) {
      op->replace_all_uses_with({op->operand(0)});
      op->erase();
    }
    return ops.size();
      },
      "Removes the program's dist.shard_annotate ops (each result becomes its operand): the serial program one "
      "process runs. Returns how many.");
  d.def("cross_mesh_sent_bytes", &dist::cross_mesh_sent_bytes,
        "The bytes this process has sent in cross-mesh transfers (a counter; tests check what moved).");
  d.def(
      "defer_sends",
      [](bool on) {
    if (on) {
      dist::begin_deferred_sends();
    } else {
      dist::end_deferred_sends();
    }
      },
      py::call_guard<py::gil_scoped_release>(),
      "True: cross-mesh sends stop waiting for their receivers (DistModel's 1F1B, each stage in its own order); "
      "False: waits for those sent meanwhile.");
  d.def(
      "set_update_inputs",
      [](py::handle lr, py::handle step, py::handle skip) {
    if (lr.is_none()) {
      dist::set_update_inputs(Tensor(), Tensor());
      return;
    }
    dist::set_update_inputs(py_to_tensor(lr, "set_update_inputs", "lr"),
                            py_to_tensor(step, "set_update_inputs", "step"),
                            skip.is_none() ? Tensor() : py_to_tensor(skip, "set_update_inputs", "skip"));
      },
      py::arg("lr"), py::arg("step"), py::arg("skip") = py::none(),
      "While DistModel traces a step: the program inputs holding the learning rate and the step count; the "
      "optimizer's fused updates are then recorded as dist.<rule>_update ops (None, None: ends it). skip: a "
      "traced bool (GradScaler's found_inf) that makes the recorded update leave everything as it is when true.");
#endif
}

}  // namespace oar::python
