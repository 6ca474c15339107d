#pragma once
// Golden files beside test data: the source tree's data folders, and comparing a text with the
// golden file (NCCLRR_UPDATE_GOLDEN=1 rewrites it instead).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ncclrr::testing {

inline std::filesystem::path SourceDataDir(const std::string& relative) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / relative;
}

inline void ExpectGolden(const std::filesystem::path& golden, const std::string& text) {
  if (const char* u = std::getenv("NCCLRR_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(golden) << text;
    return;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << golden << " is missing; run with NCCLRR_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), text) << "differs from " << golden;
}

}  // namespace ncclrr::testing
