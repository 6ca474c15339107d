// The GPU path of `record --sketch` (SketchDevice: kernels enqueued on the call's stream, slots
// polled by ncclrr's poller thread) without a GPU: NCCLRR_SKETCH=2 makes the interposer use it
// with the host NCCL, and the stand-in libcuda of tests/sketch runs each launch on the kernel
// emulator when it is enqueued. In --group mode every rank's calls complete inside the outermost
// ncclGroupEnd, before the after-call sketches are enqueued, so every recorded value must equal
// SketchHost on the data the example computes, bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "sketch_expect.h"

namespace ncclrr::testing {
namespace {

// Runs the grouped clean example under the preload with GPU sketches on the stand-in libcuda;
// `env` is put before the command. Empty (and a failure) when it did not run.
std::optional<TraceFile> RecordGroupedExample(const std::string& base, const std::string& env) {
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base + "/driver");
  std::filesystem::create_symlink(NCCLRR_FAKE_LIBCUDA, base + "/driver/libcuda.so.1");
  const std::string bin = std::getenv("NCCLRR_TEST_BIN");
  const std::string cmd =
      "LD_LIBRARY_PATH=" + base + "/driver LD_PRELOAD=" + std::getenv("NCCLRR_TEST_LIB") +
      "/libncclrr-interpose.so" + " NCCLRR_TRACE_DIR=" + base + "/t NCCLRR_SKETCH=2 " + env + " " +
      bin + "/ncclrr-example clean --ranks 2 --steps 2 --group > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto d = LoadTraceDir(base + "/t");
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok() || d->files.size() != 1) return std::nullopt;
  return d->files.front();
}

bool NoGpuSketches(const TraceFile& t, std::string* why) {
  for (const NoteData& n : t.notes)
    if (n.text.find("no GPU sketches") != std::string::npos) return *why = n.text, true;
  return false;
}

TEST(SketchDeviceRecord, GroupedExampleMatchesSketchHost) {
  const std::string base =
      (std::filesystem::temp_directory_path() / ("ncclrr-sketchdev-" + std::to_string(getpid())))
          .string();
  const auto t = RecordGroupedExample(base, "");
  ASSERT_TRUE(t.has_value());
  if (std::string why; NoGpuSketches(*t, &why)) {
    if (!NCCLRR_TEST_HAVE_CUDA) GTEST_SKIP() << "built without nvcc: " << why;
    FAIL() << why;
  }
  size_t checked = 0;
  for (const std::string& p : CheckPlannedSketches(*t, &checked)) ADD_FAILURE() << p;
  EXPECT_EQ(checked, 16u);
  for (const std::string& p : CheckExampleSketches(*t, {"clean", 2, 2, true})) ADD_FAILURE() << p;
  if (!HasFailure()) std::filesystem::remove_all(base);
}

// NCCLRR_SKETCH_SLOTS sets the slots per context. When every slot is in flight (the stand-in's
// launches never run here, as on a GPU far behind the host) further call halves are skipped,
// and the note says which variable raises the number.
TEST(SketchDeviceRecord, SketchSlotsComeFromTheEnvironmentAndTheSkipNoteNamesIt) {
  const std::string base =
      (std::filesystem::temp_directory_path() / ("ncclrr-sketchslots-" + std::to_string(getpid())))
          .string();
  const auto t = RecordGroupedExample(base, "NCCLRR_SKETCH_SLOTS=17 FAKE_CUDA_DEFERRED=1");
  ASSERT_TRUE(t.has_value());
  if (std::string why; NoGpuSketches(*t, &why)) {
    if (!NCCLRR_TEST_HAVE_CUDA) GTEST_SKIP() << "built without nvcc: " << why;
    FAIL() << why;
  }
  std::string notes;
  for (const NoteData& n : t->notes) notes += n.text + "\n";
  EXPECT_NE(notes.find("17 slots per context"), std::string::npos) << notes;
  EXPECT_NE(notes.find("found every GPU sketch slot in flight and were skipped"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("NCCLRR_SKETCH_SLOTS (now 17; each slot takes about 0.3 MB"),
            std::string::npos)
      << notes;
  if (!HasFailure()) std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace ncclrr::testing
