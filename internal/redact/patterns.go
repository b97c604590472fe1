package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// A detector finds one credential format. The span it redacts is the whole
// match, or only submatch group when group > 0 (the password in a URL,
// not the URL). ok, if set, confirms a candidate: formats that share their
// alphabet with ordinary text are checked further before they count.
type detector struct {
	kind string
	// hints are lower-case strings of which the lower-cased text must
	// hold one for the expression to have a chance: a cheap test that
	// spares most text the regular expression.
	hints []string
	re    *regexp.Regexp
	group int
	ok    func(candidate string) bool
}

func (d detector) find(s, lower string, spans []span) []span {
	if !slices.ContainsFunc(d.hints, func(h string) bool { return strings.Contains(lower, h) }) {
		return spans
	}
	for _, m := range d.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*d.group], m[2*d.group+1]
		if start < 0 || start == end {
			continue
		}
		if d.ok != nil && !d.ok(s[start:end]) {
			continue
		}
		spans = append(spans, span{start, end, d.kind})
	}
	return spans
}

// Character classes that never match the brackets of a marker, so that a
// marker never becomes part of a new match.
var detectors = []detector{
	// PEM private keys (RSA, EC, OpenSSH, PGP, …), to the END line or, if
	// the text was cut, to its end.
	{kind: "private_key", hints: []string{"private key"}, re: regexp.MustCompile(
		`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)`)},

	// JWTs (JWS compact form): three base64url segments whose first is a
	// JSON header with "alg".
	{kind: "jwt", hints: []string{"eyj"}, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`), ok: isJWT},

	// OpenAI-style keys ("sk-", "sk-proj-", "sk-ant-api03-", …).
	{kind: "api_key", hints: []string{"sk-"}, re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), ok: func(c string) bool { return isRandom(c[3:], 32) }},

	// GitHub tokens: classic and app (ghp_, gho_, ghu_, ghs_, ghr_) and
	// fine-grained (github_pat_).
	{kind: "github_token", hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,})`)},

	// AWS access key ids. The secret access keys next to them are found by
	// findAWSSecrets.
	{kind: "aws_access_key_id", hints: []string{"akia", "asia", "abia", "acca"}, re: awsKeyIDRE},

	// Slack tokens and incoming webhooks.
	{kind: "slack_token", hints: []string{"xox", "xapp-", "hooks.slack.com"}, re: regexp.MustCompile(
		`\b(?:xox[abpsre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})|https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+`)},

	// The credential of an Authorization header, whatever its scheme.
	{kind: "authorization", hints: []string{"authorization"}, group: 1, re: regexp.MustCompile(
		`(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate|ntlm|dpop)\s+)?([^\s"',;<>${}\[\]]{8,})`),
		ok: func(c string) bool { return isRandom(c, 16) }},
	// Bearer tokens elsewhere ("Bearer abc…" in a command line), when the
	// word after Bearer looks random rather than like prose.
	{kind: "authorization", hints: []string{"bearer"}, group: 1, re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)`),
		ok: func(c string) bool { return isRandom(c, 20) }},
	// Basic credentials elsewhere: base64 of "user:password".
	{kind: "authorization", hints: []string{"basic"}, group: 1, re: regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`), ok: isBasic},

	// Other headers that carry credentials or sessions.
	{kind: "header", hints: []string{"cookie", "api-key", "-token", "session-id"}, group: 1, re: regexp.MustCompile(
		`(?i)\b(?:cookie|set-cookie|x-api-key|api-key|x-auth-token|x-access-token|mcp-session-id)["']?\s*:\s*["']?([^\r\n"'\[\]]{8,})`)},

	// Passwords in URLs: scheme://user:password@host.
	{kind: "url_password", hints: []string{"://"}, group: 1, re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:\[\]]*:([^\s/?#@\[\]]+)@`)},

	// OAuth authorization codes in redirect URLs.
	{kind: "oauth_code", hints: []string{"code="}, group: 1, re: regexp.MustCompile(`[?&]code=([^&#\s"'\[\]]{8,})`),
		ok: func(c string) bool { return isRandom(c, 20) }},

	// Values assigned to names that say they are secret: password=…,
	// "api_key": "…", GITHUB_TOKEN=…, client_secret: ….
	{kind: "credential", group: 1, hints: []string{"pass", "secret", "token", "key", "credential", "session"}, re: regexp.MustCompile(
		`(?i)[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|session[_-]?id)["']?\s*[:=]\s*["']?([^\s"'<>,;&(){}\[\]]{8,})`),
		ok: func(c string) bool { return isRandom(c, 16) }},
}

var awsKeyIDRE = regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`)

func hasAWSKeyID(s string) bool {
	return (strings.Contains(s, "IA") || strings.Contains(s, "CCA")) && awsKeyIDRE.MatchString(s)
}

// findAWSSecrets adds every run of exactly 40 base64 characters that mixes
// upper and lower case: AWS secret access keys. Commit hashes (hex) and
// ordinary words do not qualify. It runs only where an access key id is
// near, as the format alone is too common to go on.
func findAWSSecrets(s string, spans []span) []span {
	isB64 := func(c byte) bool {
		return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '/' || c == '+'
	}
	for i := 0; i < len(s); {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		// An "=" after the run makes it padded base64 of something else.
		if j-i == 40 && (j == len(s) || s[j] != '=') && isAWSSecret(s[i:j]) {
			spans = append(spans, span{i, j, "aws_secret_access_key"})
		}
		i = j
	}
	return spans
}

func isAWSSecret(c string) bool {
	k := classesOf(c)
	return k.upper && k.lower && (k.digit || k.other)
}

// classes are the kinds of character a string holds.
type classes struct{ upper, lower, digit, other bool }

// classesOf returns the kinds of character c holds: ASCII upper and lower
// case letters, ASCII digits, and anything else.
func classesOf(c string) classes {
	var k classes
	for _, r := range c {
		switch {
		case 'A' <= r && r <= 'Z':
			k.upper = true
		case 'a' <= r && r <= 'z':
			k.lower = true
		case '0' <= r && r <= '9':
			k.digit = true
		default:
			k.other = true
		}
	}
	return k
}

// isRandom reports whether c looks generated rather than written: letters
// and digits mixed, or, from long on, upper and lower case letters mixed.
func isRandom(c string, long int) bool {
	if len(c) < 8 {
		return false
	}
	k := classesOf(c)
	switch {
	case k.digit && (k.upper || k.lower):
		return true
	case k.upper && k.lower && len(c) >= long:
		return true
	}
	return false
}

// isJWT reports whether the first segment of c decodes to a JSON object
// with an "alg" member.
func isJWT(c string) bool {
	head, _, _ := strings.Cut(c, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(head, "="))
	if err != nil {
		return false
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	_, ok := h["alg"]
	return ok
}

// isBasic reports whether c is base64 of "user:password" in printable text.
func isBasic(c string) bool {
	raw, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return false
	}
	user, _, ok := bytes.Cut(raw, []byte(":"))
	if !ok || len(user) == 0 {
		return false
	}
	for _, b := range raw {
		if b < 0x20 || b > 0x7e {
			return false
		}
	}
	return true
}

// encodings returns a secret and the forms in which it also travels: URL
// query and path escaping, and JSON string escaping.
func encodings(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	return out
}
