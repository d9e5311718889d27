package render

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadRefusesMissingDependency(t *testing.T) {
	// why: a chart rendered without a dependency its Chart.yaml names is
	// not what the GitOps controller renders (helm refuses it too), so
	// the witness must not compare against it.
	files := map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: common\n    version: 2.x.x\n    repository: oci://registry-1.docker.io/bitnamicharts\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"),
	}
	_, err := LoadFiles("chart app", files)
	if !errors.Is(err, ErrChart) || !strings.Contains(err.Error(), "dependencies common are named in Chart.yaml but missing in charts/") {
		t.Fatalf("got %v", err)
	}
	files["charts/common/Chart.yaml"] = []byte("apiVersion: v2\nname: common\nversion: 2.1.0\ntype: library\n")
	if _, err := LoadFiles("chart app", files); err != nil {
		t.Fatalf("with the dependency in charts/: %v", err)
	}
}
