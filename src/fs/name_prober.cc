#include "fs/name_prober.h"

#include <utility>

namespace ossmount::fs {

namespace {

// What one probe page proves about <key> and <key>/.
struct PageVerdict {
  bool dir = false;
  std::optional<ObjectInfo> file;
  bool conclusive = true;  // false: the page ended before "<key>/" could appear
};

PageVerdict Judge(const ListPage& page, const std::string& key) {
  PageVerdict v;
  const std::string dir_prefix = key + "/";
  std::string last;  // the greatest key or prefix on the page
  for (const auto& p : page.common_prefixes) {
    if (p == dir_prefix) v.dir = true;
    if (p > last) last = p;
  }
  for (const auto& o : page.objects) {
    if (o.key == key) v.file = o;
    // Without delimiter support a server may list "<key>/..." objects directly.
    if (o.key.compare(0, dir_prefix.size(), dir_prefix) == 0) v.dir = true;
    if (o.key > last) last = o.key;
  }
  v.conclusive = v.dir || !page.truncated || last >= dir_prefix;
  return v;
}

ProbeResult FileOrMissing(const std::optional<ObjectInfo>& file) {
  if (file) return std::optional<meta::NodeAttr>(meta::FileAttrFrom(*file));
  return std::optional<meta::NodeAttr>();
}

}  // namespace

void ProbeName(std::shared_ptr<ObjectClient> client, const std::string& key, ProbeCallback done) {
  ListRequest list;
  list.prefix = key;
  list.delimiter = std::string(1, '/');  // not "/": a GCC 12 -Wrestrict false positive
  list.max_keys = kProbePageSize;
  client->List(list, [client, key, done = std::move(done)](Result<ListPage> page) mutable {
    if (!page.ok()) return done(page.status());
    PageVerdict v = Judge(*page, key);
    if (v.dir) return done(std::optional<meta::NodeAttr>(meta::DirAttr()));
    if (v.conclusive) return done(FileOrMissing(v.file));
    // Many siblings sort between "<key>" and "<key>/": ask about the directory directly.
    ListRequest under;
    under.prefix = key + "/";
    under.max_keys = 1;
    client->List(under, [file = std::move(v.file), done = std::move(done)](Result<ListPage> r) {
      if (!r.ok()) return done(r.status());  // cannot rule out a directory that would win
      if (!r->objects.empty() || !r->common_prefixes.empty()) {
        return done(std::optional<meta::NodeAttr>(meta::DirAttr()));
      }
      done(FileOrMissing(file));
    });
  });
}

}  // namespace ossmount::fs
