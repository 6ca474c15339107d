// Replays of incomplete traces: flight-recorder windows, files of a job killed before its last
// flush, torn files. The replay covers only what every rank's file holds and says so, instead of
// making up hangs where a file ends; a real hang (files that show the ranks lived on) is still
// replayed as one, and a trace with nothing every rank holds is refused with what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using replay::Outcome;
using ::testing::HasSubstr;

std::string Notes(const replay::ReplayReport& r) {
  std::string s;
  for (const std::string& w : r.warnings) s += w + "\n";
  return s;
}

// 8 steps of 4 collectives on 2 ranks (seq 0-31 on each).
SyntheticScript Clean() { return ExampleScript("clean", 2, 8); }

TEST(IncompleteTrace, FlightRecorderWindowsOfACleanJobReplayRight) {
  SyntheticScript s = Clean();
  s.processes[0].ring_keep = 10;  // seq 22-31
  s.processes[1].ring_keep = 13;  // seq 19-31: 3 calls rank 0's window does not hold
  auto model = WriteAndLoad(s, "incomplete-ring");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical"));
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.results[1].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.left_out_calls, 3u);
  EXPECT_EQ(r.calls, 20u);
  EXPECT_THAT(Notes(r), HasSubstr("replays only what every rank's file holds (collectives from "
                                  "seq 22 on); 3 call(s) outside it are left out"));
  EXPECT_THAT(Notes(r), HasSubstr("rank 0's file starts at seq 22 (a flight-recorder window)"));
  EXPECT_THAT(replay::SummaryLine(r),
              HasSubstr("recorded order: 0 wrong; canonical order: 0 wrong; of an incomplete "
                        "trace: only the calls every rank's file holds were replayed (3 left "
                        "out, see the notes)"));
  EXPECT_EQ(r.ExitCode(), 0);
}

// A job stopped by a signal it does not handle (SIGHUP, SIGKILL): no footer, and the last flush
// of one rank is lost.
TEST(IncompleteTrace, AJobKilledBeforeItsLastFlushReplaysRight) {
  SyntheticScript s = Clean();
  for (ScriptProcess& p : s.processes) p.close = false;
  s.processes[1].calls.resize(30);
  auto model = WriteAndLoad(s, "incomplete-killed");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded"));
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.left_out_calls, 2u);
  EXPECT_THAT(Notes(r), HasSubstr("(collectives from seq 0 to 29)"));
  EXPECT_THAT(Notes(r), HasSubstr("rank 1's record may be cut off after seq 29 (its file was not "
                                  "closed, and its process was not seen alive"));
}

TEST(IncompleteTrace, ATornFileReplaysRight) {
  SyntheticScript s = Clean();
  for (ScriptProcess& p : s.processes) p.flush_every = 6;
  s.processes[0].close = false;
  s.processes[0].truncate_bytes = 40;  // the last frame is cut
  auto model = WriteAndLoad(s, "incomplete-torn");
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(model->files()[0].torn);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded"));
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_GT(r.left_out_calls, 0u);
  EXPECT_THAT(Notes(r), HasSubstr("rank 0's record may be cut off after seq"));
  EXPECT_THAT(Notes(r), HasSubstr("(its file ends inside a frame)"));
}

// The same short rank, but its file shows it lived on for 30 s after the others' next call: it
// skipped the call, and the replay hangs as the job did.
TEST(IncompleteTrace, ARankSeenAliveAfterTheOthersNextCallStillHangs) {
  SyntheticScript s = Clean();
  for (ScriptProcess& p : s.processes) p.close = false;
  s.processes[1].calls.resize(30);
  s.processes[1].alive_until_ns = 30'000'000'000;
  auto model = WriteAndLoad(s, "incomplete-alive");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 0.5));
  EXPECT_EQ(r.results[0].outcome, Outcome::kHang) << replay::FormatText(r);
  EXPECT_EQ(r.left_out_calls, 0u);
}

// A send whose receive is not in the receiver's flight-recorder window is left out; in files
// that hold every call, a receive that never came is a real mismatch (p2p-mismatch hangs).
TEST(IncompleteTrace, SendsBeforeTheReceiversWindowAreLeftOut) {
  SyntheticScript s = ExampleScript("clean", 2, 2);
  for (int step = 0; step < 6; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      ScriptCall send, recv;
      send.api = Api::kSend;
      recv.api = Api::kRecv;
      send.count = recv.count = 64;
      send.root_peer = recv.root_peer = 1 - rank;
      send.tensor = 7;
      recv.tensor = 8;
      send.group = recv.group = static_cast<uint64_t>(step) + 1;
      s.processes[rank].calls.push_back(send);
      s.processes[rank].calls.push_back(recv);
    }
  s.processes[0].ring_keep = 4;  // the last 2 sends and 2 receives of rank 0
  s.processes[1].ring_keep = 8;  // the last 4 of each on rank 1
  auto model = WriteAndLoad(s, "incomplete-p2p");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded"));
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.left_out_calls, 4u);
  EXPECT_THAT(Notes(r), HasSubstr("4 send/recv call(s) whose partner's file, which may lack "
                                  "calls, does not hold them"));
}

TEST(IncompleteTrace, NothingEveryRankHoldsIsRefusedWithWhatToDo) {
  SyntheticScript s = Clean();
  ScriptCall destroy;
  destroy.api = Api::kCommDestroy;
  destroy.count = 0;
  s.processes[0].calls.push_back(destroy);
  s.processes[0].ring_keep = 1;  // holds only the CommDestroy
  s.processes[1].ring_keep = 6;
  auto model = WriteAndLoad(s, "incomplete-nothing");
  ASSERT_NE(model, nullptr);
  auto r = replay::Replay(*model, TestOptions("recorded"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("no call of it is held by the files of every rank that takes part in it"));
  EXPECT_THAT(r.status().message(),
              HasSubstr("rank 0's flight-recorder window holds none of this communicator's calls"));
  EXPECT_THAT(r.status().message(), HasSubstr("Record again without --ring"));
  const std::string dir = WriteTrace(s, "incomplete-nothing-cli");
  const CommandResult cli = RunNcclrr("replay " + dir, true);
  EXPECT_EQ(cli.code, 2) << cli.out;
  EXPECT_THAT(cli.out, HasSubstr("the trace is incomplete"));
}

// `ncclrr record --ring N` of the example program (one process, a thread per rank): the ranks'
// windows start at different positions for most N. Replays must not report hangs.
TEST(IncompleteTrace, RecordedFlightRecorderTracesOfACleanJobReplayRight) {
  const char* bin = std::getenv("NCCLRR_TEST_BIN");
  for (int ring : {5, 7, 10, 13, 17, 25}) {
    const std::string dir = FreshDir("ring-record-" + std::to_string(ring)) + "/trace";
    const CommandResult rec =
        RunNcclrr("record -o " + dir + " --ring " + std::to_string(ring) + " -- " +
                      (bin ? bin : "build/bin") + "/ncclrr-example clean",
                  true);
    ASSERT_EQ(rec.code, 0) << rec.out;
    const CommandResult r = RunNcclrr("replay " + dir + " --timeout 2", true);
    EXPECT_NE(r.code, 1) << "ring " << ring << ": " << r.out;
    if (r.code == 0) {
      EXPECT_THAT(r.out, HasSubstr("recorded order: right")) << ring;
    } else {
      EXPECT_THAT(r.out, HasSubstr("no call of it is held by the files of every rank")) << ring;
    }
  }
}

}  // namespace
}  // namespace ncclrr::testing
