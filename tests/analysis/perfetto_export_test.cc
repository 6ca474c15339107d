// `export --format perfetto`: the protobuf is decoded field by field (tests/analysis/
// proto_decoder.h) and checked against the field numbers of Perfetto's protos, spelled out here
// again from github.com/google/perfetto protos/perfetto/trace/ (not from the writer's header):
// every field is one the schema defines with that wire type, interned ids resolve, tracks are
// described before use, slices balance, flows pair the calls the Chrome JSON pairs, findings are
// instants, and the file is smaller than the JSON.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "proto_decoder.h"
#include "scenario_model.h"

namespace ncclrr::testing {
namespace {

using analysis::ExportOptions;
using analysis::ExportStats;

// Wire types: 0 varint, 1 fixed64, 2 length-delimited.
// trace.proto Trace: packet = 1 (message).
// trace_packet.proto TracePacket: timestamp = 8 (uint64), trusted_packet_sequence_id = 10
// (uint32), track_event = 11, interned_data = 12, sequence_flags = 13 (uint32),
// track_descriptor = 60.
const std::map<uint32_t, uint32_t> kPacketFields = {{8, 0},  {10, 0}, {11, 2},
                                                    {12, 2}, {13, 0}, {60, 2}};
// track_descriptor.proto: uuid = 1, name = 2, process = 3, parent_uuid = 5.
const std::map<uint32_t, uint32_t> kTrackDescriptorFields = {{1, 0}, {2, 2}, {3, 2}, {5, 0}};
// process_descriptor.proto: pid = 1, legacy_sort_index = 3, process_name = 6.
const std::map<uint32_t, uint32_t> kProcessFields = {{1, 0}, {3, 0}, {6, 2}};
// track_event.proto TrackEvent: category_iids = 3, debug_annotations = 4, type = 9,
// name_iid = 10, track_uuid = 11, flow_ids = 47 (fixed64).
const std::map<uint32_t, uint32_t> kTrackEventFields = {{3, 0},  {4, 2},  {9, 0},
                                                        {10, 0}, {11, 0}, {47, 1}};
// debug_annotation.proto: name_iid = 1, uint_value = 3, int_value = 4, string_value = 6,
// pointer_value = 7, string_value_iid = 17.
const std::map<uint32_t, uint32_t> kAnnotationFields = {{1, 0}, {3, 0}, {4, 0},
                                                        {6, 2}, {7, 0}, {17, 0}};
// interned_data.proto: event_categories = 1, event_names = 2, debug_annotation_names = 3,
// debug_annotation_string_values = 29; each entry: iid = 1, name/str = 2.
const std::set<uint32_t> kInternedFields = {1, 2, 3, 29};

std::vector<ProtoField> Fields(std::string_view msg, const std::map<uint32_t, uint32_t>& schema,
                               const char* what) {
  std::vector<ProtoField> fields = DecodeProto(msg);
  for (const ProtoField& f : fields) {
    auto it = schema.find(f.number);
    EXPECT_TRUE(it != schema.end()) << what << " has field " << f.number;
    if (it != schema.end()) {
      EXPECT_EQ(f.wire, it->second) << what << " field " << f.number;
    }
  }
  return fields;
}

// What a decoded trace holds, for the assertions.
struct DecodedTrace {
  std::map<uint32_t, std::map<uint64_t, std::string>> interned;  // field -> iid -> name
  std::set<uint64_t> process_tracks, child_tracks;
  std::map<std::string, int> begins_by_name, instants_by_name;
  std::map<uint64_t, int> flow_uses;
  int begins = 0, ends = 0, packets = 0;
  std::map<uint64_t, int> open_per_track;
  std::set<std::string> annotation_names;
};

std::string Interned(const DecodedTrace& t, uint32_t field, uint64_t iid) {
  auto f = t.interned.find(field);
  if (f == t.interned.end()) return "";
  auto it = f->second.find(iid);
  return it == f->second.end() ? "" : it->second;
}

void DecodeTrackEvent(std::string_view msg, DecodedTrace& t) {
  uint64_t type = 0, track = 0, name = 0;
  for (const ProtoField& f : Fields(msg, kTrackEventFields, "TrackEvent")) {
    if (f.number == 9) type = f.value;
    if (f.number == 11) track = f.value;
    if (f.number == 10) name = f.value;
    if (f.number == 47) ++t.flow_uses[f.value];
    if (f.number == 3) {
      EXPECT_NE(Interned(t, 1, f.value), "") << "category iid " << f.value;
    }
    if (f.number == 4)
      for (const ProtoField& a : Fields(f.bytes, kAnnotationFields, "DebugAnnotation")) {
        if (a.number == 1) {
          const std::string n = Interned(t, 3, a.value);
          EXPECT_NE(n, "") << "annotation name iid " << a.value;
          t.annotation_names.insert(n);
        }
        if (a.number == 17) {
          EXPECT_NE(Interned(t, 29, a.value), "") << "string iid " << a.value;
        }
      }
  }
  ASSERT_TRUE(type >= 1 && type <= 3) << "type " << type;
  if (track) {
    EXPECT_TRUE(t.process_tracks.count(track) || t.child_tracks.count(track))
        << "track " << track << " used before its descriptor";
  }
  if (type == 2) {
    ++t.ends;
    EXPECT_GT(t.open_per_track[track]--, 0) << "slice end without begin on track " << track;
    return;
  }
  const std::string n = Interned(t, 2, name);
  EXPECT_NE(n, "") << "event name iid " << name;
  if (type == 1) {
    ++t.begins;
    ++t.open_per_track[track];
    ++t.begins_by_name[n];
  } else {
    ++t.instants_by_name[n];
  }
}

DecodedTrace DecodeTrace(const std::string& bytes) {
  DecodedTrace t;
  for (const ProtoField& p : Fields(bytes, {{1, 2}}, "Trace")) {
    uint64_t sequence = 0, flags = 0;
    bool timestamped = false;
    const std::vector<ProtoField> fields = Fields(p.bytes, kPacketFields, "TracePacket");
    // Interned data first: a packet may use what it interns.
    for (const ProtoField& f : fields) {
      if (f.number != 12) continue;
      for (const ProtoField& e : DecodeProto(f.bytes)) {
        EXPECT_TRUE(kInternedFields.count(e.number)) << "InternedData field " << e.number;
        uint64_t iid = 0;
        std::string name;
        for (const ProtoField& x : Fields(e.bytes, {{1, 0}, {2, 2}}, "interned entry")) {
          if (x.number == 1) iid = x.value;
          if (x.number == 2) name = std::string(x.bytes);
        }
        EXPECT_NE(iid, 0u);
        EXPECT_TRUE(t.interned[e.number].emplace(iid, name).second) << "iid reused " << iid;
      }
    }
    for (const ProtoField& f : fields) {
      if (f.number == 10) sequence = f.value;
      if (f.number == 13) flags = f.value;
      if (f.number == 8) timestamped = true;
      if (f.number == 60) {
        uint64_t uuid = 0, parent = 0;
        bool process = false;
        for (const ProtoField& d : Fields(f.bytes, kTrackDescriptorFields, "TrackDescriptor")) {
          if (d.number == 1) uuid = d.value;
          if (d.number == 5) parent = d.value;
          if (d.number == 3) {
            process = true;
            Fields(d.bytes, kProcessFields, "ProcessDescriptor");
          }
        }
        EXPECT_NE(uuid, 0u);
        if (process) {
          t.process_tracks.insert(uuid);
        } else {
          EXPECT_TRUE(t.process_tracks.count(parent)) << "child track of unknown " << parent;
          t.child_tracks.insert(uuid);
        }
      }
      if (f.number == 11) {
        EXPECT_TRUE(timestamped) << "track event without timestamp";
        DecodeTrackEvent(f.bytes, t);
      }
    }
    EXPECT_EQ(sequence, 1u);
    if (t.packets++ == 0) {
      EXPECT_TRUE(flags & 1) << "first packet must clear incremental state";
    }
  }
  return t;
}

struct Exports {
  std::string proto, json;
  ExportStats proto_stats, json_stats;
};

Exports ExportBoth(const analysis::TraceModel& m, const analysis::Report& r) {
  Exports e;
  std::ostringstream p, j;
  EXPECT_TRUE(analysis::ExportPerfetto(m, &r, ExportOptions{}, p, &e.proto_stats).ok());
  EXPECT_TRUE(analysis::ExportChromeJson(m, &r, ExportOptions{}, j, &e.json_stats).ok());
  e.proto = p.str();
  e.json = j.str();
  return e;
}

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t i = s.find(needle); i != std::string::npos; i = s.find(needle, i + 1)) ++n;
  return n;
}

class PerfettoExportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PerfettoExportTest, DecodesAgainstPerfettoSchemaAndMatchesTheJson) {
  auto model = LoadScenario(GetParam());
  ASSERT_TRUE(model);
  const analysis::Report report = analysis::Check(*model);
  const Exports e = ExportBoth(*model, report);
  DecodedTrace t;
  ASSERT_NO_THROW(t = DecodeTrace(e.proto));
  EXPECT_EQ(t.packets, static_cast<int>(e.proto_stats.events));
  EXPECT_EQ(e.proto.size(), e.proto_stats.bytes);
  // One slice per Chrome "X" event, every slice closed.
  EXPECT_EQ(t.begins, static_cast<int>(Count(e.json, "\"ph\":\"X\"")));
  EXPECT_EQ(t.begins, t.ends);
  for (const auto& [track, open] : t.open_per_track) EXPECT_EQ(open, 0) << "track " << track;
  // Flows: as many as the JSON's flow starts, each linking two or more calls.
  EXPECT_EQ(t.flow_uses.size(), Count(e.json, "\"ph\":\"s\""));
  EXPECT_EQ(t.flow_uses.size(), e.proto_stats.flows);
  for (const auto& [id, uses] : t.flow_uses) EXPECT_GE(uses, 2) << "flow " << id;
  // Findings: one instant per finding and rank, named by kind.
  int instants = 0;
  for (const auto& [name, n] : t.instants_by_name) instants += n;
  EXPECT_EQ(instants, static_cast<int>(Count(e.json, "\"ph\":\"i\"")));
  for (const analysis::Finding& f : report.findings)
    EXPECT_GT(t.instants_by_name[std::string(analysis::FindingKindName(f.kind))], 0);
  EXPECT_EQ(t.process_tracks.size(), Count(e.json, "\"name\":\"process_name\""));
  EXPECT_LT(e.proto.size(), e.json.size());
}

INSTANTIATE_TEST_SUITE_P(Scenarios, PerfettoExportTest,
                         ::testing::Values("cross_comm_order", "order_swap", "p2p_mismatch",
                                           "graphs_clean", "nccl_errors", "many_ranks"));

TEST(PerfettoExport, SlicesCarryNamesArgumentsAndFlows) {
  auto model = LoadScenario("order_swap");
  ASSERT_TRUE(model);
  const analysis::Report report = analysis::Check(*model);
  const Exports e = ExportBoth(*model, report);
  const DecodedTrace t = DecodeTrace(e.proto);
  EXPECT_GT(t.begins_by_name.at("AllReduce"), 0);
  for (const char* arg : {"count", "dtype", "seq", "comm", "rank", "short", "message"})
    EXPECT_TRUE(t.annotation_names.count(arg)) << arg;
  EXPECT_GT(t.instants_by_name.at("order_swap"), 0);
  EXPECT_FALSE(t.flow_uses.empty());
  // Without flows: no flow ids at all.
  std::ostringstream p;
  ExportOptions o;
  o.flows = false;
  ASSERT_TRUE(analysis::ExportPerfetto(*model, &report, o, p).ok());
  EXPECT_TRUE(DecodeTrace(p.str()).flow_uses.empty());
}

}  // namespace
}  // namespace ncclrr::testing
