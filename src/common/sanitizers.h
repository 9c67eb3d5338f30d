// Which sanitizer this translation unit is built with, for code that must step aside for one
// (a sanitizer's allocator replaces glibc's, and memory kept for reuse would hide a
// use-after-free). gcc defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang (14 here)
// defines neither and answers __has_feature instead.
#pragma once

namespace ossmount {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
inline constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
inline constexpr bool kThreadSanitizer = __has_feature(thread_sanitizer);
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace ossmount
