package docs_test

import "strings"

// A small reader of the shell lines the docs show: enough to find each
// simple command (its environment prefix, its words, whether a pipe feeds
// it), the directory `cd` moved to, and a trailing comment. Quotes are
// honoured; nothing is expanded.

// simple is one simple command of a line.
type simple struct {
	env    []string // NAME=value words before the command
	words  []string
	piped  bool   // stdin comes from a pipe or the command is inside $( ) or <( )
	dir    string // the directory it runs in, relative to the repository
	hasVar bool   // a word holds $ (an expansion we do not perform)
}

// logicalLines joins continuation lines (a trailing backslash) and drops
// a console prompt.
func logicalLines(body string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimPrefix(l, "$ ")
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// tokens splits a line into words and operators, and returns the comment
// that ends it ("" if none).
func tokens(line string) (toks []string, comment string) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return toks, strings.TrimSpace(line[i+1:])
		case strings.HasPrefix(line[i:], "&&") || strings.HasPrefix(line[i:], "||") ||
			strings.HasPrefix(line[i:], ";;") || strings.HasPrefix(line[i:], "$(") ||
			strings.HasPrefix(line[i:], "<(") || strings.HasPrefix(line[i:], "2>") ||
			strings.HasPrefix(line[i:], ">>"):
			if line[i] == '$' && inWord {
				// NAME=$( ... ): the assignment's word ends here
				cur.WriteString("$")
			}
			flush()
			toks = append(toks, line[i:i+2])
			i++
		case c == '|' || c == ';' || c == '(' || c == ')' || c == '>' || c == '<' || c == '&':
			flush()
			toks = append(toks, string(c))
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return toks, ""
}

// commandsOf reads a block's lines into simple commands. A `cd DIR` at the
// top of a line carries on to the following lines of the block (as in a
// terminal); inside ( ) it ends with the group. A DIR that is not in the
// repository (the clone of an install line) leaves the directory as it is.
func commandsOf(body string, exists func(dir string) bool) (cmds []simple, comments []string) {
	dir := "."
	for _, line := range logicalLines(body) {
		toks, comment := tokens(line)
		var stack []string
		var cur simple
		piped := false
		depthPiped := []bool{}
		end := func() {
			if len(cur.words) > 0 || len(cur.env) > 0 {
				cur.dir = dir
				if len(cur.words) > 0 && cur.words[0] == "cd" && len(cur.words) > 1 {
					next := joinDir(dir, cur.words[1])
					if exists(next) {
						dir = next
					}
				}
				cmds = append(cmds, cur)
				comments = append(comments, comment)
			}
			cur = simple{piped: piped}
		}
		cur = simple{}
		for i := 0; i < len(toks); i++ {
			tk := toks[i]
			switch tk {
			case "&&", "||", ";", ";;", "&":
				end()
				piped = len(depthPiped) > 0 && depthPiped[len(depthPiped)-1]
				cur.piped = piped
			case "|":
				end()
				piped = true
				cur.piped = true
			case "(", "$(", "<(":
				end()
				stack = append(stack, dir)
				inner := tk != "(" || piped
				depthPiped = append(depthPiped, inner)
				piped = inner
				cur.piped = inner
			case ")":
				if len(stack) == 0 {
					cur = simple{piped: piped} // a case pattern, `runner)`: not a command
					continue
				}
				end()
				if len(stack) > 0 {
					dir = stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					depthPiped = depthPiped[:len(depthPiped)-1]
				}
				piped = len(depthPiped) > 0 && depthPiped[len(depthPiped)-1]
				cur.piped = piped
			case ">", ">>", "2>", "<":
				i++ // the redirection's file
			default:
				if strings.Contains(tk, "$") {
					cur.hasVar = true
				}
				if len(cur.words) == 0 && shellKeyword[tk] {
					continue // `do runner …`: the command is what follows
				}
				if len(cur.words) == 0 && isAssignment(tk) {
					cur.env = append(cur.env, tk)
					continue
				}
				cur.words = append(cur.words, tk)
			}
		}
		end()
	}
	return cmds, comments
}

// shellKeyword are the words that may come before a command in a line.
var shellKeyword = map[string]bool{"do": true, "then": true, "else": true, "!": true, "{": true}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func joinDir(dir, to string) string {
	if strings.HasPrefix(to, "/") {
		return to
	}
	return strings.TrimPrefix(strings.TrimSuffix(dir+"/"+to, "/"), "./")
}
