#pragma once
// The details panel: CallDetailsModel in a tree, every section expanded.
#include <QTreeView>
#include <memory>
#include <optional>

#include "models/call_details.h"

namespace ncclrr::viewer {

class DetailsView : public QTreeView {
  Q_OBJECT
 public:
  explicit DetailsView(QWidget* parent = nullptr);
  void Show(const std::shared_ptr<const TraceSession>& session, std::optional<CallRef> call);
  CallDetailsModel* details() const { return model_; }

 private:
  CallDetailsModel* model_ = nullptr;
};

}  // namespace ncclrr::viewer
