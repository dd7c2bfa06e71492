package junit

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/hostile"
)

// The hostile values in every attribute and text of the document: it
// parses, has its own elements only, and gives each value back (minus
// what XML 1.0 cannot hold).
func TestJUnitHostileValues(t *testing.T) {
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			doc := Suites{Name: v.Text, Suites: []Suite{{Name: v.Text, SystemOut: v.Text, Cases: []Case{{Name: v.Text, Classname: v.Text,
				File: v.Text, Failure: &Message{Message: v.Text, Type: v.Text, Text: v.Text}}}}}}
			var b bytes.Buffer
			if err := Write(&b, doc); err != nil {
				t.Fatal(err)
			}
			var elems []string
			d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
			for {
				tok, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("the document does not parse: %v\n%s", err, b.String())
					}
					break
				}
				if se, ok := tok.(xml.StartElement); ok {
					elems = append(elems, se.Name.Local)
				}
			}
			if got := strings.Join(elems, " "); got != "testsuites testsuite properties property property testcase failure system-out system-err" {
				t.Errorf("elements %q", got)
			}
			var got xSuites
			if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want := Clean(v.Text)
			c := got.Suites[0].Cases[0]
			props := map[string]string{}
			for _, p := range got.Suites[0].Properties.Property {
				props[p.Name] = p.Value
			}
			for what, s := range map[string]string{"name": c.Name, "classname": c.Classname, "file": props["testcase.1.file"], "run": props[PropRunID],
				"message": c.Failure.Message, "type": c.Failure.Type, "text": c.Failure.Text, "system-out": got.Suites[0].SystemOut} {
				if s != want {
					t.Errorf("%s = %q, want %q", what, s, want)
				}
			}
		})
	}
}
