// Checking a 2xx GET response before its bytes are handed to the caller.
//
//   206: Content-Range must start at the requested offset and the body must be exactly
//        last - first + 1 bytes (fewer is a short body: kIntegrity, retryable);
//        object_size is the Content-Range total.
//   200: the body is the whole object (Content-Length must match, else a short body).
//        For a ranged request (a server that ignored Range, or OSS without standard range
//        behaviour) the wanted part is moved to the start of the target and `bytes` says
//        how much; a range starting at or past the end is kInvalidRange. If the whole
//        object did not fit a fixed target the transport already failed (body_overflow).
//   CRC: whenever the target holds the whole object (200, or a 206 covering all of it) and
//        the server sent x-oss-hash-crc64ecma (OSS only), the bytes are checked against
//        it; a mismatch is kIntegrity, retryable. Nothing is reported as read on error.
// Pure function of its inputs; thread-safe for distinct targets.
#pragma once

#include "http/fetch_engine.h"
#include "object/dialect.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::object {

Status CheckGetResponse(const GetRequest& request, const GetTarget& target,
                        const http::Response& response, const Dialect& dialect, bool verify_crc64,
                        GetResult* result);

// Why a 2xx body did not fit a fixed target, when the request says: a GET pinned to an etag
// (if_match) whose reply carries another etag, or that asked for the whole object (so the
// target was sized for the pinned object), means the object changed: kPreconditionFailed,
// as a server honouring If-Match would have said. Otherwise OK (the caller reports the
// generic overflow). Pure.
Status ExplainGetOverflow(const GetRequest& request, const http::Response& response);

// Whether the bytes of a GET response may reach the caller before the response is complete
// (GetTarget::on_arrival): only a 206 for exactly the requested offset, of the version the
// request pinned (its If-Match, and an ETag equal to it), sending no more than was asked, and
// which no whole-object CRC-64 will check once complete (those bytes wait for the check).
// Everything else CheckGetResponse decides at the end as before. Pure.
bool MayUseBodyEarly(const GetRequest& request, long status, const http::HeaderList& headers,
                     const Dialect& dialect, bool verify_crc64);

// How many bytes at the start of a GET's range a retry need not ask for again: the
// `reported` bytes earlier attempts delivered and handed out (http::BodyProgress), when the
// GET has a length they do not cover. They were vouched for (MayUseBodyEarly), so the GET is
// pinned by If-Match and the rest it asks for is of the same version or fails with
// kPreconditionFailed. 0 otherwise: the retry asks for the whole range again. Pure.
uint64_t ResumableBytes(const GetRequest& request, uint64_t reported);

// `request` without its first `kept` bytes (REQUIRES: kept < *request.length). Pure.
GetRequest RemainderOf(const GetRequest& request, uint64_t kept);

}  // namespace ossmount::object
