#!/bin/sh
# Build the Flux controllers the live end-to-end test runs as its forward
# apply (kustomize-controller, source-controller and helm-controller), once
# per version, into the user's cache (outside the clone, so every checkout
# shares it). Prints each binary's path on its own line, in that order. Cold,
# on two cores shared with other builds, kustomize-controller takes about 7
# minutes, source-controller about 4 and helm-controller about 2.5; they
# build at the lowest priority, one package at a time.
#
# Each controller's own module replaces its api module with ./api, a folder
# its module zip leaves out, so each is built from a small module under
# flux/ that requires both at the same version. helm-controller is v1.4.3,
# built against source-controller's API v1.7.2, of which v1.8.0's HelmChart
# is a superset (v1.6.0 wants API v1.9.0, newer than the source-controller
# it would read from).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/backflow
mkdir -p "$cache"

build() { # name version
	bin=$cache/$1-$2
	if [ ! -x "$bin" ]; then
		# Build beside the target and rename, so an interrupted build never
		# leaves a truncated binary that a later run would trust.
		tmp=$(mktemp "$cache/.$1-$2.XXXXXX")
		trap 'rm -f "$tmp"' EXIT
		echo "building $1 $2 into $bin (cold: a few minutes)" >&2
		(
			cd "$here/flux/$1"
			GOFLAGS="${GOFLAGS:+$GOFLAGS }-p=1" nice -n 19 \
				go build -trimpath -o "$tmp" "github.com/fluxcd/$1"
		)
		mv "$tmp" "$bin"
		trap - EXIT
	fi
	echo "$bin"
}

build kustomize-controller v1.9.6
build source-controller v1.8.0
build helm-controller v1.4.3
