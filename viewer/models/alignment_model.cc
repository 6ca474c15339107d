#include "models/alignment_model.h"

#include <QFont>
#include <algorithm>
#include <map>
#include <tuple>

#include "models/timeline_style.h"

namespace ncclrr::viewer {
namespace {

// What must agree across ranks at one position: the API, the count argument, the type, the
// reduction (for reductions) and the root (for rooted collectives).
using Signature = std::tuple<int, uint64_t, int, int, int>;

Signature SignatureOf(const CallRecord& c) {
  const Api api = CanonicalApi(static_cast<Api>(c.api));
  const bool reduces = api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter;
  return {static_cast<int>(api), c.count, c.dtype, reduces ? c.op : -1,
          IsRooted(api) ? c.root_peer : -1};
}

}  // namespace

AlignmentModel::AlignmentModel(QObject* parent) : QAbstractTableModel(parent) {}

void AlignmentModel::SetSession(std::shared_ptr<const TraceSession> session) {
  beginResetModel();
  session_ = std::move(session);
  comm_ = -1;
  rows_ = columns_ = 0;
  row_states_.clear();
  endResetModel();
}

void AlignmentModel::SetComm(int comm) {
  beginResetModel();
  row_states_.clear();
  comm_ = -1;
  rows_ = columns_ = 0;
  base_seq_ = 0;
  if (session_ && comm >= 0 && comm < static_cast<int>(session_->model().comms().size())) {
    comm_ = comm;
    const analysis::CommModel& c = session_->model().comms()[comm];
    columns_ = static_cast<int>(c.ranks.size());
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const analysis::RankView& rv : c.ranks) {
      if (rv.collectives.empty()) continue;
      lo = std::min(lo, rv.first_seq());
      hi = std::max(hi, rv.issued());
    }
    if (lo != UINT64_MAX) {
      base_seq_ = lo;
      rows_ = static_cast<int>(std::min<uint64_t>(hi - lo, INT32_MAX));
    }
  }
  endResetModel();
}

int AlignmentModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : rows_;
}

int AlignmentModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : columns_;
}

const analysis::CollectiveSlot* AlignmentModel::Slot(int row, int column) const {
  if (comm_ < 0 || row < 0 || row >= rows_ || column < 0 || column >= columns_) return nullptr;
  const analysis::CommModel& c = session_->model().comms()[comm_];
  const analysis::CollectiveSlot* slot = c.ranks[column].AtSeq(SeqOfRow(row));
  // A bucket of a trace shown at levels of detail stands for many calls, none at this seq.
  return slot && session_->BucketAt(slot->call) ? nullptr : slot;
}

const std::vector<uint8_t>& AlignmentModel::RowStates(int row) const {
  auto it = row_states_.find(row);
  if (it != row_states_.end()) return it->second;
  if (row_states_.size() > 4096) row_states_.clear();  // only what is on screen matters
  std::vector<uint8_t> states(columns_, kEmpty);
  std::vector<std::optional<Signature>> sigs(columns_);
  std::map<Signature, int> votes;
  bool any = false;
  for (int col = 0; col < columns_; ++col)
    if (const analysis::CollectiveSlot* s = Slot(row, col)) {
      sigs[col] = SignatureOf(session_->model().call(s->call));
      ++votes[*sigs[col]];
      any = true;
    }
  int best = 0, tied = 0;
  for (const auto& [sig, n] : votes) {
    if (n > best) {
      best = n;
      tied = 1;
    } else if (n == best) {
      ++tied;
    }
  }
  for (int col = 0; col < columns_; ++col) {
    if (!sigs[col]) {
      // Shown at levels of detail, a rank's call at this seq may lie outside the window read.
      states[col] = any && !session_->windowed() ? kMissing : kEmpty;
      continue;
    }
    const bool majority = votes[*sigs[col]] == best && tied == 1;
    states[col] = majority ? kAgrees : kDiffers;
    if (session_->marks().MarksOf(Slot(row, col)->call) & mark::kAnyFinding) states[col] = kFinding;
  }
  return row_states_.emplace(row, std::move(states)).first->second;
}

AlignmentModel::CellState AlignmentModel::StateAt(int row, int column) const {
  if (row < 0 || row >= rows_ || column < 0 || column >= columns_) return kEmpty;
  return static_cast<CellState>(RowStates(row)[column]);
}

QString AlignmentModel::CellText(const CallRecord& c, uint32_t launch) {
  const Api api = static_cast<Api>(c.api);
  QString s = QString("%1 %2 \u00d7 %3")
                  .arg(QString::fromUtf8(ApiName(api).data(), ApiName(api).size()))
                  .arg(c.count)
                  .arg(QString::fromUtf8(DtypeName(c.dtype).data(), DtypeName(c.dtype).size()));
  if (api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter) {
    const std::string_view op = RedOpName(c.op, c.flags);
    s += " " + QString::fromUtf8(op.data(), op.size());
  }
  if (IsRooted(api)) s += QString(" root %1").arg(c.root_peer);
  if (launch > 0) s += QString(" (graph launch %1)").arg(launch);
  return s;
}

QVariant AlignmentModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const analysis::CollectiveSlot* s = Slot(index.row(), index.column());
  const CellState state = StateAt(index.row(), index.column());
  switch (role) {
    case Qt::DisplayRole:
      if (!s) return state == kMissing ? QString("\u2014 (no call)") : QString();
      return CellText(session_->model().call(s->call), s->launch);
    case Qt::BackgroundRole:
      if (state == kDiffers) return QBrush(DisagreeCellColor());
      if (state == kMissing) return QBrush(MissingCellColor());
      if (state == kFinding) return QBrush(FindingCellColor());
      return {};
    case Qt::ForegroundRole:
      if (state == kFinding) return QBrush(Qt::white);
      return {};
    case Qt::FontRole:
      if (state == kDiffers || state == kFinding || state == kMissing) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ToolTipRole: {
      if (!s)
        return state == kMissing ? QString("This rank issued no call at this position.")
                                 : QVariant();
      return QString::fromStdString(session_->CallTip(s->call));
    }
    case kCallRole:
      if (!s) return {};
      return QVariant::fromValue<qulonglong>(CallKey(s->call));
    case kStateRole:
      return static_cast<int>(state);
    default:
      return {};
  }
}

QVariant AlignmentModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Horizontal) return QString("rank %1").arg(section);
  return QString("seq %1").arg(SeqOfRow(section));
}

QModelIndex AlignmentModel::IndexOf(uint64_t seq, int rank) const {
  if (seq < base_seq_ || seq - base_seq_ >= static_cast<uint64_t>(rows_) || rank < 0 ||
      rank >= columns_)
    return {};
  return index(static_cast<int>(seq - base_seq_), rank);
}

std::optional<CallRef> AlignmentModel::CallAt(const QModelIndex& index) const {
  const analysis::CollectiveSlot* s = Slot(index.row(), index.column());
  if (!s) return std::nullopt;
  return s->call;
}

}  // namespace ncclrr::viewer
