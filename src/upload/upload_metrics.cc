#include "upload/upload_metrics.h"

namespace ossmount::upload {

UploadMetrics& Uploads() {
  auto& r = metrics::Registry::Global();
  static UploadMetrics m{
      r.GetGauge("ossmount_upload_files_in_flight", "Files being written or completed"),
      r.GetGauge("ossmount_upload_parts_in_flight", "Upload parts and PUTs being sent"),
      r.GetGauge("ossmount_upload_buffered_bytes",
                 "Bytes written to the mount and not yet acknowledged by the service"),
      r.GetGauge("ossmount_upload_writers_waiting", "Writes waiting for upload memory"),
      r.GetCounter("ossmount_upload_bytes_total", "Bytes of files acknowledged by the service"),
      r.GetCounter("ossmount_upload_parts_total", "Parts and single PUTs acknowledged"),
      r.GetCounter("ossmount_upload_files_total", "Files completed as objects"),
      r.GetCounter("ossmount_upload_failures_total",
                   "Files whose upload failed (close or fsync returned the error)"),
      r.GetCounter("ossmount_upload_writer_waits_total",
                   "Writes that waited for upload memory (backpressure)"),
      r.GetHistogram("ossmount_upload_file_seconds",
                     "Seconds from a file's first write to its completed object"),
  };
  return m;
}

}  // namespace ossmount::upload
