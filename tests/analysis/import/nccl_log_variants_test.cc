// The shapes of NCCL/RCCL log lines seen in the wild (NCCL 2.4 to 2.30, RCCL, launchers'
// prefixes, glued and cut lines), read through the importer's public entry points.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "ncclrr/analysis/nccl_log_import.h"
#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {
namespace {

using testing::ScratchDir;

// An NCCL COLL line as enqueue.cc prints it.
std::string Coll(const std::string& prefix, const std::string& op, const std::string& op_count,
                 const std::string& comm, int nranks, const std::string& tail = "",
                 uint64_t count = 1024) {
  return prefix + " NCCL INFO " + op + ": opCount " + op_count +
         " sendbuff 0x7f0010 recvbuff 0x7f0010 count " + std::to_string(count) +
         " datatype 7 op 0 root 0 comm " + comm + " [nranks=" + std::to_string(nranks) +
         "] stream 0x9a" + tail + "\n";
}

std::string AllNotes(const NcclLogImportResult& r) {
  std::string s;
  for (const auto& n : r.notes) s += n + "\n";
  return s;
}

// Imports `text` and loads the trace back.
TraceDir ImportText(const std::string& text, NcclLogImportResult* result = nullptr) {
  ScratchDir dir("log-variant");
  const std::string log = dir.path() + "/job.log";
  std::ofstream(log) << text;
  auto r = ImportNcclLogs({log}, dir.path() + "/t");
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (result && r.ok()) *result = *r;
  auto d = LoadTraceDir(dir.path() + "/t");
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? std::move(*d) : TraceDir{};
}

TEST(NcclLogVariants, Nccl24InitLinesWithoutCommIdGiveRanks) {
  // NCCL 2.4.2 (TensorFlow, one process, two GPUs): rank 0 is on device 1.
  const std::string log =
      "gpu1:11907:12331 [1] NCCL INFO comm 0x7ef9d4137620 rank 0 nranks 2 cudaDev 1 nvmlDev 1\n"
      "gpu1:11907:12331 [0] NCCL INFO comm 0x7ef9d414a840 rank 1 nranks 2 cudaDev 0 nvmlDev 0\n" +
      Coll("gpu1:11907:12696 [0]", "AllReduce", "0", "0x7ef9d414a840", 2) +
      Coll("gpu1:11907:12697 [1]", "AllReduce", "0", "0x7ef9d4137620", 2);
  NcclLogImportResult r;
  const TraceDir d = ImportText(log, &r);
  ASSERT_EQ(d.files.size(), 1u);
  ASSERT_EQ(d.files[0].calls.size(), 2u);
  EXPECT_EQ(d.files[0].calls[0].rank, 1);
  EXPECT_EQ(d.files[0].calls[1].rank, 0);
  EXPECT_EQ(d.files[0].calls[0].comm_id, d.files[0].calls[1].comm_id);
  EXPECT_NE(AllNotes(r).find("Init lines without commId: grouped by [nranks=2] (likely); ranks "
                             "from the Init lines (certain)"),
            std::string::npos)
      << AllNotes(r);
}

TEST(NcclLogVariants, CommIdFromInitCompleteIsTheCommunicatorId) {
  const std::string log =
      "node:5:6 [0] NCCL INFO ncclCommInitRankConfig comm 0x382ac700 rank 0 nranks 2 cudaDev 0 "
      "nvmlDev 0 busId 80 commId 0x99de3aa2a03ab5f7 - Init COMPLETE\n"
      "node:7:8 [1] NCCL INFO ncclCommInitRankConfig comm 0x482ac700 rank 1 nranks 2 cudaDev 1 "
      "nvmlDev 1 busId 90 commId 0x99de3aa2a03ab5f7 - Init COMPLETE\n" +
      Coll("node:5:6 [0]", "AllReduce", "0", "0x382ac700", 2) +
      Coll("node:7:8 [1]", "AllReduce", "0", "0x482ac700", 2);
  const TraceDir d = ImportText(log);
  ASSERT_EQ(d.files.size(), 2u);
  for (const TraceFile& f : d.files) {
    ASSERT_EQ(f.comms.size(), 1u);
    EXPECT_EQ(f.comms[0].comm_id, 0x99de3aa2a03ab5f7ull);
    EXPECT_EQ(f.comms[0].nccl_hash_known, 1);
    EXPECT_EQ(f.calls[0].comm_id, 0x99de3aa2a03ab5f7ull);
  }
}

TEST(NcclLogVariants, RcclGlobalRankAndKernelTraceLines) {
  std::string log;
  for (int r = 3; r >= 0; --r) {  // one process, four handles, all printed from device [3]
    log += "h:9:9 [0] NCCL INFO ## [171051.12] [0" + std::to_string(r) +
           ":00] 000002 KE busId c000 nRanks 4\n";
    log += Coll("h:9:9 [3]", "AllGather", "3", "0x10" + std::to_string(r), 4,
                " task 0 globalrank " + std::to_string(r));
  }
  NcclLogImportResult r;
  const TraceDir d = ImportText(log, &r);
  ASSERT_EQ(d.files.size(), 1u);
  ASSERT_EQ(d.files[0].calls.size(), 4u);
  for (const CallRecord& c : d.files[0].calls) {
    EXPECT_EQ(c.rank, 3 - int(c.uid - d.files[0].calls[0].uid));
    EXPECT_EQ(c.device, c.rank) << "one thread's device [3] is no rank's own device";
  }
  EXPECT_EQ(r.comms, 1u);
  EXPECT_NE(AllNotes(r).find("ranks from RCCL's globalrank"), std::string::npos) << AllNotes(r);
}

TEST(NcclLogVariants, TuningLinesAreNotCalls) {
  const std::string log =
      Coll("n:1:1 [0]", "AllReduce", "0", "0x55", 1) +
      "n:1:1 [0] NCCL INFO AllReduce: 4 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n"
      "n:1:1 [0] NCCL INFO 8 Bytes -> Algo 0 proto 0 time 25.200924\n"
      "[0] NCCL INFO 805306368 Bytes -> Algo 1 proto 2 time 3970.683594\n";
  EXPECT_EQ(DescribeNcclLogs({log}).calls, 1u);
}

TEST(NcclLogVariants, LauncherPrefixesAndTimestamps) {
  const std::string log =
      Coll("[2026-05-05 06:16:47] node-01:10:10 [0]", "AllReduce", "0", "0xa", 2) +
      Coll("[rank1]:node-01:11:11 [1]", "AllReduce", "0", "0xb", 2) +
      Coll("[default0]:node-02:12:12 [0]", "AllReduce", "0", "0xc", 2) +
      Coll("0: node-03:13:13 [0]", "AllReduce", "0", "0xd", 2) +
      Coll("(RayTrainWorker pid=14, ip=10.0.0.4) node-04:14:14 [0]", "AllReduce", "0", "0xe", 2) +
      Coll("[1,0]<stdout>:node-05:15:15 [0]", "AllReduce", "0", "0xf", 2);
  const TraceDir d = ImportText(log);
  ASSERT_EQ(d.files.size(), 6u);
  std::vector<std::string> hosts;
  for (const TraceFile& f : d.files) hosts.push_back(f.header.host);
  EXPECT_EQ(hosts, (std::vector<std::string>{"node-01", "node-01", "node-02", "node-03", "node-04",
                                             "node-05"}));
}

TEST(NcclLogVariants, TorchrunRankPrefixGivesTheRanksOfTheLargestCommunicator) {
  std::string log;
  for (int r : {2, 0, 3, 1})  // devices all 0 (one GPU per node): the launcher's rank decides
    log += Coll("[rank" + std::to_string(r) + "]:node" + std::to_string(r) + ":" +
                    std::to_string(100 + r) + ":1 [0]",
                "AllReduce", "0", "0x5" + std::to_string(r), 4);
  NcclLogImportResult r;
  const TraceDir d = ImportText(log, &r);
  ASSERT_EQ(d.files.size(), 4u);
  for (const TraceFile& f : d.files) EXPECT_EQ(f.calls[0].rank, int(f.header.pid - 100));
  EXPECT_NE(AllNotes(r).find("[rankN] prefix"), std::string::npos) << AllNotes(r);
}

TEST(NcclLogVariants, GluedAndPrefixlessLinesFindTheirProcess) {
  const std::string log =
      "h:1:1 [0] NCCL INFO " + Coll("h:2:2 [1]", "Broadcast", "0", "0xb2", 2) +
      Coll("h:1:1 [0]", "Broadcast", "0", "0xb1", 2) +
      "Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 op 0 root 0 comm 0xb2 "
      "[nranks=2] stream 0x9\n" +
      "Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 op 0 root 0 comm 0xff "
      "[nranks=2] stream 0x9\n";
  const NcclLogImportResult r = DescribeNcclLogs({log});
  EXPECT_EQ(r.processes, 2u);
  EXPECT_EQ(r.calls, 3u);  // the glued line is pid 2's; the first prefix-less one too
  EXPECT_EQ(r.attributed_calls, 1u);
  EXPECT_EQ(r.skipped_calls, 1u);  // 0xff: no process holds it
  ASSERT_FALSE(r.warnings.empty());
}

TEST(NcclLogVariants, ALogWithoutAnyPrefixIsOneProcess) {
  const std::string log =
      "AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 8 datatype 7 "
      "op 0 root 0 comm 0x5 [nranks=1] stream 0x9\n";
  const TraceDir d = ImportText(log + log);
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(d.files[0].header.host, "log1");
  EXPECT_EQ(d.files[0].calls.size(), 2u);
}

TEST(NcclLogVariants, HexOpCountsAlignExcerptsThatStartApart) {
  const std::string log = Coll("a:1:1 [0]", "AllReduce", "1a", "0xa", 2) +
                          Coll("a:1:1 [0]", "AllReduce", "1b", "0xa", 2) +
                          Coll("a:2:2 [1]", "AllReduce", "1b", "0xb", 2);
  const TraceDir d = ImportText(log);
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.files[0].calls[1].seq, 1u);
  EXPECT_EQ(d.files[1].calls[0].seq, 1u);  // opCount 1b on both: the same position
}

TEST(NcclLogVariants, AbsentRanksAreNamed) {
  std::string log;
  for (int dev = 0; dev < 8; ++dev)
    log += Coll("hostA:" + std::to_string(200 + dev) + ":1 [" + std::to_string(dev) + "]",
                "AllReduce", "0", "0x7" + std::to_string(dev), 16);
  const NcclLogImportResult r = DescribeNcclLogs({log});
  EXPECT_EQ(r.comms, 1u);
  EXPECT_NE(AllNotes(r).find("8 of 16 ranks logged; ranks 8-15 absent from the logs"),
            std::string::npos)
      << AllNotes(r);
}

// Bad input gets clear messages or is skipped, never a crash.
TEST(NcclLogVariants, MalformedLinesAreSkipped) {
  const std::string huge(1 << 20, 'x');
  const std::vector<std::string> texts = {
      "",
      "\n\n\n",
      huge,
      "NCCL INFO",
      " NCCL INFO AllReduce: opCount",
      "h:1:1 [0] NCCL INFO AllReduce: opCount zz sendbuff q count -5 datatype x comm (nil)",
      "h:1:1 [0] NCCL INFO comm 0x1 rank 9 nranks 2 cudaDev 0",
      "h:1:1 [99999999999] NCCL INFO comm 0x1 rank 0 nranks 2",
      "h:1:1 [0] NCCL INFO AllReduce: opCount 1 count 99999999999999999999999 datatype 7 comm 0x1",
      "::: [] NCCL INFO Send: opCount 1 count 1 datatype 7 comm 0x1 root -7 [nranks=0]",
      Coll("h:1:1 [0]", "Send", "1", "0x1", 2147483647) +
          Coll("h:1:1 [0]", "Recv", "1", "0x1", -3)};
  for (const std::string& t : texts) {
    const NcclLogImportResult r = DescribeNcclLogs({t});
    EXPECT_LE(r.calls, 2u);
  }
  ScratchDir dir("log-bad");
  const std::string log = dir.path() + "/nothing.log";
  std::ofstream(log) << "h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n";
  auto r = ImportNcclLogs({log}, dir.path() + "/t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NCCL_DEBUG_SUBSYS=INIT,COLL"), std::string::npos);
  auto d = ImportNcclLogs({dir.path()}, dir.path() + "/t");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr
