// `record --capture BYTES [--capture-filter F]` (NCCLRR_CAPTURE_BYTES, NCCLRR_CAPTURE_FILTER):
// full copies of the buffers of collectives and Send/Recv in a side file beside the trace
// (<host>-<pid>.capture), each referenced by a CaptureRef record (call uid, which buffer, offset,
// bytes). The send side is copied in stream order before the call, the recv side after it; when
// each half runs (groups, nonblocking communicators) is decided with the sketches' halves in
// sketch_hooks.cc.
//
// Rules: the per-call path only plans (filter, budget reservation) and enqueues; the bytes are
// copied on the call's own stream (a host-stream callback on the host NCCL, cudaMemcpyAsync into
// pinned staging on a GPU) and written to the side file by ncclrr's own threads (the capture
// writer, the GPU poller). Nothing here may fail the job: a call that cannot be captured is
// counted and noted; a full disk stops capturing with a note. The budget is per process: once a
// call does not fit, capturing stops for good (later calls are counted as skipped), so every
// rank captures the same prefix of its calls.
#pragma once
#include <cstdint>
#include <string>

#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"
#include "stream_job.h"

namespace ncclrr::interpose {

struct CommState;
struct NcclLibrary;

struct CapturePart {
  const void* data = nullptr;
  uint64_t bytes = 0;
  SketchWhich which = SketchWhich::kSendBefore;  // SendBefore, RecvAfter or Scalar
};

using CaptureJob = StreamJob<CapturePart>;

struct CaptureHalves {
  CaptureJob before, after;
};

// Why a buffer was not captured; counted per reason, noted at the first and with totals at exit.
enum class CaptureSkip : int {
  kBudget = 0,   // the byte budget was reached (capturing stopped)
  kGraph,        // captured into a CUDA graph (runs later, possibly many times)
  kNoBackend,    // no way to copy: no host-stream callbacks, no usable CUDA driver
  kStagingFull,  // staging memory (pinned on a GPU) had no room for it
  kCopyFailed,   // the CUDA driver refused the copy
  kWriteFailed,  // writing the side file failed (disk full...): capturing stopped
  kCallFailed,   // NCCL returned an error: the after-half is not taken
  kForkedChild,  // a forked child inherited the recording (captures stay with the parent)
  kCount
};
void CountCaptureSkip(CaptureSkip reason, uint64_t buffers, const std::string& detail = {});

// At recording start (after InitSketches).
void InitCaptures(const NcclLibrary& lib);
bool CapturesOn();

// Plans the call's captures (filter, step, budget); false when nothing is to be captured.
bool PlanCapture(const CallRecord& rec, const CommState& cs, CaptureHalves* h);
// Runs one half (the caller decided it is time).
void DispatchCapture(const CaptureJob& job);

// Backends (capture_host_path.cc, capture_device_path.cc).
bool HostCapturesAvailable();
void HostCapture(const CaptureJob& job);
void DeviceCapture(const CaptureJob& job);
void PrepareDeviceCaptures();          // allocates the pinned staging now
void PrepareCapturesBeforeCommInit();  // the device backend's staging (see sketch_hooks.h)
void DeviceCaptureAtExit();            // a last poll of the copies in flight, within a short wait

// The side file (capture_file.cc). QueueCapturedBytes takes a copy made in stream order and hands
// it to the capture writer thread; WriteCapturedBytes writes at once (ncclrr's own threads only).
void QueueCapturedBytes(uint64_t call_uid, SketchWhich which, std::string bytes);
void WriteCapturedBytes(uint64_t call_uid, SketchWhich which, const void* data, uint64_t bytes);
// Waits (bounded) until queued bytes are written; at exit.
void DrainCapturedBytes();
// Bytes queued for the writer thread but not written yet (the host path's staging).
uint64_t QueuedCaptureBytes();
// Whether capturing has stopped (budget reached, write failed).
bool CaptureStopped();
void StopCapturing();

}  // namespace ncclrr::interpose
