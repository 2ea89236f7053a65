"""websockify auth plugin: only the viewer's own page may use the desktop.

websockify runs with --web-auth, so every request passes here, page loads
as well as WebSocket upgrades:

- Host must be 127.0.0.1 or localhost with a port: the sandbox's ports are
  published on the host's 127.0.0.1 only, so any other name is a page that
  rebound its own DNS name to 127.0.0.1 (DNS rebinding), which would then
  be same-origin with the viewer.
- Origin, when there is one, must be the request's own origin,
  http://<Host>: a browser sends it with every WebSocket upgrade, and a
  page of any other origin (another 127.0.0.1 port, a site on the
  internet) must not reach the VNC server through the browser. The panel
  embeds the viewer in an iframe whose origin is the viewer's own, so it
  passes; clients that are not browsers (the sidecar's readiness probe)
  send no Origin, and could forge one anyway.

The host port is the one Docker picked on the host, which the container
does not know: the Origin is compared with the Host the request names.
"""

from websockify.auth_plugins import AuthenticationError

LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def loopback_host(host):
    """Whether host is 127.0.0.1:PORT or localhost:PORT."""
    name, sep, port = host.rpartition(":")
    return bool(sep) and name.lower() in LOOPBACK_NAMES and port.isdigit() and 0 < int(port) < 65536


class SameOrigin:
    """Refuses (403) a request whose Host or Origin is not the viewer's."""

    def __init__(self, src=None):
        self.source = src

    def authenticate(self, headers, target_host, target_port):
        hosts = headers.get_all("Host") or []
        host = hosts[0].strip() if len(hosts) == 1 else ""
        if not loopback_host(host):
            raise AuthenticationError(
                log_msg="refused Host %r: not 127.0.0.1 or localhost" % (hosts,),
                response_msg="Forbidden: not a loopback Host")
        origins = headers.get_all("Origin") or []
        if len(origins) > 1 or (origins and origins[0].strip().lower() != "http://" + host.lower()):
            raise AuthenticationError(
                log_msg="refused Origin %r for Host %r" % (origins, host),
                response_msg="Forbidden: not the viewer's origin")
