package yamlnode

import (
	"reflect"
	"testing"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		why  string
		in   string
		want []Document
	}{
		{"no content, no document", "# only a comment\n\n", nil},
		{"one implicit document", "a: 1\n", []Document{{0, 5, 1, false}}},
		{"a directive belongs to the document the marker opens", "%YAML 1.1\n---\na: 1\n", []Document{{0, 19, 1, false}}},
		{"comments before the first marker belong to the first document", "# c\n---\na: 1\n", []Document{{0, 13, 1, false}}},
		{"a marker ends the document before it", "a: 1\n---\nb: 2\n", []Document{{0, 5, 1, false}, {5, 14, 2, false}}},
		{"an explicit document of comments counts, as empty", "a: 1\n---\n# c\n", []Document{{0, 5, 1, false}, {5, 13, 2, true}}},
		{"content on the marker line", "--- a: 1\n", []Document{{0, 9, 1, false}}},
		{"an end marker closes the document with it", "a: 1\n...\n# trailing\n", []Document{{0, 9, 1, false}}},
		{"--- inside a word is not a marker", "a: ---x\n", []Document{{0, 8, 1, false}}},
		{"a byte-order mark does not hide a marker", "\ufeff---\na: 1\n", []Document{{0, 12, 1, false}}},
		{"CRLF line ends", "a: 1\r\n---\r\nb: 2\r\n", []Document{{0, 6, 1, false}, {6, 17, 2, false}}},
	}
	for _, tt := range tests {
		if got := SplitDocuments([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: SplitDocuments(%q) = %v, want %v", tt.why, tt.in, got, tt.want)
		}
	}
}
