// The calling thread's Python frames, read from its own frame chain without the GIL.
//
// PyTorch releases the GIL before it calls NCCL (its c10d bindings do), so asking CPython's API
// for the frames (PyEval_GetFrame, which creates frame objects) is not allowed at that point.
// But the chain of the thread's own interpreter frames cannot change while the thread is inside
// a C call, so it can be read in place, the way profilers read other processes. The layout is
// CPython's internal one (3.9 to 3.13; 64-bit, default build): it is checked once against
// the interpreter's own type objects through reads that cannot fault, and reading is turned off
// (with the reason) when it does not match.
#pragma once
#include <cstdint>
#include <string>

namespace ncclrr::interpose {

struct PyFrameRef {
  const void* frame = nullptr;  // the interpreter frame (valid only during the call)
  const void* code = nullptr;   // its code object
  int lasti = 0;                // index of the instruction being executed
};

// False when this process has no (initialized) Python or one whose frames cannot be read;
// PythonFramesStatus() then says why. Decided at the first call made with Python running.
bool PythonFramesReadable();
const std::string& PythonFramesStatus();  // "CPython 3.12.3" or why not

// Walks the calling thread's frames, innermost first, only as far as asked (deep stacks cost
// nothing beyond the frames a site keeps). Only after PythonFramesReadable() said true.
class PyFrameCursor {
 public:
  PyFrameCursor();             // at the innermost frame, if the thread has one
  bool Next(PyFrameRef* out);  // the next frame with Python code (lasti left 0); false at end
  static int Lasti(const PyFrameRef& f);

 private:
  const char* p_ = nullptr;
};

// The code object's file name object: with its address, what tells one code object from another.
const void* PyCodeFileObject(const void* code);
// For a frame of the current stack (slow: when a site is first seen).
std::string PyCodeFile(const void* code);
std::string PyCodeName(const void* code);
int PyFrameLine(const PyFrameRef& f);

}  // namespace ncclrr::interpose
