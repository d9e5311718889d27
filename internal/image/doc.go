// Package image builds backflow's container image without a Docker daemon:
// one image per platform from the two static binaries built for it
// (backflow, the entrypoint, and backflow-core beside it), on an empty
// base with the CA certificates, /etc/passwd and /etc/group naming the
// nonroot user 65532 (which the image runs as), and a writable /tmp; an
// OCI image index over them with the source, revision and version labels.
// It writes an OCI image layout (crane push, registries) and per-platform
// tarballs that docker load takes, with go-containerregistry.
//
// It knows nothing of backflow's own packages: cmd/backflow-image is its
// command, run by make image and the release workflow.
package image
