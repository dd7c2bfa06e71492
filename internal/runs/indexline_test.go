package runs

import (
	"encoding/json"
	"reflect"
	"testing"
)

// indexLines are index lines as runs write them and as damage or other
// writers may leave them.
var indexLines = []string{
	`{"v":2,"id":"01M8HN5Z7RMVHCPGK0C71108Y7","k":[483,1795939033001089165,720,1795939033001089165,0,0],"plan":"/tmp/r/plan.yaml","name":"many","status":"succeeded","start":1795888971000000000,"end":1795888974000000000,"steps":2}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"failed","steps":2,"failed":1,"hosts":["h1","hé"]}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"failed","usage":{"calls":2,"input_tokens":10,"price_known":true}}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"plan":"/a\u003cb","status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"plan":"/a\"b","status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","start":-5}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,9223372036854775807],"status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,9223372036854775808],"status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5],"status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6,7],"status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","steps":1.5}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","steps":1e2}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","steps":01}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","hosts":[]}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","hosts":null}`,
	`{"v":2,"id":"A","id":"B","k":[1,2,3,4,5,6],"status":"succeeded"}`,
	`{"v":2,"ID":"B","k":[1,2,3,4,5,6],"status":"succeeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded","more":true}`,
	`{ "v": 1, "id": "A", "k": [1,2,3,4,5,6], "status": "succeeded" }`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded"}x`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded"`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succ` + "\xff" + `eeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"status":"succ` + "\x01" + `eeded"}`,
	`{"v":2,"id":"A","k":[1,2,3,4,5,6],"sta`,
	`{"v":3,"id":"A","k":[1,2,3,4,5,6],"status":"succeeded"}`,
	`{}`, `{`, `[]`, ``, `null`,
}

// A line decodes as encoding/json decodes it, whether read field by
// field or not.
func TestDecodeEntryAsJSON(t *testing.T) {
	for _, line := range indexLines {
		checkDecodeEntry(t, line)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, line := range indexLines {
		f.Add(line)
	}
	f.Fuzz(checkDecodeEntry)
}

func checkDecodeEntry(t *testing.T, line string) {
	var want indexEntry
	wantOK := json.Unmarshal([]byte(line), &want) == nil
	got, ok := decodeEntry([]byte(line))
	if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
		t.Errorf("%q: decoded %+v, %v; encoding/json: %+v, %v", line, got, ok, want, wantOK)
	}
}
