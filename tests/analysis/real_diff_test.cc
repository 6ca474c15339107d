// `diff` of traces recorded from real jobs (tests/data/real/README.md): a clean run against a
// run with a bug finds the bug's divergence at the right communicator and seq, two recordings of
// one job with GPU times (CUPTI and CUDA events) are equivalent, and every trace is equivalent
// to itself. The text of each pair is compared with tests/data/real/diff/<a>--<b>.txt
// (NCCLRR_UPDATE_GOLDEN=1 rewrites them).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "golden_file.h"
#include "ncclrr/analysis/trace_diff.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

fs::path RealDir() { return ncclrr::testing::SourceDataDir("tests/data/real"); }

struct RealPair {
  std::string a, b;
  std::vector<std::pair<DiffKind, uint64_t>> want;  // (kind, seq in run A), in report order
  bool json = false;                                // also a JSON golden
};

void PrintTo(const RealPair& p, std::ostream* os) { *os << p.a << " vs " << p.b; }

class RealDiffTest : public ::testing::TestWithParam<RealPair> {};

TEST_P(RealDiffTest, DiffFindsWhatChangedBetweenTheRuns) {
  const RealPair& p = GetParam();
  auto a = TraceModel::Load((RealDir() / p.a).string());
  auto b = TraceModel::Load((RealDir() / p.b).string());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  DiffOptions o;
  o.stable = true;
  const DiffReport r = DiffTraces(*a, *b, o);
  const std::string text = FormatDiffText(r, *a, *b, {true, "", ""});
  ASSERT_EQ(r.divergences.size(), p.want.size()) << text;
  for (size_t i = 0; i < p.want.size(); ++i) {
    EXPECT_EQ(DiffKindName(r.divergences[i].kind), DiffKindName(p.want[i].first)) << text;
    EXPECT_EQ(r.divergences[i].seq_a, p.want[i].second) << text;
  }
  EXPECT_EQ(r.ExitCode(), p.want.empty() ? 0 : 1);
  const std::string base = p.a + "--" + p.b;
  ncclrr::testing::ExpectGolden(RealDir() / "diff" / (base + ".txt"), text);
  if (p.json)
    ncclrr::testing::ExpectGolden(RealDir() / "diff" / (base + ".json"),
                                  FormatDiffJson(r, *a, *b, {true, "", ""}));
}

INSTANTIATE_TEST_SUITE_P(
    Real, RealDiffTest,
    ::testing::Values(
        // Rank 1 swapped two same-size gradients at steps 5, 12 and 20: the shapes agree, so
        // only check's suspected_swap (crossed buffers) in run B shows it.
        RealPair{"grad-clean", "grad-swap-same", {{DiffKind::kOrder, 56}}},
        // Two sizes swapped once: the order differs at seq 56, then the job hung.
        RealPair{"grad-clean",
                 "grad-swap-diff",
                 {{DiffKind::kOrder, 56}, {DiffKind::kMissingCall, 64}},
                 true},
        // A rank-dependent extra psum hung JAX: each rank stopped where it blocked.
        RealPair{"jax-clean", "jax-branch", {{DiffKind::kMissingCall, 8}}},
        // The same C++ job with a same-size swap (run A) and a different-size swap (run B).
        RealPair{"cpp-static-swap-same",
                 "cpp-static-swap-diff",
                 {{DiffKind::kOrder, 56}, {DiffKind::kMissingCall, 64}}},
        // One job recorded twice with GPU times (CUPTI, then CUDA events): timing noise and the
        // first call's connection setup are no difference.
        RealPair{"torch-gpu-stall", "torch-gpu-stall-events", {}},
        // A trace against itself, with sketches (data compared) and with three communicators.
        RealPair{"nccltests-sendrecv-sketch", "nccltests-sendrecv-sketch", {}},
        RealPair{"two-groups", "two-groups", {}}, RealPair{"grad-clean", "grad-clean", {}},
        // Two recordings a day apart of one clean job (DDP; JAX), and of one job with the same
        // swap, the second with Python call sites: nothing differs but what only one recorded.
        RealPair{"ddp-clean", "ddp-clean-pysites", {}},
        RealPair{"jax-clean", "jax-clean-pysites", {}},
        RealPair{"grad-swap-same", "grad-swap-same-pysites", {}},
        RealPair{"grad-clean", "grad-swap-same-pysites", {{DiffKind::kOrder, 56}}},
        // Rank 1 skipped a DDP step (7) in run B: the alignment places the skipped calls at the
        // last repeat of the step before the ranks visibly part (seq 29), and the message says
        // they may be any of the steps from seq 21 on.
        RealPair{"ddp-clean-gather", "ddp-skip-step", {{DiffKind::kMissingCall, 29}}},
        // Rank 1 launched a CUDA graph once more in run B and hung: its trace ends one call
        // after the eager call it lacks, from that launch: too few to call the eager call
        // skipped, and the message says so. (The job's source moved between the recordings:
        // every call site changed.)
        RealPair{"graph-clean",
                 "graph-extra",
                 {{DiffKind::kMissingCall, 16}, {DiffKind::kCallSite, 0}}}),
    [](const auto& param_info) {
      std::string n = param_info.param.a + "_vs_" + param_info.param.b;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace ncclrr::analysis
