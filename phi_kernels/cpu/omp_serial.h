// OmpSerial: OpenMP's thread count at 1 on the calling thread while in scope, so that a
// library call made from there (oneDNN, which threads with OpenMP) runs single-threaded
// instead of opening an OpenMP region and waking OpenMP's sleeping worker.
#pragma once

#include <omp.h>

namespace oar::phi {

class OmpSerial {
 public:
  explicit OmpSerial(bool on = true) : saved_(on ? omp_get_max_threads() : 0) {
    if (saved_) omp_set_num_threads(1);
  }
  ~OmpSerial() {
    if (saved_) omp_set_num_threads(saved_);
  }
  OmpSerial(const OmpSerial&) = delete;
  OmpSerial& operator=(const OmpSerial&) = delete;

 private:
  int saved_;
};

}  // namespace oar::phi
