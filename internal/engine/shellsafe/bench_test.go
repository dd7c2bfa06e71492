package shellsafe

import "testing"

// benchScript is a command step's script with the usual kinds of places.
const benchScript = `set -e
cd ${{ vars.dir }}
git commit -m "${{ vars.msg }}"
cat <<EOF > notes.txt
${{ vars.notes }}
EOF
python3 script.py --name ${{ vars.name }} | jq --arg x "${{ vars.x }}" '.a = $x'
for f in ${{ vars.files }}; do echo "$f"; done
echo $(( ${{ vars.n }} + 1 ))
`

// Prepare runs once per shell field when a plan loads.
func BenchmarkPrepare(b *testing.B) {
	segs := segments(benchScript)
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := Prepare(segs); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// Command runs once per visit of a command step.
func BenchmarkCommand(b *testing.B) {
	s, errs := Prepare(segments(benchScript))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := render(s, "42")
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
