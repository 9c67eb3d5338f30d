// Pieces the write operations share (write_operations.cc, multipart_operations.cc):
// posting an argument error, the XML reply target, the upload CRC-64 check, and the HEAD
// that settles a write whose answer was lost. Internal to src/object.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "object/client_context.h"
#include "object/request_runner.h"
#include "object/upload_verification.h"

namespace ossmount::object {

// Posts `status` to the handler (argument errors never reach the network, and a handler is
// never called inline).
template <typename Handler>
void PostFailure(ClientContext& ctx, Handler handler, Status status) {
  boost::asio::post(
      ctx.io, [handler = std::move(handler), status = std::move(status)] { handler(status); });
}

// A growable target for an XML reply, cleared before every attempt.
std::function<GetTarget()> XmlReplyTarget(std::shared_ptr<std::vector<char>> body);
inline std::string_view View(const std::vector<char>& body) {
  return std::string_view(body.data(), body.size());
}

std::string HeaderOr(const http::Response& r, std::string_view name);

// The server's CRC-64 of an uploaded body against the local one (OSS only; S3 checks the
// body's Content-MD5 itself). A mismatch is retryable kIntegrity.
Status CheckUploadCrc(const http::Response& r, const Dialect& dialect, uint64_t local_crc,
                      const std::string& what);

// True when a retried attempt's refusal may have been caused by the first attempt, whose
// answer was lost: NoSuchUpload for Complete (`completing`), "already exists" for a write
// that forbids overwriting.
// A HEAD of `key` whose parsed answer lands in *into (Head and the lost-answer check share
// it). data_path: sent to the data endpoint when there is one.
Operation HeadOperation(const ClientContext& ctx, const std::string& key, bool data_path,
                        std::shared_ptr<ObjectInfo> into);

bool MayBeOwnEarlierAttempt(const MappedError& e, int attempt, bool completing,
                            bool forbid_overwrite);

// HEADs `key` on the main endpoint (never the data endpoint, which may not have seen the
// write yet) and compares it with `expected`. The handler gets the object's ETag and CRC-64
// when it is the one sent; otherwise `refusal` when the server's refusal stands (an object
// that is not ours, for "already exists"), or kIntegrity saying the outcome is unknown.
// `what` names the write for the messages.
void SettleLostAnswer(std::shared_ptr<ClientContext> ctx, const std::string& key,
                      ExpectedObject expected, Status refusal, const std::string& what,
                      PutHandler handler);

}  // namespace ossmount::object
