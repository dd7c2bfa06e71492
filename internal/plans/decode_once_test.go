package plans

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// bigPlan is a plan of n command steps.
func bigPlan(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\nsteps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - label: s%d\n    type: command\n    run: echo %d\n", i, i)
	}
	return []byte(b.String())
}

// allocsOfYAMLAndParse are the allocations of one yaml.v3 decode of src
// and of one Parse of it.
func allocsOfYAMLAndParse(t *testing.T, src []byte) (yamlAllocs, parseAllocs float64) {
	t.Helper()
	yamlAllocs = testing.AllocsPerRun(5, func() {
		var n yaml.Node
		if err := yaml.Unmarshal(src, &n); err != nil {
			t.Fatal(err)
		}
	})
	parseAllocs = testing.AllocsPerRun(5, func() {
		if _, err := Parse("p.yaml", src); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("yaml.Unmarshal %.0f allocations, Parse %.0f", yamlAllocs, parseAllocs)
	return yamlAllocs, parseAllocs
}

func TestParseDecodesTheYAMLOnce(t *testing.T) {
	src := bigPlan(300)
	yamlAllocs, parseAllocs := allocsOfYAMLAndParse(t, src)
	if parseAllocs > 1.6*yamlAllocs {
		t.Errorf("Parse made %.0f allocations, %.2f× one decode of the YAML (%.0f): is the plan decoded twice?", parseAllocs, parseAllocs/yamlAllocs, yamlAllocs)
	}
}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{10, 1000} {
		src := bigPlan(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("p.yaml", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseReadsPlainPlansFast fails when Parse hands a plan in the YAML
// plans are written in to yaml.v3 rather than to fastYAML: yaml.v3 makes
// about six times the allocations of Parse's whole read (events,
// tokens, a string per value).
func TestParseReadsPlainPlansFast(t *testing.T) {
	src := bigPlan(300)
	yamlAllocs, parseAllocs := allocsOfYAMLAndParse(t, src)
	if parseAllocs > yamlAllocs/2 {
		t.Errorf("Parse made %.0f allocations, %.2f× yaml.v3's read of the YAML alone (%.0f): is the plan read by yaml.v3?", parseAllocs, parseAllocs/yamlAllocs, yamlAllocs)
	}
}
