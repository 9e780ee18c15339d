// The sample device's optional ABI 1.1 slots, called through the table the runtime holds:
// stream and event queries (OAR_ERROR_NOT_READY while work is queued), host callbacks in
// stream order, memset (blocking and queued), peer copies between its two devices (and
// the runtime's two-device copy using them), unified memory, the largest allocation and
// the properties struct (written only up to the caller's struct_size); and the 1.3
// non-blocking streams, which the blocking calls do not wait for.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
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

using testing::DeviceBuffer;
using testing::sample_place;
using testing::slow_stream;

const OAR_DeviceInterface& table() { return DeviceManager::instance().interface("sample"); }
OAR_Device* dev(const Place& p) { return DeviceManager::instance().device(p); }

// Items of its slow streams run 10-20 ms late: queued work observably pending.
constexpr int kDelayUs = 20000;

TEST(SampleDeviceSlots, FillsEveryOptionalSlot) {
  const OAR_DeviceInterface& t = (sample_place(), table());
  EXPECT_NE(t.query_stream, nullptr);
  EXPECT_NE(t.query_event, nullptr);
  EXPECT_NE(t.stream_add_callback, nullptr);
  EXPECT_NE(t.device_memory_set, nullptr);
  EXPECT_NE(t.async_device_memory_set, nullptr);
  EXPECT_NE(t.memory_copy_p2p, nullptr);
  EXPECT_NE(t.async_memory_copy_p2p, nullptr);
  EXPECT_NE(t.unified_memory_allocate, nullptr);
  EXPECT_NE(t.unified_memory_deallocate, nullptr);
  EXPECT_NE(t.device_max_alloc_size, nullptr);
  EXPECT_NE(t.get_device_properties, nullptr);
  EXPECT_NE(t.create_stream_with_flags, nullptr);
}

// A stream held at a host callback until the test opens its gate: queued work that does
// not finish on its own, so what waits for it is seen waiting.
struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* g) {
    while (!static_cast<Gate*>(g)->open.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
};

// Runs `call` on a thread: whether it is still blocked after 100 ms, then (gate opened) that
// it returns. A call that never returns fails the test instead of hanging it.
bool blocks_until_opened(Gate& gate, const std::function<void()>& call) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    call();
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const bool blocked = !done.load();
  gate.open.store(true);
  t.join();
  return blocked;
}

TEST(SampleDeviceSlots, BlockingCallsDoNotWaitForNonBlockingStreams) {
  const Place p = sample_place();
  DeviceBuffer b(p, 64);
  std::vector<char> host(64, 1);
  for (const unsigned flags : {unsigned{OAR_STREAM_NON_BLOCKING}, unsigned{OAR_STREAM_DEFAULT}}) {
    SCOPED_TRACE(flags == OAR_STREAM_DEFAULT ? "a blocking stream" : "a non-blocking stream");
    OAR_Stream s = nullptr;
    ASSERT_EQ(table().create_stream_with_flags(dev(p), flags, &s), OAR_SUCCESS);
    const bool waited_for = flags == OAR_STREAM_DEFAULT;
    // The blocking copies (both ways) and memset, then the device's synchronize, which
    // always waits for every stream.
    const std::vector<std::function<void()>> blocking_calls = {
        [&] { DeviceManager::instance().memcpy(CPUPlace(), host.data(), p, b.ptr, 64); },
        [&] { DeviceManager::instance().memcpy(p, b.ptr, CPUPlace(), host.data(), 64); },
        [&] { EXPECT_EQ(table().device_memory_set(dev(p), b.ptr, 0, 64), OAR_SUCCESS); },
    };
    for (size_t i = 0; i < blocking_calls.size(); ++i) {
      Gate gate;
      ASSERT_EQ(table().stream_add_callback(dev(p), s, Gate::wait, &gate), OAR_SUCCESS);
      EXPECT_EQ(blocks_until_opened(gate, blocking_calls[i]), waited_for) << "blocking call " << i;
      synchronize_stream(p, s);
    }
    Gate gate;
    ASSERT_EQ(table().stream_add_callback(dev(p), s, Gate::wait, &gate), OAR_SUCCESS);
    EXPECT_TRUE(blocks_until_opened(gate, [&] { DeviceManager::instance().synchronize(p); }));
    EXPECT_EQ(table().query_stream(dev(p), s), OAR_SUCCESS);
    destroy_stream(p, s);
  }
  OAR_Stream s = nullptr;
  EXPECT_EQ(table().create_stream_with_flags(dev(p), 6, &s), OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(table().get_last_error_message()).find("unknown flags 6"), std::string::npos);
  // Through the runtime.
  s = create_stream(p, OAR_STREAM_NON_BLOCKING);
  Gate gate;
  ASSERT_EQ(table().stream_add_callback(dev(p), s, Gate::wait, &gate), OAR_SUCCESS);
  EXPECT_FALSE(
      blocks_until_opened(gate, [&] { DeviceManager::instance().memcpy(CPUPlace(), host.data(), p, b.ptr, 64); }));
  destroy_stream(p, s);
}

TEST(SampleDeviceSlots, QueriesReportQueuedWorkAndCallbacksRunInStreamOrder) {
  const Place p = sample_place();
  OAR_Stream s = slow_stream(p, kDelayUs);
  OAR_Event e = create_event(p);
  EXPECT_EQ(table().query_stream(dev(p), s), OAR_SUCCESS);  // nothing queued yet
  DeviceBuffer b(p, 8);
  int64_t value = 7;
  memcpy_async(p, b.ptr, CPUPlace(), &value, 8, s);
  record_event(p, s, e);
  std::atomic<int> order{0};
  struct Seen {
    std::atomic<int>* order;
    int at = -1;
  } seen{&order};
  ASSERT_EQ(
      table().stream_add_callback(
          dev(p), s, [](void* d) { static_cast<Seen*>(d)->at = static_cast<Seen*>(d)->order->fetch_add(1); }, &seen),
      OAR_SUCCESS);
  EXPECT_EQ(table().query_stream(dev(p), s), OAR_ERROR_NOT_READY);
  EXPECT_EQ(table().query_event(dev(p), e), OAR_ERROR_NOT_READY);
  EXPECT_EQ(seen.at, -1) << "the callback ran before the stream reached it";
  synchronize_stream(p, s);
  EXPECT_EQ(seen.at, 0);
  EXPECT_EQ(table().query_stream(dev(p), s), OAR_SUCCESS);
  EXPECT_EQ(table().query_event(dev(p), e), OAR_SUCCESS);
  EXPECT_EQ(table().stream_add_callback(dev(p), s, nullptr, nullptr), OAR_ERROR_INVALID_ARGUMENT);
  destroy_event(p, e);
  destroy_stream(p, s);
}

TEST(SampleDeviceSlots, MemsetBlockingAndQueued) {
  const Place p = sample_place();
  DeviceBuffer b(p, 1000);
  ASSERT_EQ(table().device_memory_set(dev(p), b.ptr, 0xAB, 1000), OAR_SUCCESS);
  EXPECT_EQ(b.read<unsigned char>(), std::vector<unsigned char>(1000, 0xAB));
  OAR_Stream s = slow_stream(p, kDelayUs);
  ASSERT_EQ(table().async_device_memory_set(dev(p), s, static_cast<char*>(b.ptr) + 500, 0x01, 500), OAR_SUCCESS);
  EXPECT_EQ(table().query_stream(dev(p), s), OAR_ERROR_NOT_READY);  // queued, not done
  synchronize_stream(p, s);
  std::vector<unsigned char> want(1000, 0xAB);
  std::fill(want.begin() + 500, want.end(), 0x01);
  EXPECT_EQ(b.read<unsigned char>(), want);
  // A host pointer is refused with a message, never written.
  std::vector<char> host(16);
  EXPECT_EQ(table().device_memory_set(dev(p), host.data(), 0, 16), OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(table().get_last_error_message()).find("not device memory"), std::string::npos);
  destroy_stream(p, s);
}

TEST(SampleDeviceSlots, PeerCopiesBetweenTheTwoDevices) {
  const Place p0 = sample_place(0), p1 = sample_place(1);
  DeviceBuffer a(p0, 256), b(p1, 256), c(p0, 256);
  std::vector<unsigned char> in(256);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  DeviceManager& dm = DeviceManager::instance();
  dm.memcpy(p0, a.ptr, CPUPlace(), in.data(), 256);
  ASSERT_EQ(table().memory_copy_p2p(dev(p1), dev(p0), b.ptr, a.ptr, 256), OAR_SUCCESS);
  EXPECT_EQ(b.read<unsigned char>(), in);
  OAR_Stream s = slow_stream(p1, kDelayUs);
  ASSERT_EQ(table().async_memory_copy_p2p(dev(p0), dev(p1), s, c.ptr, b.ptr, 256), OAR_SUCCESS);
  synchronize_stream(p1, s);
  EXPECT_EQ(c.read<unsigned char>(), in);
  // The runtime's copy between two devices of one type uses the peer copy: make it fail.
  setenv("SAMPLE_DEVICE_FAIL", "p2p", 1);
  try {
    dm.memcpy(p1, b.ptr, p0, a.ptr, 256);
    ADD_FAILURE() << "DeviceManager::memcpy did not use memory_copy_p2p";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_copy_p2p"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("SAMPLE_DEVICE_FAIL=p2p"), std::string::npos) << e.what();
  }
  unsetenv("SAMPLE_DEVICE_FAIL");
  // Memory of the wrong device is refused.
  EXPECT_EQ(table().memory_copy_p2p(dev(p1), dev(p0), a.ptr, b.ptr, 256), OAR_ERROR_INVALID_ARGUMENT);
  destroy_stream(p1, s);
}

TEST(SampleDeviceSlots, UnifiedMemoryIsHostAddressable) {
  const Place p = sample_place();
  void* u = nullptr;
  ASSERT_EQ(table().unified_memory_allocate(dev(p), &u, 4096), OAR_SUCCESS);
  std::memset(u, 5, 4096);  // the host writes it directly
  EXPECT_EQ(static_cast<unsigned char*>(u)[4095], 5);
  EXPECT_EQ(table().unified_memory_deallocate(dev(p), u, 4096), OAR_SUCCESS);
  EXPECT_EQ(table().unified_memory_deallocate(dev(p), u, 4096), OAR_ERROR_INVALID_ARGUMENT);
}

TEST(SampleDeviceSlots, MaxAllocSizeAndPropertiesAgreeWithTheMemoryStats) {
  const Place p = sample_place(1);
  size_t total = 0, free_bytes = 0, max_alloc = 0;
  ASSERT_EQ(table().device_memory_stats(dev(p), &total, &free_bytes), OAR_SUCCESS);
  ASSERT_EQ(table().device_max_alloc_size(dev(p), &max_alloc), OAR_SUCCESS);
  EXPECT_EQ(max_alloc, total);
  const OAR_DeviceProperties props = DeviceManager::instance().properties(p);
  EXPECT_STREQ(props.name, "Oar sample device 1 (emulated)");
  EXPECT_EQ(props.total_memory, total);
  EXPECT_EQ(props.compute_units, 1);
  EXPECT_EQ(props.compute_capability_major, 1);
  EXPECT_EQ(props.runtime_version, OAR_DEVICE_ABI_VERSION_MAJOR * 1000 + OAR_DEVICE_ABI_VERSION_MINOR * 10);
  // An older runtime's shorter struct: nothing past its struct_size is written.
  OAR_DeviceProperties short_props;
  std::memset(&short_props, 0x5A, sizeof(short_props));
  short_props.struct_size = offsetof(OAR_DeviceProperties, compute_units);
  ASSERT_EQ(table().get_device_properties(dev(p), &short_props), OAR_SUCCESS);
  EXPECT_EQ(short_props.total_memory, total);
  EXPECT_EQ(short_props.compute_units, 0x5A5A5A5A) << "wrote past the caller's struct_size";
}

}  // namespace
}  // namespace oar::backends
