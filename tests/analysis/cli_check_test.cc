// `ncclrr check` and `ncclrr export` as a user runs them: exit codes, --json, --strict,
// --stable against the golden text, bad input, and an export that Chrome/Perfetto can load.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ncclrr/testing/run_program.h"
#include "scenarios.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;

// stdout only: the JSON and text reports are compared whole.
using Result = CommandResult;
CommandResult RunStdout(const std::string& args) {
  return RunShell(TestProgram("ncclrr") + " " + args);
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliCheckTest : public ::testing::Test {
 protected:
  fs::path Write(const std::string& scenario) {
    const fs::path dir = fs::temp_directory_path() /
                         ("ncclrr-cli-check-" + std::to_string(getpid()) + "-" + scenario);
    fs::remove_all(dir);
    for (const Scenario& s : GoldenScenarios())
      if (s.name == scenario) {
        SyntheticScript script = s.build();
        script.dir = dir.string();
        EXPECT_TRUE(WriteSyntheticScript(script).ok());
      }
    dirs_.push_back(dir);
    return dir;
  }
  void TearDown() override {
    for (const auto& d : dirs_) fs::remove_all(d);
  }
  std::vector<fs::path> dirs_;
};

TEST_F(CliCheckTest, CleanTraceExitsZero) {
  const Result r = RunStdout("check " + Write("clean_many_comms").string() + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("summary: 0 findings"), std::string::npos) << r.out;
}

TEST_F(CliCheckTest, FindingsExitOneAndStableTextIsTheGolden) {
  const Result r = RunStdout("check --stable " + Write("order_swap").string());
  EXPECT_EQ(r.code, 1);
  const fs::path golden =
      fs::path(std::getenv("NCCLRR_SOURCE_DIR")) / "tests/analysis/golden/order_swap.txt";
  EXPECT_EQ(r.out, Slurp(golden));
}

// --mpi outside mpirun: with Open MPI, a job of one process that prints what one process
// prints; without it, exit 2 saying what to install.
TEST_F(CliCheckTest, MpiAloneIsOneProcessOrSaysWhatIsMissing) {
  const std::string dir = Write("order_swap").string();
  const Result mpi = RunStdout("check --stable --mpi " + dir + " 2>&1");
  if (mpi.code == 2) {
    EXPECT_NE(mpi.out.find("Open MPI"), std::string::npos) << mpi.out;
    EXPECT_NE(mpi.out.find("NCCLRR_MPI_LIBRARY"), std::string::npos) << mpi.out;
    return;
  }
  EXPECT_EQ(mpi.code, 1) << mpi.out;
  EXPECT_EQ(mpi.out, RunStdout("check --stable " + dir).out);
}

// --memory: the same report (stdout) and exit code, with how it was checked on stderr; sizes
// it cannot read and too small a budget say what to give instead.
TEST_F(CliCheckTest, MemoryBoundPrintsTheSameReport) {
  const std::string dir = Write("cross_comm_order").string();
  const Result whole = RunStdout("check --json --stable " + dir);
  const Result bounded = RunStdout("check --json --stable --memory 2G " + dir);
  EXPECT_EQ(bounded.code, whole.code);
  EXPECT_EQ(bounded.out, whole.out);
  const Result said = RunStdout("check --stable --memory 1.5G " + dir + " 2>&1 >/dev/null");
  EXPECT_NE(said.out.find("of communicators, 2 passes"), std::string::npos) << said.out;
  const Result bad = RunStdout("check --memory lots " + dir + " 2>&1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("expects a size such as 8G"), std::string::npos) << bad.out;
  const Result tiny = RunStdout("check --memory 64K " + dir + " 2>&1");
  EXPECT_EQ(tiny.code, 2);
  EXPECT_NE(tiny.out.find("give a larger --memory"), std::string::npos) << tiny.out;
  const Result both = RunStdout("check --mpi --memory 1G " + dir + " 2>&1");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.out.find("do not go together"), std::string::npos) << both.out;
}

TEST_F(CliCheckTest, JsonHasTheContractFields) {
  const Result r = RunStdout("check --json " + Write("count_mismatch").string());
  EXPECT_EQ(r.code, 1);
  for (const char* field :
       {"\"findings\":[", "\"kind\":\"count_mismatch\"", "\"comm\":\"0x5a17c0de00000001\"",
        "\"seq\":7", "\"ranks\":[2]", "\"repeats\":2", "\"first_time\":1", "\"notes\":[]",
        "\"summary\":{", "\"exit_code\":1"})
    EXPECT_NE(r.out.find(field), std::string::npos) << field << "\n" << r.out;
}

TEST_F(CliCheckTest, NotesCountOnlyUnderStrict) {
  const std::string dir = Write("torn_file").string();
  EXPECT_EQ(RunStdout("check " + dir).code, 0);
  const Result strict = RunStdout("check --strict " + dir);
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.out.find("--strict: notes count as findings"), std::string::npos);
}

TEST_F(CliCheckTest, NoUsableTraceExitsTwoWithAClearMessage) {
  const Result missing = RunStdout("check /nonexistent/ncclrr-trace 2>&1");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
  const fs::path junk = fs::temp_directory_path() / ("ncclrr-junk-" + std::to_string(getpid()));
  fs::create_directories(junk);
  std::ofstream(junk / "x.ncclrr") << "not a trace";
  const Result bad = RunStdout("check " + junk.string() + " 2>&1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("not an ncclrr trace"), std::string::npos) << bad.out;
  fs::remove_all(junk);
  EXPECT_EQ(RunStdout("check 2>&1").code, 2);
  EXPECT_EQ(RunStdout("check --bogus x 2>&1").code, 2);
}

// `ncclrr diff A B`: the same directory twice is equivalent (exit 0); two runs of one program,
// one with a same-shape swap, differ (exit 1) in text and JSON; bad input exits 2 saying what
// was expected.
TEST_F(CliCheckTest, DiffOfATraceWithItselfIsEquivalent) {
  const std::string dir = Write("clean_many_comms").string();
  const Result r = RunStdout("diff " + dir + " " + dir + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("summary: equivalent, no differences; 7 of 7 + 7 communicators matched"),
            std::string::npos)
      << r.out;
}

TEST_F(CliCheckTest, DiffOfTwoRunsNamesTheSwap) {
  const std::string a = Write("fresh_buffers_clean").string();
  const std::string b = Write("fresh_buffers_swap").string();
  const Result text = RunStdout("diff --stable " + a + " " + b);
  EXPECT_EQ(text.code, 1) << text.out;
  EXPECT_NE(text.out.find("difference[order]"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find(a), std::string::npos) << "--stable leaves out paths";
  const Result json = RunStdout("diff --json " + a + " " + b);
  EXPECT_EQ(json.code, 1);
  for (const char* field : {"\"runs\":{\"a\":{\"path\":\"", "\"kind\":\"order\"",
                            "\"calls_a\":[{\"file\":", "\"exit_code\":1"})
    EXPECT_NE(json.out.find(field), std::string::npos) << field << "\n" << json.out;
}

TEST_F(CliCheckTest, DiffOfUnusableInputExitsTwoSayingWhatWasExpected) {
  const std::string good = Write("clean_two_ranks").string();
  const Result missing = RunStdout("diff " + good + " /nonexistent/ncclrr-trace 2>&1");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("run B: '/nonexistent/ncclrr-trace' does not exist; expected a "
                             "trace directory"),
            std::string::npos)
      << missing.out;
  const fs::path empty = fs::temp_directory_path() / ("ncclrr-empty-" + std::to_string(getpid()));
  fs::create_directories(empty);
  dirs_.push_back(empty);
  const Result none = RunStdout("diff " + empty.string() + " " + good + " 2>&1");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("run A: no trace files (*.ncclrr)"), std::string::npos) << none.out;
  EXPECT_EQ(RunStdout("diff " + good + " 2>&1").code, 2);  // one directory
  EXPECT_EQ(RunStdout("diff --bogus " + good + " " + good + " 2>&1").code, 2);
}

TEST_F(CliCheckTest, ExportWritesChromeTraceJson) {
  const fs::path dir = Write("cross_comm_order");
  const fs::path out = dir / "export.json";
  const Result r = RunStdout("export " + dir.string() + " --format chrome-json -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string j = Slurp(out);
  EXPECT_EQ(j.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  EXPECT_EQ(j.substr(j.size() - 4), "\n]}\n");
  for (const char* needle :
       {"\"ph\":\"X\"", "\"ph\":\"s\"", "\"ph\":\"f\"", "\"name\":\"process_name\"",
        "\"name\":\"thread_name\"", "\"ph\":\"i\"", "\"name\":\"cross_comm_order\""})
    EXPECT_NE(j.find(needle), std::string::npos) << needle;
  EXPECT_EQ(RunStdout("export " + dir.string() + " --format pprof -o x 2>&1").code, 2);
  EXPECT_EQ(RunStdout("export " + dir.string() + " 2>&1").code, 2);  // -o is required
  EXPECT_EQ(RunStdout("export " + dir.string() + " -o /nonexistent/dir/x.json 2>&1").code, 2);
}

// The default format is Perfetto's protobuf: a Trace whose first field is packet (1, bytes),
// smaller than the JSON of the same trace (perfetto_export_test.cc decodes it in full).
TEST_F(CliCheckTest, ExportDefaultsToPerfettoProtobuf) {
  const fs::path dir = Write("cross_comm_order");
  const fs::path proto = dir / "export.pftrace", json = dir / "export.json";
  const Result r = RunStdout("export " + dir.string() + " -o " + proto.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Perfetto protobuf"), std::string::npos) << r.out;
  const std::string bytes = Slurp(proto);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), (1u << 3) | 2u);
  ASSERT_EQ(RunStdout("export " + dir.string() + " --format chrome-json -o " + json.string()).code,
            0);
  EXPECT_LT(bytes.size(), Slurp(json).size());
}

TEST_F(CliCheckTest, ExportWritesFlightRecorderDumpsPerRank) {
  const fs::path dir = Write("cross_comm_order");
  const fs::path out = dir / "fr";
  const Result r =
      RunStdout("export " + dir.string() + " --format flight-recorder-json -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Flight Recorder dumps"), std::string::npos) << r.out;
  for (const char* f : {"nccl_trace_rank_0", "nccl_trace_rank_1"}) {
    const std::string dump = Slurp(out / f);
    EXPECT_NE(dump.find("\"version\":\"2.10\""), std::string::npos) << f;
    EXPECT_NE(dump.find("\"profiling_name\":\"nccl:all_reduce\""), std::string::npos) << f;
  }
  // The default is the pickle FR writes and fr_trace reads (protocol 2, then a dict).
  const fs::path pickled = dir / "fr-pickle";
  ASSERT_EQ(
      RunStdout("export " + dir.string() + " --format flight-recorder -o " + pickled.string()).code,
      0);
  const std::string dump = Slurp(pickled / "nccl_trace_rank_0");
  EXPECT_EQ(dump.substr(0, 3), std::string("\x80\x02}", 3));
  EXPECT_EQ(dump.back(), '.');
  EXPECT_NE(dump.find("nccl:all_reduce"), std::string::npos);
  const Result help = RunStdout("export --help 2>&1");
  EXPECT_NE(help.out.find("flight-recorder"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("chrome-json"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace ncclrr::testing
