package temporal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A step's result is readable JSON in the activity's payload (what the
// Web UI and `temporal workflow show` print), and a payload written
// before, with the result as base64, still reads back to the same bytes.
func TestStepResultIsReadableJSON(t *testing.T) {
	res := []byte(`{"output":"3 tests failed","exit_code":3}`)
	b, err := json.Marshal(StepOutput{Result: res})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"Result":{"output":"3 tests failed","exit_code":3}`) {
		t.Fatalf("the result is not written as JSON: %s", b)
	}
	var back StepOutput
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Result, res) {
		t.Fatalf("round trip: %s", back.Result)
	}

	// As the SDK wrote it when Result was a []byte.
	old, _ := json.Marshal(struct{ Result []byte }{res})
	var fromOld StepOutput
	if err := json.Unmarshal(old, &fromOld); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromOld.Result, res) {
		t.Fatalf("an old payload reads back as %q", fromOld.Result)
	}
}

func TestRawJSONForms(t *testing.T) {
	cases := []struct {
		name string
		in   RawJSON
		want string
	}{
		{"nil", nil, `null`},
		{"object", RawJSON(`{"a":1}`), `{"a":1}`},
		{"not an object stays base64", RawJSON(`[1]`), `"WzFd"`},
		{"invalid JSON stays base64", RawJSON(`{"a":`), `"eyJhIjo="`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Fatalf("got %s, want %s", b, c.want)
			}
			var back RawJSON
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, c.in) {
				t.Fatalf("round trip: %q, want %q", back, c.in)
			}
		})
	}
	for _, bad := range []string{`12`, `"not base64!"`, `true`} {
		var r RawJSON
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
