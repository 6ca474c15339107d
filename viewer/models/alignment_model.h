#pragma once
// AlignmentModel: one communicator as the side-by-side diff experts do by hand -- rows are
// sequence numbers (what NCCL pairs), columns are ranks, a cell is the call that rank issued at
// that position (op, count, dtype, redop, root). A cell that differs from the majority of its
// row is highlighted; so is a rank that has no call at a position others reached; a cell a
// finding names is drawn in the finding colour. Highlighting is presentation: what is *wrong* is
// the analysis library's Report.
#include <QAbstractTableModel>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/trace_session.h"

namespace ncclrr::viewer {

class AlignmentModel : public QAbstractTableModel {
 public:
  enum Role { kCallRole = Qt::UserRole + 1, kStateRole };
  enum CellState : uint8_t { kAgrees = 0, kDiffers, kMissing, kFinding, kEmpty };

  explicit AlignmentModel(QObject* parent = nullptr);

  void SetSession(std::shared_ptr<const TraceSession> session);
  // Shows communicator `comm` (index into TraceModel::comms()), -1 for none.
  void SetComm(int comm);
  int comm() const { return comm_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  uint64_t SeqOfRow(int row) const { return base_seq_ + static_cast<uint64_t>(row); }
  QModelIndex IndexOf(uint64_t seq, int rank) const;
  std::optional<CallRef> CallAt(const QModelIndex& index) const;
  CellState StateAt(int row, int column) const;

  // "AllReduce 36864 x float32 sum" (rooted: "root 0"; graph launch: "launch 2").
  static QString CellText(const CallRecord& c, uint32_t launch);

 private:
  const analysis::CollectiveSlot* Slot(int row, int column) const;
  const std::vector<uint8_t>& RowStates(int row) const;

  std::shared_ptr<const TraceSession> session_;
  int comm_ = -1;
  uint64_t base_seq_ = 0;
  int rows_ = 0, columns_ = 0;
  mutable std::unordered_map<int, std::vector<uint8_t>> row_states_;  // lazily, visible rows
};

}  // namespace ncclrr::viewer
