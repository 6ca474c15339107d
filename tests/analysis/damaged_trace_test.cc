// A damaged trace of a clean job must not accuse anyone: two flipped bytes anywhere in a real
// trace (tests/data/real/grad-clean, a PyTorch job on real NCCL) make the reader skip a frame,
// whose calls or communicator record are then missing. `check` says the file is damaged
// (trace_incomplete) and reports no finding the missing records could explain: no
// missing_call for a call that was lost, no lifecycle_error for a lost ncclCommFinalize or a
// lost record of the communicator's creation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

std::vector<char> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(DamagedTrace, TwoFlippedBytesAnywhereInACleanJobsTraceAccuseNoOne) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const fs::path clean = fs::path(src ? src : ".") / "tests/data/real/grad-clean";
  const fs::path dir = fs::path(::testing::TempDir()) / "ncclrr-damaged-trace";
  fs::remove_all(dir);
  fs::copy(clean, dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 2u);
  int runs = 0, skipped_frames = 0, lost_creation = 0;
  for (const fs::path& file : files) {
    const std::vector<char> original = ReadAll(file);
    // Past the file preamble and header, every 53 bytes: every frame of these files is hit.
    for (size_t off = 64; off + 2 < original.size(); off += 53) {
      std::vector<char> damaged = original;
      damaged[off] ^= 0x10;
      damaged[off + 1] ^= 0x01;
      WriteAll(file, damaged);
      auto model = TraceModel::Load(dir.string());
      WriteAll(file, original);
      if (!model.ok()) continue;  // the header is hit: the file is unreadable, said elsewhere
      ++runs;
      for (const FileView& f : model->files()) skipped_frames += f.bad_frames > 0;
      for (uint32_t i = 0; i < model->files().size(); ++i)
        lost_creation += model->file(i).comms.empty() && !model->file(i).calls.empty();
      CheckOptions o;
      o.stable = true;
      const Report r = Check(*model, o);
      FormatOptions fo;
      fo.stable = true;
      EXPECT_TRUE(r.findings.empty()) << file.filename() << " damaged at byte " << off << ":\n"
                                      << FormatText(r, &*model, fo);
    }
  }
  EXPECT_GT(runs, 300);
  EXPECT_GT(skipped_frames, 100) << "the sweep must damage frames, not only the header";
  EXPECT_GT(lost_creation, 0) << "some damage must lose a communicator's record";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::analysis
