package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/binary"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/backflow-dev/backflow/internal/image"
)

const (
	testVersion  = "v9.8.7"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
	testSource   = "https://github.com/backflow-dev/backflow"
)

var created = time.Date(2026, 12, 1, 2, 20, 0, 0, time.UTC)

// hostBinary builds testdata/version for the host, static, with the
// version set as make build sets it.
func hostBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "backflow")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion, "-o", out, "./testdata/version")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// otherArch is the platform of the two that is not the host's.
func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// elfFile writes a minimal ELF executable header for machine: one
// PT_LOAD, and a PT_INTERP when dynamic (what a cgo build carries).
func elfFile(t *testing.T, machine elf.Machine, dynamic bool) string {
	t.Helper()
	phnum := uint16(1)
	if dynamic {
		phnum = 2
	}
	var b bytes.Buffer
	le := binary.LittleEndian
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), 0})
	b.Write(make([]byte, 8))
	for _, v := range []any{uint16(elf.ET_EXEC), uint16(machine), uint32(elf.EV_CURRENT), uint64(0x400000 + 64 + 56*uint64(phnum)),
		uint64(64), uint64(0), uint32(0), uint16(64), uint16(56), phnum, uint16(64), uint16(0), uint16(0)} {
		_ = binary.Write(&b, le, v)
	}
	interp := []byte("/lib/ld-linux-aarch64.so.1\x00")
	size := uint64(64 + 56*uint64(phnum) + uint64(len(interp)))
	for _, v := range []any{uint32(elf.PT_LOAD), uint32(elf.PF_R | elf.PF_X), uint64(0), uint64(0x400000), uint64(0x400000), size, size, uint64(0x1000)} {
		_ = binary.Write(&b, le, v)
	}
	if dynamic {
		off := uint64(64 + 56*2)
		for _, v := range []any{uint32(elf.PT_INTERP), uint32(elf.PF_R), off, 0x400000 + off, 0x400000 + off, uint64(len(interp)), uint64(len(interp)), uint64(1)} {
			_ = binary.Write(&b, le, v)
		}
	}
	b.Write(interp)
	p := filepath.Join(t.TempDir(), "backflow")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var machineOf = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// caBundle writes a PEM bundle with one self-signed certificate.
func caBundle(t *testing.T) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "image test CA"},
		NotBefore: created, NotAfter: created.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}

// coreOf writes a stand-in core for bin: the same executable with bytes
// after it (which the loader ignores), so that the image test can tell
// the two files apart.
func coreOf(t *testing.T, bin string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "backflow-core")
	if err := os.WriteFile(p, append(data, "backflow-core"...), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func options(t *testing.T) (image.Options, []byte) {
	ca, caData := caBundle(t)
	host, other := hostBinary(t), elfFile(t, machineOf[otherArch()], false)
	return image.Options{
		Binaries: map[string]string{
			"linux/" + runtime.GOARCH: host,
			"linux/" + otherArch():    other,
		},
		Cores: map[string]string{
			"linux/" + runtime.GOARCH: coreOf(t, host),
			"linux/" + otherArch():    coreOf(t, other),
		},
		CACerts: ca, Source: testSource, Revision: testRevision, Version: testVersion, Created: created,
	}, caData
}

func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs the image's linux binary")
	}
	opts, caData := options(t)
	idx, err := image.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := image.WriteLayout(dir, idx, testVersion); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(t.TempDir(), "image.tar")
	if err := image.WriteTarball(tarFile, idx, "linux/"+runtime.GOARCH, "ghcr.io/backflow-dev/backflow:"+testVersion); err != nil {
		t.Fatal(err)
	}

	// Read back what was written, as crane push or a registry would.
	lp, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != types.OCIImageIndex || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("layout's index.json: %+v; want one OCI image index tagged %s", top.Manifests, testVersion)
	}
	read, err := lp.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := read.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", d.Platform, d.MediaType)
		}
		img, err := read.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, *d.Platform, caData)
		p := d.Platform.String()
		for file, want := range map[string]string{image.BinaryPath: opts.Binaries[p], image.CorePath: opts.Cores[p]} {
			got, err := image.ReadFile(img, file)
			wantData, _ := os.ReadFile(want)
			if err != nil || !bytes.Equal(got, wantData) {
				t.Errorf("%s: %s is not %s (%v)", p, file, want, err)
			}
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	if m.Annotations[image.LabelRevision] != testRevision {
		t.Errorf("index annotations %v", m.Annotations)
	}

	// The host's binary in the image runs version.
	host, err := image.PlatformImage(read, "linux/"+runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := image.ReadFile(host, image.BinaryPath)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "backflow")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "backflow "+testVersion+" (") || !strings.Contains(string(out), "linux/"+runtime.GOARCH) {
		t.Errorf("%s version: %v: %q", image.BinaryPath, err, out)
	}
	info, err := hostCoreMode(host)
	if err != nil || info&0o111 == 0 {
		t.Errorf("%s: mode %v (%v), want executable", image.CorePath, info, err)
	}

	// The tarball is what docker load takes: one image, tagged.
	tag := "ghcr.io/backflow-dev/backflow:" + testVersion
	ti, err := tarball.ImageFromPath(tarFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, ti, v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, caData)
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarFile) })
	if err != nil || len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{tag}) {
		t.Errorf("tarball manifest %+v (%v), want one image tagged %s", manifest, err, tag)
	}

	// The same inputs make the same index, bit for bit.
	again, err := image.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}
}

// hostCoreMode is the mode of the core's entry in img's layer.
func hostCoreMode(img v1.Image) (os.FileMode, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return 0, err
		}
		if "/"+h.Name == image.CorePath {
			return os.FileMode(h.Mode).Perm(), nil
		}
	}
}

func checkImage(t *testing.T, img v1.Image, plat v1.Platform, caData []byte) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != plat.OS || cf.Architecture != plat.Architecture {
		t.Errorf("%s: config says %s/%s", plat, cf.OS, cf.Architecture)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{image.BinaryPath}) || !slices.Equal(c.Cmd, image.DefaultCmd) {
		t.Errorf("%s: entrypoint %v, cmd %v", plat, c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", plat, c.User)
	}
	for k, want := range map[string]string{image.LabelSource: testSource, image.LabelRevision: testRevision, image.LabelVersion: testVersion, image.LabelCreated: "2026-12-01T02:20:00Z"} {
		if c.Labels[k] != want {
			t.Errorf("%s: label %s = %q, want %q", plat, k, c.Labels[k], want)
		}
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("%s: created %v", plat, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers (%v), want 1 on an empty base", plat, len(layers), err)
	}
	ca, err := image.ReadFile(img, image.CAPath)
	if err != nil || !bytes.Equal(ca, caData) {
		t.Errorf("%s: %s: %v", plat, image.CAPath, err)
	}
	passwd, err := image.ReadFile(img, "/etc/passwd")
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd %q: %v", plat, passwd, err)
	}
	for _, p := range []string{image.BinaryPath, image.CorePath} {
		bin, err := image.ReadFile(img, p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil || f.Machine != machineOf[plat.Architecture] {
			t.Errorf("%s: %s is not an ELF file for %s: %v", plat, p, plat.Architecture, err)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	opts, _ := options(t)
	ca := opts.CACerts
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host := opts.Binaries["linux/"+runtime.GOARCH]
	other := "linux/" + otherArch()
	// only builds one platform from bin and core.
	only := func(o *image.Options, p, bin, core string) {
		o.Binaries, o.Cores = map[string]string{p: bin}, map[string]string{p: core}
	}
	dynamic := elfFile(t, machineOf[otherArch()], true)
	for _, tc := range []struct {
		name string
		edit func(o *image.Options)
		want string
	}{
		{"dynamic binary", func(o *image.Options) { only(o, other, dynamic, opts.Cores[other]) }, "dynamically linked"},
		{"dynamic core", func(o *image.Options) { only(o, other, opts.Binaries[other], dynamic) }, "core for " + other + " (" + dynamic + "): dynamically linked"},
		{"binary of another architecture", func(o *image.Options) { only(o, other, host, opts.Cores[other]) }, "built for"},
		{"missing binary", func(o *image.Options) { only(o, "linux/amd64", "/nonexistent/backflow", host) }, "/nonexistent/backflow"},
		{"missing core", func(o *image.Options) { only(o, "linux/amd64", host, "/nonexistent/backflow-core") }, "/nonexistent/backflow-core"},
		{"a platform without its core", func(o *image.Options) { o.Cores = map[string]string{other: opts.Cores[other]} }, "no backflow-core binary"},
		{"a core without its platform", func(o *image.Options) { o.Binaries = map[string]string{other: opts.Binaries[other]} }, "without its backflow binary"},
		{"bad platform", func(o *image.Options) { only(o, "amd64", host, host) }, `platform "amd64"`},
		{"not linux", func(o *image.Options) { only(o, "darwin/arm64", host, host) }, "linux only"},
		{"CA bundle without a certificate", func(o *image.Options) { o.CACerts = notPEM }, notPEM},
		{"missing CA bundle", func(o *image.Options) { o.CACerts = ca + ".missing" }, ca + ".missing"},
		{"no version", func(o *image.Options) { o.Version = "" }, "version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			tc.edit(&o)
			_, err := image.Build(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
