#include "distributed/collective/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

namespace oar::dist {

// Wire format, both directions: a command (or status) byte, then two length-prefixed
// strings. Requests: (cmd, key, value); responses: (status, payload, "").
namespace {

enum Cmd : char { kSet = 1, kGet = 2, kAdd = 3, kWait = 4, kCheck = 5 };
enum Status : char { kOk = 0, kTimedOut = 1, kMissing = 2 };

using Clock = std::chrono::steady_clock;

std::string errno_text() { return std::strerror(errno); }

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_msg(int fd, char head, const std::string& a, const std::string& b) {
  std::string buf(1, head);
  for (const std::string* s : {&a, &b}) {
    uint32_t n = static_cast<uint32_t>(s->size());
    buf.append(reinterpret_cast<const char*>(&n), 4);
    buf.append(*s);
  }
  return write_all(fd, buf.data(), buf.size());
}

bool read_msg(int fd, char* head, std::string* a, std::string* b) {
  if (!read_all(fd, head, 1)) return false;
  for (std::string* s : {a, b}) {
    uint32_t n = 0;
    if (!read_all(fd, &n, 4)) return false;
    s->resize(n);
    if (n > 0 && !read_all(fd, s->data(), n)) return false;
  }
  return true;
}

std::vector<std::string> split_keys(const std::string& joined) {
  std::vector<std::string> keys;
  std::string cur;
  std::istringstream is(joined);
  while (std::getline(is, cur, '\0')) keys.push_back(cur);
  return keys;
}

}  // namespace

sockaddr_in resolve_ipv4(const std::string& host, int port, const char* what) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw CommError(detail::str_cat(what, ": cannot resolve host '", host, "': ", gai_strerror(rc)), false);
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  ::freeaddrinfo(res);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// The server: an accept thread plus one thread per client connection (a job has few
// ranks). A waiting request blocks only its own connection's thread.
class TCPStore::Server {
 public:
  Server(const std::string& host, int port) {
    sockaddr_in addr = resolve_ipv4(host, port, "TCPStore");
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    // SO_REUSEADDR lets a restarted job rebind a port in TIME_WAIT; a port another
    // process listens on still fails with EADDRINUSE.
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 128) != 0) {
      std::string why = errno_text();
      ::close(listen_fd_);
      throw CommError(detail::str_cat("TCPStore: the master cannot listen on ", host, ":", port, ": ", why,
                                      errno == EADDRINUSE ? " (another process holds the port: choose another "
                                                            "master port, e.g. --master 127.0.0.1:<free port>)"
                                                          : ""),
                      false);
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    if (accept_thread_.joinable()) accept_thread_.join();
    for (auto& t : client_threads_) t.join();
    for (int fd : client_fds_) ::close(fd);
  }

  int port() const { return port_; }

 private:
  void accept_loop() {
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // the listening socket was shut down
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      client_fds_.push_back(fd);
      client_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    char cmd = 0;
    std::string key, value;
    while (read_msg(fd, &cmd, &key, &value)) {
      std::string reply;
      char status = kOk;
      {
        std::unique_lock<std::mutex> lock(mu_);
        switch (cmd) {
          case kSet:
            data_[key] = value;
            cv_.notify_all();
            break;
          case kAdd: {
            int64_t v = data_.count(key) ? std::strtoll(data_[key].c_str(), nullptr, 10) : 0;
            v += std::strtoll(value.c_str(), nullptr, 10);
            data_[key] = reply = std::to_string(v);
            cv_.notify_all();
            break;
          }
          case kCheck:
            status = data_.count(key) ? kOk : kMissing;
            break;
          case kGet:
          case kWait: {
            std::vector<std::string> keys = cmd == kGet ? std::vector<std::string>{key} : split_keys(key);
            auto deadline = Clock::now() + std::chrono::milliseconds(std::strtoll(value.c_str(), nullptr, 10));
            auto all_there = [&] {
              for (const auto& k : keys) {
                if (!data_.count(k)) return false;
              }
              return true;
            };
            if (!cv_.wait_until(lock, deadline, [&] { return stopping_ || all_there(); }) || stopping_) {
              status = kTimedOut;
              for (const auto& k : keys) {
                if (!data_.count(k)) reply += (reply.empty() ? "" : ", ") + k;
              }
            } else if (cmd == kGet) {
              reply = data_[key];
            }
            break;
          }
          default:
            return;  // not our protocol: drop the connection
        }
      }
      if (!write_msg(fd, status, reply, "")) return;
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<int> client_fds_;
  std::vector<std::thread> client_threads_;
  std::map<std::string, std::string> data_;
};

TCPStore::TCPStore(const std::string& host, int port, bool is_master, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  if (port < 0 || port > 65535) {
    OAR_THROW(InvalidArgument, "TCPStore: port must be in [0, 65535], got ", port);
  }
  if (is_master) {
    server_ = std::make_unique<Server>(host, port);
    port_ = server_->port();
  } else if (port == 0) {
    OAR_THROW(InvalidArgument, "TCPStore: a client needs the master's port, got 0");
  }
  sockaddr_in addr = resolve_ipv4(host, port_, "TCPStore");
  auto deadline = Clock::now() + timeout;
  std::string last_error;
  while (true) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    last_error = errno_text();
    ::close(fd_);
    fd_ = -1;
    // The master may not listen yet: retry until the rendezvous timeout.
    if (Clock::now() >= deadline) {
      throw CommError(detail::str_cat("TCPStore: could not reach the master's store at ", host, ":", port_, " within ",
                                      timeout.count() / 1000.0, " s (", last_error,
                                      "); is rank 0 running and is PADDLE_MASTER the same on every rank?"),
                      true);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

TCPStore::~TCPStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

int TCPStore::request(char cmd, const std::string& key, const std::string& value, std::string* reply,
                      std::chrono::milliseconds wait_budget) {
  std::lock_guard<std::mutex> lock(mu_);
  // The server answers a wait within its budget; a silent server past budget + slack is dead.
  timeval tv{};
  auto limit = wait_budget + std::chrono::seconds(5);
  tv.tv_sec = limit.count() / 1000;
  tv.tv_usec = (limit.count() % 1000) * 1000;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char status = 0;
  std::string unused;
  if (fd_ < 0 || !write_msg(fd_, cmd, key, value) || !read_msg(fd_, &status, reply, &unused)) {
    throw CommError(detail::str_cat("TCPStore: lost the connection to the master's store at ", host_, ":", port_, " (",
                                    errno_text(), "); the master process (rank 0) has probably exited"),
                    false);
  }
  return status;
}

void TCPStore::set(const std::string& key, const std::string& value) {
  std::string reply;
  request(kSet, key, value, &reply, std::chrono::milliseconds(0));
}

std::string TCPStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::string reply;
  if (request(kGet, key, std::to_string(timeout.count()), &reply, timeout) == kTimedOut) {
    throw CommError(detail::str_cat("TCPStore: key '", key, "' was not set within ", timeout.count() / 1000.0, " s"),
                    true);
  }
  return reply;
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  std::string reply;
  request(kAdd, key, std::to_string(delta), &reply, std::chrono::milliseconds(0));
  return std::strtoll(reply.c_str(), nullptr, 10);
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::string joined, reply;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) joined.push_back('\0');
    joined += keys[i];
  }
  if (request(kWait, joined, std::to_string(timeout.count()), &reply, timeout) == kTimedOut) {
    throw CommError(detail::str_cat("TCPStore: keys not set within ", timeout.count() / 1000.0, " s: ", reply), true);
  }
}

bool TCPStore::check(const std::string& key) {
  std::string reply;
  return request(kCheck, key, "", &reply, std::chrono::milliseconds(0)) == kOk;
}

std::chrono::milliseconds default_timeout(std::chrono::milliseconds fallback) {
  const char* env = std::getenv("PADDLE_DIST_TIMEOUT");
  if (env == nullptr || *env == '\0') return fallback;
  char* end = nullptr;
  double seconds = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(seconds > 0)) {
    OAR_THROW(InvalidArgument, "PADDLE_DIST_TIMEOUT must be a positive number of seconds, got '", env, "'");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace oar::dist
