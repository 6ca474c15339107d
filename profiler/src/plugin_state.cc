#include "plugin_state.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "ncclrr/trace/preload_handshake.h"
#include "ncclrr/trace/process_info.h"
#include "plugin_config.h"

namespace ncclrr::profiler {
namespace {

constexpr size_t kSlotChunk = 64;
// Slots are reused only when this many are free, so that a late task event still finds the
// call it belongs to.
constexpr size_t kSlotReuseDepth = 32;

int PreloadObjectCallback(dl_phdr_info* info, size_t, void* found) {
  if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libncclrr-interpose") != nullptr)
    *static_cast<bool*>(found) = true;
  return 0;
}

void AtExit() { PluginRecorder::Get().Close("exit"); }

}  // namespace

uint64_t CommContext::NextP2pSeq(int peer, bool recv) {
  std::lock_guard<std::mutex> lock(p2p_mu);
  return p2p_seq[(static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 1) | (recv ? 1 : 0)]++;
}

ApiSlot* CommContext::AcquireSlot() {
  std::lock_guard<std::mutex> lock(slots_mu);
  if (free_slots.size() <= kSlotReuseDepth) {
    slot_chunks.push_back(std::make_unique<ApiSlot[]>(kSlotChunk));
    for (size_t i = 0; i < kSlotChunk; ++i) {
      ApiSlot* s = &slot_chunks.back()[i];
      s->h.kind = HandleKind::kApiCall;
      s->comm = this;
      free_slots.push_back(s);
      live_slots.push_back(s);
    }
  }
  ApiSlot* s = free_slots.front();
  free_slots.pop_front();
  return s;
}

void CommContext::ReleaseSlot(ApiSlot* slot) {
  std::lock_guard<std::mutex> lock(slots_mu);
  slot->state.store(ApiSlot::kFree, std::memory_order_release);
  free_slots.push_back(slot);
}

PluginRecorder& PluginRecorder::Get() {
  static PluginRecorder* r = new PluginRecorder();  // never destroyed: atexit closes it
  return *r;
}

PluginRecorder::PluginRecorder() {
  in_recorded_call_ =
      reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, NCCLRR_PRELOAD_IN_RECORDED_CALL));
  records_comm_ =
      reinterpret_cast<int (*)(uint64_t)>(dlsym(RTLD_DEFAULT, NCCLRR_PRELOAD_RECORDS_COMM));
  preload_loaded_ = in_recorded_call_ != nullptr || records_comm_ != nullptr;
  if (!preload_loaded_) dl_iterate_phdr(PreloadObjectCallback, &preload_loaded_);
  if (preload_loaded_ && (in_recorded_call_ == nullptr || records_comm_ == nullptr)) {
    early_notes_.push_back(
        {NoteLevel::kWarning,
         "the preload interposer is loaded but does not answer the plugin's handshake "
         "(ncclrrPreloadInRecordedCall / ncclrrPreloadRecordsComm): calls it also records may "
         "appear twice, once in each route's file"});
  }
}

bool PluginRecorder::Disabled() const { return GetPluginConfig().disabled; }

bool PluginRecorder::PreloadInRecordedCall() const {
  return in_recorded_call_ != nullptr && in_recorded_call_() != 0;
}

bool PluginRecorder::PreloadRecordsComm(uint64_t hash) const {
  return records_comm_ != nullptr && records_comm_(hash) != 0;
}

void PluginRecorder::SetNcclInfo(const void* nccl_code_address, int plugin_version) {
  int expected = 0;
  if (!plugin_version_.compare_exchange_strong(expected, plugin_version)) return;
  // The object that called init is NCCL (libnccl.so.2, or the application that links it
  // statically). Its version comes from pncclGetVersion (the preload does not wrap pnccl*).
  Dl_info info{};
  if (dladdr(nccl_code_address, &info) != 0 && info.dli_fname != nullptr) {
    void* h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr && info.dli_fname[0] == '\0') h = dlopen(nullptr, RTLD_LAZY);
    if (h != nullptr) {
      using GetVersion = int (*)(int*);
      auto fn = reinterpret_cast<GetVersion>(dlsym(h, "pncclGetVersion"));
      if (fn == nullptr) fn = reinterpret_cast<GetVersion>(dlsym(h, "ncclGetVersion"));
      int v = 0;
      if (fn != nullptr && fn(&v) == 0) nccl_version_ = v;
      dlclose(h);
    }
  }
  static constexpr const char* kRange[] = {"",     "2.23", "2.24 or 2.25",
                                           "2.26", "2.27", "2.28 or newer"};
  char text[256];
  std::snprintf(
      text, sizeof text, "NCCL loaded ncclrr's profiler plugin with interface v%d (NCCL %s)%s",
      plugin_version, plugin_version >= 1 && plugin_version <= 5 ? kRange[plugin_version] : "?",
      nccl_version_ != 0 ? "" : "; the NCCL library exports no version query");
  Note(NoteLevel::kInfo, text);
  if (TraceWriter* w = writer_ptr_.load()) w->SetNcclVersion(nccl_version_);
}

void PluginRecorder::Start() {
  // mu_ held.
  started_ = true;
  const PluginConfig& cfg = GetPluginConfig();
  if (cfg.disabled) return;
  WriterOptions o = RouteWriterOptions(cfg, Route::kProfilerPlugin);
  if (preload_loaded_) o.file_name = HostName() + "-" + std::to_string(getpid()) + "-plugin.ncclrr";
  o.header.nccl_version = nccl_version_;
  auto w = TraceWriter::Create(std::move(o));
  if (!w.ok()) {
    std::fprintf(stderr,
                 "ncclrr profiler plugin: cannot record this process: %s. The job runs on "
                 "unrecorded.\n",
                 w.status().message().c_str());
    return;
  }
  writer_ = std::move(w).value();
  writer_->SetNcclVersion(nccl_version_);
  for (auto& [level, text] : early_notes_) writer_->AddNote(level, std::move(text));
  early_notes_.clear();
  writer_ptr_.store(writer_.get(), std::memory_order_release);
  std::atexit(AtExit);
  if (cfg.verbose)
    std::fprintf(stderr, "ncclrr profiler plugin: recording into %s\n", writer_->path().c_str());
}

TraceWriter* PluginRecorder::Writer() {
  if (TraceWriter* w = writer_ptr_.load(std::memory_order_acquire)) return w;
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) Start();
  return writer_ptr_.load(std::memory_order_acquire);
}

void PluginRecorder::Note(NoteLevel level, const std::string& text) {
  if (TraceWriter* w = writer_ptr_.load(std::memory_order_acquire)) {
    w->AddNote(level, text);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (TraceWriter* w = writer_ptr_.load()) {
    w->AddNote(level, text);
  } else {
    early_notes_.push_back({level, text});
  }
}

void PluginRecorder::NoteOnce(const char* key, NoteLevel level, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& k : noted_)
      if (k == key) return;
    noted_.push_back(key);
  }
  Note(level, text);
}

void PluginRecorder::WriteComm(CommContext* comm) {
  if (comm->comm_written.exchange(true)) return;
  TraceWriter* w = Writer();
  if (w == nullptr) return;
  Record r{};
  r.kind = RecordKind::kComm;
  CommRecord& c = r.comm;
  c.comm_id = comm->comm_hash;
  c.create_ns = comm->create_ns;
  c.nranks = comm->nranks;
  c.rank = comm->rank;
  c.device = comm->device;
  c.name_id = comm->name.empty() ? 0 : w->Intern(comm->name);
  c.origin = static_cast<uint8_t>(CommOrigin::kUnknown);
  c.blocking = 1;
  c.nccl_hash_known = 1;  // NCCL handed it to the plugin
  w->Append(r);
  if (comm->nranks == 0) {
    NoteOnce("nranks", NoteLevel::kInfo,
             "NCCL's profiler interface before v4 (NCCL < 2.27) does not say how many ranks a "
             "communicator has: comm records of this file have nranks 0");
  }
}

void PluginRecorder::EmitCall(CommContext* comm, CallRecord& rec) {
  TraceWriter* w = Writer();
  if (w == nullptr) return;
  WriteComm(comm);
  rec.uid = w->NextCallUid();
  w->AppendCall(rec);
}

void PluginRecorder::Flush() {
  if (TraceWriter* w = writer_ptr_.load()) w->Flush();
}

void PluginRecorder::Close(const char* reason) {
  if (TraceWriter* w = writer_ptr_.load()) (void)w->Close(reason);
}

}  // namespace ncclrr::profiler
