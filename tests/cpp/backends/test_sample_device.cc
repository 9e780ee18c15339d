// The sample device plugin through the runtime: its table loads, copies move data both
// ways, streams run in order later than queued, events order streams, and the host
// cannot read device memory (Note [Devices]).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "tests/cpp/backends/sample_device_util.h"

namespace oar::backends {
namespace {

using testing::DeviceBuffer;
using testing::sample_place;

TEST(SampleDevice, RegistersTwoDevices) {
  sample_place();
  EXPECT_EQ(DeviceManager::instance().device_count("sample"), 2);
  EXPECT_THROW(DeviceManager::instance().device(sample_place(2)), Error);
}

TEST(SampleDevice, BlockingCopiesRoundTrip) {
  const Place p = sample_place(1);
  std::vector<float> in(1000), out(1000, 0.f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  DeviceBuffer a(p, 4000), b(p, 4000);
  DeviceManager& dm = DeviceManager::instance();
  dm.memcpy(p, a.ptr, CPUPlace(), in.data(), 4000);
  dm.memcpy(p, b.ptr, p, a.ptr, 4000);
  dm.memcpy(CPUPlace(), out.data(), p, b.ptr, 4000);
  EXPECT_EQ(in, out);
}

TEST(SampleDevice, RefusesHostPointersAsDeviceMemory) {
  const Place p = sample_place();
  std::vector<char> host(64), other(64);
  // A host pointer where device memory belongs: the plugin says so, the runtime throws.
  EXPECT_THROW(DeviceManager::instance().memcpy(p, other.data(), CPUPlace(), host.data(), 64), Error);
}

TEST(SampleDeviceDeathTest, HostCannotReadDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Place p = sample_place();
  DeviceBuffer a(p, 4096);
  volatile const char* raw = static_cast<const char*>(a.ptr);
  // Under AddressSanitizer (scripts/sanitize.sh) its SEGV handler reports the fault and
  // aborts (abort_on_error=1), so the process ends by SIGABRT with ASan's report instead.
#if defined(__SANITIZE_ADDRESS__)
  const auto expected_end = ::testing::KilledBySignal(SIGABRT);
  const char* expected_message = "AddressSanitizer: SEGV";
#else
  const auto expected_end = ::testing::KilledBySignal(SIGSEGV);
  const char* expected_message = "";
#endif
  EXPECT_EXIT(
      {
        volatile char c = raw[0];  // a guard page: SIGSEGV, never a value
        (void)c;
        std::exit(0);
      },
      expected_end, expected_message);
}

TEST(SampleDevice, StreamRunsAsyncCopiesInOrderLaterThanQueued) {
  setenv("SAMPLE_DEVICE_DELAY_US", "2000", 1);
  const Place p = sample_place();
  OAR_Stream s = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  DeviceBuffer dev(p, sizeof(int64_t));
  // Twenty copies into one device word: in-order execution leaves the last value.
  std::vector<int64_t> values(20);
  for (int64_t i = 0; i < 20; ++i) {
    values[i] = 100 + i;
    memcpy_async(p, dev.ptr, CPUPlace(), &values[i], sizeof(int64_t), s);
  }
  // A d2h copy into a pinned buffer queued behind them: not there until the stream runs.
  auto* pinned = static_cast<int64_t*>(pinned_allocate(p, sizeof(int64_t)));
  *pinned = -1;
  memcpy_async(CPUPlace(), pinned, p, dev.ptr, sizeof(int64_t), s);
  EXPECT_EQ(*reinterpret_cast<volatile int64_t*>(pinned), -1);  // 21 items of >= 1 ms each are queued
  synchronize_stream(p, s);
  EXPECT_EQ(*pinned, 119);
  pinned_deallocate(p, pinned, sizeof(int64_t));
  destroy_stream(p, s);
}

TEST(SampleDevice, EventOrdersTwoStreams) {
  setenv("SAMPLE_DEVICE_DELAY_US", "20000", 1);
  const Place p = sample_place();
  OAR_Stream slow = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  OAR_Stream fast = create_stream(p);
  OAR_Event e = create_event(p);
  DeviceBuffer a(p, 8), b(p, 8);
  int64_t value = 42, zero = 0;
  DeviceManager::instance().memcpy(p, b.ptr, CPUPlace(), &zero, 8);
  memcpy_async(p, a.ptr, CPUPlace(), &value, 8, slow);  // >= 10 ms later
  record_event(p, slow, e);
  stream_wait_event(p, fast, e);  // the fast stream must not copy before the slow one wrote
  memcpy_async(p, b.ptr, p, a.ptr, 8, fast);
  synchronize_stream(p, fast);
  int64_t out = 0;
  DeviceManager::instance().memcpy(CPUPlace(), &out, p, b.ptr, 8);
  EXPECT_EQ(out, 42);
  synchronize_event(p, e);
  destroy_event(p, e);
  destroy_stream(p, slow);
  destroy_stream(p, fast);
}

// A stream may still have a wait for an event queued when the event is destroyed (a
// temporary event of Stream.wait_stream): the wait must still complete, in order.
TEST(SampleDevice, EventDestroyedWhileAStreamStillWaitsOnIt) {
  setenv("SAMPLE_DEVICE_DELAY_US", "20000", 1);
  const Place p = sample_place();
  OAR_Stream slow = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  OAR_Stream fast = create_stream(p);
  DeviceBuffer a(p, 8), b(p, 8);
  int64_t value = 7, zero = 0;
  DeviceManager::instance().memcpy(p, b.ptr, CPUPlace(), &zero, 8);
  OAR_Event e = create_event(p);
  memcpy_async(p, a.ptr, CPUPlace(), &value, 8, fast);
  record_event(p, fast, e);
  stream_wait_event(p, slow, e);  // the slow stream reaches this wait >= 10 ms later
  destroy_event(p, e);
  memcpy_async(p, b.ptr, p, a.ptr, 8, slow);
  synchronize_stream(p, slow);
  int64_t out = 0;
  DeviceManager::instance().memcpy(CPUPlace(), &out, p, b.ptr, 8);
  EXPECT_EQ(out, 7);
  destroy_stream(p, slow);
  destroy_stream(p, fast);
}

// The plugin's C kernels (kernels*.cc), each for float32 and float64: the list
// tests/python/device/test_sample_kernels.py runs through the op harness (COVERED).
TEST(SampleDevice, RegistersItsCKernels) {
  sample_place();
  const DeviceType type = device_type_from_name("sample");
  const std::set<std::string> want = {"add",
                                      "assign",
                                      "avg_pool2d",
                                      "avg_pool_grad",
                                      "cast",
                                      "conv2d",
                                      "conv2d_grad_filter",
                                      "conv2d_transpose",
                                      "cross_entropy",
                                      "cross_entropy_grad",
                                      "divide",
                                      "full",
                                      "full_like",
                                      "log_softmax",
                                      "log_softmax_grad",
                                      "matmul",
                                      "max_pool2d",
                                      "max_pool2d_with_index",
                                      "max_pool_index_grad",
                                      "mean",
                                      "multiply",
                                      "neg",
                                      "relu",
                                      "relu_grad",
                                      "scale",
                                      "softmax",
                                      "softmax_grad",
                                      "subtract",
                                      "sum",
                                      "sum_to",
                                      "adam_update",  // the optimizer updates (Note [Plugin update kernels])
                                      "sgd_update"};
  std::set<std::string> got;
  for (const std::string& op : KernelRegistry::instance().ops()) {
    const std::vector<DataType> d = KernelRegistry::instance().dtypes(op, type);
    if (d.empty()) continue;
    got.insert(op);
    EXPECT_NE(std::find(d.begin(), d.end(), DataType::FLOAT32), d.end()) << op;
    EXPECT_NE(std::find(d.begin(), d.end(), DataType::FLOAT64), d.end()) << op;
  }
  EXPECT_EQ(got, want);
  // cast, full, full_like and assign: every real dtype (complex64/128 fall back: the sample
  // device has no complex kernels).
  for (const char* op : {"cast", "full", "full_like", "assign"}) {
    const std::vector<DataType> d = KernelRegistry::instance().dtypes(op, type);
    EXPECT_EQ(d.size(), static_cast<size_t>(kNumDataTypes) - 2) << op;
    for (DataType t : {DataType::COMPLEX64, DataType::COMPLEX128})
      EXPECT_EQ(std::find(d.begin(), d.end(), t), d.end()) << op;
  }
}

TEST(SampleDevice, CurrentStreamIsPerThreadWithADefault) {
  const Place p = sample_place();
  OAR_Stream def = default_stream(p);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(current_stream(p), def);
  OAR_Stream mine = create_stream(p);
  EXPECT_EQ(set_current_stream(p, mine), def);
  EXPECT_EQ(current_stream(p), mine);
  OAR_Stream seen_elsewhere = nullptr;
  std::thread([&] { seen_elsewhere = current_stream(p); }).join();
  EXPECT_EQ(seen_elsewhere, def);
  set_current_stream(p, nullptr);
  EXPECT_EQ(current_stream(p), def);
  EXPECT_EQ(current_stream(CPUPlace()), nullptr);
  destroy_stream(p, mine);
}

}  // namespace
}  // namespace oar::backends
