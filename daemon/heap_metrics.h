// The daemon's heap, as the allocator sees it, exported as gauges so that a long run can
// tell a leak from fragmentation: a leak grows the bytes handed out, fragmentation grows
// the free bytes the allocator keeps in its arenas. Both count towards the process's RSS,
// which is all /proc shows.
//
// glibc only (mallinfo2, glibc 2.33+). Each scrape walks every arena under its lock, a few
// microseconds; it is never on a read path.
#pragma once

namespace ossmount::daemon {

// Registers ossmount_heap_allocated_bytes and ossmount_heap_free_bytes in the global
// metrics registry. Idempotent.
void RegisterHeapMetrics();

}  // namespace ossmount::daemon
