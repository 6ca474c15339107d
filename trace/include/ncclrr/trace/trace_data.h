#pragma once
// Variable-size trace contents (strings, notes, sketches, capture references, header, footer):
// what the TraceWriter's slow path accepts and what the TraceReader hands back.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ncclrr/trace/records.h"

namespace ncclrr {

enum class Route : uint8_t {
  kUnknown = 0,
  kPreload,
  kSonameShim,
  kProfilerPlugin,
  kGenerator,
  kNcclLog,
  kFlightRecorder  // imported from PyTorch Flight Recorder dumps (ncclrr import-fr)
};
const char* RouteName(Route r);

enum class NoteLevel : uint8_t { kInfo = 0, kWarning = 1, kError = 2 };

struct NoteData {
  int64_t time_ns = 0;
  NoteLevel level = NoteLevel::kInfo;
  std::string text;
};

// schemas/trace.fbs says what each describes.
enum class SketchWhich : uint8_t {
  kSendBefore = 0,
  kRecvAfter = 1,
  kSendAfterSample = 2,
  kSendBeforeSample = 3,  // the race twin of SendBefore (format 1.1)
  kScalar = 4,            // a device-resident PreMulSum scalar (format 1.1)
};
const char* SketchWhichName(SketchWhich w);  // "send_before", "recv_after", ...
inline constexpr int kSketchDots = 16;

struct SketchData {
  uint64_t call_uid = 0;
  SketchWhich which = SketchWhich::kSendBefore;
  uint8_t dtype = 0;
  uint64_t count = 0;
  uint64_t first = 0;
  std::array<double, kSketchDots> dots{};
  double sumsq = 0;
  uint64_t nan = 0, posinf = 0, neginf = 0;
  std::vector<uint64_t> sample_idx;
  std::vector<double> samples;
  uint64_t launch = 0;  // captured calls: which graph replay (1-based); 0 otherwise
};

struct CaptureRefData {
  uint64_t call_uid = 0;
  SketchWhich which = SketchWhich::kSendBefore;
  std::string file;  // relative to the trace directory
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct HeaderData {
  uint16_t format_major = 0, format_minor = 0;
  std::string schema_hash;
  std::string host;
  int32_t pid = 0, ppid = 0;
  int64_t start_mono_ns = 0, start_real_ns = 0;
  int32_t nccl_version = 0, cuda_version = 0;
  Route route = Route::kUnknown;
  bool ring_mode = false;
  uint32_t ring_capacity = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

// (1.2 footers) What a file holds beyond its calls and drops, so that `ncclrr record`'s closing
// summary reads footers only, never whole files.
struct FooterSummary {
  static constexpr size_t kMaxComms = 4096;
  static constexpr size_t kMaxNotes = 16;
  struct CommRank {
    uint64_t comm_id = 0;
    int32_t nranks = 0;
    int32_t rank = 0;
  };
  std::vector<CommRank> comms;  // distinct (communicator, rank) pairs, at most kMaxComms
  uint64_t gpu_times = 0, gpu_times_cupti = 0, gpu_times_events = 0;
  uint64_t captures = 0, capture_bytes = 0, captured_calls = 0;
  std::vector<std::string> notes;  // the first kMaxNotes notes
};

struct FooterData {
  bool clean = false;
  uint64_t calls = 0;
  uint64_t dropped = 0;
  int64_t end_ns = 0;
  std::string reason;
  std::optional<FooterSummary> summary;  // absent in files older than format 1.2
};

}  // namespace ncclrr
