package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
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

// A ToolIndex is what find_tools searches: it ranks a catalog's tools
// against a query, by BM25 over the words of each tool's name (split at
// _, - and case changes, counted twice) and description, a query word of
// four letters or more matching the words it begins too (file: files).
// The loop builds one per snapshot, the first time find_tools is asked,
// and its runs share it: Find may be called from several goroutines at
// once.
type ToolIndex struct {
	tools []airlock.Tool
	lens  []int                // words of each tool
	post  map[string][]posting // the tools each word is in, in the order of tools
	vocab []string             // every word, sorted: prefixes are ranges
	avg   float64
	// scratch holds the *scores of queries that ended, zeroed: a large
	// catalog's query scores thousands of tools, and would otherwise leave
	// as many behind for the collector.
	scratch sync.Pool
}

// scores are a query's scores of an index's tools, and the tools that
// have one.
type scores struct {
	of      []float64
	matched []int
}

type posting struct{ tool, tf int }

// NewToolIndex indexes tools; the index keeps the slice, which must not
// be modified.
func NewToolIndex(tools []airlock.Tool) *ToolIndex {
	ix := &ToolIndex{tools: tools, lens: make([]int, len(tools)), post: map[string][]posting{}}
	total := 0
	var ws []string
	tf := map[string]int{}
	for i, t := range tools {
		ws = words(ws[:0], t.Name)
		ws = append(ws, ws...)
		ws = words(ws, t.Title)
		ws = words(ws, t.Description)
		ix.lens[i] = len(ws)
		total += len(ws)
		clear(tf)
		for _, w := range ws {
			tf[w]++
		}
		for w, n := range tf {
			ix.post[w] = append(ix.post[w], posting{i, n})
		}
	}
	ix.vocab = make([]string, 0, len(ix.post))
	for w := range ix.post {
		ix.vocab = append(ix.vocab, w)
	}
	slices.Sort(ix.vocab)
	if len(tools) > 0 {
		ix.avg = float64(total) / float64(len(tools))
	}
	return ix
}

// A hit is a tool that matches a query, and its score.
type hit struct {
	tool  int
	score float64
}

// Find returns the at most limit tools that match query best, best first;
// ties go by name.
func (ix *ToolIndex) Find(query string, limit int) []airlock.Tool {
	q := words(nil, query)
	if len(q) == 0 || len(ix.tools) == 0 || limit <= 0 {
		return nil
	}
	slices.Sort(q)
	q = slices.Compact(q)
	const k1, b = 1.2, 0.75
	n := float64(len(ix.tools))
	// Every term adds to the score of each tool it is in, in the order of
	// the query's words; matched lists the tools that have a score.
	sc, _ := ix.scratch.Get().(*scores)
	if sc == nil {
		sc = &scores{of: make([]float64, len(ix.tools))}
	}
	defer func() {
		for _, t := range sc.matched {
			sc.of[t] = 0
		}
		sc.matched = sc.matched[:0]
		ix.scratch.Put(sc)
	}()
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
				if sc.of[p.tool] == 0 {
					// Every term's part is above 0: a tool's first.
					sc.matched = append(sc.matched, p.tool)
				}
				f := float64(p.tf)
				sc.of[p.tool] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(ix.lens[p.tool])/ix.avg))
			}
		}
	}
	// The best limit hits, kept in order: a catalog's queries match
	// thousands of tools, and want a few.
	better := func(a, b hit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return ix.tools[a.tool].Name < ix.tools[b.tool].Name
	}
	best := make([]hit, 0, min(limit, len(sc.matched)))
	for _, t := range sc.matched {
		h := hit{t, sc.of[t]}
		if len(best) == limit && !better(h, best[limit-1]) {
			continue
		}
		i := len(best)
		for i > 0 && better(h, best[i-1]) {
			i--
		}
		if len(best) < limit {
			best = append(best, hit{})
		}
		copy(best[i+1:], best[i:])
		best[i] = h
	}
	out := make([]airlock.Tool, len(best))
	for i, h := range best {
		out[i] = ix.tools[h.tool]
	}
	return out
}

// words appends to out the lower-case words of s: split at anything but
// letters and digits, and where a lower-case letter meets an upper-case
// one (readFile: read, file).
func words(out []string, s string) []string {
	start := -1 // where the current word begins, -1 between words
	var prev rune
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start >= 0 && unicode.IsUpper(r) && unicode.IsLower(prev) {
				out = append(out, strings.ToLower(s[start:i]))
				start = -1
			}
			if start < 0 {
				start = i
			}
		case start >= 0:
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
		prev = r
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
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
