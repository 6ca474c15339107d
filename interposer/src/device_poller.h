// One thread of ncclrr's own watches the GPU work that ncclrr leaves in flight on the job's
// streams: the sketch slots (sketch_device_path.cc) and the buffer copies into pinned staging
// (capture_device_path.cc). Each registers a poll function; the thread calls them in turn and
// then sleeps for the shortest wait any of them asked for, or, when none has anything in flight,
// until WakeDevicePoller(). Nothing here runs on the job's threads except the wake-up.
#pragma once
#include <chrono>

namespace ncclrr::interpose {

// One pass over what the source has in flight (results written, slots released); returns how
// long to wait before the next pass, or zero when nothing is left in flight.
using DevicePollFn = std::chrono::microseconds (*)();

enum class DevicePollSource : int { kSketches = 0, kCaptures, kCount };

void SetDevicePollSource(DevicePollSource source, DevicePollFn fn);

// New work is in flight: wakes the thread, starting it at first use (and again in a forked
// child, which has no threads). Cheap; may be called with the source's own lock held.
void WakeDevicePoller();

}  // namespace ncclrr::interpose
