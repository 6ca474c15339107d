#include "models/findings_model.h"

#include <QBrush>
#include <QFont>
#include <QStringList>

#include "models/timeline_style.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {
namespace {

QString Str(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

}  // namespace

FindingsModel::FindingsModel(QObject* parent) : QAbstractItemModel(parent) {}

void FindingsModel::SetSession(std::shared_ptr<const TraceSession> session) {
  beginResetModel();
  session_ = std::move(session);
  groups_.clear();
  if (session_) {
    const analysis::Report& r = session_->report();
    for (int k = 0; k < analysis::kNumFindingKinds; ++k) {
      Group g;
      for (size_t i = 0; i < r.findings.size(); ++i)
        if (static_cast<int>(r.findings[i].kind) == k) g.items.push_back(i);
      if (g.items.empty()) continue;
      g.title = QString("%1 (%2)")
                    .arg(Str(analysis::FindingKindName(static_cast<analysis::FindingKind>(k))))
                    .arg(g.items.size());
      groups_.push_back(std::move(g));
    }
    if (!r.notes.empty()) {
      Group g;
      g.notes = true;
      for (size_t i = 0; i < r.notes.size(); ++i) g.items.push_back(i);
      g.title = QString("notes (%1)").arg(r.notes.size());
      groups_.push_back(std::move(g));
    }
  }
  endResetModel();
}

// internalId: 0 for group rows, group + 1 for the rows beneath a group.
QModelIndex FindingsModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= kNumColumns) return {};
  if (!parent.isValid())
    return row < static_cast<int>(groups_.size()) ? createIndex(row, column, quintptr{0})
                                                  : QModelIndex();
  if (parent.internalId() != 0 || parent.row() >= static_cast<int>(groups_.size())) return {};
  if (row >= static_cast<int>(groups_[parent.row()].items.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex FindingsModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr{0});
}

int FindingsModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(groups_.size());
  if (parent.internalId() != 0 || parent.column() != 0) return 0;
  return static_cast<int>(groups_[parent.row()].items.size());
}

int FindingsModel::columnCount(const QModelIndex&) const { return kNumColumns; }

QVariant FindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* kTitles[kNumColumns] = {"Finding", "Communicator", "Seq", "Ranks", "Repeats"};
  return section >= 0 && section < kNumColumns ? QString(kTitles[section]) : QVariant();
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !session_) return {};
  if (index.internalId() == 0) {
    const Group& g = groups_[index.row()];
    if (index.column() != kWhat) return {};
    if (role == Qt::DisplayRole) return g.title;
    if (role == Qt::FontRole) {
      QFont f;
      f.setBold(true);
      return f;
    }
    return {};
  }
  const Group& g = groups_[index.internalId() - 1];
  const size_t item = g.items[index.row()];
  return g.notes ? NoteData(item, index.column(), role) : FindingData(item, index.column(), role);
}

QVariant FindingsModel::FindingData(size_t i, int column, int role) const {
  const analysis::Finding& f = session_->report().findings[i];
  if (role == kFindingRole) return static_cast<int>(i);
  if (role == Qt::ToolTipRole) return QString::fromStdString(f.message);
  if (role == Qt::ForegroundRole && column == kWhat) {
    const uint8_t m = MarkOf(f.kind);
    return QBrush(m == mark::kFinding ? FindingBorderColor() : FindingColor().darker(120));
  }
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case kWhat:
      return QString::fromStdString(f.short_text.empty() ? f.message : f.short_text);
    case kComm:
      if (f.comm == 0) return QString("\u2014");
      if (!f.comm_name.empty()) return QString::fromStdString(f.comm_name);
      // "0x376a\u2026bb0b": enough to tell communicators apart in a narrow panel.
      return QString::fromStdString(Hex64(f.comm)).left(6) + "\u2026" +
             QString::fromStdString(Hex64(f.comm)).right(4);
    case kSeq: {
      if (!f.seq) return QString("\u2014");
      QString s = QString::number(*f.seq);
      if (f.last_seq && *f.last_seq != *f.seq) s += QString("\u2013%1").arg(*f.last_seq);
      if (f.peer) s += QString(" (peer %1)").arg(*f.peer);
      return s;
    }
    case kRanks: {
      QStringList ranks;
      for (int r : f.ranks) ranks << QString::number(r);
      return ranks.join(", ");
    }
    case kRepeats:
      return QString::number(f.repeats);
    default:
      return {};
  }
}

QVariant FindingsModel::NoteData(size_t i, int column, int role) const {
  const analysis::Note& n = session_->report().notes[i];
  if (role == kNoteRole) return static_cast<int>(i);
  if (role == Qt::ToolTipRole) return QString::fromStdString(n.message);
  if (role != Qt::DisplayRole) return {};
  if (column == kWhat) {
    // A note about one file names it; one about a communicator (stragglers) names that.
    QString about = QString::fromStdString(n.file_name);
    if (about.isEmpty() && !n.ranks.empty())
      about = QString("comm 0x%1").arg(n.ranks.front().first, 16, 16, QChar('0'));
    return Str(analysis::NoteKindName(n.kind)) + ": " + about;
  }
  if (column == kRanks) {
    QStringList ranks;
    for (auto [comm, rank] : n.ranks) ranks << QString::number(rank);
    return ranks.join(", ");
  }
  return {};
}

QModelIndex FindingsModel::IndexOfFinding(size_t i) const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].notes) continue;
    for (size_t r = 0; r < groups_[g].items.size(); ++r)
      if (groups_[g].items[r] == i)
        return index(static_cast<int>(r), 0, index(static_cast<int>(g), 0));
  }
  return {};
}

int FindingsModel::FindingAt(const QModelIndex& index) const {
  if (!index.isValid() || index.internalId() == 0) return -1;
  const Group& g = groups_[index.internalId() - 1];
  return g.notes ? -1 : static_cast<int>(g.items[index.row()]);
}

}  // namespace ncclrr::viewer
