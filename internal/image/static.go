package image

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// machines are the ELF machines of the architectures images are built for.
var machines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses a binary that would not run on the image's empty
// base: not a Linux ELF file of the platform's architecture, or linked
// dynamically (an interpreter or needed libraries: built without
// CGO_ENABLED=0).
func checkStatic(bin []byte, plat *v1.Platform) error {
	if plat.OS != "linux" {
		return fmt.Errorf("os %s: images are built for linux only", plat.OS)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return errors.New("not an ELF executable")
	}
	defer f.Close()
	want, ok := machines[plat.Architecture]
	if !ok {
		return fmt.Errorf("architecture %s: not supported", plat.Architecture)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %s, not %s", f.Machine, plat.Architecture)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names an interpreter): build it with CGO_ENABLED=0")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("dynamically linked against %v: build it with CGO_ENABLED=0", libs)
	}
	return nil
}
