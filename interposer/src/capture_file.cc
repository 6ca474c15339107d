// The side file of `record --capture`: <host>-<pid>.capture beside the process's trace file
// (NCCLRR_CAPTURE_FILE overrides it), the captured buffers one after another, each referenced by
// a CaptureRef (file name relative to the trace directory, offset, bytes) once it is written.
// Only ncclrr's own threads write it: the capture writer thread (copies made by host-stream
// callbacks) and the GPU poller. A failed write (disk full) stops capturing with a note; the
// bytes written before it stay referenced.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "capture_jobs.h"
#include "env_config.h"
#include "ncclrr/base/new_file.h"
#include "runtime.h"

namespace ncclrr::interpose {
namespace {

// --- the file (under g_file_mu) ----------------------------------------------------------------
std::mutex g_file_mu;
int g_fd = -1;
bool g_failed = false;
std::string g_name;  // as CaptureRefs name it
uint64_t g_offset = 0;

void FailLocked(const std::string& path, const std::string& what, int err) {
  g_failed = true;
  Note(NoteLevel::kWarning, "capture: " + what + " " + path + ": " + std::strerror(err) +
                                "; the buffers written before stay referenced");
  StopCapturing();
}

bool OpenLocked() {
  if (g_fd >= 0) return true;
  if (g_failed || g_runtime.writer == nullptr) return false;
  const std::string& trace = g_runtime.writer->path();
  const size_t slash = trace.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : trace.substr(0, slash);
  std::string stem = trace.substr(slash == std::string::npos ? 0 : slash + 1);
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos) stem.erase(dot);
  const std::string& custom = GetConfig().capture_file;
  g_name = custom.empty() ? stem + ".capture" : custom;
  if (g_name[0] == '/') {
    // A path the user named (NCCLRR_CAPTURE_FILE) is written as named, but never through a
    // symbolic link; check reads captures only from the trace directory.
    g_fd = ::open(g_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (g_fd < 0) FailLocked(g_name, "cannot create the side file", errno);
    return g_fd >= 0;
  }
  std::string created;
  g_fd = CreateNewFile(dir, g_name, &created);  // in the trace directory: always a new file
  if (g_fd < 0) {
    FailLocked(dir + "/" + g_name, "cannot create the side file", errno);
    return false;
  }
  g_name = created;  // what the trace's references name
  return true;
}

// --- the writer thread's queue ------------------------------------------------------------------
struct Pending {
  uint64_t call_uid;
  SketchWhich which;
  std::string bytes;
};
// Never destroyed: the writer thread still waits on it while static destructors run at exit.
struct Queue {
  std::mutex mu;
  std::condition_variable cv, idle_cv;
  std::deque<Pending> items;  // under mu
  bool writing = false;       // under mu
  bool thread_started = false;
};
Queue& TheQueue() {
  static Queue* q = new Queue();
  return *q;
}
std::atomic<uint64_t> g_queued_bytes{0};

void WriterLoop() {
  Queue& q = TheQueue();
  std::unique_lock<std::mutex> lock(q.mu);
  for (;;) {
    q.cv.wait(lock, [&] { return !q.items.empty(); });
    Pending p = std::move(q.items.front());
    q.items.pop_front();
    q.writing = true;
    lock.unlock();
    WriteCapturedBytes(p.call_uid, p.which, p.bytes.data(), p.bytes.size());
    g_queued_bytes.fetch_sub(p.bytes.size());
    lock.lock();
    q.writing = false;
    if (q.items.empty()) q.idle_cv.notify_all();
  }
}

}  // namespace

void WriteCapturedBytes(uint64_t call_uid, SketchWhich which, const void* data, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_file_mu);
  if (!OpenLocked()) return CountCaptureSkip(CaptureSkip::kWriteFailed, 1);
  const char* p = static_cast<const char*>(data);
  for (uint64_t done = 0; done < bytes;) {
    const ssize_t n = ::pwrite(g_fd, p + done, bytes - done, static_cast<off_t>(g_offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n == 0 ? ENOSPC : errno;
      FailLocked(g_name,
                 "writing " + std::to_string(bytes) + " bytes at offset " +
                     std::to_string(g_offset + done) + " failed for",
                 err);
      ::close(g_fd);
      g_fd = -1;
      return CountCaptureSkip(CaptureSkip::kWriteFailed, 1);
    }
    done += static_cast<uint64_t>(n);
  }
  if (g_runtime.writer != nullptr)
    g_runtime.writer->AddCapture(CaptureRefData{call_uid, which, g_name, g_offset, bytes});
  g_offset += bytes;
}

void QueueCapturedBytes(uint64_t call_uid, SketchWhich which, std::string bytes) {
  g_queued_bytes.fetch_add(bytes.size());
  Queue& q = TheQueue();
  std::lock_guard<std::mutex> lock(q.mu);
  q.items.push_back({call_uid, which, std::move(bytes)});
  if (!q.thread_started) {
    q.thread_started = true;
    std::thread(WriterLoop).detach();
  }
  q.cv.notify_one();
}

uint64_t QueuedCaptureBytes() { return g_queued_bytes.load(std::memory_order_relaxed); }

void DrainCapturedBytes() {
  Queue& q = TheQueue();
  std::unique_lock<std::mutex> lock(q.mu);
  const bool idle = q.idle_cv.wait_for(lock, std::chrono::seconds(60),
                                       [&] { return q.items.empty() && !q.writing; });
  if (!idle)
    Note(NoteLevel::kWarning, "capture: " + std::to_string(q.items.size()) +
                                  " buffers were still waiting to be written at exit (60 s)");
}

}  // namespace ncclrr::interpose
