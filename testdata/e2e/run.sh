#!/bin/sh
# The live end-to-end test (make e2e): installs Debian's etcd-server when
# etcd is missing, builds kube-apiserver once per version into the user's
# cache (about 15 minutes cold, seconds when cached), builds Flux's
# kustomize-controller, source-controller and helm-controller the same way
# (build-flux.sh, minutes cold), builds backflow and backflow-core from this
# checkout, then runs the test module against them.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v etcd >/dev/null 2>&1; then
	echo "e2e: etcd is missing: installing Debian's etcd-server" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y etcd-server
fi

start=$(date +%s)
KUBE_APISERVER=$("$here/build-kube-apiserver.sh")
echo "e2e: kube-apiserver ready in $(( $(date +%s) - start ))s: $KUBE_APISERVER" >&2

start=$(date +%s)
flux=$("$here/build-flux.sh")
KUSTOMIZE_CONTROLLER=$(echo "$flux" | sed -n 1p)
SOURCE_CONTROLLER=$(echo "$flux" | sed -n 2p)
HELM_CONTROLLER=$(echo "$flux" | sed -n 3p)
echo "e2e: Flux controllers ready in $(( $(date +%s) - start ))s: $KUSTOMIZE_CONTROLLER $SOURCE_CONTROLLER $HELM_CONTROLLER" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/" ./cmd/backflow ./cmd/backflow-core)

cd "$here"
KUBE_APISERVER=$KUBE_APISERVER BACKFLOW_BIN=$work/backflow \
	KUSTOMIZE_CONTROLLER=$KUSTOMIZE_CONTROLLER SOURCE_CONTROLLER=$SOURCE_CONTROLLER HELM_CONTROLLER=$HELM_CONTROLLER \
	go test -count=1 -v -timeout 20m ./...
