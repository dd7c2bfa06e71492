package junit

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// Whatever a test's name or message holds, the document parses, and
// gives back the text minus what XML cannot hold.
func TestWriteParsesBack(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"<&>\"' ]]> <!-- x -->", "<&>\"' ]]> <!-- x -->"},
		{"nul\x00 esc\x1b[31m bell\x07", "nul esc[31m bell"},
		{"not utf-8 \xff\xfe end", "not utf-8  end"},
		{"nonchars \uFFFE\uFFFF ok \uFFFD", "nonchars  ok \uFFFD"},
		{"tab\tnewline\ncr\r", "tab\tnewline\ncr\r"},
	} {
		doc := Suites{Name: tc.in, Suites: []Suite{{Name: tc.in, Cases: []Case{{Name: tc.in, Classname: tc.in, File: tc.in,
			Failure: &Message{Message: tc.in, Type: tc.in, Text: tc.in}}}}}}
		var b bytes.Buffer
		if err := Write(&b, doc); err != nil {
			t.Fatal(err)
		}
		var got xSuites
		if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%q: the document does not parse: %v\n%s", tc.in, err, b.String())
		}
		want := tc.want
		if tc.in == "tab\tnewline\ncr\r" {
			// attribute values are normalised by XML parsers: \t \n \r are
			// written as character references, so they survive.
			want = tc.in
		}
		c := got.Suites[0].Cases[0]
		props := map[string]string{}
		for _, p := range got.Suites[0].Properties.Property {
			props[p.Name] = p.Value
		}
		for what, v := range map[string]string{"run": props[PropRunID], "suite name": got.Suites[0].Name, "case name": c.Name,
			"file": props["testcase.1.file"], "message": c.Failure.Message, "text": c.Failure.Text} {
			if v != want {
				t.Errorf("%q: %s = %q, want %q", tc.in, what, v, want)
			}
		}
	}
}
