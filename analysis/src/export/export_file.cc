#include <fstream>

#include "ncclrr/analysis/perfetto_export.h"

namespace ncclrr::analysis {

Status ExportToFile(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return IoError("cannot create '" + path + "'; check that its directory exists and is writable");
  NCCLRR_RETURN_IF_ERROR(write(out));
  out.close();
  if (!out) return IoError("writing '" + path + "' failed (disk full?)");
  return Status::Ok();
}

}  // namespace ncclrr::analysis
