#include "frame_io.h"

#include <zstd.h>

#include <cstring>

#include "ncclrr/crc32c.h"

namespace ncclrr::internal {

std::vector<uint8_t> EncodeFilePreamble(const uint8_t* header, uint32_t header_size) {
  std::vector<uint8_t> out(format::kFilePreambleSize + header_size);
  uint8_t* p = out.data();
  std::memcpy(p, format::kFileMagic, 8);
  std::memcpy(p + 8, &format::kMajor, 2);
  std::memcpy(p + 10, &format::kMinor, 2);
  std::memcpy(p + 12, &header_size, 4);
  // The checksum covers the version and size fields too, so no bit of the preamble after the
  // magic can change unnoticed.
  const uint32_t crc = Crc32c(header, header_size, Crc32c(p + 8, 8));
  std::memcpy(p + 16, &crc, 4);
  std::memcpy(p + 20, header, header_size);
  return out;
}

uint32_t FrameCrc(const FrameHeader& h, const uint8_t* stored) {
  // Covers the first 16 header bytes (everything but the crc itself) and the stored payload.
  const uint32_t c = Crc32c(&h, 16);
  return Crc32c(stored, h.stored_size, c);
}

void EncodeFrame(const uint8_t* payload, uint32_t size, bool compress, void* zstd_cctx,
                 std::vector<uint8_t>* out) {
  FrameHeader h{format::kFrameMagic, static_cast<uint16_t>(format::Codec::kNone), 0, size, size, 0};
  out->resize(format::kFrameHeaderSize + ZSTD_compressBound(size));
  uint8_t* body = out->data() + format::kFrameHeaderSize;
  size_t stored = size;
  if (compress && zstd_cctx != nullptr) {
    const size_t z = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_cctx), body,
                                       ZSTD_compressBound(size), payload, size, 3);
    if (!ZSTD_isError(z) && z < size) {
      stored = z;
      h.codec = static_cast<uint16_t>(format::Codec::kZstd);
    }
  }
  if (h.codec == static_cast<uint16_t>(format::Codec::kNone)) std::memcpy(body, payload, size);
  h.stored_size = static_cast<uint32_t>(stored);
  h.crc = FrameCrc(h, body);
  std::memcpy(out->data(), &h, sizeof h);
  out->resize(format::kFrameHeaderSize + stored);
}

}  // namespace ncclrr::internal
