// `ncclrr record --capture` end to end on the host NCCL, as a user runs it: ncclrr-example and
// the interposer's test programs recorded with captured buffers, then `ncclrr check` (exact
// data checks; golden text for the send race and for a corrupted side file, comm hashes masked:
// the host NCCL's unique ids are random) and `ncclrr replay --data captured`. Also the budget,
// the filter, a full disk, and missing or truncated side files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <optional>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ncclrr/trace/capture_side_file.h"
#include "ncclrr/trace/trace_reader.h"
#include "run_util.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Bin(const std::string& name) {
  return std::string(std::getenv("NCCLRR_TEST_BIN")) + "/" + name;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CaptureE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ncclrr-capture-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string Trace(const std::string& tag) const { return dir_ + "/" + tag; }

  // `ncclrr record FLAGS -- ncclrr-example SCENARIO --steps K` into DIR/tag.
  ShellResult RecordExample(const std::string& tag, const std::string& flags,
                            const std::string& scenario, int steps = 2,
                            const std::string& env = "") {
    return RunShell(env + " NCCLRR_EXAMPLE_WATCHDOG_S=5 " + Bin("ncclrr") + " record " + flags +
                    " -o " + Trace(tag) + " -- " + Bin("ncclrr-example") + " " + scenario +
                    " --steps " + std::to_string(steps) + " 2>" + Trace(tag) + ".err");
  }
  ShellResult Ncclrr(const std::string& args) {
    return RunShell(Bin("ncclrr") + " " + args + " 2>&1");
  }
  TraceFile Load(const std::string& tag) {
    auto d = LoadTraceDir(Trace(tag));
    EXPECT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d.ok() ? d->files.size() : 0, 1u);
    return d.ok() && !d->files.empty() ? d->files.front() : TraceFile{};
  }
  std::string SideFile(const TraceFile& t) const {
    return t.captures.empty() ? "" : CaptureFilePath(fs::path(t.path).parent_path(), t.captures[0]);
  }
  std::optional<CallRecord> CallOf(const TraceFile& t, uint64_t uid) const {
    for (const CallRecord& c : t.calls)
      if (c.uid == uid) return c;
    return std::nullopt;
  }

  // check --stable with the communicator hashes masked, against tests/analysis/golden/NAME.txt
  // (NCCLRR_UPDATE_GOLDEN=1 rewrites it).
  void CheckGolden(const std::string& tag, const std::string& name) {
    const ShellResult r = RunShell(Bin("ncclrr") + " check --stable " + Trace(tag));
    EXPECT_EQ(r.code, 1) << r.out;
    const std::string text = std::regex_replace(r.out, std::regex("0x[0-9a-f]{16}"), "0xCOMM");
    const fs::path golden =
        fs::path(std::getenv("NCCLRR_SOURCE_DIR")) / "tests/analysis/golden" / (name + ".txt");
    if (const char* u = std::getenv("NCCLRR_UPDATE_GOLDEN"); u && std::string(u) == "1") {
      std::ofstream(golden) << text;
      return;
    }
    EXPECT_EQ(ReadText(golden), text) << "differs from " << golden;
  }

  std::string dir_;
};

TEST_F(CaptureE2e, CleanRunChecksCleanAndTheFilesHoldTheBuffers) {
  const ShellResult plain = RecordExample("plain", "", "clean");
  const ShellResult rec = RecordExample("t", "--sketch --capture 16M", "clean");
  EXPECT_EQ(rec.code, 0) << rec.out;
  EXPECT_EQ(rec.out, plain.out);  // the program computes the same
  EXPECT_THAT(ReadText(Trace("t") + ".err"), HasSubstr("ncclrr: captured 30 buffers"));
  const ShellResult check = Ncclrr("check --stable " + Trace("t"));
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_THAT(check.out, Not(HasSubstr("note[")));
  // Every captured buffer equals its sketch's 256 sampled values (taken from the same memory
  // by SketchHost in the same stream order).
  const TraceFile t = Load("t");
  ASSERT_EQ(t.captures.size(), 30u);  // per step: 3 allreduces x 2 ranks x 2 + a broadcast's 3
  size_t compared = 0;
  for (const CaptureRefData& c : t.captures) {
    auto bytes = ReadCapturedBuffer(Trace("t"), c);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    const std::optional<CallRecord> call = CallOf(t, c.call_uid);
    ASSERT_TRUE(call.has_value());
    EXPECT_EQ(c.bytes, call->count * sizeof(float));
    for (const SketchData& s : t.sketches) {
      if (s.call_uid != c.call_uid || s.which != c.which) continue;
      for (size_t i = 0; i < s.sample_idx.size(); ++i) {
        float v;
        std::memcpy(&v, bytes->data() + (s.sample_idx[i] - s.first) * sizeof v, sizeof v);
        ASSERT_EQ(double(v), s.samples[i]) << "call " << c.call_uid << " index " << i;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 30u * 256);
  // dump lists each captured buffer under its call.
  const ShellResult dump = Ncclrr("dump " + Trace("t"));
  EXPECT_EQ(dump.code, 0) << dump.out;
  EXPECT_THAT(dump.out, HasSubstr("    captured send_before: 4096 bytes in "));
  EXPECT_THAT(dump.out, HasSubstr("    captured recv_after: 4096 bytes in "));
  const ShellResult replay = Ncclrr("replay " + Trace("t") + " --data captured --json");
  EXPECT_EQ(replay.code, 0) << replay.out;
  EXPECT_THAT(replay.out, HasSubstr("\"reproduced\": true"));
}

TEST_F(CaptureE2e, SendRaceIsAnExactWrongSum) {
  RecordExample("t", "--capture 16M", "send-race");
  CheckGolden("t", "capture_send_race");
  // Replayed on the captured inputs, the outputs are right: the recorded ones were not.
  const ShellResult replay = Ncclrr("replay " + Trace("t") + " --data captured");
  EXPECT_EQ(replay.code, 0) << replay.out;
  EXPECT_THAT(replay.out, HasSubstr("reproduced the recorded outputs: no"));
}

TEST_F(CaptureE2e, WithSketchesTheRaceExplainsTheCapturedWrongSumInOneFinding) {
  RecordExample("t", "--sketch --capture 16M", "send-race");
  const ShellResult r = Ncclrr("check --stable " + Trace("t"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error[buffer_race]"));
  EXPECT_THAT(r.out, HasSubstr("`record --capture` prove"));
  EXPECT_THAT(r.out, Not(HasSubstr("error[wrong_sum]")));
  EXPECT_THAT(r.out, HasSubstr("1 finding"));
}

TEST_F(CaptureE2e, ACorruptedOutputIsFoundAtItsElement) {
  ASSERT_EQ(RecordExample("t", "--capture 16M", "clean", 1).code, 0);
  const TraceFile t = Load("t");
  // Rank 1's output of seq 1 gets 12345.5 at element 7.
  const CaptureRefData* target = nullptr;
  for (const CaptureRefData& c : t.captures) {
    const std::optional<CallRecord> call = CallOf(t, c.call_uid);
    if (call && call->rank == 1 && call->seq == 1 && c.which == SketchWhich::kRecvAfter)
      target = &c;
  }
  ASSERT_NE(target, nullptr);
  std::fstream f(CaptureFilePath(Trace("t"), *target),
                 std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(target->offset + 7 * sizeof(float)));
  const float v = 12345.5f;
  f.write(reinterpret_cast<const char*>(&v), sizeof v);
  f.close();
  CheckGolden("t", "capture_corrupted");
}

TEST_F(CaptureE2e, MissingOrTruncatedSideFilesAreNamed) {
  ASSERT_EQ(RecordExample("t", "--capture 16M", "clean", 1).code, 0);
  const std::string side = SideFile(Load("t"));
  fs::resize_file(side, fs::file_size(side) / 2);
  ShellResult check = Ncclrr("check " + Trace("t"));
  EXPECT_EQ(check.code, 0) << check.out;  // a note, not a finding
  EXPECT_THAT(check.out, HasSubstr("could not be read"));
  EXPECT_THAT(check.out, HasSubstr("truncated: it holds"));
  ShellResult replay = Ncclrr("replay " + Trace("t") + " --data captured");
  EXPECT_EQ(replay.code, 0) << replay.out;  // the readable half is replayed on its data
  fs::resize_file(side, 0);
  replay = Ncclrr("replay " + Trace("t") + " --data captured");
  EXPECT_EQ(replay.code, 2) << replay.out;
  EXPECT_THAT(replay.out, HasSubstr("is truncated"));
  fs::remove(side);
  check = Ncclrr("check " + Trace("t"));
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_THAT(check.out, HasSubstr("cannot be read"));
  replay = Ncclrr("replay " + Trace("t") + " --data captured");
  EXPECT_EQ(replay.code, 2) << replay.out;
  EXPECT_THAT(replay.out, HasSubstr("cannot be read"));
}

TEST_F(CaptureE2e, TheBudgetIsNeverExceeded) {
  const ShellResult rec = RecordExample("t", "--capture 20000", "clean", 4);
  EXPECT_EQ(rec.code, 0) << rec.out;
  const TraceFile t = Load("t");
  EXPECT_LE(fs::file_size(SideFile(t)), 20000u);
  uint64_t bytes = 0;
  for (const CaptureRefData& c : t.captures) bytes += c.bytes;
  EXPECT_EQ(bytes, fs::file_size(SideFile(t)));
  EXPECT_GT(bytes, 20000u - 8192);  // it stopped at the first call that did not fit
  bool stopped = false, totals = false;
  for (const NoteData& n : t.notes) {
    stopped |= n.text.find("capture: stopped at the byte budget: ") == 0;
    totals |=
        n.text.find("calls were not captured: the byte budget was reached") != std::string::npos;
  }
  EXPECT_TRUE(stopped && totals);
  EXPECT_THAT(ReadText(Trace("t") + ".err"), HasSubstr("stopped at the byte budget"));
  // The two ranks (threads of one process) share the budget: the last calls may be partial (a
  // note, not a finding).
  const ShellResult check = Ncclrr("check " + Trace("t"));
  EXPECT_EQ(check.code, 0) << check.out;
}

TEST_F(CaptureE2e, TheFilterSelectsCalls) {
  ASSERT_EQ(
      RecordExample("t", "--capture 16M --capture-filter seq=1-2,5,op=allreduce", "clean", 2).code,
      0);
  const TraceFile t = Load("t");
  std::set<uint64_t> seqs;
  for (const CaptureRefData& c : t.captures) {
    const std::optional<CallRecord> call = CallOf(t, c.call_uid);
    ASSERT_TRUE(call.has_value());
    EXPECT_EQ(call->api, uint16_t(Api::kAllReduce));
    seqs.insert(call->seq);
  }
  EXPECT_EQ(seqs, (std::set<uint64_t>{1, 2, 5}));  // seq 3 is a broadcast
  ASSERT_EQ(
      RecordExample("s", "--capture 16M --capture-filter step=1,op=broadcast", "clean", 3).code, 0);
  const TraceFile s = Load("s");
  ASSERT_FALSE(s.captures.empty());
  for (const CaptureRefData& c : s.captures) EXPECT_EQ(CallOf(s, c.call_uid)->seq, 7u);
  const ShellResult check = Ncclrr("check " + Trace("s"));
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_THAT(check.out, Not(HasSubstr("note[")));
}

TEST_F(CaptureE2e, BadFlagsAreUsageErrors) {
  ShellResult r =
      Ncclrr("record --capture 1M --capture-filter seq=3-x -o " + Trace("t") + " -- true");
  EXPECT_EQ(r.code, 125);
  EXPECT_THAT(r.out, HasSubstr("expected comm=HEXPREFIX,seq=A-B,op=NAME,step=A-B"));
  r = Ncclrr("record --capture lots -o " + Trace("t") + " -- true");
  EXPECT_EQ(r.code, 125);
  EXPECT_THAT(r.out, HasSubstr("512M or 4G"));
  r = Ncclrr("record --capture-filter seq=1 -o " + Trace("t") + " -- true");
  EXPECT_EQ(r.code, 125);
  EXPECT_THAT(r.out, HasSubstr("add --capture"));
}

TEST_F(CaptureE2e, AFullDiskStopsCapturingNotTheJob) {
  const ShellResult plain = RecordExample("plain", "", "clean");
  const ShellResult rec =
      RecordExample("t", "--capture 16M", "clean", 2, "NCCLRR_CAPTURE_FILE=/dev/full");
  EXPECT_EQ(rec.code, 0) << rec.out;
  EXPECT_EQ(rec.out, plain.out);
  const TraceFile t = Load("t");
  EXPECT_TRUE(t.captures.empty());
  bool noted = false;
  for (const NoteData& n : t.notes)
    noted |= n.text.find("failed for /dev/full: No space left on device") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(Ncclrr("check " + Trace("t")).code, 0);
}

// The interposer's test programs: every collective API and Send/Recv is captured; the
// nonblocking one (which waits for its results) verifies clean. ("basic" reuses its buffers
// before its streams are synchronized, a race the host NCCL lets through: --sketch reports the
// same calls.)
TEST_F(CaptureE2e, InterposerProgramsCaptureEveryCollective) {
  for (const char* workload : {"basic", "nonblocking"}) {
    SCOPED_TRACE(workload);
    const std::string tag = std::string("t-") + workload;
    const ShellResult rec =
        RunShell(Bin("ncclrr") + " record --capture 64M -o " + Trace(tag) + " -- " +
                 NCCLRR_APPS_DIR + "/interposer_app_direct " + workload + " 2>/dev/null");
    EXPECT_EQ(rec.code, 0) << rec.out;
    const TraceFile t = Load(tag);
    std::set<uint16_t> apis;
    for (const CaptureRefData& c : t.captures) apis.insert(CallOf(t, c.call_uid)->api);
    const ShellResult check = Ncclrr("check " + Trace(tag));
    if (std::string(workload) == "basic") {
      for (Api a : {Api::kAllReduce, Api::kBcast, Api::kBroadcast, Api::kReduce, Api::kAllGather,
                    Api::kReduceScatter, Api::kAlltoAll, Api::kGather, Api::kScatter, Api::kSend,
                    Api::kRecv})
        EXPECT_TRUE(apis.count(uint16_t(a))) << ApiName(a);
      EXPECT_EQ(check.code, 1) << check.out;
    } else {
      EXPECT_FALSE(apis.empty());
      EXPECT_EQ(check.code, 0) << check.out;
      EXPECT_THAT(check.out, Not(HasSubstr("note[")));
    }
  }
}

}  // namespace
}  // namespace ncclrr::testing
