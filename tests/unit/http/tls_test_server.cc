#include "unit/http/tls_test_server.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <stdexcept>

namespace ossmount::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string BioToString(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(len));
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("X509V3_EXT_conf_nid failed");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A self-signed P-256 certificate valid for 127.0.0.1 and localhost: {cert PEM, key PEM}.
std::pair<std::string, std::string> MakeSelfSignedCert() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  X509* cert = X509_new();
  if (key == nullptr || cert == nullptr) throw std::runtime_error("key generation failed");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("ossmount test"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  X509_sign(cert, key, EVP_sha256());

  BIO* cert_bio = BIO_new(BIO_s_mem());
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  auto out = std::make_pair(BioToString(cert_bio), BioToString(key_bio));
  BIO_free(cert_bio);
  BIO_free(key_bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace

TlsTestServer::TlsTestServer() : ssl_(asio::ssl::context::tls_server), acceptor_(io_) {
  auto [cert_pem, key_pem] = MakeSelfSignedCert();
  ssl_.use_certificate_chain(asio::buffer(cert_pem));
  ssl_.use_private_key(asio::buffer(key_pem), asio::ssl::context::pem);

  char path[] = "/tmp/ossmount-http-test-ca-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  if (write(fd, cert_pem.data(), cert_pem.size()) != static_cast<ssize_t>(cert_pem.size())) {
    close(fd);
    throw std::runtime_error("writing the CA file failed");
  }
  close(fd);
  ca_file_ = path;

  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol());
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TlsTestServer::~TlsTestServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    for (int fd : live_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  std::remove(ca_file_.c_str());
}

std::string TlsTestServer::Url(const std::string& path) const {
  return "https://127.0.0.1:" + std::to_string(port_) + path;
}

int TlsTestServer::served() const {
  std::lock_guard<std::mutex> lock(mu_);
  return served_;
}

void TlsTestServer::AcceptLoop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket(io_);
    acceptor_.accept(socket, ec);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (ec) continue;
    live_fds_.insert(socket.native_handle());
    threads_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
  }
}

void TlsTestServer::Serve(tcp::socket socket) {
  const int fd = socket.native_handle();
  {
    asio::ssl::stream<tcp::socket> stream(std::move(socket), ssl_);
    boost::system::error_code ec;
    stream.handshake(asio::ssl::stream_base::server, ec);
    beast::flat_buffer buffer;
    while (!ec) {
      http::request<http::string_body> req;
      http::read(stream, buffer, req, ec);
      if (ec) break;
      {
        // Counted before answering: the client may look the moment it has the response.
        std::lock_guard<std::mutex> lock(mu_);
        ++served_;
      }
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.body() = "secure";
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(stream, res, ec);
      if (!req.keep_alive()) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    live_fds_.erase(fd);
  }  // the stream's destructor closes the socket
}

}  // namespace ossmount::testing
