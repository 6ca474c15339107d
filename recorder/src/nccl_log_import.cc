#include "ncclrr/nccl_log_import.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <tuple>

#include "ncclrr/format.h"
#include "ncclrr/trace_writer.h"

namespace ncclrr {
namespace {

// NCCL 2.x prints (enqueue.cc): "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d
// op %d root %d comm %p [nranks=%d] stream %p", and on init (init.cc): "%s comm %p rank %d
// nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE", or for splits
// "... busId %lx parent %p splitCount %d color %d key %d - Init COMPLETE".
const std::regex kPrefix(R"(([^\s:\[\]]+):(\d+):(\d+) \[(\d+)\] NCCL INFO (.*))");
const std::regex kColl(
    R"((\w+): opCount ([0-9a-fA-Fx]+) sendbuff (\S+) recvbuff (\S+) count (\d+) datatype (\d+) )"
    R"(op (\d+) root (-?\d+) comm (\S+) \[nranks=(\d+)\] stream (\S+))");
const std::regex kInit(
    R"((\w+) comm (\S+) rank (\d+) nranks (\d+) cudaDev (\d+) nvmlDev \d+ busId [0-9a-fA-F]+ )"
    R"((?:commId 0x([0-9a-fA-F]+)|parent (\S+) splitCount (\d+) color (-?\d+) key (-?\d+)) ?- Init COMPLETE)");

uint64_t ParsePtr(const std::string& s) {
  if (s == "(nil)") return 0;
  return std::stoull(s, nullptr, 16);
}

// Stand-in id for a split communicator: the same on every rank of the child (they share parent
// id, split ordinal and color), never equal to a root id in practice.
uint64_t SplitId(uint64_t parent, int split_count, int color) {
  uint64_t h = parent ^ 0x9e3779b97f4a7c15ull;
  for (uint64_t v : {uint64_t(split_count), uint64_t(uint32_t(color))}) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h;
}

struct CommState {
  uint64_t id = 0;
  int rank = -1;
  int device = -1;
  uint64_t coll_seq = 0;
  std::map<Api, uint64_t> type_seq;
  std::map<std::pair<int, int>, uint64_t> p2p_seq;  // (direction, peer)
};

struct Process {
  std::unique_ptr<TraceWriter> writer;
  std::map<uint64_t, CommState> comms;  // by ncclComm_t pointer
  int64_t clock = 0;                    // log order, 1 us per line
};

}  // namespace

StatusOr<NcclLogImportResult> ImportNcclLogs(const std::vector<std::string>& logs,
                                             const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (logs.empty()) return InvalidArgument("no log files given");
  std::error_code ec;
  if (fs::exists(out_dir, ec))
    for (const auto& e : fs::directory_iterator(out_dir, ec))
      if (e.path().extension() == format::kFileSuffix)
        return InvalidArgument("'" + out_dir + "' already holds a trace (" +
                               e.path().filename().string() + "); choose an empty directory");
  NcclLogImportResult result;
  std::map<std::pair<std::string, int>, Process> procs;
  for (const auto& path : logs) {
    std::ifstream in(path);
    if (!in) return IoError("cannot read log '" + path + "'");
    std::string line;
    std::smatch m, c;
    uint64_t unreadable = 0;  // lines whose numbers do not fit (std::out_of_range)
    while (std::getline(in, line)) {
      ++result.lines;
      if (line.find("NCCL INFO") == std::string::npos) continue;
      try {
        if (!std::regex_search(line, m, kPrefix)) continue;
        const std::string host = m[1];
        const int pid = std::stoi(m[2]);
        const uint32_t tid = static_cast<uint32_t>(std::stoul(m[3]));
        const std::string body = m[5];
        Process& p = procs[{host, pid}];
        if (!p.writer) {
          WriterOptions o;
          o.dir = out_dir;
          // The host comes from the log: only a plain name may reach the file system.
          std::string safe = host;
          for (char& ch : safe)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' &&
                ch != '_')
              ch = '_';
          o.file_name = safe + "-" + std::to_string(pid) + format::kFileSuffix;
          o.overflow = OverflowPolicy::kBlock;
          o.header.host = host;
          o.header.pid = pid;
          o.header.route = Route::kNcclLog;
          o.header.argv = {"ncclrr", "import-nccl-log", path};
          auto w = TraceWriter::Create(o);
          if (!w.ok()) return w.status();
          p.writer = std::move(w.value());
          p.writer->AddNote(NoteLevel::kInfo, "imported from NCCL log " + path +
                                                  "; times are log order (1 us per line)");
          result.files.push_back(p.writer->path());
        }
        p.clock += 1000;
        if (std::regex_search(body, c, kInit)) {
          CommState& cs = p.comms[ParsePtr(c[2])];
          cs = CommState{};
          cs.rank = std::stoi(c[3]);
          cs.device = std::stoi(c[5]);
          CommRecord r{};
          r.handle = ParsePtr(c[2]);
          r.nranks = std::stoi(c[4]);
          r.rank = cs.rank;
          r.device = cs.device;
          r.create_ns = p.clock;
          r.blocking = 1;
          if (c[6].matched) {
            cs.id = std::stoull(c[6], nullptr, 16);
            r.nccl_hash_known = 1;
            r.origin = static_cast<uint8_t>(c[1] == "ncclCommInitAll" ? CommOrigin::kInitAll
                                                                      : CommOrigin::kInitRank);
          } else {
            const auto parent = p.comms.find(ParsePtr(c[7]));
            r.parent_id = parent != p.comms.end() ? parent->second.id : ParsePtr(c[7]);
            r.color = std::stoi(c[9]);
            r.key = std::stoi(c[10]);
            cs.id = SplitId(r.parent_id, std::stoi(c[8]), r.color);
            r.origin = static_cast<uint8_t>(CommOrigin::kSplit);
          }
          r.comm_id = cs.id;
          Record rec{};
          rec.kind = RecordKind::kComm;
          rec.comm = r;
          p.writer->Append(rec);
          ++result.comms;
          continue;
        }
        if (!std::regex_search(body, c, kColl)) continue;
        const Api api = ApiFromName(c[1].str());
        if (api == Api::kUnknown) continue;
        const uint64_t comm_ptr = ParsePtr(c[9]);
        auto it = p.comms.find(comm_ptr);
        if (it == p.comms.end()) {
          // A comm whose init lines are missing (INIT subsystem not logged): stand-in identity.
          ++result.unmatched_calls;
          it = p.comms.emplace(comm_ptr, CommState{}).first;
          it->second.id = comm_ptr;
        }
        CommState& cs = it->second;
        CallRecord call{};
        call.uid = p.writer->NextCallUid();
        call.comm_id = cs.id;
        call.api = static_cast<uint16_t>(api);
        call.sendbuff = ParsePtr(c[3]);
        call.recvbuff = ParsePtr(c[4]);
        call.count = std::stoull(c[5]);
        call.dtype = static_cast<uint8_t>(std::stoi(c[6]));
        call.op = std::stoi(c[7]);
        call.root_peer = IsRooted(api) || IsP2p(api) ? std::stoi(c[8]) : -1;
        call.stream = ParsePtr(c[11]);
        call.rank = cs.rank;
        call.device = cs.device >= 0 ? cs.device : std::stoi(m[4]);
        call.tid = tid;
        call.enter_ns = call.exit_ns = p.clock;
        call.type_seq = cs.type_seq[api]++;
        if (IsP2p(api))
          call.seq = cs.p2p_seq[{api == Api::kSend ? 0 : 1, call.root_peer}]++;
        else
          call.seq = cs.coll_seq++;
        if (call.sendbuff == call.recvbuff) call.flags |= call_flags::kInPlace;
        p.writer->AppendCall(call);
        ++result.calls;
      } catch (const std::exception&) {  // a number out of range: the line is not NCCL's
        ++unreadable;
      }
    }
    if (unreadable > 0)
      result.warnings.push_back(path + ": " + std::to_string(unreadable) +
                                " NCCL INFO line(s) hold numbers out of range and were skipped");
  }
  if (procs.empty())
    return InvalidArgument(
        "no NCCL INFO lines found in the given log(s); record them with "
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL");
  for (auto& [key, p] : procs) NCCLRR_RETURN_IF_ERROR(p.writer->Close("imported"));
  if (result.unmatched_calls)
    result.warnings.push_back(std::to_string(result.unmatched_calls) +
                              " calls belong to communicators whose 'Init COMPLETE' line is not "
                              "in the logs; their ids are the comm pointers and ranks are "
                              "unknown (log with NCCL_DEBUG_SUBSYS=INIT,COLL)");
  return result;
}

}  // namespace ncclrr
