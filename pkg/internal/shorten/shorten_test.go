package shorten

import "testing"

func TestTo(t *testing.T) {
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one more char", 10, "one mor..."},
		// "é" is two bytes: it is not cut in half.
		{"abcdefé fin", 10, "abcdef..."},
	} {
		if got := To(tc.s, tc.limit); got != tc.want || len(got) > tc.limit {
			t.Errorf("To(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
}
