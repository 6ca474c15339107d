// NCCL INFO logs (format of NCCL 2.28's init.cc / enqueue.cc) into traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ncclrr/analysis/nccl_log_import.h"
#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {
namespace {

using testing::ScratchDir;

// Two processes interleaved in one log, as torchrun's combined output shows them; rank 1 swaps
// its two 36864-float allreduces; then a split communicator and a p2p pair.
constexpr const char* kLog = R"(
gpu0:101:111 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
gpu0:101:111 [0] NCCL INFO ncclCommInitRank comm 0x5600aa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xfeedbeef12345678 - Init COMPLETE
gpu0:202:222 [1] NCCL INFO ncclCommInitRank comm 0x5700bb rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 1c000 commId 0xfeedbeef12345678 - Init COMPLETE
gpu0:101:111 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f0010 recvbuff 0x7f0010 count 36864 datatype 7 op 0 root 0 comm 0x5600aa [nranks=2] stream 0x9a
gpu0:202:222 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x7e0020 recvbuff 0x7e0020 count 36864 datatype 7 op 0 root 0 comm 0x5700bb [nranks=2] stream 0x9b
gpu0:101:111 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f0020 recvbuff 0x7f0020 count 36864 datatype 7 op 0 root 0 comm 0x5600aa [nranks=2] stream 0x9a
[rank1]: gpu0:202:222 [1] NCCL INFO AllReduce: opCount 1 sendbuff 0x7e0010 recvbuff 0x7e0010 count 36864 datatype 7 op 0 root 0 comm 0x5700bb [nranks=2] stream 0x9b
gpu0:101:111 [0] NCCL INFO ncclCommSplit comm 0x5800cc rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1b000 parent 0x5600aa splitCount 1 color 0 key 0 - Init COMPLETE
gpu0:101:111 [0] NCCL INFO Send: opCount 2 sendbuff 0x7f0030 recvbuff (nil) count 16 datatype 2 op 0 root 1 comm 0x5600aa [nranks=2] stream 0x9a
gpu0:202:222 [1] NCCL INFO Recv: opCount 2 sendbuff (nil) recvbuff 0x7e0030 count 16 datatype 2 op 0 root 0 comm 0x5700bb [nranks=2] stream 0x9b
gpu0:101:111 [0] NCCL INFO Broadcast: opCount 3 sendbuff 0x7f0040 recvbuff 0x7f0040 count 8 datatype 4 op 0 root 0 comm 0x5800cc [nranks=1] stream 0x9a
)";

TEST(NcclLogImport, InterleavedProcessesBecomeOneFileEach) {
  ScratchDir dir("import");
  const std::string log = dir.path() + "/job.log";
  std::ofstream(log) << kLog;
  auto r = ImportNcclLogs({log}, dir.path() + "/trace");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->calls, 7u);
  EXPECT_EQ(r->comms, 2u);  // the 2-rank root communicator and its 1-rank split
  EXPECT_EQ(r->unmatched_calls, 0u);
  auto d = LoadTraceDir(dir.path() + "/trace");
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->files.size(), 2u);
  // Files are named host-pid and sorted: pid 101 (rank 0) first.
  const TraceFile& p0 = d->files[0];
  const TraceFile& p1 = d->files[1];
  EXPECT_EQ(p0.header.pid, 101);
  EXPECT_EQ(p1.header.pid, 202);
  EXPECT_EQ(p0.header.route, Route::kNcclLog);
  ASSERT_EQ(p0.calls.size(), 4u);
  ASSERT_EQ(p1.calls.size(), 3u);
  // Same root communicator id in both processes: NCCL's commId.
  EXPECT_EQ(p0.calls[0].comm_id, 0xfeedbeef12345678ull);
  EXPECT_EQ(p1.calls[0].comm_id, 0xfeedbeef12345678ull);
  EXPECT_EQ(p1.calls[1].seq, 1u);
  EXPECT_EQ(p1.calls[1].sendbuff, 0x7e0010u);  // the swapped tensor
  EXPECT_EQ(p1.calls[1].rank, 1);
  // p2p: per-peer sequence and peer.
  EXPECT_EQ(static_cast<Api>(p0.calls[2].api), Api::kSend);
  EXPECT_EQ(p0.calls[2].root_peer, 1);
  EXPECT_EQ(p0.calls[2].seq, 0u);
  EXPECT_EQ(static_cast<Api>(p1.calls[2].api), Api::kRecv);
  // The split's calls carry a stand-in id derived from the parent.
  EXPECT_EQ(static_cast<Api>(p0.calls[3].api), Api::kBroadcast);
  EXPECT_NE(p0.calls[3].comm_id, 0xfeedbeef12345678ull);
  bool saw_split = false;
  for (const auto& c : p0.comms)
    if (c.origin == static_cast<uint8_t>(CommOrigin::kSplit)) {
      saw_split = true;
      EXPECT_EQ(c.parent_id, 0xfeedbeef12345678ull);
      EXPECT_EQ(c.nccl_hash_known, 0);
      EXPECT_EQ(c.comm_id, p0.calls[3].comm_id);
    }
  EXPECT_TRUE(saw_split);
}

TEST(NcclLogImport, ClearErrors) {
  ScratchDir dir("import-bad");
  const std::string log = dir.path() + "/empty.log";
  std::ofstream(log) << "nothing from NCCL here\n";
  auto r = ImportNcclLogs({log}, dir.path() + "/t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NCCL_DEBUG=INFO"), std::string::npos);
  auto missing = ImportNcclLogs({dir.path() + "/nope.log"}, dir.path() + "/t2");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read log"), std::string::npos);
}

// The log's host names a file: it may not climb out of the output directory; numbers too big
// for their field skip the line with a warning instead of "error: stoi".
TEST(NcclLogImport, HostileLogsStayInsideTheOutputDirectory) {
  ScratchDir dir("import-hostile");
  const std::string log = dir.path() + "/hostile.log";
  std::ofstream(log)
      << "../../victim:101:111 [0] NCCL INFO ncclCommInitRank comm 0x5600aa rank 0 nranks 1 "
         "cudaDev 0 nvmlDev 0 busId 1b000 commId 0xfeedbeef12345678 - Init COMPLETE\n"
      << "../../victim:101:111 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f0010 recvbuff "
         "0x7f0010 count 36864 datatype 7 op 0 root 0 comm 0x5600aa [nranks=1] stream 0x9a\n"
      << "..:102:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 "
         "datatype 7 op 0 root 0 comm 0x5 [nranks=1] stream 0x9a\n"
      << "gpu0:99999999999999999999:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff "
         "0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=1] stream 0x9a\n";
  auto r = ImportNcclLogs({log}, dir.path() + "/t");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->files.size(), 2u);
  for (const auto& f : r->files)
    EXPECT_EQ(std::filesystem::path(f).parent_path(), std::filesystem::path(dir.path() + "/t"));
  EXPECT_EQ(std::filesystem::path(r->files[1]).filename(), "..-102.ncclrr");
  // The host is the tail of the name a hostname can hold: "../../" is left in front of it like
  // a launcher's prefix, and the file name is built from the plain rest.
  EXPECT_EQ(std::filesystem::path(r->files[0]).filename(), "victim-101.ncclrr");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/../victim-101.ncclrr"));
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("out of range"), std::string::npos);
  EXPECT_EQ(r->calls, 2u);
}

}  // namespace
}  // namespace ncclrr
