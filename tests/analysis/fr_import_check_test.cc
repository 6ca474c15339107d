// Real PyTorch Flight Recorder dumps (tests/data/fr/<variant>, PyTorch 2.11 on NCCL 2.28.9, two
// ranks; tests/data/fr/README.md says how they were made) imported with ImportFlightRecorder and
// checked: the clean job gives no finding, each bug its finding (kind, communicator, seq), and
// `check --stable` its golden text (tests/data/fr/<variant>/check.txt). Then the verb as a user
// runs it: `ncclrr import-fr DIR -o OUT`, `ncclrr check OUT`, and --help.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/flight_recorder_export.h"
#include "ncclrr/analysis/fr_import.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/testing/run_program.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

fs::path FrData() {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/data/fr";
}

fs::path Scratch(const std::string& tag) {
  const fs::path p =
      fs::temp_directory_path() / ("ncclrr-fr-" + std::to_string(getpid()) + "-" + tag);
  fs::remove_all(p);
  return p;
}

struct FrVariant {
  std::string name;
  std::optional<FindingKind> kind;  // the finding that names the bug; nullopt: none at all
  uint64_t seq = 0;
  std::string comm_name = "default_pg";
};

void PrintTo(const FrVariant& v, std::ostream* os) { *os << v.name; }

class FrVariantTest : public ::testing::TestWithParam<FrVariant> {};

// tests/data/fr/<name> imported and checked (`check --stable`): the report and its text.
struct Imported {
  size_t files = 0;
  Report report;
  std::string text;
};
Imported ImportAndCheck(const std::string& name) {
  Imported out;
  const fs::path dir = Scratch(name);
  auto imported = ImportFlightRecorder({(FrData() / name).string()}, dir.string());
  EXPECT_TRUE(imported.ok()) << imported.status().message();
  if (!imported.ok()) return out;
  out.files = imported->files.size();
  auto model = TraceModel::Load(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return out;
  CheckOptions o;
  o.stable = true;
  out.report = Check(*model, o);
  FormatOptions fo;
  fo.stable = true;
  out.text = FormatText(out.report, &*model, fo);
  fs::remove_all(dir);
  return out;
}

TEST_P(FrVariantTest, CheckNamesTheBug) {
  const FrVariant& want = GetParam();
  const Imported imported = ImportAndCheck(want.name);
  EXPECT_EQ(imported.files, 2u);
  const Report& r = imported.report;
  const std::string& text = imported.text;
  if (!want.kind) {
    EXPECT_TRUE(r.findings.empty()) << text;
  } else {
    const auto it = std::find_if(r.findings.begin(), r.findings.end(),
                                 [&](const Finding& f) { return f.kind == *want.kind; });
    ASSERT_NE(it, r.findings.end()) << FindingKindName(*want.kind) << " missing:\n" << text;
    const Finding& f = *it;
    EXPECT_EQ(f.comm_name, want.comm_name) << text;
    ASSERT_TRUE(f.seq.has_value()) << text;
    EXPECT_EQ(*f.seq, want.seq) << text;
    // The Python frames reach the report: where the job issued the calls.
    EXPECT_NE(text.find("call sites: rank "), std::string::npos) << text;
    EXPECT_NE(text.find("torch_fr_bugs.py:"), std::string::npos) << text;
  }
  const fs::path golden = FrData() / want.name / "check.txt";
  if (const char* u = std::getenv("NCCLRR_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(golden) << text;
    return;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << golden << " is missing; run with NCCLRR_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), text) << "differs from " << golden;
}

INSTANTIATE_TEST_SUITE_P(
    Real, FrVariantTest,
    ::testing::Values(
        FrVariant{"none", std::nullopt},
        // FR's collective_seq_id 82 is seq 81: ncclrr counts from 0.
        FrVariant{"count", FindingKind::kCountMismatch, 81},
        FrVariant{"dtype", FindingKind::kDtypeMismatch, 81},
        // MAX instead of SUM: FR records no reduction op, so neither fr_trace nor check can
        // see it (the import says so in a note rather than guess).
        FrVariant{"op", std::nullopt},
        // Rank 1 skipped an all_reduce: at seq 81 it issued the broadcast rank 0 issues next. One
        // missing_call, although rank 1 enqueued more calls than rank 0 before the watchdog
        // fired (the hang, not the skip, decided where each stopped).
        FrVariant{"missing", FindingKind::kMissingCall, 81},
        // A broadcast from another root: FR records no root; the hang it caused shows as rank 0
        // stopping before seq 118 while rank 1 went on.
        FrVariant{"root", FindingKind::kMissingCall, 90},
        // A second group used before the default group's gradients on rank 1, after on rank 0:
        // the deadlock, and no order_swap from the two lines that issue the second group's call
        // (its call sites differ, its tensor does not).
        FrVariant{"two-groups", FindingKind::kCrossCommOrder, 73},
        // fc2.bias before fc2.weight at step 7 (FR's 76 and 77): the swap that hung.
        FrVariant{"swap-diff", FindingKind::kOrderSwap, 75},
        // fc2.weight and fc3.weight swapped: same shape, same line, no buffers or data in FR, so
        // nothing tells them apart (docs/import-fr.md).
        FrVariant{"swap-same", std::nullopt},
        // The JSON variant of a clean run's dump.
        FrVariant{"none-json", std::nullopt}),
    [](const auto& param_info) {
      std::string n = param_info.param.name;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// A DDP-like job's dump whose buckets come from autograd's thread and its loss all-reduce from
// the main thread (tests/data/fr/make_two_threads.py): FR's end times are when the GPU finished,
// so the threads' entries overlap in time, which is no sign that they used the communicator at
// once, and a rank that skipped the loss all-reduce is no thread interleaving.
TEST(ImportFr, CallsOfTwoThreadsInADumpAreNotTakenForOneCommunicatorUsedAtOnce) {
  for (const auto& [name, seq] : {std::pair{"two-threads-hang", 6}, {"two-threads-skip", 9}}) {
    const Imported imported = ImportAndCheck(name);
    const Report& r = imported.report;
    const std::string& text = imported.text;
    ASSERT_EQ(r.findings.size(), 1u) << text;
    EXPECT_EQ(r.findings[0].kind, FindingKind::kMissingCall) << text;
    EXPECT_EQ(r.findings[0].seq, static_cast<uint64_t>(seq)) << text;
    EXPECT_EQ(text.find("two threads"), std::string::npos) << text;
    EXPECT_EQ(text.find("different threads"), std::string::npos) << text;
  }
}

using Result = ncclrr::testing::CommandResult;
// stdout only: the JSON reports are parsed whole.
Result RunStdout(const std::string& args) {
  return ncclrr::testing::RunShell(ncclrr::testing::TestProgram("ncclrr") + " " + args);
}

TEST(ImportFrVerb, ImportThenCheck) {
  const fs::path out = Scratch("verb");
  Result r = RunStdout("import-fr " + (FrData() / "count").string() + " -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 Flight Recorder dump(s) (version 2.10)"), std::string::npos) << r.out;
  r = RunStdout("check " + out.string() + " --json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("\"kind\":\"count_mismatch\""), std::string::npos) << r.out;
  // A second import into the same directory is refused, and a foreign file is a clear error.
  r = RunStdout("import-fr " + (FrData() / "count").string() + " -o " + out.string() + " 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("already holds a trace"), std::string::npos) << r.out;
  r = RunStdout("import-fr " + (FrData() / "count" / "fr_trace.txt").string() + " -o " +
                out.string() + "-x 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  fs::remove_all(out);
}

// `export --format flight-recorder[-json]` and `import-fr` read each other: a real job's trace
// (tests/data/real/grad-swap-diff, rank 1 all-reduced fc2.bias before fc2.weight at step 5 and
// hung) exported as FR dumps, pickled and as JSON, imports back, and check names the same swap
// at the same seq (FR keeps the counts; it has no buffers, ops or roots).
TEST(FrRoundTrip, ExportedDumpsImportBackWithTheSameFinding) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const fs::path real = fs::path(src ? src : ".") / "tests/data/real/grad-swap-diff";
  auto original = TraceModel::Load(real.string());
  ASSERT_TRUE(original.ok()) << original.status().message();
  for (const FlightRecorderEncoding enc :
       {FlightRecorderEncoding::kPickle, FlightRecorderEncoding::kJson}) {
    const bool pickle = enc == FlightRecorderEncoding::kPickle;
    const fs::path dumps = Scratch(pickle ? "rt-pickle" : "rt-json");
    const fs::path back = Scratch(pickle ? "rt-pickle-trace" : "rt-json-trace");
    ASSERT_TRUE(ExportFlightRecorder(*original, dumps.string(), enc).ok());
    auto imported = ImportFlightRecorder({dumps.string()}, back.string());
    ASSERT_TRUE(imported.ok()) << imported.status().message();
    EXPECT_EQ(imported->files.size(), 2u);
    auto model = TraceModel::Load(back.string());
    ASSERT_TRUE(model.ok()) << model.status().message();
    const Report r = Check(*model, {});
    const auto swap = std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
      return f.kind == FindingKind::kOrderSwap;
    });
    ASSERT_NE(swap, r.findings.end()) << (pickle ? "pickle" : "json") << ":\n"
                                      << FormatText(r, &*model, {});
    ASSERT_TRUE(swap->seq.has_value());
    EXPECT_EQ(*swap->seq, 56u);
    fs::remove_all(dumps);
    fs::remove_all(back);
  }
}

TEST(ImportFrVerb, Help) {
  const Result r = RunStdout("import-fr --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Flight Recorder"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped, never guessed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ncclrr::analysis
