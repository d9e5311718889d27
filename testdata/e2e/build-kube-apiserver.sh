#!/bin/sh
# Build the kube-apiserver the live end-to-end test runs against, once per
# version, into the user's cache (outside the clone, so every checkout shares
# it). Prints the binary's path. A cold build takes about 15 minutes on two
# cores; it runs at the lowest priority with one package at a time so the
# machine stays usable.
set -eu

version=v1.34.4
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/backflow
bin=$cache/kube-apiserver-$version

if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
# Build beside the target and rename, so an interrupted build never leaves
# a truncated binary that a later run would trust.
tmp=$(mktemp "$cache/.kube-apiserver-$version.XXXXXX")
trap 'rm -f "$tmp"' EXIT
echo "building kube-apiserver $version into $bin (cold: about 15 minutes)" >&2
(
	cd "$here/kube"
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-p=1" nice -n 19 \
		go build -trimpath -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver
)
mv "$tmp" "$bin"
trap - EXIT
echo "$bin"
