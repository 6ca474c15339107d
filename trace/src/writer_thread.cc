// The background writer: drains thread rings, encodes frames, writes them; plus file setup,
// flush handshakes, close and fork handling.
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "frame_io.h"
#include "ncclrr/base/new_file.h"
#include "ncclrr/trace/fatal_signals.h"
#include "ncclrr/trace/format.h"
#include "writer_impl.h"

namespace ncclrr {

using internal::PendingBatch;
using internal::ThreadRing;

namespace {

constexpr size_t kMaxRecordsPerFrame = 32768;
std::atomic<uint64_t> g_generation{1};

int FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int timeout_ms) {
  timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  return static_cast<int>(syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE,
                                  expected, &ts, nullptr, 0));
}
void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Live writers, for pthread_atfork. Registered once per process.
std::mutex g_writers_mu;
std::vector<TraceWriter::Impl*>& Writers() {
  static auto* v = new std::vector<TraceWriter::Impl*>();  // never destroyed: used at fork/exit
  return *v;
}
void ForkPrepare() {
  g_writers_mu.lock();
  for (auto* w : Writers()) w->PrepareFork();
}
void ForkParent() {
  for (auto* w : Writers()) w->ParentAfterFork();
  g_writers_mu.unlock();
}
void ForkChild() {
  for (auto* w : Writers()) w->ChildAfterFork();
  g_writers_mu.unlock();
}

}  // namespace

TraceWriter::Impl::Impl(WriterOptions options)
    : options_(std::move(options)),
      flight_(options_.flight_recorder_calls > 0),
      generation_(g_generation.fetch_add(1)) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(ForkPrepare, ForkParent, ForkChild); });
  std::lock_guard<std::mutex> lock(g_writers_mu);
  Writers().push_back(this);
}

TraceWriter::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(g_writers_mu);
    auto& w = Writers();
    w.erase(std::remove(w.begin(), w.end(), this), w.end());
  }
  if (zstd_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

Status TraceWriter::Impl::OpenFile() {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec)
    return IoError("cannot create trace directory '" + options_.dir + "': " + ec.message() +
                   "; choose a writable directory with -o");
  HeaderData& h = options_.header;
  // Importers describe another process; a live recording describes this one.
  if (h.pid == 0 || forked_.load()) {
    h.pid = getpid();
    h.ppid = getppid();
  }
  if (h.host.empty()) h.host = HostName();
  h.start_mono_ns = MonotonicNs();
  h.start_real_ns = RealtimeNs();
  // A generator may describe a flight-recorder file it writes whole (synthetic_trace.cc).
  if (flight_ || !h.ring_mode) {
    h.ring_mode = flight_;
    h.ring_capacity = options_.flight_recorder_calls;
  }
  const std::string name =
      options_.file_name.empty() ? DefaultTraceFileName(h.pid) : options_.file_name;
  std::string created;
  fd_ = CreateNewFile(options_.dir, name, &created);
  if (fd_ < 0)
    return IoError("cannot create trace file '" +
                   (std::filesystem::path(options_.dir) / name).string() +
                   "': " + std::strerror(errno) +
                   (errno == ELOOP ? " (it is a symbolic link: trace files are never written "
                                     "through one)"
                                   : "; check that the directory exists, is writable and not "
                                     "full, and that the path is not too long"));
  path_ = (std::filesystem::path(options_.dir) / created).string();
  if (options_.compress && !zstd_) zstd_ = ZSTD_createCCtx();
  const auto header = internal::EncodeHeader(h);
  const auto pre = internal::EncodeFilePreamble(header.data(), header.size());
  {
    // The header is written by the job's thread: as in Loop(), SIGXFSZ must not kill the job.
    sigset_t xfsz, old;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    WriteBytes(pre.data(), pre.size(), 0);
    if (!sigismember(&old, SIGXFSZ)) {
      const timespec none{0, 0};
      while (sigtimedwait(&xfsz, nullptr, &none) == SIGXFSZ) {  // one we caused: consumed
      }
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
  }
  if (io_failed_)
    return IoError("cannot write trace file header to '" + path_ +
                   "': " + std::strerror(io_errno_));
  // The first clock pair anchors this file's monotonic times to wall-clock time.
  side_.clocks.push_back({h.start_mono_ns, h.start_real_ns});
  return Status::Ok();
}

void TraceWriter::Impl::StartThread() {
  stop_ = false;
  thread_ = StartThreadBlockingFatalSignals([this] { Loop(); });
}

std::shared_ptr<ThreadRing> TraceWriter::Impl::RegisterThread() {
  std::lock_guard<std::mutex> lock(rings_mu_);
  auto ring = std::make_shared<ThreadRing>(options_.ring_slots, next_thread_index_++,
                                           static_cast<uint32_t>(syscall(SYS_gettid)));
  rings_.push_back(ring);
  return ring;
}

uint32_t TraceWriter::Impl::Intern(std::string_view text) {
  if (text.empty()) return 0;
  if (forked_.load(std::memory_order_relaxed)) RestartAfterFork();
  std::lock_guard<std::mutex> lock(side_mu_);
  auto [it, inserted] =
      interned_.try_emplace(std::string(text), static_cast<uint32_t>(interned_.size() + 1));
  if (inserted) {
    side_.strings.emplace_back(it->second, it->first);
    side_records_.fetch_add(1, std::memory_order_relaxed);
  }
  return it->second;
}

void TraceWriter::Impl::Wake() {
  wake_seq_.fetch_add(1, std::memory_order_release);
  if (sleeping_.load(std::memory_order_acquire)) FutexWake(&wake_seq_);
}

void TraceWriter::Impl::RequestFlush(bool dump, int timeout_ms) {
  if (closed_.load() || !thread_.joinable()) return;
  if (static_cast<int>(syscall(SYS_gettid)) == writer_tid_.load()) return;
  if (dump) dump_req_.fetch_add(1);
  const uint64_t want = flush_req_.fetch_add(1) + 1;
  Wake();
  // Polling with nanosleep keeps this async-signal-safe.
  for (int waited_us = 0; flush_done_.load(std::memory_order_acquire) < want;) {
    if (waited_us >= timeout_ms * 1000) return;
    timespec ts{0, 100'000};
    nanosleep(&ts, nullptr);
    waited_us += 100;
    Wake();
  }
}

namespace {
// The flight recorder keeps the last N calls of the process: every thread's ring holds its own
// last N, so the process's last N (by entry time) are among them.
void KeepNewestCalls(std::vector<CallRecord>* calls, uint64_t keep) {
  if (calls->size() <= keep) return;
  std::stable_sort(calls->begin(), calls->end(), [](const CallRecord& a, const CallRecord& b) {
    return a.enter_ns < b.enter_ns;
  });
  calls->erase(calls->begin(), calls->end() - static_cast<std::ptrdiff_t>(keep));
}
}  // namespace

bool TraceWriter::Impl::DrainRings(bool dump, PendingBatch* out) {
  std::vector<std::shared_ptr<ThreadRing>> rings;
  {
    std::lock_guard<std::mutex> lock(rings_mu_);
    rings = rings_;
  }
  bool more = false;
  for (auto& ring : rings) {
    const uint64_t h = ring->head.load(std::memory_order_acquire);
    uint64_t t = ring->tail.load(std::memory_order_relaxed);
    if (flight_) {
      if (!dump) continue;
      const uint64_t keep = options_.flight_recorder_calls;
      const uint64_t start = std::max(t, h > keep ? h - keep : 0);
      PendingBatch copy;
      for (uint64_t i = start; i < h; ++i) copy.Add(ring->slots[i & ring->mask]);
      // Slots the producer may have overwritten while we copied are discarded.
      const uint64_t h2 = ring->head.load(std::memory_order_acquire);
      const uint64_t valid_from = h2 >= ring->capacity() ? h2 - ring->capacity() + 1 : 0;
      for (size_t k = 0; k < copy.calls.size(); ++k)
        if (start + k >= valid_from) out->calls.push_back(copy.calls[k]);
      ring->tail.store(h, std::memory_order_release);
      continue;
    }
    const uint64_t room = kMaxRecordsPerFrame - std::min(kMaxRecordsPerFrame, out->RecordCount());
    const uint64_t n = std::min<uint64_t>(h - t, room);
    for (uint64_t i = 0; i < n; ++i) out->Add(ring->slots[(t + i) & ring->mask]);
    ring->tail.store(t + n, std::memory_order_release);
    if (t + n < h) more = true;
    const uint64_t d = ring->dropped.load(std::memory_order_relaxed);
    if (d != ring->reported_dropped) {
      out->drops.push_back({MonotonicNs(), d, ring->tid, 0});
      ring->reported_dropped = d;
    }
  }
  if (flight_ && dump) KeepNewestCalls(&out->calls, options_.flight_recorder_calls);
  std::lock_guard<std::mutex> lock(rings_mu_);
  std::erase_if(rings_, [this](const std::shared_ptr<ThreadRing>& r) {
    const bool retire =
        r->dead.load(std::memory_order_acquire) &&
        r->head.load(std::memory_order_acquire) == r->tail.load(std::memory_order_relaxed) &&
        r->dropped.load() == r->reported_dropped;
    if (retire) retired_dropped_ += r->reported_dropped;
    return retire;
  });
  return more;
}

bool TraceWriter::Impl::WriteBytes(const uint8_t* data, size_t size, size_t records,
                                   bool past_cap) {
  // The closing frame goes out even past the size cap: it says how much was dropped.
  if (io_failed_ ||
      (!past_cap && options_.max_file_bytes && bytes_ + size > options_.max_file_bytes)) {
    lost_ += records;
    if (!warned_io_ && !io_failed_) {
      warned_io_ = true;
      std::fprintf(stderr,
                   "ncclrr: trace file %s reached its size cap (%llu bytes); further "
                   "records are counted as dropped\n",
                   path_.c_str(), static_cast<unsigned long long>(options_.max_file_bytes));
    }
    return false;
  }
  // Writing failed for good: the records are counted as dropped, and the job is told once.
  auto fail = [&](int err, const std::string& why) {
    io_failed_ = true;
    io_errno_ = err;
    lost_ += records;
    if (!warned_io_) {
      warned_io_ = true;
      std::fprintf(stderr,
                   "ncclrr: %s %s; the job continues, further records are counted as dropped\n",
                   why.c_str(), path_.c_str());
    }
    return false;
  };
  // A file size limit on the job (ulimit -f): writing past it would raise SIGXFSZ, which the
  // kernel sends to the whole process and which kills the job by default. Stop short instead.
  if (rlimit lim{}; getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
                    bytes_ + size > lim.rlim_cur)
    return fail(EFBIG, "the job's file size limit (ulimit -f, " + std::to_string(lim.rlim_cur) +
                           " bytes) is reached by trace file");
  size_t done = 0;
  while (done < size) {
    const ssize_t w = write(fd_, data + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;  // a write of 0 bytes: no room
      // Cut back to the last whole frame so the file stays readable.
      if (done > 0 && ftruncate(fd_, static_cast<off_t>(bytes_.load())) == 0)
        lseek(fd_, static_cast<off_t>(bytes_.load()), SEEK_SET);
      return fail(err, std::string(std::strerror(err)) + ": cannot write trace file");
    }
    done += static_cast<size_t>(w);
  }
  bytes_ += size;
  return true;
}

void TraceWriter::Impl::WriteBatch(PendingBatch* batch) {
  if (batch->Empty()) return;
  const size_t records = batch->RecordCount();
  auto [data, size] = encoder_.Encode(*batch);
  internal::TransposedRegion region;
  if (options_.compress && batch->calls.size() >= 16) region = encoder_.CallsRegion();
  internal::EncodeFrame(data, static_cast<uint32_t>(size), options_.compress, zstd_, region,
                        &transpose_buf_, &frame_buf_);
  if (WriteBytes(frame_buf_.data(), frame_buf_.size(), records, batch->footer.has_value())) {
    records_written_ += records;
    calls_written_ += batch->calls.size();
    frames_ += 1;
    Tally(*batch);
  }
  batch->Clear();
}

void TraceWriter::Impl::Tally(const PendingBatch& batch) {
  footer_calls_ +=
      internal::AddToFooterSummary(batch.comms, batch.calls, batch.gpu_times, batch.captures,
                                   batch.notes, &summary_, &captured_uids_, &in_flight_uids_);
}

void TraceWriter::Impl::Loop() {
  writer_tid_ = static_cast<int>(syscall(SYS_gettid));
  // A file size limit on the job (ulimit -f) must not kill it through our writes: the kernel
  // sends SIGXFSZ to the writing thread, which blocks it and gets EFBIG, counted as dropped.
  sigset_t xfsz;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, nullptr);
  // Started with the fatal signals blocked (StartThreadBlockingFatalSignals): a fatal signal's
  // handler waits for this thread to flush (FlushFromSignal), which it could not do here.
  PendingBatch batch;
  int64_t last_clock = MonotonicNs();
  uint64_t dumps_done = 0;
  for (;;) {
    const uint32_t seen = wake_seq_.load(std::memory_order_acquire);
    const bool stopping = stop_.load(std::memory_order_acquire);
    const uint64_t flush_want = flush_req_.load(std::memory_order_acquire);
    const uint64_t dump_want = dump_req_.load(std::memory_order_acquire);
    const bool dump = stopping || dump_want != dumps_done;
    {
      std::lock_guard<std::mutex> lock(side_mu_);
      std::swap(batch, side_);
      side_records_.store(0, std::memory_order_relaxed);
    }
    const int64_t now = MonotonicNs();
    if (now - last_clock >= int64_t{options_.clock_interval_ms} * 1'000'000) {
      batch.clocks.push_back({now, RealtimeNs()});
      last_clock = now;
    }
    while (DrainRings(dump, &batch)) WriteBatch(&batch);
    dumps_done = dump_want;
    if (stopping) {
      batch.clocks.push_back({MonotonicNs(), RealtimeNs()});
      // Past the size cap, or once writing failed, the last records are dropped: the closing
      // frame says how many, and why.
      if ((options_.max_file_bytes && lost_ > 0) || io_failed_.load()) {
        lost_ += batch.RecordCount();
        batch.Clear();
      }
      WriteBatch(&batch);  // the last records (a write that fails counts them as lost)
      uint64_t dropped = lost_ + retired_dropped_;
      {
        std::lock_guard<std::mutex> lock(rings_mu_);
        for (auto& r : rings_) dropped += r->dropped.load();
      }
      const bool failed = io_failed_.load();
      std::string reason = close_reason_;
      if (failed)
        reason += std::string(reason.empty() ? "" : "; ") + format::kWriteErrorPrefix +
                  std::strerror(io_errno_);
      // The footer alone in the last frame: summaries read it without reading the file.
      batch.footer = FooterData{true, footer_calls_, dropped, MonotonicNs(), reason, summary_};
      // One more try for the small closing frame: cutting back the frame that failed may have
      // left room for it (and the disk may have room again). Close() still reports the failure.
      if (failed) io_failed_ = false;
      WriteBatch(&batch);
      if (failed) io_failed_ = true;
      flush_done_.store(flush_want, std::memory_order_release);
      break;
    }
    WriteBatch(&batch);
    flush_done_.store(flush_want, std::memory_order_release);
    sleeping_.store(true, std::memory_order_release);
    FutexWait(&wake_seq_, seen, static_cast<int>(options_.flush_interval_ms));
    sleeping_.store(false, std::memory_order_relaxed);
  }
}

Status TraceWriter::Impl::Close(std::string_view reason) {
  std::lock_guard<std::mutex> lock(close_mu_);
  if (closed_.load()) return Status::Ok();
  if (forked_.load()) {  // a child that never recorded: nothing of its own to close
    closed_ = true;
    return Status::Ok();
  }
  close_reason_ = std::string(reason);
  stop_.store(true, std::memory_order_release);
  Wake();
  if (thread_.joinable()) thread_.join();
  closed_ = true;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (io_failed_) return IoError("trace file " + path_ + " is incomplete: writing failed");
  return Status::Ok();
}

WriterStats TraceWriter::Impl::Stats() const {
  WriterStats s;
  s.records_written = records_written_;
  s.calls_written = calls_written_;
  s.frames = frames_;
  s.bytes = bytes_;
  s.io_failed = io_failed_;
  s.dropped = lost_ + retired_dropped_;
  auto& self = const_cast<Impl&>(*this);
  std::lock_guard<std::mutex> lock(self.rings_mu_);
  for (auto& r : rings_) s.dropped += r->dropped.load();
  return s;
}

void TraceWriter::Impl::PrepareFork() {
  rings_mu_.lock();
  side_mu_.lock();
}
void TraceWriter::Impl::ParentAfterFork() {
  side_mu_.unlock();
  rings_mu_.unlock();
}
void TraceWriter::Impl::ChildAfterFork() {
  side_mu_.unlock();
  rings_mu_.unlock();
  // The parent's writer thread does not exist here and its buffered records are the parent's
  // to write. The child starts its own file at its first record (RestartAfterFork).
  if (!closed_.load()) forked_.store(true);
}

void TraceWriter::Impl::RestartAfterFork() {
  std::lock_guard<std::mutex> lock(restart_mu_);
  if (!forked_.load()) return;
  thread_.detach();  // the std::thread object refers to the parent's thread; it is not ours
  thread_ = std::thread();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  {
    std::lock_guard<std::mutex> l1(rings_mu_);
    rings_.clear();
    next_thread_index_ = 1;
  }
  {
    std::lock_guard<std::mutex> l2(side_mu_);
    side_.Clear();
    for (const auto& [text, id] : interned_) side_.strings.emplace_back(id, text);
  }
  records_written_ = calls_written_ = frames_ = bytes_ = lost_ = 0;
  summary_ = {};  // the child's file starts empty
  captured_uids_.clear();
  in_flight_uids_.clear();
  footer_calls_ = 0;
  flush_req_ = flush_done_ = dump_req_ = 0;
  generation_ = g_generation.fetch_add(1);
  options_.file_name.clear();
  if (!OpenFile().ok()) {
    closed_ = true;  // cannot record in this child; the job goes on
  } else {
    StartThread();
  }
  forked_.store(false);
}

}  // namespace ncclrr
