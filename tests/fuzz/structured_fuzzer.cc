// libFuzzer target with a structure-aware mutator. A byte-flipping fuzzer never gets past the
// frames' checksums; here every mutated input is re-framed so its checksums hold: byte mutations
// are followed by a CRC fix-up of every frame, a frame's decoded payload (the FlatBuffer the
// records live in) is mutated and re-framed, or a frame is re-stored transposed with hostile
// region fields. Each input then goes through every reading path: the whole-file reader, the
// follower of growing files, the model, every checker, the replay plan, the Perfetto export and
// the live status. None may crash, hang or leak (ASan, UBSan). Seeds: scripts/fuzz.sh.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "frame_io.h"
#include "frame_reader.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/live_status.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/trace/format.h"
#include "ncclrr/trace/trace_follower.h"
#include "ncclrr/trace/trace_reader.h"
#include "plan.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace ncclrr;

struct FrameSpan {
  size_t offset = 0, bytes = 0;
};

// Where frames start after the header, as the writer laid them out (plausible headers that fit).
std::vector<FrameSpan> Frames(const std::vector<uint8_t>& b, size_t* header_end) {
  std::vector<FrameSpan> out;
  HeaderData h;
  if (!internal::ParseHeader("fuzz", {b.data(), b.size()}, &h, header_end).ok()) return out;
  size_t off = *header_end;
  while (off + format::kFrameHeaderSize <= b.size()) {
    internal::FrameHeader fh;
    std::memcpy(&fh, b.data() + off, sizeof fh);
    const size_t ext = (fh.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    const size_t n = format::kFrameHeaderSize + ext + fh.stored_size;
    if (fh.magic != format::kFrameMagic || fh.stored_size > format::kMaxFrameBytes ||
        off + n > b.size()) {
      ++off;
      continue;
    }
    out.push_back({off, n});
    off += n;
  }
  return out;
}

// Recomputes the checksum of every frame found.
void FixChecksums(std::vector<uint8_t>& b) {
  size_t end = 0;
  for (const FrameSpan& f : Frames(b, &end)) {
    internal::FrameHeader h;
    std::memcpy(&h, b.data() + f.offset, sizeof h);
    const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    const uint8_t* e = b.data() + f.offset + format::kFrameHeaderSize;
    h.crc = internal::FrameCrc(h, e, e + ext);
    std::memcpy(b.data() + f.offset, &h, sizeof h);
  }
}

uint32_t Extreme(std::mt19937& rng) {
  static const uint32_t kValues[] = {
      0, 1, 2, 7, 8, 255, 4096, 1u << 20, 1u << 30, 1u << 31, 0x7fffffff, 0xfffffff0, 0xffffffff};
  return rng() % 2 ? kValues[rng() % (sizeof kValues / sizeof kValues[0])] : rng();
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(data, data + size);
  size_t header_end = 0;
  const std::vector<FrameSpan> frames = Frames(b, &header_end);
  const unsigned choice = frames.empty() ? 0 : rng() % 3;
  if (choice == 0) {  // bytes anywhere, then checksums that hold
    b.resize(std::max<size_t>(max_size, size));
    b.resize(LLVMFuzzerMutate(b.data(), size, max_size));
    FixChecksums(b);
  } else {
    const FrameSpan f = frames[rng() % frames.size()];
    internal::FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, fbytes = 0;
    std::vector<uint8_t> scratch[2];
    if (internal::CheckFrame({b.data(), b.size()}, f.offset, &h, scratch, &payload, &psize,
                             &fbytes) != internal::FrameCheck::kOk)
      return LLVMFuzzerMutate(data, size, max_size);
    std::vector<uint8_t> p(payload, payload + psize);
    std::vector<uint8_t> framed;
    if (choice == 1) {  // the records themselves
      const size_t room = p.size() * 2 + 64;
      p.resize(room);
      p.resize(LLVMFuzzerMutate(p.data(), psize, room));
      framed = internal::EncodeStoredFrame(p, nullptr);
    } else {  // stored transposed, with hostile region fields
      const uint32_t region[3] = {Extreme(rng), Extreme(rng), Extreme(rng)};
      framed = internal::EncodeStoredFrame(p, region);
    }
    b.erase(b.begin() + static_cast<ptrdiff_t>(f.offset),
            b.begin() + static_cast<ptrdiff_t>(f.offset + f.bytes));
    b.insert(b.begin() + static_cast<ptrdiff_t>(f.offset), framed.begin(), framed.end());
  }
  if (b.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, b.data(), b.size());
  return b.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = "/tmp/ncclrr-sfuzz-" + std::to_string(getpid());
  static const std::string path = dir + "/fuzz.ncclrr";
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  (void)ReadTraceFile(path);
  {
    TraceFollower follow(path);
    TraceFile delta;
    (void)follow.Poll(&delta);
  }
  analysis::LoadOptions lo;
  lo.threads = 1;
  auto model = analysis::TraceModel::Load(dir, lo);
  if (model.ok()) {
    analysis::CheckOptions co;
    co.stable = true;
    const analysis::Report report = analysis::Check(*model, co);
    std::ostringstream json;
    (void)analysis::ExportPerfetto(*model, &report, {}, json);
    (void)analysis::ExportChromeJson(*model, &report, {}, json);
    (void)replay::BuildPlan(*model);
  }
  analysis::LiveStatus live(dir);
  (void)live.Refresh(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  return 0;
}
