#!/bin/sh
# Run once, as root, while an image is built (both the wavecrest and the server-cpu target): the
# bundled libraries on the loader's path, and the unprivileged user (uid 10001) with its cache.
set -eu
echo /opt/wavecrest/lib >/etc/ld.so.conf.d/wavecrest.conf
ldconfig
useradd --system --uid 10001 --home-dir /var/lib/wavecrest --create-home wavecrest
mkdir -p /var/lib/wavecrest/cache
chown -R wavecrest /var/lib/wavecrest
