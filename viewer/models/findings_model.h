#pragma once
// FindingsModel: the analysis Report as a tree -- one group per finding kind (in the order the
// kinds are declared), its findings beneath; then the notes (incomplete traces, dropped
// records), which are not findings. Columns: what (short text), communicator, seq, ranks,
// repeats. The full message is the tooltip; the app shows it beside the tree.
#include <QAbstractItemModel>
#include <memory>
#include <vector>

#include "models/trace_session.h"

namespace ncclrr::viewer {

class FindingsModel : public QAbstractItemModel {
 public:
  enum Role { kFindingRole = Qt::UserRole + 1, kNoteRole };
  enum Column { kWhat = 0, kComm, kSeq, kRanks, kRepeats, kNumColumns };

  explicit FindingsModel(QObject* parent = nullptr);
  void SetSession(std::shared_ptr<const TraceSession> session);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // The row of finding `i` (index into Report::findings), or an invalid index.
  QModelIndex IndexOfFinding(size_t i) const;
  // Report::findings index of a row, or -1 (group rows, notes).
  int FindingAt(const QModelIndex& index) const;

 private:
  struct Group {
    QString title;
    std::vector<size_t> items;  // finding indices, or note indices for the notes group
    bool notes = false;
  };
  QVariant FindingData(size_t f, int column, int role) const;
  QVariant NoteData(size_t n, int column, int role) const;

  std::shared_ptr<const TraceSession> session_;
  std::vector<Group> groups_;
};

}  // namespace ncclrr::viewer
