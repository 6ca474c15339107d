// KernelCorrelator: how kernel records become one GPU time per call, for every kind of launch
// scope, with records arriving out of order and across rounds.
#include "ncclrr/gputiming/kernel_correlator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ncclrr::gputiming {
namespace {

struct Collected {
  std::map<uint64_t, std::vector<GpuTimeRecord>> by_uid;
  std::vector<std::string> notes;
  KernelCorrelator::Emit emit() {
    return [this](const GpuTimeRecord& r) { by_uid[r.call_uid].push_back(r); };
  }
  KernelCorrelator::NoteFn note() {
    return [this](const std::string& t) { notes.push_back(t); };
  }
};

KernelActivity Kernel(uint32_t corr, int32_t device, int64_t start, int64_t end) {
  return {corr, device, start, end};
}

TEST(KernelCorrelator, SingleCallGetsItsKernelOnceAfterAQuietRound) {
  KernelCorrelator c;
  Collected out;
  c.AddExternalCorrelation(7, 1001);
  c.AddKernel(Kernel(7, 0, 100, 200));
  c.Match(false, out.emit());
  EXPECT_TRUE(out.by_uid.empty()) << "a span is held until it stops growing";
  c.Match(false, out.emit());
  ASSERT_EQ(out.by_uid.size(), 1u);
  const GpuTimeRecord& r = out.by_uid[1001].at(0);
  EXPECT_EQ(r.start_ns, 100);
  EXPECT_EQ(r.end_ns, 200);
  EXPECT_EQ(r.source, static_cast<uint8_t>(GpuTimeSource::kCupti));
  c.Match(false, out.emit());
  EXPECT_EQ(out.by_uid[1001].size(), 1u) << "emitted exactly once";
  EXPECT_EQ(c.stats().matched, 1u);
}

TEST(KernelCorrelator, KernelBeforeItsCorrelationRecordStillMatches) {
  KernelCorrelator c;
  Collected out;
  c.AddKernel(Kernel(9, 1, 500, 900));  // the kernel buffer came first
  c.Match(false, out.emit());
  EXPECT_EQ(c.pending_kernels(), 1u);
  c.AddExternalCorrelation(9, 42);  // the API record's buffer, one round later
  c.Match(false, out.emit());
  c.Match(false, out.emit());
  ASSERT_EQ(out.by_uid.count(42), 1u);
  EXPECT_EQ(out.by_uid[42][0].start_ns, 500);
  EXPECT_EQ(c.stats().unmatched, 0u);
}

// A collective that waits minutes for a late rank: its kernel record comes only when it ends,
// long after its launch was tied to the call (a quiet job keeps that tie), and a group's
// scope must still be known then.
TEST(KernelCorrelator, AKernelEndingLongAfterItsLaunchStillMatches) {
  KernelCorrelator c;
  Collected out;
  c.AddExternalCorrelation(11, 77);
  c.AddGroup(kGroupTag | 5, {{78, 0}, {79, 1}});
  c.AddExternalCorrelation(12, kGroupTag | 5);
  for (int i = 0; i < 1000; ++i) c.Match(false, out.emit());  // 200 s at 200 ms a round
  c.AddKernel(Kernel(11, 0, 100, 300'000'000'000));
  c.AddKernel(Kernel(12, 1, 200, 300'000'000'000));
  c.Match(false, out.emit());
  c.Match(false, out.emit());
  ASSERT_EQ(out.by_uid.count(77), 1u);
  ASSERT_EQ(out.by_uid.count(79), 1u) << "the group member on the kernel's device";
  EXPECT_EQ(out.by_uid[79][0].start_ns, 200);
  EXPECT_EQ(c.stats().unmatched, 0u);
}

// PyTorch on 2×H200: CUPTI delivered the kernel records at once and the launch records only at
// the final forced flush, many rounds later; the kernels must wait for them.
TEST(KernelCorrelator, KernelWaitsForALateCorrelationWhenNoNonblockingScopeWaits) {
  KernelCorrelator c;
  Collected out;
  c.AddKernel(Kernel(9, 1, 500, 900));
  for (int i = 0; i < 20; ++i) c.Match(false, out.emit());
  EXPECT_EQ(c.pending_kernels(), 1u);
  EXPECT_EQ(c.stats().unmatched, 0u);
  c.AddExternalCorrelation(9, 42);
  c.Match(true, out.emit());
  ASSERT_EQ(out.by_uid.count(42), 1u);
  EXPECT_EQ(out.by_uid[42][0].end_ns, 900);
  EXPECT_EQ(c.stats().unmatched, 0u);
}

TEST(KernelCorrelator, GroupMembersGetTheSpanOfTheirOwnDevice) {
  // One thread drives two GPUs: the group's GroupEnd launches one kernel per device, and a
  // second (split) kernel on device 0.
  KernelCorrelator c;
  Collected out;
  const uint64_t g = kGroupTag | 1;
  c.AddGroup(g, {{11, 0}, {12, 0}, {21, 1}});
  c.AddExternalCorrelation(1, g);
  c.AddExternalCorrelation(2, g);
  c.AddExternalCorrelation(3, g);
  c.AddKernel(Kernel(1, 0, 1000, 1500));
  c.AddKernel(Kernel(2, 1, 1100, 1700));
  c.AddKernel(Kernel(3, 0, 1600, 2000));
  c.Match(false, out.emit());
  c.Match(false, out.emit());
  ASSERT_EQ(out.by_uid.size(), 3u);
  EXPECT_EQ(out.by_uid[11][0].start_ns, 1000);
  EXPECT_EQ(out.by_uid[11][0].end_ns, 2000);
  EXPECT_EQ(out.by_uid[12][0].end_ns, 2000);
  EXPECT_EQ(out.by_uid[21][0].start_ns, 1100);
  EXPECT_EQ(out.by_uid[21][0].end_ns, 1700);
}

TEST(KernelCorrelator, NonblockingScopesTakeUncorrelatedKernelsInOrder) {
  // Nonblocking comms: NCCL's own thread launches, so the kernels carry no id.
  KernelCorrelator c;
  Collected out;
  c.AddNonblockingScope(501, {{501, 0}});
  c.AddNonblockingScope(502, {{502, 0}});
  c.AddNonblockingScope(kGroupTag | 3, {{601, 1}, {602, 1}});
  c.AddKernel(Kernel(70, 0, 10, 20));
  c.AddKernel(Kernel(71, 1, 15, 30));
  c.AddKernel(Kernel(72, 0, 25, 40));
  c.Match(false, out.emit());  // not yet: their correlation may still come
  c.Match(false, out.emit());
  EXPECT_TRUE(out.by_uid.empty());
  c.Match(false, out.emit());  // now they are uncorrelated; their spans close a round later
  c.Match(false, out.emit());
  ASSERT_EQ(out.by_uid.size(), 4u);
  EXPECT_EQ(out.by_uid[501][0].start_ns, 10);
  EXPECT_EQ(out.by_uid[502][0].start_ns, 25);
  EXPECT_EQ(out.by_uid[601][0].start_ns, 15);
  EXPECT_EQ(out.by_uid[602][0].end_ns, 30);
}

TEST(KernelCorrelator, NonblockingScopeThatLaunchedInlineLeavesTheQueue) {
  KernelCorrelator c;
  Collected out;
  c.AddNonblockingScope(801, {{801, 0}});
  c.AddNonblockingScope(802, {{802, 0}});
  c.AddExternalCorrelation(5, 801);  // 801 launched on the calling thread after all
  c.AddKernel(Kernel(5, 0, 100, 110));
  c.AddKernel(Kernel(6, 0, 120, 130));  // uncorrelated: must go to 802, not 801
  c.Match(true, out.emit());
  EXPECT_EQ(out.by_uid[801].at(0).start_ns, 100);
  EXPECT_EQ(out.by_uid[802].at(0).start_ns, 120);
}

TEST(KernelCorrelator, GraphLaunchMatchesKernelsToTemplatesInCaptureOrder) {
  KernelCorrelator c;
  Collected out;
  const uint64_t graph = 0xabc;
  c.AddGraphTemplate(graph, {1, 0}, 0);   // unit 0
  c.AddGraphTemplate(graph, {2, 0}, 77);  // unit 1: a group of two calls
  c.AddGraphTemplate(graph, {3, 0}, 77);
  c.AddGraphTemplate(graph, {4, 1}, 0);  // another device
  for (uint64_t launch = 1; launch <= 2; ++launch) {
    const uint64_t ext = kGraphLaunchTag | launch;
    c.AddGraphLaunch(ext, graph);
    const int64_t base = static_cast<int64_t>(launch) * 10000;
    c.AddExternalCorrelation(static_cast<uint32_t>(launch), ext);
    // Delivered out of start order.
    c.AddKernel(Kernel(static_cast<uint32_t>(launch), 0, base + 500, base + 600));
    c.AddKernel(Kernel(static_cast<uint32_t>(launch), 0, base + 100, base + 200));
    c.AddKernel(Kernel(static_cast<uint32_t>(launch), 1, base + 150, base + 250));
  }
  c.Match(true, out.emit(), out.note());
  ASSERT_EQ(out.by_uid[1].size(), 2u) << "one record per template per launch";
  EXPECT_EQ(out.by_uid[1][0].start_ns, 10100);
  EXPECT_EQ(out.by_uid[2][0].start_ns, 10500);
  EXPECT_EQ(out.by_uid[3][0].end_ns, 10600);
  EXPECT_EQ(out.by_uid[4][0].start_ns, 10150);
  EXPECT_EQ(out.by_uid[1][1].start_ns, 20100);
  EXPECT_TRUE(out.notes.empty());
}

TEST(KernelCorrelator, GraphLaunchWithUnexpectedKernelCountGivesTheSpanAndSaysSo) {
  KernelCorrelator c;
  Collected out;
  c.AddGraphTemplate(5, {1, 0}, 0);
  c.AddGraphTemplate(5, {2, 0}, 0);
  c.AddGraphLaunch(kGraphLaunchTag | 9, 5);
  c.AddExternalCorrelation(3, kGraphLaunchTag | 9);
  c.AddKernel(Kernel(3, 0, 100, 300));  // one kernel for two units
  c.Match(true, out.emit(), out.note());
  EXPECT_EQ(out.by_uid[1][0].start_ns, 100);
  EXPECT_EQ(out.by_uid[2][0].end_ns, 300);
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("1 NCCL kernels on device 0 for 2"), std::string::npos)
      << out.notes[0];
  EXPECT_EQ(c.stats().graph_count_mismatches, 1u);
}

TEST(KernelCorrelator, KernelsNoCallExplainsAreCountedAndNoted) {
  KernelCorrelator c;
  Collected out;
  c.AddExternalCorrelation(1, kGroupTag | 99);  // a group ncclrr never registered
  c.AddKernel(Kernel(1, 0, 1, 2));
  c.AddKernel(Kernel(2, 0, 3, 4));  // no correlation, no nonblocking scope waiting
  c.Match(true, out.emit(), out.note());
  EXPECT_TRUE(out.by_uid.empty());
  EXPECT_EQ(c.stats().unmatched, 2u);
  ASSERT_EQ(out.notes.size(), 1u);
}

// Bookkeeping is bounded: once more than 65,536 correlations gathered, those older than 64 rounds
// go (a kernel that names one then has no call).
TEST(KernelCorrelator, OldCorrelationsAreForgottenOnceManyGathered) {
  KernelCorrelator c;
  Collected out;
  for (uint32_t id = 1; id <= 70'000; ++id) c.AddExternalCorrelation(id, 5);
  for (int i = 0; i < 100; ++i) c.Match(false, out.emit());
  c.AddExternalCorrelation(70'001, 6);  // recent: kept
  c.Match(false, out.emit());
  c.AddKernel(Kernel(1, 0, 1, 2));  // far too late: the id was dropped
  c.AddKernel(Kernel(70'001, 0, 3, 4));
  c.Match(true, out.emit());
  EXPECT_EQ(out.by_uid.count(5), 0u);
  EXPECT_EQ(out.by_uid.count(6), 1u);
  EXPECT_EQ(c.stats().unmatched, 1u);
}

}  // namespace
}  // namespace ncclrr::gputiming
