#include "ossmount/status.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

using namespace ossmount;

TEST_CASE("status maps codes to errno and prints service details") {
  CHECK(Status::Ok().ok());
  CHECK(Status::Ok().ToErrno() == 0);
  CHECK(Status(ErrorCode::kNotFound, "x").ToErrno() == ENOENT);
  CHECK(Status(ErrorCode::kAccessDenied, "x").ToErrno() == EACCES);
  CHECK(Status(ErrorCode::kReadOnly, "x").ToErrno() == EROFS);
  CHECK(Status(ErrorCode::kPreconditionFailed, "x").ToErrno() == ESTALE);
  CHECK(Status(ErrorCode::kNetwork, "x").ToErrno() == EIO);
  CHECK(Status(ErrorCode::kBusy, "x").ToErrno() == EBUSY);
  CHECK(Status(ErrorCode::kNotPermitted, "x").ToErrno() == EPERM);
  CHECK(std::string(ErrorCodeName(ErrorCode::kNotPermitted)) == "not_permitted");
  CHECK(Status(ErrorCode::kNoAttribute, "x").ToErrno() == ENODATA);
  CHECK(std::string(ErrorCodeName(ErrorCode::kNoAttribute)) == "no_attribute");
  Status s(ErrorCode::kNotFound, "The specified key does not exist.");
  s.WithService({404, "NoSuchKey", "RID1", "0026-00000001", ""});
  CHECK(s.ToString() ==
        "not_found: The specified key does not exist. (HTTP 404, NoSuchKey, request id RID1, EC "
        "0026-00000001)");
}

TEST_CASE("result holds a value or an error") {
  Result<int> good(7);
  REQUIRE(good.ok());
  CHECK(*good == 7);
  CHECK(good.status().ok());
  Result<int> bad(Status(ErrorCode::kTimeout, "slow", true));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kTimeout);
  CHECK(bad.status().retryable());
}
