// A file's records but its calls, sent from one member of a spread check to another: everything
// reads back as the file read it (real traces with sketches, GPU times, notes and footers), and
// bytes that are not such records are refused.
#include "ncclrr/trace/file_records_wire.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ncclrr {
namespace {

namespace fs = std::filesystem;

fs::path RealDir() {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/data/real";
}

TEST(FileRecordsWire, EveryRecordButTheCallsReadsBack) {
  int files = 0, with_sketches = 0;
  for (const char* trace : {"nccltests-alltoall-sketch", "torch-gpu-stall-cupti-flush",
                            "grad-swap-same-pysites", "two-groups"})
    for (const auto& e : fs::directory_iterator(RealDir() / trace)) {
      if (e.path().extension() != ".ncclrr") continue;
      auto t = ReadTraceFile(e.path().string());
      ASSERT_TRUE(t.ok()) << t.status().message();
      std::string bytes = "xyz";
      SaveRecordsButCalls(*t, &bytes);
      TraceFile back;
      size_t used = 0;
      ASSERT_TRUE(LoadRecordsButCalls(bytes.data() + 3, bytes.size() - 3, &used, &back));
      EXPECT_EQ(used, bytes.size() - 3);
      EXPECT_TRUE(back.calls.empty());
      // Saved again, the records give the same bytes: nothing was lost on the way.
      std::string again = "xyz";
      SaveRecordsButCalls(back, &again);
      EXPECT_EQ(again, bytes) << e.path();
      EXPECT_EQ(back.path, t->path);
      EXPECT_EQ(back.header.host, t->header.host);
      EXPECT_EQ(back.header.argv, t->header.argv);
      EXPECT_EQ(back.comms.size(), t->comms.size());
      EXPECT_EQ(back.sketches.size(), t->sketches.size());
      EXPECT_EQ(back.gpu_times.size(), t->gpu_times.size());
      EXPECT_EQ(back.strings, t->strings);
      EXPECT_EQ(back.footer.has_value(), t->footer.has_value());
      ++files;
      with_sketches += !t->sketches.empty();
      // Cut anywhere: refused.
      for (size_t cut : {size_t{0}, size_t{7}, used / 3, used - 1})
        EXPECT_FALSE(LoadRecordsButCalls(bytes.data() + 3, cut, &used, &back)) << cut;
    }
  EXPECT_GE(files, 8);
  EXPECT_GE(with_sketches, 2);
}

}  // namespace
}  // namespace ncclrr
