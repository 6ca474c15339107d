#pragma once
// The one reader of NCCLRR_* environment knobs, shared by both capture routes (the preload
// library and the profiler plugin) so a value means the same on each. A knob that is unset or
// empty takes its default. Booleans: 1, true, yes, on / 0, false, no, off (any case). Numbers:
// decimal whole numbers within the knob's range. A malformed value never stops the job: it is
// reported once on stderr, prefixed by `who`, and the default is kept.
#include <cstdint>
#include <string>

namespace ncclrr::env {

bool Bool(const char* name, bool fallback, const char* who = "ncclrr");
uint64_t Unsigned(const char* name, uint64_t fallback, uint64_t max, const char* who = "ncclrr");
// The value, or `fallback` when unset or empty.
std::string String(const char* name, const char* fallback);

}  // namespace ncclrr::env
