// CompareRoutes on traces written through the real TraceWriter: one file per route.
#include "route_compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ncclrr/trace/trace_writer.h"

namespace ncclrr::profiler::test {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, Route route, uint64_t comm, const std::vector<uint64_t>& counts,
           uint8_t origin, Api api = Api::kAllReduce) {
  WriterOptions o;
  o.dir = dir.string();
  o.header.route = route;
  o.overflow = OverflowPolicy::kBlock;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok()) << w.status().message();
  Record r{};
  r.kind = RecordKind::kComm;
  r.comm.comm_id = comm;
  r.comm.nranks = 2;
  r.comm.origin = origin;
  r.comm.nccl_hash_known = 1;
  (*w)->Append(r);
  for (size_t i = 0; i < counts.size(); ++i) {
    CallRecord c{};
    c.uid = (*w)->NextCallUid();
    c.comm_id = comm;
    c.api = static_cast<uint16_t>(api);
    c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
    c.count = counts[i];
    c.seq = i;
    c.root_peer = -1;
    (*w)->AppendCall(c);
  }
  ASSERT_TRUE((*w)->Close().ok());
}

class RouteCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("ncclrr-routes-" + std::to_string(getpid()));
    fs::remove_all(base_);
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path base_;
};

TEST_F(RouteCompare, SameCallsOnTheSameCommAgree) {
  Write(base_ / "plugin", Route::kProfilerPlugin, 0xabc, {1, 2, 3}, 0);
  Write(base_ / "preload", Route::kPreload, 0xabc, {1, 2, 3},
        static_cast<uint8_t>(CommOrigin::kSplit));
  auto cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_TRUE(cmp.ok()) << cmp.status().message();
  EXPECT_TRUE(cmp->agree) << cmp->Report();
  EXPECT_NE(cmp->Report().find("Split 1/1"), std::string::npos) << cmp->Report();
}

TEST_F(RouteCompare, DifferentHashesOrCallsDiffer) {
  Write(base_ / "plugin", Route::kProfilerPlugin, 0xabc, {1, 2, 3}, 0);
  Write(base_ / "preload", Route::kPreload, 0xdef, {1, 2, 3},
        static_cast<uint8_t>(CommOrigin::kInitRank));
  auto cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_TRUE(cmp.ok());
  EXPECT_FALSE(cmp->agree);
  EXPECT_NE(cmp->Report().find("plugin-only"), std::string::npos) << cmp->Report();
  EXPECT_NE(cmp->Report().find("InitRank 0/1"), std::string::npos) << cmp->Report();

  fs::remove_all(base_);
  Write(base_ / "plugin", Route::kProfilerPlugin, 0xabc, {1, 5, 3}, 0);
  Write(base_ / "preload", Route::kPreload, 0xabc, {1, 2, 3}, 0);
  cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_TRUE(cmp.ok());
  EXPECT_FALSE(cmp->agree);
  EXPECT_NE(cmp->Report().find("call 1"), std::string::npos) << cmp->Report();
}

TEST_F(RouteCompare, BcastIsTheBroadcastThePluginSees) {
  Write(base_ / "plugin", Route::kProfilerPlugin, 0xabc, {4, 4}, 0, Api::kBroadcast);
  Write(base_ / "preload", Route::kPreload, 0xabc, {4, 4}, 0, Api::kBcast);
  auto cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_TRUE(cmp.ok()) << cmp.status().message();
  EXPECT_TRUE(cmp->agree) << cmp->Report();

  fs::remove_all(base_);
  Write(base_ / "plugin", Route::kProfilerPlugin, 0xabc, {4, 4}, 0, Api::kReduce);
  Write(base_ / "preload", Route::kPreload, 0xabc, {4, 4}, 0, Api::kBcast);
  cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_TRUE(cmp.ok());
  EXPECT_FALSE(cmp->agree) << cmp->Report();
}

TEST_F(RouteCompare, NoPluginCallsSaysWhy) {
  Write(base_ / "plugin", Route::kPreload, 0xabc, {1}, 0);
  Write(base_ / "preload", Route::kPreload, 0xabc, {1}, 0);
  auto cmp = CompareRoutes((base_ / "plugin").string(), (base_ / "preload").string());
  ASSERT_FALSE(cmp.ok());
  EXPECT_NE(cmp.status().message().find("one rank"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr::profiler::test
