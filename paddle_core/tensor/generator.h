// Random number generation on the CPU: Paddle's streams.
//
// Why std::mt19937_64 and the standard library's distributions: seeded Paddle scripts
// must reproduce under Oar (issue 18). Paddle's CPU generator is a std::mt19937_64 seeded
// through std::seed_seq{seed}; every CPU random kernel draws from it serially, element by
// element, through a std:: distribution (uniform_real_distribution, normal_distribution,
// uniform_int_distribution, std::shuffle); an op given its own `seed` attribute draws
// from a fresh engine seeded with engine.seed(seed). Drawing the same way, with the same
// C++ standard library, gives the same numbers. Oar's engine is MersenneTwister64, the same
// algorithm with the same seeding, draws and text form as std::mt19937_64, vectorized (Note
// [The engine], mt19937_64.cc). The cost is that CPU random kernels are serial (float
// uniforms and normals are drawn in blocks, Note [Batched draws] in random_kernels.cc: about
// 0.8 ns per uniform and 2.7 ns per normal on the Xeon with AVX-512); results never depend
// on the thread count. A device whose kernels need counter-based streams (CUDA's Philox)
// adds its own state beside the engine when it comes.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <string>

#include "paddle_core/tensor/mt19937_64.h"

namespace oar {

using CpuEngine = MersenneTwister64;

/// The serializable state of a Generator: the seed it started from and the engine's
/// state in the standard library's text form (operator<< of std::mt19937_64).
struct GeneratorState {
  uint64_t seed = 0;
  std::string engine;
};

/// A thread-safe random stream. Copying is not allowed (it owns a mutex).
class Generator {
 public:
  /// A generator seeded with `seed` (as manual_seed).
  explicit Generator(uint64_t seed);
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  /// Restarts the stream from `seed`, seeding the engine through std::seed_seq{seed}
  /// as Paddle's Generator::SetCurrentSeed does: oar.seed.
  void manual_seed(uint64_t seed);
  /// The seed the stream started from.
  uint64_t seed() const;
  /// Runs fn(engine) holding the generator's lock, so that one kernel's draws are
  /// consecutive in the stream even when several threads call random ops.
  template <typename Fn>
  void draw(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    fn(engine_);
  }
  GeneratorState get_state() const;
  /// Throws InvalidArgument when `state.engine` is not an engine state.
  void set_state(const GeneratorState& state);
  /// fork() handlers (Note [Fork safety]): the parent holds the lock across fork(), so a
  /// thread drawing at that moment cannot leave the child's copy locked.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  CpuEngine engine_;
};

/// The global CPU generator random ops use (seeded nondeterministically at startup,
/// like Paddle's; oar.seed(s) makes runs reproducible).
Generator& default_generator();

/// Runs fn(engine) on the stream a random op draws from: the global generator when
/// `seed` is 0, else a private engine of that seed (the same numbers on every call).
template <typename Fn>
void with_cpu_engine(int64_t seed, Fn&& fn) {
  if (seed == 0) {
    default_generator().draw(fn);
    return;
  }
  CpuEngine engine(static_cast<uint64_t>(seed));
  fn(engine);
}

}  // namespace oar
