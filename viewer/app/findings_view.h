#pragma once
// The findings panel: the Report's findings grouped by kind, and the selected finding's message
// and per-rank table below. Selecting a finding asks the window to show its calls.
#include <QTextBrowser>
#include <QTreeView>
#include <QWidget>
#include <memory>

#include "models/findings_model.h"

namespace ncclrr::viewer {

class FindingsView : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsView(QWidget* parent = nullptr);
  void SetSession(std::shared_ptr<const TraceSession> session);
  // Selects finding `i` (index into Report::findings) as if the user had clicked it.
  bool SelectFinding(int i);
  FindingsModel* model() const { return model_; }

 Q_SIGNALS:
  void findingSelected(int finding);

 private:
  void ShowMessage(int finding);

  std::shared_ptr<const TraceSession> session_;
  FindingsModel* model_ = nullptr;
  QTreeView* tree_ = nullptr;
  QTextBrowser* message_ = nullptr;
};

}  // namespace ncclrr::viewer
