package textbound

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{name: "shorter", s: "abc", n: 5, want: "abc"},
		{name: "at the bound", s: "abc", n: 3, want: "abc"},
		{name: "one byte over", s: "abcd", n: 3, want: "abc"},
		{name: "empty", s: "", n: 3, want: ""},
		{name: "zero", s: "abc", n: 0, want: ""},
		{name: "negative", s: "abc", n: -1, want: ""},
		{name: "empty and negative", s: "", n: -1, want: ""},
		{name: "cut right before a two-byte rune", s: "abé", n: 2, want: "ab"},
		{name: "cut inside a two-byte rune", s: "abé", n: 3, want: "ab"},
		{name: "a two-byte rune whole", s: "abéc", n: 4, want: "abé"},
		{name: "cut after the first byte of a three-byte rune", s: "a€", n: 2, want: "a"},
		{name: "cut after the second byte of a three-byte rune", s: "a€", n: 3, want: "a"},
		{name: "cut inside a four-byte rune at each byte", s: "a🎉b", n: 4, want: "a"},
		{name: "a four-byte rune whole", s: "a🎉b", n: 5, want: "a🎉"},
		{name: "one rune wider than the bound", s: "é", n: 1, want: ""},
		{name: "a longer text not UTF-8 kept up to the bound", s: "ab\xffcd", n: 4, want: "ab\xffc"},
		{name: "only continuation bytes", s: "\x80\x80\x80abc", n: 2, want: ""},
		{name: "stray continuation bytes then a rune start", s: "\x80\x80abc", n: 3, want: "\x80\x80a"},
		{name: "not UTF-8 but within the bound", s: "\xff\xfe", n: 2, want: "\xff\xfe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Prefix(tc.s, tc.n))
		})
	}
}

func TestCut(t *testing.T) {
	const more = " …(cut)" // 9 bytes: … is three
	for _, tc := range []struct {
		name   string
		s      string
		n      int
		marker string
		want   string
	}{
		{name: "fits", s: strings.Repeat("a", 20), n: 20, marker: more, want: strings.Repeat("a", 20)},
		{name: "one byte over", s: strings.Repeat("a", 21), n: 20, marker: more, want: strings.Repeat("a", 11) + more},
		{name: "the marker counts toward the bound", s: "abcdef", n: 4, marker: "…", want: "a…"},
		{name: "no marker", s: "abcdef", n: 4, want: "abcd"},
		{name: "a rune at the cut", s: "ab" + strings.Repeat("é", 10), n: 12, marker: more, want: "ab" + more},
		{name: "nothing of the text left", s: strings.Repeat("é", 10), n: len(more) + 1, marker: more, want: more},
		{name: "the marker exactly", s: "abcdefghijk", n: len(more), marker: more, want: more},
		{name: "the marker does not fit", s: "abcdefghijk", n: 3, marker: more, want: " "},
		{name: "the marker's rune does not fit whole", s: "abcdefghijk", n: 2, marker: more, want: " "},
		{name: "not UTF-8", s: strings.Repeat("\x80", 40), n: 20, marker: more, want: more},
		{name: "zero", s: "abc", n: 0, marker: more, want: ""},
		{name: "negative", s: "abc", n: -3, marker: "…", want: ""},
		{name: "empty text", s: "", n: 0, marker: more, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cut(tc.s, tc.n, tc.marker)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), max(tc.n, 0))
		})
	}
}

// FuzzPrefix checks what every caller relies on: the result is a prefix
// of s, within the bound, valid UTF-8 when s is, and loses less than one
// rune's worth of bytes.
func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"", "abc", "a€b", "a🎉b", "\x80\x80abc", "ab\xffcd"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if !strings.HasPrefix(s, got) {
			t.Fatalf("Prefix(%q, %d) = %q, not a prefix", s, n, got)
		}
		if len(got) > max(n, 0) {
			t.Fatalf("Prefix(%q, %d) = %q, over the bound", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q, splits a rune", s, n, got)
		}
		if utf8.ValidString(s) && len(got) < min(n, len(s))-(utf8.UTFMax-1) {
			t.Fatalf("Prefix(%q, %d) = %q, cut more than one rune", s, n, got)
		}
	})
}
