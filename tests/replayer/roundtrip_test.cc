// Record -> replay round trips: every ncclrr-example scenario recorded on the host NCCL with
// `ncclrr record`, then replayed in the recorded and canonical orders. Skipped while the record
// verb is not part of the build (scenarios_test.cc covers the same traces, scripted).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using ::testing::HasSubstr;

struct RoundTrip {
  const char* scenario;
  int recorded_exit;   // of `replay --order recorded`
  int canonical_exit;  // of `replay --order canonical`
};

void PrintTo(const RoundTrip& r, std::ostream* os) { *os << r.scenario; }

class RecordReplay : public ::testing::TestWithParam<RoundTrip> {};

bool RecordAvailable() {
  const std::string dir = FreshDir("record-probe");
  const CommandResult r = RunNcclrr("record -o " + dir + "/t -- true", true);
  return r.code == 0;
}

TEST_P(RecordReplay, RecordedReproducesCanonicalFixes) {
  static const bool available = RecordAvailable();
  if (!available) GTEST_SKIP() << "`ncclrr record` is not in this build yet";
  const RoundTrip t = GetParam();
  const std::string dir = FreshDir(std::string("rt-") + t.scenario) + "/trace";
  const char* bin = std::getenv("NCCLRR_TEST_BIN");
  const CommandResult rec = RunNcclrr(
      "record -o " + dir + " -- env NCCLRR_HOST_TIMEOUT_MS=300 " + "NCCLRR_EXAMPLE_WATCHDOG_S=5 " +
          (bin ? bin : "build/bin") + "/ncclrr-example " + t.scenario,
      true);
  ASSERT_NE(rec.code, 125) << rec.out;  // ncclrr itself failed
  const CommandResult r1 = RunNcclrr("replay " + dir + " --order recorded --timeout 1", true);
  EXPECT_EQ(r1.code, t.recorded_exit) << r1.out;
  const CommandResult r2 = RunNcclrr("replay " + dir + " --order canonical --timeout 1", true);
  EXPECT_EQ(r2.code, t.canonical_exit) << r2.out;
  if (t.recorded_exit == 1) {
    EXPECT_THAT(r1.out, ::testing::AnyOf(HasSubstr("recorded order: wrong"),
                                         HasSubstr("recorded order: hang")));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Examples, RecordReplay,
    ::testing::Values(RoundTrip{"clean", 0, 0}, RoundTrip{"swap-same-size", 1, 0},
                      RoundTrip{"swap-diff-size", 1, 0}, RoundTrip{"count-mismatch", 1, 1},
                      RoundTrip{"missing-collective", 1, 1}, RoundTrip{"send-race", 0, 0},
                      RoundTrip{"dtype-mismatch", 1, 1}, RoundTrip{"root-mismatch", 1, 1},
                      RoundTrip{"p2p-mismatch", 1, 1}, RoundTrip{"cross-comm-order", 1, 0}),
    [](const auto& test) {
      std::string n = test.param.scenario;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace ncclrr::testing
