package valuescmd

import (
	"fmt"
	"os"
	"path/filepath"
)

// ReplaceFile writes data to a temporary file in the same folder and renames
// it over path, so that readers see the old file or the new one, never half
// of it; the file keeps its mode. A symlink is not followed: the bot never
// writes through one, and the command behaves the same.
func ReplaceFile(path string, data []byte) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file; refusing to replace it", path)
	}
	return writeAtomic(path, data, info.Mode().Perm())
}

// writeAtomic replaces path with data through a temporary file in the same
// folder (a rename within one file system is atomic) with mode perm.
func writeAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("error writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("error replacing %s: %w", path, err)
	}
	return nil
}
