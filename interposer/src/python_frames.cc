// Reads the calling thread's CPython frame chain in place (see python_frames.h). Everything
// about CPython is looked up at run time: a process without Python never pays for it.
//
// Layouts (64-bit, default build; offsets from each version's headers, offsetof-checked):
//   3.9   PyThreadState.frame -> PyFrameObject: f_back +24, f_code +32, f_lasti +104 (bytes);
//         PyCodeObject.co_filename +104, co_name +112.
//   3.10  the same with f_lasti +96 (instructions).
//   3.11  _PyInterpreterFrame: f_code +32, previous +48, prev_instr +56, owner +69;
//         PyThreadState.cframe -> _PyCFrame.current_frame (+8); code units at code +184.
//   3.12  f_code +0, previous +8, owner +70 (3: a C-stack shim frame);
//         PyThreadState.cframe -> _PyCFrame.current_frame (+0).
//   3.13  f_executable +0, previous +8, owner +70; PyThreadState.current_frame.
//   3.11+ PyCodeObject.co_filename +112, co_qualname +128.   all: PyObject.ob_type +8.
// The thread-state field is found, not assumed: the first offset whose frame chain holds
// objects of type `code` wins. Every read before that goes through a pipe, which fails with
// EFAULT instead of faulting.
#include "python_frames.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "runtime.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

struct Layout {
  int minor = 0;
  int code_off = 0, prev_off = 0;
  int owner_off = -1;     // 3.11+: who owns the frame (before 3.11 every frame is an object)
  int cstack_owner = -1;  // owner value of frames that are not Python code (3.12+)
  int via_cframe = -1;    // -1: thread state holds the frame; else offset in the _PyCFrame
  int instr_off = -1;     // 3.11: prev_instr (lasti computed from it)
  int lasti_off = -1;     // 3.9, 3.10: PyFrameObject.f_lasti (an int)
  int filename_off = 112, name_off = 128;  // PyCodeObject: co_filename, co_qualname (co_name)
  int code_units_off = 0;                  // 3.11: co_code_adaptive
};
constexpr int kTypeOff = 8;

struct Python {
  int (*is_initialized)() = nullptr;
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState: a TLS read
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  long (*str_length)(const void*) = nullptr;
  uint32_t (*str_char)(const void*, long) = nullptr;
  int (*addr2line)(const void*, int) = nullptr;  // PyCode_Addr2Line
  int (*frame_lasti)(const void*) = nullptr;     // 3.12+: PyUnstable_InterpreterFrame_*
  int (*frame_line)(const void*) = nullptr;      // 3.12+; before 3.11 PyFrame_GetLineNumber
  Layout layout;
  int tstate_off = -1;  // found by Calibrate
};

Python g_py;
std::string g_status = "no Python runtime seen";
// 0 undecided, 1 readable, 2 not.
std::atomic<int> g_state{0};
std::mutex g_mu;
int g_attempts = 0;

template <typename T>
T Sym(const char* name) {
  return reinterpret_cast<T>(RealDlsym(RTLD_DEFAULT, name));
}

// Reads `n` bytes at `addr` without faulting: a pipe copies them, or fails with EFAULT.
class SafeReader {
 public:
  SafeReader() {
    if (pipe2(fd_, O_CLOEXEC | O_NONBLOCK) != 0) fd_[0] = fd_[1] = -1;
  }
  ~SafeReader() {
    if (fd_[0] >= 0) close(fd_[0]);
    if (fd_[1] >= 0) close(fd_[1]);
  }
  bool Read(const void* addr, void* out, size_t n) {
    if (fd_[0] < 0 || addr == nullptr) return false;
    if (write(fd_[1], addr, n) != static_cast<ssize_t>(n)) return false;
    return read(fd_[0], out, n) == static_cast<ssize_t>(n);
  }
  template <typename T>
  bool Get(const void* base, int off, T* out) {
    return Read(static_cast<const char*>(base) + off, out, sizeof(T));
  }

 private:
  int fd_[2];
};

bool SetLayout(int minor, Layout* l) {
  l->minor = minor;
  switch (minor) {
    case 9:
    case 10:
      l->code_off = 32, l->prev_off = 24, l->lasti_off = minor == 9 ? 104 : 96;
      l->filename_off = 104, l->name_off = 112;
      return true;
    case 11:
      l->code_off = 32, l->prev_off = 48, l->owner_off = 69, l->via_cframe = 8;
      l->instr_off = 56, l->code_units_off = 184;
      return true;
    case 12:
    case 13:
      l->code_off = 0, l->prev_off = 8, l->owner_off = 70, l->cstack_owner = 3;
      l->via_cframe = minor == 12 ? 0 : -1;
      return true;
    default:
      return false;
  }
}

// Does `frame` start a chain of interpreter frames whose code objects are `code` objects with
// `str` file names (checked through the safe reader)?
bool LooksLikeChain(SafeReader& r, const void* frame) {
  const Layout& l = g_py.layout;
  int checked = 0;
  for (int depth = 0; frame != nullptr && depth < 8; ++depth) {
    uint8_t owner = 0;
    const void* code = nullptr;
    if ((l.owner_off >= 0 && (!r.Get(frame, l.owner_off, &owner) || owner > 4)) ||
        !r.Get(frame, l.code_off, &code))
      return false;
    if (l.owner_off < 0 || owner != l.cstack_owner) {
      const void *type = nullptr, *file = nullptr, *file_type = nullptr;
      if (!r.Get(code, kTypeOff, &type) || type != g_py.code_type) return false;
      if (!r.Get(code, l.filename_off, &file) || !r.Get(file, kTypeOff, &file_type) ||
          file_type != g_py.unicode_type)
        return false;
      ++checked;
    }
    if (!r.Get(frame, l.prev_off, &frame)) return false;
  }
  return checked > 0;
}

const void* FrameAt(SafeReader& r, const void* tstate, int off) {
  const void* p = nullptr;
  if (!r.Get(tstate, off, &p) || p == nullptr) return nullptr;
  if (g_py.layout.via_cframe < 0) return p;
  const void* frame = nullptr;
  return r.Get(p, g_py.layout.via_cframe, &frame) ? frame : nullptr;
}

// Finds the thread-state field that leads to the current frame. Needs a thread that is
// running Python code; false when this one shows none.
bool Calibrate(const void* tstate) {
  SafeReader r;
  for (int off = 8; off < 1024; off += 8) {
    const void* frame = FrameAt(r, tstate, off);
    if (frame != nullptr && LooksLikeChain(r, frame)) {
      g_py.tstate_off = off;
      return true;
    }
  }
  return false;
}

void Decide(int state, std::string status) {
  g_status = std::move(status);
  g_state.store(state, std::memory_order_release);
  if (g_py.is_initialized != nullptr)  // a process without Python: nothing to say
    Note(NoteLevel::kInfo, state == 1 ? "Python call sites: read from " + g_status + " frames"
                                      : "Python call sites: none (" + g_status + ")");
}

// First call with Python running: the symbols, the version, the layout. Then, per thread
// until one succeeds, the calibration.
bool DecideSlow() {
  std::lock_guard<std::mutex> lock(g_mu);
  const int s = g_state.load(std::memory_order_acquire);
  if (s != 0) return s == 1;
  if (g_py.is_initialized == nullptr) {
    g_py.is_initialized = Sym<int (*)()>("Py_IsInitialized");
    if (g_py.is_initialized == nullptr) {
      Decide(2, "no Python runtime in this process");
      return false;
    }
    auto version = Sym<const char* (*)()>("Py_GetVersion");
    int major = 0, minor = 0;
    const char* v = version ? version() : "";
    if (std::sscanf(v, "%d.%d", &major, &minor) != 2 || major != 3 ||
        !SetLayout(minor, &g_py.layout)) {
      Decide(2, "CPython " + std::string(v, std::strcspn(v, " \n")) +
                    ": frames are read for 3.9 to 3.13 only");
      return false;
    }
    g_py.this_thread_state = Sym<void* (*)()>("PyGILState_GetThisThreadState");
    g_py.code_type = Sym<const void*>("PyCode_Type");
    g_py.unicode_type = Sym<const void*>("PyUnicode_Type");
    g_py.str_length = Sym<long (*)(const void*)>("PyUnicode_GetLength");
    g_py.str_char = Sym<uint32_t (*)(const void*, long)>("PyUnicode_ReadChar");
    g_py.addr2line = Sym<int (*)(const void*, int)>("PyCode_Addr2Line");
    if (minor >= 12) {
      g_py.frame_lasti = Sym<int (*)(const void*)>("PyUnstable_InterpreterFrame_GetLasti");
      g_py.frame_line = Sym<int (*)(const void*)>("PyUnstable_InterpreterFrame_GetLine");
    } else if (minor <= 10) {  // a frame is an object; its line is computed, not stored
      g_py.frame_line = Sym<int (*)(const void*)>("PyFrame_GetLineNumber");
    }
    const bool line_ok = minor >= 12   ? g_py.frame_lasti != nullptr && g_py.frame_line != nullptr
                         : minor <= 10 ? g_py.frame_line != nullptr
                                       : g_py.addr2line != nullptr;
    if (!g_py.this_thread_state || !g_py.code_type || !g_py.unicode_type || !g_py.str_length ||
        !g_py.str_char || !line_ok) {
      Decide(2, "CPython " + std::string(v, std::strcspn(v, " \n")) +
                    ": a function ncclrr reads frames with is missing");
      return false;
    }
    g_status = "CPython " + std::string(v, std::strcspn(v, " \n"));
  }
  if (!g_py.is_initialized()) return false;  // not yet: ask again at a later call
  const void* tstate = g_py.this_thread_state();
  if (tstate == nullptr) return false;  // a thread Python never ran on (e.g. XLA's)
  if (Calibrate(tstate)) {
    Decide(1, g_status);
    return true;
  }
  // A Python thread inside a C call always has a frame; a few misses mean the layout differs.
  if (++g_attempts == 8)
    Decide(2, g_status + ": its frame layout was not recognized; Python call sites are off");
  return false;
}

}  // namespace

bool PythonFramesReadable() {
  const int s = g_state.load(std::memory_order_acquire);
  if (__builtin_expect(s != 0, 1)) return s == 1;
  return DecideSlow();
}

const std::string& PythonFramesStatus() { return g_status; }

PyFrameCursor::PyFrameCursor() {
  if (!g_py.is_initialized()) return;  // finalized: thread states may be gone
  const void* tstate = g_py.this_thread_state();
  if (tstate == nullptr) return;
  const Layout& l = g_py.layout;
  p_ = *reinterpret_cast<const char* const*>(static_cast<const char*>(tstate) + g_py.tstate_off);
  if (p_ != nullptr && l.via_cframe >= 0)
    p_ = *reinterpret_cast<const char* const*>(p_ + l.via_cframe);
}

bool PyFrameCursor::Next(PyFrameRef* out) {
  const Layout& l = g_py.layout;
  for (int guard = 0; p_ != nullptr && guard < 4096; ++guard) {
    const char* frame = p_;
    p_ = *reinterpret_cast<const char* const*>(frame + l.prev_off);
    if (l.owner_off >= 0 && static_cast<int8_t>(frame[l.owner_off]) == l.cstack_owner) continue;
    out->frame = frame;
    out->code = *reinterpret_cast<const void* const*>(frame + l.code_off);
    out->lasti = 0;
    return true;
  }
  return false;
}

int PyFrameCursor::Lasti(const PyFrameRef& f) {
  const Layout& l = g_py.layout;
  if (l.lasti_off >= 0)
    return *reinterpret_cast<const int*>(static_cast<const char*>(f.frame) + l.lasti_off);
  if (l.instr_off < 0) return g_py.frame_lasti(f.frame);
  const char* instr =
      *reinterpret_cast<const char* const*>(static_cast<const char*>(f.frame) + l.instr_off);
  return static_cast<int>((instr - static_cast<const char*>(f.code) - l.code_units_off) / 2);
}

namespace {
void AppendUtf8(uint32_t c, std::string* out) {
  if ((c >= 0xD800 && c < 0xE000) || c > 0x10FFFF) c = '?';  // lone surrogates: not UTF-8
  if (c < 0x80) {
    *out += static_cast<char>(c);
  } else if (c < 0x800) {
    *out += static_cast<char>(0xC0 | (c >> 6));
    *out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    *out += static_cast<char>(0xE0 | (c >> 12));
    *out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (c >> 18));
    *out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string StringAt(const void* code, int off) {
  const void* s = *reinterpret_cast<const void* const*>(static_cast<const char*>(code) + off);
  if (s == nullptr || *reinterpret_cast<const void* const*>(static_cast<const char*>(s) +
                                                            kTypeOff) != g_py.unicode_type)
    return "?";
  const long n = g_py.str_length(s);
  std::string text;
  for (long i = 0; i < n && i < 4096; ++i) AppendUtf8(g_py.str_char(s, i), &text);
  return text;
}
}  // namespace

const void* PyCodeFileObject(const void* code) {
  return *reinterpret_cast<const void* const*>(static_cast<const char*>(code) +
                                               g_py.layout.filename_off);
}

std::string PyCodeFile(const void* code) { return StringAt(code, g_py.layout.filename_off); }
std::string PyCodeName(const void* code) { return StringAt(code, g_py.layout.name_off); }

int PyFrameLine(const PyFrameRef& f) {
  if (g_py.frame_line != nullptr) return g_py.frame_line(f.frame);
  return g_py.addr2line(f.code, f.lasti * 2);
}

}  // namespace ncclrr::interpose
