// GPU timing in the preload, without a GPU: on the host NCCL it is unavailable (one note, the job
// unchanged); with stand-in libcuda/libcupti (NCCLRR_GPU_TIMING=2) every collective and p2p call
// gets a GPU time from event pairs, and a job that starts its own CUPTI client through the
// exported cupti* entry points gets its records while ncclrr goes on with event pairs.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

bool HasNote(const TraceFile& t, const std::string& text) {
  for (const NoteData& n : t.notes)
    if (n.text.find(text) != std::string::npos) return true;
  return false;
}

std::string Notes(const TraceFile& t) {
  std::string all;
  for (const NoteData& n : t.notes) all += n.text + "\n";
  return all;
}

// Live collective and p2p calls, and how many GPU times each got (by source).
struct Coverage {
  size_t calls = 0, timed_once = 0, events = 0, cupti = 0;
};
Coverage CoverageOf(const TraceFile& t) {
  std::map<uint64_t, int> per_uid;
  Coverage c;
  for (const GpuTimeRecord& g : t.gpu_times) {
    ++per_uid[g.call_uid];
    EXPECT_LE(g.start_ns, g.end_ns);
    if (g.source == static_cast<uint8_t>(GpuTimeSource::kEventPair)) ++c.events;
    if (g.source == static_cast<uint8_t>(GpuTimeSource::kCupti)) ++c.cupti;
  }
  for (const CallRecord& call : t.calls) {
    const Api api = static_cast<Api>(call.api);
    if (!IsCollective(api) && !IsP2p(api)) continue;
    ++c.calls;
    auto it = per_uid.find(call.uid);
    if (it != per_uid.end() && it->second == 1) ++c.timed_once;
  }
  return c;
}

TEST(InterposerGpuTiming, HostNcclWritesOneNoteAndLeavesTheJobAlone) {
  const std::string plain = FreshDir("plain"), timed = FreshDir("timed");
  const RunResult a = RunApp("interposer_app_direct", {}, plain);
  const RunResult b = RunApp("interposer_app_direct", {}, timed, {{"NCCLRR_GPU_TIMING", "1"}});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(b.exit_code, a.exit_code);
  EXPECT_EQ(b.out, a.out) << "the job's output does not change";
  const TraceFile t = ReadOnlyTrace(timed);
  EXPECT_TRUE(t.gpu_times.empty());
  int notes = 0;
  for (const NoteData& n : t.notes)
    notes += n.text.find("GPU timing (--gpu-timing) is unavailable") != std::string::npos;
  EXPECT_EQ(notes, 1) << Notes(t);
  EXPECT_TRUE(HasNote(t, "host NCCL")) << Notes(t);
  EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(),
            CallsOf(ReadOnlyTrace(plain), Api::kAllReduce).size());
  std::filesystem::remove_all(plain);
  std::filesystem::remove_all(timed);
}

#if defined(FAKE_CUPTI_PATH) && defined(FAKE_CUDA_DRIVER_PATH)
const std::map<std::string, std::string> kStandIns = {
    {"NCCLRR_GPU_TIMING", "2"},
    {"NCCLRR_GPU_TIMING_CUPTI", FAKE_CUPTI_PATH},
    {"NCCLRR_GPU_TIMING_CUDA", FAKE_CUDA_DRIVER_PATH}};

TEST(InterposerGpuTiming, EventPairsTimeEveryCallOnceInAndOutsideGroups) {
  const std::string dir = FreshDir("events");
  auto env = kStandIns;
  env["NCCLRR_GPU_TIMING_SOURCE"] = "events";
  const RunResult r = RunApp("interposer_app_gputiming", {}, dir, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("calls 12"), std::string::npos) << r.out;
  const TraceFile t = ReadOnlyTrace(dir);
  const Coverage c = CoverageOf(t);
  EXPECT_EQ(c.calls, 12u);
  EXPECT_EQ(c.timed_once, 12u) << Notes(t);
  EXPECT_EQ(c.events, 12u);
  EXPECT_EQ(c.cupti, 0u);
  EXPECT_TRUE(HasNote(t, "GPU timing from CUDA event pairs")) << Notes(t);
  EXPECT_TRUE(HasNote(t, "GPU timing: 12 GpuTime records")) << Notes(t);
  std::filesystem::remove_all(dir);
}

// CUPTI ties kernels to calls through launch callbacks by default (they work even where a CUDA
// context existed before CUPTI started, as in PyTorch: the stand-in then ignores per-API record
// settings); NCCLRR_GPU_TIMING_ALL_API picks the API-record ways, and the trace says which.
TEST(InterposerGpuTiming, TheTraceSaysHowCuptiTiesKernelsToCalls) {
  const std::string dir = FreshDir("correlation");
  const std::pair<const char*, const char*> cases[] = {
      {"", "launches correlated by CUPTI callbacks"},
      {"0", "launches correlated by their API records"},
      {"1", "all driver and runtime API records enabled"}};
  for (const auto& [all_api, says] : cases) {
    auto env = kStandIns;
    env["FAKE_CUPTI_NARROW_IGNORED"] = "1";
    if (*all_api != '\0') env["NCCLRR_GPU_TIMING_ALL_API"] = all_api;
    const RunResult r = RunApp("interposer_app_gputiming", {}, dir, env);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const TraceFile t = ReadOnlyTrace(dir);  // the stand-in NCCL launches nothing CUPTI sees
    EXPECT_TRUE(HasNote(t, "GPU timing from CUPTI kernel records")) << Notes(t);
    EXPECT_TRUE(HasNote(t, says)) << "NCCLRR_GPU_TIMING_ALL_API=" << all_api << ": " << Notes(t);
    std::filesystem::remove_all(dir);
  }
}

TEST(InterposerGpuTiming, JobsOwnCuptiGetsItAndLaterCallsAreTimedWithEvents) {
  const std::string dir = FreshDir("handover");
  const RunResult r = RunApp("interposer_app_gputiming", {"handover"}, dir, kStandIns);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("job_kernels 1"), std::string::npos)
      << "the job's client received the kernel its CUPTI reported: " << r.out;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_TRUE(HasNote(t, "GPU timing from CUPTI kernel records")) << Notes(t);
  EXPECT_TRUE(HasNote(t, "the job itself uses CUPTI (cuptiSubscribe)")) << Notes(t);
  // The stand-in GPU ran no kernel for the first round (CUPTI: untimed); the second round's six
  // calls are timed by event pairs.
  const Coverage c = CoverageOf(t);
  EXPECT_EQ(c.calls, 12u);
  EXPECT_EQ(c.events, 6u) << Notes(t);
  EXPECT_EQ(c.cupti, 0u);
  std::filesystem::remove_all(dir);
}

TEST(InterposerGpuTiming, CuptiWrappersOnlyForwardWhenGpuTimingIsOff) {
  const std::string dir = FreshDir("off");
  const RunResult r = RunApp("interposer_app_gputiming", {"handover"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("job_kernels 1"), std::string::npos) << r.out;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_TRUE(t.gpu_times.empty());
  EXPECT_FALSE(HasNote(t, "GPU timing")) << Notes(t);
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace ncclrr::testing
