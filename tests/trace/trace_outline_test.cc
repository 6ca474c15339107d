// Outlines (trace_outline.h): one pass keeps every record but the calls and where each frame's
// calls lie; reading frames back gives the calls ReadTraceFile gives, numbered alike -- on real
// jobs' traces (killed and hung ones hold in-flight copies that ReadTraceFile drops) and on a
// synthetic trace flushed every few calls.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/testing/temp_dir.h"
#include "ncclrr/trace/trace_outline.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {
namespace {

namespace fs = std::filesystem;

// Every frame of `path` read back from its outline equals ReadTraceFile's calls, index by index.
void ExpectOutlineReadsAsTheReader(const std::string& path, uint64_t* in_flight_dropped) {
  SCOPED_TRACE(path);
  auto whole = ReadTraceFile(path);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  uint64_t seen_rows = 0;
  auto outline = OutlineTraceFile(path, [&](const CallRecord*, size_t n, uint64_t first_row) {
    EXPECT_EQ(first_row, seen_rows);  // frames are handed on in file order
    seen_rows += n;
  });
  ASSERT_TRUE(outline.ok()) << outline.status().message();
  const TraceOutline& o = outline.value();
  EXPECT_EQ(seen_rows, o.rows);
  EXPECT_TRUE(o.records.calls.empty());
  EXPECT_EQ(o.calls(), whole->calls.size());
  EXPECT_EQ(o.records.comms.size(), whole->comms.size());
  EXPECT_EQ(o.records.clocks.size(), whole->clocks.size());
  EXPECT_EQ(o.records.footer.has_value(), whole->footer.has_value());
  EXPECT_EQ(o.records.torn, whole->torn);
  *in_flight_dropped += o.dropped.size();

  std::vector<size_t> all(o.frames.size());
  std::iota(all.begin(), all.end(), size_t{0});
  auto calls = ReadOutlinedCalls(path, o, all);
  ASSERT_TRUE(calls.ok()) << calls.status().message();
  ASSERT_EQ(calls->size(), whole->calls.size());
  for (size_t i = 0; i < calls->size(); ++i) {
    const auto& [index, c] = (*calls)[i];
    ASSERT_EQ(index, i);
    const CallRecord w = whole->calls[i];
    ASSERT_EQ(c.uid, w.uid) << "call " << i;
    ASSERT_EQ(c.enter_ns, w.enter_ns) << "call " << i;
    ASSERT_EQ(c.exit_ns, w.exit_ns) << "call " << i;
    ASSERT_EQ(c.flags, w.flags) << "call " << i;
    // The numbering both ways, and the frame found for each call.
    const uint64_t row = o.RowOfIndex(index);
    ASSERT_EQ(o.IndexOfRow(row), index);
    const size_t f = o.FrameOfRow(row);
    ASSERT_LT(f, o.frames.size());
    EXPECT_GE(c.enter_ns, o.frames[f].first_ns);
    EXPECT_LE(c.enter_ns, o.frames[f].last_ns);
  }
}

TEST(TraceOutline, RealJobsTracesReadBackAsTheReaderReadsThem) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const fs::path real = fs::path(src ? src : ".") / "tests/data/real";
  int files = 0;
  uint64_t dropped = 0;
  for (const auto& dir : fs::directory_iterator(real)) {
    if (!dir.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().extension() == ".ncclrr") {
        ExpectOutlineReadsAsTheReader(e.path().string(), &dropped);
        ++files;
      }
  }
  EXPECT_GE(files, 100);
  EXPECT_GT(dropped, 0u) << "no real trace held an in-flight copy of a call that returned";
}

TEST(TraceOutline, FramesOfAFewCallsEachAndChosenFrames) {
  testing::ScratchDir tmp("outline");
  SyntheticTraceOptions o;
  o.dir = tmp.path() + "/t";
  o.ranks = 2;
  o.steps = 50;
  o.flush_every = 7;
  auto written = WriteSyntheticTrace(o);
  ASSERT_TRUE(written.ok()) << written.status().message();
  uint64_t dropped = 0;
  for (const std::string& f : written->files) ExpectOutlineReadsAsTheReader(f, &dropped);

  auto outline = OutlineTraceFile(written->files[0]);
  ASSERT_TRUE(outline.ok());
  ASSERT_GT(outline->frames.size(), 10u);
  // Two frames out of the middle: their calls only, numbered as in the whole file.
  auto some = ReadOutlinedCalls(written->files[0], *outline, {3, 8});
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), outline->frames[3].calls + outline->frames[8].calls);
  EXPECT_EQ(some->front().first, outline->frames[3].first_row);
  EXPECT_EQ(some->back().first, outline->frames[8].first_row + outline->frames[8].calls - 1);
  EXPECT_FALSE(ReadOutlinedCalls(written->files[0], *outline, {outline->frames.size()}).ok());
}

TEST(TraceOutline, ForeignFileIsRefusedAsTheReaderRefusesIt) {
  testing::ScratchDir tmp("outline-foreign");
  const std::string path = tmp.path() + "/notes.ncclrr";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("these are not the frames you are looking for\n", f);
  std::fclose(f);
  auto outline = OutlineTraceFile(path);
  auto whole = ReadTraceFile(path);
  ASSERT_FALSE(outline.ok());
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(outline.status().message(), whole.status().message());
}

}  // namespace
}  // namespace ncclrr
