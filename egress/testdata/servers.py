"""Servers for egress's tests on the engine (egress/engine_test.go): one
container on the sandbox's network runs them all, each on its own port.

    python3 servers.py   (SERVER_CERT and SERVER_KEY: PEM, for TLS)

  8080  HTTP: GET /NAME answers "hello NAME from HOST" (the Host header);
        GET /blob?mb=N sends N MiB
  8443  the same over TLS
  22    SSH: a version line, then holds the connection
  53    DNS (UDP and TCP): records every question, answers 192.0.2.1;
        GET http://IP:8080/dns lists the questions heard
  7000  TCP echo
"""

import http.server
import json
import os
import socket
import socketserver
import ssl
import threading
import urllib.parse

heard = []  # DNS questions, as names
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/dns":
            with lock:
                body = json.dumps(heard).encode()
        elif url.path == "/blob":
            mb = int(urllib.parse.parse_qs(url.query).get("mb", ["1"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(mb << 20))
            self.end_headers()
            chunk = b"x" * (1 << 20)
            for _ in range(mb):
                self.wfile.write(chunk)
            return
        else:
            body = ("hello %s from %s\n" % (url.path.strip("/"), self.headers.get("Host", ""))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve_tls(port):
    with open("/tmp/cert.pem", "w") as f:
        f.write(os.environ["SERVER_CERT"])
    with open("/tmp/key.pem", "w") as f:
        f.write(os.environ["SERVER_KEY"])
    srv = Server(("0.0.0.0", port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain("/tmp/cert.pem", "/tmp/key.pem")
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def question(data):
    """The name asked in a DNS query."""
    labels, p = [], 12
    while p < len(data) and data[p]:
        labels.append(data[p + 1:p + 1 + data[p]].decode("latin-1"))
        p += 1 + data[p]
    return ".".join(labels), p + 5


def dns_answer(data):
    name, end = question(data)
    with lock:
        heard.append(name)
    head = data[:2] + b"\x81\x80" + data[4:6] + b"\x00\x01\x00\x00\x00\x00"
    return head + data[12:end] + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc0\x00\x02\x01"


def serve_dns_udp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    while True:
        data, addr = s.recvfrom(4096)
        s.sendto(dns_answer(data), addr)


class DNSTCP(socketserver.BaseRequestHandler):
    def handle(self):
        n = int.from_bytes(self.request.recv(2), "big")
        answer = dns_answer(self.request.recv(n))
        self.request.sendall(len(answer).to_bytes(2, "big") + answer)


class SSH(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"SSH-2.0-OpenSSH_test\r\n")
        self.request.recv(4096)


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


class TCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    threads = [
        lambda: Server(("0.0.0.0", 8080), Handler).serve_forever(),
        lambda: serve_tls(8443),
        lambda: serve_dns_udp(53),
        lambda: TCP(("0.0.0.0", 53), DNSTCP).serve_forever(),
        lambda: TCP(("0.0.0.0", 22), SSH).serve_forever(),
        lambda: TCP(("0.0.0.0", 7000), Echo).serve_forever(),
    ]
    for run in threads:
        threading.Thread(target=run, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
