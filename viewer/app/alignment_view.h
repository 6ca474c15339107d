#pragma once
// The alignment view: a communicator chooser above a table of AlignmentModel (rows = seq,
// columns = ranks). Selecting a cell selects its call everywhere.
#include <QComboBox>
#include <QTableView>
#include <QWidget>
#include <memory>

#include "models/alignment_model.h"

namespace ncclrr::viewer {

class AlignmentView : public QWidget {
  Q_OBJECT
 public:
  explicit AlignmentView(QWidget* parent = nullptr);
  void SetSession(std::shared_ptr<const TraceSession> session);
  void SetComm(int comm);
  // Shows the call's communicator, scrolls its cell to the centre and selects it, plus `also`
  // (other cells to select, e.g. every call of a finding on the same communicator).
  void ShowCall(CallRef call, const std::vector<CallRef>& also = {});
  // Scrolls to `seq` of the current communicator; false when it has no such row.
  bool ShowSeq(uint64_t seq);
  int comm() const { return model_->comm(); }
  AlignmentModel* model() const { return model_; }

 Q_SIGNALS:
  void callSelected(quint64 call_key);

 private:
  std::shared_ptr<const TraceSession> session_;
  QComboBox* comms_ = nullptr;
  QTableView* table_ = nullptr;
  AlignmentModel* model_ = nullptr;
  bool updating_ = false;
};

}  // namespace ncclrr::viewer
