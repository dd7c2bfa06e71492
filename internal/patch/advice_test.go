package patch

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// TestAmbiguousAdvice checks that a refusal as ambiguous tells the model
// how to name the place it means, and that each header it suggests, put in
// the diff, then applies there and nowhere else.
func TestAmbiguousAdvice(t *testing.T) {
	const twoFuncs = "func a() {\n\tx := 1\n\treturn x\n}\n\nfunc b() {\n\tx := 1\n\treturn x\n}\n"
	const oneFunc = "func a() {\n\tx := 1\n\treturn x\n\tx := 1\n\treturn x\n}\n"
	const body = " \tx := 1\n-\treturn x\n+\treturn x + 1\n"
	const withPackage = "package p\n\n" + twoFuncs
	cases := []struct {
		name   string
		file   string
		before string   // hunks before the ambiguous one
		has    []string // in the refusal
		hasNot []string
		want   []string // the file after applying each suggested header, in order
	}{
		{
			name: "places under different headings",
			file: twoFuncs,
			has:  []string{"lines 2, 7 of f.go", "line 2, under: func a() {", "line 7, under: func b() {", `"@@ -2,2 +2,2 @@"`},
			want: []string{
				strings.Replace(twoFuncs, "\treturn x\n", "\treturn x + 1\n", 1), // by line numbers
				strings.Replace(twoFuncs, "\treturn x\n", "\treturn x + 1\n", 1), // by heading
			},
		},
		{
			name:   "places under one heading",
			file:   oneFunc,
			has:    []string{"lines 2, 4 of f.go", `"@@ -2,2 +2,2 @@"`},
			hasNot: []string{"under:"},
			want:   []string{strings.Replace(oneFunc, "\treturn x\n", "\treturn x + 1\n", 1)},
		},
		{
			// The new side starts 2 lines on: the suggested header says so.
			name:   "after a hunk that adds lines",
			file:   withPackage,
			before: "@@ -1,3 +1,5 @@\n package p\n+// Package p.\n+\n \n func a() {\n",
			has:    []string{"lines 4, 9 of f.go", `"@@ -4,2 +6,2 @@"`, `"@@ -4,2 +6,2 @@ func a() {"`},
			want: []string{
				strings.Replace(strings.Replace(withPackage, "\treturn x\n", "\treturn x + 1\n", 1), "package p\n", "package p\n// Package p.\n\n", 1),
				strings.Replace(strings.Replace(withPackage, "\treturn x\n", "\treturn x + 1\n", 1), "package p\n", "package p\n// Package p.\n\n", 1),
			},
		},
	}
	quoted := regexp.MustCompile(`"(@@ [^"]*)"`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			diff := inFence("--- a/f.go\n+++ b/f.go\n" + tc.before + "@@ ... @@\n" + body)
			dir := t.TempDir()
			writeTree(t, dir, map[string][]byte{"f.go": []byte(tc.file)})
			_, err := Apply(context.Background(), dir, []byte(diff), detect)
			var re *RefusedError
			if !errors.As(err, &re) || !re.Ambiguous {
				t.Fatalf("want a refusal as ambiguous, got %v", err)
			}
			msg := err.Error()
			for _, s := range tc.has {
				if !strings.Contains(msg, s) {
					t.Errorf("refusal lacks %q:\n%s", s, msg)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(msg, s) {
					t.Errorf("refusal has %q:\n%s", s, msg)
				}
			}
			headers := quoted.FindAllStringSubmatch(msg, -1)
			if len(headers) != len(tc.want) {
				t.Fatalf("refusal suggests %d headers, want %d:\n%s", len(headers), len(tc.want), msg)
			}
			for i, h := range headers {
				dir := t.TempDir()
				writeTree(t, dir, map[string][]byte{"f.go": []byte(tc.file)})
				fixed := strings.Replace(diff, "@@ ... @@", h[1], 1)
				if _, err := Apply(context.Background(), dir, []byte(fixed), detect); err != nil {
					t.Fatalf("suggested header %q does not apply: %v", h[1], err)
				}
				if got := string(readTree(t, dir)["f.go"]); got != tc.want[i] {
					t.Errorf("with %q got\n%s\nwant\n%s", h[1], got, tc.want[i])
				}
			}
		})
	}
}
