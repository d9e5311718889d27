package yamlnode

import (
	"errors"
	"testing"
	"time"
)

type fileDoc struct {
	Server struct {
		Listen  string         `yaml:"listen"`
		Timeout time.Duration  `yaml:"timeout"`
		Jitter  *time.Duration `yaml:"jitter"`
	} `yaml:"server"`
}

func TestDecodeFile(t *testing.T) {
	for _, tc := range []struct {
		why, in   string
		syntax    bool   // a *SyntaxError that errors.Is(ErrUnparseable)
		wantField string // the FileMessage of the first FieldError
	}{
		{why: "a syntax error is unparseable", in: "server: [\n", syntax: true},
		{why: "an empty file is unparseable", in: "", syntax: true},
		{why: "a second document is unparseable", in: "server: {}\n---\nserver: {}\n", syntax: true},
		{why: "an unknown key is named by its dotted path and line", in: "server:\n  lisen: x\n", wantField: "line 2: unknown key server.lisen"},
		{why: "a wrong type names the place and what is wanted", in: "server:\n  listen: [1]\n", wantField: "line 2: server.listen: want a string"},
		{why: "a duration is a Go duration string", in: "server:\n  timeout: soon\n", wantField: "line 2: server.timeout: want a duration such as 30s, 5m or 1h"},
		{why: "a bare number is not a duration", in: "server:\n  timeout: 30\n", wantField: "line 2: server.timeout: want a duration such as 30s, 5m or 1h"},
		{why: "durations and a bare 0 decode", in: "server:\n  timeout: 1m30s\n  jitter: 0\n"},
	} {
		var d fileDoc
		errs, err := DecodeFile([]byte(tc.in), &d, Options{MaxNodes: 100})
		var se *SyntaxError
		if got := errors.As(err, &se) && errors.Is(err, ErrUnparseable); got != tc.syntax {
			t.Errorf("%s: err %v, syntax %t", tc.why, err, got)
			continue
		}
		switch {
		case tc.wantField == "" && len(errs) > 0:
			t.Errorf("%s: %v", tc.why, errs)
		case tc.wantField != "" && (len(errs) == 0 || errs[0].FileMessage() != tc.wantField):
			t.Errorf("%s: %v, want %q", tc.why, errs, tc.wantField)
		}
	}
	var d fileDoc
	if _, err := DecodeFile([]byte("server:\n  timeout: 1m30s\n  jitter: 0\n"), &d, Options{MaxNodes: 100}); err != nil || d.Server.Timeout != 90*time.Second || d.Server.Jitter == nil || *d.Server.Jitter != 0 {
		t.Errorf("decoded %+v, %v", d, err)
	}
}
