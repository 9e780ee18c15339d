// Note [Device types]: two plugin device types registered at once through the device
// table keep separate kernels and allocators; copies between the CPU and a device go
// through the device table (or the device's `copy` kernel); kernel workspaces are reused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/allocator.h"
#include "paddle_core/tensor/dense_tensor.h"

namespace oar::backends {
namespace {

// Per-device-type call counts of the fake tables' slots. Memory is host memory (the
// CPU's table underneath), so the test can look at it, but every byte that moves goes
// through these slots, so the counts show what reached which table.
template <int N>
struct Calls {
  static inline std::atomic<int> allocs{0}, frees{0}, h2d{0}, d2h{0}, d2d{0};
};

template <int N>
OAR_DeviceInterface counting_table() {
  static const OAR_DeviceInterface cpu = DeviceManager::instance().interface("cpu");
  OAR_DeviceInterface t = cpu;
  t.device_memory_allocate = [](const OAR_Device* d, void** p, size_t n) {
    ++Calls<N>::allocs;
    return cpu.device_memory_allocate(d, p, n);
  };
  t.device_memory_deallocate = [](const OAR_Device* d, void* p, size_t n) {
    ++Calls<N>::frees;
    return cpu.device_memory_deallocate(d, p, n);
  };
  t.memory_copy_h2d = [](const OAR_Device* d, void* dst, const void* src, size_t n) {
    ++Calls<N>::h2d;
    return cpu.memory_copy_h2d(d, dst, src, n);
  };
  t.memory_copy_d2h = [](const OAR_Device* d, void* dst, const void* src, size_t n) {
    ++Calls<N>::d2h;
    return cpu.memory_copy_d2h(d, dst, src, n);
  };
  t.memory_copy_d2d = [](const OAR_Device* d, void* dst, const void* src, size_t n) {
    ++Calls<N>::d2d;
    return cpu.memory_copy_d2d(d, dst, src, n);
  };
  return t;
}

// Registers device type `name` once per process (gtest_discover_tests runs each test in
// its own process; a plain run of the binary runs them all in one).
template <int N>
Place fake_device(const char* name) {
  static const Place place = [name] {
    OAR_DeviceInterface table = counting_table<N>();
    OAR_DeviceRegistration reg{};
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = name;
    reg.interface = &table;
    DeviceManager::instance().register_device(reg);
    return CustomPlace(name, 0);
  }();
  return place;
}
Place dev_a() { return fake_device<0>("fake_dev_a"); }
Place dev_b() { return fake_device<1>("fake_dev_b"); }

// Fake kernels: each records which one ran.
std::vector<std::string> g_ran;
void kernel_a() { g_ran.push_back("a"); }
void kernel_b() { g_ran.push_back("b"); }
void run(void* fn) { reinterpret_cast<void (*)()>(fn)(); }

// dev_b's `copy` kernel: its memory is host memory, so it runs the CPU's copy kernel on
// CPU-placed aliases of the same storage, and counts its calls.
std::atomic<int> g_b_copies{0};
void fake_b_copy(const DeviceContext& ctx, const DenseTensor& src, DenseTensor* dst) {
  EXPECT_EQ(ctx.place, dev_b());
  EXPECT_EQ(src.place(), dev_b());
  EXPECT_EQ(dst->place(), dev_b());
  ++g_b_copies;
  DenseTensor s = src, d = *dst;
  s.set_place(CPUPlace());
  d.set_place(CPUPlace());
  auto cpu = reinterpret_cast<kernel_sig::copy>(KernelRegistry::instance().find("copy", DeviceType::kCPU, src.dtype()));
  cpu(device_context(CPUPlace()), s, &d);
}
void register_b_copy_kernel() {
  static const bool once = [] {
    for (DataType t : {DataType::FLOAT32, DataType::FLOAT64}) {
      KernelRegistry::instance().register_kernel("copy", "fake_dev_b", t, reinterpret_cast<void*>(&fake_b_copy));
    }
    return true;
  }();
  (void)once;
}

DenseTensor cpu_tensor(const Dims& dims, DataType t = DataType::FLOAT32) {
  DenseTensor x(dims, t, CPUPlace());
  x.alloc();
  return x;
}
DenseTensor iota(const Dims& dims) {
  DenseTensor x = cpu_tensor(dims);
  std::iota(x.data<float>(), x.data<float>() + x.numel(), 1.0f);
  return x;
}
template <typename T>
std::vector<T> values(const DenseTensor& t) {
  DenseTensor host = cpu_tensor(t.dims(), t.dtype());
  copy_into(t, &host);
  return std::vector<T>(host.data<T>(), host.data<T>() + host.numel());
}
DenseTensor on(const Place& place, const DenseTensor& x) {
  DenseTensor d(x.dims(), x.dtype(), place);
  d.alloc();
  copy_into(x, &d);
  return d;
}
// The transpose of a 2-D tensor, as a view.
DenseTensor transposed(const DenseTensor& x) {
  DenseTensor v = x;
  v.set_view(Dims{x.dims()[1], x.dims()[0]}, Dims{x.strides()[1], x.strides()[0]}, x.offset());
  return v;
}

TEST(DeviceTypes, InternedIdsNamesAndPlaces) {
  const Place a = dev_a(), b = dev_b();
  EXPECT_NE(a.type(), b.type());
  EXPECT_TRUE(a.is_custom() && b.is_custom());
  EXPECT_FALSE(a.is_cpu() || a.is_gpu());
  EXPECT_EQ(device_type_name(a.type()), "fake_dev_a");
  EXPECT_EQ(device_type_from_name("fake_dev_b"), b.type());
  EXPECT_EQ(a.str(), "fake_dev_a:0");
  EXPECT_EQ(parse_place("fake_dev_b:0"), b);
  EXPECT_NE(parse_place("fake_dev_b:1"), b);
  EXPECT_EQ(DeviceManager::device_type_of(b), "fake_dev_b");
  EXPECT_EQ(device_type_from_name("cpu"), DeviceType::kCPU);
  EXPECT_EQ(device_type_from_name("cuda"), DeviceType::kGPU);
  EXPECT_EQ(GPUPlace(1).str(), "gpu:1");
  EXPECT_EQ(CPUPlace().str(), "cpu");
  EXPECT_EQ(sizeof(Place), 4u);  // copied and compared on every op
}

TEST(DeviceTypes, TooManyDeviceTypesIsAClearError) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  // In a child process: interning fills a process-wide table.
  EXPECT_EXIT(
      {
        std::string message;
        try {
          for (int i = 0; i <= kMaxDeviceTypes; ++i) device_type_from_name("extra" + std::to_string(i));
        } catch (const Error& e) {
          message = e.message();
        }
        const bool ok = message.find("at most 16 device types") != std::string::npos &&
                        message.find("cpu, gpu") != std::string::npos;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(DeviceTypes, TwoPluginTypesKeepSeparateKernels) {
  const Place a = dev_a(), b = dev_b();
  auto& reg = KernelRegistry::instance();
  reg.register_kernel("devtypes_op", "fake_dev_a", DataType::FLOAT32, reinterpret_cast<void*>(&kernel_a));
  reg.register_kernel("devtypes_op", b.type(), DataType::FLOAT32, reinterpret_cast<void*>(&kernel_b));
  reg.register_kernel("devtypes_only_a", "fake_dev_a", DataType::FLOAT32, reinterpret_cast<void*>(&kernel_a));

  KernelSlot slot("devtypes_op");
  g_ran.clear();
  run(slot.get(a, DataType::FLOAT32));
  run(slot.get(b, DataType::FLOAT32));
  run(slot.get(a, DataType::FLOAT32));  // cached
  EXPECT_EQ(g_ran, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(reg.dtypes("devtypes_op", a.type()), std::vector<DataType>{DataType::FLOAT32});
  EXPECT_TRUE(reg.dtypes("devtypes_op", DeviceType::kCPU).empty());

  // Registered for a only: b, and the CPU, do not see it.
  EXPECT_NE(reg.find("devtypes_only_a", a.type(), DataType::FLOAT32), nullptr);
  EXPECT_EQ(reg.find("devtypes_only_a", b.type(), DataType::FLOAT32), nullptr);
  KernelSlot only_a("devtypes_only_a");
  EXPECT_NE(only_a.find(a, DataType::FLOAT32), nullptr);
  EXPECT_EQ(only_a.find(b, DataType::FLOAT32), nullptr);
  try {
    only_a.get(b, DataType::FLOAT32);
    FAIL() << "a kernel of fake_dev_a was found for fake_dev_b";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    EXPECT_EQ(e.message(), "devtypes_only_a: no fake_dev_b kernel for dtype float32 (supported: )");
  }
  // The same (op, device type, dtype) twice is refused, naming the device type.
  try {
    reg.register_kernel("devtypes_op", "fake_dev_b", DataType::FLOAT32, reinterpret_cast<void*>(&kernel_a));
    FAIL() << "double registration accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "kernel devtypes_op for fake_dev_b/float32 is registered twice");
  }
  // A kernel registered after a miss is found: misses are not cached.
  reg.register_kernel("devtypes_only_a", "fake_dev_b", DataType::FLOAT32, reinterpret_cast<void*>(&kernel_b));
  g_ran.clear();
  run(only_a.get(b, DataType::FLOAT32));
  EXPECT_EQ(g_ran, std::vector<std::string>{"b"});
}

TEST(DeviceTypes, TwoPluginTypesKeepSeparateAllocators) {
  const Place a = dev_a(), b = dev_b();
  Allocator* alloc_a = get_allocator(a);
  Allocator* alloc_b = get_allocator(b);
  EXPECT_NE(alloc_a, alloc_b);
  EXPECT_NE(alloc_a, get_allocator(CPUPlace()));
  EXPECT_EQ(alloc_a, get_allocator(a));
  const AllocatorStats a0 = alloc_a->stats(), b0 = alloc_b->stats();
  const int a_allocs = Calls<0>::allocs, b_allocs = Calls<1>::allocs;
  {
    DenseTensor t(Dims{12345}, DataType::FLOAT32, a);  // a size class no other test uses
    t.alloc();
    EXPECT_GE(alloc_a->stats().allocated_bytes - a0.allocated_bytes, 12345 * 4);
    EXPECT_EQ(alloc_b->stats().allocated_bytes, b0.allocated_bytes);
    EXPECT_EQ(Calls<0>::allocs, a_allocs + 1);  // reached a's table ...
    EXPECT_EQ(Calls<1>::allocs, b_allocs);      // ... and not b's
  }
  EXPECT_EQ(alloc_a->stats().allocated_bytes, a0.allocated_bytes);
  EXPECT_GT(alloc_a->stats().cached_bytes, a0.cached_bytes);
  EXPECT_EQ(alloc_b->stats().cached_bytes, b0.cached_bytes);
}

TEST(DeviceTypes, CopiesRoundTripThroughTheDeviceTable) {
  const Place a = dev_a();
  const DenseTensor x = iota(Dims{2, 3});
  const int h2d = Calls<0>::h2d, d2h = Calls<0>::d2h;
  DenseTensor d = on(a, x);
  EXPECT_EQ(d.place(), a);
  EXPECT_EQ(Calls<0>::h2d, h2d + 1);
  EXPECT_EQ(values<float>(d), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Calls<0>::d2h, d2h + 1);

  // A strided host view and a dtype change on the way in; a scalar read on the host.
  DenseTensor dt(Dims{3, 2}, DataType::FLOAT64, a);
  dt.alloc();
  copy_into(transposed(x), &dt);
  EXPECT_EQ(values<double>(dt), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  double last = 0;
  DenseTensor tail = dt;
  tail.set_view(Dims{}, Dims{}, 5);
  copy_to_host(tail, &last, sizeof(double));
  EXPECT_EQ(last, 6.0);
  float first_two[2] = {0, 0};
  copy_to_host(d, first_two, sizeof(first_two));
  EXPECT_EQ(first_two[1], 2.0f);
  EXPECT_THROW(copy_to_host(d, first_two, 7 * sizeof(float)), Error);

  // Device -> device of another type goes through the host.
  DenseTensor on_b(Dims{2, 3}, DataType::FLOAT32, dev_b());
  on_b.alloc();
  const int b_h2d = Calls<1>::h2d;
  copy_into(d, &on_b);
  EXPECT_EQ(Calls<1>::h2d, b_h2d + 1);
  EXPECT_EQ(values<float>(on_b), values<float>(x));
}

TEST(DeviceTypes, ViewsOnADeviceWithoutACopyKernel) {
  const Place a = dev_a();
  ASSERT_EQ(KernelRegistry::instance().find("copy", a.type(), DataType::FLOAT32), nullptr);
  DenseTensor d = on(a, iota(Dims{2, 3}));
  // contiguous() of a transposed device view: the bytes go to the host and back.
  DenseTensor c = contiguous(transposed(d));
  EXPECT_EQ(c.place(), a);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values<float>(c), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // Same dtype, both contiguous: one device-to-device copy.
  const int d2d = Calls<0>::d2d;
  DenseTensor same(Dims{3, 2}, DataType::FLOAT32, a);
  same.alloc();
  copy_into(c, &same);
  EXPECT_EQ(Calls<0>::d2d, d2d + 1);
  // Writing a host row into column 1 of the device matrix leaves the rest alone.
  DenseTensor col = d;
  col.set_view(Dims{2}, Dims{3}, 1);
  DenseTensor src = cpu_tensor(Dims{2});
  src.data<float>()[0] = -1, src.data<float>()[1] = -2;
  copy_into(src, &col);
  EXPECT_EQ(values<float>(d), (std::vector<float>{1, -1, 3, 4, -2, 6}));
}

TEST(DeviceTypes, CopiesOnADeviceRunItsCopyKernel) {
  const Place b = dev_b();
  register_b_copy_kernel();
  DenseTensor d = on(b, iota(Dims{2, 3}));
  const int before = g_b_copies;
  DenseTensor c = contiguous(transposed(d));
  EXPECT_EQ(g_b_copies, before + 1);
  EXPECT_EQ(values<float>(c), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // A strided device view read on the host is packed by the kernel first.
  EXPECT_EQ(values<float>(transposed(d)), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(g_b_copies, before + 2);
  // A host tensor into a strided device view: lands contiguous, the kernel scatters it.
  DenseTensor col = d;
  col.set_view(Dims{2}, Dims{3}, 2);
  DenseTensor src = cpu_tensor(Dims{2});
  src.data<float>()[0] = 10, src.data<float>()[1] = 20;
  copy_into(src, &col);
  EXPECT_EQ(g_b_copies, before + 3);
  EXPECT_EQ(values<float>(d), (std::vector<float>{1, 2, 10, 4, 5, 20}));
}

struct TestWorkspaceTag;

TEST(DeviceTypes, WorkspacesComeFromTheAllocatorAndAreReused) {
  // Per-thread workspace: the same memory until a larger one is asked for.
  void* p = thread_workspace<TestWorkspaceTag>(0, 1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(thread_workspace<TestWorkspaceTag>(0, 1000), p);
  EXPECT_EQ(thread_workspace<TestWorkspaceTag>(0, 10), p);
  EXPECT_NE(thread_workspace<TestWorkspaceTag>(1, 10), p);  // another slot
  std::memset(thread_workspace<TestWorkspaceTag>(0, 1 << 20), 0, 1 << 20);
  release_thread_workspace<TestWorkspaceTag>();

  // A Workspace on a device: from that device's allocator, back to its cache at scope
  // exit, and the next one of that size reuses the cached block.
  const Place a = dev_a();
  Allocator* alloc = get_allocator(a);
  const AllocatorStats s0 = alloc->stats();
  void* first = nullptr;
  {
    Workspace w(a, 3000);
    first = w.data();
    EXPECT_EQ(w.place(), a);
    EXPECT_GE(w.bytes(), 3000u);
    EXPECT_GT(alloc->stats().allocated_bytes, s0.allocated_bytes);
    Workspace moved = std::move(w);
    EXPECT_EQ(w.data(), nullptr);
    EXPECT_EQ(moved.data(), first);
  }
  EXPECT_EQ(alloc->stats().allocated_bytes, s0.allocated_bytes);
  const int64_t device_allocs = alloc->stats().num_device_allocs;
  {
    Workspace again(a, 3000);
    EXPECT_EQ(again.data(), first);
  }
  EXPECT_EQ(alloc->stats().num_device_allocs, device_allocs);
}

}  // namespace
}  // namespace oar::backends
