package plans

import (
	"math"

	"gopkg.in/yaml.v3"
)

// aliasBudget is how many nodes aliases may add to a document, beyond its
// own size: one budget for the whole document, wherever the aliases are.
// A 700-byte "billion laughs" expands nine levels of nine aliases into
// hundreds of millions of nodes; refused here before anything walks it.
const aliasBudget = 100_000

// knownTags are the tags of plain YAML; any other (!foo, !!python/…) is
// refused rather than silently read as a string.
var knownTags = map[string]bool{
	"": true, "!": true, "!!str": true, "!!int": true, "!!float": true, "!!bool": true,
	"!!null": true, "!!map": true, "!!seq": true, "!!merge": true, "!!timestamp": true, "!!binary": true,
}

// checkNodes refuses unknown tags and documents whose aliases expand past
// the budget. It visits each node once (an alias's expansion is computed
// once per anchor), so its cost is the document's size.
func checkNodes(r *Reporter, doc *yaml.Node) bool {
	c := &nodeChecker{r: r, size: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	c.walk(doc)
	if c.tagErrors > 0 || c.cycles > 0 {
		return false
	}
	if c.added > aliasBudget+c.literal {
		r.At(c.over, "the aliases in this file expand it by more than %d nodes (the file itself has %d); runner stops here to protect memory (an alias bomb?); write the plan out, or use fewer nested aliases", aliasBudget+c.literal, c.literal)
		return false
	}
	return true
}

type nodeChecker struct {
	r         *Reporter
	size      map[*yaml.Node]int // expanded size of a node, aliases followed
	literal   int                // nodes written in the file
	added     int                // nodes aliases add
	over      *yaml.Node         // the alias at which the budget ran out
	tagErrors int
	open      map[*yaml.Node]bool // the nodes enclosing the one walked
	cycles    int
}

// sizeCap is where expanded sizes saturate (satAdd), on 32-bit systems too.
const sizeCap = math.MaxInt32

// satAdd is a+b for sizes of at most sizeCap, saturating at sizeCap.
func satAdd(a, b int) int {
	if a > sizeCap-b {
		return sizeCap
	}
	return a + b
}

// walk visits the file's own nodes, adding up what aliases expand to.
func (c *nodeChecker) walk(n *yaml.Node) {
	c.literal++
	if !knownTags[n.Tag] && n.Kind != yaml.AliasNode {
		c.tagErrors++
		if c.tagErrors <= 20 {
			c.r.At(n, "unknown tag %s: runner reads plain YAML (strings, numbers, booleans, lists, mappings); remove the tag or quote the value", n.Tag)
		}
	}
	if n.Kind == yaml.AliasNode {
		if c.open[n.Alias] {
			c.cycles++
			c.r.At(n, "alias *%s is inside the value it names (a cycle); runner cannot read a plan that contains itself", n.Value)
			return
		}
		if n.Alias != nil {
			c.added = satAdd(c.added, c.expanded(n.Alias, 0))
			if c.over == nil && c.added > aliasBudget+c.literal {
				c.over = n
			}
		}
		return
	}
	c.open[n] = true
	for _, ch := range n.Content {
		c.walk(ch)
	}
	delete(c.open, n)
}

// expanded is the number of nodes n stands for once every alias in it is
// replaced by its anchor, memoized per node.
func (c *nodeChecker) expanded(n *yaml.Node, depth int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || depth > 10_000 {
			return 1
		}
		return c.expanded(n.Alias, depth+1)
	}
	if v, ok := c.size[n]; ok {
		return v
	}
	c.size[n] = 1 // a cycle counts once (yaml.v3 refuses them anyway)
	total := 1
	for _, ch := range n.Content {
		total = satAdd(total, c.expanded(ch, depth+1))
	}
	c.size[n] = total
	return total
}
