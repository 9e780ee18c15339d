// Loading real plugin libraries (tests/cpp/backends/testdev_plugin.c, built in its
// variants by tests/cpp/backends/CMakeLists.txt): ABI 1.0 and later-minor tables load,
// every refusal names the file, the device type and both versions, and a refused
// plugin leaves nothing registered.
#include <gtest/gtest.h>

#include <string>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/kernel_registry.h"

namespace oar::backends {
namespace {

std::string plugin_path(const std::string& name) { return std::string(OAR_TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }

// Loads a plugin once per process (the tests may share one).
void ensure_loaded(const std::string& name) {
  if (!DeviceManager::instance().has_device_type(name)) DeviceManager::instance().load_plugin(plugin_path(name));
}

// The message of the error load_plugin throws for `name`, after checking its kind.
std::string refusal(const std::string& name, ErrorKind kind = ErrorKind::kInvalidArgument) {
  try {
    DeviceManager::instance().load_plugin(plugin_path(name));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(e.message().find(plugin_path(name)), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("runtime ABI 1." + std::to_string(OAR_DEVICE_ABI_VERSION_MINOR)), std::string::npos)
        << e.message();
    return e.message();
  }
  ADD_FAILURE() << name << " was not refused";
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(DevicePlugins, CurrentPluginLoadsWithItsSlots) {
  ensure_loaded("testdev");
  const OAR_DeviceInterface& t = DeviceManager::instance().interface("testdev");
  EXPECT_NE(t.query_stream, nullptr);
  EXPECT_NE(t.get_last_error_message, nullptr);
  const OAR_DeviceProperties props = DeviceManager::instance().properties(CustomPlace("testdev", 0));
  EXPECT_EQ(props.struct_size, sizeof(OAR_DeviceProperties));
  EXPECT_STREQ(props.name, "testdev host emulation");
  EXPECT_EQ(props.compute_units, 1);
  EXPECT_EQ(props.total_memory, size_t{1} << 30);
}

TEST(DevicePlugins, Abi10PluginLoadsWithLaterSlotsNull) {
  ensure_loaded("testdev_v10");
  const OAR_DeviceInterface& t = DeviceManager::instance().interface("testdev_v10");
  EXPECT_NE(t.device_min_chunk_size, nullptr);  // its last slot
  EXPECT_EQ(t.query_stream, nullptr);           // everything after it reads as absent
  EXPECT_EQ(t.get_last_error_message, nullptr);
  EXPECT_EQ(t.ccl_group_end, nullptr);
  EXPECT_EQ(t.ccl_comm_abort, nullptr);
  EXPECT_EQ(t.create_stream_with_flags, nullptr);
  EXPECT_EQ(t.ccl_comm_get_async_error, nullptr);
  EXPECT_EQ(t.profiler_collect, nullptr);
  int src = 7, dst = 0;
  DeviceManager::instance().memcpy_h2d(CustomPlace("testdev_v10", 0), &dst, &src, sizeof(int));
  EXPECT_EQ(dst, 7);
  // No get_device_properties: the name and memory come from what a 1.0 table has.
  const OAR_DeviceProperties props = DeviceManager::instance().properties(CustomPlace("testdev_v10", 0));
  EXPECT_STREQ(props.name, "testdev_v10");
  EXPECT_EQ(props.total_memory, size_t{1} << 30);
  EXPECT_EQ(props.compute_units, 0);
  // Its (1.1-only) kernels were not offered.
  EXPECT_EQ(KernelRegistry::instance().find("add", device_type_from_name("testdev_v10"), DataType::FLOAT32), nullptr);
}

TEST(DevicePlugins, Abi11PluginLoadsWithoutTheAbortSlot) {
  ensure_loaded("testdev_v11");
  const OAR_DeviceInterface& t = DeviceManager::instance().interface("testdev_v11");
  EXPECT_NE(t.get_last_error_message, nullptr);  // its 1.1 slots arrive
  EXPECT_NE(t.get_device_properties, nullptr);
  EXPECT_EQ(t.ccl_comm_abort, nullptr);  // past its struct_size: absent, whatever the plugin left there
  EXPECT_EQ(t.create_stream_with_flags, nullptr);
  EXPECT_EQ(t.ccl_comm_get_async_error, nullptr);
  // Without the 1.3 slot a non-blocking stream is a plain one (correct, only waited for).
  const Place p = CustomPlace("testdev_v11", 0);
  OAR_Stream s = create_stream(p, OAR_STREAM_NON_BLOCKING);
  EXPECT_NE(s, nullptr);
  destroy_stream(p, s);
  int src = 11, dst = 0;
  DeviceManager::instance().memcpy_h2d(CustomPlace("testdev_v11", 0), &dst, &src, sizeof(int));
  EXPECT_EQ(dst, 11);
  EXPECT_NE(KernelRegistry::instance().find("add", device_type_from_name("testdev_v11"), DataType::FLOAT32), nullptr);
}

TEST(DevicePlugins, NewerMinorTableLoadsWithItsTailIgnored) {
  ensure_loaded("testdev_newer");
  const OAR_DeviceInterface& t = DeviceManager::instance().interface("testdev_newer");
  EXPECT_EQ(t.struct_size, sizeof(OAR_DeviceInterface));  // the copy is this runtime's size
  EXPECT_NE(t.get_last_error_message, nullptr);
  EXPECT_NE(KernelRegistry::instance().find("add", device_type_from_name("testdev_newer"), DataType::FLOAT32), nullptr);
}

TEST(DevicePlugins, OtherMajorIsRefused) {
  const std::string m = refusal("testdev_major2");
  expect_contains(m, "device 'testdev_major2', plugin ABI 2." + std::to_string(OAR_DEVICE_ABI_VERSION_MINOR));
  expect_contains(m, "rebuild the plugin");
  EXPECT_FALSE(DeviceManager::instance().has_device_type("testdev_major2"));
}

TEST(DevicePlugins, NoEntryPointIsRefused) {
  const std::string m = refusal("testdev_no_entry", ErrorKind::kNotFound);
  expect_contains(m, OAR_INIT_PLUGIN_SYMBOL);
  expect_contains(m, "no device type");
}

TEST(DevicePlugins, ShortTableIsRefused) {
  expect_contains(refusal("testdev_short"), "OAR_DeviceInterface.struct_size is 16");
  EXPECT_FALSE(DeviceManager::instance().has_device_type("testdev_short"));
}

TEST(DevicePlugins, MissingRequiredSlotIsRefused) {
  expect_contains(refusal("testdev_missing"), "required slot OAR_DeviceInterface.memory_copy_d2h is null");
  EXPECT_FALSE(DeviceManager::instance().has_device_type("testdev_missing"));
}

TEST(DevicePlugins, FailingInitializeIsRefusedWithThePluginsMessage) {
  const std::string m = refusal("testdev_init_fails", ErrorKind::kInternal);
  expect_contains(m, "initialize failed with OAR_ERROR_DEVICE");
  expect_contains(m, "no device found (driver not loaded)");
  EXPECT_FALSE(DeviceManager::instance().has_device_type("testdev_init_fails"));
  // Its kernels passed their checks, but a device that never went live registers none.
  EXPECT_EQ(KernelRegistry::instance().find("add", device_type_from_name("testdev_init_fails"), DataType::FLOAT32),
            nullptr);
}

TEST(DevicePlugins, HalfFilledCollectivesAreRefused) {
  const std::string m = refusal("testdev_half_ccl");
  expect_contains(m, "collectives are all or none");
  expect_contains(m, "ccl_all_reduce");
}

TEST(DevicePlugins, RefusedKernelsLeaveNothingRegistered) {
  struct Case {
    const char* plugin;
    const char* why;
  };
  for (const Case& c : {Case{"testdev_unknown_op", "register_kernel('no_such_op', float32): unknown op"},
                        Case{"testdev_bad_arity",
                             "register_kernel('subtract', float32): wrong arity: declared 1 "
                             "tensor argument(s), 0 attribute(s) and 1 output(s), the op has 2"},
                        Case{"testdev_bad_attr",
                             "register_kernel('matmul', float64): wrong type of argument 2: "
                             "declared int, the op has bool"}}) {
    const std::string m = refusal(c.plugin);
    expect_contains(m, c.why);
    EXPECT_FALSE(DeviceManager::instance().has_device_type(c.plugin));
    // Its valid kernels (add, relu, matmul) were checked but never registered.
    for (const char* op : {"add", "relu", "matmul"})
      EXPECT_EQ(KernelRegistry::instance().find(op, device_type_from_name(c.plugin), DataType::FLOAT32), nullptr) << op;
  }
}

TEST(DevicePlugins, LoadingTwiceIsAlreadyExists) {
  ensure_loaded("testdev");
  expect_contains(refusal("testdev", ErrorKind::kAlreadyExists), "already registered");
}

TEST(DevicePlugins, FailedCallCarriesThePluginsMessage) {
  ensure_loaded("testdev");
  const OAR_DeviceInterface& t = DeviceManager::instance().interface("testdev");
  void* p = nullptr;
  // Fails inside the plugin (an allocation past any limit), so its message is set...
  const OAR_Status s =
      t.device_memory_allocate(DeviceManager::instance().device(CustomPlace("testdev", 0)), &p, ~size_t{0});
  ASSERT_EQ(s, OAR_ERROR_OUT_OF_MEMORY);
  // ... and check_status reports it with the call.
  try {
    check_status(s, "testdev", "device_memory_allocate");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    expect_contains(e.message(), "device_memory_allocate failed with OAR_ERROR_OUT_OF_MEMORY");
    expect_contains(e.message(), "testdev: cannot allocate");
  }
}

// The refusals register_device gives before any library is involved.
struct Registration {
  explicit Registration(const char* type) : table(DeviceManager::instance().interface("cpu")) {
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = type;
    reg.interface = &table;
  }
  std::string refusal() {
    try {
      DeviceManager::instance().register_device(reg);
    } catch (const Error& e) {
      return e.message();
    }
    ADD_FAILURE() << "not refused";
    return "";
  }
  OAR_DeviceInterface table;
  OAR_DeviceRegistration reg{};
};

TEST(DevicePlugins, RegistrationRefusalsNameWhatIsWrong) {
  Registration no_name("");
  expect_contains(no_name.refusal(), "OAR_DeviceRegistration.device_type is empty");
  Registration short_version("reg_short_version");
  short_version.reg.version.struct_size = 4;
  expect_contains(short_version.refusal(), "OAR_DeviceAbiVersion.struct_size is 4");
  Registration failing_kernels("reg_failing_kernels");
  failing_kernels.reg.register_kernels = [](const OAR_KernelApi*) { return OAR_ERROR_DEVICE; };
  expect_contains(failing_kernels.refusal(), "its C kernels were refused: register_kernels returned OAR_ERROR_DEVICE");
  for (const char* type : {"reg_short_version", "reg_failing_kernels"})
    EXPECT_FALSE(DeviceManager::instance().has_device_type(type)) << type;
}

}  // namespace
}  // namespace oar::backends
