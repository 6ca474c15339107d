#pragma once
// Clock alignment: per file, CLOCK_MONOTONIC -> CLOCK_REALTIME from its ClockPair records; across
// hosts, a correction from matched collectives (NTP error is milliseconds, a collective is
// microseconds).
#include <cstdint>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// Median of (real - mono) over the file's clock pairs; the header's start pair when none.
int64_t MonotonicToRealtimeOffset(const TraceFile& t);

// Shifts the files of every host but the first so that matched collectives (same comm, same
// seq) line up: the median difference of their completion times (GPU end when recorded, else the
// host call's exit). Sets FileView::offset_refined on corrected files.
void RefineClocksAcrossHosts(std::vector<FileView>* files, const std::vector<CommModel>& comms,
                             const TraceDir& dir);

// The same in two steps, for a trace spread over processes: each samples the communicators it
// holds whole (`only`, by comm index; null: all), the samples are pooled, and every process
// applies the medians of the pool.
ClockSamples SampleClockDifferences(const std::vector<FileView>& files,
                                    const std::vector<CommModel>& comms, const TraceDir& dir,
                                    const std::vector<bool>* only);
void ApplyClockCorrections(std::vector<FileView>* files, ClockSamples samples);

}  // namespace ncclrr::analysis
