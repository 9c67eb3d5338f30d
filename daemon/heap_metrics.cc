#include "heap_metrics.h"

#include <malloc.h>

#include "common/metrics.h"

namespace ossmount::daemon {

void RegisterHeapMetrics() {
  auto& r = metrics::Registry::Global();
  r.SetCallbackGauge("ossmount_heap_allocated_bytes",
                     "Bytes of heap handed out and not yet freed (mallinfo2 uordblks + hblkhd).",
                     {}, [] {
                       const struct mallinfo2 m = mallinfo2();
                       return static_cast<double>(m.uordblks + m.hblkhd);
                     });
  r.SetCallbackGauge("ossmount_heap_free_bytes",
                     "Freed bytes the allocator keeps in its arenas instead of returning them "
                     "to the system (mallinfo2 fordblks): fragmentation, part of the RSS.",
                     {}, [] { return static_cast<double>(mallinfo2().fordblks); });
}

}  // namespace ossmount::daemon
