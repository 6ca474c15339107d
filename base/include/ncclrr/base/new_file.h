#pragma once
// Files the recorder writes are always new: created with O_EXCL, so that two recordings into one
// directory (or a later process that got an earlier one's pid) never truncate or interleave each
// other's files, and with O_NOFOLLOW, so that a symlink planted in a shared trace directory cannot
// redirect a (possibly root) job's writes to another file.
#include <string>

namespace ncclrr {

// Creates `name` in `dir` for writing (mode 0644, close-on-exec). When a file of that name exists
// already, "stem-2.ext", "stem-3.ext", ... are tried instead. Returns the descriptor and sets
// *created to the name used, or returns -1 with errno set (EEXIST after 1000 names).
int CreateNewFile(const std::string& dir, const std::string& name, std::string* created);

}  // namespace ncclrr
