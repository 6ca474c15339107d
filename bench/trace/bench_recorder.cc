// Recorder benchmarks (issue: foundation). Prints medians and percentiles:
//  1. producer cost per Append (1 and 8 threads), measured per call with the TSC-free
//     CLOCK_MONOTONIC in batches of 64 to keep timer overhead out of the number;
//  2. writer throughput to disk with 0 drops (kBlock) and bytes per call record on disk for a
//     realistic mix (several comms, a few tensors, jittered times);
//  3. reader throughput.
// Usage: bench-recorder [--records N] [--dir DIR]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/base/args.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"

using namespace ncclrr;

namespace {

// A realistic stream of calls: 3 communicators, 12 tensors reused every step, times advancing
// by 5-60 us with jitter, occasional groups, one stream per comm.
struct MixGenerator {
  explicit MixGenerator(uint32_t seed) : rng(seed) {}
  std::mt19937_64 rng;
  int64_t t = 1'000'000'000;
  uint64_t seq[3] = {0, 0, 0};
  uint64_t i = 0;
  CallRecord Next(uint64_t uid) {
    CallRecord c{};
    const int comm = (i % 10 < 7) ? 0 : (i % 10 < 9 ? 1 : 2);
    const int tensor = static_cast<int>(i % 12);
    static const uint64_t kCounts[12] = {1728,   36864, 36864, 512,  4096,    1048576,
                                         262144, 1728,  64,    8192, 2359296, 1000};
    c.uid = uid;
    c.comm_id = 0x9e3779b97f4a7c15ull * (comm + 1);
    c.seq = seq[comm]++;
    c.type_seq = c.seq;
    c.sendbuff = 0x7f3a00000000ull + uint64_t(tensor) * 0x100000;
    c.recvbuff = c.sendbuff;
    c.count = kCounts[tensor];
    c.stream = 0x55550000ull + comm;
    c.group_id = (i % 16 < 4) ? (i / 16) + 1 : 0;
    c.group_depth = c.group_id ? 1 : 0;
    t += 5'000 + static_cast<int64_t>(rng() % 55'000);
    c.enter_ns = t;
    c.exit_ns = t + 2'000 + static_cast<int64_t>(rng() % 3'000);
    c.tid = 4242;
    c.root_peer = -1;
    c.device = 3;
    c.rank = 5;
    c.api = static_cast<uint16_t>(i % 25 == 0 ? Api::kBroadcast : Api::kAllReduce);
    c.dtype = static_cast<uint8_t>(tensor % 3 == 0 ? Dtype::kBfloat16 : Dtype::kFloat32);
    c.flags = call_flags::kInPlace;
    ++i;
    return c;
  }
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1)))];
}

// Producer cost: time batches of 64 appends; per-record cost = batch time / 64.
void ProducerCost(const std::string& dir, int threads, uint64_t per_thread) {
  WriterOptions o;
  o.dir = dir;
  o.file_name = "producer-" + std::to_string(threads) + ".ncclrr";
  o.ring_slots = 1 << 16;
  auto w = TraceWriter::Create(o);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.status().message().c_str());
    std::exit(2);
  }
  std::vector<std::vector<double>> samples(threads);
  std::vector<std::thread> ts;
  for (int th = 0; th < threads; ++th) {
    ts.emplace_back([&, th] {
      MixGenerator gen(th + 1);
      std::vector<CallRecord> calls(64);
      for (uint64_t b = 0; b < per_thread / 64; ++b) {
        for (auto& c : calls) c = gen.Next(0);
        const int64_t t0 = MonotonicNs();
        for (auto& c : calls) (*w)->AppendCall(c);
        const int64_t t1 = MonotonicNs();
        samples[th].push_back(static_cast<double>(t1 - t0) / 64.0);
        if (b % 16 == 15) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  for (auto& t : ts) t.join();
  (void)(*w)->Close();
  std::vector<double> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  const auto st = (*w)->Stats();
  std::printf(
      "producer  threads=%d  median %.1f ns  p99 %.1f ns  (per record, batches of 64; "
      "dropped %llu of %llu)\n",
      threads, Percentile(all, 0.5), Percentile(all, 0.99),
      static_cast<unsigned long long>(st.dropped),
      static_cast<unsigned long long>(threads * per_thread));
}

void WriterAndReader(const std::string& dir, uint64_t n, bool compress) {
  WriterOptions o;
  o.dir = dir;
  o.compress = compress;
  o.file_name = compress ? "throughput.ncclrr" : "throughput-raw.ncclrr";
  o.overflow = OverflowPolicy::kBlock;
  o.ring_slots = 1 << 16;
  auto w = TraceWriter::Create(o);
  MixGenerator gen(7);
  std::vector<CallRecord> calls(n);
  for (uint64_t i = 0; i < n; ++i) calls[i] = gen.Next(i);
  const int64_t t0 = MonotonicNs();
  for (const auto& c : calls) (*w)->AppendCall(c);
  (void)(*w)->Close();
  const int64_t t1 = MonotonicNs();
  const auto st = (*w)->Stats();
  const double secs = static_cast<double>(t1 - t0) / 1e9;
  std::printf(
      "writer    %s  %llu records in %.3f s = %.2f M records/s to disk, dropped %llu, "
      "%.1f bytes per call record on disk (%llu bytes)\n",
      compress ? "zstd" : "raw ", static_cast<unsigned long long>(n), secs,
      static_cast<double>(n) / secs / 1e6, static_cast<unsigned long long>(st.dropped),
      static_cast<double>(st.bytes) / static_cast<double>(n),
      static_cast<unsigned long long>(st.bytes));
  std::vector<double> rates;
  for (int rep = 0; rep < 5; ++rep) {
    const int64_t r0 = MonotonicNs();
    auto f = ReadTraceFile((*w)->path());
    const int64_t r1 = MonotonicNs();
    if (!f.ok() || f->calls.size() != n) {
      std::fprintf(stderr, "reader: read back %zu of %llu calls\n", f.ok() ? f->calls.size() : 0,
                   static_cast<unsigned long long>(n));
      std::exit(1);
    }
    rates.push_back(static_cast<double>(n) / (static_cast<double>(r1 - r0) / 1e9) / 1e6);
  }
  std::printf("reader    %s  median %.1f M records/s over 5 reads (CRC, %sverify, copy)\n",
              compress ? "zstd" : "raw ", Percentile(rates, 0.5), compress ? "decompress, " : "");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 4'000'000;
  std::string dir = (std::filesystem::temp_directory_path() / "ncclrr-bench-recorder").string();
  try {
    ncclrr::Args args("bench-recorder", argc, argv);
    args.Option("--records").Option("--dir").Parse();
    n = static_cast<uint64_t>(args.GetInt("--records", static_cast<long long>(n)));
    dir = args.GetOr("--dir", dir);
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr, "bench-recorder: %s\n", e.what());
    return 2;
  }
  std::filesystem::remove_all(dir);
  ProducerCost(dir, 1, 1'000'000);
  ProducerCost(dir, 8, 250'000);
  WriterAndReader(dir, n, /*compress=*/true);
  WriterAndReader(dir, n, /*compress=*/false);
  if (!std::getenv("NCCLRR_BENCH_KEEP")) std::filesystem::remove_all(dir);
  return 0;
}
