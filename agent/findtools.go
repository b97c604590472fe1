package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/airlockhq/airlock"
)

// When the catalog has more tools than a request may carry
// (agent.max_tools_in_prompt), the model gets find_tools instead: it asks
// with words, and the tools that match best, by a lexical ranking of their
// names and descriptions, enter the steps after (with those it used). A
// find_tools call reaches no server: it reads the step's snapshot only.

const (
	// FindTools is the built-in tool's name, unless the catalog has a tool
	// of that name (then it is airlock_find_tools).
	FindTools = "find_tools"
	// findLimit is how many tools one find_tools call returns by default,
	// and findMax the most it may ask for.
	findLimit = 8
	findMax   = 20
)

// finderName is the name find_tools takes in a catalog whose tools are
// byName.
func finderName(byName map[string]airlock.Tool) string {
	name := FindTools
	for i := 0; ; i++ {
		if _, taken := byName[name]; !taken {
			return name
		}
		name = fmt.Sprintf("airlock_find_tools%s", strings.Repeat("_", i))
	}
}

// finderSpec is find_tools as the model sees it.
func finderSpec(name string, n int) ToolSpec {
	return ToolSpec{
		Name: name,
		Description: fmt.Sprintf("Search the %d tools available to you by what they do. The tools it finds can be called from your next step on. "+
			"Ask with a few words, such as \"read file\" or \"create issue\".", n),
		Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words describing the tool you need"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"how many tools to return (default 8)"}},"required":["query"],"additionalProperties":false}`),
	}
}

// A toolIndex ranks a snapshot's tools against a query: BM25 over the
// words of each tool's name (split at _, - and case changes, counted
// twice) and description, a query word of four letters or more matching
// the words it begins too (file: files). It is built once per snapshot.
type toolIndex struct {
	tools []airlock.Tool
	lens  []int                // words of each tool
	post  map[string][]posting // the tools each word is in
	vocab []string             // every word, sorted: prefixes are ranges
	avg   float64
}

type posting struct{ tool, tf int }

// newToolIndex indexes tools.
func newToolIndex(tools []airlock.Tool) *toolIndex {
	ix := &toolIndex{tools: tools, lens: make([]int, len(tools)), post: map[string][]posting{}}
	total := 0
	for i, t := range tools {
		name := words(t.Name)
		ws := append(append(name, name...), words(t.Title+" "+t.Description)...)
		ix.lens[i] = len(ws)
		total += len(ws)
		tf := map[string]int{}
		for _, w := range ws {
			tf[w]++
		}
		for w, n := range tf {
			ix.post[w] = append(ix.post[w], posting{i, n})
		}
	}
	for w := range ix.post {
		ix.vocab = append(ix.vocab, w)
	}
	slices.Sort(ix.vocab)
	if len(tools) > 0 {
		ix.avg = float64(total) / float64(len(tools))
	}
	return ix
}

// find returns the at most limit tools that match query best, best first;
// ties go by name.
func (ix *toolIndex) find(query string, limit int) []airlock.Tool {
	q := words(query)
	if len(q) == 0 || len(ix.tools) == 0 {
		return nil
	}
	slices.Sort(q)
	q = slices.Compact(q)
	const k1, b = 1.2, 0.75
	n := float64(len(ix.tools))
	scores := map[int]float64{}
	for _, w := range q {
		terms := []string{w}
		if len(w) >= 4 {
			terms = terms[:0]
			i, _ := slices.BinarySearch(ix.vocab, w)
			for ; i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], w); i++ {
				terms = append(terms, ix.vocab[i])
			}
		}
		for _, term := range terms {
			ps := ix.post[term]
			if len(ps) == 0 {
				continue
			}
			df := float64(len(ps))
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			for _, p := range ps {
				f := float64(p.tf)
				scores[p.tool] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(ix.lens[p.tool])/ix.avg))
			}
		}
	}
	type hit struct {
		i     int
		score float64
	}
	hits := make([]hit, 0, len(scores))
	for i, s := range scores {
		hits = append(hits, hit{i, s})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(ix.tools[a.i].Name, ix.tools[b.i].Name)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]airlock.Tool, len(hits))
	for i, h := range hits {
		out[i] = ix.tools[h.i]
	}
	return out
}

// words splits s into lower-case words: at anything but letters and
// digits, and where a lower-case letter meets an upper-case one
// (readFile: read, file).
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// findArgs decodes a find_tools call's arguments.
func findArgs(raw string) (query string, limit int, err error) {
	var a struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", 0, fmt.Errorf("the arguments must be a JSON object {\"query\": \"words\", \"limit\": N}: %v", err)
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return "", 0, fmt.Errorf("query is required: describe the tool you need in a few words")
	}
	limit = findLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > findMax {
			return "", 0, fmt.Errorf("limit must be from 1 to %d", findMax)
		}
		limit = *a.Limit
	}
	return *a.Query, limit, nil
}

// describeFound is the model's answer to a find_tools call.
func describeFound(query string, found []airlock.Tool) string {
	if len(found) == 0 {
		return fmt.Sprintf("No tool matches %q. Try other words.", query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tools that match %q (callable from your next step):\n", query)
	for _, t := range found {
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, printable(desc, 300))
	}
	return strings.TrimRight(b.String(), "\n")
}
