// TCPStore: Oar's own rendezvous store over TCP. The master (rank 0, or whoever the
// launcher names) runs the server on a background thread; every rank, the master
// included, is a client over one connection.
//
// Not for untrusted networks: there is no authentication and no encryption, and any
// process that can reach the port can read and write every key. It binds the address it
// is given (127.0.0.1 unless the launcher names an interface), never 0.0.0.0 by default.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "distributed/collective/store.h"

namespace oar::dist {

/// The IPv4 address of `host` (a name or a dotted quad) with `port`; a CommError naming
/// `what` and the host when it does not resolve.
sockaddr_in resolve_ipv4(const std::string& host, int port, const char* what);

class TCPStore : public Store {
 public:
  /// is_master: also run the server, listening on host:port (port 0 picks a free port,
  /// see port()). Clients retry connecting for up to `timeout`; a port already in use
  /// on the master is a CommError naming it.
  TCPStore(const std::string& host, int port, bool is_master, std::chrono::milliseconds timeout);
  ~TCPStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool check(const std::string& key) override;

  int port() const { return port_; }
  const std::string& host() const { return host_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  class Server;  // tcp_store.cc

 private:
  /// One request/response round trip; returns the status byte and fills `reply`.
  int request(char cmd, const std::string& key, const std::string& value, std::string* reply,
              std::chrono::milliseconds wait_budget);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Server> server_;
  int fd_ = -1;
  std::mutex mu_;  // one request at a time on the connection
};

}  // namespace oar::dist
