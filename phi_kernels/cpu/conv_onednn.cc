// float32 convolution, its data gradient and its filter gradient on oneDNN. Tensors
// stay in their plain layout (NCHW / NHWC ...); per geometry, the first call times
// oneDNN's preferred (blocked) layouts, reached through reorders, against the plain
// layout and keeps the faster (see tune()). Primitives and reorders are cached per
// geometry: creating them costs far more than a small convolution. Reorder targets
// and scratchpads live in per-thread workspaces reused across calls.
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "paddle_core/base/errors.h"
#include "phi_kernels/funcs/conv_onednn.h"

namespace oar::phi {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::dims act_dims(const ConvGeometry& g, int64_t c, const int64_t* sp) {
  memory::dims d{g.batch, c};
  for (int i = 0; i < g.nd; ++i) d.push_back(sp[i]);
  return d;
}

tag act_tag(const ConvGeometry& g) {
  if (g.nd == 1) return g.channels_last ? tag::nwc : tag::ncw;
  if (g.nd == 2) return g.channels_last ? tag::nhwc : tag::nchw;
  return g.channels_last ? tag::ndhwc : tag::ncdhw;
}

memory::dims weight_dims(const ConvGeometry& g) {
  memory::dims d;
  if (g.groups > 1) d.push_back(g.groups);
  d.push_back(g.out_c / g.groups);
  d.push_back(g.in_c / g.groups);
  for (int i = 0; i < g.nd; ++i) d.push_back(g.k[i]);
  return d;
}

tag weight_tag(const ConvGeometry& g) {
  static const tag plain[3] = {tag::oiw, tag::oihw, tag::oidhw};
  static const tag grouped[3] = {tag::goiw, tag::goihw, tag::goidhw};
  return (g.groups > 1 ? grouped : plain)[g.nd - 1];
}

struct Attrs {
  memory::dims strides, dil, pl, pr;
};

Attrs attrs_of(const ConvGeometry& g) {
  Attrs a;
  for (int i = 0; i < g.nd; ++i) {
    a.strides.push_back(g.stride[i]);
    a.dil.push_back(g.dil[i] - 1);
    a.pl.push_back(g.pad_l[i]);
    a.pr.push_back(g.pad_r[i]);
  }
  return a;
}

std::string key_of(const ConvGeometry& g, char kind) {
  std::string k(1, kind);
  auto add = [&](int64_t v) { k += std::to_string(v) + ','; };
  add(g.nd), add(g.channels_last), add(g.batch), add(g.in_c), add(g.out_c), add(g.groups);
  for (int i = 0; i < g.nd; ++i) {
    add(g.in[i]), add(g.out[i]), add(g.k[i]), add(g.stride[i]), add(g.dil[i]), add(g.pad_l[i]);
    add(g.pad_r[i]);
  }
  return k;
}

// One operand of a cached convolution: the user's plain layout, the layout the
// primitive chose, and the reorder between them when they differ.
struct Operand {
  int arg = 0;
  bool is_output = false;
  memory::desc user_md, prim_md;
  bool reorder = false;
  dnnl::reorder to_prim, to_user;

  void init(int a, bool out, const memory::desc& user, const memory::desc& chosen) {
    arg = a, is_output = out, user_md = user, prim_md = chosen;
    reorder = user != chosen;
    if (!reorder) return;
    auto& e = cpu_engine();
    if (out) to_user = dnnl::reorder(dnnl::reorder::primitive_desc(e, chosen, e, user));
    else to_prim = dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, chosen));
  }
};

// One cached convolution: the primitive and its three operands (oneDNN picks the
// layouts; a blocked layout is usually several times faster than plain NCHW).
struct ConvPrim {
  dnnl::primitive prim;
  Operand ops[3];
  memory::desc scratch_md;
};

class PrimCache {
 public:
  template <typename Make>
  std::shared_ptr<ConvPrim> get(const std::string& key, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    auto p = std::make_shared<ConvPrim>(make());
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kCapacity) map_.clear();
    map_.emplace(key, p);
    return p;
  }

 private:
  static constexpr size_t kCapacity = 512;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ConvPrim>> map_;
};

PrimCache& cache() {
  static PrimCache c;
  return c;
}

struct Mds {
  memory::desc src, dst, w, any_src, any_dst, any_w;
};

// With `plain`, the primitive must use the user's activation layout (no reorders of
// the activations); otherwise oneDNN picks the layouts.
Mds mds_of(const ConvGeometry& g, bool plain = false) {
  const auto f32 = memory::data_type::f32;
  const auto sd = act_dims(g, g.in_c, g.in), dd = act_dims(g, g.out_c, g.out);
  const auto wd = weight_dims(g);
  const tag act_any = plain ? act_tag(g) : tag::any;
  return {memory::desc(sd, f32, act_tag(g)), memory::desc(dd, f32, act_tag(g)),
          memory::desc(wd, f32, weight_tag(g)), memory::desc(sd, f32, act_any),
          memory::desc(dd, f32, act_any), memory::desc(wd, f32, tag::any)};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc fwd_pd(const ConvGeometry& g, const Mds& m,
                                                 dnnl::prop_kind kind) {
  const Attrs a = attrs_of(g);
  dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, m.any_src,
                                    m.any_w, m.any_dst, a.strides, a.dil, a.pl, a.pr);
  return dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, FreeDeleter>;

// Per-thread reusable temporaries (slot 0-2: reordered operands, 3: scratchpad), so a
// repeated convolution does not fault in fresh pages every call.
void* workspace(int slot, size_t bytes) {
  thread_local Buffer bufs[4];
  thread_local size_t sizes[4] = {0, 0, 0, 0};
  if (bytes == 0) return nullptr;
  if (sizes[slot] < bytes) {
    bufs[slot].reset();
    bufs[slot] = Buffer(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    sizes[slot] = bytes;
  }
  return bufs[slot].get();
}

// Runs `p` on the user's buffers (in the order of p.ops), reordering through
// temporaries where the primitive wants another layout.
void run(ConvPrim& p, const std::array<void*, 3>& user) {
  auto& e = cpu_engine();
  dnnl::stream s(e);
  std::unordered_map<int, memory> args;
  memory user_mem[3], prim_mem[3];
  for (int i = 0; i < 3; ++i) {
    Operand& o = p.ops[i];
    user_mem[i] = memory(o.user_md, e, user[i]);
    prim_mem[i] = user_mem[i];
    if (o.reorder) {
      prim_mem[i] = memory(o.prim_md, e, workspace(i, o.prim_md.get_size()));
      if (!o.is_output) o.to_prim.execute(s, user_mem[i], prim_mem[i]);
    }
    args[o.arg] = prim_mem[i];
  }
  if (void* scratch = workspace(3, p.scratch_md.get_size())) {
    args[DNNL_ARG_SCRATCHPAD] = memory(p.scratch_md, e, scratch);
  }
  p.prim.execute(s, args);
  for (int i = 0; i < 3; ++i) {
    if (p.ops[i].reorder && p.ops[i].is_output) p.ops[i].to_user.execute(s, prim_mem[i], user_mem[i]);
  }
  s.wait();
}

// Picks, on the first call of a geometry, the faster of oneDNN's preferred layouts
// (with reorders) and the user's plain layout: blocked layouts win for wide
// convolutions, plain ones when the reorders cost more than they save (1x1, few
// channels). Both candidates run on the real buffers; the final run overwrites.
template <typename Make>
ConvPrim tune(Make make, const std::array<void*, 3>& user) {
  ConvPrim a = make(false);
  ConvPrim b;
  try {
    b = make(true);
  } catch (const dnnl::error&) {
    return a;
  }
  bool same = true;
  for (int i = 0; i < 3; ++i) same = same && a.ops[i].prim_md == b.ops[i].prim_md;
  if (same) return a;
  auto time_of = [&](ConvPrim& p) {
    run(p, user);  // warm-up (first-touch of the workspace)
    const auto t0 = std::chrono::steady_clock::now();
    run(p, user);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double ta = time_of(a), tb = time_of(b);
  return tb < ta ? b : a;
}

}  // namespace

void onednn_conv_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst) {
  auto make = [&](bool plain) {
    const Mds m = mds_of(g, plain);
    auto pd = fwd_pd(g, m, dnnl::prop_kind::forward_inference);
    ConvPrim c;
    c.prim = dnnl::convolution_forward(pd);
    c.ops[0].init(DNNL_ARG_SRC, false, m.src, pd.src_desc());
    c.ops[1].init(DNNL_ARG_WEIGHTS, false, m.w, pd.weights_desc());
    c.ops[2].init(DNNL_ARG_DST, true, m.dst, pd.dst_desc());
    c.scratch_md = pd.scratchpad_desc();
    return c;
  };
  const std::array<void*, 3> user{const_cast<float*>(src), const_cast<float*>(w), dst};
  run(*cache().get(key_of(g, 'f'), [&] { return tune(make, user); }), user);
}

void onednn_conv_bwd_data(const ConvGeometry& g, const float* diff_dst, const float* w,
                          float* diff_src) {
  auto make = [&](bool plain) {
    const Mds m = mds_of(g, plain);
    const Attrs a = attrs_of(g);
    auto hint = fwd_pd(g, m, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, m.any_src,
                                            m.any_w, m.any_dst, a.strides, a.dil, a.pl, a.pr);
    dnnl::convolution_backward_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
    ConvPrim c;
    c.prim = dnnl::convolution_backward_data(pd);
    c.ops[0].init(DNNL_ARG_DIFF_DST, false, m.dst, pd.diff_dst_desc());
    c.ops[1].init(DNNL_ARG_WEIGHTS, false, m.w, pd.weights_desc());
    c.ops[2].init(DNNL_ARG_DIFF_SRC, true, m.src, pd.diff_src_desc());
    c.scratch_md = pd.scratchpad_desc();
    return c;
  };
  const std::array<void*, 3> user{const_cast<float*>(diff_dst), const_cast<float*>(w), diff_src};
  run(*cache().get(key_of(g, 'd'), [&] { return tune(make, user); }), user);
}

void onednn_conv_bwd_weights(const ConvGeometry& g, const float* src, const float* diff_dst,
                             float* diff_w) {
  auto make = [&](bool plain) {
    const Mds m = mds_of(g, plain);
    const Attrs a = attrs_of(g);
    auto hint = fwd_pd(g, m, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, m.any_src,
                                               m.any_w, m.any_dst, a.strides, a.dil, a.pl, a.pr);
    dnnl::convolution_backward_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(),
                                                          hint);
    ConvPrim c;
    c.prim = dnnl::convolution_backward_weights(pd);
    c.ops[0].init(DNNL_ARG_SRC, false, m.src, pd.src_desc());
    c.ops[1].init(DNNL_ARG_DIFF_DST, false, m.dst, pd.diff_dst_desc());
    c.ops[2].init(DNNL_ARG_DIFF_WEIGHTS, true, m.w, pd.diff_weights_desc());
    c.scratch_md = pd.scratchpad_desc();
    return c;
  };
  const std::array<void*, 3> user{const_cast<float*>(src), const_cast<float*>(diff_dst), diff_w};
  run(*cache().get(key_of(g, 'w'), [&] { return tune(make, user); }), user);
}

}  // namespace oar::phi
