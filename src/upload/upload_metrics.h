// The write path's metrics (common/metrics.h), looked up once: what `ossmount stats` and the
// Prometheus endpoint show about uploads.
//
// Thread-safety: thread-safe (relaxed atomics).
#pragma once

#include "common/metrics.h"

namespace ossmount::upload {

struct UploadMetrics {
  metrics::Gauge& files_in_flight;    // files being written or completed
  metrics::Gauge& parts_in_flight;    // parts and single PUTs being sent
  metrics::Gauge& buffered_bytes;     // bytes written and not yet acknowledged
  metrics::Gauge& writers_waiting;    // writes held back until memory frees
  metrics::Counter& bytes_uploaded;   // bytes the service acknowledged
  metrics::Counter& parts_uploaded;   // parts and single PUTs acknowledged
  metrics::Counter& files_completed;  // objects completed
  metrics::Counter& failed_uploads;   // files whose upload failed (close/fsync said so)
  metrics::Counter& writer_waits;     // writes that had to wait for memory
  metrics::Histogram& file_seconds;   // first write to completion, per file
};
UploadMetrics& Uploads();

}  // namespace ossmount::upload
