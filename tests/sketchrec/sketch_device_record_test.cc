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

class SketchDeviceRecord : public ::testing::Test {
 protected:
  // Records the grouped clean example under the preload, with GPU sketches on the stand-in
  // libcuda, into a fresh directory named `name`; `env` goes before the command. Skips the test
  // when this build has no device kernels; trace_ stays empty when it did not record.
  void Record(const std::string& name, const std::string& env) {
    base_ =
        (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_ + "/driver");
    std::filesystem::create_symlink(NCCLRR_FAKE_LIBCUDA, base_ + "/driver/libcuda.so.1");
    const std::string bin = std::getenv("NCCLRR_TEST_BIN");
    const std::string cmd =
        "LD_LIBRARY_PATH=" + base_ + "/driver LD_PRELOAD=" + std::getenv("NCCLRR_TEST_LIB") +
        "/libncclrr-interpose.so" + " NCCLRR_TRACE_DIR=" + base_ + "/t NCCLRR_SKETCH=2 " + env +
        " " + bin + "/ncclrr-example clean --ranks 2 --steps 2 --group > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto d = LoadTraceDir(base_ + "/t");
    ASSERT_TRUE(d.ok()) << d.status().message();
    ASSERT_EQ(d->files.size(), 1u);
    for (const NoteData& n : d->files.front().notes)
      if (n.text.find("no GPU sketches") != std::string::npos) {
        if (!NCCLRR_TEST_HAVE_CUDA) GTEST_SKIP() << "built without nvcc: " << n.text;
        FAIL() << n.text;
      }
    trace_ = d->files.front();
  }
  void TearDown() override {
    if (!HasFailure() && !base_.empty()) std::filesystem::remove_all(base_);
  }
  std::string base_;
  std::optional<TraceFile> trace_;
};

TEST_F(SketchDeviceRecord, GroupedExampleMatchesSketchHost) {
  Record("ncclrr-sketchdev", "");
  if (!trace_) return;
  size_t checked = 0;
  for (const std::string& p : CheckPlannedSketches(*trace_, &checked)) ADD_FAILURE() << p;
  EXPECT_EQ(checked, 16u);
  for (const std::string& p : CheckExampleSketches(*trace_, {"clean", 2, 2, true}))
    ADD_FAILURE() << p;
}

// NCCLRR_SKETCH_SLOTS sets the slots per context. When every slot is in flight (the stand-in's
// launches never run here, as on a GPU far behind the host) further call halves are skipped,
// and the note says which variable raises the number.
TEST_F(SketchDeviceRecord, SketchSlotsComeFromTheEnvironmentAndTheSkipNoteNamesIt) {
  Record("ncclrr-sketchslots", "NCCLRR_SKETCH_SLOTS=17 FAKE_CUDA_DEFERRED=1");
  if (!trace_) return;
  std::string notes;
  for (const NoteData& n : trace_->notes) notes += n.text + "\n";
  EXPECT_NE(notes.find("17 slots per context"), std::string::npos) << notes;
  EXPECT_NE(notes.find("found every GPU sketch slot in flight and were skipped"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("NCCLRR_SKETCH_SLOTS (now 17; each slot takes about 0.3 MB"),
            std::string::npos)
      << notes;
}

}  // namespace
}  // namespace ncclrr::testing
