package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/schema"
)

// schemaTool is a tool whose input schema is the JSON text doc, decoded as
// the SDK decodes a listed tool's schema.
func schemaTool(t *testing.T, name, doc string) *mcp.Tool {
	t.Helper()
	var s any
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return &mcp.Tool{Name: name, InputSchema: s}
}

func byRemote(tools []*Tool) map[string]*Tool {
	m := map[string]*Tool{}
	for _, t := range tools {
		m[t.Remote] = t
	}
	return m
}

const textSchema = `{"type":"object","properties":{"text":{"type":"string","maxLength":3}}}`

// TestAllowedSharesSchemas: tools with the same schema share one compiled
// schema; a schema that differs in a keyword or a description is its own,
// and hidden characters are revealed for every tool that has them.
func TestAllowedSharesSchemas(t *testing.T) {
	hidden := `{"type":"object","properties":{"text":{"type":"string","description":"say\u202e"}}}`
	advertised := []*mcp.Tool{
		schemaTool(t, "a", textSchema),
		schemaTool(t, "b", textSchema),
		schemaTool(t, "described", `{"type":"object","description":"Text.","properties":{"text":{"type":"string","maxLength":3}}}`),
		schemaTool(t, "longer", `{"type":"object","properties":{"text":{"type":"string","maxLength":4}}}`),
		schemaTool(t, "hidden1", hidden),
		schemaTool(t, "hidden2", hidden),
	}
	got, err := Allowed(server("*"), advertised, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tools := byRemote(got)
	if tools["a"].Input != tools["b"].Input {
		t.Errorf("two tools with one schema got two compiled schemas")
	}
	if d := tools["described"]; d.Input == tools["a"].Input || !strings.Contains(string(d.Input.JSON()), `"description":"Text."`) {
		t.Errorf("a schema with a description got %s", d.Input.JSON())
	}
	four := map[string]any{"text": "abcd"}
	if err := tools["a"].Input.Validate(four); err == nil {
		t.Errorf("maxLength 3 accepted %v", four)
	}
	if err := tools["longer"].Input.Validate(four); err != nil {
		t.Errorf("maxLength 4 refused %v: %v", four, err)
	}
	for _, name := range []string{"hidden1", "hidden2"} {
		tool := tools[name]
		if tool.Hidden != 1 || !strings.Contains(string(tool.Input.JSON()), `"say[U+202E]"`) {
			t.Errorf("%s: Hidden = %d, schema %s; want 1 and the character revealed", name, tool.Hidden, tool.Input.JSON())
		}
	}
	if tools["a"].Hidden != 0 {
		t.Errorf("a: Hidden = %d, want 0", tools["a"].Hidden)
	}
}

// TestAllowedErrorsPerTool: a refused schema names the tool it belongs
// to, with the reason Compile gives, however many tools share it.
func TestAllowedErrorsPerTool(t *testing.T) {
	bad := `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`
	_, reason := schema.Compile(json.RawMessage(bad), &schema.CompileOptions{RequireObject: true})
	if reason == nil {
		t.Fatal("the bad schema compiled")
	}
	withOutput := schemaTool(t, "out2", textSchema)
	withOutput.OutputSchema = json.RawMessage(bad)
	advertised := []*mcp.Tool{
		schemaTool(t, "good", textSchema),
		schemaTool(t, "bad1", bad),
		schemaTool(t, "bad2", bad),
		schemaTool(t, "out1", textSchema),
		withOutput,
	}
	for _, tt := range []struct {
		allowed []string
		want    string
	}{
		{[]string{"*"}, fmt.Sprintf("server srv: tool %q: inputSchema: %v", "bad1", reason)},
		{[]string{"good", "bad2"}, fmt.Sprintf("server srv: tool %q: inputSchema: %v", "bad2", reason)},
		{[]string{"out1", "out2"}, fmt.Sprintf("server srv: tool %q: outputSchema: %v", "out2", reason)},
	} {
		_, err := Allowed(server(tt.allowed...), advertised, Limits{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("allowed %v: %v; want %s", tt.allowed, err, tt.want)
		}
	}
}

// TestAllowedHostCache: a cache kept across discoveries gives a server's
// changed schema its own compiled schema, and never lets a schema pass
// limits tighter than those it was compiled under.
func TestAllowedHostCache(t *testing.T) {
	lim := Limits{Schema: &schema.CompileOptions{Cache: schema.NewCache(0, 0)}}
	first, err := Allowed(server("*"), []*mcp.Tool{schemaTool(t, "a", textSchema)}, lim)
	if err != nil {
		t.Fatal(err)
	}
	changed := `{"type":"object","properties":{"text":{"type":"string","maxLength":4}}}`
	second, err := Allowed(server("*"), []*mcp.Tool{schemaTool(t, "a", changed)}, lim)
	if err != nil {
		t.Fatal(err)
	}
	four := map[string]any{"text": "abcd"}
	if err := first[0].Input.Validate(four); err == nil {
		t.Errorf("the first list's schema accepted %v", four)
	}
	if err := second[0].Input.Validate(four); err != nil {
		t.Errorf("the changed schema refused %v: %v", four, err)
	}

	tight := &schema.CompileOptions{MaxBytes: 20, RequireObject: true}
	_, reason := schema.Compile(json.RawMessage(textSchema), tight)
	if reason == nil {
		t.Fatal("MaxBytes 20 accepted the schema")
	}
	want := fmt.Sprintf("server srv: tool %q: inputSchema: %v", "a", reason)
	tight.Cache = lim.Schema.Cache
	if _, err := Allowed(server("*"), []*mcp.Tool{schemaTool(t, "a", textSchema)}, Limits{Schema: tight}); err == nil || err.Error() != want {
		t.Errorf("tighter limits, the schema cached: %v; want %s", err, want)
	}
}
