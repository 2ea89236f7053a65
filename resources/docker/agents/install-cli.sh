#!/bin/sh
# install-cli.sh PACKAGE@VERSION: installs one agent CLI globally from the
# npm registry, in the agents layer's build (resources/docker/agents/
# Dockerfile), trusting the extra CA certificates in /tmp/pilot-ca/*.crt
# (the user's caCertificates; none on most machines), then removes npm's
# cache so the layer holds the CLI once.
set -eu
pem=/tmp/pilot-ca.pem
: >"$pem"
for crt in /tmp/pilot-ca/*.crt; do
	if [ -f "$crt" ]; then cat "$crt" >>"$pem"; fi
done
NODE_EXTRA_CA_CERTS="$pem" npm install -g --no-fund --no-audit --no-update-notifier "$1"
npm cache clean --force
rm -rf /root/.npm "$pem"
