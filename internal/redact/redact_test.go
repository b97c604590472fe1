package redact

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode"
)

// alnum returns n letters and digits, mixed like a generated token.
func alnum(n int, seed byte) string {
	const chars = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[(i*7+int(seed))%len(chars)]
	}
	return string(b)
}

// Canaries: real-looking credentials of every built-in kind.
var (
	openAIKey     = "sk-proj-" + alnum(48, 1)
	openAILegacy  = "sk-" + alnum(48, 2)
	anthropicKey  = "sk-ant-api03-" + alnum(80, 3)
	githubClassic = "ghp_" + alnum(36, 4)
	githubOAuth   = "gho_" + alnum(36, 5)
	githubUser    = "ghu_" + alnum(36, 6)
	githubServer  = "ghs_" + alnum(36, 7)
	githubRefresh = "ghr_" + alnum(36, 8)
	githubPAT     = "github_pat_" + alnum(22, 9) + "_" + alnum(59, 10)
	awsKeyID      = "AKIAIOSFODNN7EXAMPLE"
	awsSessionID  = "ASIAY34FZKBOKMUTVV7A"
	awsSecret     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	slackBot      = "xoxb-123456789012-1234567890123-" + alnum(24, 11)
	slackUser     = "xoxp-123456789012-123456789012-123456789012-" + alnum(32, 12)
	slackHook     = "https://hooks.slack.com/services/T00000000/B00000000/" + alnum(24, 13)
	jwt           = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemRSA        = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + alnum(64, 14) + "\n" + alnum(64, 15) + "\n-----END RSA PRIVATE KEY-----"
	pemOpenSSH    = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + alnum(40, 16) + "\n-----END OPENSSH PRIVATE KEY-----"
	bearer        = alnum(32, 17)
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"openai project key", "key " + openAIKey + " end", "key [REDACTED:api_key] end"},
		{"openai legacy key", "OPENAI_API_KEY=" + openAILegacy, "OPENAI_API_KEY=[REDACTED:api_key]"},
		{"anthropic key", `{"key":"` + anthropicKey + `"}`, `{"key":"[REDACTED:api_key]"}`},
		{"github classic", "token " + githubClassic, "token [REDACTED:github_token]"},
		{"github oauth", githubOAuth, "[REDACTED:github_token]"},
		{"github user-to-server", "x=" + githubUser + ";", "x=[REDACTED:github_token];"},
		{"github server-to-server", "(" + githubServer + ")", "([REDACTED:github_token])"},
		{"github refresh", githubRefresh + "\n", "[REDACTED:github_token]\n"},
		{"github fine-grained", "pat: " + githubPAT, "pat: [REDACTED:github_token]"},
		{"aws key id", "id " + awsKeyID + " here", "id [REDACTED:aws_access_key_id] here"},
		{"aws session key id", awsSessionID, "[REDACTED:aws_access_key_id]"},
		{"aws pair", "aws_access_key_id = " + awsKeyID + "\naws_secret_access_key = " + awsSecret,
			"aws_access_key_id = [REDACTED:aws_access_key_id]\naws_secret_access_key = [REDACTED:credential]"},
		{"aws pair, unlabelled", awsKeyID + ":" + awsSecret, "[REDACTED:aws_access_key_id]:[REDACTED:aws_secret_access_key]"},
		{"aws secret, labelled", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "AWS_SECRET_ACCESS_KEY=[REDACTED:credential]"},
		{"slack bot", "SLACK=" + slackBot, "SLACK=[REDACTED:slack_token]"},
		{"slack user", slackUser, "[REDACTED:slack_token]"},
		{"slack webhook", "post to " + slackHook + " now", "post to [REDACTED:slack_token] now"},
		{"jwt", "id_token " + jwt + " ok", "id_token [REDACTED:jwt] ok"},
		{"jwt in a header", "Authorization: Bearer " + jwt, "Authorization: Bearer [REDACTED:jwt]"},
		{"pem rsa", "key:\n" + pemRSA + "\nafter", "key:\n[REDACTED:private_key]\nafter"},
		{"pem openssh", pemOpenSSH, "[REDACTED:private_key]"},
		{"pem cut short", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "[REDACTED:private_key]"},
		{"pem escaped in json", `"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI` + alnum(30, 18) + `\n-----END EC PRIVATE KEY-----"`, `"[REDACTED:private_key]"`},
		{"authorization bearer", "Authorization: Bearer " + bearer, "Authorization: Bearer [REDACTED:authorization]"},
		{"authorization lower case", "authorization: bearer " + bearer, "authorization: bearer [REDACTED:authorization]"},
		{"authorization token scheme", `-H "Authorization: token ` + bearer + `"`, `-H "Authorization: token [REDACTED:authorization]"`},
		{"authorization in json", `{"Authorization":"Bearer ` + bearer + `"}`, `{"Authorization":"Bearer [REDACTED:authorization]"}`},
		{"authorization basic", "Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMg==", "Authorization: Basic [REDACTED:authorization]"},
		{"bearer alone", "curl -H Bearer " + bearer, "curl -H Bearer [REDACTED:authorization]"},
		{"basic alone", "use Basic YWRtaW46czNjcjN0UGFzcw== here", "use Basic [REDACTED:authorization] here"},
		{"proxy authorization", "Proxy-Authorization: Basic YWRtaW46czNjcjN0UGFzcw==", "Proxy-Authorization: Basic [REDACTED:authorization]"},
		{"cookie", "Cookie: session=" + alnum(24, 19) + "; theme=dark", "Cookie: [REDACTED:header]"},
		{"api key header", "X-Api-Key: " + alnum(20, 20), "X-Api-Key: [REDACTED:header]"},
		{"mcp session id", "Mcp-Session-Id: 1868a90c-2f7e-4c1a-9e5b-3d2c1b0a9f8e", "Mcp-Session-Id: [REDACTED:header]"},
		{"url password", "postgres://admin:s3cr3tP4ss@db.internal:5432/app", "postgres://admin:[REDACTED:url_password]@db.internal:5432/app"},
		{"url password, no user", "redis://:hunter2hunter2@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"},
		{"url password, https", "clone https://bob:" + githubClassic + "@github.com/o/r.git", "clone https://bob:[REDACTED:github_token]@github.com/o/r.git"},
		{"oauth code", "http://127.0.0.1:8765/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj", "http://127.0.0.1:8765/callback?code=[REDACTED:oauth_code]&state=af0ifjsldkj"},
		{"password assignment", "DB_PASSWORD=hunter2hunter2", "DB_PASSWORD=[REDACTED:credential]"},
		{"password in json", `{"password": "c0rrect-h0rse"}`, `{"password": "[REDACTED:credential]"}`},
		{"client secret", "client_secret: " + alnum(30, 21), "client_secret: [REDACTED:credential]"},
		{"access token in a query", "https://api.example.com/x?access_token=" + alnum(30, 22) + "&page=2", "https://api.example.com/x?access_token=[REDACTED:credential]&page=2"},
		{"two kinds", githubClassic + " " + awsKeyID, "[REDACTED:github_token] [REDACTED:aws_access_key_id]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New(nil).String(tc.in)
			if got != tc.want {
				t.Errorf("String(%q):\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := New(nil).String(got); again != got {
				t.Errorf("String is not idempotent: %q became %q", got, again)
			}
		})
	}
}

// TestStringKeeps: near misses and ordinary text stay as they are.
func TestStringKeeps(t *testing.T) {
	for _, in := range []string{
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"9FCEB02D0AE598E95DC970B74767F19372D61AF8",
		"id 123e4567-e89b-12d3-a456-426614174000",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"pip install sk-learn scikit-learn",
		"sk-this-is-not-a-key-just-words",
		"sk-" + strings.Repeat("a", 30),
		"task-" + alnum(30, 1),
		"ghp_" + alnum(20, 2),
		"ghx_" + alnum(36, 3),
		"AKIA1234",
		"AKIAIOSFODNN7EXAMPL",
		"AIDAIOSFODNN7EXAMPLE is a user id, not a key",
		awsSecret + " without a key id",
		"xoxo-hugs-and-kisses-from-me",
		"xoxb-short",
		"eyJmb28iOiJiYXIifQ.eyJ4IjoxfQ.c2lnbmF0dXJl", // header without "alg"
		"version 1.2.3.4 and eyJ alone",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
		"Use a Bearer token in the Authorization header.",
		"bearer authentication and bearer credentials",
		"Basic authentication is not recommended.",
		"Authorization: Bearer ${TOKEN}",
		"https://example.com:8443/path?q=1",
		"git@github.com:org/repo.git",
		"https://user@example.com/x",
		"ssh://host:22/path@ref",
		"max_tokens: 4096",
		"token_count=12345678",
		"input_tokens = 12345678",
		"password: ${DB_PASSWORD}",
		"password = getPassword()",
		"secret_name: prod-db",
		"token: undefined",
		"see https://example.com/login?code=python",
		"The quick brown fox jumps over the lazy dog.",
		"",
	} {
		if got := New(nil).String(in); got != in {
			t.Errorf("String(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestSecrets(t *testing.T) {
	r := New([]string{"s3cr3t-v4lue-xyz", "p@ss w/rd!123", "short", "", "quote\"back\\slash"})
	for _, tc := range []struct{ in, want string }{
		{"token in text: s3cr3t-v4lue-xyz.", "token in text: [REDACTED:secret]."},
		{"twice s3cr3t-v4lue-xyzs3cr3t-v4lue-xyz", "twice [REDACTED:secret][REDACTED:secret]"},
		{"embedded:xs3cr3t-v4lue-xyzx", "embedded:x[REDACTED:secret]x"},
		{"url-escaped ?pw=p%40ss+w%2Frd%21123&x=1", "url-escaped ?pw=[REDACTED:secret]&x=1"},
		{"path-escaped /p@ss%20w%2Frd%21123/", "path-escaped /[REDACTED:secret]/"},
		{"raw p@ss w/rd!123", "raw [REDACTED:secret]"},
		{`json {"v":"quote\"back\\slash"}`, `json {"v":"[REDACTED:secret]"}`},
		{"short values are not secrets: short", "short values are not secrets: short"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q):\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	var nilR *Redactor
	if got := nilR.String("k " + githubClassic); got != "k [REDACTED:github_token]" {
		t.Errorf("nil Redactor: got %q, want the built-in formats redacted", got)
	}
}

// TestStringOverlap: a secret inside a match, and matches that overlap,
// become one marker.
func TestStringOverlap(t *testing.T) {
	r := New([]string{"hunter2hunter2"})
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:xhunter2hunter2x@h/db", "postgres://u:[REDACTED:url_password]@h/db"},
		{"password=hunter2hunter2", "password=[REDACTED:secret]"},
		{"password=xhunter2hunter2", "password=[REDACTED:credential]"},
		{"Authorization: Bearer " + githubClassic, "Authorization: Bearer [REDACTED:github_token]"},
		{"already [REDACTED:jwt] here", "already [REDACTED:jwt] here"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q):\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	// A secret that is part of a marker's text leaves markers alone.
	r = New([]string{"REDACTED:jwt"})
	if got, want := r.String("a [REDACTED:jwt] b REDACTED:jwt"), "a [REDACTED:jwt] b [REDACTED:secret]"; got != want {
		t.Errorf("secret inside a marker: got %q, want %q", got, want)
	}
}

func FuzzString(f *testing.F) {
	secrets := []string{"s3cr3t-v4lue-xyz", "p@ss w/rd!123", "9a8b7c6d5e"}
	for _, s := range []string{
		"", "plain text", openAIKey, githubPAT, awsKeyID + " " + awsSecret, slackHook, jwt, pemRSA,
		"Authorization: Bearer " + bearer, "postgres://admin:s3cr3t-v4lue-xyz@db/x", "password=s3cr3t-v4lue-xyz",
		"[REDACTED:secret]s3cr3t-v4lue-xyz", "-----BEGIN PRIVATE KEY-----", "https://a:b[c]@d",
		awsKeyID + " " + strings.Repeat("aB1", 13) + "p9a8b7c6d5e",
	} {
		f.Add(s)
	}
	r := New(secrets)
	f.Fuzz(func(t *testing.T, s string) {
		out := r.String(s)
		if again := r.String(out); again != out {
			t.Errorf("not idempotent:\n in    %q\n once  %q\n twice %q", s, out, again)
		}
		for _, sec := range secrets {
			if strings.Contains(out, sec) {
				t.Errorf("secret %q survived in %q", sec, out)
			}
		}
	})
}

// TestPlainHoldsNothing: no detector matches a plain string (see plain),
// whatever a check after the match would say: the shortest text of
// letters, digits and underscores each one matches is MinSecretLen long
// or longer. Secret values are that long too (New).
func TestPlainHoldsNothing(t *testing.T) {
	inPlain := func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'
	}
	res := []*regexp.Regexp{awsKeyIDRE}
	for _, d := range detectors {
		res = append(res, d.re)
	}
	for _, re := range res {
		parsed, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if n := shortestMatch(parsed, inPlain); n >= 0 && n < MinSecretLen {
			t.Errorf("%s matches plain text of %d characters; plain must not skip it", re, n)
		}
	}
	for _, s := range []string{"", "text", "type", "uri", "a_b_C_9", "default", "root"} {
		if !plain(s) {
			t.Errorf("plain(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"password", "a://:x@", "a b", "é", "[R]", "ab-cd", "abcdefgh"} {
		if plain(s) {
			t.Errorf("plain(%q) = true, want false", s)
		}
	}
}

// shortestMatch returns the length of the shortest text of characters for
// which in holds that re matches in whole, or -1 if there is none.
func shortestMatch(re *syntax.Regexp, in func(rune) bool) int {
	switch re.Op {
	case syntax.OpNoMatch:
		return -1
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return 0
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if !in(r) && (re.Flags&syntax.FoldCase == 0 || !in(unicode.ToUpper(r)) && !in(unicode.ToLower(r))) {
				return -1
			}
		}
		return len(re.Rune)
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < 0x80; r++ {
				if in(r) {
					return 1
				}
			}
		}
		return -1
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return shortestMatch(re.Sub[0], in)
	case syntax.OpRepeat:
		n := shortestMatch(re.Sub[0], in)
		if re.Min == 0 {
			return 0
		}
		if n < 0 {
			return -1
		}
		return re.Min * n
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n := shortestMatch(sub, in)
			if n < 0 {
				return -1
			}
			total += n
		}
		return total
	case syntax.OpAlternate:
		best := -1
		for _, sub := range re.Sub {
			if n := shortestMatch(sub, in); n >= 0 && (best < 0 || n < best) {
				best = n
			}
		}
		return best
	}
	panic(fmt.Sprintf("shortestMatch: unexpected op %v in %s", re.Op, re))
}
