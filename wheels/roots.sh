# Debian roots made with debootstrap, cached outside the checkout so that a
# fresh clone on the same machine reuses them. Sourced by build_wheel.sh and
# clean_room.sh. A root's folder name is a hash of everything that makes it
# (suite, packages, the recipe's version), so a changed recipe builds a new
# root and never reuses a stale one.
SAYWHO_WHEEL_CACHE=${SAYWHO_WHEEL_CACHE:-/var/cache/saywho-wheels}
SW_ROOTS_VERSION=1
SW_DEBIAN_MIRROR=http://deb.debian.org/debian

# sw_root NAME SUITE PACKAGES: prints the path of a minbase root of SUITE with
# PACKAGES (comma separated) installed, building it first when absent.
sw_root() {
  local name=$1 suite=$2 packages=$3
  local key
  key=$(printf '%s\n' "$SW_ROOTS_VERSION" "$suite" "$packages" "$SW_DEBIAN_MIRROR" | sha256sum | cut -c1-16)
  local root=$SAYWHO_WHEEL_CACHE/roots/$name-$suite-$key
  if [[ ! -f $root/.saywho-root-complete ]]; then
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
    mkdir -p "$SAYWHO_WHEEL_CACHE/roots"
    local tmp=$root.tmp.$$
    rm -rf "$tmp"
    echo "saywho: making the $suite root $name ($packages)" >&2
    debootstrap --variant=minbase --include="$packages" "$suite" "$tmp" "$SW_DEBIAN_MIRROR" \
      >"$tmp.log" 2>&1 || { tail -20 "$tmp.log" >&2; return 1; }
    rm -f "$tmp.log"
    # the archives apt kept are not needed to run; they are half the size
    rm -rf "$tmp"/var/cache/apt/archives/*.deb
    touch "$tmp/.saywho-root-complete"
    rm -rf "$root" && mv "$tmp" "$root"
  fi
  echo "$root"
}

# sw_chroot ROOT CMD...: runs CMD in ROOT with /proc, /dev, the host's DNS and
# the host's certificate authorities (a network whose proxy re-signs TLS, as
# on this project's machines, needs the host's trust for pip and curl).
sw_chroot() {
  local root=$1
  shift
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp "${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}" "$root/etc/host-ca.crt"
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
  local rc=0
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    PIP_CERT=/etc/host-ca.crt SSL_CERT_FILE=/etc/host-ca.crt "$@" || rc=$?
  umount "$root/dev" "$root/proc"
  return $rc
}
