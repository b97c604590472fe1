package airlock_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeShowsTheExample keeps the README's library snippet true: it is
// the functions agent and runTurn of example_test.go, which compile and run
// as Example_turn.
func TestReadmeShowsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(readme), "## As a library\n\n```go\n")
	if ok {
		snippet, _, ok = strings.Cut(snippet, "```\n")
	}
	if !ok {
		t.Fatal("README.md has no Go snippet under \"## As a library\"")
	}
	var want []string
	for _, name := range []string{"agent", "runTurn"} {
		fn := regexp.MustCompile(`(?ms)^func ` + name + `\(.*?^}\n`).FindString(string(example))
		if fn == "" {
			t.Fatalf("example_test.go has no func %s", name)
		}
		want = append(want, fn)
	}
	if got := strings.Join(want, "\n"); snippet != got {
		t.Errorf("README.md's library snippet differs from example_test.go's agent and runTurn:\n--- README\n%s--- example_test.go\n%s", snippet, got)
	}
}
