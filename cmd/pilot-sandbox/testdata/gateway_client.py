"""A task's model calls through the gateway, for cmd/pilot-sandbox's
gateway_test.go: run as a command task (python3 -c THIS MODE [ARG]).

stream: prints its token, makes a streamed Messages request, prints the
first line as it comes (leaving a process with its environment
running), then asks count_tokens (the scripted server
sends the rest of the stream only after that request: a gateway that
buffered the stream would leave this waiting), then whether the rest
arrived.

restart FILE: one call, then a line every half second until FILE
exists (the test restarts the sidecar meanwhile; 3 minutes at most),
then a second call (retried while the connection is refused); prints "first STATUS" and "second STATUS".

hostile DEAD_TOKEN: what a task that wants more tries; prints one line
"case NAME STATUS BODY" for each.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

BASE = os.environ.get("ANTHROPIC_BASE_URL", "")
TOKEN = os.environ.get("ANTHROPIC_API_KEY", "")
MESSAGE = {"model": "scripted", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


def request(url, body=None, method="POST", token=TOKEN):
    data = None if body is None else json.dumps(body).encode()
    headers = {"x-api-key": token, "content-type": "application/json", "anthropic-version": "2023-06-01"}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    return urllib.request.urlopen(req, timeout=60)


def stream():
    print("token", TOKEN, flush=True)
    # Left running with the task's environment, for the test's search of
    # every /proc/*/environ after the task.
    subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resp = request(BASE + "/v1/messages?beta=true", dict(MESSAGE, stream=True))
    print("first", resp.readline().decode().strip(), flush=True)
    print("count", request(BASE + "/v1/messages/count_tokens", MESSAGE).read().decode(), flush=True)
    print("stop", "message_stop" in resp.read().decode(), flush=True)


def restart(file):
    print("first", status(lambda: request(BASE + "/v1/messages", MESSAGE)), flush=True)
    for _ in range(360):
        if os.path.exists(file):
            break
        print("waiting", flush=True)
        time.sleep(0.5)
    # Until the next sidecar carried the gateway in again (an agent
    # retries a refused connection too).
    for _ in range(240):
        got = status(lambda: request(BASE + "/v1/messages", MESSAGE))
        if not got.startswith("error"):
            break
        time.sleep(0.5)
    print("second", got, flush=True)


def status(call):
    try:
        r = call()
        return "%d %s" % (r.status, r.read().decode()[:400])
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode()[:400])
    except OSError as e:
        return "error %s" % e


def gateway_address():
    hostport = BASE.split("//", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    return host, int(port)


def raw(address, data):
    """Sends data on a new connection; the status line and body of what
    comes back within 5 s."""
    try:
        s = socket.create_connection(address, timeout=5)
        s.sendall(data)
        got = b""
        while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) == 0:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.close()
    except OSError as e:
        return "error %s" % e
    head, _, body = got.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    return "%s %s" % (" ".join(status_line.split(" ")[1:2]), body.decode(errors="replace")[:400])


def hostile(dead):
    address = gateway_address()
    openai = BASE.rsplit("/", 1)[0] + "/openai/v1/responses"
    auth = ("x-api-key: %s\r\n" % TOKEN).encode()
    cases = {
        "files": lambda: status(lambda: request(BASE + "/v1/files", method="GET")),
        "openai": lambda: status(lambda: request(openai, {"model": "x", "input": "hi"})),
        "dead": lambda: status(lambda: request(BASE + "/v1/messages", MESSAGE, token=dead)),
        "absolute": lambda: raw(address, b"POST http://example.org/v1/messages HTTP/1.1\r\nHost: example.org\r\n" + auth + b"Content-Length: 2\r\n\r\n{}"),
        "connect": lambda: raw(address, b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n" + auth + b"\r\n"),
        "host": lambda: raw(address, b"POST /anthropic/v1/messages HTTP/1.1\r\nHost: evil.example\r\n" + auth + b"Content-Length: 2\r\nConnection: close\r\n\r\n{}"),
        "mcp-dead": lambda: raw(address, b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + dead.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"),
    }
    for name, case in cases.items():
        print("case", name, case().replace("\n", " "), flush=True)
    # The ports a relay may carry the gateway on: without a token each
    # answers nothing but a refusal.
    for port in range(15100, 15108):
        got = raw(("127.0.0.1", port), b"GET /anthropic/v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        if not got.startswith("error"):
            print("case scan-%d %s" % (port, got.replace("\n", " ")), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "stream":
        stream()
    elif sys.argv[1] == "restart":
        restart(sys.argv[2])
    else:
        hostile(sys.argv[2])
