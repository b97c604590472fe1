// Package redact keeps secrets out of everything Airlock writes down or
// shows: the audit trail, approval requests, the journal and logs.
//
// A Redactor replaces, anywhere in a string, the exact values of the
// configured secrets (secret_env) and text that matches well-known
// credential formats: OpenAI-style "sk-" keys, GitHub tokens, AWS access
// key ids and the secret keys beside them, Slack tokens, JWTs, PEM private
// keys, Authorization headers and other credential headers, passwords in
// URLs, and values assigned to names such as password, secret or token.
// Each is replaced by a marker that names the kind: "[REDACTED:jwt]". The
// formats are matched narrowly, so that commit hashes, UUIDs and ordinary
// prose survive.
//
// Value does the same for decoded JSON, and also redacts every string held
// under a key such as "password", "token" or "authorization". Shape, with
// the canonical package's Hash, is the default way arguments and results
// are recorded: their structure and a hash, no values. NewHandler wraps an slog.Handler so that log
// messages and attributes are redacted too.
//
// The root airlock package and the CLI import redact.
package redact

import (
	"regexp"
	"slices"
	"strings"
)

// MinSecretLen is the shortest secret value New accepts: shorter values
// would redact ordinary words.
const MinSecretLen = 8

// markerRE matches what a Redactor writes in place of a secret.
var markerRE = regexp.MustCompile(`\[REDACTED:[a-z_]+\]`)

func marker(kind string) string { return "[REDACTED:" + kind + "]" }

// isMarker reports whether s is exactly one marker.
func isMarker(s string) bool {
	return strings.HasPrefix(s, "[REDACTED:") && markerRE.FindString(s) == s
}

// A Redactor removes secrets from strings and values. The nil *Redactor is
// valid: it knows no secret values and redacts the built-in formats only.
// A Redactor is safe for concurrent use.
type Redactor struct {
	// needles are the secret values and the encoded forms in which they
	// also travel (URL- and JSON-escaped), longest first.
	needles []string
}

// New returns a Redactor for the given secret values. Values shorter than
// MinSecretLen are ignored.
func New(secrets []string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, n := range encodings(s) {
			if !seen[n] {
				seen[n] = true
				r.needles = append(r.needles, n)
			}
		}
	}
	slices.SortFunc(r.needles, func(a, b string) int { return len(b) - len(a) })
	return r
}

// plain reports whether s is too short and too plain to hold anything a
// Redactor redacts: shorter than MinSecretLen, as no secret value is, and
// made of ASCII letters, digits and underscores only, of which every
// credential format needs more (TestPlainHoldsNothing checks each
// detector). Most object keys and many short values are plain, and are
// spared the detectors.
func plain(s string) bool {
	if len(s) >= MinSecretLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// A span is a part of a string to replace with the marker of kind.
type span struct {
	start, end int
	kind       string
}

// maxPasses bounds how often String runs its detectors over its own output.
// A second pass only finds something when a replacement made text match
// that did not before; a third finds nothing in practice.
const maxPasses = 4

// String returns s with every secret replaced by its marker. Redacting the
// result again changes nothing.
func (r *Redactor) String(s string) string {
	return r.redact(s, false)
}

// redact is String; nearAWS also redacts 40-character secret keys when s
// itself has no AWS access key id (because a neighbour does).
func (r *Redactor) redact(s string, nearAWS bool) string {
	if plain(s) {
		return s
	}
	for range maxPasses {
		out := r.once(s, nearAWS)
		if out == s {
			break
		}
		s = out
	}
	return s
}

// once replaces what the detectors find in s, once.
func (r *Redactor) once(s string, nearAWS bool) string {
	spans := r.find(s, nearAWS)
	if len(spans) == 0 {
		return s
	}
	// A span inside a marker is the marker's own text (a secret equal to
	// "REDACTED", say): leave markers alone so that the output is stable.
	markers := markerRE.FindAllStringIndex(s, -1)
	spans = slices.DeleteFunc(spans, func(sp span) bool {
		for _, m := range markers {
			if sp.start >= m[0] && sp.end <= m[1] {
				return true
			}
		}
		return false
	})
	if len(spans) == 0 {
		return s
	}
	// Overlapping spans become one, named for the longest of them.
	slices.SortStableFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return (b.end - b.start) - (a.end - a.start)
	})
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		longest := cur.end - cur.start
		j := i + 1
		for ; j < len(spans) && spans[j].start < cur.end; j++ {
			if n := spans[j].end - spans[j].start; n > longest {
				longest, cur.kind = n, spans[j].kind
			}
			cur.end = max(cur.end, spans[j].end)
		}
		b.WriteString(s[last:cur.start])
		b.WriteString(marker(cur.kind))
		last = cur.end
		i = j
	}
	b.WriteString(s[last:])
	return b.String()
}

// find returns every span a detector or a secret value covers in s.
func (r *Redactor) find(s string, nearAWS bool) []span {
	var spans []span
	if r != nil {
		for _, n := range r.needles {
			for i := 0; ; {
				k := strings.Index(s[i:], n)
				if k < 0 {
					break
				}
				spans = append(spans, span{i + k, i + k + len(n), "secret"})
				i += k + len(n)
			}
		}
	}
	lower := strings.ToLower(s)
	for _, d := range detectors {
		spans = d.find(s, lower, spans)
	}
	if nearAWS || hasAWSKeyID(s) {
		spans = findAWSSecrets(s, spans)
	}
	return spans
}
