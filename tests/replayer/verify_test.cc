// The verification's shared allreduce references (replayer/src/verify.h): a reference computed
// once and shared by every rank must give each rank exactly the verdict it would compute alone,
// and must go once the last rank of its call has verified.
#include "verify.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "plan.h"
#include "replay_scripts.h"

namespace ncclrr::replay {
namespace {

void ExpectSame(const CallCheck& a, const CallCheck& b, uint32_t call) {
  EXPECT_EQ(a.checked, b.checked) << "call " << call;
  EXPECT_EQ(a.wrong, b.wrong) << "call " << call;
  EXPECT_EQ(a.first_wrong, b.first_wrong) << "call " << call;
  EXPECT_EQ(std::memcmp(&a.got, &b.got, sizeof a.got), 0) << "call " << call;
  EXPECT_EQ(std::memcmp(&a.expected, &b.expected, sizeof a.expected), 0) << "call " << call;
}

// Every API, dtype and op, and a same-size swap and a count mismatch (a rank whose output is
// longer than the logical call's): shared and alone agree, element for element, on an output of
// zeros (every nonzero expected element wrong, the first one's value reported).
TEST(SharedReferences, EveryRankGetsTheVerdictItWouldComputeAlone) {
  for (const auto& [name, script] :
       {std::pair{"every-api", testing::EveryApiScript(3)},
        std::pair{"swap", testing::ExampleScript("swap-same-size", 4, 3)},
        std::pair{"count", testing::ExampleScript("count-mismatch", 4, 3)}}) {
    SCOPED_TRACE(name);
    auto model = testing::WriteAndLoad(script, std::string("verify-") + name);
    auto plan = BuildPlan(*model);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    auto data = DataSource::Create(*plan, DataMode::kSynthetic, 1);
    ASSERT_TRUE(data.ok()) << data.status().message();
    SharedReferences shared(true);
    uint32_t shared_allreduces = 0;
    for (uint32_t i = 0; i < plan->calls.size(); ++i) {
      const PlanCall& c = plan->calls[i];
      if (c.recv_elems == 0) continue;
      std::vector<char> zeros(c.recv_elems * DtypeSize(c.dtype), 0);
      shared_allreduces += shared.Acquire(*plan, c) != nullptr;
      shared.Release(c);  // (balances the probe above)
      ExpectSame(CheckCall(*plan, **data, c, zeros.data()),
                 CheckCall(*plan, **data, c, zeros.data(), &shared), i);
    }
    EXPECT_GT(shared_allreduces, 0u);
  }
}

TEST(SharedReferences, OneEntryPerLogicalCallUntilItsLastRankVerified) {
  auto model = testing::WriteAndLoad(testing::ExampleScript("clean", 4, 2), "verify-entries");
  auto plan = BuildPlan(*model);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const PlanComm& comm = plan->comms[plan->calls[0].comm];
  const LogicalColl* allreduce = nullptr;
  for (const LogicalColl& l : comm.logical)
    if (plan->calls[l.args].api == Api::kAllReduce) allreduce = &l;
  ASSERT_NE(allreduce, nullptr);
  ASSERT_EQ(allreduce->call_of_rank.size(), 4u);
  SharedReferences shared(true);
  std::vector<std::shared_ptr<SharedReferences::Entry>> held;
  for (uint32_t idx : allreduce->call_of_rank)
    held.push_back(shared.Acquire(*plan, plan->calls[idx]));
  ASSERT_NE(held[0], nullptr);
  for (const auto& e : held) EXPECT_EQ(e, held[0]);  // one entry for the four ranks
  EXPECT_EQ(held[0]->left, 4);
  for (uint32_t idx : allreduce->call_of_rank) shared.Release(plan->calls[idx]);
  EXPECT_EQ(held[0]->left, 0);
  // The entry was let go: the next acquire makes a new one.
  const auto again = shared.Acquire(*plan, plan->calls[allreduce->call_of_rank[0]]);
  EXPECT_NE(again, held[0]);
  EXPECT_EQ(again->left, 4);
  // Off (a process that replays only some ranks): every rank computes its own.
  SharedReferences off(false);
  EXPECT_EQ(off.Acquire(*plan, plan->calls[allreduce->call_of_rank[0]]), nullptr);
}

}  // namespace
}  // namespace ncclrr::replay
