// The `ncclrr` program as a user runs it: exit codes and messages of info and dump on good,
// truncated and foreign input, flag errors, and import-nccl-log on a real log.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ncclrr/base/args.h"
#include "ncclrr/testing/run_program.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace ncclrr {
namespace {

using Result = testing::CommandResult;
Result RunNcclrr(const std::string& args) { return testing::RunNcclrr(args, true); }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ncclrr-cli-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    SyntheticTraceOptions o;
    o.dir = dir_.string();
    o.swap_rank = 1;
    o.swap_steps = {1};
    ASSERT_TRUE(WriteSyntheticTrace(o).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CliTest, InfoSummarisesATrace) {
  Result r = RunNcclrr("info " + dir_.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("total: 2 processes, 1 communicators, 2 ranks, 32 calls, 0 dropped"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("closed cleanly"), std::string::npos);
}

TEST_F(CliTest, DumpStableIsGolden) {
  Result r = RunNcclrr("dump " + dir_.string() + " --rank 1 --stable");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string want =
      "comm 0x5a17c0de00000001 rank 1/2 dev 1 via InitRank name \"synthetic.dp\"\n"
      "AllReduce comm 0x5a17c0de00000001 rank 1 seq 0 count 1728 datatype float32 op sum "
      "inplace\n";
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0x7f"), std::string::npos) << "stable output has an address";
}

TEST_F(CliTest, InfoOnTruncatedFileWarnsAndOnForeignFileFails) {
  const auto file = dir_ / "synthetic-rank0.ncclrr";
  const auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size - 5);
  Result torn = RunNcclrr("info " + file.string());
  EXPECT_EQ(torn.code, 0) << torn.out;
  EXPECT_NE(torn.out.find("torn tail"), std::string::npos) << torn.out;

  std::filesystem::resize_file(file, 10);
  Result header = RunNcclrr("info " + file.string());
  EXPECT_EQ(header.code, 2) << header.out;
  EXPECT_NE(header.out.find("ends inside its file header"), std::string::npos) << header.out;

  const auto foreign = dir_ / "foreign.ncclrr";
  std::ofstream(foreign) << "PK\x03\x04 this is a zip file";
  Result f = RunNcclrr("info " + foreign.string());
  EXPECT_EQ(f.code, 2) << f.out;
  EXPECT_NE(f.out.find("not an ncclrr trace"), std::string::npos) << f.out;
}

TEST_F(CliTest, BadFlagsAndVerbsExitTwoWithUsage) {
  Result r = RunNcclrr("dump " + dir_.string() + " --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown flag '--bogus'"), std::string::npos) << r.out;
  r = RunNcclrr("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown verb"), std::string::npos);
  r = RunNcclrr("info");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("missing trace directory"), std::string::npos) << r.out;
  r = RunNcclrr("dump " + dir_.string() + " --rank x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("expects a number"), std::string::npos) << r.out;
}

// Sizes as people write them: units K, M, G, T (powers of 1024), "B" optional, fractions.
TEST(ArgsSizes, ReadUnitsAndRefuseWhatIsNoSize) {
  auto bytes = [](const std::string& v) {
    Args a("ncclrr check", {"--memory", v});
    a.Option("--memory");
    a.Parse();
    return a.GetBytes("--memory", 0);
  };
  EXPECT_EQ(bytes("1000000"), 1000000u);
  EXPECT_EQ(bytes("512M"), 512ull << 20);
  EXPECT_EQ(bytes("8GB"), 8ull << 30);
  EXPECT_EQ(bytes("1.5g"), 3ull << 29);
  EXPECT_EQ(bytes("2T"), 2ull << 40);
  for (const char* bad : {"", "lots", "0", "-1G", "8Q", "G", "1e30"})
    EXPECT_THROW(bytes(bad), UsageError) << bad;
  Args none("ncclrr check", {});
  none.Option("--memory");
  none.Parse();
  EXPECT_EQ(none.GetBytes("--memory", 7), 7u);
}

// A console log as people have it (RCCL, 4 ranks, two logged, no INIT lines): the import says how
// it inferred the communicator; check names the hang's cause and no lifecycle_error.
TEST_F(CliTest, ImportNcclLogSaysWhatItInferredAndCheckNamesTheMismatch) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const std::string log =
      std::string(src ? src : ".") + "/tests/data/nccl-logs/rccl-allgather-vs-allreduce.log";
  const std::string out = (dir_ / "imported").string();
  Result r = RunNcclrr("import-nccl-log " + log + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 4 calls of 2 process(es) on 1 communicator(s)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("inferred: communicator 0x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 1, 3 absent from the logs"), std::string::npos) << r.out;
  Result c = RunNcclrr("check " + out + " --stable");
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("error[op_mismatch]"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("note[inferred]"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("lifecycle_error"), std::string::npos) << c.out;

  Result again = RunNcclrr("import-nccl-log " + log + " -o " + out);
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("already holds a trace"), std::string::npos) << again.out;
  Result nothing = RunNcclrr("import-nccl-log /dev/null -o " + (dir_ / "none").string());
  EXPECT_EQ(nothing.code, 2) << nothing.out;
  EXPECT_NE(nothing.out.find("NCCL_DEBUG_SUBSYS=INIT,COLL"), std::string::npos) << nothing.out;
  Result help = RunNcclrr("import-nccl-log --help");
  EXPECT_EQ(help.code, 0) << help.out;
  EXPECT_NE(help.out.find("docs/import.md"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace ncclrr
