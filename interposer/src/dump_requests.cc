#include "dump_requests.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

namespace ncclrr::interpose {
namespace {

constexpr const char* kRequestFile = "/ncclrr-dump-request";  // as analysis::kDumpRequestFile

// Only the housekeeping thread calls these.
bool g_looked = false;
struct timespec g_seen_mtime {};
ino_t g_seen_ino = 0;
std::string g_seen_id;  // the last request handled (or written) here

std::string FirstWord(const std::string& s) { return s.substr(0, s.find_first_of(" \n")); }

}  // namespace

bool NewDumpRequest(const std::string& trace_dir, std::string* text) {
  const std::string path = trace_dir + kRequestFile;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    g_looked = true;
    return false;
  }
  if (g_looked && st.st_ino == g_seen_ino && st.st_mtim.tv_sec == g_seen_mtime.tv_sec &&
      st.st_mtim.tv_nsec == g_seen_mtime.tv_nsec)
    return false;  // unchanged since the last look: the common case, one stat
  g_seen_ino = st.st_ino;
  g_seen_mtime = st.st_mtim;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  const std::string content(buf, static_cast<size_t>(n));
  const std::string id = FirstWord(content);
  const bool first = !g_looked;
  g_looked = true;
  if (id.empty() || id == g_seen_id) return false;
  g_seen_id = id;
  if (first) return false;  // a request older than this process
  *text = content.substr(0, content.find('\n'));
  return true;
}

void WriteDumpRequest(const std::string& trace_dir, const std::string& why) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  const std::string id =
      std::to_string(now.tv_sec * 1'000'000'000LL + now.tv_nsec) + "-" + std::to_string(getpid());
  const std::string text =
      id + " watchdog on " + host + " pid " + std::to_string(getpid()) + ": " + why + "\n";
  const std::string path = trace_dir + kRequestFile;
  const std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;  // recording less, never failing the job
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return;
  }
  g_seen_id = id;  // this process dumped already
}

}  // namespace ncclrr::interpose
