// The inference convolution with bias and relu post-ops (fused_conv2d), in batch slices on
// Oar's pool at t > 1 threads (Note [Convolutions on the pool]): per geometry the
// first call times oneDNN's candidates (conv_onednn.cc's layouts), im2col + GEMM, Winograd
// F(2x2,3x3) and the direct small-filter kernels (conv_direct.h) where they apply, each
// with its filter reordered once and cached per filter buffer (Note [Convolution tuning]).
#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/conv_onednn_common.h"
#include "phi_kernels/funcs/conv_direct.h"
#include "phi_kernels/funcs/conv_im2col.h"
#include "phi_kernels/funcs/conv_onednn.h"
#include "phi_kernels/funcs/conv_winograd.h"

namespace oar::phi {

using namespace onednn_detail;  // NOLINT

namespace {

// The memory objects and argument maps of one oneDNN convolution, made once and pointed
// at each call's buffers: creating them, the stream and the maps cost ~2-3 us a call, a
// sizeable part of a LeNet-sized convolution. A primitive keeps kBounds of them, for the
// pool's chunks that run it at once (slices of one length); a thread that finds them all
// in use makes its own for that call.
struct Bound {
  std::mutex mu;
  bool ready = false;
  memory user_src, prim_src, weights, user_dst, prim_dst, bias, scratch;
  std::unordered_map<int, memory> args, src_reorder, dst_reorder;
};

struct FusedConv {
  // "onednn" (its preferred layouts), "onednn-plain", "onednn-blocked", "im2col", "winograd", "direct-rows",
  // "direct-channels" (OAR_CONV_ALGO's names)
  const char* algo = "onednn";
  // Which kernel runs: `base` (oneDNN), or conv_im2col_fwd, conv_winograd_fwd on the
  // transformed filter, conv_direct_rows_fwd / conv_direct_channels_fwd (these with the
  // bias and relu).
  enum Path { kOneDnn, kIm2col, kWinograd, kRows, kChannels } path = kOneDnn;
  ConvPrim base;  // ops: src, weights, dst
  memory::desc bias_md;
  bool has_bias = false;
  std::string wkey;  // names this primitive's packed filters
  static constexpr int kBounds = 4;
  std::unique_ptr<Bound[]> bound = std::make_unique<Bound[]>(kBounds);
};

// A filter reordered to a primitive's layout, valid while its stamp holds (Note [Filters
// reused across calls]).
struct PackedWeights {
  FilterStamp stamp;
  Workspace data;
};

struct FusedCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<FusedConv>> prims;
  std::unordered_map<std::string, std::shared_ptr<PackedWeights>> weights;
  size_t weight_bytes = 0;  // of `weights`' packed filters and copies
};

size_t bytes_of(const PackedWeights& p) { return p.data.bytes() + p.stamp.copy_bytes(); }

FusedCache& fused_cache() {
  static FusedCache c;
  return c;
}

FusedConv make_fused(const ConvGeometry& g, const std::string& key, Layout layout, bool bias, bool relu) {
  const Mds m = mds_of(g, layout);
  const Attrs a = attrs_of(g);
  FusedConv f;
  f.has_bias = bias;
  f.algo = layout_name(layout);
  f.wkey = key + (layout == Layout::kPlain ? 'p' : layout == Layout::kBlocked ? 'b' : 'd');
  f.bias_md = memory::desc({g.out_c}, memory::data_type::f32, tag::x);
  using fwd = dnnl::convolution_forward;
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  fwd::desc d = bias ? fwd::desc(kind, alg, m.any_src, m.any_w, f.bias_md, m.any_dst, a.strides, a.dil, a.pl, a.pr)
                     : fwd::desc(kind, alg, m.any_src, m.any_w, m.any_dst, a.strides, a.dil, a.pl, a.pr);
  dnnl::primitive_attr attr = user_scratchpad();
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  fwd::primitive_desc pd(d, attr, cpu_engine());
  f.base.prim = fwd(pd);
  f.base.ops[0].init(DNNL_ARG_SRC, false, m.src, pd.src_desc());
  f.base.ops[1].init(DNNL_ARG_WEIGHTS, false, m.w, pd.weights_desc());
  f.base.ops[2].init(DNNL_ARG_DST, true, m.dst, pd.dst_desc());
  f.base.scratch_md = pd.scratchpad_desc();
  f.base.impl = pd.impl_info_str();
  return f;
}

/// Flushes [p, p + bytes) out of every cache level.
void evict(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
  _mm_mfence();
}

// The filter in the primitive's layout: `w` itself, or its cached reorder.
// (Winograd: the filter transformed by conv_winograd_transform_filter.)
std::shared_ptr<PackedWeights> packed_weights(FusedConv& f, const ConvGeometry& g, const float* w,
                                              const std::shared_ptr<const Storage>& storage) {
  const bool winograd = f.path == FusedConv::kWinograd;
  if (!winograd && !f.base.ops[1].reorder) return nullptr;
  FusedCache& c = fused_cache();
  std::string k = f.wkey + '@';
  k.append(reinterpret_cast<const char*>(&w), sizeof w);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.weights.find(k);
    if (it != c.weights.end() && it->second->stamp.unchanged(storage, w)) return it->second;
  }
  auto p = std::make_shared<PackedWeights>();
  const size_t user_bytes = static_cast<size_t>(filter_numel(g)) * 4;
  p->stamp = FilterStamp(storage, w, user_bytes, /*keep_bytes=*/true);
  const Operand& o = f.base.ops[1];
  const size_t bytes = winograd ? conv_winograd_filter_size(g) * sizeof(float) : o.prim_md.get_size();
  p->data = Workspace(CPUPlace(), bytes);
  if (winograd) {
    conv_winograd_transform_filter(g, w, static_cast<float*>(p->data.data()));
  } else {
    auto& e = cpu_engine();
    dnnl::stream s(e);
    memory user(o.user_md, e, const_cast<float*>(w)), prim(o.prim_md, e, p->data.data());
    o.to_prim.execute(s, user, prim);
    s.wait();
  }
  if (!storage) return p;  // no identity to check later: not cached
  std::lock_guard<std::mutex> lock(c.mu);
  // Packing is rare once filters are reused, so each one drops the filters whose storage
  // died (eager code may convolve with a new filter tensor at every call). Bounded at 1024
  // filters or 512 MiB (then cleared; entries in use live on in their callers).
  for (auto it = c.weights.begin(); it != c.weights.end();) {
    if (!it->second->stamp.expired()) {
      ++it;
      continue;
    }
    c.weight_bytes -= bytes_of(*it->second);
    it = c.weights.erase(it);
  }
  auto& old = c.weights[k];
  if (old) c.weight_bytes -= bytes_of(*old);
  old = p;
  c.weight_bytes += bytes_of(*p);
  if (c.weights.size() > 1024 || c.weight_bytes > (size_t{512} << 20)) {
    c.weights.clear();
    c.weights[k] = p;
    c.weight_bytes = bytes_of(*p);
  }
  return p;
}

void run_fused(FusedConv& f, const float* src, const float* w, const PackedWeights* pw, const float* bias, float* dst) {
  auto& e = cpu_engine();
  thread_local dnnl::stream s(e);
  Operand* ops = f.base.ops;
  std::unique_lock<std::mutex> lock;
  Bound* held = nullptr;
  for (int i = 0; i < FusedConv::kBounds && !held; ++i) {
    lock = std::unique_lock<std::mutex>(f.bound[i].mu, std::try_to_lock);
    if (lock.owns_lock()) held = &f.bound[i];
  }
  Bound own;  // only when other threads hold all of f's
  Bound& m = held ? *held : own;
  if (!m.ready) {
    m.user_src = memory(ops[0].user_md, e, nullptr);
    m.prim_src = ops[0].reorder ? memory(ops[0].prim_md, e, nullptr) : m.user_src;
    m.weights = memory(ops[1].prim_md, e, nullptr);
    m.user_dst = memory(ops[2].user_md, e, nullptr);
    m.prim_dst = ops[2].reorder ? memory(ops[2].prim_md, e, nullptr) : m.user_dst;
    m.args = {{DNNL_ARG_SRC, m.prim_src}, {DNNL_ARG_WEIGHTS, m.weights}, {DNNL_ARG_DST, m.prim_dst}};
    if (f.has_bias) m.args[DNNL_ARG_BIAS] = m.bias = memory(f.bias_md, e, nullptr);
    if (f.base.scratch_md.get_size() > 0)
      m.args[DNNL_ARG_SCRATCHPAD] = m.scratch = memory(f.base.scratch_md, e, nullptr);
    m.src_reorder = {{DNNL_ARG_FROM, m.user_src}, {DNNL_ARG_TO, m.prim_src}};
    m.dst_reorder = {{DNNL_ARG_FROM, m.prim_dst}, {DNNL_ARG_TO, m.user_dst}};
    m.ready = true;
  }
  // The workspaces are per thread and may have moved: every handle is set every call.
  m.user_src.set_data_handle(const_cast<float*>(src));
  if (ops[0].reorder) m.prim_src.set_data_handle(workspace(0, ops[0].prim_md.get_size()));
  m.weights.set_data_handle(pw ? pw->data.data() : const_cast<float*>(w));
  m.user_dst.set_data_handle(dst);
  if (ops[2].reorder) m.prim_dst.set_data_handle(workspace(2, ops[2].prim_md.get_size()));
  if (f.has_bias) m.bias.set_data_handle(const_cast<float*>(bias));
  if (f.base.scratch_md.get_size() > 0) m.scratch.set_data_handle(workspace(3, f.base.scratch_md.get_size()));
  if (ops[0].reorder) ops[0].to_prim.execute(s, m.src_reorder);
  f.base.prim.execute(s, m.args);
  if (ops[2].reorder) ops[2].to_user.execute(s, m.dst_reorder);
  s.wait();
}

// Runs candidate p of g on the user's buffers (its filter packed on first sight).
void run_candidate(const ConvGeometry& g, FusedConv& p, const float* src, const float* w, const float* bias, bool relu,
                   const std::shared_ptr<const Storage>& w_storage, float* dst) {
  if (p.path == FusedConv::kIm2col) return conv_im2col_fwd(g, src, w, dst, bias, relu);
  if (p.path == FusedConv::kRows) return conv_direct_rows_fwd(g, src, w, dst, bias, relu);
  if (p.path == FusedConv::kChannels) return conv_direct_channels_fwd(g, src, w, dst, bias, relu);
  auto pw = packed_weights(p, g, w, w_storage);
  if (p.path == FusedConv::kWinograd)
    return conv_winograd_fwd(g, src, static_cast<const float*>(pw->data.data()), dst, bias, relu);
  run_fused(p, src, w, pw.get(), bias, dst);
}

// The fused candidates for g: every one that applies, or (`only` not empty) the one of
// that name alone, none where it does not apply.
std::vector<std::shared_ptr<FusedConv>> fused_candidates(const ConvGeometry& g, const std::string& key, bool bias,
                                                         bool relu, const std::string& only) {
  std::vector<std::shared_ptr<FusedConv>> cands;
  // As tune(): oneDNN's preferred layouts, the plain ones, im2col + GEMM and Winograd,
  // timed on the real buffers with the filter reorder left out (it is done once per filter).
  for (Layout l : {Layout::kPreferred, Layout::kPlain, Layout::kBlocked}) {
    if (!only.empty() && only != layout_name(l)) continue;
    try {
      auto c = std::make_shared<FusedConv>(make_fused(g, key, l, bias, relu));
      bool dup = l != Layout::kPreferred && c->base.impl.rfind("ref", 0) == 0;  // as in tune()
      for (const auto& o : cands) {
        bool same = true;
        for (int i = 0; i < 3; ++i) same = same && o->base.ops[i].prim_md == c->base.ops[i].prim_md;
        dup = dup || same;
      }
      if (!dup) cands.push_back(c);
    } catch (const dnnl::error&) {
      if (l == Layout::kPreferred) throw;
    }
  }
  // The candidates beside oneDNN's, where they handle the geometry.
  auto offer = [&](bool supported, FusedConv::Path path, const char* algo) {
    if (!supported || (!only.empty() && only != algo)) return;
    cands.push_back(std::make_shared<FusedConv>());
    cands.back()->path = path;
    cands.back()->algo = algo;
    if (path == FusedConv::kWinograd) cands.back()->wkey = key + 'w';  // its transformed filters
  };
  offer(conv_im2col_fwd_supported(g), FusedConv::kIm2col, "im2col");
  offer(conv_winograd_fwd_supported(g), FusedConv::kWinograd, "winograd");
  offer(conv_direct_rows_supported(g), FusedConv::kRows, "direct-rows");
  offer(conv_direct_channels_supported(g), FusedConv::kChannels, "direct-channels");
  return cands;
}

// g's tuned candidate: on the first call of a geometry the candidates are timed on the
// user's buffers (the last one run leaves dst written; the caller runs the pick after),
// unless OAR_CONV_ALGO or the tuning records (Note [Tuning records]) name one that applies.
std::shared_ptr<FusedConv> fused_plan(const ConvGeometry& g, const float* src, const float* w, const float* bias,
                                      bool relu, const std::shared_ptr<const Storage>& w_storage, float* dst) {
  const std::string forced = forced_algo();
  const std::string key = tune_key(g, 'F') + (bias ? 'b' : '-') + (relu ? 'r' : '-');
  FusedCache& c = fused_cache();
  std::shared_ptr<FusedConv> f;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.prims.find(key);
    if (it != c.prims.end()) f = it->second;
  }
  auto run_one = [&](FusedConv& p) { run_candidate(g, p, src, w, bias, relu, w_storage, dst); };
  if (!f) {
    const bool timing = timing_picks();
    const std::string want = timing ? recalled_pick(key) : forced;
    std::vector<std::shared_ptr<FusedConv>> cands;
    if (!want.empty()) cands = fused_candidates(g, key, bias != nullptr, relu, want);
    const bool named = !cands.empty();
    if (named && timing && tune_log())
      std::fprintf(stderr, "[oar conv tune] %s%c%c: %s (recorded)\n", key_of(g, 'F', true).c_str(), bias ? 'b' : '-',
                   relu ? 'r' : '-', cands[0]->algo);
    if (!named) cands = fused_candidates(g, key, bias != nullptr, relu, "");
    if (FLAGS_cudnn_deterministic) cands.resize(1);  // the forced one, else oneDNN's preferred
    f = cands[0];
    if (timing && !named && cands.size() == 1) record_pick(key, f->algo);
    if (cands.size() > 1) {
      // Best of interleaved rounds after a warm-up: a single timed run per candidate let
      // one disturbed run pick a layout 4x slower (ResNet-18's 64->128 stride-2 conv).
      // Each timed run starts with the candidate's filter out of the caches, as in a
      // network, whose filters together exceed them (the activations, just written by
      // the previous op, stay hot): with a hot filter, small batches picked Winograd,
      // whose transformed filter is 16/9 the size, where it lost in the network (ResNet-18
      // b1 6.7 -> 7.5 ms).
      const size_t w_bytes = static_cast<size_t>(filter_numel(g)) * 4;
      const std::vector<double> t = time_rounds(
          cands.size(), [&](size_t i) { run_one(*cands[i]); },
          [&](size_t i) {
        FusedConv& p = *cands[i];
        const bool winograd = p.path == FusedConv::kWinograd;
        if (winograd || p.base.ops[1].reorder) {
          auto pw = packed_weights(p, g, w, w_storage);
          evict(pw->data.data(), winograd ? conv_winograd_filter_size(g) * 4 : p.base.ops[1].prim_md.get_size());
        } else {
          evict(w, w_bytes);
        }
          });
      f = cands[std::min_element(t.begin(), t.end()) - t.begin()];
      if (timing) record_pick(key, f->algo);
      if (tune_log()) {
        std::fprintf(stderr, "[oar conv tune] %s%c%c%s:", key_of(g, 'F', true).c_str(), bias ? 'b' : '-',
                     relu ? 'r' : '-', forced.c_str());
        for (size_t i = 0; i < cands.size(); ++i)
          std::fprintf(stderr, " %s %.3f ms%s", cands[i]->algo, t[i] * 1e3, cands[i] == f ? " (picked)" : "");
        std::fprintf(stderr, "\n");
      }
      const auto im2col = [](const auto& p) { return p->path == FusedConv::kIm2col; };
      if (!im2col(f) && std::any_of(cands.begin(), cands.end(), im2col)) conv_im2col_release();
    }
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.prims.size() >= 512) c.prims.clear();
    c.prims.emplace(key, f);
  }
  return f;
}

// Note [Convolutions in cache slices], the inference form: at one thread a batch whose
// activations exceed the slice budget may run as consecutive slices of images (each slice
// length tuned as its own geometry), whether it does timed once per geometry against the
// whole batch, as conv2d's forward does (eager inference at batch 8 took 1.4x conv2d's
// time on a depthwise [8, 144, 28, 28] without it).
void run_fused_slices(const ConvGeometry& g, int64_t len, const float* src, const float* w, const float* bias,
                      bool relu, const std::shared_ptr<const Storage>& w_storage, float* dst) {
  const int64_t si = g.in_c * g.in[0] * g.in[1] * g.in[2], di = g.out_c * g.out[0] * g.out[1] * g.out[2];
  for (int64_t lo = 0; lo < g.batch; lo += len) {
    const ConvGeometry sub = with_batch(g, std::min(len, g.batch - lo));
    run_candidate(sub, *fused_plan(sub, src + lo * si, w, bias, relu, w_storage, dst + lo * di), src + lo * si, w, bias,
                  relu, w_storage, dst + lo * di);
  }
}

// The cache slice length g runs in at one thread (timed_slice_len), 0: the whole batch.
int64_t fused_slice_len(const ConvGeometry& g, const float* src, const float* w, const float* bias, bool relu,
                        const std::shared_ptr<const Storage>& w_storage, float* dst) {
  return timed_slice_len(
      g, memory::data_type::f32, tune_key(g, 'S') + (bias ? 'b' : '-') + (relu ? 'r' : '-'),
      [&] { run_candidate(g, *fused_plan(g, src, w, bias, relu, w_storage, dst), src, w, bias, relu, w_storage, dst); },
      [&](int64_t len) { run_fused_slices(g, len, src, w, bias, relu, w_storage, dst); });
}

// Note [Convolutions on the pool], channel slices: fewer images than threads run as
// parallel_for's chunks of whole units of output channels (ChannelSlices), each chunk one
// image at a time. In NCHW a slice's filter rows and bias, and an image's output channels
// (and a group convolution's input channels), are contiguous: pointer offsets.
void run_channel_slices(const ConvGeometry& g, const ChannelSlices& cs, const float* src, const float* w,
                        const float* bias, bool relu, const std::shared_ptr<const Storage>& w_storage, float* dst) {
  const int64_t is = g.in[0] * g.in[1] * g.in[2], os = g.out[0] * g.out[1] * g.out[2];
  const int64_t wc = filter_numel(g) / g.out_c;  // filter elements per output channel
  // A slice's first output channel, and its input's offset in an image.
  struct At {
    int64_t c0, in0;
  };
  auto at = [&](int64_t lo) {
    const int64_t c0 = lo * cs.out_c;
    return At{c0, g.groups > 1 ? c0 / (g.out_c / g.groups) * (g.in_c / g.groups) * is : 0};
  };
  on_pool_units(
      cs.units, cs.chunk, conv_cost(g), [&](int64_t n) { return cs.sub(g, n); },
      [&](const ConvGeometry& sub, int64_t lo) {
    const At a = at(lo);
    return fused_plan(sub, src + a.in0, w + a.c0 * wc, bias ? bias + a.c0 : nullptr, relu, w_storage, dst + a.c0 * os);
      },
      [&](const ConvGeometry& sub, const std::shared_ptr<FusedConv>& f, int64_t lo) {
    const At a = at(lo);
    for (int64_t b = 0; b < g.batch; ++b)
      run_candidate(sub, *f, src + b * g.in_c * is + a.in0, w + a.c0 * wc, bias ? bias + a.c0 : nullptr, relu,
                    w_storage, dst + (b * g.out_c + a.c0) * os);
  });
}

}  // namespace

void onednn_conv_fwd_fused(const ConvGeometry& g, const float* src, const float* w, const float* bias, bool relu,
                           const std::shared_ptr<const Storage>& w_storage, float* dst) {
  if (const ChannelSlices cs = channel_slices(g); cs.chunk)
    return run_channel_slices(g, cs, src, w, bias, relu, w_storage, dst);
  if (const int64_t chunk = split_chunk(g)) {  // Note [Convolutions on the pool]
    const int64_t si = g.in_c * g.in[0] * g.in[1] * g.in[2], di = g.out_c * g.out[0] * g.out[1] * g.out[2];
    return on_pool(
        g, chunk,
        [&](const ConvGeometry& sub, int64_t lo) {
      return fused_plan(sub, src + lo * si, w, bias, relu, w_storage, dst + lo * di);
        },
        [&](const ConvGeometry& sub, const std::shared_ptr<FusedConv>& f, int64_t lo) {
      run_candidate(sub, *f, src + lo * si, w, bias, relu, w_storage, dst + lo * di);
    });
  }
  if (const int64_t len = fused_slice_len(g, src, w, bias, relu, w_storage, dst))
    return run_fused_slices(g, len, src, w, bias, relu, w_storage, dst);
  run_candidate(g, *fused_plan(g, src, w, bias, relu, w_storage, dst), src, w, bias, relu, w_storage, dst);
}

}  // namespace oar::phi
