// Round trips through the real TraceWriter and TraceReader: every record kind, field layout
// equal to the FlatBuffers structs, header contents, footer.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {
namespace {

using testing::MakeCall;
using testing::ScratchDir;

TEST(WriterReader, CallRecordLayoutMatchesFlatBuffersStruct) {
  CallRecord c = MakeCall(9);
  c.graph_id = 77;
  c.result = -3;
  c.capture = 1;
  fb::CallRec f;
  static_assert(sizeof f == sizeof c);
  std::memcpy(static_cast<void*>(&f), &c, sizeof c);
  EXPECT_EQ(f.uid(), c.uid);
  EXPECT_EQ(f.comm_id(), c.comm_id);
  EXPECT_EQ(f.seq(), c.seq);
  EXPECT_EQ(f.type_seq(), c.type_seq);
  EXPECT_EQ(f.sendbuff(), c.sendbuff);
  EXPECT_EQ(f.recvbuff(), c.recvbuff);
  EXPECT_EQ(f.count(), c.count);
  EXPECT_EQ(f.stream(), c.stream);
  EXPECT_EQ(f.group_id(), c.group_id);
  EXPECT_EQ(f.graph_id(), c.graph_id);
  EXPECT_EQ(f.enter_ns(), c.enter_ns);
  EXPECT_EQ(f.exit_ns(), c.exit_ns);
  EXPECT_EQ(f.scalar(), c.scalar);
  EXPECT_EQ(f.tid(), c.tid);
  EXPECT_EQ(f.callsite(), c.callsite);
  EXPECT_EQ(f.root_peer(), c.root_peer);
  EXPECT_EQ(f.device(), c.device);
  EXPECT_EQ(f.op(), c.op);
  EXPECT_EQ(f.rank(), c.rank);
  EXPECT_EQ(f.api(), c.api);
  EXPECT_EQ(f.dtype(), c.dtype);
  EXPECT_EQ(f.group_depth(), c.group_depth);
  EXPECT_EQ(f.result(), c.result);
  EXPECT_EQ(f.capture(), c.capture);
  EXPECT_EQ(f.flags(), c.flags);
  EXPECT_EQ(f.aux(), c.aux);
}

TEST(WriterReader, CommRecordLayoutMatchesFlatBuffersStruct) {
  CommRecord c{1, 2, 3, 4, 5, 6, 7, -1, 9, 10, 11, 5, 0, 1, 0};
  fb::CommRec f;
  std::memcpy(static_cast<void*>(&f), &c, sizeof c);
  EXPECT_EQ(f.comm_id(), 1u);
  EXPECT_EQ(f.parent_id(), 2u);
  EXPECT_EQ(f.handle(), 3u);
  EXPECT_EQ(f.create_ns(), 4);
  EXPECT_EQ(f.nranks(), 5);
  EXPECT_EQ(f.rank(), 6);
  EXPECT_EQ(f.device(), 7);
  EXPECT_EQ(f.color(), -1);
  EXPECT_EQ(f.key(), 9);
  EXPECT_EQ(f.lineage(), 10u);
  EXPECT_EQ(f.name_id(), 11u);
  EXPECT_EQ(f.origin(), fb::CommOrigin::Split);
  EXPECT_EQ(f.blocking(), 0);
  EXPECT_EQ(f.nccl_hash_known(), 1);
}

TEST(WriterReader, EveryRecordKindRoundTrips) {
  for (bool compress : {false, true}) {
    ScratchDir dir("rt");
    WriterOptions o;
    o.dir = dir.path();
    o.compress = compress;
    o.overflow = OverflowPolicy::kBlock;
    o.header.argv = {"prog", "--flag"};
    o.header.env = {{"NCCL_DEBUG", "INFO"}};
    o.header.route = Route::kPreload;
    o.header.nccl_version = 22809;
    auto w = TraceWriter::Create(o);
    ASSERT_TRUE(w.ok()) << w.status().message();
    TraceWriter& tw = **w;
    const uint32_t name = tw.Intern("dp.group");
    EXPECT_EQ(tw.Intern("dp.group"), name);
    EXPECT_EQ(tw.Intern(""), 0u);

    Record r{};
    r.kind = RecordKind::kComm;
    r.comm = CommRecord{11, 0, 0xdead, 5, 2, 1, 0, 0, 0, 0, name, 1, 1, 1, 0};
    ASSERT_TRUE(tw.Append(r));
    for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(tw.AppendCall(MakeCall(i)));
    r = {};
    r.kind = RecordKind::kGpuTime;
    r.gpu = GpuTimeRecord{5, 100, 200, 0, {}};
    tw.Append(r);
    r = {};
    r.kind = RecordKind::kGraphEvent;
    r.graph = GraphEventRecord{1, 2, 3, 4, 5, 3, {}};
    tw.Append(r);
    r = {};
    r.kind = RecordKind::kQuery;
    r.query = QueryCountRecord{11, 80, 0, 3, 12345};
    tw.Append(r);
    r = {};
    r.kind = RecordKind::kClock;
    r.clock = ClockPairRecord{77, 88};
    tw.Append(r);
    tw.AddNote(NoteLevel::kWarning, "hello note");
    SketchData s;
    s.call_uid = 3;
    s.which = SketchWhich::kRecvAfter;
    s.dtype = 7;
    s.count = 1024;
    s.dots[0] = 1.5;
    s.dots[15] = -2.5;
    s.sumsq = 9;
    s.nan = 1;
    s.sample_idx = {1, 5};
    s.samples = {0.25, 0.5};
    tw.AddSketch(s);
    // Format 1.1: the race twin, a device-resident scalar, a captured call's graph replay.
    s.which = SketchWhich::kSendBeforeSample;
    s.launch = 7;
    tw.AddSketch(s);
    s.which = SketchWhich::kScalar;
    s.count = 1;
    s.launch = 0;
    s.sample_idx = {0};
    s.samples = {0.125};
    tw.AddSketch(s);
    tw.AddCapture({3, SketchWhich::kSendBefore, "cap-1.bin", 0, 4096});
    tw.SetNcclVersion(22809);
    const std::string path = tw.path();
    ASSERT_TRUE(tw.Close("test done").ok());

    auto t = ReadTraceFile(path);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_TRUE(t->warnings.empty()) << t->warnings.front();
    EXPECT_EQ(t->header.argv, o.header.argv);
    EXPECT_EQ(t->header.env.at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(t->header.route, Route::kPreload);
    EXPECT_EQ(t->header.pid, getpid());
    EXPECT_GT(t->header.start_real_ns, 0);
    EXPECT_EQ(t->nccl_version, 22809);
    ASSERT_EQ(t->calls.size(), 1000u);
    for (uint64_t i = 0; i < 1000; ++i) {
      const CallRecord want = MakeCall(i);
      const CallRecord got = t->calls[i];
      EXPECT_EQ(std::memcmp(&got, &want, sizeof want), 0) << "call " << i;
    }
    ASSERT_EQ(t->comms.size(), 1u);
    EXPECT_EQ(t->String(t->comms[0].name_id), "dp.group");
    ASSERT_EQ(t->gpu_times.size(), 1u);
    EXPECT_EQ(t->gpu_times[0].end_ns, 200);
    ASSERT_EQ(t->graph_events.size(), 1u);
    EXPECT_EQ(t->graph_events[0].kind, 3);
    ASSERT_EQ(t->queries.size(), 1u);
    EXPECT_EQ(t->queries[0].count, 12345u);
    bool found_clock = false;
    for (const auto& c : t->clocks) found_clock |= (c.mono_ns == 77 && c.real_ns == 88);
    EXPECT_TRUE(found_clock);
    ASSERT_EQ(t->notes.size(), 1u);
    EXPECT_EQ(t->notes[0].text, "hello note");
    EXPECT_EQ(t->notes[0].level, NoteLevel::kWarning);
    ASSERT_EQ(t->sketches.size(), 3u);
    EXPECT_EQ(t->sketches[0].which, SketchWhich::kRecvAfter);
    EXPECT_EQ(t->sketches[0].dots[15], -2.5);
    EXPECT_EQ(t->sketches[0].samples, (std::vector<double>{0.25, 0.5}));
    EXPECT_EQ(t->sketches[0].launch, 0u);
    EXPECT_EQ(t->sketches[1].which, SketchWhich::kSendBeforeSample);
    EXPECT_EQ(t->sketches[1].launch, 7u);
    EXPECT_EQ(t->sketches[1].count, 1024u);
    EXPECT_EQ(t->sketches[2].which, SketchWhich::kScalar);
    EXPECT_EQ(t->sketches[2].samples, (std::vector<double>{0.125}));
    EXPECT_STREQ(SketchWhichName(t->sketches[2].which), "scalar");
    ASSERT_EQ(t->captures.size(), 1u);
    EXPECT_EQ(t->captures[0].file, "cap-1.bin");
    ASSERT_TRUE(t->footer.has_value());
    EXPECT_TRUE(t->footer->clean);
    EXPECT_EQ(t->footer->calls, 1000u);
    EXPECT_EQ(t->footer->reason, "test done");
  }
}

TEST(WriterReader, FlushMakesRecordsVisibleBeforeClose) {
  ScratchDir dir("flush");
  WriterOptions o;
  o.dir = dir.path();
  o.flush_interval_ms = 10'000;  // only Flush() can have written them
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  for (uint64_t i = 0; i < 10; ++i) (*w)->AppendCall(MakeCall(i));
  (*w)->Flush();
  auto t = ReadTraceFile((*w)->path());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->calls.size(), 10u);
  EXPECT_FALSE(t->footer.has_value());
  EXPECT_FALSE(t->warnings.empty());  // "no closing footer"
}

StatusOr<std::unique_ptr<TraceWriter>> FlightRecorder(const ScratchDir& dir, uint64_t calls) {
  WriterOptions o;
  o.dir = dir.path();
  o.flight_recorder_calls = calls;
  return TraceWriter::Create(o);
}

TEST(WriterReader, FlightRecorderKeepsOnlyTheNewestCalls) {
  ScratchDir dir("flight");
  auto w = FlightRecorder(dir, 100);
  ASSERT_TRUE(w.ok());
  Record comm{};
  comm.kind = RecordKind::kComm;
  comm.comm.comm_id = 5;
  (*w)->Append(comm);
  for (uint64_t i = 0; i < 1000; ++i) (*w)->AppendCall(MakeCall(i));
  (*w)->Flush();  // periodic flushes write no calls in flight-recorder mode
  auto before = ReadTraceFile((*w)->path());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->calls.size(), 0u);
  EXPECT_EQ(before->comms.size(), 1u);
  EXPECT_TRUE(before->header.ring_mode);
  (*w)->Dump("test trigger");
  auto after = ReadTraceFile((*w)->path());
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->calls.size(), 100u);
  EXPECT_EQ(after->calls.front().seq, 900u);
  EXPECT_EQ(after->calls.back().seq, 999u);
  // A second dump writes only what came after the first.
  for (uint64_t i = 1000; i < 1010; ++i) (*w)->AppendCall(MakeCall(i));
  ASSERT_TRUE((*w)->Close().ok());
  auto closed = ReadTraceFile((*w)->path());
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->calls.size(), 110u);
  EXPECT_EQ(closed->calls.back().seq, 1009u);
}

TEST(WriterReader, FlightRecorderKeepsTheProcesssNewestCallsAcrossThreads) {
  ScratchDir dir("flight-threads");
  auto w = FlightRecorder(dir, 100);
  ASSERT_TRUE(w.ok());
  // Thread t makes calls t, t + 4, t + 8, ...: by entry time they interleave. Thread 3 stops
  // early, so the newest 100 of the process hold none of its calls.
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t)
    threads.emplace_back([&w, t] {
      const uint64_t end = t == 3 ? 400 : 1000;
      for (uint64_t i = t; i < end; i += 4) (*w)->AppendCall(MakeCall(i));
    });
  for (std::thread& th : threads) th.join();
  (*w)->Dump("test trigger");
  ASSERT_TRUE((*w)->Close().ok());
  auto f = ReadTraceFile((*w)->path());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->calls.size(), 100u) << "N calls per process, not per thread";
  std::set<uint64_t> seqs;
  for (const CallRecord& c : f->calls) seqs.insert(c.seq);
  std::set<uint64_t> want;
  for (uint64_t s = 1000; s-- > 0 && want.size() < 100;)  // the newest 100 that were made
    if (s % 4 != 3 || s < 400) want.insert(s);
  EXPECT_EQ(seqs, want);
}

TEST(WriterReader, UnwritableDirectoryIsAClearError) {
  WriterOptions o;
  o.dir = "/proc/ncclrr-cannot-create-here";
  auto w = TraceWriter::Create(o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("cannot create trace directory"), std::string::npos);
}

// Trace files are always new files: an existing file of the same name (an earlier recording, a
// reused pid) is left alone and a symlink planted under the name is not followed; the writer
// takes the next free name instead.
TEST(WriterReader, NeverOverwritesOrFollowsALink) {
  ScratchDir dir("newfile");
  const std::string victim = dir.path() + "/victim.txt";
  std::ofstream(victim) << "keep me";
  std::filesystem::create_symlink(victim, dir.path() + "/job.ncclrr");
  std::ofstream(dir.path() + "/job-2.ncclrr") << "an earlier run";
  WriterOptions o;
  o.dir = dir.path();
  o.file_name = "job.ncclrr";
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok()) << w.status().message();
  (*w)->AppendCall(MakeCall(1));
  ASSERT_TRUE((*w)->Close("done").ok());
  EXPECT_EQ((*w)->path(), dir.path() + "/job-3.ncclrr");
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");
  std::ifstream earlier(dir.path() + "/job-2.ncclrr");
  std::string old((std::istreambuf_iterator<char>(earlier)), std::istreambuf_iterator<char>());
  EXPECT_EQ(old, "an earlier run");
  auto t = ReadTraceFile((*w)->path());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->calls.size(), 1u);
}

// When writing fails (a full disk, or here a file size limit), the job is not killed (no
// SIGXFSZ), the records that could not be written are counted as dropped, and the file still
// ends with a footer that says why, so that readers do not take the process for killed.
TEST(WriterReader, WriteFailureIsCountedAndClosedWithTheReason) {
  ScratchDir dir("fsize");
  const std::string name = "limited.ncclrr";
  constexpr uint64_t kCalls = 20000;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit lim{64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
    WriterOptions o;
    o.dir = dir.path();
    o.file_name = name;
    o.compress = false;
    auto w = TraceWriter::Create(o);
    if (!w.ok()) _exit(4);
    for (uint64_t i = 0; i < kCalls; ++i) {
      (*w)->AppendCall(MakeCall(i));
      if (i % 1000 == 999) (*w)->Flush();
    }
    (void)(*w)->Close("exit");
    _exit(0);  // alive: no SIGXFSZ reached the job
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto t = ReadTraceFile(dir.path() + "/" + name);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE(t->footer.has_value());
  EXPECT_NE(t->footer->reason.find("write error: File too large"), std::string::npos)
      << t->footer->reason;
  EXPECT_GT(t->footer->dropped, 0u);
  // Every call is either in the file or counted (the count also holds lost clock records).
  EXPECT_GE(t->calls.size() + t->footer->dropped, kCalls);
  EXPECT_LE(t->calls.size() + t->footer->dropped, kCalls + 16);
}

TEST(WriterReader, SizeCapDropsAndCounts) {
  ScratchDir dir("cap");
  WriterOptions o;
  o.dir = dir.path();
  o.compress = false;
  o.max_file_bytes = 4096;
  o.overflow = OverflowPolicy::kBlock;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  for (uint64_t i = 0; i < 5000; ++i) (*w)->AppendCall(MakeCall(i));
  (*w)->Flush();
  const WriterStats s = (*w)->Stats();
  // Dropped counts every record of a lost frame: the calls plus a clock pair or two.
  EXPECT_GE(s.calls_written + s.dropped, 5000u);
  EXPECT_LE(s.calls_written + s.dropped, 5004u);
  EXPECT_GT(s.dropped, 0u);
  EXPECT_LE(s.bytes, 4096u);
}

}  // namespace
}  // namespace ncclrr
