// GpuTimer end to end through its real loading paths: the real libcupti on a machine without a
// GPU (Start must say why it cannot run), and stand-in libcupti / libcuda libraries that behave
// like a GPU (tests/gputiming/fake_*.cc) for the CUPTI source, the event-pair fallback and the
// hand-over of CUPTI to a job that starts using it.
#include "ncclrr/gputiming/gpu_timer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "ncclrr/trace/format.h"

namespace ncclrr::gputiming {
namespace {

struct Sink {
  std::mutex mu;
  std::map<uint64_t, std::vector<GpuTimeRecord>> by_uid;
  std::vector<std::string> notes;
  GpuTimerOptions Options(SourceChoice choice) {
    GpuTimerOptions o;
    o.choice = choice;
    o.collect_interval_ms = 0;
    o.progress = false;  // no start events beside CUPTI, except where a test asks for them
    o.cupti_library = FAKE_CUPTI_PATH;
    o.cuda_driver_library = FAKE_CUDA_PATH;
    o.sink = [this](const GpuTimeRecord& r) {
      std::lock_guard<std::mutex> lock(mu);
      by_uid[r.call_uid].push_back(r);
    };
    o.note = [this](NoteLevel, const std::string& t) {
      std::lock_guard<std::mutex> lock(mu);
      notes.push_back(t);
    };
    return o;
  }
  std::string AllNotes() {
    std::string all;
    for (const auto& n : notes) all += n + "\n";
    return all;
  }
};

// The stand-ins' controls.
struct Fakes {
  void* cupti = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
  void* cuda = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  template <typename F>
  F Get(void* h, const char* name) {
    return reinterpret_cast<F>(dlsym(h, name));
  }
  void Reset() {
    Get<void (*)()>(cupti, "fakeCuptiReset")();
    QueryGate(0);
  }
  void OtherSubscriber(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetOtherSubscriber")(on); }
  void NoGpu(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetNoGpu")(on); }
  void NarrowIgnored(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetNarrowIgnored")(on); }
  void SplitBuffers(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetSplitBuffers")(on); }
  int Enabled(int kind) { return Get<int (*)(int)>(cupti, "fakeCuptiEnabled")(kind); }
  int DriverApi(uint32_t cbid) {
    return Get<int (*)(uint32_t)>(cupti, "fakeCuptiDriverApiEnabled")(cbid);
  }
  int RuntimeApi(uint32_t cbid) {
    return Get<int (*)(uint32_t)>(cupti, "fakeCuptiRuntimeApiEnabled")(cbid);
  }
  int Pushed() { return Get<int (*)()>(cupti, "fakeCuptiPushedDepth")(); }
  int ForcedFlushes() { return Get<int (*)()>(cupti, "fakeCuptiForcedFlushes")(); }
  void CallbacksRefused(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetCallbacksRefused")(on); }
  int CallbacksEnabled() { return Get<int (*)()>(cupti, "fakeCuptiCallbacksEnabled")(); }
  void RefuseCallbackId(uint32_t cbid) {
    Get<void (*)(uint32_t)>(cupti, "fakeCuptiRefuseCallbackId")(cbid);
  }
  void CallbacksSilent(int on) { Get<void (*)(int)>(cupti, "fakeCuptiSetCallbacksSilent")(on); }
  int BadHandleCalls() { return Get<int (*)()>(cupti, "fakeCuptiBadHandleCalls")(); }
  uint32_t Launch(int device, const char* name, int64_t delay, int64_t duration) {
    return Get<uint32_t (*)(int, const char*, int64_t, int64_t)>(cupti, "fakeCuptiLaunch")(
        device, name, delay, duration);
  }
  void StreamDelay(uint64_t stream, int64_t ns) {
    Get<void (*)(void*, int64_t)>(cuda, "fakeCudaSetStreamDelay")(reinterpret_cast<void*>(stream),
                                                                  ns);
  }
  void NewStreamDelay(int64_t ns) { Get<void (*)(int64_t)>(cuda, "fakeCudaSetNewStreamDelay")(ns); }
  int Records() { return Get<int (*)()>(cuda, "fakeCudaRecords")(); }
  void ClearStreamDelays() { Get<void (*)()>(cuda, "fakeCudaClearStreamDelays")(); }
  int CaptureExchanges() { return Get<int (*)()>(cuda, "fakeCudaCaptureModeExchanges")(); }
  // Queries of events recorded on `stream` wait until the gate is set to another stream (0).
  void QueryGate(uint64_t stream) {
    Get<void (*)(void*)>(cuda, "fakeCudaSetQueryGate")(reinterpret_cast<void*>(stream));
  }
  int QueryWaiters() { return Get<int (*)()>(cuda, "fakeCudaQueryWaiters")(); }
};

constexpr const char* kNcclKernel = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)";

class GpuTimerFake : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fakes.cupti, nullptr) << dlerror();
    ASSERT_NE(fakes.cuda, nullptr) << dlerror();
    fakes.Reset();
  }
  // One blocking call on device 0's stream 0x10 whose code launches one NCCL kernel that runs
  // [launch + delay_ns, + duration_ns] on CUPTI's clock.
  void CallLaunching(GpuTimer& timer, uint64_t uid, int64_t delay_ns, int64_t duration_ns) {
    timer.BeginCall({uid, 0, 0x10, false, false});
    fakes.Launch(0, kNcclKernel, delay_ns, duration_ns);
    timer.EndCall();
  }
  std::unique_ptr<GpuTimer> StartTimer(SourceChoice choice,
                                       ApiRecords api_records = ApiRecords::kAuto) {
    GpuTimerOptions o = sink.Options(choice);
    o.api_records = api_records;
    auto t = GpuTimer::Start(o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? std::move(t).value() : nullptr;
  }
  Fakes fakes;
  Sink sink;
};

TEST(GpuTimerNoGpu, RealCuptiWithoutAGpuFailsWithAClearStatus) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  GpuTimerOptions o;
  o.collect_interval_ms = 0;
  o.sink = [](const GpuTimeRecord&) {};
  auto timer = GpuTimer::Start(o);
  ASSERT_FALSE(timer.ok());
  const std::string& m = timer.status().message();
  EXPECT_NE(m.find("GPU timing cannot start"), std::string::npos) << m;
  EXPECT_NE(m.find("CUPTI"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA events: no CUDA driver in this process"), std::string::npos) << m;

  o.choice = SourceChoice::kCupti;
  auto cupti = GpuTimer::Start(o);
  ASSERT_FALSE(cupti.ok());
  EXPECT_NE(cupti.status().message().find("GPU timing with CUPTI cannot start"), std::string::npos)
      << cupti.status().message();
}

TEST(GpuTimerNoGpu, MissingSinkIsRejected) {
  auto timer = GpuTimer::Start(GpuTimerOptions{});
  ASSERT_FALSE(timer.ok());
  EXPECT_EQ(timer.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(GpuTimerFake, CuptiTimesASingleCallAndIgnoresOtherKernels) {
  auto timer = StartTimer(SourceChoice::kCupti, ApiRecords::kLaunchesOnly);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->source(), GpuTimeSource::kCupti);
  EXPECT_EQ(fakes.Enabled(10), 1) << "CONCURRENT_KERNEL";
  EXPECT_EQ(fakes.Enabled(39), 1) << "EXTERNAL_CORRELATION";
  EXPECT_EQ(fakes.Enabled(4), 0) << "only the launch entry points, not every driver call";
  EXPECT_EQ(fakes.DriverApi(652), 1) << "cuLaunchKernelEx";
  EXPECT_EQ(fakes.Enabled(5), 0) << "only the launch entry points, not every runtime call";
  EXPECT_EQ(fakes.RuntimeApi(430), 1) << "cudaLaunchKernelExC (a static CUDA runtime's launch)";

  const int64_t before = MonotonicNs();
  timer->BeginCall({1001, 0, 0x10, false, false});
  EXPECT_EQ(fakes.Pushed(), 1);
  fakes.Launch(0, "void at::native::vectorized_elementwise_kernel<...>", 0, 100);
  fakes.Launch(0, kNcclKernel, 5000, 20000);
  timer->EndCall();
  EXPECT_EQ(fakes.Pushed(), 0);
  timer->Collect();
  timer->Collect();
  ASSERT_EQ(sink.by_uid.size(), 1u);
  const GpuTimeRecord& r = sink.by_uid[1001].at(0);
  EXPECT_EQ(r.source, static_cast<uint8_t>(GpuTimeSource::kCupti));
  EXPECT_EQ(r.end_ns - r.start_ns, 20000);
  // CUPTI's realtime stamps land on CLOCK_MONOTONIC, 5 us after the launch.
  EXPECT_GE(r.start_ns, before + 5000 - 50'000);
  EXPECT_LE(r.start_ns, MonotonicNs() + 5000 + 50'000);
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(fakes.Enabled(10), 0) << "Stop disables what ncclrr enabled";
  EXPECT_EQ(fakes.DriverApi(652), 0);
  EXPECT_EQ(fakes.RuntimeApi(430), 0);
  const GpuTimerStats s = timer->Stats();
  EXPECT_EQ(s.nccl_kernels, 1u);
  EXPECT_EQ(s.records, 1u);
}

TEST_F(GpuTimerFake, GroupEndKernelsGoToTheMembersOfEachDevice) {
  auto timer = StartTimer(SourceChoice::kCupti);
  ASSERT_NE(timer, nullptr);
  timer->AddGroupMember({11, 0, 0x10, false, false});
  timer->AddGroupMember({21, 1, 0x20, false, false});
  timer->BeginGroupEnd();
  fakes.Launch(0, kNcclKernel, 0, 1000);
  fakes.Launch(1, kNcclKernel, 0, 3000);
  timer->EndGroupEnd();
  timer->AddGroupMember({31, 0, 0x10, false, false});
  timer->DiscardGroup();  // ncclGroupSimulateEnd: nothing launched, nothing recorded
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.size(), 2u);
  EXPECT_EQ(sink.by_uid[11][0].end_ns - sink.by_uid[11][0].start_ns, 1000);
  EXPECT_EQ(sink.by_uid[21][0].end_ns - sink.by_uid[21][0].start_ns, 3000);
}

TEST_F(GpuTimerFake, NonblockingCommKernelsLaunchedByAnotherThread) {
  auto timer = StartTimer(SourceChoice::kCupti);
  ASSERT_NE(timer, nullptr);
  timer->BeginCall({501, 0, 0x10, false, true});
  timer->EndCall();
  std::thread nccl_thread([&] { fakes.Launch(0, kNcclKernel, 0, 700); });
  nccl_thread.join();
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.count(501), 1u);
  EXPECT_EQ(sink.by_uid[501][0].end_ns - sink.by_uid[501][0].start_ns, 700);
}

TEST_F(GpuTimerFake, GraphLaunchesTimeEachTemplatePerLaunch) {
  auto timer = StartTimer(SourceChoice::kCupti);
  ASSERT_NE(timer, nullptr);
  const uint64_t graph = 0xfeed;
  // Captured: no kernel runs at capture.
  timer->AddGraphTemplate(graph, {71, 0, 0x10, true, false}, 0);
  timer->AddGraphTemplate(graph, {72, 0, 0x10, true, false}, 0);
  for (int launch = 0; launch < 3; ++launch) {
    timer->BeginGraphLaunch(graph);
    fakes.Launch(0, kNcclKernel, 1000, 10);
    fakes.Launch(0, kNcclKernel, 2000, 20);
    timer->EndGraphLaunch();
  }
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid[71].size(), 3u);
  ASSERT_EQ(sink.by_uid[72].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sink.by_uid[71][i].end_ns - sink.by_uid[71][i].start_ns, 10);
    EXPECT_EQ(sink.by_uid[72][i].end_ns - sink.by_uid[72][i].start_ns, 20);
  }
}

TEST_F(GpuTimerFake, CorrelationRecordsArrivingAFlushLateStillMatch) {
  fakes.SplitBuffers(1);
  auto timer = StartTimer(SourceChoice::kCupti, ApiRecords::kLaunchesOnly);
  ASSERT_NE(timer, nullptr);
  timer->BeginCall({900, 0, 0, false, false});
  fakes.Launch(0, kNcclKernel, 0, 55);
  timer->EndCall();
  timer->Collect();  // kernels only
  timer->Collect();  // the correlation records
  timer->Collect();
  ASSERT_EQ(sink.by_uid.count(900), 1u);
  EXPECT_EQ(timer->Stats().unmatched_kernels, 0u);
}

// PyTorch on 2×H200: CUPTI took the per-API enables and produced no launch record at all. The
// timer notices (kernels wait, no launch carried its id) and enables every API record.
TEST_F(GpuTimerFake, NoLaunchRecordsWidensToEveryApiRecord) {
  fakes.NarrowIgnored(1);
  auto timer = StartTimer(SourceChoice::kCupti, ApiRecords::kLaunchesOnly);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(fakes.Enabled(4), 0);
  CallLaunching(*timer, 7001, 0, 1000);
  for (int i = 0; i < 3; ++i) timer->Collect();
  EXPECT_EQ(fakes.Enabled(4), 1) << "every driver API record";
  EXPECT_EQ(fakes.Enabled(5), 1) << "every runtime API record";
  CallLaunching(*timer, 7002, 0, 1000);
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(sink.by_uid.count(7001), 0u) << "launched before the widening";
  ASSERT_EQ(sink.by_uid.count(7002), 1u);
  EXPECT_NE(sink.AllNotes().find("every driver and runtime API record"), std::string::npos)
      << sink.AllNotes();
  EXPECT_EQ(fakes.Enabled(4), 0) << "Stop disables them again";
}

// A job whose CUDA context exists before timing starts (PyTorch, JAX): CUPTI's launch-only API
// records never come there (the stand-in: per-API settings ignored), its launch callbacks do. The
// default ties kernels to calls through them, with no API record and no external id pushed.
TEST_F(GpuTimerFake, LaunchCallbacksTimeCallsWhereLaunchRecordsNeverCome) {
  fakes.NarrowIgnored(1);
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->source(), GpuTimeSource::kCupti);
  EXPECT_NE(timer->Describe().find("launches correlated by CUPTI callbacks"), std::string::npos)
      << timer->Describe();
  EXPECT_GE(fakes.CallbacksEnabled(), 2) << "the driver's and the runtime's launch entry points";
  EXPECT_EQ(fakes.Enabled(4), 0) << "no driver API records";
  EXPECT_EQ(fakes.Enabled(5), 0) << "no runtime API records";
  EXPECT_EQ(fakes.DriverApi(652), 0) << "no per-API records either";
  fakes.Launch(0, kNcclKernel, 0, 100);  // outside any call: not ncclrr's to time
  timer->BeginCall({7101, 0, 0x10, false, false});
  EXPECT_EQ(fakes.Pushed(), 0) << "no CUSTOM2 id is needed";
  fakes.Launch(0, kNcclKernel, 1000, 3000);
  timer->EndCall();
  timer->BeginGroupEnd();  // an empty group end: nothing to time, nothing left open
  timer->EndGroupEnd();
  CallLaunching(*timer, 7102, 1000, 4000);
  for (int i = 0; i < 3; ++i) timer->Collect();
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.count(7101), 1u) << sink.AllNotes();
  ASSERT_EQ(sink.by_uid.count(7102), 1u);
  EXPECT_EQ(sink.by_uid[7101][0].end_ns - sink.by_uid[7101][0].start_ns, 3000);
  EXPECT_EQ(sink.by_uid[7102][0].end_ns - sink.by_uid[7102][0].start_ns, 4000);
  EXPECT_EQ(sink.AllNotes().find("every driver and runtime API record"), std::string::npos)
      << "nothing to widen: " << sink.AllNotes();
  const GpuTimerStats st = timer->Stats();
  EXPECT_EQ(st.launch_correlations, 2u);
  EXPECT_EQ(st.unmatched_kernels, 1u) << "the launch outside any call";
  EXPECT_EQ(fakes.CallbacksEnabled(), 0) << "Stop gives CUPTI's subscriber slot back";
  EXPECT_EQ(fakes.BadHandleCalls(), 0);
}

// CUDA 12's CUPTI does not know CUDA 13's runtime launch ids: the callbacks still serve (NCCL
// launches through the driver). Without a driver launch id they do not, and nothing stays
// enabled; the launch records then cannot be narrowed either, so every API record it is.
TEST_F(GpuTimerFake, LaunchCallbacksNeedTheDriverIdsOnly) {
  fakes.RefuseCallbackId(505);  // __cudaLaunchKernel_v13000
  fakes.RefuseCallbackId(506);
  {
    auto timer = StartTimer(SourceChoice::kAuto);
    ASSERT_NE(timer, nullptr);
    EXPECT_NE(timer->Describe().find("launches correlated by CUPTI callbacks"), std::string::npos)
        << timer->Describe();
    CallLaunching(*timer, 7301, 0, 500);
    for (int i = 0; i < 2; ++i) timer->Collect();
    EXPECT_TRUE(timer->Stop().ok());
    EXPECT_EQ(sink.by_uid.count(7301), 1u) << sink.AllNotes();
  }
  fakes.RefuseCallbackId(652);  // cuLaunchKernelEx
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  EXPECT_NE(timer->Describe().find("all driver and runtime API records enabled"), std::string::npos)
      << timer->Describe();
  EXPECT_EQ(fakes.CallbacksEnabled(), 0) << "the ids that took were disabled again";
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(fakes.BadHandleCalls(), 0);
}

// Callbacks enabled but never delivered: after two rounds of waiting kernels the timer widens to
// every API record, and the calls after that are timed through them.
TEST_F(GpuTimerFake, LaunchCallbacksThatNeverComeWidenToEveryApiRecord) {
  fakes.CallbacksSilent(1);
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  CallLaunching(*timer, 7401, 0, 1000);
  for (int i = 0; i < 3; ++i) timer->Collect();
  EXPECT_EQ(fakes.Enabled(4), 1) << "every driver API record";
  EXPECT_NE(sink.AllNotes().find("no launch callback"), std::string::npos) << sink.AllNotes();
  timer->BeginCall({7402, 0, 0x10, false, false});
  EXPECT_EQ(fakes.Pushed(), 1) << "the API records need the CUSTOM2 id now";
  fakes.Launch(0, kNcclKernel, 0, 1000);
  timer->EndCall();
  EXPECT_EQ(fakes.Pushed(), 0);
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(sink.by_uid.count(7402), 1u) << sink.AllNotes();
}

// A job whose NCCL kernels all launch outside ncclrr's scopes (nonblocking communicators launch
// from NCCL's own thread) gets callbacks all the same: nothing is widened.
TEST_F(GpuTimerFake, LaunchesOutsideScopesDoNotWidenCallbacks) {
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  std::thread([&] { fakes.Launch(0, kNcclKernel, 0, 1000); }).join();
  for (int i = 0; i < 3; ++i) timer->Collect();
  EXPECT_EQ(fakes.Enabled(4), 0) << sink.AllNotes();
  EXPECT_TRUE(timer->Stop().ok());
}

// Where CUPTI refuses the callbacks, the launch entry points' API records carry the ids instead.
TEST_F(GpuTimerFake, RefusedLaunchCallbacksFallBackToLaunchRecords) {
  fakes.CallbacksRefused(1);
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  EXPECT_NE(timer->Describe().find("launches correlated by their API records"), std::string::npos)
      << timer->Describe();
  EXPECT_EQ(fakes.DriverApi(652), 1) << "cuLaunchKernelEx";
  timer->BeginCall({7201, 0, 0x10, false, false});
  EXPECT_EQ(fakes.Pushed(), 1);
  fakes.Launch(0, kNcclKernel, 0, 500);
  timer->EndCall();
  EXPECT_EQ(fakes.Pushed(), 0);
  for (int i = 0; i < 2; ++i) timer->Collect();
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.count(7201), 1u) << sink.AllNotes();
}

TEST_F(GpuTimerFake, AnotherCuptiClientMeansEventPairs) {
  fakes.OtherSubscriber(1);
  auto cupti_only = GpuTimer::Start(sink.Options(SourceChoice::kCupti));
  ASSERT_FALSE(cupti_only.ok());
  EXPECT_NE(cupti_only.status().message().find("another CUPTI client"), std::string::npos);

  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->source(), GpuTimeSource::kEventPair);
  EXPECT_NE(timer->Describe().find("another CUPTI client"), std::string::npos) << timer->Describe();
  EXPECT_EQ(fakes.Enabled(10), 0) << "ncclrr left CUPTI alone";

  const uint64_t stream = 0x5150;
  fakes.StreamDelay(stream, 2'000'000);  // the stream is busy for 2 ms
  const int64_t begin = MonotonicNs();
  timer->BeginCall({77, 0, stream, false, false});
  timer->EndCall();
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  timer->Collect();
  ASSERT_EQ(sink.by_uid.count(77), 1u);
  const GpuTimeRecord& r = sink.by_uid[77][0];
  EXPECT_EQ(r.source, static_cast<uint8_t>(GpuTimeSource::kEventPair));
  // The stream reached the call 2 ms after it was issued (not before; later only by scheduling).
  EXPECT_GE(r.start_ns - begin, 2'000'000 - 100'000);
  EXPECT_LE(r.start_ns - begin, 2'000'000 + 50'000'000);
  EXPECT_GE(fakes.CaptureExchanges(), 2) << "collected in relaxed capture mode";
  EXPECT_TRUE(timer->Stop().ok());
}

TEST_F(GpuTimerFake, EventPairsNeverTouchCapturedOrNonblockingCalls) {
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  const int records = fakes.Records();
  timer->BeginCall({1, 0, 0x1, /*captured=*/true, false});
  timer->EndCall();
  timer->BeginCall({2, 0, 0x1, false, /*nonblocking=*/true});
  timer->EndCall();
  timer->BeginGraphLaunch(0x33);
  timer->EndGraphLaunch();
  EXPECT_EQ(fakes.Records(), records) << "no event was recorded";
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(timer->Stats().skipped_calls, 3u);
  EXPECT_TRUE(sink.by_uid.empty());
}

// GPU progress: a call whose start event the GPU reached and whose end it has not, in two
// collections in a row, gets one start mark (end_ns 0) before its complete record; a call that
// ends within a round gets none.
TEST_F(GpuTimerFake, EventPairsMarkACallRunningOnTheGpuOnce) {
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  EXPECT_NE(sink.AllNotes().find(format::kGpuProgressNote), std::string::npos);
  const int64_t begin = MonotonicNs();
  timer->BeginCall({90, 0, 0x90, false, false});
  fakes.StreamDelay(0x90, int64_t{60} * 1'000'000'000);  // its kernel runs on and on
  timer->EndCall();
  timer->BeginCall({91, 0, 0x91, false, false});
  timer->EndCall();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  timer->Collect();
  EXPECT_EQ(sink.by_uid.count(90), 0u) << "one look is not enough";
  timer->Collect();
  timer->Collect();
  ASSERT_EQ(sink.by_uid[90].size(), 1u) << "marked once";
  EXPECT_TRUE(IsStartMark(sink.by_uid[90][0]));
  EXPECT_GE(sink.by_uid[90][0].start_ns, begin);
  ASSERT_EQ(sink.by_uid[91].size(), 1u);
  EXPECT_FALSE(IsStartMark(sink.by_uid[91][0])) << "it ended: no mark";
  EXPECT_EQ(timer->Stats().start_marks, 1u);
  EXPECT_TRUE(timer->Stop().ok());
}

// Beside CUPTI (which reports a kernel only when it ends): one event before each call. The
// newest call a stream reached that stays newest for two collections is marked; the calls it
// passed are not, and a call the stream has not reached never is.
TEST_F(GpuTimerFake, BesideCuptiStartEventsMarkTheCallAStreamIsIn) {
  GpuTimerOptions o = sink.Options(SourceChoice::kCupti);
  o.progress = true;
  auto started = GpuTimer::Start(o);
  ASSERT_TRUE(started.ok()) << started.status().message();
  std::unique_ptr<GpuTimer> timer = std::move(started).value();
  EXPECT_NE(sink.AllNotes().find("GPU progress from a CUDA event before each call"),
            std::string::npos)
      << sink.AllNotes();
  EXPECT_NE(sink.AllNotes().find(format::kGpuProgressNote), std::string::npos);
  const int events = fakes.Records();
  timer->BeginCall({100, 0, 0xa0, false, false});  // passed by 101
  timer->EndCall();
  timer->BeginCall({101, 0, 0xa0, false, false});  // the stream is inside it
  timer->EndCall();
  fakes.StreamDelay(0xa0, int64_t{60} * 1'000'000'000);
  timer->BeginCall({102, 0, 0xa0, false, false});  // queued behind 101: not reached
  timer->EndCall();
  EXPECT_EQ(fakes.Records() - events, 3) << "one event per call";
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  timer->Collect();
  timer->Collect();
  EXPECT_EQ(sink.by_uid.count(100), 0u);
  ASSERT_EQ(sink.by_uid[101].size(), 1u);
  EXPECT_TRUE(IsStartMark(sink.by_uid[101][0]));
  EXPECT_EQ(sink.by_uid.count(102), 0u);
  EXPECT_EQ(fakes.ForcedFlushes(), 0) << "102 waits for less than a second";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  timer->Collect();
  EXPECT_EQ(fakes.ForcedFlushes(), 1)
      << "a stream stuck for a second: CUPTI's held records of the calls before are asked for";
  timer->Collect();
  EXPECT_EQ(fakes.ForcedFlushes(), 1) << "at most once a second";
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(timer->Stats().start_marks, 1u);
  EXPECT_EQ(timer->Stats().skipped_calls, 0u) << "markers do not count as timing";
}

TEST_F(GpuTimerFake, WithoutProgressCuptiRecordsNoEvents) {
  GpuTimerOptions o = sink.Options(SourceChoice::kCupti);
  o.progress = false;
  auto timer = GpuTimer::Start(o);
  ASSERT_TRUE(timer.ok()) << timer.status().message();
  const int events = fakes.Records();
  (*timer)->BeginCall({110, 0, 0xb0, false, false});
  (*timer)->EndCall();
  EXPECT_EQ(fakes.Records(), events);
  EXPECT_EQ(sink.AllNotes().find(format::kGpuProgressNote), std::string::npos);
  EXPECT_TRUE((*timer)->Stop().ok());
}

// A context's reference event can queue behind a kernel that does not end (streams sharing a
// hardware queue, CUDA_DEVICE_MAX_CONNECTIONS=1, behind an NCCL kernel waiting for another
// thread's call or a hung one): the collector gives it up within milliseconds, the call goes
// untimed, and Stop (at exit) returns.
TEST_F(GpuTimerFake, AReferenceEventStuckBehindTheGpuIsNotWaitedFor) {
  fakes.NewStreamDelay(int64_t{30} * 1'000'000'000);  // the private stream's reference: 30 s
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  timer->BeginCall({41, 0, 0x41, false, false});
  timer->EndCall();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto collected = std::async(std::launch::async, [&] { timer->Collect(); });
  const bool returned = collected.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  fakes.NewStreamDelay(0);
  EXPECT_TRUE(returned) << "the collector waited for the reference event";
  collected.wait();
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_TRUE(sink.by_uid.empty()) << "no reference: the call has no GPU time";
  EXPECT_EQ(timer->Stats().skipped_calls, 1u);
}

// The same, but the GPU frees up before the end: the call waits for a later round's reference
// instead of going untimed.
TEST_F(GpuTimerFake, ACallWaitsForAReferenceThatComesLater) {
  fakes.NewStreamDelay(int64_t{30} * 1'000'000'000);
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  timer->BeginCall({42, 0, 0x42, false, false});
  timer->EndCall();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  timer->Collect();  // the reference does not come within its wait: the call stays pending
  EXPECT_TRUE(sink.by_uid.empty());
  fakes.ClearStreamDelays();
  timer->Collect();
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.count(42), 1u) << "timed once the reference came";
  EXPECT_EQ(timer->Stats().skipped_calls, 0u);
}

TEST_F(GpuTimerFake, GroupMembersOnOneStreamShareOnePair) {
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  const int records = fakes.Records();
  timer->AddGroupMember({5, 0, 0x7, false, false});
  timer->AddGroupMember({6, 0, 0x7, false, false});
  timer->AddGroupMember({7, 1, 0x8, false, false});
  timer->BeginGroupEnd();
  timer->EndGroupEnd();
  EXPECT_EQ(fakes.Records() - records, 4) << "two streams, two events each";
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(sink.by_uid.size(), 3u);
  EXPECT_EQ(sink.by_uid[5][0].start_ns, sink.by_uid[6][0].start_ns);
}

// The collector reads each pending pair with driver calls (query, two elapsed times): thousands
// per round in a loop of small calls, and any of them can wait behind a busy GPU. A call made
// meanwhile must not wait for them.
TEST_F(GpuTimerFake, ACallDoesNotWaitForTheCollectorsDriverCalls) {
  auto timer = StartTimer(SourceChoice::kEventPair);
  ASSERT_NE(timer, nullptr);
  timer->BeginCall({8001, 0, 0x9, false, false});
  timer->EndCall();
  fakes.QueryGate(0x9);  // the call's events, not the collector's reference events
  std::thread collector([&] { timer->Collect(); });
  for (int i = 0; i < 5000 && fakes.QueryWaiters() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(fakes.QueryWaiters(), 1) << "the collector is inside the pair's cuEventQuery";
  auto call = std::async(std::launch::async, [&] {
    timer->BeginCall({8002, 0, 0x9, false, false});
    timer->EndCall();
  });
  const auto status = call.wait_for(std::chrono::seconds(5));
  fakes.QueryGate(0);
  collector.join();
  call.wait();
  EXPECT_EQ(status, std::future_status::ready) << "the call waited for the collector";
  EXPECT_TRUE(timer->Stop().ok());
  EXPECT_EQ(sink.by_uid.count(8001), 1u);
  EXPECT_EQ(sink.by_uid.count(8002), 1u);
}

TEST_F(GpuTimerFake, JobTakingCuptiSwitchesToEventPairsWithoutLosingRecords) {
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  ASSERT_EQ(timer->source(), GpuTimeSource::kCupti);
  timer->BeginCall({10, 0, 0x3, false, false});
  fakes.Launch(0, kNcclKernel, 0, 40);
  timer->EndCall();
  // The interposer's cuptiActivityRegisterCallbacks wrapper, before forwarding the job's call.
  timer->OnForeignCuptiUse("cuptiActivityRegisterCallbacks");
  EXPECT_EQ(fakes.Enabled(10), 0) << "handed over";
  EXPECT_EQ(fakes.Enabled(39), 0);
  ASSERT_EQ(sink.by_uid.count(10), 1u) << "flushed at the hand-over";
  EXPECT_EQ(timer->source(), GpuTimeSource::kEventPair);
  timer->BeginCall({11, 0, 0x3, false, false});
  timer->EndCall();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(timer->Stop().ok());
  ASSERT_EQ(sink.by_uid.count(11), 1u);
  EXPECT_EQ(sink.by_uid[11][0].source, static_cast<uint8_t>(GpuTimeSource::kEventPair));
  EXPECT_NE(sink.AllNotes().find("hands CUPTI over"), std::string::npos) << sink.AllNotes();
  EXPECT_NE(timer->Describe().find("CUPTI handed over"), std::string::npos);
}

TEST_F(GpuTimerFake, CuptiThatCannotEnableKernelsFallsBackOrFails) {
  fakes.NoGpu(1);
  auto cupti = GpuTimer::Start(sink.Options(SourceChoice::kCupti));
  ASSERT_FALSE(cupti.ok());
  EXPECT_NE(cupti.status().message().find("cannot start"), std::string::npos)
      << cupti.status().message();
  auto timer = StartTimer(SourceChoice::kAuto);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->source(), GpuTimeSource::kEventPair);
}

TEST_F(GpuTimerFake, CollectorThreadDeliversWithoutExplicitCollect) {
  GpuTimerOptions o = sink.Options(SourceChoice::kCupti);
  o.collect_interval_ms = 5;
  auto timer = GpuTimer::Start(o);
  ASSERT_TRUE(timer.ok()) << timer.status().message();
  (*timer)->BeginCall({123, 0, 0, false, false});
  fakes.Launch(0, kNcclKernel, 0, 1);
  (*timer)->EndCall();
  for (int i = 0; i < 400; ++i) {
    {
      std::lock_guard<std::mutex> lock(sink.mu);
      if (sink.by_uid.count(123)) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_EQ(sink.by_uid.count(123), 1u);
}

}  // namespace
}  // namespace ncclrr::gputiming
