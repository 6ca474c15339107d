#include "ncclrr/capture_side_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ncclrr {

std::string CaptureFilePath(const std::string& dir, const CaptureRefData& ref) {
  return !ref.file.empty() && ref.file[0] == '/' ? ref.file : dir + "/" + ref.file;
}

StatusOr<std::string> ReadCapturedBuffer(const std::string& dir, const CaptureRefData& ref) {
  const std::string path = CaptureFilePath(dir, ref);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return IoError("capture side file " + path + " cannot be read (" + std::strerror(errno) +
                   "): copy the .capture files along with the .ncclrr files");
  const uint64_t end = ref.offset + ref.bytes;
  if (static_cast<uint64_t>(st.st_size) < end)
    return Corrupt("capture side file " + path + " is truncated: it holds " +
                   std::to_string(st.st_size) + " bytes, the trace references bytes up to " +
                   std::to_string(end) + " (a full disk or an interrupted copy)");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(ref.bytes, '\0');
  in.seekg(static_cast<std::streamoff>(ref.offset));
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return IoError("capture side file " + path + ": reading " + std::to_string(ref.bytes) +
                   " bytes at offset " + std::to_string(ref.offset) + " failed");
  return bytes;
}

}  // namespace ncclrr
