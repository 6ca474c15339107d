// The window's menus, recent files and drag and drop.
#include <QAction>
#include <QApplication>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>

#include "main_window.h"

namespace ncclrr::viewer {
namespace {

constexpr int kMaxRecent = 8;

QSettings Settings() { return QSettings("ncclrr", "ncclrr-viewer"); }

}  // namespace

void MainWindow::BuildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  QAction* open = file->addAction("&Open trace directory\u2026", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open trace directory");
    if (!dir.isEmpty()) OpenPath(dir);
  });
  open->setShortcut(QKeySequence::Open);
  file->addAction("Open trace &file\u2026", this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, "Open trace file", QString(),
                                                   "ncclrr traces (*.ncclrr);;All files (*)");
    if (!f.isEmpty()) OpenPath(f);
  });
  QAction* reload = file->addAction("Re&load", this, &MainWindow::Reload);
  reload->setShortcut(QKeySequence::Refresh);  // F5
  reload->setObjectName("reload");
  recent_menu_ = file->addMenu("Open &recent");
  recent_menu_->setObjectName("recent");
  RefreshRecentMenu();
  file->addSeparator();
  QAction* quit = file->addAction("&Quit", qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("&Fit whole trace", QKeySequence(Qt::Key_F), timeline_, &TimelineWidget::Fit);
  view->addAction("Zoom &in", QKeySequence(Qt::CTRL | Qt::Key_Plus), timeline_,
                  [this] { timeline_->ZoomBy(1.5); });
  view->addAction("Zoom &out", QKeySequence(Qt::CTRL | Qt::Key_Minus), timeline_,
                  [this] { timeline_->ZoomBy(1 / 1.5); });
  view->addAction("&Collapse every device", this, [this] { timeline_->CollapseAll(true); });
  view->addAction("&Expand every device", this, [this] { timeline_->CollapseAll(false); });

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Keys and mouse", this, [this] {
    QMessageBox::information(
        this, "Keys and mouse",
        "Drag: pan.  Wheel: zoom at the cursor.  Shift+wheel: scroll rows.\n"
        "Right-drag or Shift+drag: zoom to a box.  Double-click: zoom to a call (empty space: "
        "fit).\n"
        "Click: select a call; the calls NCCL pairs with it are outlined and joined.\n"
        "Click a host or rank label: collapse or expand it.\n"
        "+/- or W/S: zoom.  Left/Right or A/D: pan.  Up/Down: scroll.  F or Home: fit.  "
        "Esc: clear the selection.  F5: reload (a running job's latest state).");
  });
}

void MainWindow::Reload() {
  if (!current_path_.isEmpty()) OpenPath(current_path_);
}

void MainWindow::RefreshRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = Settings().value("recent").toStringList();
  for (const QString& path : recent)
    recent_menu_->addAction(path, this, [this, path] { OpenPath(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::AddRecent(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  QSettings s = Settings();
  QStringList recent = s.value("recent").toStringList();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("recent", recent);
  RefreshRecentMenu();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls() && !e->mimeData()->urls().isEmpty() &&
      e->mimeData()->urls().front().isLocalFile())
    e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (urls.isEmpty()) return;
  OpenPath(urls.front().toLocalFile());
  e->acceptProposedAction();
}

}  // namespace ncclrr::viewer
