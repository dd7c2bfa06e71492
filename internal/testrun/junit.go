package testrun

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
)

// junitCase is a <testcase> of a JUnit XML report (pytest's, in xunit1
// form, has file and line).
type junitCase struct {
	Classname string         `xml:"classname,attr"`
	Name      string         `xml:"name,attr"`
	File      string         `xml:"file,attr"`
	Line      string         `xml:"line,attr"`
	Failures  []junitMessage `xml:"failure"`
	Errors    []junitMessage `xml:"error"`
	Skipped   *junitMessage  `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// readJunit returns every test case of the report, at any depth of
// <testsuites>/<testsuite> nesting. A report cut short (the run was killed
// while writing it) yields the cases read so far and no error.
func readJunit(path string) ([]junitCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var cases []junitCase
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return cases, nil
		}
		if err != nil {
			if len(cases) > 0 {
				return cases, nil
			}
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "testcase" {
			var c junitCase
			if err := d.DecodeElement(&c, &se); err != nil {
				return cases, nil
			}
			cases = append(cases, c)
		}
	}
}
