package receipt

import (
	"regexp"
	"strconv"
	"strings"
)

// configHubRevision is writeBack.newRevision of a confighub-revision
// receipt: confighub:<space>/<unit>@<revision number>, the slugs in
// ConfigHub's own pattern.
var configHubRevision = regexp.MustCompile(`^confighub:(` + slug + `)/(` + slug + `)@([1-9][0-9]{0,18})$`)

// slug is ConfigHub's pattern of a Slug, without anchors.
const slug = `[A-Za-z0-9](?:[\-_.A-Za-z0-9]*[A-Za-z0-9])?`

// ConfigHubRevision is the newRevision naming revision num of the Unit
// unit in space.
func ConfigHubRevision(space, unit string, num int64) string {
	return "confighub:" + space + "/" + unit + "@" + strconv.FormatInt(num, 10)
}

// ParseConfigHubRevision reads a newRevision made by ConfigHubRevision.
func ParseConfigHubRevision(s string) (space, unit string, num int64, ok bool) {
	m := configHubRevision.FindStringSubmatch(s)
	if m == nil {
		return "", "", 0, false
	}
	n, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	return m[1], m[2], n, true
}

// ConfigHubFile is the valuesFile a changed field of a ConfigHub Unit
// names: confighub://<space>/<unit>.
func ConfigHubFile(space, unit string) string { return "confighub://" + space + "/" + unit }

// fileOf is where a changed field is written: its writtenFile (a field
// written as itself) or its valuesFile.
func fileOf(cf ChangedField) (key, file string) {
	if cf.WrittenFile != "" {
		return "writtenFile", cf.WrittenFile
	}
	return "valuesFile", cf.ValuesFile
}

// confighub checks the ConfigHub rules: a confighub-revision receipt names
// the revision it writes (confighub:<space>/<unit>@<n>), and every changed
// field it claims is in that Unit (its writtenFile, or valuesFile,
// confighub://<space>/<unit>); a changed field in a ConfigHub Unit is
// written only by that method.
func (v *verifier) confighub(s *Spec) {
	wb := s.WriteBack
	if wb.Method != MethodConfigHubRevision {
		for i, cf := range s.Bounds.ChangedFields {
			if key, file := fileOf(cf); strings.HasPrefix(file, "confighub://") {
				v.fail(fieldPath(i, key), "is in a ConfigHub Unit, which only method %s writes, not %q",
					MethodConfigHubRevision, wb.Method)
			}
		}
		return
	}
	space, unit, _, ok := ParseConfigHubRevision(wb.NewRevision)
	if !ok {
		v.fail("writeBack.newRevision", "method %s names the revision it writes as confighub:<space>/<unit>@<number>, got %q",
			MethodConfigHubRevision, wb.NewRevision)
		return
	}
	want := ConfigHubFile(space, unit)
	for i, cf := range s.Bounds.ChangedFields {
		if key, file := fileOf(cf); file != want {
			v.fail(fieldPath(i, key), "must be %s, the Unit writeBack.newRevision names, got %q", want, file)
		}
	}
}

func fieldPath(i int, key string) string {
	return "bounds.changedFields[" + strconv.Itoa(i) + "]." + key
}
