// The sample device's collectives (backends/examples/sample_device/collectives.cc) through
// the device table: two ranks in one process (threads, on sample:0 and sample:1) meet in
// the shared-memory segment exactly as two processes do. Every op against a reference
// computed in double, chunked transfers, a missing rank timing out with the plugin's
// message, mismatched calls, and argument errors. The two-process path (a killed peer) is
// tests/python/distributed/test_xccl.py.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "tests/cpp/backends/sample_device_util.h"

namespace oar::backends {
namespace {

using testing::sample_place;

const OAR_DeviceInterface& table() {
  sample_place();  // loads the plugin on first use
  return DeviceManager::instance().interface("sample");
}

struct Rank {
  Place place;
  OAR_Stream stream = nullptr;
  OAR_CCLComm comm = nullptr;
  std::vector<std::pair<void*, size_t>> buffers;

  void* alloc(size_t bytes) {
    void* p = nullptr;
    check_status(table().device_memory_allocate(DeviceManager::instance().device(place), &p, bytes), "sample", "alloc");
    buffers.emplace_back(p, bytes);
    return p;
  }
  void* upload(const void* host, size_t bytes) {
    void* p = alloc(bytes);
    DeviceManager::instance().memcpy(place, p, CPUPlace(), host, bytes);
    return p;
  }
  std::vector<char> download(const void* dev, size_t bytes) {
    std::vector<char> out(bytes);
    DeviceManager::instance().memcpy(CPUPlace(), out.data(), place, dev, bytes);
    return out;
  }
  /// synchronize_stream's status, with the plugin's message in `msg`.
  OAR_Status sync(std::string* msg = nullptr) {
    OAR_Status s = table().synchronize_stream(DeviceManager::instance().device(place), stream);
    if (msg != nullptr) {
      const char* m = table().get_last_error_message();
      *msg = m != nullptr ? m : "";
    }
    return s;
  }
  ~Rank() {
    for (auto [p, n] : buffers) table().device_memory_deallocate(DeviceManager::instance().device(place), p, n);
    if (comm != nullptr) table().ccl_destroy_comm(comm);
  }
};

// Two ranks of one communicator: rank r on sample:r, each with its own stream.
void make_pair(Rank* ranks) {
  size_t n = 0;
  ASSERT_EQ(table().ccl_get_unique_id_size(&n), OAR_SUCCESS);
  std::vector<char> id(n);
  ASSERT_EQ(table().ccl_get_unique_id(id.data(), n), OAR_SUCCESS);
  OAR_Status st[2];
  std::thread t[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r].place = sample_place(r);
    ranks[r].stream = create_stream(ranks[r].place);
    t[r] = std::thread([&, r] { st[r] = table().ccl_comm_init_rank(2, id.data(), n, r, &ranks[r].comm); });
  }
  for (auto& th : t) th.join();
  ASSERT_EQ(st[0], OAR_SUCCESS);
  ASSERT_EQ(st[1], OAR_SUCCESS);
}

// Runs fn(rank) on two threads at once and syncs each rank's stream.
void both(Rank* ranks, const std::function<void(int)>& fn) {
  std::thread t[2];
  for (int r = 0; r < 2; ++r) t[r] = std::thread([&, r] { fn(r); });
  for (auto& th : t) th.join();
  for (int r = 0; r < 2; ++r) {
    std::string msg;
    EXPECT_EQ(ranks[r].sync(&msg), OAR_SUCCESS) << msg;
  }
}

// Small integers in every dtype: every reduction is exact.
double input(int rank, size_t i) { return static_cast<double>(static_cast<int>((i * 7 + rank * 3) % 5) - 1); }

template <typename T>
std::vector<char> encode(const std::vector<double>& v) {
  std::vector<char> out(v.size() * sizeof(T));
  for (size_t i = 0; i < v.size(); ++i) {
    T x = static_cast<T>(v[i]);
    std::memcpy(out.data() + i * sizeof(T), &x, sizeof(T));
  }
  return out;
}
std::vector<char> encode16(const std::vector<double>& v, bool bf16) {
  std::vector<char> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    float f = static_cast<float>(v[i]);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    uint16_t h;
    if (bf16) {
      h = static_cast<uint16_t>(b >> 16);  // small integers are exact
    } else {                               // small integers: exact half
      const uint32_t sign = (b >> 16) & 0x8000u, abs = b & 0x7fffffffu;
      h = abs == 0 ? static_cast<uint16_t>(sign) : static_cast<uint16_t>(sign | ((abs - 0x38000000u) >> 13));
    }
    std::memcpy(out.data() + i * 2, &h, 2);
  }
  return out;
}
std::vector<char> encode_as(OAR_DataType t, const std::vector<double>& v) {
  switch (t) {
    case OAR_DTYPE_BOOL: {
      std::vector<double> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i] = v[i] != 0;
      return encode<uint8_t>(b);
    }
    case OAR_DTYPE_INT8:
      return encode<int8_t>(v);
    case OAR_DTYPE_UINT8: {
      std::vector<double> u(v.size());
      for (size_t i = 0; i < v.size(); ++i) u[i] = v[i] + 1;  // non-negative
      return encode<uint8_t>(u);
    }
    case OAR_DTYPE_INT16:
      return encode<int16_t>(v);
    case OAR_DTYPE_INT32:
      return encode<int32_t>(v);
    case OAR_DTYPE_INT64:
      return encode<int64_t>(v);
    case OAR_DTYPE_FLOAT16:
      return encode16(v, false);
    case OAR_DTYPE_BFLOAT16:
      return encode16(v, true);
    case OAR_DTYPE_FLOAT32:
      return encode<float>(v);
    case OAR_DTYPE_FLOAT64:
      return encode<double>(v);
  }
  return {};
}
// The values a rank holds, as the dtype stores them.
std::vector<double> held(OAR_DataType t, const std::vector<double>& v) {
  std::vector<double> out(v);
  for (double& x : out) {
    if (t == OAR_DTYPE_BOOL) x = x != 0;
    if (t == OAR_DTYPE_UINT8) x += 1;
  }
  return out;
}
double reduce2(OAR_DataType t, OAR_ReduceOp op, double a, double b) {
  if (t == OAR_DTYPE_BOOL) return (op == OAR_REDUCE_SUM || op == OAR_REDUCE_MAX) ? (a || b) : (a && b);
  switch (op) {
    case OAR_REDUCE_SUM:
      return a + b;
    case OAR_REDUCE_AVG: {
      const bool is_int =
          t != OAR_DTYPE_FLOAT16 && t != OAR_DTYPE_BFLOAT16 && t != OAR_DTYPE_FLOAT32 && t != OAR_DTYPE_FLOAT64;
      return is_int ? std::trunc((a + b) / 2) : (a + b) / 2;
    }
    case OAR_REDUCE_MAX:
      return std::max(a, b);
    case OAR_REDUCE_MIN:
      return std::min(a, b);
    case OAR_REDUCE_PROD:
      return a * b;
  }
  return 0;
}

TEST(SampleCollectives, AllReduceEveryDtypeAndOp) {
  Rank ranks[2];
  make_pair(ranks);
  const size_t n = 37;
  for (int t = OAR_DTYPE_BOOL; t <= OAR_DTYPE_FLOAT64; ++t) {
    const auto dt = static_cast<OAR_DataType>(t);
    for (int o = OAR_REDUCE_SUM; o <= OAR_REDUCE_PROD; ++o) {
      const auto op = static_cast<OAR_ReduceOp>(o);
      if (dt == OAR_DTYPE_BOOL && op == OAR_REDUCE_AVG) continue;  // refused: see BadArguments
      std::vector<double> in[2], want(n);
      void* buf[2];
      for (int r = 0; r < 2; ++r) {
        for (size_t i = 0; i < n; ++i) in[r].push_back(input(r, i));
        auto bytes = encode_as(dt, in[r]);
        buf[r] = ranks[r].upload(bytes.data(), bytes.size());
      }
      const auto a = held(dt, in[0]), b = held(dt, in[1]);
      for (size_t i = 0; i < n; ++i) want[i] = reduce2(dt, op, a[i], b[i]);
      both(ranks, [&](int r) {
        EXPECT_EQ(table().ccl_all_reduce(buf[r], buf[r], n, dt, op, ranks[r].comm, ranks[r].stream), OAR_SUCCESS);
      });
      const auto expected = encode_as(dt, want);
      for (int r = 0; r < 2; ++r) {
        // encode_as shifts uint8 by one and maps bool through != 0: compare stored bytes.
        std::vector<char> exp = dt == OAR_DTYPE_UINT8 ? encode<uint8_t>(want) : expected;
        if (dt == OAR_DTYPE_BOOL) exp = encode<uint8_t>(want);
        EXPECT_EQ(ranks[r].download(buf[r], exp.size()), exp) << "dtype " << t << " op " << o << " rank " << r;
      }
    }
  }
}

TEST(SampleCollectives, EveryOpMovesDataIncludingChunksAndEmpty) {
  Rank ranks[2];
  make_pair(ranks);
  // 1.5M floats per rank: all_gather and the others move it in several 4 MiB steps.
  const size_t n = 3 << 19;
  std::vector<float> host[2];
  for (int r = 0; r < 2; ++r) {
    host[r].resize(2 * n);
    for (size_t i = 0; i < 2 * n; ++i) host[r][i] = static_cast<float>(r * 1000003 + i);
  }
  void *send[2], *recv[2];
  for (int r = 0; r < 2; ++r) {
    send[r] = ranks[r].upload(host[r].data(), 2 * n * 4);
    recv[r] = ranks[r].alloc(2 * n * 4);
  }
  auto got = [&](int r, size_t count) {
    auto b = ranks[r].download(recv[r], count * 4);
    std::vector<float> f(count);
    std::memcpy(f.data(), b.data(), count * 4);
    return f;
  };
  // all_gather: rank order
  both(ranks, [&](int r) {
    EXPECT_EQ(table().ccl_all_gather(send[r], recv[r], n, OAR_DTYPE_FLOAT32, ranks[r].comm, ranks[r].stream),
              OAR_SUCCESS);
  });
  for (int r = 0; r < 2; ++r) {
    auto f = got(r, 2 * n);
    for (int q = 0; q < 2; ++q) {
      EXPECT_TRUE(std::equal(f.begin() + q * n, f.begin() + (q + 1) * n, host[q].begin())) << r << " from " << q;
    }
  }
  // reduce_scatter: rank r gets the sum of chunk r
  both(ranks, [&](int r) {
    EXPECT_EQ(table().ccl_reduce_scatter(send[r], recv[r], n, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[r].comm,
                                         ranks[r].stream),
              OAR_SUCCESS);
  });
  for (int r = 0; r < 2; ++r) {
    auto f = got(r, n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) ok = f[i] == host[0][r * n + i] + host[1][r * n + i];
    EXPECT_TRUE(ok) << "reduce_scatter rank " << r;
  }
  // all_to_all: chunk q of rank r's input lands at chunk r of rank q's output
  both(ranks, [&](int r) {
    EXPECT_EQ(table().ccl_all_to_all(send[r], recv[r], n, OAR_DTYPE_FLOAT32, ranks[r].comm, ranks[r].stream),
              OAR_SUCCESS);
  });
  for (int r = 0; r < 2; ++r) {
    auto f = got(r, 2 * n);
    for (int q = 0; q < 2; ++q) {
      EXPECT_TRUE(std::equal(f.begin() + q * n, f.begin() + (q + 1) * n, host[q].begin() + r * n)) << r << q;
    }
  }
  // broadcast from rank 1, in place
  both(ranks, [&](int r) {
    EXPECT_EQ(table().ccl_broadcast(send[r], 2 * n, OAR_DTYPE_FLOAT32, 1, ranks[r].comm, ranks[r].stream), OAR_SUCCESS);
  });
  for (int r = 0; r < 2; ++r) {
    auto b = ranks[r].download(send[r], 2 * n * 4);
    EXPECT_EQ(std::memcmp(b.data(), host[1].data(), b.size()), 0) << r;
  }
  // reduce (MAX) to rank 0: rank 1's recv keeps what it had
  std::vector<float> mark(2 * n, -5.f);
  for (int r = 0; r < 2; ++r) DeviceManager::instance().memcpy(ranks[r].place, recv[r], CPUPlace(), mark.data(), 8);
  both(ranks, [&](int r) {
    void* in = ranks[r].upload(host[r].data(), 8);
    EXPECT_EQ(table().ccl_reduce(in, recv[r], 2, OAR_DTYPE_FLOAT32, OAR_REDUCE_MAX, 0, ranks[r].comm, ranks[r].stream),
              OAR_SUCCESS);
  });
  EXPECT_EQ(got(0, 2), (std::vector<float>{host[1][0], host[1][1]}));
  EXPECT_EQ(got(1, 2), (std::vector<float>{-5.f, -5.f}));
  // send/recv both ways in one group each (larger than a mailbox chunk), then an empty op
  both(ranks, [&](int r) {
    EXPECT_EQ(table().ccl_group_start(), OAR_SUCCESS);
    EXPECT_EQ(table().ccl_send(send[r], n, OAR_DTYPE_FLOAT32, 1 - r, ranks[r].comm, ranks[r].stream), OAR_SUCCESS);
    EXPECT_EQ(table().ccl_recv(recv[r], n, OAR_DTYPE_FLOAT32, 1 - r, ranks[r].comm, ranks[r].stream), OAR_SUCCESS);
    EXPECT_EQ(table().ccl_group_end(), OAR_SUCCESS);
    EXPECT_EQ(
        table().ccl_all_reduce(nullptr, nullptr, 0, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[r].comm, ranks[r].stream),
        OAR_SUCCESS);
  });
  for (int r = 0; r < 2; ++r) {
    auto f = got(r, n);
    EXPECT_TRUE(std::equal(f.begin(), f.end(), host[1].begin())) << "both ranks hold rank 1's broadcast data";
  }
}

TEST(SampleCollectives, MissingRankTimesOutWithTheMessage) {
  setenv("SAMPLE_DEVICE_CCL_TIMEOUT_S", "0.5", 1);  // read at comm init
  Rank ranks[2];
  make_pair(ranks);
  unsetenv("SAMPLE_DEVICE_CCL_TIMEOUT_S");
  float x = 1.f;
  void* buf = ranks[0].upload(&x, 4);
  EXPECT_EQ(table().ccl_comm_get_async_error(ranks[0].comm), OAR_SUCCESS);  // nothing failed yet
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(table().ccl_all_reduce(buf, buf, 1, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[0].comm, ranks[0].stream),
            OAR_SUCCESS);  // queued: the failure comes with the stream
  // ccl_comm_get_async_error (ABI 1.3) does not wait: it reports the failure once it happened.
  while (table().ccl_comm_get_async_error(ranks[0].comm) == OAR_SUCCESS) {
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(table().ccl_comm_get_async_error(ranks[0].comm), OAR_ERROR_DEVICE);
  EXPECT_NE(std::string(table().get_last_error_message()).find("timed out after 0.5 s"), std::string::npos);
  std::string msg;
  EXPECT_EQ(ranks[0].sync(&msg), OAR_ERROR_DEVICE);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 5.0);
  EXPECT_NE(msg.find("all_reduce #1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("timed out after 0.5 s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("waiting for ranks [1]"), std::string::npos) << msg;
  // Broken: the next call fails at once, naming the first failure.
  EXPECT_EQ(table().ccl_all_reduce(buf, buf, 1, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[0].comm, ranks[0].stream),
            OAR_ERROR_DEVICE);
  EXPECT_NE(std::string(table().get_last_error_message()).find("unusable after an earlier failure"), std::string::npos);
}

TEST(SampleCollectives, MismatchedCallsFailOnBothRanks) {
  Rank ranks[2];
  make_pair(ranks);
  float x[4] = {1, 2, 3, 4};
  void* buf[2] = {ranks[0].upload(x, 16), ranks[1].upload(x, 16)};
  std::thread t[2];
  for (int r = 0; r < 2; ++r) {
    t[r] = std::thread([&, r] {
      table().ccl_all_reduce(buf[r], buf[r], r == 0 ? 4 : 3, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[r].comm,
                             ranks[r].stream);
    });
  }
  for (auto& th : t) th.join();
  for (int r = 0; r < 2; ++r) {
    std::string msg;
    EXPECT_EQ(ranks[r].sync(&msg), OAR_ERROR_DEVICE);
    EXPECT_NE(msg.find("all_reduce of 3 elements"), std::string::npos) << msg;
    EXPECT_NE(msg.find("all_reduce of 4 elements"), std::string::npos) << msg;
  }
}

TEST(SampleCollectives, BadArgumentsNameTheCallAndArgument) {
  Rank ranks[2];
  make_pair(ranks);
  auto& t = table();
  float host = 0;
  void* dev = ranks[0].alloc(64);
  auto last = [&] { return std::string(t.get_last_error_message()); };
  EXPECT_EQ(t.ccl_all_reduce(&host, dev, 1, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[0].comm, ranks[0].stream),
            OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("all_reduce: send"), std::string::npos) << last();
  EXPECT_NE(last().find("is not memory of a sample device"), std::string::npos) << last();
  EXPECT_EQ(t.ccl_all_reduce(dev, dev, 1, OAR_DTYPE_BOOL, OAR_REDUCE_AVG, ranks[0].comm, ranks[0].stream),
            OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("OAR_REDUCE_AVG is not defined for OAR_DTYPE_BOOL"), std::string::npos) << last();
  EXPECT_EQ(t.ccl_send(dev, 1, OAR_DTYPE_FLOAT32, 0, ranks[0].comm, ranks[0].stream), OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("peer 0 is not another rank"), std::string::npos) << last();
  EXPECT_EQ(t.ccl_broadcast(dev, 1, OAR_DTYPE_FLOAT32, 2, ranks[0].comm, ranks[0].stream), OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("root 2 is not a rank"), std::string::npos) << last();
  EXPECT_EQ(
      t.ccl_all_reduce(dev, dev, 1, static_cast<OAR_DataType>(42), OAR_REDUCE_SUM, ranks[0].comm, ranks[0].stream),
      OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("unknown dtype 42"), std::string::npos) << last();
  void* other = ranks[1].alloc(64);  // on sample:1
  EXPECT_EQ(t.ccl_all_gather(dev, other, 1, OAR_DTYPE_FLOAT32, ranks[0].comm, ranks[0].stream),
            OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("recv is on sample:1, another buffer on sample:0"), std::string::npos) << last();
  EXPECT_EQ(t.ccl_group_end(), OAR_ERROR_INVALID_ARGUMENT);
  char bad[64] = "not an id";
  OAR_CCLComm c = nullptr;
  EXPECT_EQ(t.ccl_comm_init_rank(2, bad, sizeof(bad), 0, &c), OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("did not come from ccl_get_unique_id"), std::string::npos) << last();
  // Nothing was queued: the comm still works.
  both(ranks, [&](int r) {
    void* b = r == 0 ? dev : other;
    EXPECT_EQ(t.ccl_all_reduce(b, b, 1, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, ranks[r].comm, ranks[r].stream),
              OAR_SUCCESS);
  });
}

}  // namespace
}  // namespace oar::backends
