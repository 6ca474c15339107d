// bench-export: the three `ncclrr export` formats side by side on one large synthetic trace.
//
//   bench-export [--ranks 8] [--calls 1000000] [--rounds 3] [--dir D]
//
// Writes an R-rank trace of N calls in total (allreduces of a 4-tensor training loop, one
// same-shape swap injected so there is a finding), loads and checks it once, then per round and
// per format measures the export (write to a file) and a full parse of what was written: the
// protobuf walked packet by packet and into every TrackEvent with a wire-format decoder, the
// JSON files tokenized with nlohmann::json's SAX parser (every value visited, no DOM: the
// JSON of a million calls would not fit in memory as a DOM here). Prints per-round numbers and
// medians. trace_processor is not available on the development machine, so "parse" stands in
// for a viewer's load time: it is the part that grows with the bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/flight_recorder_export.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/base/args.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "proto_decoder.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Counts every value; the parse is the cost being measured.
struct CountingSax : nlohmann::json_sax<nlohmann::json> {
  uint64_t values = 0;
  bool null() override { return ++values; }
  bool boolean(bool) override { return ++values; }
  bool number_integer(number_integer_t) override { return ++values; }
  bool number_unsigned(number_unsigned_t) override { return ++values; }
  bool number_float(number_float_t, const string_t&) override { return ++values; }
  bool string(string_t&) override { return ++values; }
  bool binary(binary_t&) override { return ++values; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    std::fprintf(stderr, "JSON parse error: %s\n", e.what());
    return false;
  }
};

uint64_t ParseJsonFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  CountingSax sax;
  if (!nlohmann::json::sax_parse(in, &sax)) std::exit(2);
  return sax.values;
}

// Packets, and the fields of each TrackEvent in them.
uint64_t ParseProtoFile(const fs::path& p) {
  using ncclrr::testing::DecodeProto;
  const std::string bytes = Slurp(p);
  uint64_t fields = 0;
  for (const auto& packet : DecodeProto(bytes))
    for (const auto& f : DecodeProto(packet.bytes)) {
      ++fields;
      if (f.number == 11) fields += DecodeProto(f.bytes).size();  // TracePacket.track_event
    }
  return fields;
}

uint64_t DirBytes(const fs::path& p) {
  if (!fs::is_directory(p)) return fs::file_size(p);
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(p)) n += fs::file_size(e.path());
  return n;
}

struct Format {
  const char* name;
  std::function<bool(const fs::path&)> write;
  std::function<uint64_t(const fs::path&)> parse;
};

}  // namespace

int main(int argc, char** argv) {
  int ranks = 8, rounds = 3;
  long long calls = 1'000'000;
  std::string dir = "/tmp/ncclrr-bench-export";
  try {
    ncclrr::Args args("bench-export", argc, argv);
    args.Option("--ranks").Option("--calls").Option("--rounds").Option("--dir").Parse();
    ranks = static_cast<int>(args.GetInt("--ranks", ranks));
    calls = args.GetInt("--calls", calls);
    rounds = static_cast<int>(args.GetInt("--rounds", rounds));
    dir = args.GetOr("--dir", dir);
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr, "bench-export: %s\n", e.what());
    return 2;
  }
  fs::remove_all(dir);
  ncclrr::SyntheticTraceOptions o;
  o.dir = dir + "/trace";
  o.ranks = ranks;
  o.steps = static_cast<int>(calls / ranks / 4);
  o.swap_rank = ranks / 2;
  o.swap_steps = {o.steps / 2};
  if (auto r = ncclrr::WriteSyntheticTrace(o); !r.ok()) {
    std::fprintf(stderr, "generating failed: %s\n", r.status().message().c_str());
    return 2;
  }
  auto model = ncclrr::analysis::TraceModel::Load(o.dir);
  if (!model.ok()) return 2;
  const auto report = ncclrr::analysis::Check(*model);
  const double n = static_cast<double>(model->total_calls());
  std::printf("trace: %d ranks, %.0f calls, %zu findings\n", ranks, n, report.findings.size());

  const auto timeline = [&](auto fn) {
    return [&, fn](const fs::path& p) {
      return ncclrr::analysis::ExportToFile(
                 p.string(),
                 [&](std::ostream& os) {
                   return fn(*model, &report, ncclrr::analysis::ExportOptions{}, os, nullptr);
                 })
          .ok();
    };
  };
  const std::vector<Format> formats = {
      {"perfetto (protobuf)", timeline(ncclrr::analysis::ExportPerfetto), ParseProtoFile},
      {"chrome-json", timeline(ncclrr::analysis::ExportChromeJson), ParseJsonFile},
      {"flight-recorder (JSON, per rank)",
       [&](const fs::path& p) {
         return ncclrr::analysis::ExportFlightRecorder(
                    *model, p, ncclrr::analysis::FlightRecorderEncoding::kJson)
             .ok();
       },
       [](const fs::path& p) {
         uint64_t v = 0;
         for (const auto& e : fs::directory_iterator(p)) v += ParseJsonFile(e.path());
         return v;
       }},
  };
  std::printf("%-34s %7s %12s %10s %9s %10s\n", "format", "round", "bytes", "B/call", "write s",
              "parse s");
  for (size_t f = 0; f < formats.size(); ++f) {
    std::vector<double> writes, parses;
    uint64_t bytes = 0;
    for (int r = 0; r < rounds; ++r) {
      const fs::path out = dir + "/out" + std::to_string(f);
      fs::remove_all(out);
      auto t = Clock::now();
      if (!formats[f].write(out)) return 2;
      writes.push_back(Since(t));
      bytes = DirBytes(out);
      t = Clock::now();
      const uint64_t items = formats[f].parse(out);
      parses.push_back(Since(t));
      std::printf("%-34s %7d %12llu %10.1f %9.2f %10.2f  (%llu values parsed)\n", formats[f].name,
                  r, static_cast<unsigned long long>(bytes), bytes / n, writes.back(),
                  parses.back(), static_cast<unsigned long long>(items));
      fs::remove_all(out);
    }
    std::printf("%-34s %7s %12llu %10.1f %9.2f %10.2f  median of %d\n", formats[f].name, "median",
                static_cast<unsigned long long>(bytes), bytes / n, Median(writes), Median(parses),
                rounds);
  }
  fs::remove_all(dir);
  return 0;
}
