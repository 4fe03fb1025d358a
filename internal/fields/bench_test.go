package fields

import "testing"

// BenchmarkKey measures field extraction per line.
func BenchmarkKey(b *testing.B) {
	line := []byte("2024-05-01\tGET\thttps://www.example.com/some/path?id=1\t200\t5123")
	for _, c := range []struct{ name, spec, delim string }{
		{"spec=3/delim=tab", "3", "\t"},
		{"spec=3/delim=blanks", "3", ""},
		{"spec=2-3/delim=tab", "2-3", "\t"},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := ParseSpec(c.spec)
			k := NewKeyExtractor(s, c.delim, false)
			b.ReportAllocs()
			for b.Loop() {
				k.Key(line)
			}
		})
	}
}
