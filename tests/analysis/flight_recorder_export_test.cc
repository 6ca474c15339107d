// `export --format flight-recorder`: the dumps are parsed back with nlohmann::json and checked
// for what PyTorch's fr_trace reads (torch/distributed/flight_recorder/components: loader,
// builder, types.py's Op and EntryState): file names, version, pg_config ranks strings, entry
// fields and their types, profiling names it accepts, sequence ids that pair across ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ncclrr/analysis/flight_recorder_export.h"
#include "scenario_model.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// torch/distributed/flight_recorder/components/types.py COLLECTIVES and P2P (the subset NCCL
// calls map to).
const std::set<std::string> kFrOps = {
    "broadcast", "reduce",  "_all_gather_base", "all_reduce", "_reduce_scatter_base",
    "gather",    "scatter", "all_to_all",       "send",       "recv"};

std::map<int, json> ExportAndRead(const std::string& scenario,
                                  analysis::FlightRecorderStats* st = nullptr) {
  auto model = LoadScenario(scenario);
  if (!model) return {};
  const fs::path dir = ScenarioDir(scenario + "-fr");
  fs::remove_all(dir);
  EXPECT_TRUE(analysis::ExportFlightRecorder(*model, dir.string(),
                                             analysis::FlightRecorderEncoding::kJson, st)
                  .ok());
  std::map<int, json> dumps;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.rfind("nccl_trace_rank_", 0), 0u) << name;
    std::ifstream in(e.path());
    dumps[std::stoi(name.substr(16))] = json::parse(in);  // throws on invalid JSON
  }
  fs::remove_all(dir);
  return dumps;
}

void ExpectFrShape(const json& d) {
  EXPECT_EQ(d.at("version").get<std::string>(), "2.10");
  ASSERT_TRUE(d.at("comm_lib_version").is_string());
  for (const auto& [pg, cfg] : d.at("pg_config").items()) {
    EXPECT_EQ(cfg.at("name").get<std::string>(), pg);
    EXPECT_TRUE(cfg.at("desc").is_string());
    const std::string ranks = cfg.at("ranks");  // ast.literal_eval'd by fr_trace
    EXPECT_EQ(ranks.front(), '[');
    EXPECT_EQ(ranks.back(), ']');
  }
  for (const auto& [pg_id, st] : d.at("pg_status").items())
    for (const char* k :
         {"last_enqueued_collective", "last_started_collective", "last_completed_collective"})
      EXPECT_TRUE(st.at(k).is_string()) << k;
  int64_t record = 0, last_time = 0;
  for (const json& e : d.value("entries", json::array())) {
    EXPECT_EQ(e.at("record_id").get<int64_t>(), record++);
    EXPECT_TRUE(e.at("pg_id").is_number_integer());
    ASSERT_EQ(e.at("process_group").size(), 2u);
    EXPECT_TRUE(d.at("pg_config").contains(e.at("process_group")[0].get<std::string>()));
    const std::string name = e.at("profiling_name");
    ASSERT_EQ(name.rfind("nccl:", 0), 0u) << name;
    EXPECT_TRUE(kFrOps.count(name.substr(5, name.find(' ') - 5))) << name;
    for (const char* k :
         {"collective_seq_id", "p2p_seq_id", "op_id", "time_created_ns",
          "time_discovered_started_ns", "time_discovered_completed_ns", "timeout_ms"})
      EXPECT_TRUE(e.at(k).is_number_integer()) << k;
    for (const char* k : {"input_sizes", "output_sizes"}) {
      ASSERT_TRUE(e.at(k).is_array()) << k;
      EXPECT_TRUE(e.at(k)[0].is_array()) << k;
    }
    EXPECT_TRUE(e.at("input_dtypes")[0].is_string());
    EXPECT_TRUE(e.at("output_dtypes")[0].is_string());
    EXPECT_TRUE(std::set<std::string>({"scheduled", "started", "completed"})
                    .count(e.at("state").get<std::string>()));
    EXPECT_TRUE(e.at("retired").is_boolean());
    EXPECT_EQ(e.at("is_p2p").get<bool>(),
              name.rfind("nccl:send", 0) == 0 || name.rfind("nccl:recv", 0) == 0);
    EXPECT_GE(e.at("time_created_ns").get<int64_t>(), last_time);
    last_time = e.at("time_created_ns");
  }
}

TEST(FlightRecorderExport, OneDumpPerRankInFlightRecorderShape) {
  analysis::FlightRecorderStats st;
  const auto dumps = ExportAndRead("clean_many_comms", &st);
  ASSERT_FALSE(dumps.empty());
  EXPECT_EQ(st.files, dumps.size());
  int rank = 0;
  uint64_t entries = 0;
  for (const auto& [r, d] : dumps) {
    EXPECT_EQ(r, rank++);  // global ranks 0..N-1
    ExpectFrShape(d);
    entries += d.value("entries", json::array()).size();
  }
  EXPECT_EQ(entries, st.entries);
  // Every rank describes each process group with the same members; seq ids pair the same op.
  std::map<std::string, std::string> members;
  std::map<std::pair<std::string, int64_t>, std::string> op_at;
  for (const auto& [r, d] : dumps) {
    for (const auto& [pg, cfg] : d.at("pg_config").items()) {
      const std::string ranks = cfg.at("ranks").get<std::string>();
      auto [it, added] = members.emplace(pg, ranks);
      EXPECT_EQ(it->second, ranks) << "pg " << pg;
    }
    for (const json& e : d.at("entries")) {
      if (e.at("is_p2p")) continue;
      const auto key = std::make_pair(e.at("process_group")[0].get<std::string>(),
                                      e.at("collective_seq_id").get<int64_t>());
      auto [it, added] = op_at.emplace(key, e.at("profiling_name"));
      EXPECT_EQ(it->second, e.at("profiling_name").get<std::string>())
          << "pg " << key.first << " seq " << key.second;
      EXPECT_GE(key.second, 1);  // FR's sequence ids start at 1
      EXPECT_EQ(e.at("state").get<std::string>(),
                "completed");  // the synthetic processes ended cleanly
    }
  }
}

TEST(FlightRecorderExport, SendsAndRecvsNameTheirPeers) {
  const auto dumps = ExportAndRead("p2p_mismatch");
  ASSERT_FALSE(dumps.empty());
  std::multiset<std::string> sends, recvs;  // "src->dst" as group ranks
  for (const auto& [r, d] : dumps) {
    ExpectFrShape(d);
    for (const json& e : d.value("entries", json::array())) {
      const std::string name = e.at("profiling_name");
      if (name.rfind("nccl:send ", 0) == 0) sends.insert(name.substr(10));
      if (name.rfind("nccl:recv ", 0) == 0) {
        const std::string dr = name.substr(10);  // "dst<-src"
        const size_t arrow = dr.find("<-");
        recvs.insert(dr.substr(arrow + 2) + "->" + dr.substr(0, arrow));
      }
    }
  }
  EXPECT_FALSE(sends.empty());
  EXPECT_FALSE(recvs.empty());
  // The scenario's mismatch leaves some unpaired, but most sends have their recv.
  std::multiset<std::string> common;
  for (const std::string& s : sends)
    if (recvs.count(s)) common.insert(s);
  EXPECT_FALSE(common.empty());
}

TEST(FlightRecorderExport, PyTorchNames) {
  EXPECT_EQ(analysis::FlightRecorderProfilingName(Api::kAllReduce, 0, -1), "nccl:all_reduce");
  EXPECT_EQ(analysis::FlightRecorderProfilingName(Api::kBcast, 0, 1), "nccl:broadcast");
  EXPECT_EQ(analysis::FlightRecorderProfilingName(Api::kSend, 2, 3), "nccl:send 2->3");
  EXPECT_EQ(analysis::FlightRecorderProfilingName(Api::kRecv, 3, 2), "nccl:recv 3<-2");
  EXPECT_EQ(analysis::FlightRecorderProfilingName(Api::kCommInitRank, 0, -1), "");
  EXPECT_EQ(analysis::FlightRecorderDtype(static_cast<uint8_t>(Dtype::kFloat32)), "Float");
  EXPECT_EQ(analysis::FlightRecorderDtype(static_cast<uint8_t>(Dtype::kBfloat16)), "BFloat16");
  EXPECT_EQ(analysis::FlightRecorderDtype(static_cast<uint8_t>(Dtype::kInt64)), "Long");
}

}  // namespace
}  // namespace ncclrr::testing
