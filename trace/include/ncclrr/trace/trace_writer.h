#pragma once
// TraceWriter: producers append fixed-size records into thread-local single-producer rings
// (no lock, allocation or I/O per record unless a ring is full); one writer thread drains them,
// encodes framed FlatBuffer batches with a reused builder, compresses, and writes at least every
// `flush_interval_ms`.
//
// Overflow policy (explicit, per writer): kDrop (default) never blocks the caller; a record that
// finds its ring full is dropped and counted, and the counts are written into the trace as
// DropCount records. kBlock stalls the producer until the writer makes room (tests, offline
// tools). Flight-recorder mode (`flight_recorder_calls` > 0) keeps only the newest calls per
// thread in memory and writes them on Dump(), Close() or FlushFromSignal().
//
// Disk errors (full, unwritable) never reach the producer: the writer warns once on stderr,
// keeps counting what it could not write, and states it in the footer.
//
// Fork: the child of a recording process starts its own file (<host>-<childpid>.ncclrr) at its
// first record; records the parent had buffered stay with the parent.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

enum class OverflowPolicy : uint8_t { kDrop = 0, kBlock = 1 };

struct WriterOptions {
  std::string dir;             // trace directory; created if missing
  std::string file_name;       // empty: "<host>-<pid>.ncclrr"
  uint32_t ring_slots = 8192;  // per-thread ring capacity, rounded up to a power of two
  OverflowPolicy overflow = OverflowPolicy::kDrop;
  uint32_t flush_interval_ms = 50;
  uint32_t clock_interval_ms = 1000;   // period of ClockPair records
  uint32_t flight_recorder_calls = 0;  // > 0: flight-recorder mode, calls kept per thread
  bool compress = true;
  uint64_t max_file_bytes = 0;  // 0: unlimited; past it records are dropped and counted
  HeaderData header;            // host/pid/start times are filled in when left empty
};

struct WriterStats {
  uint64_t records_written = 0;
  uint64_t calls_written = 0;
  uint64_t dropped = 0;
  uint64_t frames = 0;
  uint64_t bytes = 0;
  bool io_failed = false;
};

class TraceWriter {
 public:
  // Creates the directory and file, writes the header, starts the writer thread.
  static StatusOr<std::unique_ptr<TraceWriter>> Create(WriterOptions options);
  ~TraceWriter();  // Close("destroyed") if not closed yet
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Hot path. Returns false when the record was dropped.
  bool Append(const Record& record);
  bool AppendCall(const CallRecord& call);

  // Unique id for a call of the calling thread: (thread index << 40) | per-thread counter.
  uint64_t NextCallUid();

  // Slow paths (mutex): rare or variable-size contents.
  uint32_t Intern(std::string_view text);  // stable id per distinct text, 0 for ""
  void AddNote(NoteLevel level, std::string text);
  void AddSketch(SketchData sketch);
  void AddCapture(CaptureRefData capture);
  void SetNcclVersion(int32_t version);

  // Everything appended before the call is written (not fsync'd) when Flush returns.
  void Flush();
  // Async-signal-safe: asks the writer thread to flush (and, in flight-recorder mode, to dump)
  // and waits for it at most `timeout_ms`. Safe to call from any thread except the writer's.
  void FlushFromSignal(int timeout_ms = 1000);
  // Flight-recorder mode: write the calls held in memory now (watchdog, error, SIGUSR1).
  void Dump(std::string_view reason);
  // Drains everything, writes the footer, stops the thread. Idempotent.
  Status Close(std::string_view reason = "closed");

  WriterStats Stats() const;
  const std::string& path() const;
  bool flight_recorder() const;

  class Impl;

 private:
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Records dropped because their thread was already exiting (after its thread-local state was
// destroyed, e.g. the main thread inside exit()): counted here, never touched.
uint64_t LateThreadDrops();

// "<hostname>-<pid>.ncclrr"
std::string DefaultTraceFileName(int pid);
std::string HostName();

}  // namespace ncclrr
