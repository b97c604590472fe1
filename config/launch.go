package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// launchVersion names the layout LaunchFingerprint hashes; a change of
// layout changes it.
const launchVersion = "airlock-launch/1"

// LaunchFingerprint returns a digest of how the server is started or
// reached, "sha256:" and 64 hex digits: its transport, command, args,
// working directory, env (names and values: env holds plain values),
// secret_env (each variable's name and the host variable it is read from,
// never the value), URL, resource and CA file. The snapshot id and the
// approval digest both cover it, so that a server whose launch changed (a
// new binary or arguments under an approved server's name, another URL)
// has no grant until a person approves again. Everything else of the
// server's entry (allowed tools, timeouts, limits) leaves it alone.
func (s *Server) LaunchFingerprint() string {
	transport := "stdio"
	if s.Remote() {
		transport = "http"
	}
	launch := struct {
		Version   string            `json:"v"`
		Transport string            `json:"transport"`
		Command   string            `json:"command"`
		Args      []string          `json:"args"`
		Cwd       string            `json:"cwd"`
		Env       map[string]string `json:"env"`
		SecretEnv map[string]string `json:"secret_env"`
		URL       string            `json:"url"`
		Resource  string            `json:"resource"`
		CAFile    string            `json:"ca_file"`
	}{launchVersion, transport, s.Command, s.Args, s.Cwd, s.Env, s.SecretEnv, s.URL, s.Resource, s.CAFile}
	// Absent and empty are the same launch.
	if launch.Args == nil {
		launch.Args = []string{}
	}
	if launch.Env == nil {
		launch.Env = map[string]string{}
	}
	if launch.SecretEnv == nil {
		launch.SecretEnv = map[string]string{}
	}
	b, _ := json.Marshal(launch) // cannot fail: strings only, map keys sorted
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Target says, for a person, where the server's calls go: the URL of a
// remote server, else its command line (the command and its arguments). A
// word with spaces, quotes, backslashes or anything but printable ASCII is
// quoted in Go syntax, so that invisible and bidirectional characters show.
// The environment is left out (env values may be secrets); the caller
// redacts secrets that arguments carry.
func (s *Server) Target() string {
	if s.Remote() {
		return word(s.URL)
	}
	words := make([]string, 0, 1+len(s.Args))
	words = append(words, word(s.Command))
	for _, a := range s.Args {
		words = append(words, word(a))
	}
	return strings.Join(words, " ")
}

// word returns s as it is if it reads unambiguously, else quoted.
func word(s string) string {
	plain := func(r rune) bool { return r > ' ' && r < 0x7f && r != '"' && r != '\'' && r != '\\' }
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
