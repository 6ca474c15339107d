#pragma once
// Writes one of the golden scenarios (scenarios.h) to a temporary directory and loads it: the
// export tests start from the same traces the golden tests check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "ncclrr/analysis/model.h"
#include "scenarios.h"

namespace ncclrr::testing {

inline std::filesystem::path ScenarioDir(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("ncclrr-export-" + std::to_string(getpid()) + "-" + name);
}

inline std::optional<analysis::TraceModel> LoadScenario(const std::string& name) {
  for (const Scenario& s : GoldenScenarios()) {
    if (s.name != name) continue;
    SyntheticScript script = s.build();
    script.dir = ScenarioDir(name).string();
    std::filesystem::remove_all(script.dir);
    auto written = WriteSyntheticScript(script);
    if (!written.ok()) {
      ADD_FAILURE() << written.status().message();
      return std::nullopt;
    }
    auto model = analysis::TraceModel::Load(script.dir);
    std::filesystem::remove_all(script.dir);
    if (!model.ok()) {
      ADD_FAILURE() << model.status().message();
      return std::nullopt;
    }
    return std::move(model.value());
  }
  ADD_FAILURE() << "no scenario " << name;
  return std::nullopt;
}

}  // namespace ncclrr::testing
