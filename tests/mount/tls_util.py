"""A throwaway certificate authority and a server certificate for 127.0.0.1, made with the
openssl command line at test time, and HTTPS helpers for ossmount-testserver --tls-cert."""
import json
import os
import ssl
import subprocess
import urllib.request

import harness


def make_ca_and_server_cert(directory, name="ca"):
    """Returns (ca_pem, server_pem, server_key) under directory: a new CA (P-256, 1 day) and a
    certificate it signed for IP 127.0.0.1 / DNS localhost."""
    ca_key = os.path.join(directory, name + ".key")
    ca_pem = os.path.join(directory, name + ".pem")
    key = os.path.join(directory, name + "-server.key")
    csr = os.path.join(directory, name + "-server.csr")
    pem = os.path.join(directory, name + "-server.pem")
    ext = os.path.join(directory, name + "-server.ext")

    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", ca_key, "-out", ca_pem, "-days", "1", "-subj", "/CN=ossmount test CA " + name,
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
        "-out", pem, "-days", "1", "-extfile", ext)
    return ca_pem, pem, key


class TlsTestServer(harness.TestServer):
    """ossmount-testserver serving HTTPS only, with a certificate signed by `ca_pem`."""

    def __init__(self, root, ca_pem, cert, key, bucket="bucket", args=()):
        super().__init__(root, bucket=bucket, args=["--tls-cert", cert, "--tls-key", key] + list(args))
        self.endpoint = "https://127.0.0.1:%d" % self.port
        self.ssl_context = ssl.create_default_context(cafile=ca_pem)

    def _control(self, path, method="GET"):
        req = urllib.request.Request(self.endpoint + "/_ossmount/" + path, method=method)
        with urllib.request.urlopen(req, timeout=10, context=self.ssl_context) as r:
            return r.read()

    def stats(self):
        return json.loads(self._control("stats"))

    def reset_stats(self):
        self._control("reset", method="POST")
