// Small pieces of the replayer: order syntax, the --json layout, the ring arena, and the
// synthetic values that must stay exact under reduction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "data.h"
#include "ncclrr/replay/options.h"
#include "ncclrr/replay/report.h"
#include "ring_arena.h"

namespace ncclrr::replay {
namespace {

using ::testing::HasSubstr;

TEST(OrderSpecs, Parse) {
  auto s = ParseOrderSpecs("recorded,canonical,permute,permute:3,file:/a,b.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 5u);
  EXPECT_EQ((*s)[2].Label(), "permute:8");
  EXPECT_EQ((*s)[3].trials, 3);
  EXPECT_EQ((*s)[4].file, "/a,b.json");  // a file takes the rest, commas included
  for (const char* bad : {"", "sideways", "permute:0", "permute:x", "file:", "recorded,"}) {
    auto r = ParseOrderSpecs(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_THAT(ParseOrderSpecs("sideways").status().message(),
              HasSubstr("expected recorded, canonical, permute, permute:N or file:PATH"));
}

// A report with every kind of member: the --json layout (member order, indentation, numbers,
// nulls, the embedded order file) is part of the interface and must not drift.
ReplayReport LayoutReport() {
  ReplayReport rep;
  rep.trace = "/traces/caf\xc3\xa9 \"q\"";
  rep.options.timeout_s = 0.3;
  rep.options.seed = 7;
  rep.recorded_nccl_version = 22105;
  rep.replay_nccl_version = 22304;
  rep.ranks = 2;
  rep.comms = 1;
  rep.calls = 32;
  rep.warnings = {"a note", "tab\there"};
  rep.include_timing = true;
  rep.mode = "one process, a thread per rank";
  OrderResult rec;
  rec.order = "recorded";
  rec.outcome = Outcome::kWrong;
  rec.calls = 32;
  rec.checked_calls = 32;
  rec.wrong_calls = 1;
  rec.wrong_elements = 1024;
  rec.steps = 4;
  rec.wrong_steps = 1;
  rec.wrong_step_list = {1};
  rec.explanation = {"seq 4\u20135 swapped on rank 1"};
  rec.wrong = {WrongCall{0x7e57000000000001, "dp", 4, 1, "AllReduce(1024 float32, sum)",
                         "tensor 1, step 1", 1024, 1024, 0, 0.1, std::nan(""), true}};
  rec.reproduced = false;
  rec.seconds = 1.25;
  rec.setup_seconds = 1e-9;
  rec.bus_bytes = 3e12;
  OrderResult trial;
  trial.order = "permute:2";
  trial.trial = 1;
  trial.trial_seed = 18446744073709551615ull;
  trial.outcome = Outcome::kHang;
  trial.moved_calls = 2;
  trial.stuck = {StuckCall{0x7e57000000000001, "", 5, 0, "AllReduce(8 float32, sum)",
                           "ranks [1] have not issued seq 5"}};
  trial.order_json =
      R"({"format":"ncclrr-order","version":1,"ranks":[{"comm":"0x7e57000000000001","rank":1,)"
      R"("sequence":[{"comm":"0x7e57000000000001","seq":1},{"comm":"0x7e57000000000001",)"
      R"("send_to":0,"n":0}]}]})";
  OrderResult error;
  error.order = "file:/o.json";
  error.outcome = Outcome::kError;
  error.error = "cannot open";
  error.calls = 5;  // where it stopped
  error.checked_calls = 4;
  rep.results = {rec, trial, error};
  return rep;
}

// The bytes the replayer's own JSON type wrote before the report moved to JsonWriter; the one
// difference is the writer's escaping rule: a tab is "\t" (it was "\u0009"), the same string.
constexpr const char* kLayoutJson = R"json({
  "trace": "/traces/café \"q\"",
  "backend": "host",
  "data": "synthetic",
  "seed": 7,
  "verify": true,
  "timeout_s": 0.29999999999999999,
  "mode": "one process, a thread per rank",
  "nccl_version": {
    "recorded": 22105,
    "replay": 22304
  },
  "ranks": 2,
  "communicators": 1,
  "trace_calls": 32,
  "left_out_calls": 0,
  "notes": [
    "a note",
    "tab\there"
  ],
  "results": [
    {
      "order": "recorded",
      "trial": null,
      "trial_seed": null,
      "outcome": "wrong",
      "verdict": "1 of 4 steps wrong: 1 (seq 4–5 swapped on rank 1)",
      "error": null,
      "calls": 32,
      "checked_calls": 32,
      "wrong_calls": 1,
      "#wrong": 1024,
      "steps": 4,
      "wrong_steps": 1,
      "wrong_step_list": [
        1
      ],
      "moved_calls": 0,
      "reproduced": false,
      "reproduced_calls": 0,
      "unreproduced_calls": 0,
      "explanation": [
        "seq 4–5 swapped on rank 1"
      ],
      "wrong": [
        {
          "comm": "0x7e57000000000001",
          "comm_name": "dp",
          "seq": 4,
          "rank": 1,
          "call": "AllReduce(1024 float32, sum)",
          "logical": "tensor 1, step 1",
          "#wrong": 1024,
          "checked": 1024,
          "first_wrong": {
            "index": 0,
            "got": 0.10000000000000001,
            "expected": null
          },
          "args_differ": true
        }
      ],
      "stuck": [],
      "timing": {
        "seconds": 1.25,
        "setup_seconds": 1.0000000000000001e-09,
        "bus_bytes": 3000000000000,
        "bus_gbps": 2400
      }
    },
    {
      "order": "permute:2",
      "trial": 1,
      "trial_seed": 18446744073709551615,
      "outcome": "hang",
      "verdict": "hangs at seq 5 of comm 0x7e57000000000001 on rank 0",
      "error": null,
      "calls": 0,
      "checked_calls": 0,
      "wrong_calls": 0,
      "#wrong": 0,
      "steps": 0,
      "wrong_steps": 0,
      "wrong_step_list": [],
      "moved_calls": 2,
      "reproduced": null,
      "reproduced_calls": 0,
      "unreproduced_calls": 0,
      "explanation": [],
      "wrong": [],
      "stuck": [
        {
          "comm": "0x7e57000000000001",
          "comm_name": "",
          "seq": 5,
          "rank": 0,
          "call": "AllReduce(8 float32, sum)",
          "why": "ranks [1] have not issued seq 5"
        }
      ],
      "order_file": {
        "format": "ncclrr-order",
        "version": 1,
        "ranks": [
          {
            "comm": "0x7e57000000000001",
            "rank": 1,
            "sequence": [
              {
                "comm": "0x7e57000000000001",
                "seq": 1
              },
              {
                "comm": "0x7e57000000000001",
                "send_to": 0,
                "n": 0
              }
            ]
          }
        ]
      },
      "timing": {
        "seconds": 0,
        "setup_seconds": 0,
        "bus_bytes": 0,
        "bus_gbps": 0
      }
    },
    {
      "order": "file:/o.json",
      "trial": null,
      "trial_seed": null,
      "outcome": "error",
      "verdict": "error: cannot open",
      "error": "cannot open",
      "calls": 5,
      "checked_calls": 4,
      "wrong_calls": 0,
      "#wrong": 0,
      "steps": 0,
      "wrong_steps": 0,
      "wrong_step_list": [],
      "moved_calls": 0,
      "reproduced": null,
      "reproduced_calls": 0,
      "unreproduced_calls": 0,
      "explanation": [],
      "wrong": [],
      "stuck": [],
      "timing": {
        "seconds": 0,
        "setup_seconds": 0,
        "bus_bytes": 0,
        "bus_gbps": 0
      }
    }
  ],
  "summary": "recorded order: 1 of 4 steps wrong: 1 (seq 4–5 swapped on rank 1); permute:2: 0 of 1 trials wrong, 1 hang; file:/o.json order: error: cannot open",
  "exit_code": 2
}
)json";

TEST(ReportJson, LayoutIsStable) {
  EXPECT_EQ(FormatJson(LayoutReport()), kLayoutJson);
  EXPECT_EQ(ErrorJson("no \"trace\" here"),
            std::string(R"({"error":"no \"trace\" here","exit_code":2})") + "\n");
}

TEST(RingArena, AllocatesAndFreesInOrder) {
  RingArena a(1000);
  EXPECT_EQ(a.Allocate(400), 0u);
  EXPECT_EQ(a.Allocate(400), 400u);
  EXPECT_FALSE(a.Allocate(400).has_value());  // 200 left at the end, nothing at the front
  a.FreeOldest();
  EXPECT_EQ(a.Allocate(300), 0u);  // wraps to the front
  EXPECT_FALSE(a.Allocate(200).has_value());
  a.FreeOldest();
  EXPECT_EQ(a.Allocate(500), 300u);
  EXPECT_FALSE(a.Allocate(2000).has_value());
  a.FreeOldest();
  a.FreeOldest();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.Allocate(1000), 0u);
}

// Synthetic inputs are small integers: exact in every type, sums over 16 ranks exact in
// float32 and bfloat16, and the same for the same (seed, key, rank, index).
TEST(SyntheticData, ExactAndDeterministic) {
  for (uint8_t dtype = 0; dtype < kNumDtypes; ++dtype) {
    double sum = 0;
    for (int rank = 0; rank < 16; ++rank)
      for (uint64_t i = 0; i < 64; ++i) {
        const double v = SyntheticValue(7, 42, rank, i, dtype, false);
        EXPECT_EQ(v, std::trunc(v));
        EXPECT_EQ(v, SyntheticValue(7, 42, rank, i, dtype, false));
        if (dtype == static_cast<uint8_t>(Dtype::kBfloat16)) sum += v;
      }
    EXPECT_LE(std::fabs(sum), 16 * 64 * 8.0);
  }
  for (int i = 0; i < 100; ++i) {
    const double p = SyntheticValue(1, 2, 3, static_cast<uint64_t>(i), 7, true);
    EXPECT_TRUE(p == -2 || p == -1 || p == 1 || p == 2) << p;
  }
  EXPECT_NE(SyntheticValue(1, 2, 0, 0, 7, false) + SyntheticValue(1, 2, 0, 1, 7, false) +
                SyntheticValue(1, 2, 0, 2, 7, false),
            SyntheticValue(2, 2, 0, 0, 7, false) + SyntheticValue(2, 2, 0, 1, 7, false) +
                SyntheticValue(2, 2, 0, 2, 7, false));
}

}  // namespace
}  // namespace ncclrr::replay
