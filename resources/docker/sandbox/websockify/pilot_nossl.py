"""Stands in for the ssl module in websockify's process, which serves no TLS.

websockify imports ssl whether or not it serves TLS (websocketproxy.py and
websocket.py do it unconditionally), and ssl loads OpenSSL: its import,
with hashlib's of _hashlib, cost an idle sandbox's websockify 1 MB of
anonymous memory and mapped libcrypto and libssl (docs/performance.md, "An
idle sandbox's memory"). The sandbox's ports are plain HTTP on the host's
127.0.0.1, and websockify runs without --cert, --ssl-only or
--ssl-target. So the launcher (websockify, beside this file) puts this
module in ssl's place before it imports websockify, gives websockifyserver
None as its ssl (the "no 'ssl' module" case it handles: a TLS client is
refused, as it was for want of a certificate), and keeps _hashlib out, so
hashlib uses Python's built-in SHA-1 for the WebSocket handshake.

What is here is what websockify 0.10 reads of ssl as it imports (the
protocol options of websocketproxy.select_ssl_version, the base classes of
websocket.WebSocketWantReadError and WebSocketWantWriteError); anything
else fails with AttributeError. The image's build imports websockify
through the launcher (`websockify --help`), so a websockify that wants
more fails the build, not a sandbox.
"""

OP_ALL = 0
OP_NO_SSLv2 = OP_NO_SSLv3 = OP_NO_TLSv1 = OP_NO_TLSv1_1 = OP_NO_TLSv1_2 = 0
PROTOCOL_SSLv23 = 0


class SSLError(OSError):
    """Never raised: nothing here makes a TLS connection."""


class SSLWantReadError(SSLError):
    pass


class SSLWantWriteError(SSLError):
    pass
