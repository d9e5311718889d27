package values

import (
	"errors"
	"testing"
)

func TestNote(t *testing.T) {
	for _, tc := range []struct {
		why, in, path, note, want string
		err                       error
	}{
		{"a bare line gets the note", "replica:\n  replicaCount: 4\n  other: 1\n", "replica.replicaCount",
			"accepted until 2026-06-18T20:00:05Z",
			"replica:\n  replicaCount: 4 # backflow: accepted until 2026-06-18T20:00:05Z\n  other: 1\n", nil},
		{"a person's comment is kept before the note, with its spacing", "a: 4   # scaled for the spike\n", "a", "until X",
			"a: 4   # scaled for the spike | backflow: until X\n", nil},
		{"backflow's own note is replaced", "a: 4 # backflow: until X\n", "a", "until Y", "a: 4 # backflow: until Y\n", nil},
		{"an empty note removes backflow's", "a: 3 # backflow: until X\nb: 1\n", "a", "", "a: 3\nb: 1\n", nil},
		{"an empty note leaves a person's comment", "a: 3 # mine | backflow: until X\n", "a", "", "a: 3 # mine\n", nil},
		{"a quoted value holding a hash", "a: \"x # y\"\n", "a", "n", "a: \"x # y\" # backflow: n\n", nil},
		{"CRLF line ends stay", "a: 4\r\nb: 1\r\n", "a", "n", "a: 4 # backflow: n\r\nb: 1\r\n", nil},
		{"a note's line breaks are folded", "a: 4\n", "a", "until\nX", "a: 4 # backflow: until X\n", nil},
		{"a flow item has no line of its own", "a: [1, 2]\n", "a[0]", "n", "", ErrUnsupported},
		{"a block scalar's line carries no note", "a: |\n  text\n", "a", "n", "", ErrUnsupported},
		{"a missing path", "a: 1\n", "b", "n", "", ErrNotFound},
	} {
		t.Run(tc.why, func(t *testing.T) {
			f, err := Parse([]byte(tc.in), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Note(tc.path, tc.note)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Note = %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}
