// ForwardingObjectClient: an ObjectClient that passes every call to another one. A wrapper
// (the manifest client, a test's fault injector) derives from it and overrides only the calls
// it changes; a call added to ObjectClient is then forwarded by every wrapper at once.
//
// Ownership: holds the wrapped client. Thread-safety: that of the wrapped client.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ossmount/object_client.h"

namespace ossmount {

class ForwardingObjectClient : public ObjectClient {
 public:
  explicit ForwardingObjectClient(std::shared_ptr<ObjectClient> inner) : inner_(std::move(inner)) {}

  RetryStats retry_stats() const override { return inner_->retry_stats(); }
  void List(const ListRequest& request, ListHandler handler) override {
    inner_->List(request, std::move(handler));
  }
  void Head(const std::string& key, HeadHandler handler) override {
    inner_->Head(key, std::move(handler));
  }
  void Get(const GetRequest& request, GetTarget target, GetHandler handler) override {
    inner_->Get(request, std::move(target), std::move(handler));
  }
  void Put(const std::string& key, SharedBytes body, const WriteOptions& options,
           PutHandler handler) override {
    inner_->Put(key, std::move(body), options, std::move(handler));
  }
  void InitiateMultipart(const std::string& key, InitiateHandler handler) override {
    inner_->InitiateMultipart(key, std::move(handler));
  }
  void InitiateMultipartWith(const std::string& key, const WriteOptions& options,
                             InitiateHandler handler) override {
    inner_->InitiateMultipartWith(key, options, std::move(handler));
  }
  void UploadPart(const std::string& key, const std::string& upload_id, int part_number,
                  SharedBytes body, PartHandler handler) override {
    inner_->UploadPart(key, upload_id, part_number, std::move(body), std::move(handler));
  }
  void UploadPartCopy(const std::string& key, const std::string& upload_id, int part_number,
                      const std::string& source_key, const std::string& source_etag,
                      uint64_t offset, uint64_t length, PartHandler handler) override {
    inner_->UploadPartCopy(key, upload_id, part_number, source_key, source_etag, offset, length,
                           std::move(handler));
  }
  void CompleteMultipart(const std::string& key, const std::string& upload_id,
                         std::vector<PartInfo> parts, const WriteOptions& options,
                         PutHandler handler) override {
    inner_->CompleteMultipart(key, upload_id, std::move(parts), options, std::move(handler));
  }
  void AbortMultipart(const std::string& key, const std::string& upload_id,
                      StatusHandler handler) override {
    inner_->AbortMultipart(key, upload_id, std::move(handler));
  }
  void ListMultipartUploads(const std::string& prefix, UploadsHandler handler) override {
    inner_->ListMultipartUploads(prefix, std::move(handler));
  }
  void CopyObject(const std::string& source_key, const std::string& source_etag,
                  const std::string& dest_key, const WriteOptions& options,
                  PutHandler handler) override {
    inner_->CopyObject(source_key, source_etag, dest_key, options, std::move(handler));
  }
  void PutSymlink(const std::string& key, const std::string& target, const WriteOptions& options,
                  StatusHandler handler) override {
    inner_->PutSymlink(key, target, options, std::move(handler));
  }
  bool ListsLinks() const override { return inner_->ListsLinks(); }
  bool Appends() const override { return inner_->Appends(); }
  void Append(const AppendRequest& request, AppendHandler handler) override {
    inner_->Append(request, std::move(handler));
  }
  void GetSymlink(const std::string& key, TextHandler handler) override {
    inner_->GetSymlink(key, std::move(handler));
  }
  void Delete(const std::string& key, StatusHandler handler) override {
    inner_->Delete(key, std::move(handler));
  }
  void DeleteMultiple(std::vector<std::string> keys, StatusHandler handler) override {
    inner_->DeleteMultiple(std::move(keys), std::move(handler));
  }

 protected:
  const std::shared_ptr<ObjectClient>& inner() const { return inner_; }

 private:
  const std::shared_ptr<ObjectClient> inner_;
};

}  // namespace ossmount
