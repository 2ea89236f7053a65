"""The model gateway's engine benchmark client (gateway/docker_bench_test.go),
run in a sandbox: python3 -c THIS URL TOKEN N BYTES.

N times: a new connection, a streamed POST, the time to its first line;
then one request whose stream is read to its end (BYTES long). Prints
"first MEDIAN_MS P90_MS" and "mbps MB_PER_S".
"""

import socket
import sys
import time


def post(url, token):
    host, _, path = url.split("//", 1)[1].partition("/")
    name, port = host.rsplit(":", 1)
    s = socket.create_connection((name, int(port)), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = b'{"stream": true}'
    s.sendall(b"POST /" + path.encode() + b" HTTP/1.1\r\nHost: x\r\nx-api-key: " + token.encode() +
              b"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n" + body)
    return s


def first_byte(url, token):
    start = time.perf_counter()
    s = post(url, token)
    got = b""
    while b"\r\n\r\n" not in got or not got.split(b"\r\n\r\n", 1)[1]:
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed early: %r" % got)
        got += d
    took = time.perf_counter() - start
    s.close()
    return took


def throughput(url, token, size):
    start = time.perf_counter()
    s = post(url, token)
    n = 0
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        n += len(d)
    took = time.perf_counter() - start
    if n < size:
        raise SystemExit("read %d of %d bytes" % (n, size))
    return n / took / 1e6


def main():
    url, token, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    times = sorted(first_byte(url, token) for _ in range(count))
    print("first %.3f %.3f" % (times[len(times) // 2] * 1e3, times[len(times) * 9 // 10] * 1e3))
    print("mbps %.1f" % throughput(url, token, size))


main()
