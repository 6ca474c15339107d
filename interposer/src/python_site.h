// Python call sites: the innermost frames of the calling thread that are not in the
// frameworks' own code (torch, jax), as "train.py:214 in Trainer.step<train.py:300 in main".
// On by default in a Python process (NCCLRR_PY_SITES=0 turns it off); NCCLRR_PY_DEPTH frames
// (default 2); NCCLRR_PY_SKIP: comma-separated path fragments of frames to pass over.
#pragma once
#include <cstdint>
#include <string>

namespace ncclrr::interpose {

// The user frames of the calling thread: what identifies its site.
struct PythonSite {
  static constexpr int kMaxDepth = 8;
  const void* frame[kMaxDepth];
  const void* code[kMaxDepth];
  int lasti[kMaxDepth];
  int depth = 0;
  uint64_t key = 0;  // hash of (code, instruction) of each frame: one per distinct site
};

// False when the thread has no Python frames (or Python sites are off or unreadable here).
bool ReadPythonSite(PythonSite* out);
// "file.py:LINE in name<file.py:LINE in name" (slow: once per distinct site).
std::string PythonSiteText(const PythonSite& site);
// The interned id of the calling thread's Python site, 0 when it has none.
uint32_t PythonSiteId();
// Whether Python sites are wanted at all (config), for the per-call check.
bool PythonSitesWanted();

}  // namespace ncclrr::interpose
