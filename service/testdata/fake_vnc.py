"""A VNC server of the sandbox user's, for the tests of what stands behind
the viewer (vncimpostor_test.go): it greets as RFB 3.8 does and then, by
its first argument, offers no authentication ("none") or asks for the
password and takes any answer ("anypassword"). It serves on the port of
its second argument, each client in a thread, until it is killed.
"""

import socket
import sys
import threading


def serve(client, mode):
    with client:
        client.sendall(b"RFB 003.008\n")
        client.recv(12)
        if mode == "none":
            client.sendall(bytes([1, 1]))
            client.recv(1)
        else:
            client.sendall(bytes([1, 2]))
            client.recv(1)
            client.sendall(b"\x07" * 16)
            client.recv(16)
        client.sendall(b"\x00\x00\x00\x00")
        client.recv(1)


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(16)
    while True:
        client, _ = server.accept()
        threading.Thread(target=serve, args=(client, mode), daemon=True).start()


main()
