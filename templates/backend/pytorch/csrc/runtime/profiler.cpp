// The {{ device_type }} device in torch.profiler: a Kineto child profiler, registered through
// torch's PrivateUse1 profiler registry, that turns the device library's trace records (one per
// queued item: op, copy, collective, kernel launch) into device activities -- name, device,
// stream, duration -- linked to the CPU op that queued each, so torch.profiler's events,
// key_averages() and export_chrome_trace() show the device's work.
//
// torch 2.13 ships the registry and Kineto's headers; an older torch (2.9.1, the aarch64 builds)
// has no registry for a PrivateUse1 Kineto profiler, and there this file compiles to nothing:
// torch.profiler then shows CPU events only.
#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>) && __has_include(<IActivityProfiler.h>)

// The registry's header declares it only for Kineto builds of torch (USE_KINETO: the wheels on
// PyPI are); defined here for this file alone (a unity batch includes other files after it).
#ifndef USE_KINETO
#define USE_KINETO
#define {{ NAME }}_DEFINED_USE_KINETO
#endif
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#ifdef {{ NAME }}_DEFINED_USE_KINETO
#undef USE_KINETO
#undef {{ NAME }}_DEFINED_USE_KINETO
#endif

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <time_since_epoch.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "{{ p }}_device.h"

namespace torch_{{ p }} {
namespace {

using libkineto::ActivityType;

// The activity type torch shows a record as: torch counts CONCURRENT_KERNEL, GPU_MEMCPY and
// GPU_MEMSET activities as the PrivateUse1 device's (deviceTypeFromActivity).
ActivityType activity_type_of(const char* name) {
  if (std::strncmp(name, "memcpy", 6) == 0) return ActivityType::GPU_MEMCPY;
  if (std::strncmp(name, "memset", 6) == 0) return ActivityType::GPU_MEMSET;
  return ActivityType::CONCURRENT_KERNEL;
}

// Unix time (Kineto's time base: nanoseconds since the epoch on the system clock) minus the device
// clock ({{ p }}_trace_clock_ns, monotonic), from the tightest of a few reads of the device clock
// taken on both sides of a system clock read.
int64_t unix_minus_device_clock_ns() {
  int64_t best_offset = 0;
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t before = 0, after = 0;
    {{ p }}_trace_clock_ns(&before);
    const int64_t unix_ns = libkineto::timeSinceEpoch(std::chrono::system_clock::now());
    {{ p }}_trace_clock_ns(&after);
    if (after - before < best_gap) {
      best_gap = after - before;
      best_offset = unix_ns - static_cast<int64_t>(before + (after - before) / 2);
    }
  }
  return best_offset;
}

uint64_t device_clock_ns() {
  uint64_t ns = 0;
  {{ p }}_trace_clock_ns(&ns);
  return ns;
}

// A CPU op's span on the device clock, between Kineto's push and pop of its correlation id (torch
// pushes each op's id on the thread that runs it).
struct OpSpan {
  uint64_t correlation;
  uint64_t begin_ns;
  uint64_t end_ns;
};

// The calling thread's open ops, innermost last: (correlation id, begin on the device clock).
thread_local std::vector<std::pair<uint64_t, uint64_t>> t_open_ops;

// For each record, the correlation id of the CPU op that queued it: the innermost op (the latest
// begun) whose span holds the record's enqueue time; 0 when none does. One sweep over the spans'
// ends and the enqueue times in time order.
std::vector<uint64_t> queuing_ops(const std::vector<OpSpan>& spans, const std::vector<{{ p }}_trace_record_t>& records) {
  enum : int { kOpen = 0, kQuery = 1, kClose = 2 };  // at one time: opened, then asked, then closed
  std::vector<std::tuple<uint64_t, int, size_t>> points;
  points.reserve(2 * spans.size() + records.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    points.emplace_back(spans[i].begin_ns, kOpen, i);
    points.emplace_back(spans[i].end_ns, kClose, i);
  }
  for (size_t i = 0; i < records.size(); ++i) points.emplace_back(records[i].enqueue_ns, kQuery, i);
  std::sort(points.begin(), points.end());
  std::vector<uint64_t> op_of(records.size(), 0);
  std::set<std::pair<uint64_t, size_t>> open;  // (begin, span)
  for (const auto& [ns, kind, i] : points) {
    if (kind == kOpen) {
      open.emplace(spans[i].begin_ns, i);
    } else if (kind == kClose) {
      open.erase({spans[i].begin_ns, i});
    } else if (!open.empty()) {
      op_of[i] = spans[open.rbegin()->second].correlation;
    }
  }
  return op_of;
}

class DeviceSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    try {
      offset_ns_ = unix_minus_device_clock_ns();
      const {{ p }}_status_t status = {{ p }}_trace_enable(1, 0);
      if (status != {{ NAME }}_OK) errors_.push_back(std::string("trace_enable failed: ") + {{ p }}_status_string(status));
      status_ = libkineto::TraceStatus::RECORDING;
    } catch (...) {
      status_ = libkineto::TraceStatus::ERROR;
    }
  }

  // torch.profiler synchronizes the device before it stops the trace: the records of the work
  // queued meanwhile are in the buffer by now.
  void stop() override {
    try {
      {{ p }}_trace_enable(0, 0);
      {
        std::lock_guard<std::mutex> lock(mu_);
        drain_locked();
      }
      uint64_t dropped = 0;
      if ({{ p }}_trace_dropped(&dropped) == {{ NAME }}_OK && dropped > 0) {
        errors_.push_back(std::to_string(dropped) +
                          " {{ device_type }} device items were not traced: the device library's trace buffer was full");
        TORCH_WARN("torch.profiler: ", errors_.back());
      }
      status_ = libkineto::TraceStatus::PROCESSING;
    } catch (...) {
      status_ = libkineto::TraceStatus::ERROR;
    }
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t /*start*/, int64_t /*end*/) override {
    try {
      std::vector<OpSpan> spans;
      {
        std::lock_guard<std::mutex> lock(mu_);
        spans.swap(spans_);
      }
      const std::vector<uint64_t> op_of = queuing_ops(spans, records_);
      buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
      buffer_->span = libkineto::TraceSpan(0, 0, "{{ NAME }}");
      buffer_->gpuOpCount = static_cast<int>(records_.size());
      for (size_t i = 0; i < records_.size(); ++i) {
        const {{ p }}_trace_record_t& r = records_[i];
        auto act = std::make_unique<libkineto::GenericTraceActivity>(buffer_->span, activity_type_of(r.name), r.name);
        act->startTime = static_cast<int64_t>(r.start_ns) + offset_ns_;
        act->endTime = static_cast<int64_t>(r.end_ns) + offset_ns_;
        act->id = static_cast<int32_t>(r.correlation_id);
        act->device = r.device;
        act->resource = static_cast<int32_t>(r.stream_id);
        act->linked = op_of[i] != 0 ? linked_activity(static_cast<int32_t>(op_of[i])) : nullptr;
        act->addMetadataQuoted("device", std::to_string(r.device));
        act->addMetadataQuoted("stream", std::to_string(r.stream_id));
        act->addMetadataQuoted("queued ns", std::to_string(r.start_ns - r.enqueue_ns));  // submitted -> started
        if (r.status != {{ NAME }}_OK)
          act->addMetadataQuoted("status", {{ p }}_status_string(static_cast<{{ p }}_status_t>(r.status)));
        streams_.emplace(r.device, r.stream_id);
        logger.handleActivity(*act);
        buffer_->activities.push_back(std::move(act));
      }
    } catch (...) {
      errors_.push_back("the {{ device_type }} device trace could not be processed");
    }
  }

  // The device rows of the trace: one process named after the device library, a row per stream.
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    const int device = streams_.empty() ? 0 : streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, kSortAfterProcesses + device, "{{ NAME }}", "{{ NAME }} " + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [device, stream] : streams_)
      infos.push_back({static_cast<int64_t>(static_cast<int32_t>(stream)), static_cast<int64_t>(stream), device,
                       "stream " + std::to_string(stream)});
    return infos;
  }

  // The activities, kept alive by Kineto with the trace: the logger holds pointers to them.
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  // Called around every CPU op torch profiles, on the op's thread (out of memory: the op's items
  // go unlinked, the op runs).
  void pushCorrelationId(uint64_t id) override {
    try {
      t_open_ops.emplace_back(id, device_clock_ns());
    } catch (...) {
    }
  }

  void popCorrelationId() override {
    if (t_open_ops.empty()) return;  // pushed before this session existed
    const auto [id, begin_ns] = t_open_ops.back();
    t_open_ops.pop_back();
    const uint64_t end_ns = device_clock_ns();
    try {
      std::lock_guard<std::mutex> lock(mu_);
      spans_.push_back({id, begin_ns, end_ns});
      // A long profile keeps the library's bounded buffer from filling: its records move here
      // every so many ops.
      if (spans_.size() % kOpsPerDrain == 0) drain_locked();
    } catch (...) {
    }
  }

 private:
  static constexpr int64_t kSortAfterProcesses = 1 << 30;  // device rows below the host's
  static constexpr size_t kOpsPerDrain = 4096;

  // (mu_ held)
  void drain_locked() {
    chunk_.resize(4096);
    size_t n = 0;
    while ({{ p }}_trace_drain(chunk_.data(), chunk_.size(), &n) == {{ NAME }}_OK && n > 0)
      records_.insert(records_.end(), chunk_.begin(), chunk_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  int64_t offset_ns_ = 0;
  std::mutex mu_;  // guards spans_, records_ and chunk_: ops on any thread add to them
  std::vector<OpSpan> spans_;
  std::vector<{{ p }}_trace_record_t> records_;
  std::vector<{{ p }}_trace_record_t> chunk_;
  std::set<std::pair<int, uint64_t>> streams_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::vector<std::string> errors_;
};

class DeviceProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& /*config*/) override {
    return session_for(activity_types);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& /*config*/) override {
    return session_for(activity_types);
  }

 private:
  // A session when the device's activities were asked for (ProfilerActivity.PrivateUse1) and the
  // device library traces; none otherwise: the profile then has CPU events only, and a device
  // library without a tracer says so once.
  std::unique_ptr<libkineto::IActivityProfilerSession> session_for(const std::set<ActivityType>& asked) const {
    try {
      if (std::none_of(activities_.begin(), activities_.end(), [&](ActivityType t) { return asked.count(t) > 0; }))
        return nullptr;
      uint64_t dropped = 0;
      const {{ p }}_status_t status = {{ p }}_trace_dropped(&dropped);  // (the side-effect-free probe)
      if (status != {{ NAME }}_OK) {
        TORCH_WARN_ONCE("torch.profiler: the {{ device_type }} device library has no tracer (",
                        {{ p }}_status_string(status), "): the profile shows CPU events only");
        return nullptr;
      }
      return std::make_unique<DeviceSession>();
    } catch (...) {
      return nullptr;
    }
  }

  std::string name_{"{{ device_type }}"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET};
};

}  // namespace
}  // namespace torch_{{ p }}

namespace {
using {{ p }}DeviceProfiler = torch_{{ p }}::DeviceProfiler;
REGISTER_PRIVATEUSE1_PROFILER({{ p }}DeviceProfiler);
}  // namespace

#endif
