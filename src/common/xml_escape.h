// XML text escaping for the bodies ossmount writes (CompleteMultipartUpload, Delete) and the
// test server's listings: & < > " ' as entities, control bytes and DEL as numeric references,
// everything else (UTF-8 included) as is.
#pragma once

#include <string>
#include <string_view>

namespace ossmount {

std::string XmlEscape(std::string_view text);

}  // namespace ossmount
