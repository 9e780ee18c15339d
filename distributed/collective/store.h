// Store: the key-value service the ranks of a job meet through (rendezvous, group
// creation, object collectives' sizes, and the post-mortem of a failed op). TCPStore is
// the one implementation; backends adapt it to their own store interface (Gloo's in
// process_group_gloo.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "paddle_core/base/errors.h"

namespace oar::dist {

/// A communication failure: a timeout, a peer that went away, a store that is gone.
/// Python sees it as oar.distributed.CommunicationError (a RuntimeError).
class CommError : public Error {
 public:
  CommError(std::string message, bool timed_out)
      : Error(ErrorKind::kPreconditionNotMet, std::move(message)), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, waiting up to `timeout` for some rank to set it.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// Adds `delta` to the integer at `key` (0 when absent) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Waits until every key exists; throws CommError naming the missing ones after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Whether `key` exists now (never waits).
  virtual bool check(const std::string& key) = 0;
};

/// Milliseconds from the environment variable PADDLE_DIST_TIMEOUT (seconds, may be
/// fractional), else `fallback`: the default timeout of every rendezvous and collective.
std::chrono::milliseconds default_timeout(std::chrono::milliseconds fallback = std::chrono::seconds(1800));

}  // namespace oar::dist
