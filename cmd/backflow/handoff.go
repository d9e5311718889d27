package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/backflow-dev/backflow/internal/cliroot"
)

// coreName is the whole command line's binary, cmd/backflow-core.
const coreName = "backflow-core"

// coreFile is the core's file name beside the front: with .exe on Windows.
func coreFile() string {
	if runtime.GOOS == "windows" {
		return coreName + ".exe"
	}
	return coreName
}

// coreEnv names the core explicitly; it wins over every other place.
const coreEnv = "BACKFLOW_CORE"

// handOff replaces the process with the core, running argv (argv[0] kept
// as typed) with env and the front's version in cliroot.HandedOffEnv. It
// returns only when it could not: the exit code 2, the reason on stderr. A
// front started with that variable set was handed the command line by
// another front (a "core" that is a wrapper of backflow): handing it on
// again would loop for ever, so it refuses.
func handOff(argv, env []string, stderr io.Writer) int {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, cliroot.HandedOffEnv+"="); ok {
			fmt.Fprintf(
				stderr,
				"backflow: this command line was handed to %s once already (by backflow %s) and came back to backflow: the %s "+
					"found runs backflow, not the core; point $%s at the real %s\n",
				coreName,
				v,
				coreName,
				coreEnv,
				coreName,
			)
			return 2
		}
	}
	core, err := findCore(os.Getenv(coreEnv), ownPath)
	if err != nil {
		fmt.Fprintln(stderr, "backflow: "+err.Error())
		return 2
	}
	code, err := execCore(core, argv, append(env, cliroot.HandedOffEnv+"="+cliroot.Version()))
	if err != nil {
		fmt.Fprintf(stderr, "backflow: running %s: %v\n", core, err)
		return 2
	}
	return code
}

// ownPath is this binary's resolved path (os.Executable, symlinks
// resolved), looked up only when the core must be found beside it.
func ownPath() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", fmt.Errorf("cannot find this binary's own path to look for %s beside it: %v", coreName, err)
	}
	return self, nil
}

// findCore is the core's path: fromEnv (the value of $BACKFLOW_CORE) when
// set, else backflow-core in the folder of this binary's resolved path
// (own), else backflow-core on PATH. The error names every place it
// looked and how to install the core. A core that is this binary itself is
// refused: handing off to it would hand off again, for ever.
func findCore(fromEnv string, own func() (string, error)) (string, error) {
	self, selfErr := own()
	if fromEnv != "" {
		// Absolute, so that the path checked is the path run: a bare name
		// would be looked up on PATH by exec where os.Stat reads the
		// current folder.
		abs, err := filepath.Abs(fromEnv)
		if err == nil {
			err = executable(abs, self)
		}
		if err != nil {
			return "", fmt.Errorf("%s=%s: %v", coreEnv, fromEnv, err)
		}
		return abs, nil
	}
	if selfErr != nil {
		return "", selfErr
	}
	beside := filepath.Join(filepath.Dir(self), coreFile())
	besideErr := executable(beside, self)
	if besideErr == nil {
		return beside, nil
	}
	onPath, err := exec.LookPath(coreName)
	if err == nil {
		if err = executable(onPath, self); err == nil {
			return onPath, nil
		}
		err = fmt.Errorf("%s: %v", onPath, err)
	}
	v := cliroot.Version()
	if !releaseVersion.MatchString(v) {
		v = "VERSION"
	}
	return "", fmt.Errorf(`this command needs %[1]s, the rest of backflow's command line, and none was found:
  $%[2]s is not set;
  %[3]v;
  on PATH: %[4]v.
backflow runs the values commands and version itself and hands every other command to %[1]s. `+
		`Install both binaries of a release side by side, or both with go install:
  go install github.com/backflow-dev/backflow/cmd/backflow@%[5]s `+
		`github.com/backflow-dev/backflow/cmd/backflow-core@%[5]s`,
		coreName, coreEnv, besideErr, err, v)
}

// releaseVersion is a version go install can fetch.
var releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// executable checks that path is a regular, executable file other than
// self.
func executable(path, self string) error {
	info, err := os.Stat(path)
	if err != nil {
		return simplify(err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	if info.Mode().Perm()&0o111 == 0 && !strings.EqualFold(filepath.Ext(path), ".exe") {
		return fmt.Errorf("%s: not executable", path)
	}
	if self == "" {
		return nil
	}
	if me, err := os.Stat(self); err == nil && os.SameFile(info, me) {
		return fmt.Errorf("%s is this binary, backflow itself, not %s", path, coreName)
	}
	return nil
}

// simplify drops the operation from a file error: "x: no such file or
// directory" rather than "stat x: ...".
func simplify(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
