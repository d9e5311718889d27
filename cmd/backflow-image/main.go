// Command backflow-image builds backflow's multi-platform container image
// without a Docker daemon (make image; the release workflow): an OCI image
// layout that crane push and registries take, and per-platform tarballs
// that docker load takes. See internal/image and deploy/README.md.
//
//	backflow-image --binary linux/amd64=bin/linux-amd64/backflow \
//	  --core linux/amd64=bin/linux-amd64/backflow-core \
//	  --binary linux/arm64=bin/linux-arm64/backflow \
//	  --core linux/arm64=bin/linux-arm64/backflow-core \
//	  --version v0.1.0 --revision $(git rev-parse HEAD) \
//	  --source https://github.com/backflow-dev/backflow \
//	  --layout bin/image --tarball linux/amd64=bin/backflow-image-linux-amd64.tar
//
// Exit codes: 0 built, 2 bad arguments or input (nothing is written).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/backflow-dev/backflow/internal/image"
)

// pairs is a repeatable PLATFORM=FILE flag.
type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(v string) error {
	k, f, ok := strings.Cut(v, "=")
	if !ok || k == "" || f == "" {
		return fmt.Errorf("want PLATFORM=FILE, got %q", v)
	}
	if _, dup := p[k]; dup {
		return fmt.Errorf("%s given twice", k)
	}
	p[k] = f
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backflow-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binaries, cores, tarballs := pairs{}, pairs{}, pairs{}
	fs.Var(
		binaries,
		"binary",
		"PLATFORM=FILE: the static backflow binary of a platform, the entrypoint (repeat per platform)",
	)
	fs.Var(
		cores,
		"core",
		"PLATFORM=FILE: the static backflow-core binary of a platform, beside the entrypoint (repeat per platform)",
	)
	fs.Var(tarballs, "tarball", "PLATFORM=FILE: also write that platform's image as a docker load tarball (repeatable)")
	ca := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the PEM CA bundle copied into the image")
	version := fs.String(
		"version",
		"",
		"the version the binaries were built as (label org.opencontainers.image.version; the layout's tag)",
	)
	revision := fs.String("revision", "", "the commit (label org.opencontainers.image.revision)")
	source := fs.String(
		"source",
		"https://github.com/backflow-dev/backflow",
		"the repository URL (label org.opencontainers.image.source)",
	)
	created := fs.String("created", "", "creation time, Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else now)")
	layoutDir := fs.String("layout", "", "write the OCI image layout here (a new or empty folder)")
	tag := fs.String("tag", "ghcr.io/backflow-dev/backflow", "repository the tarballs are tagged in (with :VERSION)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "backflow-image: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %v", fs.Args())
	}
	if *layoutDir == "" && len(tarballs) == 0 {
		return fail("nothing to write: give --layout DIR and/or --tarball PLATFORM=FILE")
	}
	when, err := parseCreated(*created, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return fail("%v", err)
	}
	for p := range tarballs {
		if _, ok := binaries[p]; !ok {
			return fail("--tarball %s: no --binary for that platform", p)
		}
	}
	idx, err := image.Build(image.Options{
		Binaries: binaries, Cores: cores, CACerts: *ca,
		Source: *source, Revision: *revision, Version: *version, Created: when,
	})
	if err != nil {
		return fail("%v", err)
	}
	ref := *tag + ":" + strings.ReplaceAll(*version, "+", "_")
	if *layoutDir != "" {
		if err := image.WriteLayout(*layoutDir, idx, *version); err != nil {
			return fail("layout: %v", err)
		}
	}
	for p, f := range tarballs {
		if err := image.WriteTarball(f, idx, p, ref); err != nil {
			return fail("tarball %s: %v", p, err)
		}
	}
	d, err := idx.Digest()
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "index %s (%s)\n", d, ref)
	m, err := idx.IndexManifest()
	if err != nil {
		return fail("%v", err)
	}
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return fail("%v", err)
		}
		size, err := image.CompressedSize(img)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(stdout, "  %s %s %.1f MiB compressed\n", desc.Platform, desc.Digest, float64(size)/(1<<20))
	}
	if *layoutDir != "" {
		fmt.Fprintf(stdout, "layout %s\n", *layoutDir)
	}
	for p, f := range tarballs {
		fmt.Fprintf(stdout, "tarball %s %s\n", p, f)
	}
	return 0
}

func parseCreated(flagValue, epoch string) (time.Time, error) {
	v := flagValue
	if v == "" {
		v = epoch
	}
	if v == "" {
		return time.Now().UTC().Truncate(time.Second), nil
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--created %q: want Unix seconds or RFC 3339", v)
	}
	return t.UTC(), nil
}
