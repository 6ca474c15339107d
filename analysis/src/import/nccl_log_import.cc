#include "ncclrr/analysis/nccl_log_import.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "import/nccl_log_job_builder.h"
#include "ncclrr/trace/format.h"
#include "ncclrr/trace/in_place.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {
namespace {

using nccl_log::Job;

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// The host comes from the log: only a plain name may reach the file system, so that no log
// line can name a file outside -o.
std::string SafeFileName(const std::string& host, int64_t pid) {
  std::string safe = host.empty() ? "host" : host;
  for (char& ch : safe)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_')
      ch = '_';
  return safe + "-" + std::to_string(pid) + format::kFileSuffix;
}

CommRecord CommRecordOf(const Job& job, const nccl_log::LocalComm& l) {
  const nccl_log::InferredComm& c = job.comms[l.comm];
  CommRecord r{};
  r.comm_id = c.id;
  r.parent_id = c.parent_id;
  r.handle = l.handle;
  r.create_ns = l.first_ns;
  // What the handle's own Init line says, so that ranks disagreeing on it are reported.
  r.nranks = l.init ? l.nranks : c.nranks;
  r.rank = l.rank;
  r.device = l.device;
  r.color = c.color;
  r.key = c.key;
  r.origin = static_cast<uint8_t>(c.origin);
  r.blocking = 1;
  r.nccl_hash_known = c.nccl_hash_known ? 1 : 0;
  return r;
}

CallRecord CallRecordOf(const Job& job, const nccl_log::LoggedCall& logged, TraceWriter& w) {
  const nccl_log::LocalComm& l = job.locals[logged.local];
  const nccl_log::CollFields& f = logged.fields;
  const Api api = ApiFromName(f.op);
  CallRecord call{};
  call.uid = w.NextCallUid();
  call.comm_id = job.comms[l.comm].id;
  call.api = static_cast<uint16_t>(api);
  call.sendbuff = f.sendbuff;
  call.recvbuff = f.recvbuff;
  call.count = f.count;
  call.dtype = static_cast<uint8_t>(f.datatype);
  call.op = f.redop;
  call.root_peer = IsRooted(api) || IsP2p(api) ? f.root : -1;
  call.stream = f.stream;
  call.rank = l.rank;
  call.device = l.device >= 0 ? l.device : logged.prefix_dev;
  call.tid = logged.tid;
  call.enter_ns = call.exit_ns = logged.time_ns;
  call.seq = logged.seq;
  // A log line without buffers (0) says nothing about in-place.
  if (call.sendbuff != 0 && IsInPlace(api, call.sendbuff, call.recvbuff, call.count, call.dtype,
                                      call.rank, call.root_peer))
    call.flags |= call_flags::kInPlace;
  return call;
}

Status WriteProcess(const Job& job, size_t pi, const std::string& out_dir,
                    const NcclLogImportResult& result, std::string* path) {
  const nccl_log::Process& p = job.processes[pi];
  WriterOptions o;
  o.dir = out_dir;
  o.file_name = SafeFileName(p.host, p.pid);
  o.overflow = OverflowPolicy::kBlock;
  o.header.host = p.host;
  o.header.pid = p.pid;
  o.header.route = Route::kNcclLog;
  o.header.argv = {"ncclrr", "import-nccl-log", p.source};
  auto w = TraceWriter::Create(o);
  if (!w.ok()) return w.status();
  TraceWriter& writer = *w.value();
  *path = writer.path();
  writer.AddNote(NoteLevel::kInfo,
                 "imported from NCCL log " + p.source + "; times are log order (1 us per line)");
  std::vector<size_t> calls;
  std::map<size_t, uint64_t> type_seq;
  for (const auto& [handle, li] : p.locals) {
    Record rec{};
    rec.kind = RecordKind::kComm;
    rec.comm = CommRecordOf(job, job.locals[li]);
    writer.Append(rec);
    const nccl_log::InferredComm& c = job.comms[job.locals[li].comm];
    writer.AddNote(NoteLevel::kInfo, "communicator handle " + Hex(handle) + " is rank " +
                                         std::to_string(job.locals[li].rank) +
                                         " of a communicator that was " + c.note);
    calls.insert(calls.end(), job.locals[li].calls.begin(), job.locals[li].calls.end());
  }
  for (const std::string& n : result.notes)
    writer.AddNote(NoteLevel::kInfo, kNcclLogInferenceNote + n);
  std::sort(calls.begin(), calls.end(),
            [&](size_t a, size_t b) { return job.calls[a].time_ns < job.calls[b].time_ns; });
  std::map<std::pair<size_t, uint16_t>, uint64_t> per_type;
  for (size_t ci : calls) {
    CallRecord call = CallRecordOf(job, job.calls[ci], writer);
    call.type_seq = per_type[{job.calls[ci].local, call.api}]++;
    writer.AppendCall(call);
  }
  return writer.Close("imported");
}

}  // namespace

NcclLogImportResult DescribeNcclLogs(const std::vector<std::string>& texts) {
  nccl_log::JobBuilder b;
  for (size_t i = 0; i < texts.size(); ++i) {
    b.BeginSource("text " + std::to_string(i + 1));
    std::string_view t = texts[i];
    while (!t.empty()) {
      const size_t nl = t.find('\n');
      b.AddLine(t.substr(0, nl));
      t = nl == std::string_view::npos ? std::string_view() : t.substr(nl + 1);
    }
  }
  NcclLogImportResult result;
  b.Finish(&result);
  return result;
}

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
  nccl_log::JobBuilder b;
  for (const auto& path : logs) {
    if (fs::is_directory(path, ec))
      return InvalidArgument("'" + path + "' is a directory; give the log files themselves");
    std::ifstream in(path, std::ios::binary);
    if (!in) return IoError("cannot read log '" + path + "'");
    b.BeginSource(path);
    std::string line;
    while (std::getline(in, line)) b.AddLine(line);
  }
  NcclLogImportResult result;
  const Job job = b.Finish(&result);
  if (job.calls.empty())
    return InvalidArgument(
        "no NCCL collective or point-to-point call (\"NCCL INFO AllReduce: opCount …\" lines) "
        "found in the given log(s); record them with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,COLL");
  for (size_t pi = 0; pi < job.processes.size(); ++pi) {
    std::string path;
    NCCLRR_RETURN_IF_ERROR(WriteProcess(job, pi, out_dir, result, &path));
    result.files.push_back(path);
  }
  return result;
}

}  // namespace ncclrr
