#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "paddle_core/base/errors.h"

namespace oar::backends {
namespace {

// A plugin-style registration whose table starts as a copy of the CPU's, so a test
// can break or replace one slot at a time.
struct FakeDevice {
  explicit FakeDevice(std::string type)
      : name(std::move(type)), table(DeviceManager::instance().interface("cpu")) {
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR,
                   OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = name.c_str();
    reg.interface = &table;
  }
  std::string name;
  OAR_DeviceInterface table;
  OAR_DeviceRegistration reg{};
};

// The error a call throws, or fails the test.
Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected oar::Error";
  return Error(ErrorKind::kInternal, "<no error>");
}

TEST(DeviceManager, CpuIsRegistered) {
  auto& dm = DeviceManager::instance();
  EXPECT_TRUE(dm.has_device_type("cpu"));
  auto types = dm.device_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "cpu"), types.end());
  EXPECT_EQ(dm.device_count("cpu"), 1);
  EXPECT_EQ(DeviceManager::device_type_of(CPUPlace()), "cpu");
  EXPECT_EQ(dm.interface("cpu").struct_size, sizeof(OAR_DeviceInterface));
  EXPECT_EQ(dm.device(CPUPlace())->id, 0);
}

TEST(DeviceManager, UnknownTypeIsNotFound) {
  Error e = error_of([] { DeviceManager::instance().device_count("no_such_device"); });
  EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  EXPECT_NE(e.message().find("no_such_device"), std::string::npos);
}

TEST(DeviceManager, CpuCopiesRoundTrip) {
  auto& dm = DeviceManager::instance();
  std::vector<float> host = {1, 2, 3, 4}, dev(4), dev2(4), back(4);
  dm.memcpy_h2d(CPUPlace(), dev.data(), host.data(), 4 * sizeof(float));
  dm.memcpy_d2d(CPUPlace(), dev2.data(), dev.data(), 4 * sizeof(float));
  dm.memcpy_d2h(CPUPlace(), back.data(), dev2.data(), 4 * sizeof(float));
  EXPECT_EQ(back, host);
  dm.synchronize(CPUPlace());
}

TEST(DeviceManager, CpuStreamsEventsAndMemoryThroughTheTable) {
  auto& dm = DeviceManager::instance();
  const OAR_DeviceInterface& t = dm.interface("cpu");
  OAR_Device* d = dm.device(CPUPlace());
  OAR_Stream s = nullptr;
  OAR_Event e = nullptr;
  ASSERT_EQ(t.create_stream(d, &s), OAR_SUCCESS);
  ASSERT_EQ(t.create_event(d, &e), OAR_SUCCESS);
  EXPECT_NE(s, nullptr);
  EXPECT_NE(e, nullptr);
  EXPECT_EQ(t.record_event(d, s, e), OAR_SUCCESS);
  EXPECT_EQ(t.stream_wait_event(d, s, e), OAR_SUCCESS);
  EXPECT_EQ(t.synchronize_event(d, e), OAR_SUCCESS);
  EXPECT_EQ(t.synchronize_stream(d, s), OAR_SUCCESS);
  EXPECT_EQ(t.destroy_event(d, e), OAR_SUCCESS);
  EXPECT_EQ(t.destroy_stream(d, s), OAR_SUCCESS);

  void* p = nullptr;
  ASSERT_EQ(t.device_memory_allocate(d, &p, 100), OAR_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(t.device_memory_deallocate(d, p, 100), OAR_SUCCESS);
  size_t total = 0, free_bytes = 0, chunk = 0;
  ASSERT_EQ(t.device_memory_stats(d, &total, &free_bytes), OAR_SUCCESS);
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_bytes, total);
  ASSERT_EQ(t.device_min_chunk_size(d, &chunk), OAR_SUCCESS);
  EXPECT_EQ(chunk, 64u);
}

TEST(DeviceManager, RejectsMissingRequiredSlot) {
  FakeDevice fake("fake_missing_slot");
  fake.table.memory_copy_d2h = nullptr;
  Error e = error_of([&] { DeviceManager::instance().register_device(fake.reg); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(e.message().find("memory_copy_d2h"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("fake_missing_slot"), std::string::npos) << e.message();
  EXPECT_FALSE(DeviceManager::instance().has_device_type("fake_missing_slot"));
}

TEST(DeviceManager, OptionalSlotsMayBeNull) {
  FakeDevice fake("fake_minimal");
  fake.table.stream_wait_event = nullptr;
  fake.table.host_memory_allocate = nullptr;
  fake.table.host_memory_deallocate = nullptr;
  fake.table.async_memory_copy_h2d = nullptr;
  fake.table.async_memory_copy_d2h = nullptr;
  fake.table.async_memory_copy_d2d = nullptr;
  DeviceManager::instance().register_device(fake.reg);
  EXPECT_TRUE(DeviceManager::instance().has_device_type("fake_minimal"));
}

TEST(DeviceManager, RejectsBadStructSizes) {
  auto& dm = DeviceManager::instance();
  FakeDevice small_reg("fake_bad_reg_size");
  small_reg.reg.struct_size = 8;
  Error e = error_of([&] { dm.register_device(small_reg.reg); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(e.message().find("OAR_DeviceRegistration.struct_size"), std::string::npos);

  FakeDevice small_table("fake_bad_table_size");
  small_table.table.struct_size = 16;
  e = error_of([&] { dm.register_device(small_table.reg); });
  EXPECT_NE(e.message().find("OAR_DeviceInterface.struct_size"), std::string::npos);
  EXPECT_FALSE(dm.has_device_type("fake_bad_table_size"));
}

TEST(DeviceManager, RejectsOtherMajorVersion) {
  FakeDevice fake("fake_future_abi");
  fake.reg.version.major = OAR_DEVICE_ABI_VERSION_MAJOR + 1;
  Error e = error_of([&] { DeviceManager::instance().register_device(fake.reg); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(e.message().find("ABI"), std::string::npos) << e.message();
}

TEST(DeviceManager, RejectsNullInterfaceAndDuplicates) {
  FakeDevice no_table("fake_null_table");
  no_table.reg.interface = nullptr;
  EXPECT_EQ(error_of([&] { DeviceManager::instance().register_device(no_table.reg); }).kind(),
            ErrorKind::kInvalidArgument);
  FakeDevice dup("cpu");
  EXPECT_EQ(error_of([&] { DeviceManager::instance().register_device(dup.reg); }).kind(),
            ErrorKind::kAlreadyExists);
}

TEST(DeviceManager, PluginDeviceIsReachedByCustomPlace) {
  FakeDevice fake("fakenpu");
  DeviceManager::instance().register_device(fake.reg);
  Place place = parse_place("fakenpu:0");
  EXPECT_TRUE(place.is_custom());
  EXPECT_EQ(DeviceManager::device_type_of(place), "fakenpu");
  int src = 42, dst = 0;
  DeviceManager::instance().memcpy_h2d(place, &dst, &src, sizeof(int));
  EXPECT_EQ(dst, 42);
  Error e = error_of([] { DeviceManager::instance().device(CustomPlace("fakenpu", 3)); });
  EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
}

TEST(DeviceManager, FailingCallNamesDeviceAndCall) {
  FakeDevice fake("fake_broken_copy");
  fake.table.memory_copy_h2d = [](const OAR_Device*, void*, const void*, size_t) {
    return OAR_ERROR_DEVICE;
  };
  DeviceManager::instance().register_device(fake.reg);
  int src = 1, dst = 0;
  Error e = error_of([&] {
    DeviceManager::instance().memcpy_h2d(CustomPlace("fake_broken_copy", 0), &dst, &src, 4);
  });
  EXPECT_NE(e.message().find("fake_broken_copy"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("memory_copy_h2d"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("OAR_ERROR_DEVICE"), std::string::npos) << e.message();
}

TEST(DeviceManager, LoadPluginMissingFileThrows) {
  Error e = error_of([] { DeviceManager::instance().load_plugin("/nonexistent/libnpu.so"); });
  EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  EXPECT_NE(e.message().find("/nonexistent/libnpu.so"), std::string::npos);
}

TEST(DeviceManager, LoadPluginWithoutEntryPointThrows) {
  // libm exists everywhere and exports no oar_init_plugin.
  Error e = error_of([] { DeviceManager::instance().load_plugin("libm.so.6"); });
  EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  EXPECT_NE(e.message().find(OAR_INIT_PLUGIN_SYMBOL), std::string::npos) << e.message();
}

}  // namespace
}  // namespace oar::backends
