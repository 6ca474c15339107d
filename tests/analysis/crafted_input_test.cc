// Checksum-valid traces built on purpose (or by a buggy writer), the kind a byte-flipping fuzzer
// never makes: every command that reads them answers with a message, never a crash, never reads
// outside the trace directory, and a file of frame headers is not read in quadratic time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "frame_io.h"
#include "ncclrr/testing/run_program.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/trace/format.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"
#include "scenarios.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = ncclrr::testing::CommandResult;  // code -1: killed by a signal
Result Ncclrr(const std::string& args) { return ncclrr::testing::RunNcclrr(args, true); }

std::string Dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("crafted-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// Every reading command on `dir`: none may die of a signal.
void EveryCommandAnswers(const std::string& dir) {
  const std::vector<std::string> verbs = {"info",
                                          "dump",
                                          "check",
                                          "check --json",
                                          "replay --timeout 2",
                                          "export --format perfetto -o " + dir + "/out.pftrace",
                                          "export --format chrome-json -o " + dir + "/out.json",
                                          "export --format flight-recorder -o " + dir + "/fr"};
  for (const std::string& verb : verbs) {
    const Result r = Ncclrr(verb + " " + dir);
    EXPECT_NE(r.code, -1) << verb << " crashed: " << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr("basic_string"))) << verb;
    EXPECT_THAT(r.out, Not(HasSubstr("std::"))) << verb;
  }
}

SyntheticScript ExampleLikeClean() {
  for (const Scenario& sc : GoldenScenarios())
    if (sc.name == "clean_two_ranks") return sc.build();
  ADD_FAILURE() << "no clean_two_ranks scenario";
  return {};
}

// A two-rank clean trace, then `extra` appended to rank 0's file.
std::string TraceWithTail(const std::string& name, const std::vector<uint8_t>& extra) {
  SyntheticScript s = ExampleLikeClean();
  s.dir = Dir(name);
  EXPECT_TRUE(WriteSyntheticScript(s).ok());
  std::ofstream out(s.dir + "/synthetic-rank0.ncclrr", std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(extra.data()),
            static_cast<std::streamsize>(extra.size()));
  return s.dir;
}

TEST(CraftedInput, ATransposedRegionWhoseSizeWrapsIsACorruptFrame) {
  // rows x row_words x 8 = 2^30 x 2^31 x 8 = 2^64: zero in 64 bits.
  const uint32_t region[3] = {0, 1u << 31, 1u << 30};
  const std::string dir =
      TraceWithTail("transposed", internal::EncodeStoredFrame(std::vector<uint8_t>(64, 0), region));
  auto t = ReadTraceFile(dir + "/synthetic-rank0.ncclrr");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->bad_frames, 1u);
  EveryCommandAnswers(dir);
  // No rows but 2^32-1 words per row (found by the structured fuzzer: a 32 GiB allocation).
  const uint32_t empty[3] = {0, 0xffffffffu, 0};
  auto e =
      ReadTraceFile(TraceWithTail("transposed-empty",
                                  internal::EncodeStoredFrame(std::vector<uint8_t>(64, 0), empty)) +
                    "/synthetic-rank0.ncclrr");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bad_frames, 1u);
}

TEST(CraftedInput, CallsThatClaimMoreDataThanAnyGpuHoldsAreANoteNotACrash) {
  for (const uint64_t count : {1ull << 62, ~0ull}) {
    SyntheticScript s = ExampleLikeClean();
    s.processes[1].calls[2].count = count;
    s.dir = Dir("count");
    ASSERT_TRUE(WriteSyntheticScript(s).ok());
    EveryCommandAnswers(s.dir);
    const Result check = Ncclrr("check " + s.dir);
    EXPECT_THAT(check.out, HasSubstr("more data than any GPU holds")) << check.out;
  }
}

// A capture reference on every call of rank 0, as a buggy or hostile writer would put it.
std::string TraceWithCapture(const std::string& name, const CaptureRefData& ref) {
  SyntheticScript s = ExampleLikeClean();
  s.dir = Dir(name);
  for (ScriptCall& c : s.processes[0].calls) c.captures.push_back(ref);
  EXPECT_TRUE(WriteSyntheticScript(s).ok());
  return s.dir;
}

TEST(CraftedInput, CaptureReferencesStayInsideTheTraceDirectory) {
  for (const std::string file : {"/etc/hostname", "../outside.capture", "..", "a/b.capture"}) {
    const std::string dir =
        TraceWithCapture("capture-path", {0, SketchWhich::kSendBefore, file, 0, 4});
    EveryCommandAnswers(dir);
    const Result replay = Ncclrr("replay " + dir + " --data captured");
    EXPECT_THAT(replay.out, HasSubstr("not a file of the trace directory")) << file << replay.out;
  }
}

TEST(CraftedInput, ACaptureReferenceOfImpossibleSizeIsRefused) {
  const std::string dir =
      TraceWithCapture("capture-size", {0, SketchWhich::kSendBefore, "crafted.capture", 1, ~0ull});
  std::ofstream(dir + "/crafted.capture") << "0123456789";
  EveryCommandAnswers(dir);
  EXPECT_THAT(Ncclrr("replay " + dir + " --data captured").out, HasSubstr("is truncated"));
}

// Headers every few bytes, each claiming a frame of megabytes: resynchronising after the first
// bad one must not check each claim in full (before: 16 MiB took more than 30 s).
TEST(CraftedInput, AFileOfFrameHeadersIsNotReadInQuadraticTime) {
  const std::string dir = Dir("headers");
  SyntheticScript s = ExampleLikeClean();
  s.dir = dir;
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  const std::string file = dir + "/synthetic-rank0.ncclrr";
  std::vector<uint8_t> headers;
  internal::FrameHeader h{};
  h.magic = format::kFrameMagic;
  h.stored_size = h.raw_size = 8u << 20;
  for (size_t i = 0; i < (16u << 20) / sizeof h; ++i) {
    h.crc = static_cast<uint32_t>(i);
    const auto* p = reinterpret_cast<const uint8_t*>(&h);
    headers.insert(headers.end(), p, p + sizeof h);
  }
  std::ofstream(file, std::ios::binary | std::ios::app)
      .write(reinterpret_cast<const char*>(headers.data()),
             static_cast<std::streamsize>(headers.size()));
  const auto start = std::chrono::steady_clock::now();
  auto t = ReadTraceFile(file);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(t.ok());
  EXPECT_GE(t->bad_frames, 1u);
  EXPECT_LT(seconds, 20.0) << "a hang guard, not a speed target (bench: well under 2 s)";
}

}  // namespace
}  // namespace ncclrr::testing

namespace ncclrr::testing {
namespace {

// Strings from a trace never reach the terminal as escape sequences.
TEST(CraftedInput, TerminalEscapesInTraceStringsArePrintedEscaped) {
  SyntheticScript s = ExampleLikeClean();
  ASSERT_FALSE(s.comms.empty());
  s.comms[0].name = "dp\x1b]0;owned\x07\x1b[2J";
  s.dir = Dir("escapes");
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  const Result dump = Ncclrr("dump " + s.dir);
  EXPECT_EQ(dump.code, 0);
  EXPECT_EQ(dump.out.find('\x1b'), std::string::npos);
  EXPECT_THAT(dump.out, HasSubstr("name \"dp\\x1b]0;owned\\x07\\x1b[2J\""));
}

// JSON stays valid UTF-8 whatever bytes a trace's strings hold: a byte that starts no UTF-8
// sequence is written as U+FFFD, well-formed sequences as they are.
TEST(CraftedInput, JsonOfStringsThatAreNotUtf8IsValidUtf8) {
  SyntheticScript s;
  for (const Scenario& sc : GoldenScenarios())
    if (sc.name == "count_mismatch") s = sc.build();  // a finding that names its communicator
  ASSERT_FALSE(s.comms.empty());
  for (ScriptComm& c : s.comms) c.name = "dp\xff\xc3\xa9";
  s.dir = Dir("latin1-json");
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  const Result json = Ncclrr("check --json " + s.dir);
  EXPECT_EQ(json.code, 1) << json.out;
  EXPECT_EQ(json.out.find('\xff'), std::string::npos) << json.out;
  EXPECT_THAT(json.out, HasSubstr("dp\\ufffd\xc3\xa9")) << json.out;
}

// A recording whose writes failed (here a file size limit; a full disk alike) ends with a footer
// that says so, and `check` tells that apart from a killed process.
TEST(CraftedInput, AFailedWriteIsNotTakenForAKill) {
  const std::string dir =
      (fs::temp_directory_path() / ("ncclrr-fsize-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit lim{16 * 1024, 16 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
    WriterOptions o;
    o.dir = dir;
    o.compress = false;
    auto w = TraceWriter::Create(o);
    if (!w.ok()) _exit(4);
    for (uint64_t i = 0; i < 5000; ++i) {
      CallRecord c{};
      c.uid = i;
      c.seq = i;
      c.api = static_cast<uint16_t>(Api::kAllReduce);
      c.count = 16;
      (*w)->AppendCall(c);
      if (i % 500 == 499) (*w)->Flush();
    }
    (void)(*w)->Close("exit");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  Result r = Ncclrr("check " + dir);
  std::replace(r.out.begin(), r.out.end(), '\n', ' ');  // notes are wrapped where words fit
  EXPECT_THAT(r.out, HasSubstr("writing the trace failed (File too large)")) << r.out;
  EXPECT_THAT(r.out, HasSubstr(" record(s) could not be written"))
      << r.out;  // 5,000 calls + clocks
  EXPECT_THAT(r.out, Not(HasSubstr("was not closed"))) << r.out;
  fs::remove_all(dir);
}

// A trace file written through the writer holding exactly `calls` (and its header and footer).
void WriteRawFile(const std::string& dir, const std::string& name,
                  const std::vector<CallRecord>& calls) {
  WriterOptions o;
  o.dir = dir;
  o.file_name = name;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const CallRecord& c : calls) (*w)->AppendCall(c);
  ASSERT_TRUE((*w)->Close("exit").ok());
}

// Separate stdout and stderr of one command.
struct Streams {
  int code = -1;
  std::string out, err;
};
Streams NcclrrStreams(const std::string& args) {
  const std::string err_file = ::testing::TempDir() + "/crafted-stderr.txt";
  const std::string cmd =
      std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr " + args + " 2>" + err_file;
  FILE* p = popen(cmd.c_str(), "r");
  Streams s;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) s.out.append(buf.data(), n);
  const int status = pclose(p);
  s.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  s.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return s;
}

// docs/check.md: exit 2 when there is no usable trace. A file with no call record (a job that
// stopped before its first NCCL call) is nothing to check.
TEST(CraftedInput, ATraceWithoutCallsIsNotUsable) {
  const std::string dir = Dir("no-calls");
  WriteRawFile(dir, "empty.ncclrr", {});
  Result r = Ncclrr("check " + dir);
  std::replace(r.out.begin(), r.out.end(), '\n', ' ');
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the trace holds no NCCL call that can be checked")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("`ncclrr info DIR` lists what each file holds")) << r.out;
  const Result json = Ncclrr("check --json " + dir);
  EXPECT_EQ(json.code, 2);
  EXPECT_THAT(json.out, HasSubstr("\"exit_code\":2"));
}

// Calls no rank or communicator can hold are counted in a note, never dropped silently, and the
// rest of the trace is still checked.
TEST(CraftedInput, CallsNoRankOrCommunicatorCanHoldAreANoteWithTheirCount) {
  SyntheticScript s = ExampleLikeClean();
  s.dir = Dir("unplaceable");
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  CallRecord negative{}, no_comm{}, unknown{};
  negative.api = no_comm.api = static_cast<uint16_t>(Api::kAllReduce);
  negative.comm_id = s.comms[0].id;
  negative.rank = -7;
  negative.count = no_comm.count = 16;
  no_comm.comm_id = 0;
  unknown.api = 9999;
  unknown.comm_id = s.comms[0].id;
  WriteRawFile(s.dir, "crafted.ncclrr", {negative, no_comm, unknown});
  Result r = Ncclrr("check " + s.dir);
  std::replace(r.out.begin(), r.out.end(), '\n', ' ');
  EXPECT_THAT(r.out, HasSubstr("holds 3 call record(s) no rank or communicator can hold")) << r.out;
  EXPECT_NE(r.code, 2) << r.out;
  const Result json = Ncclrr("check --json " + s.dir);
  EXPECT_THAT(json.out, HasSubstr("\"count\":3")) << json.out;
}

// dump and export write data to stdout; that the trace is torn or a file unreadable goes to
// stderr, where a user who pipes the output still sees it.
TEST(CraftedInput, DumpAndExportSayWhenATraceIsTornOrAFileUnreadable) {
  SyntheticScript s = ExampleLikeClean();
  for (ScriptProcess& p : s.processes) p.flush_every = 6;
  s.processes[1].close = false;
  s.processes[1].truncate_bytes = 40;
  s.dir = Dir("torn-notes");
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  std::ofstream(s.dir + "/garbage.ncclrr") << "not a trace";
  const Streams dump = NcclrrStreams("dump " + s.dir);
  EXPECT_EQ(dump.code, 0) << dump.err;
  EXPECT_THAT(dump.err, HasSubstr("ncclrr dump: note: the trace is incomplete: ")) << dump.err;
  EXPECT_THAT(dump.err, HasSubstr("torn tail at byte offset")) << dump.err;
  EXPECT_THAT(dump.err, HasSubstr("ncclrr dump: note: a trace file could not be read and is left "
                                  "out: "))
      << dump.err;
  EXPECT_THAT(dump.err, HasSubstr("garbage.ncclrr")) << dump.err;
  const Streams exp =
      NcclrrStreams("export --format perfetto -o " + s.dir + "/out.pftrace " + s.dir);
  EXPECT_EQ(exp.code, 0) << exp.err;
  EXPECT_THAT(exp.err, HasSubstr("ncclrr export: note: the trace is incomplete: ")) << exp.err;
  EXPECT_THAT(exp.err, HasSubstr("torn tail at byte offset")) << exp.err;
  EXPECT_THAT(exp.err, HasSubstr("garbage.ncclrr")) << exp.err;
  // A complete trace: no notes.
  SyntheticScript clean = ExampleLikeClean();
  clean.dir = Dir("complete-notes");
  ASSERT_TRUE(WriteSyntheticScript(clean).ok());
  EXPECT_EQ(NcclrrStreams("dump " + clean.dir).err, "");
}

// Something that exists but is not a trace is said to be one, not to be missing.
TEST(CraftedInput, ADeviceOrAnEmptyFileIsNotATraceNotMissing) {
  const Result dev = Ncclrr("info /dev/null");
  EXPECT_EQ(dev.code, 2) << dev.out;
  EXPECT_THAT(dev.out, Not(HasSubstr("does not exist"))) << dev.out;
  EXPECT_THAT(dev.out, HasSubstr("'/dev/null' is not a trace")) << dev.out;
  const std::string dir = Dir("empty-file");
  std::ofstream(dir + "/empty.ncclrr").flush();
  const Result empty = Ncclrr("info " + dir + "/empty.ncclrr");
  EXPECT_EQ(empty.code, 2) << empty.out;
  EXPECT_THAT(empty.out, Not(HasSubstr("does not exist"))) << empty.out;
}

TEST(CraftedInput, ANegativeRankIsAUsageError) {
  SyntheticScript s = ExampleLikeClean();
  s.dir = Dir("rank");
  ASSERT_TRUE(WriteSyntheticScript(s).ok());
  const Result r = Ncclrr("dump " + s.dir + " --rank -5");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--rank must be a rank"));
}

}  // namespace
}  // namespace ncclrr::testing
