// --data captured: inputs come from the buffers the recording captured (CaptureRef side files),
// and `reproduced` says whether the replay's outputs equal the recorded ones. A swapped run
// replayed as recorded reproduces its wrong outputs; the canonical order gives the right ones,
// which differ from what was recorded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ncclrr/trace/trace_writer.h"
#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

constexpr int kRanks = 2, kSteps = 2, kCount = 64;
constexpr uint64_t kComm = 0xcafe000000000001ull;

// Input of rank r for tensor t in step s: fractional values, unlike synthetic data.
float Input(int r, int t, int s, int i) { return 0.25f * i + 100.0f * r + 10.0f * t + s; }

// Rank 1 issues tensors 1, 0 in step 1; NCCL sums what sits at each position.
int TensorAt(int rank, int step, int k) { return rank == 1 && step == 1 ? 1 - k : k; }

std::string WriteCapturedTrace(const std::string& name) {
  const std::string dir = FreshDir(name);
  for (int r = 0; r < kRanks; ++r) {
    WriterOptions w;
    w.dir = dir;
    w.file_name = "captured-rank" + std::to_string(r) + ".ncclrr";
    w.overflow = OverflowPolicy::kBlock;
    w.header.nccl_version = 22809;
    auto writer = TraceWriter::Create(w);
    EXPECT_TRUE(writer.ok());
    TraceWriter& tw = **writer;
    Record comm{};
    comm.kind = RecordKind::kComm;
    comm.comm = CommRecord{kComm, 0, 0x1000, 1, kRanks, r,
                           r,     0, r,      0, 0,      static_cast<uint8_t>(CommOrigin::kInitRank),
                           1,     1, 0};
    tw.Append(comm);
    const std::string side = "capture-rank" + std::to_string(r) + ".bin";
    std::ofstream bin(dir + "/" + side, std::ios::binary);
    uint64_t offset = 0, seq = 0;
    for (int s = 0; s < kSteps; ++s)
      for (int k = 0; k < 2; ++k, ++seq) {
        const int t = TensorAt(r, s, k);
        CallRecord c{};
        c.uid = tw.NextCallUid();
        c.comm_id = kComm;
        c.seq = c.type_seq = seq;
        c.sendbuff = c.recvbuff = 0x7f0000000000ull + (static_cast<uint64_t>(t) << 20);
        c.count = kCount;
        c.stream = 0x5000;
        c.enter_ns = 1'000'000 + static_cast<int64_t>(seq) * 10'000;
        c.exit_ns = c.enter_ns + 1'000;
        c.tid = 7;
        c.root_peer = -1;
        c.device = r;
        c.rank = r;
        c.api = static_cast<uint16_t>(Api::kAllReduce);
        c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
        c.flags = call_flags::kInPlace;
        tw.AppendCall(c);
        std::vector<float> in(kCount), out(kCount);
        for (int i = 0; i < kCount; ++i) {
          in[i] = Input(r, t, s, i);
          for (int q = 0; q < kRanks; ++q) out[i] += Input(q, TensorAt(q, s, k), s, i);
        }
        const uint64_t bytes = kCount * sizeof(float);
        for (auto [which, data] :
             {std::pair{SketchWhich::kSendBefore, &in}, std::pair{SketchWhich::kRecvAfter, &out}}) {
          bin.write(reinterpret_cast<const char*>(data->data()),
                    static_cast<std::streamsize>(bytes));
          tw.AddCapture(CaptureRefData{c.uid, which, side, offset, bytes});
          offset += bytes;
        }
      }
    EXPECT_TRUE(tw.Close().ok());
  }
  return dir;
}

TEST(CapturedData, ReproducesTheRecordedOutputs) {
  const std::string dir = WriteCapturedTrace("captured");
  auto model = analysis::TraceModel::Load(dir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto options = TestOptions("recorded,canonical");
  options.data = replay::DataMode::kCaptured;
  const replay::ReplayReport r = MustReplay(*model, options);
  ASSERT_EQ(r.results.size(), 2u);
  const replay::OrderResult& rec = r.results[0];
  const replay::OrderResult& can = r.results[1];
  EXPECT_EQ(rec.outcome, replay::Outcome::kWrong) << replay::FormatText(r);
  EXPECT_EQ(rec.wrong_calls, 4u);              // both tensors on both ranks in step 1
  EXPECT_EQ(rec.wrong_elements, 4u * kCount);  // fractional inputs never collide
  ASSERT_TRUE(rec.reproduced.has_value());
  EXPECT_TRUE(*rec.reproduced);
  EXPECT_EQ(rec.reproduced_calls, 8u);
  EXPECT_EQ(can.outcome, replay::Outcome::kRight) << replay::FormatText(r);
  ASSERT_TRUE(can.reproduced.has_value());
  EXPECT_FALSE(*can.reproduced);
  EXPECT_EQ(can.unreproduced_calls, 4u);
  EXPECT_THAT(replay::FormatJson(r), ::testing::HasSubstr("\"reproduced\": true"));
}

TEST(CapturedData, MissingSideFilesAreAnError) {
  const std::string dir = WriteCapturedTrace("captured-missing");
  for (int r = 0; r < kRanks; ++r)
    std::filesystem::remove(dir + "/capture-rank" + std::to_string(r) + ".bin");
  auto model = analysis::TraceModel::Load(dir);
  ASSERT_TRUE(model.ok());
  auto options = TestOptions("recorded");
  options.data = replay::DataMode::kCaptured;
  auto r = replay::Replay(*model, options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("copy the .capture files"));
}

}  // namespace
}  // namespace ncclrr::testing
