// ossmount-client: a small command-line client over ossmount's ObjectClient.
//
// It is the demo of the object client (list, fetch, put through the same fetch engine,
// signers and retries the daemon uses) and the tool tests use to load a bucket with keys
// that cannot exist as files on disk.
//
//   ossmount-client --endpoint http://127.0.0.1:9000 --bucket b [--region r] [--protocol s3]
//                   [--path-style] COMMAND ...
//   ls [PREFIX] [-r]           list one level (or everything with -r)
//   manifest [PREFIX] [-o F]   one recursive listing as a --manifest file (KEY<TAB>SIZE<TAB>ETAG,
//                              keys relative to PREFIX: mount BUCKET:/PREFIX with it)
//   head KEY                   print size, etag, mtime, crc64, content-type, type
//   get KEY [-o FILE] [--range A-B]
//   put KEY FILE [--meta N=V]  PUT (multipart above --part-size), with user metadata
//   put-tree DIR [PREFIX]      upload every file under DIR, keys = PREFIX + relative path
//   rm KEY
// Credentials come from the same sources as the daemon (environment, files; see
// docs/CONFIGURATION.md).
#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "auth/credential_providers.h"
#include "http/fetch_engine.h"
#include "http/metadata_fetcher.h"
#include "object/client_factory.h"

namespace {

using namespace ossmount;

// Runs an asynchronous ObjectClient call and waits for its single completion.
template <typename T, typename Start>
T Await(Start start) {
  std::promise<T> done;
  auto future = done.get_future();
  start([&done](T result) { done.set_value(std::move(result)); });
  return future.get();
}

int Fail(const Status& status) {
  std::cerr << "ossmount-client: " << status.ToString() << "\n";
  return 1;
}

Result<SharedBytes> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, "cannot open '" + path + "'");
  return SharedBytes::FromString(
      std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

Status PutObject(ObjectClient& client, const std::string& key, const SharedBytes& data,
                 uint64_t part_size, const WriteOptions& options = {}) {
  if (data.size() <= part_size) {
    auto put = Await<Result<PutResult>>(
        [&](auto done) { client.Put(key, data, options, std::move(done)); });
    return put.status();
  }
  auto upload = Await<Result<std::string>>(
      [&](auto done) { client.InitiateMultipartWith(key, options, std::move(done)); });
  if (!upload.ok()) return upload.status();
  std::vector<PartInfo> parts;
  for (uint64_t off = 0, n = 1; off < data.size(); off += part_size, ++n) {
    SharedBytes part_body = data.Slice(off, part_size);
    auto part = Await<Result<PartInfo>>([&](auto done) {
      client.UploadPart(key, *upload, static_cast<int>(n), part_body, std::move(done));
    });
    if (!part.ok()) {
      Await<Status>([&](auto done) { client.AbortMultipart(key, *upload, std::move(done)); });
      return part.status();
    }
    parts.push_back(*part);
  }
  auto complete = Await<Result<PutResult>>([&](auto done) {
    client.CompleteMultipart(key, *upload, parts, WriteOptions{}, std::move(done));
  });
  return complete.status();
}

// `ossmount-client manifest`: every object under `prefix`, from one recursive listing, in the
// manifest's tab form (docs/CONFIGURATION.md "Manifest files") with keys relative to the
// prefix, so `ossmount BUCKET:/PREFIX MNT --manifest FILE` shows exactly these objects. The
// file is written under a temporary name and renamed, so a failed listing leaves none.
int WriteManifest(ObjectClient& client, std::string prefix, const std::string& uri_base,
                  const std::string& out) {
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::ostringstream text;
  text << "# ossmount manifest of '" << prefix << "': KEY<TAB>SIZE<TAB>ETAG\n";
  uint64_t entries = 0;
  ListRequest req;
  req.prefix = prefix;
  req.delimiter = "";
  do {
    auto page = Await<Result<ListPage>>([&](auto done) { client.List(req, std::move(done)); });
    if (!page.ok()) return Fail(page.status());
    for (const auto& o : page->objects) {
      std::string rel = o.key.substr(prefix.size());
      if (rel.empty()) continue;  // the prefix's own marker
      if (rel.find_first_of("\t\n\r") != std::string::npos) {
        return Fail(Status(ErrorCode::kInvalidArgument,
                           "the key '" + o.key + "' holds a tab or line end: no line names it"));
      }
      if (rel.front() == '#') rel = uri_base + o.key;  // a line starting with # is a comment
      text << rel << '\t' << o.size << '\t' << o.etag << '\n';
      ++entries;
    }
    req.continuation_token = page->truncated ? page->next_continuation_token : "";
  } while (!req.continuation_token.empty());
  if (entries == 0) return Fail(Status(ErrorCode::kNotFound, "no object under '" + prefix + "'"));
  if (out.empty()) {
    std::cout << text.str();
    return 0;
  }
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text.str();
    if (!f.flush()) return Fail(Status(ErrorCode::kInvalidArgument, "cannot write " + tmp));
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    return Fail(Status(ErrorCode::kInvalidArgument, "cannot rename " + tmp + " to " + out));
  }
  std::fprintf(stderr, "%llu entries written to %s\n", static_cast<unsigned long long>(entries),
               out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ossmount-client: list, read and write objects with ossmount's object client"};
  ClientOptions options;
  std::string protocol = "oss";
  std::string signature = "";
  auth::CredentialSources creds;
  uint64_t part_size = 8 << 20;
  app.add_option("--endpoint", options.endpoint, "Endpoint, e.g. http://127.0.0.1:9000")
      ->required();
  app.add_option("--bucket", options.bucket, "Bucket name")->required();
  app.add_option("--region", options.region, "Signing region (OSS V4 / S3)");
  app.add_option("--protocol", protocol, "oss or s3")->check(CLI::IsMember({"oss", "s3"}));
  app.add_option("--signature-version", signature, "OSS signature: v1 or v4")
      ->check(CLI::IsMember({"v1", "v4"}));
  app.add_flag("--path-style", options.path_style, "Path-style addressing");
  app.add_option("--ca-bundle", options.ca_bundle, "PEM bundle of trusted CAs");
  app.add_option("--credentials-file", creds.credentials_file, "Credentials JSON/INI file");
  app.add_option("--passwd-file", creds.passwd_file, "ossfs-style passwd file");
  app.add_flag("--anonymous", creds.anonymous, "Send unsigned requests");
  app.add_option("--part-size", part_size, "Multipart part size in bytes");
  app.require_subcommand(1);

  std::string prefix, key, file, range, out;
  bool recursive = false;
  auto* ls = app.add_subcommand("ls", "List keys under a prefix");
  ls->add_option("prefix", prefix);
  ls->add_flag("-r,--recursive", recursive);
  auto* manifest = app.add_subcommand(
      "manifest", "Write a --manifest file of every object under PREFIX (one listing)");
  manifest->add_option("prefix", prefix);
  manifest->add_option("-o,--output", out, "File to write (default: stdout)");
  auto* head = app.add_subcommand("head", "Show an object's metadata");
  head->add_option("key", key)->required();
  auto* get = app.add_subcommand("get", "Fetch an object (or a range) to stdout or a file");
  get->add_option("key", key)->required();
  get->add_option("-o,--output", out);
  get->add_option("--range", range, "A-B, inclusive byte offsets");
  auto* put = app.add_subcommand("put", "Upload a file as KEY");
  put->add_option("key", key)->required();
  put->add_option("file", file)->required();
  std::vector<std::string> meta;
  put->add_option("--meta", meta, "User metadata NAME=VALUE (x-oss-meta-NAME), repeatable");
  auto* put_tree = app.add_subcommand("put-tree", "Upload a directory tree");
  put_tree->add_option("dir", file)->required();
  put_tree->add_option("prefix", prefix);
  auto* rm = app.add_subcommand("rm", "Delete an object");
  rm->add_option("key", key)->required();
  CLI11_PARSE(app, argc, argv);

  options.protocol = protocol == "s3" ? Protocol::kS3 : Protocol::kOss;
  if (signature == "v1" || (signature.empty() && options.region.empty())) {
    options.oss_signature = OssSignatureVersion::kV1;
  }
  creds.protocol = options.protocol;
  creds.bucket = options.bucket;
  http::EngineOptions engine_options;
  engine_options.ca_bundle = options.ca_bundle;
  creds.fetcher = http::MakeBlockingHttpFetcher();
  auto provider = auth::BuildCredentialsProvider(creds);
  if (!provider.ok()) return Fail(provider.status());
  options.credentials = *provider;

  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  int rc = 0;
  {
    engine_options.timeouts = options.timeouts;
    http::FetchEngine engine(io, engine_options);
    auto made = object::MakeObjectClient(io, engine, options);
    if (!made.ok()) {
      rc = Fail(made.status());
    } else {
      ObjectClient& client = **made;
      if (*ls) {
        ListRequest req;
        req.prefix = prefix;
        req.delimiter = recursive ? "" : "/";
        do {
          auto page =
              Await<Result<ListPage>>([&](auto done) { client.List(req, std::move(done)); });
          if (!page.ok()) {
            rc = Fail(page.status());
            break;
          }
          for (const auto& p : page->common_prefixes) std::cout << "DIR\t" << p << "\n";
          for (const auto& o : page->objects) std::cout << o.size << "\t" << o.key << "\n";
          req.continuation_token = page->truncated ? page->next_continuation_token : "";
        } while (!req.continuation_token.empty());
      } else if (*manifest) {
        const std::string scheme = options.protocol == Protocol::kS3 ? "s3://" : "oss://";
        rc = WriteManifest(client, prefix, scheme + options.bucket + "/", out);
      } else if (*head) {
        auto info =
            Await<Result<ObjectInfo>>([&](auto done) { client.Head(key, std::move(done)); });
        if (!info.ok()) {
          rc = Fail(info.status());
        } else {
          std::cout << "size\t" << info->size << "\netag\t" << info->etag << "\nmtime\t"
                    << info->mtime_sec << "\ncrc64\t"
                    << (info->crc64 ? std::to_string(*info->crc64) : "-") << "\ncontent-type\t"
                    << (info->content_type.empty() ? "-" : info->content_type) << "\ntype\t"
                    << (info->symlink      ? "Symlink"
                        : info->appendable ? "Appendable"
                                           : "Normal")
                    << "\n";
          for (const auto& [name, value] : info->user_meta) {
            std::cout << "meta-" << name << "\t" << value << "\n";
          }
        }
      } else if (*get) {
        GetRequest req;
        req.key = key;
        if (!range.empty()) {
          auto dash = range.find('-');
          req.offset = std::stoull(range.substr(0, dash));
          req.length = std::stoull(range.substr(dash + 1)) - req.offset + 1;
        }
        std::vector<char> body;
        auto got = Await<Result<GetResult>>(
            [&](auto done) { client.Get(req, GetTarget::Growable(&body), std::move(done)); });
        if (!got.ok()) {
          rc = Fail(got.status());
        } else if (out.empty()) {
          std::cout.write(body.data(), static_cast<std::streamsize>(body.size()));
        } else {
          std::ofstream(out, std::ios::binary)
              .write(body.data(), static_cast<std::streamsize>(body.size()));
        }
      } else if (*put) {
        auto data = ReadFile(file);
        WriteOptions options;
        if (!meta.empty()) {
          options.user_meta.emplace();
          for (const std::string& m : meta) {
            const size_t eq = m.find('=');
            options.user_meta->emplace_back(m.substr(0, eq),
                                            eq == std::string::npos ? "" : m.substr(eq + 1));
          }
        }
        Status s = data.ok() ? PutObject(client, key, *data, part_size, options) : data.status();
        if (!s.ok()) rc = Fail(s);
      } else if (*put_tree) {
        namespace fsys = std::filesystem;
        size_t count = 0;
        for (const auto& entry : fsys::recursive_directory_iterator(file)) {
          if (!entry.is_regular_file()) continue;
          std::string rel = fsys::relative(entry.path(), file).generic_string();
          auto data = ReadFile(entry.path().string());
          Status s = data.ok() ? PutObject(client, prefix + rel, *data, part_size) : data.status();
          if (!s.ok()) {
            rc = Fail(s.Prefix("uploading '" + rel + "'"));
            break;
          }
          ++count;
        }
        if (rc == 0) std::cerr << "uploaded " << count << " files\n";
      } else if (*rm) {
        Status s = Await<Status>([&](auto done) { client.Delete(key, std::move(done)); });
        if (!s.ok()) rc = Fail(s);
      }
    }
  }
  guard.reset();
  io.stop();
  runner.join();
  return rc;
}
