// SketchDevice without a GPU: it fails with a clear Status when there is no driver (or a stub),
// and, against a stand-in libcuda that runs the kernel body on the host emulator, it launches
// the right kernels with the right geometry, publishes results equal to SketchHost, never hands
// out a result before the kernel finished, recycles slots, and reports graph replays.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "ncclrr/sketch/device.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch {
namespace {

void* const kCapturingStream = reinterpret_cast<void*>(0xcafe);
void* const kBrokenStream = reinterpret_cast<void*>(0xdead);

template <typename F>
F Control(const char* name) {
  void* h = dlopen(NCCLRR_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  return h ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

std::vector<float> Floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void ExpectSame(const SketchResult& a, const SketchResult& b) {
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    EXPECT_EQ(std::memcmp(a.blocks[i].dots.data(), b.blocks[i].dots.data(), 128), 0);
    EXPECT_EQ(a.blocks[i].samples, b.blocks[i].samples);
    EXPECT_EQ(a.blocks[i].sumsq, b.blocks[i].sumsq);
  }
  ASSERT_EQ(a.race.has_value(), b.race.has_value());
  if (a.race) {
    EXPECT_EQ(std::memcmp(a.race->dots.data(), b.race->dots.data(), 128), 0);
  }
}

TEST(SketchDevice, WithoutADriverItSaysSo) {
  SketchDeviceOptions o;
  o.driver_path = "/nonexistent/libcuda.so.1";
  auto dev = SketchDevice::Create(o);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(dev.status().message().find("no CUDA driver"), std::string::npos)
      << dev.status().message();
}

TEST(SketchDevice, TheToolkitStubLibraryIsRefusedAtCuInit) {
  SketchDeviceOptions o;
  o.driver_path = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!dlopen(o.driver_path.c_str(), RTLD_NOW | RTLD_LOCAL)) GTEST_SKIP() << "no CUDA stub here";
  auto dev = SketchDevice::Create(o);
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("cuInit failed"), std::string::npos)
      << dev.status().message();
}

TEST(SketchDevice, KernelsAreEmbeddedWhenBuiltWithNvcc) {
#if NCCLRR_TEST_HAVE_CUDA
  EXPECT_TRUE(DeviceKernelsBuiltIn());
#else
  EXPECT_FALSE(DeviceKernelsBuiltIn());
#endif
}

// A SketchDevice on the stand-in libcuda (kernels on the host emulator), with few slots.
StatusOr<std::unique_ptr<SketchDevice>> FakeSketchDevice() {
  SketchDeviceOptions o;
  o.driver_path = NCCLRR_FAKE_LIBCUDA;
  o.slots = 4;
  o.max_tiles = 16;
  return SketchDevice::Create(o);
}

class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!DeviceKernelsBuiltIn()) GTEST_SKIP() << "built without nvcc";
    auto dev = FakeSketchDevice();
    ASSERT_TRUE(dev.ok()) << dev.status().message();
    dev_ = std::move(*dev);
  }
  void TearDown() override {
    if (auto forget = Control<void (*)()>("fake_cuda_forget_graph")) forget();
    if (auto set_deferred = Control<void (*)(int)>("fake_cuda_set_deferred")) set_deferred(0);
    if (auto set_gate = Control<void (*)(int)>("fake_cuda_set_gate")) set_gate(0);
    if (auto fail_pushes = Control<void (*)(int)>("fake_cuda_fail_pushes")) fail_pushes(0);
    if (auto set_sms = Control<void (*)(int)>("fake_cuda_set_sms")) set_sms(0);
  }
  std::unique_ptr<SketchDevice> dev_;
};

TEST_F(FakeDriver, ResultsEqualTheHostAndFusedDtypesLaunchOncePerDtype) {
  const auto a = Floats(70000, 1), b = Floats(5000, 2);
  std::vector<uint16_t> c(3000);
  for (size_t i = 0; i < c.size(); ++i) c[i] = uint16_t(0x3f00 + i % 200);  // bf16
  SketchRequest ra, rb, rc;
  ra.layout = {uint8_t(Dtype::kFloat32), 70000, 1, 0, 0};
  ra.mode = SketchMode::kFullAndRace;
  rb.layout = {uint8_t(Dtype::kFloat32), 1000, 5, 17, 2000};
  rc.layout = {uint8_t(Dtype::kBfloat16), 3000, 1, 9, 0};
  const int before = Control<int (*)()>("fake_cuda_launches")();
  auto slots = dev_->Enqueue(nullptr, {{a.data(), ra}, {c.data(), rc}, {b.data(), rb}});
  ASSERT_TRUE(slots.ok()) << slots.status().message();
  EXPECT_EQ(Control<int (*)()>("fake_cuda_launches")() - before, 2);  // float32 pair + bf16
  const SketchRequest* reqs[] = {&ra, &rc, &rb};
  const void* data[] = {a.data(), c.data(), b.data()};
  for (int i = 0; i < 3; ++i) {
    auto got = dev_->Poll((*slots)[i]);
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ((*got)->generation, 1u);
    ExpectSame(SketchHost(data[i], *reqs[i]).value(), (*got)->result);
  }
  EXPECT_FALSE(dev_->Poll((*slots)[0]).ok());  // released after its result was read
}

std::string TakeOps() {
  char buf[4096];
  Control<void (*)(char*, int)>("fake_cuda_take_ops")(buf, sizeof(buf));
  return buf;
}

std::string Hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// EnqueueForked: an event marks where the caller's stream is, a side stream waits for it and
// takes the launch, the same event then marks the launch's end, and JoinFork makes the caller's
// stream wait for it. A second fork from the same stream reuses the side stream and the event.
TEST_F(FakeDriver, AForkRunsOnASideStreamBetweenTwoMarksOfOneEvent) {
  const auto a = Floats(70000, 3);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 70000, 1, 0, 0};
  r.mode = SketchMode::kFullAndRace;
  void* const user = reinterpret_cast<void*>(0x7000);
  ASSERT_TRUE(dev_->Prepare(user).ok());
  TakeOps();
  std::string side_seen;
  for (int round = 0; round < 2; ++round) {
    SketchDevice::Fork fork;
    auto slots = dev_->EnqueueForked(user, {{a.data(), r}}, &fork);
    ASSERT_TRUE(slots.ok()) << slots.status().message();
    ASSERT_FALSE(fork.empty());
    EXPECT_EQ(fork.stream, user);
    dev_->JoinFork(fork);
    const std::string ops = TakeOps(), e = Hex(fork.done), u = Hex(user);
    // "record E U;wait S E;launch S;record E S;wait U E" for some side stream S.
    const std::string head = "record " + e + " " + u + ";wait ";
    ASSERT_EQ(ops.compare(0, head.size(), head), 0) << ops;
    const std::string side = ops.substr(head.size(), ops.find(' ', head.size()) - head.size());
    EXPECT_NE(side, u);
    EXPECT_EQ(ops, head + side + " " + e + ";launch " + side + ";record " + e + " " + side +
                       ";wait " + u + " " + e);
    if (round == 1) {
      EXPECT_EQ(side, side_seen);  // one side stream per caller stream
    }
    side_seen = side;
    auto got = dev_->Poll((*slots)[0]);
    ASSERT_TRUE(got.ok() && got->has_value());
    ExpectSame(SketchHost(a.data(), r).value(), (*got)->result);
  }
}

// A plain sketch takes one wave of the GPU (two CTAs per SM), a forked one half the SMs (one CTA
// each); on a GPU whose SM count is unknown, the options' max_tiles and one CTA. Larger tiles of
// the same chunks, the same results.
TEST_F(FakeDriver, APlainSketchTakesOneWaveAndAForkedOneHalfTheSms) {
  const uint64_t n = 40 * 4096;  // 40 chunks: 5 tiles of 8 chunks, 2 of 32, or 1 of 64
  const auto a = Floats(n, 5);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), n, 1, 0, 0};
  r.mode = SketchMode::kFullAndRace;
  const SketchResult want = SketchHost(a.data(), r).value();
  auto grid = Control<unsigned (*)()>("fake_cuda_last_grid");
  void* const user = reinterpret_cast<void*>(0x7100);
  auto expect_grid = [&](bool forked, unsigned ctas) {
    SketchDevice::Fork fork;
    auto slots = forked ? dev_->EnqueueForked(user, {{a.data(), r}}, &fork)
                        : dev_->Enqueue(user, {{a.data(), r}});
    ASSERT_TRUE(slots.ok()) << slots.status().message();
    dev_->JoinFork(fork);
    EXPECT_EQ(grid(), ctas) << (forked ? "forked" : "plain");
    auto got = dev_->Poll((*slots)[0]);
    ASSERT_TRUE(got.ok() && got->has_value());
    ExpectSame(want, (*got)->result);
  };
  expect_grid(false, 5);  // unknown SM count: up to max_tiles (16) CTAs
  expect_grid(true, 1);   // and a fork on one CTA, leaving the GPU to the collective
  Control<void (*)(int)>("fake_cuda_set_sms")(1);
  auto one_sm = FakeSketchDevice();  // its context sees 1 SM
  ASSERT_TRUE(one_sm.ok());
  dev_ = std::move(*one_sm);
  expect_grid(false, 2);  // one wave: 2 CTAs
  expect_grid(true, 1);   // half of one SM, at least one CTA
  Control<void (*)(int)>("fake_cuda_set_sms")(4);
  SketchDeviceOptions o;
  o.driver_path = NCCLRR_FAKE_LIBCUDA;
  o.max_tiles = 16;
  o.one_wave = false;  // max_tiles alone (sketch_gpu_check --max-tiles)
  auto uncapped = SketchDevice::Create(o);
  ASSERT_TRUE(uncapped.ok());
  dev_ = std::move(*uncapped);
  expect_grid(false, 5);
  expect_grid(true, 2);  // half of 4 SMs
}

// A capturing stream keeps its sketches (they become part of the graph), and the handles that
// name another stream on each thread (legacy 0, per-thread 2) would tie threads together through
// one side stream: no fork, the sketch goes on the stream itself.
TEST_F(FakeDriver, CapturingAndPerThreadStreamsAreNotForked) {
  const auto a = Floats(1000, 4);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 1000, 1, 0, 0};
  for (void* stream : {kCapturingStream, static_cast<void*>(nullptr), reinterpret_cast<void*>(2)}) {
    SketchDevice::Fork fork;
    TakeOps();
    auto slots = dev_->EnqueueForked(stream, {{a.data(), r}}, &fork);
    ASSERT_TRUE(slots.ok()) << slots.status().message();
    EXPECT_TRUE(fork.empty());
    EXPECT_EQ(TakeOps(), "launch " + Hex(stream));
    dev_->JoinFork(fork);
    EXPECT_EQ(TakeOps(), "");
    if (stream == kCapturingStream) {
      dev_->Release((*slots)[0], 0);
    } else {
      auto got = dev_->Poll((*slots)[0]);
      ASSERT_TRUE(got.ok() && got->has_value());
    }
  }
}

// The interposer prepares a device's context before NCCL creates a communicator: the first
// Enqueue then loads and allocates nothing (those calls can wait for other GPUs' kernels).
TEST(SketchDevicePrepare, PreparedContextIsNotSetUpAgainAtTheFirstEnqueue) {
  if (!DeviceKernelsBuiltIn()) GTEST_SKIP() << "built without nvcc";
  auto dev = FakeSketchDevice();
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_FALSE((*dev)->Prepare(kBrokenStream).ok()) << "a stream without a context says so";
  const int loads = Control<int (*)()>("fake_cuda_module_loads")();
  ASSERT_TRUE((*dev)->Prepare(nullptr).ok());
  EXPECT_EQ(Control<int (*)()>("fake_cuda_module_loads")(), loads + 1);
  ASSERT_TRUE((*dev)->Prepare(nullptr).ok());
  const auto a = Floats(100, 3);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 100, 1, 0, 0};
  auto slots = (*dev)->Enqueue(nullptr, {{a.data(), r}});
  ASSERT_TRUE(slots.ok()) << slots.status().message();
  EXPECT_EQ(Control<int (*)()>("fake_cuda_module_loads")(), loads + 1);
}

// Waits (bounded) until `n` calls are held at the stand-in's gate.
bool GateHolds(int n) {
  auto waiters = Control<int (*)()>("fake_cuda_gate_waiters");
  for (int i = 0; i < 5000 && waiters() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return waiters() == n;
}

// A launch can wait for its stream (a full launch queue behind an NCCL kernel that waits for
// another thread's call): meanwhile the device's other users — the poller, and other threads'
// sketches, which come before their NCCL calls — must not wait for it.
TEST_F(FakeDriver, AHeldLaunchHoldsNoOtherCaller) {
  auto set_gate = Control<void (*)(int)>("fake_cuda_set_gate");
  const auto a = Floats(100, 4);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 100, 1, 0, 0};
  auto first = dev_->Enqueue(nullptr, {{a.data(), r}});
  ASSERT_TRUE(first.ok()) << first.status().message();
  set_gate(1);
  auto held = std::async(std::launch::async, [&] {
    return dev_->Enqueue(nullptr, {{a.data(), r}});
  });
  ASSERT_TRUE(GateHolds(1));
  auto poll = std::async(std::launch::async, [&] { return dev_->Poll((*first)[0]); });
  const bool polled = poll.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  set_gate(0);  // let everything finish before asserting
  ASSERT_TRUE(polled) << "Poll waited for another thread's launch";
  auto got = poll.get();
  ASSERT_TRUE(got.ok() && got->has_value());
  ExpectSame(SketchHost(a.data(), r).value(), (*got)->result);
  auto second = held.get();
  ASSERT_TRUE(second.ok()) << second.status().message();
  auto got2 = dev_->Poll((*second)[0]);
  ASSERT_TRUE(got2.ok() && got2->has_value());
}

// A context first seen at a call (not prepared) is set up outside the device's lock: a set-up
// waiting for the GPU holds no other context's sketches.
TEST_F(FakeDriver, AContextSetUpHoldsNoOtherContext) {
  auto set_gate = Control<void (*)(int)>("fake_cuda_set_gate");
  void* const other = reinterpret_cast<void*>(0xc2c2);
  const auto a = Floats(100, 5);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 100, 1, 0, 0};
  ASSERT_TRUE(dev_->Prepare(nullptr).ok());
  set_gate(2);
  auto setup = std::async(std::launch::async, [&] {
    return dev_->Enqueue(other, {{a.data(), r}});
  });
  ASSERT_TRUE(GateHolds(1));
  auto mine = std::async(std::launch::async, [&] {
    return dev_->Enqueue(nullptr, {{a.data(), r}});
  });
  const bool enqueued = mine.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  set_gate(0);
  ASSERT_TRUE(enqueued) << "a prepared context's sketch waited for another context's set-up";
  auto ids = mine.get();
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  auto got = dev_->Poll((*ids)[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  auto other_ids = setup.get();
  ASSERT_TRUE(other_ids.ok()) << other_ids.status().message();
  EXPECT_NE((*other_ids)[0] >> 32, (*ids)[0] >> 32) << "two contexts";
  EXPECT_TRUE(dev_->Prepare(other).ok());
}

TEST_F(FakeDriver, NoResultBeforeTheKernelRanAndSlotsAreRecycled) {
  auto set_deferred = Control<void (*)(int)>("fake_cuda_set_deferred");
  auto run_pending = Control<void (*)()>("fake_cuda_run_pending");
  const auto a = Floats(9000, 3);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 9000, 1, 0, 0};
  set_deferred(1);
  std::vector<SketchDevice::SlotId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back((*dev_->Enqueue(nullptr, {{a.data(), r}}))[0]);
  auto full = dev_->Enqueue(nullptr, {{a.data(), r}});
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("slots"), std::string::npos);
  auto early = dev_->Poll(ids[0]);
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->has_value());
  dev_->Release(ids[1]);  // abandoned while in flight: not reusable yet
  EXPECT_FALSE(dev_->Enqueue(nullptr, {{a.data(), r}}).ok());
  run_pending();
  set_deferred(0);
  auto reused = dev_->Enqueue(nullptr, {{a.data(), r}});  // the abandoned slot finished
  ASSERT_TRUE(reused.ok()) << reused.status().message();
  for (auto id : {ids[0], ids[2], ids[3], (*reused)[0]}) {
    auto got = dev_->Poll(id);
    ASSERT_TRUE(got.ok() && got->has_value());
    ExpectSame(SketchHost(a.data(), r).value(), (*got)->result);
  }
}

// An Enqueue that cannot enter the stream's context launched nothing: its reserved slots are
// free again (all four slots are used after it).
TEST_F(FakeDriver, AFailedContextEntryKeepsNoSlot) {
  const auto a = Floats(100, 6);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 100, 1, 0, 0};
  ASSERT_TRUE(dev_->Prepare(nullptr).ok());
  Control<void (*)(int)>("fake_cuda_fail_pushes")(1);
  auto failed = dev_->Enqueue(nullptr, {{a.data(), r}, {a.data(), r}});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("cannot enter"), std::string::npos)
      << failed.status().message();
  std::vector<SketchDevice::SlotId> ids;
  for (int i = 0; i < 4; ++i) {
    auto got = dev_->Enqueue(nullptr, {{a.data(), r}});
    ASSERT_TRUE(got.ok()) << "use " << i << ": " << got.status().message();
    ids.push_back((*got)[0]);
  }
  for (auto id : ids) {
    auto got = dev_->Poll(id);
    ASSERT_TRUE(got.ok() && got->has_value());
    ExpectSame(SketchHost(a.data(), r).value(), (*got)->result);
  }
}

TEST_F(FakeDriver, CapturedSketchesReportEveryReplay) {
  auto replay = Control<void (*)()>("fake_cuda_replay_graph");
  auto a = Floats(20000, 4);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 20000, 1, 0, 0};
  auto slots = dev_->Enqueue(kCapturingStream, {{a.data(), r}});
  ASSERT_TRUE(slots.ok());
  EXPECT_FALSE(dev_->Poll((*slots)[0])->has_value());  // captured, not launched yet
  for (uint64_t gen = 1; gen <= 2; ++gen) {
    a[5] = float(gen);
    replay();
    auto got = dev_->Poll((*slots)[0]);
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ((*got)->generation, gen);
    EXPECT_EQ((*got)->missed, 0u);
    ExpectSame(SketchHost(a.data(), r).value(), (*got)->result);
  }
  replay();
  replay();
  auto got = dev_->Poll((*slots)[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->generation, 4u);
  EXPECT_EQ((*got)->missed, 1u);
  dev_->Release((*slots)[0]);
}

TEST_F(FakeDriver, ACapturedSlotCountsReplaysFromOneAfterEarlierUses) {
  auto replay = Control<void (*)()>("fake_cuda_replay_graph");
  auto a = Floats(5000, 6);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 5000, 1, 0, 0};
  for (int i = 0; i < 3; ++i) {  // slot 0 publishes generations 1..3 for plain launches
    auto plain = dev_->Enqueue(nullptr, {{a.data(), r}});
    ASSERT_TRUE(plain.ok());
    auto got = dev_->Poll((*plain)[0]);
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ((*got)->generation, 1u);
  }
  auto slots = dev_->Enqueue(kCapturingStream, {{a.data(), r}});  // slot 0 again
  ASSERT_TRUE(slots.ok());
  replay();
  auto got = dev_->Poll((*slots)[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->generation, 1u);  // the graph's first replay (the trace's `launch`)
  EXPECT_EQ((*got)->missed, 0u);
  dev_->Release((*slots)[0], 1);
}

TEST_F(FakeDriver, AReleasedCapturedSlotWaitsForTheGraphsLastLaunch) {
  auto replay = Control<void (*)()>("fake_cuda_replay_graph");
  auto set_deferred = Control<void (*)(int)>("fake_cuda_set_deferred");
  auto run_pending = Control<void (*)()>("fake_cuda_run_pending");
  auto a = Floats(5000, 7), b = Floats(5000, 8);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 5000, 1, 0, 0};
  auto captured = dev_->Enqueue(kCapturingStream, {{a.data(), r}});
  ASSERT_TRUE(captured.ok());
  replay();
  replay();
  dev_->Release((*captured)[0], 3);  // the graph launched 3 times; the third has not run yet
  set_deferred(1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(dev_->Enqueue(nullptr, {{a.data(), r}}).ok());
  EXPECT_FALSE(dev_->Enqueue(nullptr, {{b.data(), r}}).ok());  // not before the third replay
  replay();
  auto reused = dev_->Enqueue(nullptr, {{b.data(), r}});
  ASSERT_TRUE(reused.ok()) << reused.status().message();
  auto early = dev_->Poll((*reused)[0]);  // the replays' results are not the new sketch's
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->has_value());
  run_pending();
  auto got = dev_->Poll((*reused)[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->generation, 1u);
  ExpectSame(SketchHost(b.data(), r).value(), (*got)->result);
}

TEST_F(FakeDriver, AReleasedUnreadResultIsNotTheNextSketchsResult) {
  auto set_deferred = Control<void (*)(int)>("fake_cuda_set_deferred");
  auto run_pending = Control<void (*)()>("fake_cuda_run_pending");
  auto a = Floats(5000, 9), b = Floats(5000, 10);
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 5000, 1, 0, 0};
  auto first = dev_->Enqueue(nullptr, {{a.data(), r}});  // runs at once, never polled
  ASSERT_TRUE(first.ok());
  dev_->Release((*first)[0]);
  set_deferred(1);
  auto second = dev_->Enqueue(nullptr, {{b.data(), r}});  // the same slot
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)[0], (*first)[0]);
  auto early = dev_->Poll((*second)[0]);
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->has_value());
  run_pending();
  auto got = dev_->Poll((*second)[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  ExpectSame(SketchHost(b.data(), r).value(), (*got)->result);
}

TEST_F(FakeDriver, BadRequestsAndStreamsFailWithoutLaunching) {
  const int before = Control<int (*)()>("fake_cuda_launches")();
  SketchRequest r;
  r.layout = {uint8_t(Dtype::kFloat32), 100, 65, 0, 100};  // 65 blocks > max_blocks 64
  auto too_many = dev_->Enqueue(nullptr, {{reinterpret_cast<void*>(0x10), r}});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("max_blocks"), std::string::npos);
  r.layout.nblocks = 1;
  EXPECT_FALSE(dev_->Enqueue(nullptr, {{nullptr, r}}).ok());  // null data
  EXPECT_FALSE(dev_->Enqueue(kBrokenStream, {{reinterpret_cast<void*>(0x10), r}}).ok());
  EXPECT_EQ(Control<int (*)()>("fake_cuda_launches")(), before);
  EXPECT_EQ(Control<int (*)()>("fake_cuda_capture_mode")(), 0);  // relaxed mode was restored
  EXPECT_NE(dev_->Describe().find("sketch device"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr::sketch
