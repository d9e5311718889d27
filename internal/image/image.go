package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed shape: where the binaries and the CA bundle are, and
// whom it runs as.
const (
	// BinaryPath is the binary's path in the image, its entrypoint:
	// backflow, which hands every command but the values commands to the
	// core beside it.
	BinaryPath = "/usr/local/bin/backflow"
	// CorePath is backflow-core's path, beside the entrypoint where
	// backflow looks for it.
	CorePath = "/usr/local/bin/backflow-core"
	// CAPath is where Go's crypto/x509 looks for the system roots on Linux.
	CAPath = "/etc/ssl/certs/ca-certificates.crt"
	// UID is the non-root user the image runs as (distroless' nonroot,
	// which the Kubernetes manifests name numerically).
	UID = 65532
	// User is the config's user, numeric so runAsNonRoot can check it.
	User = "65532:65532"
	// Port is the port backflow serve listens on by default.
	Port = "8080/tcp"
)

// The OCI annotation keys the image's labels carry.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// DefaultCmd is the image's default arguments: serve the config the chart
// and the manifests mount.
var DefaultCmd = []string{"serve", "--config", "/etc/backflow/config.yaml"}

// Options are what one image index is built from.
type Options struct {
	// Binaries maps each platform (linux/amd64) to its static backflow
	// binary, and Cores to its static backflow-core: every platform needs
	// both.
	Binaries map[string]string
	Cores    map[string]string
	// CACerts is the PEM bundle copied to CAPath.
	CACerts string
	// Source, Revision and Version are the OCI labels: the repository URL,
	// the commit, and the version the binaries were built as.
	Source, Revision, Version string
	// Created is the creation time recorded in the configs and layers (the
	// commit's time, so that a rebuild is bit for bit the same).
	Created time.Time
}

// Build assembles one image per platform and the index over them. Every
// input is checked before anything is built: a missing or non-static
// binary, a platform without its core or a core without its platform, a
// platform that is not os/arch, a CA bundle without a certificate are
// errors naming the file.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, errors.New("no binary given")
	}
	for _, p := range slices.Sorted(maps.Keys(o.Binaries)) {
		if o.Cores[p] == "" {
			return nil, fmt.Errorf("platform %s: no backflow-core binary; backflow hands every command but values to it", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.Cores)) {
		if o.Binaries[p] == "" {
			return nil, fmt.Errorf("platform %s: a backflow-core binary without its backflow binary", p)
		}
	}
	ca, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("CA certificates %s: no PEM certificate in it", o.CACerts)
	}
	if o.Version == "" || o.Revision == "" || o.Source == "" {
		return nil, errors.New("source, revision and version are required (the image's labels)")
	}
	labels := map[string]string{
		LabelSource: o.Source, LabelRevision: o.Revision, LabelVersion: o.Version,
		LabelCreated: o.Created.UTC().Format(time.RFC3339), LabelTitle: "backflow",
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	for _, p := range slices.Sorted(maps.Keys(o.Binaries)) {
		plat, err := v1.ParsePlatform(p)
		if err != nil || plat.OS == "" || plat.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", p)
		}
		bin, err := staticBinary(o.Binaries[p], "binary", p, plat)
		if err != nil {
			return nil, err
		}
		core, err := staticBinary(o.Cores[p], "core", p, plat)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(bin, core, ca, *plat, labels, o.Created)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	return idx, nil
}

// staticBinary reads file, the what (binary or core) of platform p, and
// checks it runs on the image's empty base.
func staticBinary(file, what, p string, plat *v1.Platform) ([]byte, error) {
	bin, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s for %s: %w", what, p, err)
	}
	if err := checkStatic(bin, plat); err != nil {
		return nil, fmt.Errorf("%s for %s (%s): %w", what, p, file, err)
	}
	return bin, nil
}

func platformImage(
	bin, core, ca []byte,
	plat v1.Platform,
	labels map[string]string,
	created time.Time,
) (v1.Image, error) {
	files, err := rootfs(bin, core, ca, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{
			Time: created,
		}, CreatedBy: "backflow image build", Comment: "the static binaries, CA certificates, the nonroot user",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Created = v1.Time{Time: created}
	cf.Author = "backflow"
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath},
		Cmd:          DefaultCmd,
		User:         User,
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/nonroot", "SSL_CERT_FILE=" + CAPath},
		ExposedPorts: map[string]struct{}{Port: {}},
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// rootfs is the image's one layer: the binaries, the CA bundle, the users
// and groups (root and nonroot) and the writable folders, with fixed
// times and owners so the layer depends on its contents only.
func rootfs(bin, core, ca []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string, mode int64, uid int) error {
		return tw.WriteHeader(
			&tar.Header{
				Typeflag: tar.TypeDir,
				Name:     p + "/",
				Mode:     mode,
				Uid:      uid,
				Gid:      uid,
				ModTime:  created,
				Format:   tar.FormatPAX,
			},
		)
	}
	file := func(p string, mode int64, data []byte) error {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	steps := []error{
		dir("etc", 0o755, 0),
		file("etc/group", 0o644, []byte(group)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		file(strings.TrimPrefix(CAPath, "/"), 0o644, ca),
		dir("home", 0o755, 0),
		dir("home/nonroot", 0o700, UID),
		dir("tmp", 0o1777, 0),
		dir("usr", 0o755, 0),
		dir("usr/local", 0o755, 0),
		dir("usr/local/bin", 0o755, 0),
		file(strings.TrimPrefix(BinaryPath, "/"), 0o755, bin),
		file(strings.TrimPrefix(CorePath, "/"), 0o755, core),
	}
	for _, err := range steps {
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes the index as the one entry of an OCI image layout at
// dir (which must not exist yet or be empty), tagged with the version, as
// crane push DIR REF and registries take it.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s: not empty; remove it first", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version}))
}

// WriteTarball writes the image of one platform as a tarball that docker
// load takes, tagged ref.
func WriteTarball(file string, idx v1.ImageIndex, platform, ref string) error {
	img, err := PlatformImage(idx, platform)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("tag %q: %w", ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(file, tag, img)
}

// PlatformImage is the index's image for platform (os/arch).
func PlatformImage(idx v1.ImageIndex, platform string) (v1.Image, error) {
	want, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Satisfies(*want) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no image for %s", platform)
}

// ReadFile returns a regular file's contents from an image's layers (the
// last layer that has it), for checks.
func ReadFile(img v1.Image, p string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	want := strings.TrimPrefix(path.Clean(p), "/")
	var found []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			if strings.TrimPrefix(path.Clean(h.Name), "/") == want && h.Typeflag == tar.TypeReg {
				if found, err = io.ReadAll(tr); err != nil {
					rc.Close()
					return nil, err
				}
			}
		}
		rc.Close()
	}
	if found == nil {
		return nil, fmt.Errorf("%s: not in the image", p)
	}
	return found, nil
}

// CompressedSize is what pulling the image transfers: its manifest, config
// and compressed layers.
func CompressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}
