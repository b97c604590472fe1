package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const everythingEntry = `  - id: everything
    command: npx
    args: [-y, '@modelcontextprotocol/server-everything']
    allowed_tools: []
`

// TestAddServer: a server is added at the end of servers:, and every other
// line of the file stays as it was written; removing it again gives the
// file back.
func TestAddServer(t *testing.T) {
	everything := ServerEntry{ID: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}}
	kept := "# Our servers.\nservers:\n  # The files.\n  - id: fs\n    command: airlock   # the binary\n    args: [server, workspace, --root, .]\n    allowed_tools: [read_file]\n\n" +
		"  - {id: b, command: y, allowed_tools: []}\n\n# What they may do.\npolicy:\n  tools:\n    - {server: fs, tool: read_file, effect: read}\n"
	tests := []struct {
		name  string
		src   string
		entry ServerEntry
		want  string
		back  bool // RemoveServer gives src back
	}{
		{"comments and layout kept", kept, everything,
			strings.Replace(kept, "allowed_tools: []}\n", "allowed_tools: []}\n"+everythingEntry, 1), true},
		{"a new file", "", everything, "servers:\n" + everythingEntry, false},
		{"no servers key", "import: [mcp.json]", everything, "import: [mcp.json]\nservers:\n" + everythingEntry, false},
		{"servers without a value", "servers:\nimport: [mcp.json]\n", everything, "servers:\n" + everythingEntry + "import: [mcp.json]\n", false},
		{"an empty flow list", "servers: []  # none yet\nimport: [mcp.json]\n", everything,
			"servers: # none yet\n" + everythingEntry + "import: [mcp.json]\n", false},
		{"entries at the margin", "servers:\n- id: a\n  command: x\n  allowed_tools: []\n", everything,
			"servers:\n- id: a\n  command: x\n  allowed_tools: []\n" + strings.ReplaceAll(everythingEntry, "\n  ", "\n")[2:], true},
		{"remote", "servers:\n  - {id: a, command: x, allowed_tools: []}\n", ServerEntry{ID: "issues", URL: "https://mcp.example.com/mcp"},
			"servers:\n  - {id: a, command: x, allowed_tools: []}\n  - id: issues\n    transport: http\n    url: https://mcp.example.com/mcp\n    allowed_hosts: [mcp.example.com]\n    allowed_tools: []\n", true},
		{"odd words quoted", "servers:\n  - {id: a, command: x, allowed_tools: []}\n", ServerEntry{ID: "q", Command: "./run me", Args: []string{"#1", "a: b", "yes", "*"}},
			"servers:\n  - {id: a, command: x, allowed_tools: []}\n  - id: q\n    command: ./run me\n    args: ['#1', 'a: b', yes, '*']\n    allowed_tools: []\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AddServer([]byte(tt.src), tt.entry)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("AddServer mismatch (-want +got):\n%s", diff)
			}
			if _, err := parseYAML(got, "airlock.yaml", t.TempDir(), mapEnv(map[string]string{"USER": "u"})); err != nil && !strings.Contains(err.Error(), "mcp.json") {
				t.Errorf("the result does not parse: %v", err)
			}
			back, err := RemoveServer(got, tt.entry.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.back {
				if diff := cmp.Diff(tt.src, string(back)); diff != "" {
					t.Errorf("RemoveServer did not give the file back (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// A file whose lines end in CRLF gets the new entry's lines with CRLF too.
func TestAddServerKeepsCRLF(t *testing.T) {
	src := "# Mine.\r\nservers:\r\n  - id: a\r\n    command: x\r\n    allowed_tools: []\r\n"
	got, err := AddServer([]byte(src), ServerEntry{ID: "b", Command: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), src) || !strings.Contains(string(got), "- id: b\r\n") {
		t.Errorf("AddServer = %q, want the file and the entry, in CRLF", got)
	}
	if n := strings.Count(string(got), "\n"); strings.Count(string(got), "\r\n") != n {
		t.Errorf("AddServer = %q: line ends are mixed", got)
	}
}

func TestAddServerRefuses(t *testing.T) {
	tests := []struct {
		name, src string
		entry     ServerEntry
		want      string
	}{
		{"flow list", "servers: [{id: a, command: x, allowed_tools: []}]\n", ServerEntry{ID: "b", Command: "y"}, "flow list"},
		{"not a list", "servers: {id: a}\n", ServerEntry{ID: "b", Command: "y"}, "is not a list"},
		{"not YAML", "servers: [\n", ServerEntry{ID: "b", Command: "y"}, "is not valid YAML"},
		{"no command", "", ServerEntry{ID: "b"}, "give the command"},
		{"both", "", ServerEntry{ID: "b", Command: "y", URL: "https://x/mcp"}, "not both"},
		{"not a URL", "", ServerEntry{ID: "b", URL: "mcp"}, "is not a URL"},
	}
	for _, tt := range tests {
		if _, err := AddServer([]byte(tt.src), tt.entry); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: AddServer = %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// TestRemoveServer: an entry goes with the comment lines right above it;
// the comments and blank lines of its neighbours stay.
func TestRemoveServer(t *testing.T) {
	src := "servers:\n  # The files.\n  - id: fs\n    command: airlock\n    allowed_tools: []\n\n  # Another.\n  - id: b\n    command: y\n    allowed_tools: []\n# The end.\n"
	tests := []struct{ id, want string }{
		{"fs", "servers:\n\n  # Another.\n  - id: b\n    command: y\n    allowed_tools: []\n# The end.\n"},
		{"b", "servers:\n  # The files.\n  - id: fs\n    command: airlock\n    allowed_tools: []\n\n# The end.\n"},
	}
	for _, tt := range tests {
		got, err := RemoveServer([]byte(src), tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("RemoveServer(%s) mismatch (-want +got):\n%s", tt.id, diff)
		}
	}
	got, err := RemoveServer([]byte("servers:\n  - id: a\n    command: x\n    allowed_tools: []\nimport: [m.json]\n"), "a")
	if err != nil || string(got) != "servers: []\nimport: [m.json]\n" {
		t.Errorf("removing the only server = %q, %v; want servers: [] left", got, err)
	}
	if _, err := RemoveServer([]byte(src), "nope"); err == nil || !strings.Contains(err.Error(), `no server "nope"`) {
		t.Errorf("removing an unknown server: %v", err)
	}
}
