package values

import (
	"errors"
	"testing"
)

func TestSelectorSet(t *testing.T) {
	data := "env:\n  # the zone\n  - name: TZ\n    value: UTC # keep\n  - name: PORT\n    value: \"80\"\nports:\n- containerPort: 80\n  name: http\n"
	cases := []struct {
		path  string
		value any
		want  string
		why   string
	}{
		{"env[name=TZ].value", "CET", "env:\n  # the zone\n  - name: TZ\n    value: CET # keep\n  - name: PORT\n    value: \"80\"\nports:\n- containerPort: 80\n  name: http\n", "a selector names the item; only the token changes"},
		{"env[name=PORT].value", "8080", "env:\n  # the zone\n  - name: TZ\n    value: UTC # keep\n  - name: PORT\n    value: \"8080\"\nports:\n- containerPort: 80\n  name: http\n", "the second item, quoting kept"},
		{"env[name=TZ].from", "x", "env:\n  # the zone\n  - name: TZ\n    value: UTC # keep\n    from: x\n  - name: PORT\n    value: \"80\"\nports:\n- containerPort: 80\n  name: http\n", "a missing key is inserted in the selected item"},
		{"ports[containerPort=80].name", "web", "env:\n  # the zone\n  - name: TZ\n    value: UTC # keep\n  - name: PORT\n    value: \"80\"\nports:\n- containerPort: 80\n  name: web\n", "Helm reads 80 as a number with the same text"},
	}
	for _, c := range cases {
		out, changes, err := Set([]byte(data), []Edit{{Path: c.path, Value: c.value}}, Options{})
		if err != nil {
			t.Errorf("%s (%s): %v", c.path, c.why, err)
			continue
		}
		if string(out) != c.want {
			t.Errorf("%s (%s): got\n%s", c.path, c.why, out)
		}
		if len(changes) != 1 || changes[0].Path != c.path {
			t.Errorf("%s (%s): changes %+v", c.path, c.why, changes)
		}
		got, err := Get(out, c.path, Options{})
		if err != nil || !sameValue(got, c.value) {
			t.Errorf("%s (%s): reads back %#v, %v", c.path, c.why, got, err)
		}
	}
}

func TestSelectorRefusals(t *testing.T) {
	cases := []struct {
		data, path string
		want       error
		why        string
	}{
		{"env:\n- name: A\n  value: 1\n- name: A\n  value: 2\n", "env[name=A].value", ErrSelector, "two items match: ambiguous"},
		{"env:\n- name: A\n", "env[name=B].value", ErrNotFound, "no item matches"},
		{"env:\n- name: A\n", "env[name=B].value", ErrSelector, "no item matches is a selector error too"},
		{"env:\n- name: yes\n", "env[name=yes].value", ErrSelector, "Helm reads yes as true: the readers disagree"},
		{"env: {name: A}\n", "env[name=A].value", ErrThroughScalar, "a mapping is not a list"},
		{"other: 1\n", "env[name=A].value", ErrNotFound, "no list at all"},
		{"env:\n- &x {name: A, value: 1}\n- *x\n", "env[name=A].value", ErrSelector, "an alias repeats the item"},
	}
	for _, c := range cases {
		out, _, err := Set([]byte(c.data), []Edit{{Path: c.path, Value: "v"}}, Options{})
		if !errors.Is(err, c.want) || out != nil {
			t.Errorf("%s (%s): got %v, want %v", c.path, c.why, err, c.want)
		}
	}
	if _, err := Get([]byte("env:\n- name: A\n"), "env[name=B]", Options{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing item: %v", err)
	}
}
