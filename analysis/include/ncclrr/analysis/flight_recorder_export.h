#pragma once
// `ncclrr export --format flight-recorder`: the trace as PyTorch Flight Recorder dumps, so that
// `fr_trace` and other tools built on FR dumps read ncclrr recordings. One file per rank, named as
// PyTorch names them (nccl_trace_rank_<global rank>), pickled as FR dumps by default (what
// fr_trace reads) or in the JSON variant FR's dump_json writes (version "2.10": version,
// comm_lib_version, pg_config, pg_status, entries).
//
// What maps how (docs/check.md, "Exports"): a communicator is a process group named by its
// index in the trace ("0", "1", ...; its desc is the comm name or hash); a rank is a (trace
// file, device) pair, its global rank the rank it holds on its largest communicator; every
// collective and Send/Recv is an entry with PyTorch's profiling name ("nccl:all_reduce",
// "nccl:send 0->1"), 1-based collective_seq_id = ncclrr seq + 1, and 1-D input/output sizes
// from the count. `state` comes from GPU times when recorded (completed / started), else a call
// still in flight is "scheduled" and a returned call "completed" when its process closed its
// trace cleanly, "scheduled" otherwise. Call sites (record --stacks) become `frames`.
#include <cstdint>
#include <string>

#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

struct FlightRecorderStats {
  uint64_t files = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

enum class FlightRecorderEncoding { kPickle, kJson };

// Writes the dumps into `dir`, creating it when missing.
Status ExportFlightRecorder(const TraceModel& model, const std::string& dir,
                            FlightRecorderEncoding encoding = FlightRecorderEncoding::kPickle,
                            FlightRecorderStats* stats = nullptr);

// PyTorch's names: "nccl:all_reduce", "nccl:send 0->1", "nccl:recv 1<-0"; "" for calls FR does
// not record (lifecycle, registration). `rank` and `peer` matter for Send/Recv only.
std::string FlightRecorderProfilingName(Api api, int rank, int peer);
// c10::toString of the ScalarType an NCCL dtype corresponds to: "Float", "BFloat16", ...
std::string_view FlightRecorderDtype(uint8_t dtype);

}  // namespace ncclrr::analysis
