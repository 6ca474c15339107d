// Golden "diff tests": a scripted trace in, `check --stable` text and JSON out, compared with
// tests/analysis/golden/<scenario>.{txt,json}. Run with NCCLRR_UPDATE_GOLDEN=1 to rewrite the
// expected files after an intended change, then review the diff.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"
#include "scenarios.h"
#include "sketch_scenarios.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path GoldenDir() {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/analysis/golden";
}

void CompareOrUpdate(const fs::path& expected, const std::string& actual) {
  if (const char* u = std::getenv("NCCLRR_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(expected) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected)) << expected << " is missing; run with NCCLRR_UPDATE_GOLDEN=1";
  EXPECT_EQ(ReadFile(expected), actual) << "differs from " << expected;
}

class GoldenTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(GoldenTest, CheckStableTextAndJson) {
  const Scenario& sc = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / ("ncclrr-golden-" + std::to_string(getpid()) + "-" + sc.name);
  fs::remove_all(dir);
  SyntheticScript script = sc.build();
  script.dir = dir.string();
  auto written = WriteSyntheticScript(script);
  ASSERT_TRUE(written.ok()) << written.status().message();
  auto model = analysis::TraceModel::Load(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  analysis::CheckOptions co;
  co.stable = true;
  const analysis::Report report = analysis::Check(*model, co);
  analysis::FormatOptions fo;
  fo.stable = true;
  CompareOrUpdate(GoldenDir() / (sc.name + ".txt"), analysis::FormatText(report, &*model, fo));
  CompareOrUpdate(GoldenDir() / (sc.name + ".json"), analysis::FormatJson(report, &*model, fo));
  fs::remove_all(dir);
}

// Drops depend on when the writer flushes, so this one asserts the note rather than a golden.
TEST(RecordsDropped, IsANoteWithTheCount) {
  const fs::path dir = fs::temp_directory_path() / ("ncclrr-dropped-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ScriptBuilder b(2);
  const int dp = b.Comm(0x77, "dp", {0, 1});
  for (int step = 0; step < 2000; ++step) b.All(dp, AllReduce(1024, step % 4));
  b.s.processes[1].max_file_bytes = 4096;  // the writer drops (and counts) records past 4 KB
  b.s.processes[1].flush_every = 50;       // ... written in many small frames
  b.s.dir = dir.string();
  ASSERT_TRUE(WriteSyntheticScript(b.s).ok());
  auto model = analysis::TraceModel::Load(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const analysis::Report r = analysis::Check(*model);
  bool found = false;
  for (const analysis::Note& n : r.notes)
    if (n.kind == analysis::NoteKind::kRecordsDropped) {
      found = true;
      EXPECT_GT(n.count, 0u);
      EXPECT_NE(n.message.find("dropped"), std::string::npos) << n.message;
    }
  EXPECT_TRUE(found) << analysis::FormatText(r, &*model, {});
  EXPECT_TRUE(r.findings.empty()) << analysis::FormatText(r, &*model, {});
  EXPECT_EQ(r.ExitCode(false), r.findings.empty() ? 0 : 1);
  EXPECT_EQ(r.ExitCode(true), 1);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenTest, ::testing::ValuesIn(GoldenScenarios()),
                         [](const auto& param_info) { return param_info.param.name; });
INSTANTIATE_TEST_SUITE_P(SketchScenarios, GoldenTest, ::testing::ValuesIn(SketchScenarios()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace ncclrr::testing
