// float32 and bfloat16 convolution, its data gradient and its filter gradient on oneDNN.
// Tensors stay in their plain layout (NCHW / NHWC ...); per geometry, the first call
// times oneDNN's preferred layouts, the plain ones and channels in vector-width blocks,
// reached through reorders, and (float32 forward) im2col + GEMM and Winograd F(2x2,3x3),
// and keeps the fastest
// (see tune(); the candidates: Note [Convolution tuning]). A filter seen again unchanged
// is kept in its candidate's layout (Note [Filters reused across calls]; both in
// docs/notes/cpu_speed_steps.md). Primitives
// and reorders are cached per geometry: creating them costs far more than a small
// convolution. Reorder targets and scratchpads live in per-thread workspaces reused
// across calls. At t > 1 threads a batch runs in slices on Oar's pool (Note [Convolutions
// on the pool], docs/notes/thread_pool.md). The inference form with bias and relu:
// conv_onednn_fused.cc.
#include <gflags/gflags.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/conv_onednn_common.h"
#include "phi_kernels/cpu/omp_serial.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/funcs/conv_im2col.h"
#include "phi_kernels/funcs/conv_onednn.h"
#include "phi_kernels/funcs/conv_winograd.h"
#include "phi_kernels/funcs/sgemm.h"
#include "phi_kernels/funcs/tuning_records.h"

// Paddle's switch for reproducible convolutions. Oar's CPU convolutions time their
// candidates once per geometry and process and keep the fastest, so under load two
// processes may pick different algorithms, whose sums run in another order (results
// equal to ~1e-6, not bit-equal). Set, every convolution takes oneDNN's preferred
// candidate without timing (or OAR_CONV_ALGO's): the same algorithm, so the same bits,
// in every process, at the cost of the tuned choice's speed.
DEFINE_bool(cudnn_deterministic, false,
            "Convolutions pick their algorithm by a fixed rule instead of timing candidates, so results are "
            "bit-identical across processes (Paddle's flag; on the CPU it covers Oar's convolution tuning)");

namespace oar::phi {
namespace onednn_detail {

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

/// OAR_CONV_TUNE_LOG=1: print each convolution's candidate timings to stderr, once per
/// geometry (nothing when FLAGS_cudnn_deterministic leaves nothing to time).
bool tune_log() {
  static const bool on = [] {
    const char* v = std::getenv("OAR_CONV_TUNE_LOG");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

/// OAR_CONV_ALGO=onednn|onednn-plain|onednn-blocked|im2col|winograd|direct-rows|direct-channels: use that candidate
/// where it applies instead of timing them (debugging, and tests of each path). Read at every call, so a test can
/// switch it; geometries tuned under another setting are cached under another key.
std::string forced_algo() {
  const char* v = std::getenv("OAR_CONV_ALGO");
  return v ? v : "";
}

// The cache key of a geometry: its numbers as raw bytes (readable: true spells them out
// for the tuning log). Built on every call, so no number formatting.
std::string key_of(const ConvGeometry& g, char kind, bool readable) {
  std::string k(1, kind);
  k.reserve(readable ? 128 : 1 + 27 * 4);
  auto add = [&](int64_t v) {
    if (readable) {
      k += std::to_string(v) + ',';
    } else {
      const int32_t x = static_cast<int32_t>(v);
      k.append(reinterpret_cast<const char*>(&x), sizeof x);
    }
  };
  add(g.nd), add(g.channels_last), add(g.batch), add(g.in_c), add(g.out_c), add(g.groups);
  for (int i = 0; i < g.nd; ++i) {
    add(g.in[i]), add(g.out[i]), add(g.k[i]), add(g.stride[i]), add(g.dil[i]), add(g.pad_l[i]);
    add(g.pad_r[i]);
  }
  return k;
}

bool timing_picks() { return !FLAGS_cudnn_deterministic && forced_algo().empty(); }

// What a recorded pick depends on besides the machine and Oar's build: oneDNN's version
// and the ISA its kernels run (ONEDNN_MAX_CPU_ISA may cap it).
const std::string& records_context() {
  static const std::string s = [] {
    const dnnl_version_t* v = dnnl_version();
    return "onednn " + std::to_string(v->major) + '.' + std::to_string(v->minor) + '.' + std::to_string(v->patch) +
           " isa " + std::to_string(static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
  }();
  return s;
}

std::string recalled_pick(const std::string& key) {
  return timing_picks() ? recall_choice("conv", records_context(), key) : "";
}

void record_pick(const std::string& key, const char* name) { record_choice("conv", records_context(), key, name); }

/// key_of for the cache of tuned choices: one entry per geometry and setting of
/// FLAGS_cudnn_deterministic (a choice made by timing is not reused once it is set).
std::string tune_key(const ConvGeometry& g, char kind, memory::data_type dt) {
  // The thread count the candidates ran at: a batch slice on the pool is tuned at one
  // thread (Note [Convolutions on the pool]), a whole convolution at OpenMP's count.
  return key_of(g, kind) + (FLAGS_cudnn_deterministic ? 'D' : 'T') +
         static_cast<char>('0' + std::min(omp_get_max_threads(), 64)) + (dt == memory::data_type::bf16 ? "bf16:" : "") +
         forced_algo();
}

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

tag blocked_tag(const ConvGeometry& g) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  const bool wide = (isa & avx512) == avx512;
  static const tag t16[3] = {tag::nCw16c, tag::nChw16c, tag::nCdhw16c};
  static const tag t8[3] = {tag::nCw8c, tag::nChw8c, tag::nCdhw8c};
  return (wide ? t16 : t8)[g.nd - 1];
}

// dt: f32, or bf16 (oneDNN's bf16 kernels accumulate in f32; Note [bf16 convolution]).
Mds mds_of(const ConvGeometry& g, Layout layout, memory::data_type dt) {
  const auto f32 = dt;
  const auto sd = act_dims(g, g.in_c, g.in), dd = act_dims(g, g.out_c, g.out);
  const auto wd = weight_dims(g);
  const tag act_any = layout == Layout::kPlain ? act_tag(g) : layout == Layout::kBlocked ? blocked_tag(g) : tag::any;
  return {memory::desc(sd, f32, act_tag(g)), memory::desc(dd, f32, act_tag(g)),
          memory::desc(wd, f32, weight_tag(g)), memory::desc(sd, f32, act_any),
          memory::desc(dd, f32, act_any), memory::desc(wd, f32, tag::any)};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc fwd_pd(const ConvGeometry& g, const Mds& m, dnnl::prop_kind kind) {
  const Attrs a = attrs_of(g);
  dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, m.any_src, m.any_w, m.any_dst, a.strides,
                                    a.dil, a.pl, a.pr);
  return dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
}

// Per-thread reusable temporaries (slot 0-2: reordered operands, 3: scratchpad), so a
// repeated convolution does not fault in fresh pages every call.
struct OnednnConvTag;
void* workspace(int slot, size_t bytes) {
  if (bytes == 0) return nullptr;
  return thread_workspace<OnednnConvTag, 4>(slot, bytes);
}

// Runs `p` on the user's buffers (in the order of p.ops), reordering through
// temporaries where the primitive wants another layout; `packed_w`: the weights
// operand already in the primitive's layout.
void run(ConvPrim& p, const std::array<void*, 3>& user, const void* packed_w = nullptr) {
  auto& e = cpu_engine();
  dnnl::stream s(e);
  std::unordered_map<int, memory> args;
  memory user_mem[3], prim_mem[3];
  for (int i = 0; i < 3; ++i) {
    Operand& o = p.ops[i];
    user_mem[i] = memory(o.user_md, e, user[i]);
    prim_mem[i] = user_mem[i];
    if (o.reorder && i == 1 && packed_w) {
      prim_mem[i] = memory(o.prim_md, e, const_cast<void*>(packed_w));
    } else if (o.reorder) {
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

const char* layout_name(Layout l) {
  static const char* names[3] = {"onednn", "onednn-plain", "onednn-blocked"};
  return names[static_cast<int>(l)];
}

/// `p`'s weights operand (user layout at `w`) reordered into `packed` (prim_md's size).
void pack_weights(const ConvPrim& p, const void* w, void* packed) {
  const Operand& o = p.ops[1];
  auto& e = cpu_engine();
  dnnl::stream s(e);
  memory user(o.user_md, e, const_cast<void*>(w)), prim(o.prim_md, e, packed);
  o.to_prim.execute(s, user, prim);
  s.wait();
}

// Picks, on the first call of a geometry, the fastest of oneDNN's preferred layouts
// (with reorders), the user's plain layout, channels in vector-width blocks and the
// `extra` candidates (the float32 forward's im2col + GEMM and Winograd F(2x2,3x3)):
// blocked layouts win for wide convolutions, plain ones when the reorders cost more than
// they save (1x1, few channels), im2col + one GEMM for small images with many channels.
// `call` runs a candidate (default: run()). All candidates run on the real buffers, each
// preparing its filter as on a first call; the final run overwrites. Each is timed as
// the best of at least five runs after a warm-up (more, up to 40, until 30 ms are
// spent), the candidates in turn, so one disturbed run does not decide, on tune_clock().
using CallFn = std::function<void(ConvPrim&)>;

// Under load, wall-clock timings picked a 20-50% slower candidate in some processes.
double tune_clock() {
  if (omp_get_max_threads() == 1) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The candidate called `name` alone, where it applies: oneDNN's in one of its layouts
// (other than its preferred one, not where that falls to its reference kernel), else one
// of `extra`.
template <typename Make>
std::optional<ConvPrim> named_candidate(const std::string& name, Make& make, std::vector<ConvPrim>& extra) {
  for (Layout l : {Layout::kPreferred, Layout::kPlain, Layout::kBlocked}) {
    if (name != layout_name(l)) continue;
    try {
      ConvPrim c = make(l);
      if (l == Layout::kPreferred || c.impl.rfind("ref", 0) != 0) return c;
    } catch (const dnnl::error&) {
    }
    return std::nullopt;
  }
  for (ConvPrim& c : extra)
    if (name == c.name) return std::move(c);
  return std::nullopt;
}

// The minimum of many short runs is what survives a busy neighbour core (ResNet-18 b1 had
// picked a candidate 20% slower in one process out of three before the 5-round minimum).
std::vector<double> time_rounds(size_t n, const std::function<void(size_t)>& call,
                                const std::function<void(size_t)>& before) {
  std::vector<double> t(n, 1e30);
  std::vector<bool> out(n, false);
  for (size_t i = 0; i < n; ++i) call(i);  // warm-up (first-touch of the workspaces)
  double spent = 0;
  size_t left = n;
  // Rounds interleaved, so a disturbance hits all; after the second, the candidates over
  // kDropAfter2 times the best so far run no more (a disturbance only slows a run down).
  constexpr double kDropAfter2 = 1.25;
  for (int r = 0; r < 40 && left > 1 && (r < 5 || spent < 0.03); ++r) {
    for (size_t i = 0; i < n; ++i) {
      if (out[i]) continue;
      if (before) before(i);
      const double t0 = tune_clock();
      call(i);
      const double dt = tune_clock() - t0;
      t[i] = std::min(t[i], dt);
      spent += dt;
    }
    if (r != 1) continue;
    const double best = *std::min_element(t.begin(), t.end());
    for (size_t i = 0; i < n; ++i)
      if (!out[i] && t[i] > kDropAfter2 * best) out[i] = true, --left;
  }
  return t;
}

// `key`: the tune key, under which the pick is recorded (Note [Tuning records]). The
// candidate OAR_CONV_ALGO names, else the one recorded for `key`, is built alone and not
// timed.
template <typename Make>
ConvPrim tune(const std::string& key, Make make, const std::array<void*, 3>& user, std::vector<ConvPrim> extra = {},
              const CallFn& call_one = nullptr) {
  const bool timing = timing_picks();
  const std::string want = timing ? recalled_pick(key) : forced_algo();
  if (!want.empty()) {
    if (std::optional<ConvPrim> c = named_candidate(want, make, extra)) {
      if (timing && tune_log())
        std::fprintf(stderr, "[oar conv tune] layout: %s (%s) (recorded)\n", c->name, c->impl.c_str());
      return std::move(*c);
    }
  }
  std::vector<ConvPrim> cands{make(Layout::kPreferred)};
  for (Layout l : {Layout::kPlain, Layout::kBlocked}) {
    try {
      ConvPrim c = make(l);
      // oneDNN's reference kernel (a layout its optimized ones do not take) is
      // orders of magnitude slower: not worth the time of timing it.
      bool dup = c.impl.rfind("ref", 0) == 0;  // or the same layouts as an earlier candidate
      for (const ConvPrim& o : cands) {
        bool same = true;
        for (int i = 0; i < 3; ++i) same = same && o.ops[i].prim_md == c.ops[i].prim_md;
        dup = dup || same;
      }
      if (!dup) cands.push_back(std::move(c));
    } catch (const dnnl::error&) {
    }
  }
  for (ConvPrim& c : extra) cands.push_back(std::move(c));
  if (FLAGS_cudnn_deterministic) return cands[0];  // oneDNN's preferred layout, untimed
  const size_t n = cands.size();
  if (n == 1) {
    if (timing) record_pick(key, cands[0].name);  // spares the next process the others' making
    return cands[0];
  }
  auto call = [&](size_t i) {
    if (call_one)
      call_one(cands[i]);
    else
      run(cands[i], user);
  };
  const std::vector<double> t = time_rounds(n, call);
  const size_t best = std::min_element(t.begin(), t.end()) - t.begin();
  if (timing) record_pick(key, cands[best].name);
  if (tune_log()) {
    std::fprintf(stderr, "[oar conv tune] layout:");
    for (size_t i = 0; i < n; ++i)
      std::fprintf(stderr, " %s (%s) %.3f ms%s", cands[i].name, cands[i].impl.c_str(), t[i] * 1e3,
                   i == best ? " (picked)" : "");
    std::fprintf(stderr, "\n");
  }
  return cands[best];
}

FilterStamp::FilterStamp(const std::shared_ptr<const Storage>& s, const void* w, size_t bytes, bool keep_bytes)
    : owner_(s), ptr_(w), bytes_(bytes) {
  if (!s) return;
  version_ = s->version();
  shared_ = s->shared_out();
  if (shared_ && keep_bytes) {
    copy_ = Workspace(CPUPlace(), bytes);
    std::memcpy(copy_.data(), w, bytes);
  }
}

bool FilterStamp::same_version(const std::shared_ptr<const Storage>& s, const void* w) const {
  return s && ptr_ == w && version_ == s->version() && shared_ == s->shared_out() && owner_.lock() == s;
}

bool FilterStamp::unchanged(const std::shared_ptr<const Storage>& s, const void* w) const {
  if (!same_version(s, w)) return false;
  if (!shared_) return true;
  return copy_.bytes() == bytes_ && std::memcmp(copy_.data(), w, bytes_) == 0;
}

bool split_enabled() {
  const char* v = std::getenv("OAR_CONV_SPLIT");  // read at every call: tests switch it
  return v == nullptr || v[0] != '0';
}

int64_t split_chunk(const ConvGeometry& g) {
  const int t = omp_get_max_threads();
  if (t < 2 || g.batch < t || in_parallel_region() || !split_enabled()) return 0;
  return parallel_chunk(g.batch);
}

ChannelSlices channel_slices(const ConvGeometry& g) {
  ChannelSlices c;
  const int t = omp_get_max_threads();
  if (t < 2 || g.batch >= t || g.channels_last || in_parallel_region() || !split_enabled()) return c;
  const int64_t per_group = g.out_c / g.groups;
  c.groups = g.groups == 1 ? 1 : std::max<int64_t>(1, kChannelBlock / per_group);
  c.out_c = g.groups == 1 ? kChannelBlock : c.groups * per_group;
  if (g.out_c % c.out_c != 0 || g.groups % c.groups != 0) return c;
  c.units = g.out_c / c.out_c;
  if (c.units >= 2) c.chunk = parallel_chunk(c.units);
  return c;
}

ConvGeometry ChannelSlices::sub(const ConvGeometry& g, int64_t n) const {
  ConvGeometry s = g;
  s.batch = 1;
  s.out_c = n * out_c;
  if (g.groups > 1) {
    s.groups = n * groups;
    s.in_c = g.in_c / g.groups * s.groups;
  }
  return s;
}

size_t image_bytes(const ConvGeometry& g, int64_t c, const int64_t* sp, memory::data_type dt) {
  return static_cast<size_t>(c * sp[0] * sp[1] * sp[2]) * (dt == memory::data_type::bf16 ? 2 : 4);
}

int64_t conv_cost(const ConvGeometry& g) {
  const int64_t os = g.out[0] * g.out[1] * g.out[2], ks = g.k[0] * g.k[1] * g.k[2];
  return std::max(kParallelGrain, sgemm_cost(g.out_c, g.batch * os, g.in_c / g.groups * ks));
}

// Note [Convolutions in cache slices] (docs/notes/cpu_speed_steps.md): at one thread (and
// in each pool chunk of Note [Convolutions on the pool]), a batch whose activations exceed
// kCacheSliceBytes may run as consecutive slices of images (each slice tuned as its own
// geometry), so that what a candidate reorders and writes stays in L2; whether it does is
// timed once per geometry against the whole batch, at one thread.
// OAR_CONV_CACHE_SLICES=0|1 (read at every call) forces whole or sliced.
constexpr size_t kCacheSliceBytes = 1 << 20;

int64_t cache_slice_len(const ConvGeometry& g, memory::data_type dt) {
  const size_t per = image_bytes(g, g.in_c, g.in, dt) + image_bytes(g, g.out_c, g.out, dt);
  const int64_t b = std::max<int64_t>(1, static_cast<int64_t>(kCacheSliceBytes / std::max<size_t>(per, 1)));
  if (b >= g.batch || omp_get_max_threads() != 1) return 0;
  const int64_t n = (g.batch + b - 1) / b;
  return (g.batch + n - 1) / n;
}

namespace {

class SliceChoices {  // per tuning key: whether the geometry runs in cache slices
 public:
  int find(const std::string& k) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    return it == map_.end() ? -1 : it->second;
  }
  void put(const std::string& k, bool v) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= 1024) map_.clear();
    map_[k] = v;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, bool> map_;
};

SliceChoices& slice_choices() {
  static SliceChoices c;
  return c;
}

}  // namespace

int slice_choice(const std::string& key) {
  const char* env = std::getenv("OAR_CONV_CACHE_SLICES");
  if (env && (env[0] == '0' || env[0] == '1')) return env[0] == '1';
  const int known = slice_choices().find(key);
  if (known >= 0) return known;
  if (!timing_picks()) {  // nothing to time
    slice_choices().put(key, false);
    return 0;
  }
  const std::string recorded = recalled_pick(key);
  if (recorded == "sliced" || recorded == "whole") {
    slice_choices().put(key, recorded == "sliced");
    return recorded == "sliced";
  }
  return -1;
}

bool time_slices(const std::string& key, int64_t len, const std::function<void()>& whole,
                 const std::function<void()>& sliced) {
  // The first runs (the warm-up) tune both.
  const std::vector<double> t = time_rounds(2, [&](size_t i) { i == 0 ? whole() : sliced(); });
  const double tw = t[0], ts = t[1];
  const bool pick = ts < tw;
  slice_choices().put(key, pick);
  record_pick(key, pick ? "sliced" : "whole");
  if (tune_log())
    std::fprintf(stderr, "[oar conv tune] %c: cache slices of %lld images: %.3f ms, whole batch %.3f ms%s\n", key[0],
                 static_cast<long long>(len), ts * 1e3, tw * 1e3, pick ? " (picked)" : "");
  return pick;
}

}  // namespace onednn_detail

using namespace onednn_detail;  // NOLINT

namespace {

ConvPrim make_fwd(const ConvGeometry& g, Layout layout, memory::data_type dt) {
  const Mds m = mds_of(g, layout, dt);
  auto pd = fwd_pd(g, m, dnnl::prop_kind::forward_inference);
  ConvPrim c;
  c.prim = dnnl::convolution_forward(pd);
  c.ops[0].init(DNNL_ARG_SRC, false, m.src, pd.src_desc());
  c.ops[1].init(DNNL_ARG_WEIGHTS, false, m.w, pd.weights_desc());
  c.ops[2].init(DNNL_ARG_DST, true, m.dst, pd.dst_desc());
  c.scratch_md = pd.scratchpad_desc();
  c.impl = pd.impl_info_str();
  c.name = layout_name(layout);
  return c;
}

// Note [Filters reused across calls]: what the forward convolution knows of a filter
// buffer it has seen (per geometry and address). Stage 1 (`packed` false): its stamp
// when last seen. Seen again unchanged, the filter is being reused (inference, a
// benchmark loop): stage 2 keeps its form in the tuned candidate's layout (a oneDNN
// reorder, the Winograd transform), valid while the stamp holds (FilterStamp: the version
// counter, and for storage shared out with NumPy or DLPack its bytes). The candidate is
// the same as on a first call, and packing is exact, so a reused filter gives the same
// bits as a fresh one.
struct SeenFilter {
  FilterStamp stamp;
  bool packed = false;
  std::weak_ptr<const ConvPrim> packed_for;  // the candidate whose layout `data` holds
  Workspace data;                            // stage 2: the packed filter
};

class SeenFilters {
 public:
  std::shared_ptr<SeenFilter> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  void put(const std::string& key, std::shared_ptr<SeenFilter> f) {
    const size_t b = f->stamp.copy_bytes() + f->data.bytes();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) bytes_ -= it->second->stamp.copy_bytes() + it->second->data.bytes();
    // Bounded: cleared (entries in use live on in their callers) past 1024 filters or
    // 512 MiB of packed filters and copies.
    if (map_.size() >= 1024 || bytes_ + b > (size_t{512} << 20)) map_.clear(), bytes_ = 0;
    map_[key] = std::move(f);
    bytes_ += b;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<SeenFilter>> map_;
  size_t bytes_ = 0;
};

SeenFilters& seen_filters() {
  static SeenFilters c;
  return c;
}

}  // namespace

namespace {

// The forward's tuned candidate for a geometry and its filter prepared for it
// (`packed`, null: prepared at the call; `seen` keeps it alive).
struct FwdPlan {
  std::shared_ptr<ConvPrim> p;
  std::shared_ptr<SeenFilter> seen;
  const void* packed = nullptr;
};

// Runs the forward candidate p on the user's buffers; `packed`: its filter prepared
// beforehand (else prepared here).
void exec_fwd(const ConvGeometry& g, ConvPrim& p, const void* packed, const void* src, const void* w, void* dst) {
  const auto* fsrc = static_cast<const float*>(src);
  const auto* fw = static_cast<const float*>(w);
  auto* fdst = static_cast<float*>(dst);
  if (p.algo == ConvPrim::kIm2col) return conv_im2col_fwd(g, fsrc, fw, fdst);
  if (p.algo == ConvPrim::kOneDnn) return run(p, {const_cast<void*>(src), const_cast<void*>(w), dst}, packed);
  if (!packed) {  // Winograd: the filter transformed on every first sight
    packed = workspace(1, conv_winograd_filter_size(g) * sizeof(float));
    conv_winograd_transform_filter(g, fw, static_cast<float*>(const_cast<void*>(packed)));
  }
  conv_winograd_fwd(g, fsrc, static_cast<const float*>(packed), fdst, nullptr, false);
}

// Tunes g's forward in element type dt on its first call (im2col + GEMM and Winograd are
// candidates for f32 only; the candidates run on src, w and dst) and prepares its filter.
FwdPlan plan_fwd(const ConvGeometry& g, const void* src, const void* w, void* dst, memory::data_type dt,
                 const std::shared_ptr<const Storage>& w_storage) {
  const bool f32 = dt == memory::data_type::f32;
  auto make = [&](Layout layout) { return make_fwd(g, layout, dt); };
  const std::array<void*, 3> user{const_cast<void*>(src), const_cast<void*>(w), dst};
  const std::string key = tune_key(g, 'f', dt);
  FwdPlan plan;
  plan.p = cache().get(key, [&] {
    std::vector<ConvPrim> extra;
    auto offer = [&](bool ok, ConvPrim::Algo algo, const char* name) {
      if (!f32 || !ok) return;
      extra.emplace_back().algo = algo;
      extra.back().name = name, extra.back().impl = name;
    };
    offer(conv_im2col_fwd_supported(g), ConvPrim::kIm2col, "im2col");
    offer(conv_winograd_fwd_supported(g), ConvPrim::kWinograd, "winograd");
    const bool had_im2col = !extra.empty() && extra[0].algo == ConvPrim::kIm2col;
    ConvPrim c = tune(key, make, user, std::move(extra), [&](ConvPrim& q) { exec_fwd(g, q, nullptr, src, w, dst); });
    if (had_im2col && c.algo != ConvPrim::kIm2col) conv_im2col_release();
    return c;
  });
  const ConvPrim& p = *plan.p;
  // The bytes of p's packed filter (0: it runs on the user's filter).
  const size_t packed_bytes = p.algo == ConvPrim::kWinograd ? conv_winograd_filter_size(g) * sizeof(float)
                              : p.algo == ConvPrim::kOneDnn && p.ops[1].reorder ? p.ops[1].prim_md.get_size()
                                                                                : 0;
  if (!w_storage || packed_bytes == 0) return plan;
  std::string fkey = key;
  fkey.append(reinterpret_cast<const char*>(&w), sizeof w);
  std::shared_ptr<SeenFilter> seen = seen_filters().find(fkey);
  const size_t user_bytes = static_cast<size_t>(filter_numel(g)) * (f32 ? sizeof(float) : sizeof(uint16_t));
  if (!seen || !seen->stamp.same_version(w_storage, w)) {  // first sight (or a new version)
    auto f = std::make_shared<SeenFilter>();
    f->stamp = FilterStamp(w_storage, w, user_bytes, /*keep_bytes=*/false);
    seen_filters().put(fkey, std::move(f));
    return plan;
  }
  if (!seen->packed || seen->packed_for.lock() != plan.p || !seen->stamp.unchanged(w_storage, w)) {
    auto f = std::make_shared<SeenFilter>();
    f->stamp = FilterStamp(w_storage, w, user_bytes, /*keep_bytes=*/true);
    f->packed = true, f->packed_for = plan.p;
    f->data = Workspace(CPUPlace(), packed_bytes);
    if (p.algo == ConvPrim::kWinograd)
      conv_winograd_transform_filter(g, static_cast<const float*>(w), f->data.data<float>());
    else
      pack_weights(p, w, f->data.data());
    seen_filters().put(fkey, f);
    seen = std::move(f);
  }
  plan.packed = seen->data.data();
  plan.seen = std::move(seen);
  return plan;
}

// Note [Convolutions on the pool], Winograd slices: at t > 1 threads a geometry whose
// whole batch picks Winograd at one thread runs Winograd on every slice, with one filter
// transform (packed once for a reused filter, else made here) shared by all slices. Tuned
// slice by slice, each slice's Winograd candidate paid the whole filter transform for its
// share of the batch, and a [8, 512, 7, 7] slice picked oneDNN (7.9 ms at 2 threads,
// against 6.0 with Winograd slices). Returns false (nothing run) when the pick is another.
bool winograd_slices(const ConvGeometry& g, const void* src, const void* w, void* dst, memory::data_type dt,
                     const std::shared_ptr<const Storage>& w_storage) {
  if (dt != memory::data_type::f32 || !conv_winograd_fwd_supported(g)) return false;
  FwdPlan plan;
  {
    OmpSerial serial;  // the whole batch's choice at one thread: the same cache entry as a 1-thread run
    if (plan_fwd(g, src, w, dst, dt, nullptr).p->algo != ConvPrim::kWinograd) return false;
    plan = plan_fwd(g, src, w, dst, dt, w_storage);  // the transformed filter, for a reused one
  }
  const auto* u = static_cast<const float*>(plan.packed);
  if (!u) {
    auto* t = static_cast<float*>(workspace(1, conv_winograd_filter_size(g) * sizeof(float)));
    conv_winograd_transform_filter(g, static_cast<const float*>(w), t);
    u = t;
  }
  const size_t si = image_bytes(g, g.in_c, g.in, dt), di = image_bytes(g, g.out_c, g.out, dt);
  parallel_for(
      g.batch,
      [&](int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    conv_winograd_fwd(with_batch(g, hi - lo), reinterpret_cast<const float*>(static_cast<const char*>(src) + lo * si),
                      u, reinterpret_cast<float*>(static_cast<char*>(dst) + lo * di), nullptr, false);
      },
      conv_cost(g));
  return true;
}

// g's batch as consecutive slices of `len` images (len < g.batch): the plans of its slice
// lengths, len and the last slice's remainder (if any), prepared on the first slice's buffers.
struct SlicePlan {
  int64_t len = 0;  // 0: the batch runs whole
  int64_t lens[2] = {0, 0};
  FwdPlan plans[2];
};

SlicePlan plan_slices(const ConvGeometry& g, int64_t len, const void* src, const void* w, void* dst,
                      memory::data_type dt, const std::shared_ptr<const Storage>& w_storage) {
  SlicePlan sp;
  sp.len = sp.lens[0] = len;
  sp.plans[0] = plan_fwd(with_batch(g, len), src, w, dst, dt, w_storage);
  if (const int64_t last = g.batch % len)
    sp.lens[1] = last, sp.plans[1] = plan_fwd(with_batch(g, last), src, w, dst, dt, w_storage);
  return sp;
}

void run_slices(const ConvGeometry& g, const SlicePlan& sp, const void* src, const void* w, void* dst,
                memory::data_type dt) {
  const size_t si = image_bytes(g, g.in_c, g.in, dt), di = image_bytes(g, g.out_c, g.out, dt);
  for (int64_t lo = 0; lo < g.batch; lo += sp.len) {
    const int64_t n = std::min(sp.len, g.batch - lo);
    const FwdPlan& plan = sp.plans[n == sp.lens[0] ? 0 : 1];
    exec_fwd(with_batch(g, n), *plan.p, plan.packed, static_cast<const char*>(src) + lo * si, w,
             static_cast<char*>(dst) + lo * di);
  }
}

// The cache slice length g's forward runs in at one thread (timed_slice_len), 0: the whole batch.
int64_t tuned_slice_len(const ConvGeometry& g, const void* src, const void* w, void* dst, memory::data_type dt,
                        const std::shared_ptr<const Storage>& w_storage) {
  return timed_slice_len(
      g, dt, tune_key(g, 's', dt),
      [&] {
    const FwdPlan plan = plan_fwd(g, src, w, dst, dt, w_storage);
    exec_fwd(g, *plan.p, plan.packed, src, w, dst);
      },
      [&](int64_t len) { run_slices(g, plan_slices(g, len, src, w, dst, dt, w_storage), src, w, dst, dt); });
}

// A pool chunk's forward: its plan, or its slices' plans where it runs in cache slices.
struct ChunkPlan {
  FwdPlan whole;
  SlicePlan slices;
};

// The forward convolution in element type dt.
void conv_fwd(const ConvGeometry& g, const void* src, const void* w, void* dst, memory::data_type dt,
              const std::shared_ptr<const Storage>& w_storage) {
  if (split_chunk(g) && winograd_slices(g, src, w, dst, dt, w_storage)) return;
  if (const int64_t chunk = split_chunk(g)) {
    const size_t si = image_bytes(g, g.in_c, g.in, dt), di = image_bytes(g, g.out_c, g.out, dt);
    const auto* s0 = static_cast<const char*>(src);
    auto* d0 = static_cast<char*>(dst);
    // each chunk runs in cache slices where they pay at one thread (prep runs at one)
    return on_pool(
        g, chunk,
        [&](const ConvGeometry& sub, int64_t lo) {
      ChunkPlan c;
      if (const int64_t len = tuned_slice_len(sub, s0 + lo * si, w, d0 + lo * di, dt, w_storage))
        c.slices = plan_slices(sub, len, s0 + lo * si, w, d0 + lo * di, dt, w_storage);
      else
        c.whole = plan_fwd(sub, s0 + lo * si, w, d0 + lo * di, dt, w_storage);
      return c;
        },
        [&](const ConvGeometry& sub, const ChunkPlan& c, int64_t lo) {
      if (c.slices.len) return run_slices(sub, c.slices, s0 + lo * si, w, d0 + lo * di, dt);
      exec_fwd(sub, *c.whole.p, c.whole.packed, s0 + lo * si, w, d0 + lo * di);
    });
  }
  if (const int64_t len = tuned_slice_len(g, src, w, dst, dt, w_storage))
    return run_slices(g, plan_slices(g, len, src, w, dst, dt, w_storage), src, w, dst, dt);
  const FwdPlan plan = plan_fwd(g, src, w, dst, dt, w_storage);
  exec_fwd(g, *plan.p, plan.packed, src, w, dst);
}

}  // namespace

void onednn_conv_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                     const std::shared_ptr<const Storage>& w_storage) {
  conv_fwd(g, src, w, dst, memory::data_type::f32, w_storage);
}

namespace {

// The data / filter gradient's tuned primitive for g in element type dt (tuned on the
// user's buffers on the first call).
std::shared_ptr<ConvPrim> bwd_data_prim(const ConvGeometry& g, const std::array<void*, 3>& user, memory::data_type dt) {
  auto make = [&](Layout layout) {
    const Mds m = mds_of(g, layout, dt);
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
    c.impl = pd.impl_info_str();
    c.name = layout_name(layout);
    return c;
  };
  const std::string key = tune_key(g, 'd', dt);
  return cache().get(key, [&] { return tune(key, make, user); });
}

void conv_bwd_data(const ConvGeometry& g, const void* diff_dst, const void* w, void* diff_src, memory::data_type dt) {
  if (const int64_t chunk = split_chunk(g)) {  // Note [Convolutions on the pool]
    const size_t di = image_bytes(g, g.out_c, g.out, dt), si = image_bytes(g, g.in_c, g.in, dt);
    auto user = [&](int64_t lo) {
      return std::array<void*, 3>{const_cast<char*>(static_cast<const char*>(diff_dst)) + lo * di, const_cast<void*>(w),
                                  static_cast<char*>(diff_src) + lo * si};
    };
    return on_pool(
        g, chunk, [&](const ConvGeometry& sub, int64_t lo) { return bwd_data_prim(sub, user(lo), dt); },
        [&](const ConvGeometry&, const std::shared_ptr<ConvPrim>& p, int64_t lo) { run(*p, user(lo)); });
  }
  const std::array<void*, 3> user{const_cast<void*>(diff_dst), const_cast<void*>(w), diff_src};
  run(*bwd_data_prim(g, user, dt), user);
}

std::shared_ptr<ConvPrim> bwd_weights_prim(const ConvGeometry& g, const std::array<void*, 3>& user,
                                           memory::data_type dt) {
  auto make = [&](Layout layout) {
    const Mds m = mds_of(g, layout, dt);
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
    c.impl = pd.impl_info_str();
    c.name = layout_name(layout);
    return c;
  };
  const std::string key = tune_key(g, 'w', dt);
  return cache().get(key, [&] { return tune(key, make, user); });
}

struct ConvPartialTag;

void conv_bwd_weights(const ConvGeometry& g, const void* src, const void* diff_dst, void* diff_w,
                      memory::data_type dt) {
  // Note [Convolutions on the pool]: each batch slice's filter gradient into its own
  // buffer (the first slice's into diff_w), summed after in slice order. float32 only: a
  // bf16 partial would be rounded twice.
  if (const int64_t chunk = dt == memory::data_type::f32 ? split_chunk(g) : 0) {
    const size_t si = image_bytes(g, g.in_c, g.in, dt), di = image_bytes(g, g.out_c, g.out, dt);
    const int64_t nw = filter_numel(g);
    const int64_t slices = (g.batch + chunk - 1) / chunk;
    auto* part = static_cast<float*>(
        thread_workspace<ConvPartialTag, 1>(0, static_cast<size_t>((slices - 1) * nw) * sizeof(float)));
    auto user = [&](int64_t lo) {
      const int64_t s = lo / chunk;
      return std::array<void*, 3>{const_cast<char*>(static_cast<const char*>(src)) + lo * si,
                                  const_cast<char*>(static_cast<const char*>(diff_dst)) + lo * di,
                                  s == 0 ? diff_w : static_cast<void*>(part + (s - 1) * nw)};
    };
    on_pool(
        g, chunk, [&](const ConvGeometry& sub, int64_t lo) { return bwd_weights_prim(sub, user(lo), dt); },
        [&](const ConvGeometry&, const std::shared_ptr<ConvPrim>& p, int64_t lo) { run(*p, user(lo)); });
    auto* dw = static_cast<float*>(diff_w);
    parallel_for(
        nw,
        [&](int64_t i0, int64_t i1) {
      for (int64_t s = 1; s < slices; ++s) {
        const float* ps = part + (s - 1) * nw;
        for (int64_t i = i0; i < i1; ++i) dw[i] += ps[i];
      }
        },
        (slices - 1) * nw);
    return;
  }
  const std::array<void*, 3> user{const_cast<void*>(src), const_cast<void*>(diff_dst), diff_w};
  run(*bwd_weights_prim(g, user, dt), user);
}

}  // namespace

void onednn_conv_bwd_data(const ConvGeometry& g, const float* diff_dst, const float* w, float* diff_src) {
  conv_bwd_data(g, diff_dst, w, diff_src, memory::data_type::f32);
}

void onednn_conv_bwd_weights(const ConvGeometry& g, const float* src, const float* diff_dst, float* diff_w) {
  conv_bwd_weights(g, src, diff_dst, diff_w, memory::data_type::f32);
}

bool onednn_conv_bf16_supported() { return onednn_runs_isa(dnnl_cpu_isa_avx512_core_bf16); }

void onednn_conv_fwd_bf16(const ConvGeometry& g, const uint16_t* src, const uint16_t* w, uint16_t* dst,
                          const std::shared_ptr<const Storage>& w_storage) {
  conv_fwd(g, src, w, dst, memory::data_type::bf16, w_storage);
}

void onednn_conv_bwd_data_bf16(const ConvGeometry& g, const uint16_t* diff_dst, const uint16_t* w, uint16_t* diff_src) {
  conv_bwd_data(g, diff_dst, w, diff_src, memory::data_type::bf16);
}

void onednn_conv_bwd_weights_bf16(const ConvGeometry& g, const uint16_t* src, const uint16_t* diff_dst,
                                  uint16_t* diff_w) {
  conv_bwd_weights(g, src, diff_dst, diff_w, memory::data_type::bf16);
}

}  // namespace oar::phi
