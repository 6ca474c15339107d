// The GPU path of `record --sketch` (SketchDevice: kernels enqueued on the call's stream, slots
// polled by ncclrr's poller thread) without a GPU: NCCLRR_SKETCH=2 makes the interposer use it
// with the host NCCL, and the stand-in libcuda of tests/sketch runs each launch on the kernel
// emulator when it is enqueued. In --group mode every rank's calls complete inside the outermost
// ncclGroupEnd, before the after-call sketches are enqueued, so every recorded value must equal
// SketchHost on the data the example computes, bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "sketch_expect.h"

namespace ncclrr::testing {
namespace {

TEST(SketchDeviceRecord, GroupedExampleMatchesSketchHost) {
  const std::string base = (std::filesystem::temp_directory_path() /
                            ("ncclrr-sketchdev-" + std::to_string(getpid())))
                               .string();
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base + "/driver");
  std::filesystem::create_symlink(NCCLRR_FAKE_LIBCUDA, base + "/driver/libcuda.so.1");
  const std::string bin = std::getenv("NCCLRR_TEST_BIN");
  const std::string cmd = "LD_LIBRARY_PATH=" + base + "/driver LD_PRELOAD=" +
                          std::getenv("NCCLRR_TEST_LIB") + "/libncclrr-interpose.so" +
                          " NCCLRR_TRACE_DIR=" + base + "/t NCCLRR_SKETCH=2 " + bin +
                          "/ncclrr-example clean --ranks 2 --steps 2 --group > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto d = LoadTraceDir(base + "/t");
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->files.size(), 1u);
  const TraceFile& t = d->files.front();
  for (const NoteData& n : t.notes)
    if (n.text.find("no GPU sketches") != std::string::npos) {
      if (!NCCLRR_TEST_HAVE_CUDA) GTEST_SKIP() << "built without nvcc: " << n.text;
      FAIL() << n.text;
    }
  size_t checked = 0;
  for (const std::string& p : CheckPlannedSketches(t, &checked)) ADD_FAILURE() << p;
  EXPECT_EQ(checked, 16u);
  for (const std::string& p : CheckExampleSketches(t, {"clean", 2, 2, true})) ADD_FAILURE() << p;
  if (!HasFailure()) std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace ncclrr::testing
