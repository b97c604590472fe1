package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	"github.com/airlockhq/airlock/policy"
)

// A Snapshot is the frozen catalog: the tools of every ready server, under
// their local names. It never changes; a refresh builds a new one.
type Snapshot struct {
	id         string
	generation uint64
	tools      []*Tool
	byName     map[string]*Tool
	content    Content
	prompts    map[string]*Prompt // by local name
}

// Build names tools and freezes them into a snapshot. launches maps the id
// of each server the snapshot is built over to its launch fingerprint
// ([config.Server.LaunchFingerprint]); prefixes maps it to what the local
// names of its tools start with ([config.Server.LocalPrefix]; "" for the
// server's own names; a server not in it gets "ID__"). The
// same tools of servers launched the same way give the same id, whatever
// order they come in.
func Build(tools []*Tool, generation uint64, launches, prefixes map[string]string) (*Snapshot, error) {
	return BuildWith(tools, Content{}, generation, launches, prefixes)
}

// BuildWith is Build for a catalog with resources, templates and prompts
// too: prompts get local names by the rules of tool names, and the
// snapshot id covers all of it.
func BuildWith(tools []*Tool, content Content, generation uint64, launches, prefixes map[string]string) (*Snapshot, error) {
	tools = append([]*Tool(nil), tools...)
	if err := assignNames(tools, prefixes); err != nil {
		return nil, err
	}
	sortTools(tools)
	content.Prompts = append([]*Prompt(nil), content.Prompts...)
	if err := namePrompts(content.Prompts, prefixes); err != nil {
		return nil, err
	}
	s := &Snapshot{generation: generation, tools: tools, byName: make(map[string]*Tool, len(tools)),
		content: content, prompts: make(map[string]*Prompt, len(content.Prompts))}
	for _, t := range tools {
		s.byName[t.Name] = t
	}
	for _, p := range content.Prompts {
		s.prompts[p.Name] = p
	}
	s.id = s.hash(launches)
	return s, nil
}

// ID identifies the snapshot's content: a hash of every binding and schema,
// and of how each server is launched, so that a server started another
// way (another command, arguments or URL) is another snapshot.
func (s *Snapshot) ID() string { return s.id }

// Generation counts the snapshots a host has built; a newer snapshot has a
// higher generation.
func (s *Snapshot) Generation() uint64 { return s.generation }

// Tools returns the tools ordered by local name. The slice must not be
// modified.
func (s *Snapshot) Tools() []*Tool { return s.tools }

// Resources returns the allowed resources, server by server. The slice
// must not be modified.
func (s *Snapshot) Resources() []*Resource { return s.content.Resources }

// Templates returns the allowed resource templates.
func (s *Snapshot) Templates() []*Template { return s.content.Templates }

// Prompts returns the allowed prompts ordered by local name.
func (s *Snapshot) Prompts() []*Prompt { return s.content.Prompts }

// Prompt finds a prompt by local name.
func (s *Snapshot) Prompt(name string) (*Prompt, bool) {
	p, ok := s.prompts[name]
	return p, ok
}

// Lookup finds a tool by local name.
func (s *Snapshot) Lookup(name string) (*Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

func (s *Snapshot) hash(launches map[string]string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	encodeTools(enc, s.tools)
	encodeContent(enc, s.content)
	type launch struct {
		Server string `json:"server"`
		Launch string `json:"launch"`
	}
	for _, id := range slices.Sorted(maps.Keys(launches)) {
		enc.Encode(launch{Server: id, Launch: launches[id]})
	}
	return "snap_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// Offered identifies what one server offers in the snapshot: a hash of
// its tools, resources, templates and prompts as the snapshot binds them,
// so that two snapshots in which a server offers the same give the same
// value. A server that offers nothing gives "".
func (s *Snapshot) Offered(server string) string {
	var tools []*Tool
	for _, t := range s.tools {
		if t.Server == server {
			tools = append(tools, t)
		}
	}
	var c Content
	for _, r := range s.content.Resources {
		if r.Server == server {
			c.Resources = append(c.Resources, r)
		}
	}
	for _, t := range s.content.Templates {
		if t.Server == server {
			c.Templates = append(c.Templates, t)
		}
	}
	for _, p := range s.content.Prompts {
		if p.Server == server {
			c.Prompts = append(c.Prompts, p)
		}
	}
	if len(tools)+len(c.Resources)+len(c.Templates)+len(c.Prompts) == 0 {
		return ""
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	encodeTools(enc, tools)
	encodeContent(enc, c)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// encodeTools adds tools' bindings and schemas to a hash.
func encodeTools(enc *json.Encoder, tools []*Tool) {
	type binding struct {
		Name        string          `json:"name"`
		Server      string          `json:"server"`
		Remote      string          `json:"remote"`
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description"`
		Input       json.RawMessage `json:"input"`
		Output      json.RawMessage `json:"output,omitempty"`
		Annotations any             `json:"annotations,omitempty"`
		Effect      policy.Effect   `json:"effect"`
	}
	for _, t := range tools {
		b := binding{Name: t.Name, Server: t.Server, Remote: t.Remote, Title: t.Title, Description: t.Description,
			Input: t.Input.JSON(), Effect: t.Effect}
		if t.Output != nil {
			b.Output = t.Output.JSON()
		}
		if t.Annotations != nil {
			b.Annotations = t.Annotations
		}
		enc.Encode(b) // cannot fail: every field marshals
	}
}

// encodeContent adds resources, templates and prompts to a hash; a
// catalog of tools alone hashes as it always did.
func encodeContent(enc *json.Encoder, c Content) {
	for _, r := range c.Resources {
		enc.Encode(struct {
			Kind string `json:"kind"`
			*Resource
		}{"resource", r})
	}
	for _, t := range c.Templates {
		enc.Encode(struct {
			Kind string `json:"kind"`
			*Template
		}{"template", t})
	}
	for _, p := range c.Prompts {
		enc.Encode(struct {
			Kind string `json:"kind"`
			*Prompt
		}{"prompt", p})
	}
}
