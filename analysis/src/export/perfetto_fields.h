#pragma once
// Field numbers of Perfetto's trace protos (github.com/google/perfetto, protos/perfetto/...),
// the subset `export --format perfetto` writes. The writer's unit test checks its output with
// a decoder of its own that spells these numbers out again from the .proto files.
#include <cstdint>

namespace ncclrr::analysis::perfetto_field {

// trace/trace.proto, message Trace
inline constexpr uint32_t kTracePacket = 1;  // repeated TracePacket packet = 1

// trace/trace_packet.proto, message TracePacket
inline constexpr uint32_t kTimestamp = 8;         // optional uint64 timestamp = 8
inline constexpr uint32_t kSequenceId = 10;       // uint32 trusted_packet_sequence_id = 10
inline constexpr uint32_t kTrackEvent = 11;       // TrackEvent track_event = 11
inline constexpr uint32_t kInternedData = 12;     // optional InternedData interned_data = 12
inline constexpr uint32_t kSequenceFlags = 13;    // optional uint32 sequence_flags = 13
inline constexpr uint32_t kTrackDescriptor = 60;  // TrackDescriptor track_descriptor = 60
// enum TracePacket.SequenceFlags
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;

// trace/track_event/track_descriptor.proto, message TrackDescriptor
inline constexpr uint32_t kTrackUuid = 1;        // optional uint64 uuid = 1
inline constexpr uint32_t kTrackName = 2;        // optional string name = 2
inline constexpr uint32_t kTrackProcess = 3;     // optional ProcessDescriptor process = 3
inline constexpr uint32_t kTrackParentUuid = 5;  // optional uint64 parent_uuid = 5

// trace/track_event/process_descriptor.proto, message ProcessDescriptor
inline constexpr uint32_t kProcessPid = 1;              // optional int32 pid = 1
inline constexpr uint32_t kProcessLegacySortIndex = 3;  // optional int32 legacy_sort_index = 3
inline constexpr uint32_t kProcessName = 6;             // optional string process_name = 6

// trace/track_event/track_event.proto, message TrackEvent
inline constexpr uint32_t kEventCategoryIids = 3;      // repeated uint64 category_iids = 3
inline constexpr uint32_t kEventDebugAnnotations = 4;  // repeated DebugAnnotation ... = 4
inline constexpr uint32_t kEventType = 9;              // optional Type type = 9
inline constexpr uint32_t kEventNameIid = 10;          // uint64 name_iid = 10
inline constexpr uint32_t kEventTrackUuid = 11;        // optional uint64 track_uuid = 11
inline constexpr uint32_t kEventFlowIds = 47;          // repeated fixed64 flow_ids = 47
// enum TrackEvent.Type
inline constexpr uint32_t kTypeSliceBegin = 1;
inline constexpr uint32_t kTypeSliceEnd = 2;
inline constexpr uint32_t kTypeInstant = 3;

// trace/track_event/debug_annotation.proto, message DebugAnnotation
inline constexpr uint32_t kAnnotationNameIid = 1;     // uint64 name_iid = 1
inline constexpr uint32_t kAnnotationUint = 3;        // uint64 uint_value = 3
inline constexpr uint32_t kAnnotationInt = 4;         // int64 int_value = 4
inline constexpr uint32_t kAnnotationString = 6;      // string string_value = 6
inline constexpr uint32_t kAnnotationPointer = 7;     // uint64 pointer_value = 7
inline constexpr uint32_t kAnnotationStringIid = 17;  // uint64 string_value_iid = 17

// trace/interned_data/interned_data.proto, message InternedData
inline constexpr uint32_t kInternedCategories = 1;          // repeated EventCategory ... = 1
inline constexpr uint32_t kInternedEventNames = 2;          // repeated EventName event_names = 2
inline constexpr uint32_t kInternedAnnotationNames = 3;     // repeated DebugAnnotationName ... = 3
inline constexpr uint32_t kInternedAnnotationStrings = 29;  // repeated InternedString
                                                            // debug_annotation_string_values = 29
// EventCategory, EventName, DebugAnnotationName: iid = 1, name = 2;
// profiling/profile_common.proto InternedString: iid = 1, bytes str = 2.
inline constexpr uint32_t kInternedIid = 1;
inline constexpr uint32_t kInternedName = 2;

}  // namespace ncclrr::analysis::perfetto_field
