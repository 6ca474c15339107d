#pragma once
// On-disk framing constants of a .ncclrr file. The layout and the version bump policy are
// written at the top of schemas/trace.fbs.
#include <cstddef>
#include <cstdint>

namespace ncclrr::format {

inline constexpr char kFileMagic[8] = {'\x89', 'N', 'C', 'C', 'L', 'R', 'R', '\n'};
inline constexpr uint16_t kMajor = 1;
// 1.1: sketch launch, SendBeforeSample, Scalar. 1.2: the footer's summary, alone in the last
// frame.
inline constexpr uint16_t kMinor = 2;
inline constexpr size_t kFilePreambleSize = 20;  // magic, major, minor, header_size, crc

inline constexpr uint32_t kFrameMagic = 0x46525248;  // "HRRF" read little-endian as bytes "HRRF"
inline constexpr size_t kFrameHeaderSize = 20;
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;  // a sane upper bound for readers

enum class Codec : uint16_t { kNone = 0, kZstd = 1 };

// Frame flag: a region of the decoded payload (the calls vector) is stored column-major in
// 64-bit words, each column delta-coded, so that zstd sees long runs of small numbers (5 bytes
// per call on disk instead of 13, and faster compression). A 12-byte extension follows the frame
// header: u32 region_offset, u32 row_words, u32 rows.
inline constexpr uint16_t kFlagTransposed = 1;
inline constexpr size_t kFrameExtensionSize = 12;

inline constexpr const char* kFileSuffix = ".ncclrr";
// A footer whose reason holds this was written after writing failed: what follows is strerror
// ("No space left on device" when the disk was full); the footer's dropped count includes every
// record that could not be written.
inline constexpr const char* kWriteErrorPrefix = "write error: ";

// The note a process writes when its GPU timing marks calls seen running on the GPU (start
// marks, GpuTimeRecord with end_ns 0): `ncclrr status` may then tell a call not started on the
// GPU from one running.
inline constexpr const char* kGpuProgressNote = "GPU progress: calls running on the GPU are marked";

}  // namespace ncclrr::format
