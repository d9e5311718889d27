//go:build tools

// Package kube pins the Kubernetes API server that the live end-to-end test
// runs against. It is its own module so that the project's go.mod does not
// carry the API server's dependencies; nothing here is compiled into backflow.
package kube

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
