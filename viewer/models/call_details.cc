#include "models/call_details.h"

#include <QRegularExpression>
#include <QStringList>
#include <filesystem>

#include "models/alignment_model.h"
#include "models/time_axis.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {
namespace {

QString Str(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }
QString Hex(uint64_t v) { return QString::fromStdString(Hex64(v)); }

QStandardItem* Section(QStandardItem* root, const QString& title) {
  auto* item = new QStandardItem(title);
  QFont f = item->font();
  f.setBold(true);
  item->setFont(f);
  root->appendRow({item, new QStandardItem()});
  return item;
}

QStandardItem* Field(QStandardItem* parent, const QString& name, const QString& value) {
  auto* key = new QStandardItem(name);
  auto* val = new QStandardItem(value);
  val->setToolTip(value);
  parent->appendRow({key, val});
  return key;
}

QString SinceStart(const TraceSession& s, uint32_t file, int64_t mono_ns) {
  // Microseconds to the nanosecond, as `ncclrr dump` prints times.
  const int64_t t = s.model().CommonTime(file, mono_ns) - s.model().start_ns();
  return QString::number(static_cast<double>(t) / 1e3, 'f', 3) + " us since the first call";
}

QString FlagsText(uint8_t f) {
  QStringList parts;
  if (f & call_flags::kPreMulSum) parts << "PreMulSum op";
  if (f & call_flags::kScalarOnDevice) parts << "scalar on device";
  if (f & call_flags::kInPlace) parts << "in-place";
  if (f & call_flags::kAvgDerived) parts << "op derived from avg";
  if (f & call_flags::kNonblocking) parts << "nonblocking comm";
  return parts.isEmpty() ? QString("none") : parts.join(", ");
}

const char* WhichName(SketchWhich w) {
  switch (w) {
    case SketchWhich::kSendBefore:
      return "send buffer before the call";
    case SketchWhich::kRecvAfter:
      return "recv buffer after the call";
    case SketchWhich::kSendAfterSample:
      return "send buffer after the call (race sample)";
    case SketchWhich::kSendBeforeSample:
      return "send buffer before the call (race sample)";
    case SketchWhich::kScalar:
      return "PreMulSum scalar (device memory)";
  }
  return "unknown sketch kind";
}

}  // namespace

CallDetailsModel::CallDetailsModel(QObject* parent) : QStandardItemModel(parent) {
  setHorizontalHeaderLabels({"Field", "Value"});
}

void CallDetailsModel::Show(const std::shared_ptr<const TraceSession>& session,
                            std::optional<CallRef> call) {
  clear();
  setHorizontalHeaderLabels({"Field", "Value"});
  if (!session || !call || call->file >= session->model().dir().files.size() ||
      call->index >= session->model().file(call->file).calls.size())
    return;
  const TraceSession& s = *session;
  QStandardItem* root = invisibleRootItem();
  if (const CallBucket* b = s.BucketAt(*call)) {  // a trace shown at levels of detail
    QStandardItem* sec = Section(root, "Calls drawn as one box");
    Field(sec, "calls", QString::number(b->calls));
    Field(sec, "what",
          QString::fromStdString(s.BucketText(*b, s.model().files()[call->file].clock_offset_ns)));
    AddFindings(root, s, *call);
    AddProcess(root, s, *call);
    return;
  }
  AddCall(root, s, *call);
  AddPairing(root, s, *call);
  AddFindings(root, s, *call);
  AddGpuAndSketches(root, s, *call);
  AddComm(root, s, *call);
  AddProcess(root, s, *call);
}

void CallDetailsModel::AddCall(QStandardItem* root, const TraceSession& s, CallRef r) {
  const CallRecord& c = s.model().call(r);
  const Api api = static_cast<Api>(c.api);
  QStandardItem* sec = Section(root, "Call: " + Str(ApiName(api)));
  Field(sec, "as NCCL would log it", QString::fromStdString(DescribeCall(c, false)));
  Field(sec, "rank", QString::number(c.rank));
  if (c.seq != kNoSeq)
    Field(sec, IsP2p(api) ? "index to/from this peer" : "seq", QString::number(c.seq));
  Field(sec, "index among this API's calls", QString::number(c.type_seq));
  Field(sec, "count", QString::number(c.count));
  Field(sec, "datatype", Str(DtypeName(c.dtype)) + QString(" (%1 bytes)").arg(DtypeSize(c.dtype)));
  if (api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter)
    Field(sec, "reduction", Str(RedOpName(c.op, c.flags)));
  if (IsRooted(api)) Field(sec, "root", QString::number(c.root_peer));
  if (IsP2p(api)) Field(sec, "peer", QString::number(c.root_peer));
  Field(sec, "sendbuff", Hex(c.sendbuff));
  Field(sec, "recvbuff", Hex(c.recvbuff));
  Field(sec, "flags", FlagsText(c.flags));
  if (c.flags & call_flags::kPreMulSum) Field(sec, "scalar", QString::number(c.scalar, 'g', 17));
  Field(sec, "device", QString::number(c.device));
  Field(sec, "stream", Hex(c.stream));
  Field(sec, "thread id", QString::number(c.tid));
  Field(sec, "group",
        c.group_id ? QString("%1 (depth %2)").arg(c.group_id).arg(c.group_depth)
                   : QString("not in a group"));
  static const char* kCapture[] = {"not captured", "captured into a CUDA graph (a template)",
                                   "capture invalidated"};
  Field(sec, "graph",
        c.capture < 3 ? QString(kCapture[c.capture]) + (c.graph_id ? " " + Hex(c.graph_id) : "")
                      : QString::number(c.capture));
  Field(sec, "entered", SinceStart(s, r.file, c.enter_ns));
  if (c.exit_ns > 0 && c.exit_ns >= c.enter_ns) {
    Field(sec, "returned", SinceStart(s, r.file, c.exit_ns));
    Field(sec, "host duration", QString::fromStdString(FormatDuration(c.exit_ns - c.enter_ns)));
  } else {
    Field(sec, "returned", "never: in flight when the trace ended");
  }
  Field(sec, "result", NcclResultName(c.result));
  Field(sec, "record uid", Hex(c.uid));
  if (c.callsite) {
    // Frames innermost first, separated by '<' (Python frames, then native ones).
    const QStringList frames = QString::fromStdString(s.CallSite(r))
                                   .split(QRegularExpression("[<\n]"), Qt::SkipEmptyParts);
    QStandardItem* site = Field(sec, "call site", frames.isEmpty() ? QString() : frames[0]);
    int n = 0;
    for (const QString& frame : frames) Field(site, QString("frame %1").arg(n++), frame);
  }
}

void CallDetailsModel::AddPairing(QStandardItem* root, const TraceSession& s, CallRef r) {
  const auto linked = s.Linked(r);
  if (linked.size() < 2) return;
  const auto cs = s.CommSeqOf(r);
  QStandardItem* sec =
      Section(root, cs->p2p ? QString("Paired with (peer %1, index %2)").arg(cs->peer).arg(cs->seq)
                            : QString("Same position on every rank (seq %1)").arg(cs->seq));
  for (CallRef o : linked) {
    const CallRecord& c = s.model().call(o);
    QString text = AlignmentModel::CellText(c, 0);
    if (s.marks().MarksOf(o) & mark::kAnyFinding) text += "   \u25c0 named by a finding";
    Field(sec, QString("rank %1").arg(c.rank), text);
  }
}

void CallDetailsModel::AddFindings(QStandardItem* root, const TraceSession& s, CallRef r) {
  const auto& findings = s.marks().FindingsOf(r);
  const CallRecord& c = s.model().call(r);
  const bool in_flight = !(c.exit_ns > 0 && c.exit_ns >= c.enter_ns);  // what the record says
  if (findings.empty() && !in_flight) return;
  QStandardItem* sec = Section(root, "Findings about this call");
  for (uint32_t i : findings) {
    const analysis::Finding& f = s.report().findings[i];
    QStandardItem* item =
        Field(sec, Str(analysis::FindingKindName(f.kind)), QString::fromStdString(f.short_text));
    Field(item, "message", QString::fromStdString(f.message));
  }
  if (in_flight)
    Field(sec, "in flight", "the call had not returned when this process's trace ended");
}

void CallDetailsModel::AddGpuAndSketches(QStandardItem* root, const TraceSession& s, CallRef r) {
  const CallRecord& c = s.model().call(r);
  const TraceFile& t = s.model().file(r.file);
  static const char* kSources[] = {"CUPTI", "event pair", "profiler plugin"};
  // A call captured into a CUDA graph has one GPU time per launch: the first is shown, with the
  // number of launches timed.
  int launches = 0;
  for (const GpuTimeRecord& g : t.gpu_times) launches += g.call_uid == c.uid;
  for (const GpuTimeRecord& g : t.gpu_times) {
    if (g.call_uid != c.uid) continue;
    QStandardItem* sec = Section(root, launches > 1 ? "GPU time (first launch)" : "GPU time");
    if (launches > 1) Field(sec, "launches timed", QString::number(launches));
    Field(sec, "start", SinceStart(s, r.file, g.start_ns));
    Field(sec, "end", SinceStart(s, r.file, g.end_ns));
    Field(sec, "duration", QString::fromStdString(FormatDuration(g.end_ns - g.start_ns)));
    Field(sec, "source", g.source < 3 ? kSources[g.source] : "unknown");
    Field(sec, "queued before running",
          QString::fromStdString(FormatDuration(s.model().CommonTime(r.file, g.start_ns) -
                                                s.model().CommonTime(r.file, c.enter_ns))));
    break;
  }
  const auto sketches = s.model().Sketches(r);
  if (sketches.empty()) return;
  QStandardItem* sec = Section(root, QString("Sketches (%1)").arg(sketches.size()));
  for (const SketchData* k : sketches) {
    QStandardItem* item =
        Field(sec, WhichName(k->which), QString("%1 elements from %2").arg(k->count).arg(k->first));
    QStringList dots;
    for (double d : k->dots) dots << QString::number(d, 'g', 6);
    Field(item, "dot products", dots.join(" "));
    Field(item, "sum of squares", QString::number(k->sumsq, 'g', 9));
    Field(item, "NaN / +Inf / -Inf",
          QString("%1 / %2 / %3").arg(k->nan).arg(k->posinf).arg(k->neginf));
    QStringList samples;
    for (size_t i = 0; i < k->samples.size() && i < 12; ++i)
      samples << QString("[%1]=%2")
                     .arg(i < k->sample_idx.size() ? k->sample_idx[i] : 0)
                     .arg(k->samples[i], 0, 'g', 6);
    if (!samples.isEmpty())
      Field(item, QString("samples (%1)").arg(k->samples.size()), samples.join(" "));
  }
}

void CallDetailsModel::AddComm(QStandardItem* root, const TraceSession& s, CallRef r) {
  const auto cs = s.CommSeqOf(r);
  const CallRecord& c = s.model().call(r);
  if (!cs && c.comm_id == 0) return;
  QStandardItem* sec = Section(root, "Communicator");
  Field(sec, "commHash", Hex(c.comm_id));
  if (!cs) return;
  const analysis::CommModel& comm = s.model().comms()[cs->comm];
  if (!comm.name.empty()) Field(sec, "name", QString::fromStdString(comm.name));
  Field(sec, "ranks", QString::number(comm.nranks));
  Field(sec, "created by", CommOriginName(static_cast<uint8_t>(comm.origin)));
  if (comm.parent_id)
    Field(sec, "parent", Hex(comm.parent_id) + QString(" (color %1)").arg(comm.color));
  if (comm.lineage) Field(sec, "lineage", QString::number(comm.lineage));
  Field(sec, "collectives issued (max over ranks)", QString::number(comm.max_issued()));
  for (const std::string& p : comm.problems) Field(sec, "problem", QString::fromStdString(p));
}

void CallDetailsModel::AddProcess(QStandardItem* root, const TraceSession& s, CallRef r) {
  const analysis::FileView& f = s.model().files()[r.file];
  const TraceFile& t = s.model().file(r.file);
  QStandardItem* sec = Section(root, "Process");
  Field(sec, "file", QString::fromStdString(f.name));
  Field(sec, "host", QString::fromStdString(f.host));
  Field(sec, "pid", QString::number(f.pid));
  Field(sec, "captured via", RouteName(t.header.route));
  if (t.nccl_version) Field(sec, "NCCL version", QString::number(t.nccl_version));
  Field(sec, "closed in order",
        f.clean        ? "yes"
        : f.has_footer ? "footer without clean flag"
                       : "no (killed, hung or still running)");
  if (f.torn) Field(sec, "torn", "the file ends inside a frame");
  if (f.dropped) Field(sec, "records dropped", QString::number(f.dropped));
  Field(sec, "clock offset",
        QString("%1 ns%2")
            .arg(f.clock_offset_ns)
            .arg(f.offset_refined ? " (refined from matched collectives)" : ""));
  Field(sec, "last sign of life",
        QString::fromStdString(FormatTime(f.last_alive_ns - s.model().start_ns(), 1)));
}

}  // namespace ncclrr::viewer
