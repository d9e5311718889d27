package repoconfig

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// IsManifestFile reports a file that Flux's kustomize-controller and Argo
// CD's directory source read as manifests: a .yaml, .yml or .json file.
func IsManifestFile(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// ManifestsOf lists the manifest files of a unit's manifests entries among
// files (repository paths, sorted or not): an entry that is a manifest
// file is itself; any other entry is a folder, holding every manifest file
// below it whose path under it has no hidden element (a name starting with
// a dot), as the controllers skip them. An entry that is neither a file in
// files nor a folder holding one is returned as missing.
func ManifestsOf(entries []string, files []string) (out []string, missing string) {
	for _, e := range entries {
		if IsManifestFile(e) {
			if !slices.Contains(files, e) {
				return nil, e
			}
			out = append(out, e)
			continue
		}
		n := len(out)
		for _, f := range files {
			rel, ok := strings.CutPrefix(f, e+"/")
			if e == "." {
				rel, ok = f, true
			}
			if !ok || !IsManifestFile(f) || hidden(rel) {
				continue
			}
			out = append(out, f)
		}
		if len(out) == n {
			return nil, e
		}
	}
	slices.Sort(out)
	return slices.Compact(out), ""
}

func hidden(rel string) bool {
	return slices.ContainsFunc(strings.Split(rel, "/"), func(s string) bool { return strings.HasPrefix(s, ".") })
}

// ListRepoDir lists the manifest files below dir (repository-relative) of
// the working tree at root, recursively, as repository paths: hidden
// entries and symlinks are skipped, as ReadRepoFile refuses a symlink.
// dir "." is the whole repository.
func ListRepoDir(root, dir string) ([]string, error) {
	if err := checkRepoPath(dir); err != nil && dir != "." {
		return nil, err
	}
	var out []string
	base := filepath.Join(root, filepath.FromSlash(dir))
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != base && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 || d.IsDir() || !IsManifestFile(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}
