// Internals shared by conv_onednn.cc (the float32/bf16 convolutions, their tuning and
// the filters kept across calls) and conv_onednn_fused.cc (the inference convolution
// with bias and relu): oneDNN descriptors, the cached primitive and its operands, the
// tuning's keys and switches. Not part of phi_kernels/funcs: only these two files use it.
#pragma once

#include <gflags/gflags.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta_cnn.h"
#include "paddle_core/tensor/allocator.h"
#include "paddle_core/tensor/storage.h"
#include "phi_kernels/cpu/omp_serial.h"
#include "phi_kernels/cpu/parallel.h"

DECLARE_bool(cudnn_deterministic);

namespace oar::phi::onednn_detail {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine();

struct Attrs {
  memory::dims strides, dil, pl, pr;
};

Attrs attrs_of(const ConvGeometry& g);

/// OAR_CONV_TUNE_LOG=1: print each convolution's candidate timings to stderr.
bool tune_log();
/// OAR_CONV_ALGO: the candidate forced by name, or "".
std::string forced_algo();
/// The tuning's clock, in seconds: at one thread the calling thread's CPU time, which a
/// busy neighbour core does not inflate; at more threads, the wall clock.
double tune_clock();
/// Whether this call's choices come from timing (neither FLAGS_cudnn_deterministic nor
/// OAR_CONV_ALGO set): only those are recorded and recalled (Note [Tuning records]).
bool timing_picks();
/// The candidate an earlier process timed best for tune key `key` ("" when none, or when
/// timing_picks() is false; Note [Tuning records]).
std::string recalled_pick(const std::string& key);
/// Records the timed pick `name` for tune key `key`.
void record_pick(const std::string& key, const char* name);
/// Note [Convolution tuning]: the best time of each of n candidates on tune_clock(), in
/// interleaved rounds after one untimed run of each (call(i) runs candidate i; before(i),
/// untimed, precedes each timed run): at least 5 rounds and more, up to 40, until 30 ms
/// are spent, but after the second those over 1.25x the best so far drop out (their time
/// stays that of their first two rounds) and one left ends it.
std::vector<double> time_rounds(size_t n, const std::function<void(size_t)>& call,
                                const std::function<void(size_t)>& before = nullptr);
/// A geometry's cache key (readable: spelled out for the tuning log).
std::string key_of(const ConvGeometry& g, char kind, bool readable = false);
/// key_of plus the element type and the settings a tuned choice depends on
/// (FLAGS_cudnn_deterministic, OAR_CONV_ALGO).
std::string tune_key(const ConvGeometry& g, char kind, memory::data_type dt = memory::data_type::f32);

// Note [Filters reused across calls]: what a cache of a filter's packed form checks
// before it trusts it. The same storage, address and version counter; and where the
// storage is shared out (Storage::shared_out: NumPy or DLPack may write it and bump no
// version counter), the same bytes as a copy taken when the stamp was made. Storage that
// was not shared out when stamped fails the check once it is, so a copy exists wherever
// bytes must be compared.
class FilterStamp {
 public:
  FilterStamp() = default;
  /// The stamp of `bytes` of filter at w, held by s (null: matches nothing). keep_bytes:
  /// take the copy that shared-out storage is compared with (else such a stamp never
  /// matches in full, only in same_version).
  FilterStamp(const std::shared_ptr<const Storage>& s, const void* w, size_t bytes, bool keep_bytes);
  /// Same storage, address, version counter and sharing.
  bool same_version(const std::shared_ptr<const Storage>& s, const void* w) const;
  /// same_version, and for shared-out storage the same bytes.
  bool unchanged(const std::shared_ptr<const Storage>& s, const void* w) const;
  size_t copy_bytes() const { return copy_.bytes(); }
  /// The storage is gone.
  bool expired() const { return owner_.expired(); }

 private:
  std::weak_ptr<const Storage> owner_;
  const void* ptr_ = nullptr;
  uint32_t version_ = 0;
  bool shared_ = false;
  size_t bytes_ = 0;
  Workspace copy_;  // shared-out storage only
};

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
    if (out)
      to_user = dnnl::reorder(dnnl::reorder::primitive_desc(e, chosen, e, user));
    else
      to_prim = dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, chosen));
  }
};

// One cached convolution: the primitive and its three operands (oneDNN picks the
// layouts; a blocked layout is usually several times faster than plain NCHW).
struct ConvPrim {
  // What runs: `prim`, or (float32 forward only) conv_im2col_fwd or conv_winograd_fwd.
  enum Algo { kOneDnn, kIm2col, kWinograd } algo = kOneDnn;
  const char* name = "onednn";  // OAR_CONV_ALGO's name
  dnnl::primitive prim;
  std::string impl;  // oneDNN's implementation ("jit:avx512_core", "ref:any", ...)
  Operand ops[3];
  memory::desc scratch_md;
};

struct Mds {
  memory::desc src, dst, w, any_src, any_dst, any_w;
};

// The activation layout a candidate primitive is asked for: oneDNN's choice (on
// AVX-512 in 2.6 usually channels-last for its brgconv kernels), the user's own (no
// activation reorders), or channels in blocks of the vector width (nChw16c on AVX-512,
// nChw8c below), which selects oneDNN's older jit:avx512_core / jit:avx2 direct
// kernels: on Zen 4 those beat brgconv on 3x3 filters (Note [Convolution tuning]).
enum class Layout { kPreferred, kPlain, kBlocked };

/// The user's layouts and the candidate's (`any` where oneDNN picks) in element type dt.
Mds mds_of(const ConvGeometry& g, Layout layout = Layout::kPreferred, memory::data_type dt = memory::data_type::f32);
/// Primitive attributes with a user-provided scratchpad.
dnnl::primitive_attr user_scratchpad();
/// The calling thread's reusable buffer `slot` (0-2: reordered operands, 3: scratchpad).
void* workspace(int slot, size_t bytes);
/// OAR_CONV_ALGO's name of a oneDNN candidate.
const char* layout_name(Layout l);

// Note [Convolutions on the pool] (docs/notes/thread_pool.md): at t > 1 threads, outside
// any parallel region, a batch of at least t images (OAR_CONV_SPLIT unset or not "0", read
// at every call) runs as parallel_for's t chunks of whole images on Oar's pool, each chunk
// a convolution of its images at one OpenMP thread, so oneDNN opens no OpenMP region. Each
// slice length is tuned and prepared (filter packed) once, on the caller at one thread,
// before the region: the tuning times what a chunk runs. Elsewhere the whole convolution
// runs as before, oneDNN threading it with OpenMP.

/// The batch slice length when g runs on the pool, else 0.
int64_t split_chunk(const ConvGeometry& g);
/// Note [Convolutions on the pool], channel slices: an inference convolution of fewer
/// images than threads cut along its output channels, in `units` units of `groups` groups
/// and `out_c` output channels each (a group convolution cuts whole groups, and with them
/// its input channels), `chunk` units a slice. chunk 0: it does not run so.
struct ChannelSlices {
  int64_t chunk = 0, units = 0, out_c = 0, groups = 0;
  /// The geometry of n units of g.
  ConvGeometry sub(const ConvGeometry& g, int64_t n) const;
};
/// Output channels per unit of a channel slice, at least (the AVX-512 block of oneDNN's
/// layouts).
constexpr int64_t kChannelBlock = 16;
ChannelSlices channel_slices(const ConvGeometry& g);
/// Bytes of one image of an activation with c channels and spatial sizes sp.
size_t image_bytes(const ConvGeometry& g, int64_t c, const int64_t* sp, memory::data_type dt);
/// g's multiply-adds as one GEMM in sgemm_cost's units (the pool's cost; Note [GEMM splits
/// on the pool]), at least kParallelGrain.
int64_t conv_cost(const ConvGeometry& g);

/// Note [Convolutions in cache slices]: the images per cache slice for g at one thread
/// (slices of equal length where possible), 0: one slice.
int64_t cache_slice_len(const ConvGeometry& g, memory::data_type dt);
/// Whether the geometry of `key` runs sliced: 1 or 0 (OAR_CONV_CACHE_SLICES, a cached
/// choice, or nothing to time), -1 when it is still to be timed (time_slices).
int slice_choice(const std::string& key);
/// Times whole() against sliced() (both on the user's buffers, writing dst; the first run
/// of each tunes it), caches the choice under `key` and returns it.
bool time_slices(const std::string& key, int64_t len, const std::function<void()>& whole,
                 const std::function<void()>& sliced);

/// The cache slice length g runs in at one thread, 0: the whole batch. A geometry's first
/// call times the whole batch against its slices (whole(), sliced(len)); later calls read
/// the cached choice.
template <typename Whole, typename Sliced>
int64_t timed_slice_len(const ConvGeometry& g, memory::data_type dt, const std::string& key, Whole&& whole,
                        Sliced&& sliced) {
  const int64_t len = cache_slice_len(g, dt);
  if (len == 0) return 0;
  int pick = slice_choice(key);
  if (pick < 0) pick = time_slices(key, len, whole, [&] { sliced(len); });
  return pick ? len : 0;
}

/// Elements of g's filter [out_c, in_c / groups, k...].
inline int64_t filter_numel(const ConvGeometry& g) { return g.out_c * (g.in_c / g.groups) * g.k[0] * g.k[1] * g.k[2]; }

inline ConvGeometry with_batch(ConvGeometry g, int64_t n) {
  g.batch = n;
  return g;
}

/// Runs `units` units (images, channel blocks) on the pool in slices of `chunk` units:
/// prep(sub, lo) on the caller at one thread for each slice length (it tunes and prepares;
/// returns what exec needs; sub_of(n) is the geometry of n units), then exec(sub,
/// prepared, lo) for each slice [lo, lo + n) on parallel_for's chunks.
template <typename SubOf, typename Prep, typename Exec>
void on_pool_units(int64_t units, int64_t chunk, int64_t cost, SubOf&& sub_of, Prep&& prep, Exec&& exec) {
  using R = decltype(prep(sub_of(int64_t{1}), int64_t{0}));
  int64_t len[2] = {0, 0};
  R ready[2];
  {
    OmpSerial serial;
    for (int64_t lo = 0; lo < units; lo += chunk) {
      const int64_t n = std::min(chunk, units - lo);
      const int i = len[0] == 0 || len[0] == n ? 0 : 1;
      if (len[i] == n) continue;
      len[i] = n;
      ready[i] = prep(sub_of(n), lo);
    }
  }
  parallel_for(
      units,
      [&](int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    const ConvGeometry sub = sub_of(hi - lo);
    if (hi - lo == len[0]) return exec(sub, ready[0], lo);
    if (hi - lo == len[1]) return exec(sub, ready[1], lo);
    exec(sub, prep(sub, lo), lo);  // a slice parallel_for cut otherwise (not expected)
      },
      cost);
}

/// Runs g on the pool in batch slices of `chunk` images (split_chunk(g) > 0), as
/// on_pool_units with lo and sub.batch in images.
template <typename Prep, typename Exec>
void on_pool(const ConvGeometry& g, int64_t chunk, Prep&& prep, Exec&& exec) {
  on_pool_units(
      g.batch, chunk, conv_cost(g), [&](int64_t n) { return with_batch(g, n); }, prep, exec);
}

}  // namespace oar::phi::onednn_detail
