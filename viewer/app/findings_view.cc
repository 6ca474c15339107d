#include "findings_view.h"

#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

namespace ncclrr::viewer {

FindingsView::FindingsView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* split = new QSplitter(Qt::Vertical, this);
  tree_ = new QTreeView(split);
  model_ = new FindingsModel(this);
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(FindingsModel::kWhat, QHeaderView::Stretch);
  message_ = new QTextBrowser(split);
  message_->setPlaceholderText("Select a finding to read what the analysis says about it.");
  split->addWidget(tree_);
  split->addWidget(message_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) {
            const int f = model_->FindingAt(current);
            ShowMessage(f);
            if (f >= 0) Q_EMIT findingSelected(f);
          });
}

void FindingsView::SetSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  model_->SetSession(session_);
  tree_->expandAll();
  for (int c = 1; c < FindingsModel::kNumColumns; ++c) tree_->resizeColumnToContents(c);
  message_->clear();
  if (session_ && !session_->checked())
    message_->setPlainText("Checking\u2026 the findings appear here when the check is done.");
  else if (session_ && session_->report().findings.empty())
    message_->setPlainText(session_->report().notes.empty()
                               ? "No findings: every rank issued the same collectives in the same "
                                 "order, as far as this trace shows."
                               : "No findings; see the notes above.");
}

bool FindingsView::SelectFinding(int i) {
  const QModelIndex index = model_->IndexOfFinding(static_cast<size_t>(i));
  if (!index.isValid()) return false;
  tree_->setCurrentIndex(index);
  tree_->scrollTo(index);
  return true;
}

void FindingsView::ShowMessage(int f) {
  if (!session_ || f < 0) return;
  const analysis::Finding& finding = session_->report().findings[f];
  QString html = "<p><b>" + QString::fromStdString(finding.short_text).toHtmlEscaped() + "</b></p>";
  html += "<p>" + QString::fromStdString(finding.message).toHtmlEscaped().replace("\n", "<br>") +
          "</p>";
  if (!finding.table.empty()) {
    html +=
        "<table cellspacing=0 cellpadding=3 "
        "border=1><tr><th>rank</th><th>seq</th><th>call</th></tr>";
    for (const analysis::TableRow& r : finding.table)
      html += QString("<tr%1><td>%2</td><td>%3</td><td>%4</td></tr>")
                  .arg(r.differs ? " style='background:#f8b4b4'" : "")
                  .arg(QString::fromStdString(r.rank).toHtmlEscaped())
                  .arg(QString::fromStdString(r.seq).toHtmlEscaped())
                  .arg(QString::fromStdString(r.what).toHtmlEscaped());
    html += "</table>";
  }
  message_->setHtml(html);
}

}  // namespace ncclrr::viewer
