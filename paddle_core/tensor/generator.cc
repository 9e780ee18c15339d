#include "paddle_core/tensor/generator.h"

#include <random>

namespace oar {

Generator::Generator(uint64_t seed) : seed_(seed) {}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seed_;
}

PhiloxRange Generator::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  PhiloxRange r{seed_, offset_};
  offset_ += blocks;
  return r;
}

GeneratorState Generator::get_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {seed_, offset_};
}

void Generator::set_state(const GeneratorState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = state.seed;
  offset_ = state.offset;
}

Generator& default_generator() {
  static Generator* gen = [] {
    std::random_device rd;
    const uint64_t seed = (uint64_t{rd()} << 32) ^ rd();
    return new Generator(seed);  // never destroyed: kernels may run during exit
  }();
  return *gen;
}

}  // namespace oar
