package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// The go-sdk's conformance everything-server's 1x1 red PNG, which
// test://static-binary serves.
const conformancePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// contentDir makes a project whose airlock.yaml runs the go-sdk's
// conformance everything-server as server ev, with every prompt and the
// resources that allowedResources (a YAML list) matches, and no tool.
func contentDir(t *testing.T, allowedResources string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), fmt.Sprintf(`servers:
  - id: ev
    command: %q
    allowed_tools: []
    allowed_resources: %s
    allowed_prompts: ["*"]
`, testenv.GoSDKEverythingServer(t), allowedResources))
	return dir
}

// keys returns the sorted keys of a decoded JSON object.
func keys(v any) []string {
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// entry is the member of list (decoded JSON objects) whose key is value.
func entry(t *testing.T, list any, key, value string) map[string]any {
	t.Helper()
	items, _ := list.([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); m[key] == value {
			return m
		}
	}
	t.Fatalf("no entry with %s %q in %v", key, value, list)
	return nil
}

func TestResources(t *testing.T) {
	dir := contentDir(t, `["*"]`)
	out := decode(t, runCLI(t, dir, "", "resources", "--json").want(t, 0).stdout)
	if diff := cmp.Diff([]string{"generation", "resources", "servers", "snapshot", "templates"}, keys(out)); diff != "" {
		t.Errorf("resources --json keys (-want +got):\n%s", diff)
	}
	text := entry(t, out["resources"], "uri", "test://static-text")
	if diff := cmp.Diff([]string{"description", "mime_type", "name", "server", "size", "title", "uri"}, keys(text)); diff != "" {
		t.Errorf("resource keys (-want +got):\n%s", diff)
	}
	if text["server"] != "ev" || text["name"] != "static-text" || text["mime_type"] != "text/plain" || text["size"] != nil {
		t.Errorf("resource = %v", text)
	}
	tmpl := entry(t, out["templates"], "uri_template", "test://template/{id}/data")
	if diff := cmp.Diff([]string{"description", "mime_type", "name", "server", "uri_template"}, keys(tmpl)); diff != "" {
		t.Errorf("template keys (-want +got):\n%s", diff)
	}

	r := runCLI(t, dir, "", "resources").want(t, 0)
	for _, want := range []string{"test://static-text", "test://template/{id}/data", "3 resources, 1 template."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resources lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestRead(t *testing.T) {
	dir := contentDir(t, `["test://static-*", "test://template/**"]`)

	// Text.
	r := runCLI(t, dir, "", "read", "test://static-text").want(t, 0)
	if r.stdout != "This is the content of the static text resource.\n" {
		t.Errorf("read text = %q", r.stdout)
	}
	out := decode(t, runCLI(t, dir, "", "read", "test://template/42/data", "--server", "ev", "--json").want(t, 0).stdout)
	if out["status"] != "ok" {
		t.Fatalf("read = %v", out)
	}
	c := out["contents"].([]any)[0]
	if diff := cmp.Diff([]string{"mime_type", "text", "uri"}, keys(c)); diff != "" {
		t.Errorf("text content keys (-want +got):\n%s", diff)
	}
	if got := c.(map[string]any)["text"]; !strings.Contains(got.(string), `"id": "42"`) {
		t.Errorf("text = %q", got)
	}

	// A blob is an artifact, never bytes in the output.
	r = runCLI(t, dir, "", "read", "test://static-binary", "--json").want(t, 0)
	if strings.Contains(r.stdout, conformancePNG[:12]) {
		t.Errorf("the blob's bytes are in the output: %s", r.stdout)
	}
	c = decode(t, r.stdout)["contents"].([]any)[0]
	if diff := cmp.Diff([]string{"artifact", "mime_type", "uri"}, keys(c)); diff != "" {
		t.Errorf("blob content keys (-want +got):\n%s", diff)
	}
	art := c.(map[string]any)["artifact"].(map[string]any)
	got, err := os.ReadFile(art["path"].(string))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := base64.StdEncoding.DecodeString(conformancePNG)
	if !bytes.Equal(got, want) || art["media_type"] != "image/png" || art["size"] != float64(len(want)) {
		t.Errorf("artifact %v holds %d bytes, want the server's %d-byte PNG", art, len(got), len(want))
	}
	r = runCLI(t, dir, "", "read", "test://static-binary").want(t, 0)
	if line := fmt.Sprintf("artifact %s (image/png, %d bytes) saved at %s\n", art["id"], len(want), art["path"]); r.stdout != line {
		t.Errorf("read blob = %q, want %q", r.stdout, line)
	}

	// Failures the model is shown exit 1.
	tests := []struct {
		name, uri, status string
	}{
		{"not allowed", "test://watched-resource", "denied"},
		{"missing", "test://static-nope", "resource_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, dir, "", "read", tt.uri, "--json").want(t, 1)
			out := decode(t, r.stdout)
			if out["status"] != tt.status || out["content"] == "" || len(out["contents"].([]any)) != 0 {
				t.Errorf("read = %v, want %s with text for the model and no contents", out, tt.status)
			}
			r = runCLI(t, dir, "", "read", tt.uri).want(t, 1)
			if !strings.Contains(r.stderr, tt.status+": ") || r.stdout != "" {
				t.Errorf("stdout %q, stderr %q: want the failure on stderr", r.stdout, r.stderr)
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	dir := contentDir(t, `[]`)
	out := decode(t, runCLI(t, dir, "", "prompts", "--json").want(t, 0).stdout)
	if diff := cmp.Diff([]string{"generation", "prompts", "servers", "snapshot"}, keys(out)); diff != "" {
		t.Errorf("prompts --json keys (-want +got):\n%s", diff)
	}
	p := entry(t, out["prompts"], "name", "ev__test_prompt_with_arguments")
	if diff := cmp.Diff([]string{"arguments", "description", "name", "remote_name", "server", "title"}, keys(p)); diff != "" {
		t.Errorf("prompt keys (-want +got):\n%s", diff)
	}
	wantArgs := []any{
		map[string]any{"name": "arg1", "description": "First test argument", "required": true},
		map[string]any{"name": "arg2", "description": "Second test argument", "required": true},
	}
	if diff := cmp.Diff(wantArgs, p["arguments"]); diff != "" || p["server"] != "ev" || p["remote_name"] != "test_prompt_with_arguments" {
		t.Errorf("prompt %v; arguments (-want +got):\n%s", p, diff)
	}
	if args := entry(t, out["prompts"], "name", "ev__test_simple_prompt")["arguments"]; args == nil {
		t.Errorf("a prompt without arguments has arguments null, want []")
	}

	// A prompt with its arguments.
	r := runCLI(t, dir, "", "prompt", "ev__test_prompt_with_arguments", "--args", `{"arg1":"a","arg2":"b"}`, "--json").want(t, 0)
	out = decode(t, r.stdout)
	wantMessages := []any{map[string]any{"role": "user", "content": "Prompt with arguments: arg1='a', arg2='b'"}}
	if diff := cmp.Diff(wantMessages, out["messages"]); diff != "" || out["status"] != "ok" || out["description"] != "A prompt with arguments" {
		t.Errorf("prompt = %v; messages (-want +got):\n%s", out, diff)
	}
	writeFile(t, filepath.Join(dir, "args.json"), `{"arg1":"x","arg2":"y"}`)
	r = runCLI(t, dir, "", "prompt", "ev__test_prompt_with_arguments", "--args", "@args.json").want(t, 0)
	if r.stdout != "user: Prompt with arguments: arg1='x', arg2='y'\n" {
		t.Errorf("prompt text = %q", r.stdout)
	}

	// A missing argument is the model's to fix; arguments that are not
	// a JSON object are the command line's.
	r = runCLI(t, dir, "", "prompt", "ev__test_prompt_with_arguments", "--args", `{"arg1":"a"}`, "--json").want(t, 1)
	if out := decode(t, r.stdout); out["status"] != "invalid_arguments" || !strings.Contains(out["content"].(string), `"arg2" is required`) {
		t.Errorf("prompt without arg2 = %v", out)
	}
	r = runCLI(t, dir, "", "prompt", "ev__nope", "--json").want(t, 1)
	if out := decode(t, r.stdout); out["status"] != "unknown_tool" {
		t.Errorf("unknown prompt = %v", out)
	}
	for _, bad := range []string{`{"arg1":`, `["a"]`, `{"arg1":"a","arg1":"b"}`} {
		r = runCLI(t, dir, "", "prompt", "ev__test_prompt_with_arguments", "--args", bad).want(t, 2)
		if !strings.Contains(r.stderr, "airlock: --args: ") || !strings.Contains(r.stderr, "a JSON object of strings") {
			t.Errorf("--args %s: stderr = %q, want what to fix", bad, r.stderr)
		}
	}

	// The server answers every completion with nothing.
	r = runCLI(t, dir, "", "complete", "--prompt", "ev__test_prompt_with_arguments", "--argument", "arg1", "--value", "a", "--json").want(t, 0)
	if diff := cmp.Diff(map[string]any{"status": "ok", "values": []any{}, "total": float64(0), "has_more": false, "error": nil}, decode(t, r.stdout)); diff != "" {
		t.Errorf("complete (-want +got):\n%s", diff)
	}
	r = runCLI(t, dir, "", "complete", "--prompt", "ev__test_prompt_with_arguments", "--argument", "nope", "--json").want(t, 1)
	if out := decode(t, r.stdout); out["status"] != "invalid_arguments" || !strings.Contains(out["error"].(string), `takes no argument "nope"`) {
		t.Errorf("complete of an unknown argument = %v", out)
	}
}

func TestShellContentJSON(t *testing.T) {
	dir := contentDir(t, `["test://static-*"]`)
	input := strings.Join([]string{
		`{"id":1,"cmd":"resources"}`,
		`{"id":2,"cmd":"read","uri":"test://static-text"}`,
		`{"id":3,"cmd":"read","uri":"test://static-binary","server":"ev"}`,
		`{"id":4,"cmd":"read","uri":"test://watched-resource"}`,
		`{"id":5,"cmd":"prompts"}`,
		`{"id":6,"cmd":"prompt","name":"ev__test_prompt_with_arguments","args":{"arg1":"a","arg2":"b"}}`,
		`{"id":7,"cmd":"prompt","name":"ev__test_prompt_with_arguments","args":{"arg1":"a"}}`,
		`{"id":8,"cmd":"complete","prompt":"ev__test_prompt_with_arguments","argument":"arg1","value":"a","context":{"arg2":"b"}}`,
		`{"id":9,"cmd":"read"}`,
		`{"id":10,"cmd":"complete","argument":"arg1"}`,
		`{"id":11,"cmd":"prompt","name":"ev__test_simple_prompt","args":"x"}`,
		`{"id":12,"cmd":"read","url":"test://static-text"}`,
		`{"id":13,"cmd":"quit"}`,
	}, "\n")
	r := runCLI(t, dir, input, "shell", "--json").want(t, 0)
	byID := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		v := decode(t, l)
		id, _ := json.Marshal(v["id"])
		byID[string(id)] = v
	}
	if len(byID) != 12 {
		t.Errorf("%d replies, want 12:\n%s", len(byID), r.stdout)
	}
	if got := len(byID["1"]["resources"].([]any)); got != 2 {
		t.Errorf("resources reply has %d resources, want the 2 allowed: %v", got, byID["1"])
	}
	if got := byID["2"]["contents"].([]any)[0].(map[string]any)["text"]; got != "This is the content of the static text resource." {
		t.Errorf("read text = %v", byID["2"])
	}
	if art, _ := byID["3"]["contents"].([]any)[0].(map[string]any)["artifact"].(map[string]any); art["media_type"] != "image/png" {
		t.Errorf("read blob = %v", byID["3"])
	}
	if byID["4"]["status"] != "denied" {
		t.Errorf("read of a resource not allowed = %v", byID["4"])
	}
	entry(t, byID["5"]["prompts"], "name", "ev__test_simple_prompt")
	if m, _ := byID["6"]["messages"].([]any); len(m) != 1 || byID["6"]["status"] != "ok" {
		t.Errorf("prompt = %v", byID["6"])
	}
	if byID["7"]["status"] != "invalid_arguments" {
		t.Errorf("prompt without arg2 = %v", byID["7"])
	}
	if byID["8"]["status"] != "ok" || byID["8"]["values"] == nil {
		t.Errorf("complete = %v", byID["8"])
	}
	for id, want := range map[string]string{
		"9":  `read needs "uri"`,
		"10": `complete needs one of "prompt" or "template"`,
		"11": `"args": not a JSON object`,
		"12": `unknown key "url"`,
	} {
		if e, _ := byID[id]["error"].(string); !strings.Contains(e, want) {
			t.Errorf("id %s: reply %v, want an error with %q", id, byID[id], want)
		}
	}
}

// TestShellSubscribe subscribes to the conformance server's resource that
// changes every 3 seconds, and waits for the shell to say so.
func TestShellSubscribe(t *testing.T) {
	sh := startShell(t, contentDir(t, `["*"]`))
	sh.send(map[string]any{"id": "s", "cmd": "subscribe", "uri": "test://watched-resource"})
	if got := sh.next(); got["id"] != "s" || got["ok"] != true {
		t.Fatalf("subscribe = %v", got)
	}
	want := map[string]any{"id": "s", "event": "resource_updated", "server": "ev", "uri": "test://watched-resource"}
	if diff := cmp.Diff(want, sh.next()); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	sh.send(map[string]any{"id": "u", "cmd": "unsubscribe", "uri": "test://watched-resource"})
	got := sh.next()
	for got["event"] != nil { // sent before the unsubscribe
		got = sh.next()
	}
	if got["id"] != "u" || got["ok"] != true {
		t.Errorf("unsubscribe = %v", got)
	}
	sh.send(map[string]any{"id": "u2", "cmd": "unsubscribe", "uri": "test://watched-resource"})
	if e, _ := sh.next()["error"].(string); !strings.Contains(e, "not subscribed") {
		t.Errorf("second unsubscribe error = %q", e)
	}
	sh.send(map[string]any{"id": "q", "cmd": "quit"})
}

// TestContentOnServerEverything runs the commands against the reference
// TypeScript server, whose templates serve text and blobs and whose
// prompts complete their arguments.
func TestContentOnServerEverything(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), fmt.Sprintf(`servers:
  - id: ev
    command: %q
    args: [%q, stdio]
    allowed_tools: []
    allowed_resources: ["demo://resource/**"]
    allowed_prompts: [args-prompt, completable-prompt]
`, node, script))

	out := decode(t, runCLI(t, dir, "", "resources", "--json").want(t, 0).stdout)
	entry(t, out["resources"], "uri", "demo://resource/static/document/features.md")
	entry(t, out["templates"], "uri_template", "demo://resource/dynamic/blob/{resourceId}")

	r := runCLI(t, dir, "", "read", "demo://resource/dynamic/text/3").want(t, 0)
	if !strings.HasPrefix(r.stdout, "Resource 3: This is a plaintext resource created at ") {
		t.Errorf("read text = %q", r.stdout)
	}
	out = decode(t, runCLI(t, dir, "", "read", "demo://resource/dynamic/blob/3", "--json").want(t, 0).stdout)
	art := out["contents"].([]any)[0].(map[string]any)["artifact"].(map[string]any)
	got, err := os.ReadFile(art["path"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("Resource 3: This is a base64 blob created at ")) || art["size"] != float64(len(got)) {
		t.Errorf("artifact %v holds %q, want the decoded blob", art, got)
	}

	out = decode(t, runCLI(t, dir, "", "prompts", "--json").want(t, 0).stdout)
	if n := len(out["prompts"].([]any)); n != 2 {
		t.Errorf("%d prompts, want the 2 allowed: %v", n, out)
	}
	r = runCLI(t, dir, "", "prompt", "ev__args-prompt", "--args", `{"city":"Paris","state":"Texas"}`).want(t, 0)
	if r.stdout != "user: What's weather in Paris, Texas?\n" {
		t.Errorf("prompt = %q", r.stdout)
	}
	r = runCLI(t, dir, "", "prompt", "ev__args-prompt", "--args", `{"state":"Texas"}`, "--json").want(t, 1)
	if decode(t, r.stdout)["status"] != "invalid_arguments" {
		t.Errorf("prompt without city = %s", r.stdout)
	}

	r = runCLI(t, dir, "", "complete", "--prompt", "ev__completable-prompt", "--argument", "department", "--value", "S").want(t, 0)
	if r.stdout != "Sales\nSupport\n" {
		t.Errorf("complete department S = %q", r.stdout)
	}
	r = runCLI(t, dir, "", "complete", "--prompt", "ev__completable-prompt", "--argument", "name",
		"--context", `{"department":"Engineering"}`, "--json").want(t, 0)
	want := map[string]any{"status": "ok", "values": []any{"Alice", "Bob", "Charlie"}, "total": float64(3), "has_more": false, "error": nil}
	if diff := cmp.Diff(want, decode(t, r.stdout)); diff != "" {
		t.Errorf("complete name in Engineering (-want +got):\n%s", diff)
	}
	r = runCLI(t, dir, "", "complete", "--template", "demo://resource/dynamic/text/{resourceId}", "--server", "ev",
		"--argument", "resourceId", "--value", "7").want(t, 0)
	if r.stdout != "7\n" {
		t.Errorf("complete resourceId = %q", r.stdout)
	}

	// The text shell.
	r = runCLI(t, dir, "read demo://resource/dynamic/text/2\nprompt ev__args-prompt {\"city\":\"Oslo\"}\n"+
		"complete prompt ev__completable-prompt department E\ncomplete template demo://resource/dynamic/text/{resourceId} resourceId 5 ev\n"+
		"complete nothing\n", "shell").want(t, 0)
	for _, want := range []string{"Resource 2: This is a plaintext resource", "user: What's weather in Oslo?\n", "Engineering\n", "5\n",
		"usage: complete prompt NAME ARGUMENT [VALUE]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("shell output lacks %q:\n%s", want, r.stdout)
		}
	}
}
